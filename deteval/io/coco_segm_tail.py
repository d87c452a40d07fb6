"""A large segm results file on two cores from the start: a forked child reads the tail without the ground truth.

The usual segm results (compressed RLE masks, no ``bbox``) need the ground truth for three things only: the
ids' positions in it, each mask's size against its image's, and polygons (which need an image size). The
child (:func:`segm_tail`) therefore starts before the ground truth is read and does everything else on its
records, as the one-process loader does (:func:`~deteval.io.coco._results_from_records`): the ids and scores
checked, every mask's structure checked and its runs decoded and checked (:func:`~deteval.io.rle.check_rles`,
which gives the areas). It sends back compact columns (the counts strings joined into one text: no dict per
record to pickle). The parent reads the ground truth and the head (:func:`~deteval.io.coco.results_part`),
then maps the child's ids, compares the sizes with the images' and rebuilds the RLE dicts
(:func:`segm_with_tail`).

Anything else (a record with a ``bbox``, a polygon or an uncompressed RLE, a size that is not its image's, an
unknown id, any error) makes these return None: the caller then reads the file in one process, which names
the fault, so the messages and which fault is reported first are those of the one-process path.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from operator import contains, itemgetter
from os import PathLike
from typing import Any

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError
from deteval.io import coco as coco_io
from deteval.io.coco import (
    CocoGroundTruth,
    CocoResults,
    MaskBoxes,
    _concat_results,
    _field,
    _floats,
    _index_of,
    _part_pieces,
    _result_ids,
    plain_rle_sizes,
    results_part,
)
from deteval.io.rle import check_rles

__all__ = ["RawMasks", "segm_tail", "segm_with_tail"]

#: One piece of the tail: image ids, category ids, scores (not yet mapped to the ground truth), each mask's
#: ``[height, width]``, its area, and its ``counts`` strings joined by newlines (a checked counts string holds
#: only ``'0'..'o'``).
RawMasks = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]


def segm_tail(path: str | PathLike[str], start: int) -> list[RawMasks] | None:
    """The child's share: every piece of ``path`` beginning at or after byte ``start`` (never the first), read
    as :func:`_raw_masks`; None on any fault or doubt."""
    # cut as :func:`~deteval.io.coco.results_part` cuts the head (quarter pieces), so the parts fit together
    pieces = _part_pieces(path, start, False, coco_io.CHUNK_BYTES // 4)
    if pieces is None:
        return None
    file = str(path)
    out: list[RawMasks] = []
    with paused():  # (tens of thousands of objects per piece, no cycles)
        for records in pieces:
            if records is None:
                return None
            try:
                raw = _raw_masks(records, file)
            except DetevalError:
                return None
            if raw is None:
                return None
            out.append(raw)
            del records
    return out


def _raw_masks(records: list, file: str) -> RawMasks | None:
    """The columns of segm-branch results whose masks are all compressed RLE dicts and which have no ``bbox``
    (loadRes then takes every box from the mask), checked as the one-process loader checks them but for what
    needs the ground truth; None if the records are not such (the one-process path decides)."""
    if set(map(type, records)) != {dict} or any(map(contains, records, repeat("bbox"))):
        return None
    img_ids = _result_ids(records, "image_id", file)
    cat_ids = _result_ids(records, "category_id", file)
    score = _floats(_field(records, "score", file, None), "score", file, None)
    try:
        segs = list(map(itemgetter("segmentation"), records))
    except KeyError:
        return None
    hw = plain_rle_sizes(segs)  # (the comparison with the images' sizes is the parent's)
    if hw is None:
        return None
    counts = list(map(itemgetter("counts"), segs))
    pixels = hw[:, 0] * hw[:, 1]
    area = check_rles(segs, file, range(len(segs)), pixels=pixels)
    return img_ids, cat_ids, score, hw, area, "\n".join(counts)


def segm_with_tail(
    path: str | PathLike[str], gt: CocoGroundTruth, start: int, tail: Callable[[], list[RawMasks] | None]
) -> CocoResults | None:
    """The head read here against ``gt`` (:func:`~deteval.io.coco.results_part`), then the child's pieces
    (``tail()``: what :func:`segm_tail` returned) mapped to ``gt`` and appended: the columns the one-process
    loader gives; None on any fault or doubt (the caller then reads the file in one process)."""
    parts = results_part(path, gt, "segm", start, True)
    if parts is None:
        return None
    raw = tail()
    if raw is None:
        return None
    file = str(path)
    with paused():
        for piece in raw:
            part = _mapped(piece, gt, file)
            if part is None:
                return None
            parts.append(part)
    return _concat_results(parts, file, "segm")


def _mapped(piece: RawMasks, gt: CocoGroundTruth, file: str) -> CocoResults | None:
    """One piece of the tail against ``gt``: the ids mapped, every mask of its image's size (checked), its RLE
    dict rebuilt as JSON gave it; None if an id is unknown or a size differs."""
    img_ids, cat_ids, score, hw, area, joined = piece
    try:
        img = _index_of(img_ids, gt.image_ids, "image_id", file, None)
        cat = _index_of(cat_ids, gt.cat_ids, "category_id", file, None)
    except DetevalError:
        return None
    counts = joined.split("\n")
    if len(counts) != img.shape[0] or not np.array_equal(hw, gt.image_hw[img]):
        return None
    # (each size list made by numpy's tolist, in C: 0.0066 s for 36k dicts against 0.009-0.011 s)
    rles: list[Any] = [{"size": size, "counts": c} for size, c in zip(hw.tolist(), counts)]
    return CocoResults(
        img=img,
        cat=cat,
        score=score,
        bbox=MaskBoxes(rles, file),
        area=area,
        segmentation=rles,
        kind="segm",
        source=file,
        rles=list(rles),
    )
