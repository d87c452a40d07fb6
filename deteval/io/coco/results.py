"""COCO results (a path, a list of dicts, an N×7 array or a pycocotools ``COCO``) read against the ground
truth as pycocotools' ``loadRes`` reads them: :func:`load_coco_results`.
"""

from __future__ import annotations

from functools import partial
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError, InputFormatError, ValidationError, first_true
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import typed as coco_typed
from deteval.io.coco.fields import (
    check_magnitude,
    field_values,
    finite_floats,
    id_array,
    index_of,
    is_list,
    xywh_boxes,
)
from deteval.io.coco.json_text import (
    exact_on_doubt,
    holds_wide,
    json_bytes,
    of_file_text,
    parse_json,
    parsed_exactly,
    read_json_exact,
    wide_integers,
)
from deteval.io.coco.keypoints import (
    category_keypoint_counts,
    check_keypoint_counts,
    keypoint_counts,
    keypoint_extent,
    keypoint_matrix,
    several_counts,
)
from deteval.io.coco.masks import mask_boxes
from deteval.io.coco.pieces import bbox_piece_bytes, parsed_piece, piece_bounds, piece_text, read_in_pieces
from deteval.io.coco.result_masks import check_given_segmentations, checked_rles
from deteval.io.coco.tables import (
    CocoGroundTruth,
    CocoResults,
    MaskBoxes,
    RawColumns,
    concat_results,
    is_coco_object,
)
from deteval.io.coco.typed import bbox_columns
from deteval.io.json_errors import piece_error
from deteval.io.skipping import check_on_error as _check_on_error
from deteval.io.skipping import load_skipping


def wide_scores(r: CocoResults, text: Any) -> bool:
    """Whether results read by a faster path than :func:`load_coco_results` (orjson) hold a score that may
    have been written as an integer beyond 64 bits (one of 2**63 or more, and a run of 19 digits in ``text``,
    a path or the bytes read, looked at only then): that loader reads such an integer as written and refuses
    it, so it must read them instead."""
    if not holds_wide(r.score):
        return False
    return (
        of_file_text(Path(text), wide_integers) if isinstance(text, (str, PathLike)) else wide_integers(text)
    )


def _results_from_array(arr: np.ndarray, gt: CocoGroundTruth, file: str) -> CocoResults:
    if arr.ndim != 2 or arr.shape[1] != 7:
        raise InputFormatError(
            f"a results array must be N×7 [image_id, x, y, w, h, score, category_id], got shape {arr.shape}",
            file=file,
        )
    if arr.dtype.kind not in "iuf":  # (astype would read the strings "12.5" and booleans as numbers)
        raise InputFormatError(f"a results array must hold numbers, not {arr.dtype}", file=file)
    a = np.asarray(arr, dtype=np.float64)
    if (i := first_true(~np.isfinite(a).all(axis=1))) >= 0:
        raise ValidationError(f"row {a[i].tolist()} is not finite", file=file, record=i)
    bbox = a[:, 1:5].copy()
    if (i := first_true((bbox[:, 2] < 0) | (bbox[:, 3] < 0))) >= 0:
        raise ValidationError(f"bbox {bbox[i].tolist()} has a negative width or height", file=file, record=i)
    check_magnitude(bbox, "bbox", arr[:, 1:5].tolist(), file, None)
    ids = a[:, [0, 6]]
    if (i := first_true(((ids != np.round(ids)) | (np.abs(ids) >= 2.0**63)).any(axis=1))) >= 0:
        raise InputFormatError(f"ids must be integers, got row {a[i].tolist()}", file=file, record=i)
    exact = arr if arr.dtype.kind in "iu" else a  # (an integer id beyond 2**53 would round as float64)
    img = index_of(exact[:, 0].astype(np.int64), gt.image_ids, "image_id", file, None)
    cat = index_of(exact[:, 6].astype(np.int64), gt.cat_ids, "category_id", file, None)
    return CocoResults(
        img=img,
        cat=cat,
        score=a[:, 5].copy(),
        bbox=bbox,
        area=bbox[:, 2] * bbox[:, 3],
        kind="bbox",
        source=file,
    )


