"""COCO ground truth and results → columnar numpy tables.

The modules: :mod:`.json_text` (parsing), :mod:`.fields` (checked columns), :mod:`.tables` (the tables),
:mod:`.ground_truth`, :mod:`.annotations` and :mod:`.gt_pieces` (ground truth), :mod:`.results`,
:mod:`.pieces` and :mod:`.ranges` (results, whole, in pieces, by byte range), :mod:`.masks` and
:mod:`.result_masks` (segmentations), :mod:`.keypoints`, :mod:`.typed` (decoding by type, msgspec), and the
readers of a file's head and tail (:mod:`.head_tail`, :mod:`.segm_tail`, :mod:`.keypoints_tail`).

Accepted inputs (``load_coco_gt`` / ``load_coco_results``):

* a path to a JSON file (parsed with ``orjson`` when installed, else ``json``; the garbage collector is off
  while the millions of small objects are built: they hold no cycles, and collections on the way only cost time);
* the parsed JSON (a dict for ground truth, a list of dicts for results);
* a ``pycocotools.coco.COCO`` object (its ``dataset``);
* for results, an N×7 numpy array ``[image_id, x, y, w, h, score, category_id]`` as in pycocotools'
  ``loadNumpyAnnotations``.

Only the fields the COCO protocol reads are extracted, into arrays of length N; bad input raises a
:class:`~deteval.errors.DetevalError` naming the file and the record. Results follow pycocotools' ``loadRes``
(one branch picked from the *first* record, :func:`loadres_branch`); docs/coco.md tables the branches and
how a pycocotools ``COCO`` object is read.
"""

from __future__ import annotations

from deteval.io.coco.fields import MAX_COORD, index_of
from deteval.io.coco.ground_truth import load_coco_gt, load_gt_with_head
from deteval.io.coco.gt_pieces import KEYPOINT_GT_PIECE_BYTES, GtHead, gt_head
from deteval.io.coco.head_tail import (
    RawTail,
    results_part,
    results_tail,
    results_two_parts,
    results_with_tail,
)
from deteval.io.coco.json_text import no_json_booleans, only_key_strings, read_json, wide_integers
from deteval.io.coco.keypoints import (
    boxes_from_bounds,
    keypoint_bounds,
    keypoint_extent,
    plain_keypoints,
    row_extents,
)
from deteval.io.coco.masks import (
    MAX_MASK_PIXELS,
    MAX_POLYGON_COORD,
    check_rle_size,
    check_segmentation,
    plain_rle_sizes,
    to_rle,
)
from deteval.io.coco.pieces import CHUNK_BYTES, parsed_number_piece
from deteval.io.coco.results import load_coco_results, loadres_branch, wide_scores
from deteval.io.coco.tables import (
    BoxColumn,
    CocoGroundTruth,
    CocoResults,
    MaskBoxes,
    RawColumns,
    concat_boxes,
    concat_results,
    stored_boxes,
)

__all__ = [
    "CHUNK_BYTES",
    "KEYPOINT_GT_PIECE_BYTES",
    "MAX_COORD",
    "MAX_MASK_PIXELS",
    "MAX_POLYGON_COORD",
    "BoxColumn",
    "CocoGroundTruth",
    "CocoResults",
    "GtHead",
    "MaskBoxes",
    "RawColumns",
    "RawTail",
    "boxes_from_bounds",
    "check_rle_size",
    "check_segmentation",
    "concat_boxes",
    "concat_results",
    "gt_head",
    "index_of",
    "keypoint_bounds",
    "keypoint_extent",
    "load_coco_gt",
    "load_coco_results",
    "load_gt_with_head",
    "loadres_branch",
    "no_json_booleans",
    "only_key_strings",
    "parsed_number_piece",
    "plain_keypoints",
    "plain_rle_sizes",
    "read_json",
    "results_part",
    "results_tail",
    "results_two_parts",
    "results_with_tail",
    "row_extents",
    "stored_boxes",
    "to_rle",
    "wide_integers",
    "wide_scores",
]
