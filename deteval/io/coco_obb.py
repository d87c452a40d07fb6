"""COCO JSON with oriented boxes → the COCO tables with their ``obb`` column.

The form is hotcoco's (its ``iou_type="obb"``, and what its DOTA converter writes): every ground-truth
annotation and every result carries ``"obb": [cx, cy, w, h, angle]``, the centre, the width and height and the
angle in radians, counter-clockwise positive. Everything else is COCO's: ``id``, ``image_id``,
``category_id``, ``iscrowd``, ``area`` (the ground truth's area ranges read it; a missing ``area`` is ``w·h``)
and ``score``; a ``bbox`` is not needed (the table's is the rotated box's axis-aligned extent, used by nothing
in the OBB protocol). A result's area is ``w·h``, as hotcoco's ``loadRes`` sets it.

(vernier 0.5 reads no oriented boxes; hotcoco is the one peer with this protocol, and its form is followed so
that the same files run through both.)

Files of a few MB and more are decoded by type where that vouches for the same arrays
(:func:`~deteval.io.coco.typed.obb_columns`, :func:`~deteval.io.coco.typed.obb_gt_columns`); anything else
is read record by record as below.

Bad input raises one :class:`~deteval.errors.DetevalError` naming the file and the record
(``annotations[3]``, or the result's index): an ``obb`` that is not five finite numbers, a negative width or
height; the rest of each record is checked by the COCO loaders.
"""

from __future__ import annotations

import math
from itertools import chain
from os import PathLike
from typing import Any

import numpy as np

from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.coco import CocoGroundTruth, CocoResults, load_coco_gt, load_coco_results, read_json
from deteval.io.coco import typed as coco_typed
from deteval.io.coco.ground_truth import gt_from_columns
from deteval.io.coco.json_text import json_bytes, loads_json
from deteval.io.guards import regular_file
from deteval.tables.quads import obb_quads, quad_extents

__all__ = ["PlainResults", "load_obb_gt", "load_obb_results", "obb_column", "plain_results"]

#: A results file's columns where every record is plain (:func:`plain_results`): pycocotools' N×7 array
#: ``[image_id, x, y, w, h, score, category_id]`` (the box: each quadrilateral's extent) and the
#: quadrilaterals.
PlainResults = tuple[np.ndarray, np.ndarray]


def obb_column(records: list, file: str, name: Any) -> np.ndarray:
    """The ``(N, 5)`` ``obb`` values of ``records``, checked (``name(i)``: the record's name in errors)."""
    fast = _plain_obbs(records)
    if fast is not None:
        return fast
    out = np.empty((len(records), 5), dtype=np.float64)
    for i, rec in enumerate(records):
        box = rec.get("obb") if isinstance(rec, dict) else None
        if not isinstance(box, (list, tuple)) or len(box) != 5:
            raise InputFormatError(
                f"needs an 'obb' of 5 numbers [cx, cy, w, h, angle in radians], got {box!r:.80}",
                file=file,
                record=name(i),
            )
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in box):
            raise ValidationError(
                f"'obb' holds a value that is not a finite number: {box!r:.80}", file=file, record=name(i)
            )
        if box[2] < 0 or box[3] < 0:
            raise ValidationError(
                f"'obb' has a negative width or height: {box!r:.80}", file=file, record=name(i)
            )
        out[i] = box
    return out


def _plain_obbs(records: list) -> np.ndarray | None:
    """The column at once where every record is a dict whose ``obb`` is 5 finite ints or floats with w, h ≥ 0
    (the usual file); None otherwise, for the record-by-record check that names the fault."""
    try:
        boxes = [r["obb"] for r in records]
        # (a bool is neither int nor float by type; a string or a dict is iterated, its items then fail too)
        if not set(map(type, chain.from_iterable(boxes))) <= {int, float}:
            return None
        out = np.array(boxes, dtype=np.float64)
    except (TypeError, KeyError, ValueError):  # (not dicts, no obb, not iterable, ragged)
        return None
    if out.shape != (len(records), 5) or not np.isfinite(out).all() or (out[:, 2:4] < 0).any():
        return None
    return out