def load_coco_results(
    source: Any, gt: CocoGroundTruth, *, iou_type: str = "bbox", on_error: str = "raise"
) -> CocoResults:
    """Load detection results (path, list of dicts, N×7 array or pycocotools ``COCO``) against ``gt``.

    The input is never modified (pycocotools' loadRes writes ``area``, ``id`` and ``iscrowd`` into the
    caller's dicts; the same values are computed here into arrays).

    ``on_error="skip"``: a bad record (including one for an image or category the ground truth does not
    have) is left out and listed in ``warnings`` (``skipped bad record: <file>: record N: <reason>``), counted
    in ``skipped``; the rest is loaded exactly as the input without those records. Faults of the whole input
    (not JSON, not a list) still raise.
    """
    _check_on_error(on_error)
    if isinstance(source, CocoResults):
        return source
    try:
        return _load_results(source, gt, iou_type)
    except DetevalError as exc:
        if on_error == "raise" or not isinstance(exc.record, int) or isinstance(source, np.ndarray):
            raise
    if is_coco_object(source):
        records, file, from_coco = source.dataset.get("annotations", []), "<pycocotools COCO results>", True
    elif isinstance(source, (str, PathLike)):
        records, file, from_coco = read_json_exact(Path(source)), str(source), False
    else:
        records, file, from_coco = list(source), "<in-memory results>", False

    def load(idx: np.ndarray, kind: str | None = None) -> CocoResults:
        return results_from_records([records[i] for i in idx.tolist()], file, from_coco, gt, iou_type, kind)

    def local(exc: DetevalError) -> int | None:
        return exc.record if isinstance(exc.record, int) else None

    # loadRes' branch is the first record's, so with records left out it is the first kept record's: the
    # first record that loads alone (each one before it is bad whatever the branch), and every record is
    # then read in that branch (a subset must not pick its own from its first record: a record of another
    # kind would load alone, pass as good, and fail the final load)
    lead, bad = 0, {}
    while lead < len(records):
        try:
            load(np.array([lead]))
            break
        except DetevalError as exc:
            if local(exc) is None:
                raise
            bad[lead] = type(exc)(exc.reason, file=exc.file, record=lead)
            lead += 1
    if lead == len(records):
        res = load(np.zeros(0, dtype=np.int64))
    else:
        kind = "loaded" if from_coco else loadres_branch(records[lead], file)
        rest = np.arange(lead, len(records))
        res, bad_rest, _ = load_skipping(
            rest.shape[0], lambda idx: load(rest[idx], kind), local, lambda i: int(rest[i])
        )
        bad.update({int(rest[i]): exc for i, exc in bad_rest.items()})
    res.skipped = len(bad)
    res.warnings = [f"skipped bad record: {exc}" for exc in bad.values()] + res.warnings
    return res


def _load_results(source: Any, gt: CocoGroundTruth, iou_type: str) -> CocoResults:
    from_coco = False
    if is_coco_object(source):
        records, file, from_coco = source.dataset.get("annotations", []), "<pycocotools COCO results>", True
    elif isinstance(source, (str, PathLike)):
        if iou_type in ("bbox", "keypoints"):
            fast = _bbox_results_in_chunks(Path(source), gt, iou_type)  # (exact piece by piece)
            if fast is not None:
                return fast
        path = Path(source)
        return exact_on_doubt(
            lambda: _whole_results(path, gt, iou_type),
            _score,
            lambda: of_file_text(path, wide_integers),
            lambda: results_from_records(read_json_exact(path), str(path), False, gt, iou_type),
        )
    elif isinstance(source, np.ndarray):
        return _results_from_array(source, gt, "<numpy results array>")
    elif isinstance(source, (list, tuple)):
        records, file = list(source), "<in-memory results>"
    else:
        raise InputFormatError(
            f"results must be a path, a list of dicts, an N×7 array or a pycocotools COCO, "
            f"not {type(source).__name__}"
        )
    return results_from_records(records, file, from_coco, gt, iou_type)


