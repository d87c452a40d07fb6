"""The fields of COCO records as checked columns: ids, numbers, flags and ``[x, y, w, h]`` boxes, each fault
named by its file and record.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError, first_true
from deteval.io.coco.typed import struct_field
from deteval.tables.arrays import rows_beyond_exact


def record_at(where: str | None, i: int) -> str | int:
    return i if where is None else f"{where}[{i}]"


def field_values(records: list, key: str, file: str, where: str | None, default: Any = ...) -> list:
    """``[r[key] for r in records]`` with a precise error for a non-object or a missing key (records decoded
    by type: :func:`deteval.io.coco.typed.struct_field`)."""
    if records and not isinstance(records[0], dict) and hasattr(records[0], "__struct_fields__"):
        values, missing = struct_field(records, key, default)
        if missing >= 0:
            raise InputFormatError(f"missing field {key!r}", file=file, record=record_at(where, missing))
        return values
    try:
        if default is ...:
            return [r[key] for r in records]
        return [r.get(key, default) for r in records]
    except (KeyError, TypeError, AttributeError):
        for i, r in enumerate(records):
            if not isinstance(r, dict):
                raise InputFormatError(
                    f"expected a JSON object, got {type(r).__name__}", file=file, record=record_at(where, i)
                ) from None
            if default is ... and key not in r:
                raise InputFormatError(
                    f"missing field {key!r}", file=file, record=record_at(where, i)
                ) from None
        raise  # pragma: no cover - unreachable


def first_bad(values: list, ok: Callable[[Any], bool]) -> int:
    for i, v in enumerate(values):
        if not ok(v):
            return i
    return -1  # pragma: no cover


def _numeric(values: list) -> np.ndarray | None:
    """``np.array(values)`` if it is a plain numeric array (no strings, None or nested objects), else None."""
    try:
        arr = np.array(values)
    except (ValueError, TypeError):
        return None
    return arr if arr.dtype.kind in "iuf" else None


def finite_floats(
    values: list, what: str, file: str, where: str | None, *, flags: bool = False
) -> np.ndarray:
    """Numbers as float64, finite; ``flags``: only 0 or 1 (``true``/``false`` accepted too)."""
    n = len(values)
    arr = _numeric(values) if n else np.zeros(0)
    if flags and arr is None and n and set(map(type, values)) == {bool}:
        arr = np.array(values)  # all true/false
    if arr is not None and not flags and not BOOL_SET.isdisjoint(map(type, values)):
        arr = None  # true/false is not a score or an area (numpy would read it as 1/0)
    if arr is None or arr.shape != (n,):

        def ok(v: Any) -> bool:  # one value alone: a number numpy can hold (not 10**400)
            if isinstance(v, _BOOL_TYPES):
                return flags
            return is_real(v) and _numeric([v]) is not None

        i = first_bad(values, ok)
        v = values[i]
        too_big = is_real(v) and not isinstance(v, float)  # (an integer numpy holds in no int64/uint64)
        raise InputFormatError(
            f"{what} must be a number{' below 2**64' if too_big else ''}, got {_shown(v)}",
            file=file,
            record=record_at(where, i),
        ) from None
    arr = arr.astype(np.float64, copy=False)
    if (i := first_true(~np.isfinite(arr))) >= 0:
        raise ValidationError(
            f"{what} is {values[i]!r}: must be finite", file=file, record=record_at(where, i)
        )
    if flags:
        if (i := first_true((arr != 0) & (arr != 1))) >= 0:
            raise ValidationError(
                f"{what} must be 0 or 1, got {values[i]!r}", file=file, record=record_at(where, i)
            )
    return arr


def xywh_boxes(values: list, file: str, where: str | None) -> np.ndarray:
    """An N×4 float64 array of COCO ``[x, y, w, h]`` boxes, validated."""
    n = len(values)
    boxes = _numeric(values) if n else np.zeros((0, 4))
    if boxes is None or boxes.shape != (n, 4):
        for i, b in enumerate(values):
            if not isinstance(b, (list, tuple, np.ndarray)):
                raise InputFormatError(
                    f"bbox must be a list of 4 numbers, got {b!r}", file=file, record=record_at(where, i)
                )
            if len(b) != 4:
                raise InputFormatError(
                    f"bbox must have 4 numbers [x, y, w, h], got {len(b)}",
                    file=file,
                    record=record_at(where, i),
                )
            if not all(map(is_real, b)):
                raise InputFormatError(
                    f"bbox must hold numbers, got {b!r}", file=file, record=record_at(where, i)
                )
            if any(abs(v) > MAX_COORD for v in b):  # (an integer numpy cannot hold in one array: 2**64)
                raise ValidationError(
                    f"bbox {b!r} is beyond \u00b12**53", file=file, record=record_at(where, i)
                )
        raise InputFormatError("bbox values must be numbers", file=file)  # pragma: no cover
    _refuse_bools(values, boxes, "bbox", file, where)
    boxes = boxes.astype(np.float64, copy=False)
    if (i := first_true(~np.isfinite(boxes).all(axis=1))) >= 0:
        raise ValidationError(f"bbox {values[i]!r} is not finite", file=file, record=record_at(where, i))
    if (i := first_true((boxes[:, 2] < 0) | (boxes[:, 3] < 0))) >= 0:
        raise ValidationError(
            f"bbox {values[i]!r} has a negative width or height", file=file, record=record_at(where, i)
        )
    check_magnitude(boxes, "bbox", values, file, where)
    return boxes


#: Coordinates beyond this are refused: areas overflow to inf and IoUs to NaN (as in the VOC loaders).
MAX_COORD = 2.0**53


#: ``true``/``false`` (and numpy's booleans): numpy reads them as 1/0 inside an array of numbers.
_BOOL_TYPES = (bool, np.bool_)


BOOL_SET = frozenset(_BOOL_TYPES)


def _refuse_bools(values: list, mat: np.ndarray, what: str, file: str, where: str | None) -> None:
    """Refuse a ``true``/``false`` that ``np.array`` read as 1/0 into the rows of ``mat`` (from ``values``).
    Only rows holding a 0 or a 1 can hide one, so only their items' types are looked at (a C-level pass)."""
    rows = np.flatnonzero(((mat == 0) | (mat == 1)).any(axis=1))
    if rows.size == 0:
        return
    picked = [values[i] for i in rows.tolist()]
    if BOOL_SET.isdisjoint(map(type, chain.from_iterable(picked))):
        return
    j = first_bad(picked, lambda r: BOOL_SET.isdisjoint(map(type, r)))
    i = int(rows[j])
    raise InputFormatError(
        f"{what} must hold numbers, got {values[i]!r} (true/false is not a number)",
        file=file,
        record=record_at(where, i),
    )


