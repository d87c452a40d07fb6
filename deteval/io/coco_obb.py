"""COCO JSON with oriented boxes → the COCO tables with their ``obb`` column.

The form is hotcoco's (its ``iou_type="obb"``, and what its DOTA converter writes): every ground-truth
annotation and every result carries ``"obb": [cx, cy, w, h, angle]``, the centre, the width and height and the
angle in radians, counter-clockwise positive. Everything else is COCO's: ``id``, ``image_id``,
``category_id``, ``iscrowd``, ``area`` (the ground truth's area ranges read it; a missing ``area`` is ``w·h``)
and ``score``; a ``bbox`` is not needed (the table's is the rotated box's axis-aligned extent, used by nothing
in the OBB protocol). A result's area is ``w·h``, as hotcoco's ``loadRes`` sets it.

(vernier 0.5 reads no oriented boxes; hotcoco is the one peer with this protocol, and its form is followed so
that the same files run through both.)

Bad input raises one :class:`~deteval.errors.DetevalError` naming the file and the record
(``annotations[3]``, or the result's index): an ``obb`` that is not five finite numbers, a negative width or
height; the rest of each record is checked by the COCO loaders.
"""

from __future__ import annotations

import math
from os import PathLike
from typing import Any

import numpy as np

from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.coco import CocoGroundTruth, CocoResults, load_coco_gt, load_coco_results
from deteval.io.guards import read_json
from deteval.tables.quads import obb_quads, quad_extents

__all__ = ["load_obb_gt", "load_obb_results", "obb_column"]


def obb_column(records: list, file: str, name: Any) -> np.ndarray:
    """The ``(N, 5)`` ``obb`` values of ``records``, checked (``name(i)``: the record's name in errors)."""
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


def _document(source: Any, what: str) -> tuple[Any, str]:
    if isinstance(source, (str, PathLike)):
        return read_json(source, what), str(source)
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
    data, file = _document(source, "ground truth")
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise InputFormatError("ground truth must be a JSON object with an 'annotations' list", file=file)
    anns = data["annotations"]
    quads = obb_quads(obb_column(anns, file, lambda i: f"annotations[{i}]"))
    boxes = quad_extents(quads).tolist()
    filled = [
        {**a, "bbox": b, "area": a.get("area", float(q[8]))} for a, b, q in zip(anns, boxes, quads.tolist())
    ]
    try:
        g = load_coco_gt({**data, "annotations": filled})
    except DetevalError as exc:
        raise _renamed(exc, file) from None
    g.source = file
    g.obb = quads
    return g


def load_obb_results(source: Any, gt: CocoGroundTruth) -> CocoResults:
    """Results with an ``obb`` each (path, or a list of dicts; a table with its ``obb`` column is returned as
    it is) against ``gt``; a result's ``area`` is ``w·h``.

    Parameters
    ----------
    source
        A path to the JSON array, the list of dicts, or a :class:`~deteval.io.coco.CocoResults`.
    gt
        The ground truth the ids are checked against.

    Returns
    -------
    CocoResults
        Input order kept, ``obb`` the quadrilaterals.
    """
    if isinstance(source, CocoResults):
        return _with_obb(source)
    records, file = _document(source, "results")
    if not isinstance(records, list):
        raise InputFormatError("results must be a JSON array of objects", file=file)
    quads = obb_quads(obb_column(records, file, lambda i: i))
    boxes = quad_extents(quads).tolist()
    filled = [{**r, "bbox": b} for r, b in zip(records, boxes)]
    try:
        r = load_coco_results(filled, gt, iou_type="bbox")
    except DetevalError as exc:
        raise _renamed(exc, file) from None
    return r.replace(area=quads[:, 8].copy(), obb=quads, source=file)
