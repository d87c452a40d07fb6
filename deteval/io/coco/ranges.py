"""COCO results read one byte range of a file at a time, each range validated as the whole-file loader would.

A range (:mod:`deteval.io.json_ranges`) holds whole records ``first .. first + count - 1`` of a results file.
Its columns are those :func:`~deteval.io.coco.load_coco_results` gives for these records, and errors and
skipped records are named by their index in the file. The ranges of one file, concatenated in file order,
are the whole file's results whenever every range loads:

* ``on_error="raise"``: every record is read in loadRes' branch of the file's first record (``kind``) and
  checked on its own, so the file loads exactly when each range does;
* ``on_error="skip"``: a range is read so only when each of its records would pick that same branch itself
  (then a record is bad in its range exactly when it is bad in the file, and the kept records load alike).

Whenever this does not hold (a bad record while raising, a record of another branch while skipping, a range
that does not parse, keypoints of another length than the first record's when the ground truth fixes none),
:func:`load_results_range` returns None, and the caller reads the whole file with the ordinary loader: its
error message, or its choice of records to skip, is then the one a single process gives, by construction.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError
from deteval.io.coco.json_text import loads_piece, orjson_available
from deteval.io.coco.results import loadres_branch, results_from_records, typed_bbox, wide_scores
from deteval.io.coco.tables import CocoGroundTruth, CocoResults
from deteval.io.guards import refuse_special
from deteval.io.jsonkeys import loads_unique
from deteval.io.skipping import load_skipping

__all__ = ["first_record", "load_results_range"]


def _parse(text: bytes, file: str) -> Any:
    """``text`` parsed as :func:`~deteval.io.coco.read_json` parses a file; raises on anything it refuses."""
    # (as read_json: millions of small objects)
    with paused():
        if orjson_available():
            try:
                return loads_piece(text, file)
            except ValueError:
                pass  # NaN / Infinity: the json module reads them
        return loads_unique(text)


def _read(path: str | PathLike[str], lo: int, hi: int) -> bytes:
    refuse_special(path, "results file")  # (a pipe would block the open)
    with open(path, "rb") as fh:
        fh.seek(lo)
        return b"[" + fh.read(hi - lo) + b"]"


def first_record(path: str | PathLike[str], lo: int, hi: int) -> tuple[str, int | None] | None:
    """loadRes' branch for the whole file and the length of the first record's keypoints (None if it has
    none), from the first record at bytes ``[lo, hi)``; None if it does not decide them (not an object, no
    branch: the whole-file loader then names the fault)."""
    try:
        records = _parse(_read(path, lo, hi), str(path))
        first = records[0]
        kind = loadres_branch(first, str(path))
    except (DetevalError, ValueError, TypeError, IndexError, KeyError, RecursionError, UnicodeDecodeError):
        return None
    kp = first.get("keypoints")
    return kind, len(kp) if isinstance(kp, list) else None


def load_results_range(
    path: str | PathLike[str],
    lo: int,
    hi: int,
    first: int,
    count: int,
    gt: CocoGroundTruth,
    *,
    iou_type: str,
    kind: str,
    kp_width: int | None,
    on_error: str = "raise",
) -> CocoResults | None:
    """The results of records ``first .. first + count - 1`` (bytes ``[lo, hi)`` of ``path``; ``count`` -1:
    not known) of a file whose first record picks loadRes branch ``kind`` and has ``kp_width`` keypoint
    numbers; None where only the whole file can tell (see the module docstring). ``gt`` needs only its image
    and category tables (and one annotation, for the keypoint width)."""
    file = str(path)
    try:
        text = _read(path, lo, hi)
        if on_error == "raise" and iou_type == "bbox" and kind == "bbox":  # decoded by type where it vouches
            typed = typed_bbox(text, gt, file)  # (else the ordinary parse below, on the same bytes)
            if typed is not None and (count < 0 or len(typed) == count):
                return typed
        records = _parse(text, file)
        del text
    except (ValueError, TypeError, RecursionError, UnicodeDecodeError, DetevalError):
        return None
    if not isinstance(records, list) or (count >= 0 and len(records) != count):
        return None
    try:
        if on_error == "raise":
            res = results_from_records(records, file, False, gt, iou_type, kind=kind)
        else:
            if not all(type(r) is dict and loadres_branch(r, file) == kind for r in records):
                return None

            def load(idx: np.ndarray) -> CocoResults:
                return results_from_records([records[i] for i in idx.tolist()], file, False, gt, iou_type)

            def local(exc: DetevalError) -> int | None:
                return exc.record if isinstance(exc.record, int) else None

            res, bad, _ = load_skipping(len(records), load, local, lambda i: first + i)
            res.skipped = len(bad)
            res.warnings = [f"skipped bad record: {exc}" for exc in bad.values()]
    except DetevalError:
        return None
    if wide_scores(res, path):  # (the file scanned only where a score is 2**63 or more)
        return None  # (the whole-file loader reads an integer beyond 64 bits as written)
    fixed = gt.keypoints is not None and len(gt) > 0  # else the first record's length is every record's
    if res.keypoints is not None and len(res) and not fixed and res.keypoints.shape[1] != kp_width:
        return None
    return res