def _plain_results(records: list, quads: np.ndarray) -> np.ndarray | None:
    """pycocotools' N×7 results array ``[image_id, x, y, w, h, score, category_id]`` (the box: each
    quadrilateral's extent) where every id is an int below 2**53 and every score an int or float; None
    otherwise, for the COCO loader's record-by-record checks."""
    try:
        img = [r["image_id"] for r in records]
        cat = [r["category_id"] for r in records]
        score = [r["score"] for r in records]
    except (TypeError, KeyError):
        return None
    if not (set(map(type, img)) | set(map(type, cat))) <= {int} or not set(map(type, score)) <= {int, float}:
        return None
    ids = np.array([img, cat], dtype=np.float64).reshape(2, -1)
    if ids.size and np.abs(ids).max() >= 2.0**53:
        return None
    return _results_array(ids[0], ids[1], score, quads)


def _results_array(img: Any, cat: Any, score: Any, quads: np.ndarray) -> np.ndarray:
    """pycocotools' N×7 ``[image_id, x, y, w, h, score, category_id]``, the box each quadrilateral's extent."""
    out = np.empty((quads.shape[0], 7), dtype=np.float64)
    out[:, 0], out[:, 6], out[:, 5] = img, cat, score
    out[:, 1:5] = quad_extents(quads)
    return out


def _document(source: Any, what: str) -> tuple[Any, str]:
    if isinstance(source, (str, PathLike)):
        regular_file(source, what)  # (the shared guards: a pipe, a device or a folder is refused unopened)
        return read_json(source), str(source)
    return source, f"<in-memory {what}>"


def _with_obb(table: Any) -> Any:
    """A table given as it is, if it has its oriented boxes."""
    if table.obb is None:
        raise InputFormatError("this table has no oriented boxes (no 'obb' column)", file=table.source)
    return table


def _renamed(exc: DetevalError, file: str) -> DetevalError:
    return type(exc)(exc.reason, file=file, record=exc.record)


def load_obb_gt(source: Any) -> CocoGroundTruth:
    """COCO ground truth with an ``obb`` per annotation (path or parsed dict; a table with its ``obb`` column
    is returned as it is).

    Parameters
    ----------
    source
        A path to the JSON file, its parsed dict, or a :class:`~deteval.io.coco.CocoGroundTruth`.

    Returns
    -------
    CocoGroundTruth
        COCO's columns, ``bbox`` the rotated boxes' extents, ``obb`` their quadrilaterals (area ``w·h``).
    """
    if isinstance(source, CocoGroundTruth):
        return _with_obb(source)
    typed = _typed_gt(source)
    if typed is not None:
        return typed
    data, file = _document(source, "ground truth")
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise InputFormatError("ground truth must be a JSON object with an 'annotations' list", file=file)
    anns = data["annotations"]
    quads = obb_quads(obb_column(anns, file, lambda i: f"annotations[{i}]"))
    boxes = quad_extents(quads).tolist()
    areas = quads[:, 8].tolist()
    if isinstance(source, (str, PathLike)):  # (parsed here: its records are ours to fill in)
        for a, b, q in zip(anns, boxes, areas):
            a["bbox"] = b
            a.setdefault("area", q)
        filled = anns
    else:
        filled = [{**a, "bbox": b, "area": a.get("area", q)} for a, b, q in zip(anns, boxes, areas)]
    try:
        g = load_coco_gt({**data, "annotations": filled})
    except DetevalError as exc:
        raise _renamed(exc, file) from None
    g.source = file
    g.obb = quads
    return g