def _whole_results(path: Path, gt: CocoGroundTruth, iou_type: str) -> CocoResults:
    """A results file read at once: decoded by type where that vouches for it, else parsed."""
    file = str(path)
    data = json_bytes(path)
    typed = typed_bbox(data, gt, file) if iou_type == "bbox" and len(data) >= coco_typed.MIN_BYTES else None
    if typed is not None:
        return typed
    return results_from_records(parse_json(data, path), file, False, gt, iou_type)


def results_from_records(
    records: Any, file: str, from_coco: bool, gt: CocoGroundTruth, iou_type: str, kind: str | None = None
) -> CocoResults:
    """``kind``: the loadRes branch when already decided (a piece of a file: by the file's first record)."""
    if not isinstance(records, list):
        raise InputFormatError(
            f"results JSON must be a list of objects, not {type(records).__name__}", file=file
        )
    n = len(records)
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return CocoResults(
            img=z,
            cat=z.copy(),
            score=np.zeros(0),
            bbox=np.zeros((0, 4)),
            area=np.zeros(0),
            keypoints=np.zeros((0, 0)) if iou_type == "keypoints" else None,
            segmentation=[] if iou_type == "segm" else None,
            kind="bbox",
            source=file,
        )
    first = records[0]
    if not isinstance(first, dict):
        raise InputFormatError(f"expected a JSON object, got {type(first).__name__}", file=file, record=0)
    # A pycocotools COCO from loadRes already holds what loadRes computed (area, bbox, segmentation): read it
    # as COCOeval does. Otherwise compute it as loadRes would, in the branch its first record picks.
    if kind is None:
        kind = "loaded" if from_coco else loadres_branch(first, file)
    img, cat, score = _result_keys(records, gt, file)

    segmentation = None
    keypoints = None
    if iou_type == "segm" or kind == "segm":
        segmentation = [r.get("segmentation", _MISSING) for r in records]
        if kind == "bbox":  # loadRes gives a record without a segmentation its box polygon
            boxes = xywh_boxes(field_values(records, "bbox", file, None), file, None)
            segmentation = [
                [[x, y, x, y + h, x + w, y + h, x + w, y]] if sg is _MISSING else sg
                for sg, (x, y, w, h) in zip(segmentation, boxes.tolist())
            ]
        segmentation = [None if sg is _MISSING else sg for sg in segmentation]
        missing = [i for i, sg in enumerate(segmentation) if sg is None]
        if missing:  # COCOeval converts every detection's mask, not only those it compares
            raise InputFormatError("missing field 'segmentation'", file=file, record=missing[0])
        if kind != "segm":  # (a segm-kind result is checked where its masks are read)
            check_given_segmentations(segmentation, img, gt, file)
    if iou_type == "keypoints" or kind == "keypoints":
        width = gt.keypoints.shape[1] if gt.keypoints is not None and len(gt) else None
        keypoints = keypoint_matrix(
            field_values(records, "keypoints", file, None), file, None, "keypoints", width=width
        )
        if gt.keypoints is not None and len(gt) and several_counts(gt.keypoints, keypoints):
            # (each record against its category's count, here where a bad one can be skipped)
            kc, named = category_keypoint_counts(
                gt.cat_ids, gt.category_records, gt.cat, keypoint_counts(gt.keypoints)
            )
            check_keypoint_counts(kc, named, gt.cat_ids, (cat, keypoint_counts(keypoints)), file, int)

    if kind == "keypoints" and keypoints is not None:  # loadRes: the keypoints' extent, for every record
        bbox: np.ndarray | MaskBoxes
        bbox, area = keypoint_extent(keypoints)
    else:
        # segm branch: every mask validated and converted once, read for the areas, the missing boxes and
        # (kept in ``rles``) by the matcher
        rles, areas = checked_rles(segmentation or [], img, gt, file) if kind == "segm" else (None, None)
        bbox = _result_boxes(records, kind, iou_type, rles, img, gt, file)
        if kind == "loaded":
            area = finite_floats(field_values(records, "area", file, None), "area", file, None)
        elif kind == "bbox" and isinstance(bbox, np.ndarray):
            area = bbox[:, 2] * bbox[:, 3]
        else:  # segm: loadRes takes every record's area from its mask
            area = areas if areas is not None else np.zeros(0)
    return CocoResults(
        img=img,
        cat=cat,
        score=score,
        bbox=bbox,
        area=area,
        keypoints=keypoints,
        segmentation=segmentation,
        kind=kind,
        source=file,
        rles=rles if kind == "segm" else None,
    )