def check_magnitude(mat: np.ndarray, what: str, values: list, file: str, where: str | None) -> None:
    """Refuse a row of ``mat`` beyond ±2**53 as written in ``values`` (2**53 + 1 reads as 2**53)."""
    big = rows_beyond_exact(mat, values.__getitem__)
    if big.size:
        i = int(big[0])
        raise ValidationError(
            f"{what} {values[i]!r} is beyond \u00b12**53", file=file, record=record_at(where, i)
        )


def id_array(values: list, what: str, file: str, where: str | None, *, strings: bool = True) -> np.ndarray:
    """Ids as int64 (or str, if ``strings``) array: integers (Python or numpy), or, if ``strings``, all
    strings. A whole float below 2**53 (``15.0``) is the integer it equals, as in pycocotools' dict index (JSON
    has one number type; the value is kept exactly); ``true``/``false`` are refused, although that index would
    find them under 1 and 0, so that no id is ever read as another value than the one written."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    types = set(map(type, values))
    if not all(_id_type(t, strings) for t in types):
        i = first_bad(values, lambda v: _id_type(type(v), strings))
        _bad_id(values[i], what, file, record_at(where, i), strings)
    try:
        arr = np.array(values)
    except (ValueError, TypeError, OverflowError):
        arr = None
    if arr is not None and arr.ndim == 1:
        if arr.dtype.kind == "i":
            return arr.astype(np.int64)
        if arr.dtype.kind == "u" and (arr < 2**63).all():
            return arr.astype(np.int64)
        if strings and arr.dtype.kind == "U" and types == {str}:
            return arr
        if arr.dtype.kind == "f" and (np.abs(arr) < 2.0**53).all() and (arr == np.trunc(arr)).all():
            return arr.astype(
                np.int64
            )  # (below 2**53 every int and whole float is exact; NaN fails the test)
    i = first_bad(values, _exact_id)
    if i < 0:  # big integers next to whole floats: each exact on its own, so read one by one
        return np.array([int(v) for v in values], dtype=np.int64)
    _bad_id(values[i], what, file, record_at(where, i), strings)
    raise AssertionError  # pragma: no cover - _bad_id raises


def _exact_id(v: Any) -> bool:
    if isinstance(v, (float, np.floating)):
        return abs(v) < 2.0**53 and float(v).is_integer()  # (False for NaN)
    return type(v) is not str and -(2**63) <= v < 2**63


def _id_type(t: type, strings: bool) -> bool:
    return t is int or t is float or issubclass(t, (np.integer, np.floating)) or (strings and t is str)


def _bad_id(v: Any, what: str, file: str, record: str | int, strings: bool) -> None:
    hint = ""
    if isinstance(v, _BOOL_TYPES):
        hint = " (true/false is not an id)"
    elif isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer():
        hint = " (a whole float is read as an id only below 2**53, where it is exact)"
    raise InputFormatError(
        f"{what} must be an integer within ±2**63{' (or all ids strings)' if strings else ''}, got {v!r}{hint}",
        file=file,
        record=record,
    )


def index_of(ids: np.ndarray, table: np.ndarray, what: str, file: str, where: str | None) -> np.ndarray:
    """Position of each id in the sorted unique ``table``; an unknown id raises naming the record."""
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    if table.size == 0 or (ids.dtype.kind == "U") != (table.dtype.kind == "U"):
        raise ValidationError(f"unknown {what} {ids[0].item()!r}", file=file, record=record_at(where, 0))
    if table.dtype.kind == "i" and int(table[-1]) - int(table[0]) < 16 * table.size + (1 << 16):
        # integer ids within a range not much wider than the table: a lookup table, not a binary search
        lo, span = table[0], int(table[-1]) - int(table[0])
        lut = np.full(span + 1, -1, dtype=np.int64)
        lut[table - lo] = np.arange(table.size)
        inside = (ids >= lo) & (ids <= table[-1])
        pos_c = lut[np.where(inside, ids - lo, 0)]
        bad = ~inside | (pos_c < 0)
    else:
        pos = np.searchsorted(table, ids)
        pos_c = np.minimum(pos, table.size - 1)
        bad = table[pos_c] != ids
    if (i := first_true(bad)) >= 0:
        raise ValidationError(f"unknown {what} {ids[i].item()!r}", file=file, record=record_at(where, i))
    return pos_c.astype(np.int64, copy=False)


def unique_ids(ids: np.ndarray, what: str, file: str, where: str) -> np.ndarray:
    uniq, counts = np.unique(ids, return_counts=True)
    if (j := first_true(counts > 1)) >= 0:
        dup = np.flatnonzero(ids == uniq[j])
        raise ValidationError(
            f"duplicate {what} {uniq[j].item()!r} (also at index {int(dup[0])})",
            file=file,
            record=f"{where}[{int(dup[1])}]",
        )
    return uniq


FLOAT_MAX = float(np.finfo(np.float64).max)


def is_real(v: Any) -> bool:
    """A Python or numpy integer or float, not a bool."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _shown(v: Any) -> str:
    """``repr(v)``, cut to 60 characters (an integer of 400 digits is not worth printing whole)."""
    r = repr(v)
    return r if len(r) <= 60 else f"{r[:50]}...({len(r)} characters)"


def is_list(v: Any) -> bool:
    return isinstance(v, (list, tuple, np.ndarray))


def non_negative(values: list, what: str, file: str, where: str) -> np.ndarray:
    """Finite numbers >= 0 (a negative area would make OKS exceed 1 and area ranges meaningless)."""
    arr = finite_floats(values, what, file, where)
    if (i := first_true(arr < 0)) >= 0:
        raise ValidationError(
            f"{what} must not be negative, got {values[i]!r}", file=file, record=record_at(where, i)
        )
    return arr