def _typed_gt(source: Any) -> CocoGroundTruth | None:
    """A ground-truth file of at least ``coco_typed.MIN_BYTES`` decoded by type
    (:func:`~deteval.io.coco.typed.obb_gt_columns`) where that vouches for the ordinary reader's table; None
    otherwise, and for any fault (the ordinary reader then names it)."""
    if not isinstance(source, (str, PathLike)):
        return None
    path = regular_file(source, "ground truth")
    if path.stat().st_size < coco_typed.MIN_BYTES:
        return None
    file = str(source)
    got = coco_typed.obb_gt_columns(json_bytes(path), lambda text: loads_json(text, file))
    if got is None:
        return None
    parts, ann_id, img, cat, obb, area, crowd, ignore = got
    if not (isinstance(parts["images"], list) and isinstance(parts["categories"], list)):
        return None
    quads = obb_quads(obb)
    n = ann_id.shape[0]
    cols = {
        "ann_id": ann_id,
        "image_id": img,
        "category_id": cat,
        "bbox": quad_extents(quads),
        "area": np.where(np.isnan(area), quads[:, 8], area),  # (an absent area is w·h)
        "iscrowd": crowd != 0,
        "ignore": ignore != 0,
        "num_keypoints": np.full(n, -1, dtype=np.int64),
        "keypoints": None,
        "segmentation": None,
    }
    try:
        g = gt_from_columns(parts, cols, file)
    except DetevalError:
        return None
    g.obb = quads
    return g


def plain_results(source: str | PathLike[str]) -> PlainResults | None:
    """The columns of a results file whose records are all plain (:data:`PlainResults`), read without the
    ground truth (another process may read it meanwhile; :func:`load_obb_results` checks the ids against it);
    None for anything else, which :func:`load_obb_results` then reads record by record, naming any fault.

    Parameters
    ----------
    source
        A path to the JSON array of results.

    Returns
    -------
    PlainResults or None
        pycocotools' N×7 array and the quadrilaterals, or None.
    """
    try:
        typed = _typed(source)
        if typed is not None:
            return typed
        records, _ = _document(source, "results")
    except DetevalError:
        return None
    if not isinstance(records, list):
        return None
    boxes = _plain_obbs(records)
    if boxes is None:
        return None
    quads = obb_quads(boxes)
    array = _plain_results(records, quads)
    return None if array is None else (array, quads)


def _typed(source: Any) -> PlainResults | None:
    """A results file of at least ``coco_typed.MIN_BYTES`` decoded by type (:func:`~deteval.io.coco.typed.obb_columns`),
    where that vouches for the same columns as the plain-records reader; None otherwise."""
    if not isinstance(source, (str, PathLike)):
        return None
    path = regular_file(source, "results")
    if path.stat().st_size < coco_typed.MIN_BYTES:
        return None
    cols = coco_typed.obb_columns(json_bytes(path))
    if cols is None:
        return None
    img, cat, score, obb = cols
    quads = obb_quads(obb)
    return _results_array(img, cat, score, quads), quads


def load_obb_results(source: Any, gt: CocoGroundTruth, plain: PlainResults | None = None) -> CocoResults:
    """Results with an ``obb`` each (path, or a list of dicts; a table with its ``obb`` column is returned as
    it is) against ``gt``; a result's ``area`` is ``w·h``.

    Parameters
    ----------
    source
        A path to the JSON array, the list of dicts, or a :class:`~deteval.io.coco.CocoResults`.
    gt
        The ground truth the ids are checked against.
    plain
        The file's columns already read (:func:`plain_results` of ``source``), or None: read here.

    Returns
    -------
    CocoResults
        Input order kept, ``obb`` the quadrilaterals.
    """
    if isinstance(source, CocoResults):
        return _with_obb(source)
    if plain is None:
        plain = _typed(source)
    if plain is not None:
        return _table(plain[0], plain[1], gt, str(source))
    records, file = _document(source, "results")
    if not isinstance(records, list):
        raise InputFormatError("results must be a JSON array of objects", file=file)
    quads = obb_quads(obb_column(records, file, lambda i: i))
    array = _plain_results(records, quads)
    if array is not None:
        return _table(array, quads, gt, file)
    return _table([{**r, "bbox": b} for r, b in zip(records, quad_extents(quads).tolist())], quads, gt, file)


def _table(results: Any, quads: np.ndarray, gt: CocoGroundTruth, file: str) -> CocoResults:
    """The bbox results of pycocotools' N×7 array or of records (their ids checked against ``gt``) with their
    quadrilaterals."""
    try:
        r = load_coco_results(results, gt)
    except DetevalError as exc:
        raise _renamed(exc, file) from None
    return r.replace(area=quads[:, 8].copy(), obb=quads, source=file)