_MISSING: Any = object()


def loadres_branch(first: dict, file: str) -> str:
    """The branch pycocotools' ``loadRes`` takes for *every* record, decided from the first record alone:
    ``"bbox"`` if it has a non-empty ``bbox``, else ``"segm"`` if it has a ``segmentation``, else
    ``"keypoints"`` if it has ``keypoints``."""
    box = first.get("bbox", _MISSING)
    if box is not _MISSING and not (is_list(box) and len(box) == 0):
        return "bbox"
    if "segmentation" in first:
        return "segm"
    if "keypoints" in first:
        return "keypoints"
    raise InputFormatError("a result needs a bbox, a segmentation or keypoints", file=file, record=0)


def _result_boxes(
    records: list,
    kind: str,
    iou_type: str,
    rles: list | None,
    img: np.ndarray,
    gt: CocoGroundTruth,
    file: str,
) -> np.ndarray | MaskBoxes:
    """The ``bbox`` column as loadRes leaves it: each record's own ``bbox``; in the segm branch the mask's box
    (``toBbox`` of its RLE in ``rles``) only for a record without one, computed when first read where no
    record has one and the evaluation is not bbox. bbox evaluation needs a valid box in every record."""
    if kind == "bbox":
        return xywh_boxes(field_values(records, "bbox", file, None), file, None)
    raw = [r.get("bbox", _MISSING) for r in records]
    missing = [i for i, b in enumerate(raw) if b is _MISSING]
    if missing and len(missing) == len(raw) and kind == "segm" and rles is not None and iou_type != "bbox":
        return MaskBoxes(rles, file)  # (the usual segm results: no record has a box)
    if missing and kind == "segm" and rles is not None:
        derived = mask_boxes([rles[i] for i in missing], file)
        for j, i in enumerate(missing):
            raw[i] = derived[j]
        missing = []
    if iou_type == "bbox":
        if missing:
            raise InputFormatError("missing field 'bbox'", file=file, record=missing[0])
        return xywh_boxes(raw, file, None)
    # segm and keypoints evaluation never read a detection's box (loadRes even keeps a `[]` there): where the
    # column would not be valid boxes it holds NaN instead of failing.
    if missing:
        return _nan_boxes(len(raw))
    try:
        return xywh_boxes(raw, file, None)
    except DetevalError:
        return _nan_boxes(len(raw))


def _nan_boxes(n: int) -> np.ndarray:
    return np.full((n, 4), np.nan)


def typed_bbox(text: bytes, gt: CocoGroundTruth, file: str) -> CocoResults | None:
    """The bbox results in the JSON list ``text`` decoded by type (:mod:`deteval.io.coco.typed`) and mapped to
    ``gt``, as :func:`results_from_records` reads them in loadRes' bbox branch; None where it cannot vouch
    for that or an id is not in ``gt`` (the ordinary path then reads ``text`` and names the fault)."""
    raw = bbox_columns(text)
    if raw is None:
        return None
    try:
        return mapped_bbox(raw, gt, file)
    except DetevalError:
        return None


def mapped_bbox(raw: RawColumns, gt: CocoGroundTruth, file: str) -> CocoResults:
    """Checked bbox columns (:data:`RawColumns`) with their ids mapped to ``gt`` (an unknown one raises)."""
    img_ids, cat_ids, score, bbox = raw
    img = index_of(img_ids, gt.image_ids, "image_id", file, None)
    cat = index_of(cat_ids, gt.cat_ids, "category_id", file, None)
    return CocoResults(img=img, cat=cat, score=score, bbox=bbox, area=bbox[:, 2] * bbox[:, 3], source=file)


def _bbox_results_in_chunks(path: Path, gt: CocoGroundTruth, iou_type: str = "bbox") -> CocoResults | None:
    """Parse a large bbox (or keypoints) results file piece by piece, so only one piece's Python objects exist
    at a time. Keypoints results are read so only in loadRes' keypoints branch and when the ground truth fixes
    the number of keypoints (so that every piece is checked against the same width).

    The file is cut between records (:func:`~deteval.io.coco.pieces.read_in_pieces`). Returns None whenever this does
    not apply (small file, not bbox results, a piece that does not parse); the caller then parses the whole file, which
    also produces the precise error message.
    """
    try:  # (a file below 2 * coco_pieces.CHUNK_BYTES is read whole, even where its pieces would be smaller)
        if path.stat().st_size < 2 * coco_pieces.CHUNK_BYTES:
            return None
    except OSError:
        return None
    read = read_in_pieces(path, bbox_piece_bytes() if iou_type == "bbox" else None)
    if read is None:
        return None
    data, cuts = read
    file = str(path)
    parts: list[CocoResults] = []
    offset = 0

    def columns(records: list) -> CocoResults:
        if iou_type == "bbox":
            return bbox_results(records, gt, file)
        return results_from_records(records, file, False, gt, iou_type, kind="keypoints")

    with paused():
        for i in range(len(cuts) + 1):
            text = piece_text(data, cuts, i)
            typed = typed_bbox(text, gt, file) if iou_type == "bbox" else None
            if typed is not None:
                parts.append(typed)
                offset += len(typed)
                continue
            records = parsed_piece(text, file)
            if records is None:  # (the error the whole file's parse gives, found from this piece, if it can)
                fault = piece_error(data, piece_bounds(data, cuts, i)[0], text, i == len(cuts), file)
                if fault is not None:
                    raise fault
                return None
            first = records[0]
            if i == 0 and iou_type == "bbox" and not bbox_branch(first):
                return None
            if i == 0 and iou_type == "keypoints":
                try:
                    if loadres_branch(first, file) != "keypoints" or gt.keypoints is None or not len(gt):
                        return None
                except DetevalError:
                    return None
            try:  # (exact where the piece may hold an integer beyond 64 bits: see exact_on_doubt)
                part = exact_on_doubt(
                    partial(columns, records),
                    _score,
                    partial(wide_integers, text),
                    partial(parsed_exactly, columns, text),
                )
            except DetevalError as exc:
                rec = exc.record + offset if isinstance(exc.record, int) else exc.record
                raise type(exc)(exc.reason, file=exc.file, record=rec) from None
            parts.append(part)
            offset += len(records)
            del records
    return concat_results(parts, file)


def _score(r: CocoResults) -> np.ndarray:
    return r.score


def bbox_branch(first: dict) -> bool:
    return "bbox" in first and first["bbox"] != []


def _result_keys(records: list, gt: CocoGroundTruth, file: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Image index, category index and score columns of result records (ids checked against ``gt``)."""
    img = index_of(result_ids(records, "image_id", file), gt.image_ids, "image_id", file, None)
    cat = index_of(result_ids(records, "category_id", file), gt.cat_ids, "category_id", file, None)
    return img, cat, finite_floats(field_values(records, "score", file, None), "score", file, None)


def result_ids(records: list, key: str, file: str) -> np.ndarray:
    return id_array(field_values(records, key, file, None), key, file, None)


def bbox_results(records: list, gt: CocoGroundTruth, file: str) -> CocoResults:
    img, cat, score = _result_keys(records, gt, file)
    bbox = xywh_boxes(field_values(records, "bbox", file, None), file, None)
    return CocoResults(img=img, cat=cat, score=score, bbox=bbox, area=bbox[:, 2] * bbox[:, 3], source=file)


def raw_bbox_columns(records: list, file: str) -> RawColumns:
    """:func:`bbox_results` without the ground truth: every check but the ids' presence in it."""
    return (
        result_ids(records, "image_id", file),
        result_ids(records, "category_id", file),
        finite_floats(field_values(records, "score", file, None), "score", file, None),
        xywh_boxes(field_values(records, "bbox", file, None), file, None),
    )
