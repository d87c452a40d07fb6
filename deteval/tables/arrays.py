"""Array-likes given in memory (lists, numpy arrays, tensors) → numpy numbers and boxes, without coercion.

``np.asarray(value, dtype=float)`` reads the string ``"12.5"`` as 12.5, ``True`` as 1.0 and keeps only the
real part of a complex number: an input that is not numbers would be scored as if it were. Here the array's
own kind decides: integers and floats are numbers; booleans only where a flag or a mask is expected; strings,
objects (``None``, ragged rows, integers beyond 64 bits), complex numbers and datetimes never are. A list that
mixes ``True`` with numbers becomes a float array in numpy, so such lists are also looked at item by item
(only when the array holds a 0 or a 1, the values a boolean becomes).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deteval.errors import ValidationError

__all__ = ["EXACT_BOUND", "MAX_COORD", "as_boxes", "beyond_exact", "numeric_array", "rows_beyond_exact"]

#: Every integer of magnitude up to 2**53 is exact in a float64; 2**53 + 1 is the first that is not (it
#: rounds to 2**53). Coordinates are bounded by it, so the bound is checked on the value as written.
EXACT_BOUND = 2**53

#: The largest box coordinate magnitude accepted (2**53): beyond it a float64 no longer holds whole pixels (the
#: VOC devkit's +1 is lost) and products of coordinates could overflow, turning IoUs into inf/inf = NaN.
MAX_COORD: float = float(EXACT_BOUND)

_BOOLS = (bool, np.bool_)


def _holds_bool(value: Any) -> bool:
    if isinstance(value, _BOOLS):
        return True
    if isinstance(value, (list, tuple)):
        return any(map(_holds_bool, value))
    return False


def numeric_array(value: Any, dtype: Any = np.float64, *, bools: bool = False) -> np.ndarray:
    """``np.asarray(value)`` as ``dtype`` if it holds numbers (booleans too if ``bools``); else a TypeError
    whose message says what it holds (``strings ('12.5', ...)``, ``booleans``, ...)."""
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "b" and not bools:
        raise TypeError("holds booleans (true/false), not numbers")
    if kind in "US":
        shown = ", ".join(repr(v) for v in arr.reshape(-1)[:2].tolist())
        raise TypeError(f"holds strings ({shown}{', ...' if arr.size > 2 else ''}), not numbers")
    if kind == "O":
        raise TypeError("is ragged or holds non-numbers (None, nested lists, integers beyond 64 bits)")
    if kind not in "biuf":
        raise TypeError(f"holds {arr.dtype} values, not real numbers")
    if not bools and kind != "b" and isinstance(value, (list, tuple)) and ((arr == 0) | (arr == 1)).any():
        if _holds_bool(value):
            raise TypeError("holds booleans (true/false) among its numbers")
    return arr.astype(dtype, copy=False)


def beyond_exact(value: Any, bound: int = EXACT_BOUND) -> bool:
    """Whether ``value`` (an int, a float, a numpy number or ASCII decimal text) has a magnitude above
    ``bound``, compared exactly: the integer 2**53 + 1 (or the text ``9007199254740993``) is beyond 2**53
    although ``float()`` rounds it to 2**53."""
    if isinstance(value, (str, bytes)):
        try:
            exact = Decimal(value.decode("ascii") if isinstance(value, bytes) else value)
        except (InvalidOperation, UnicodeDecodeError):
            return False  # (not a number: the caller's syntax check reports it)
        return exact.is_finite() and abs(exact) > bound
    if isinstance(value, (int, np.integer)):
        return abs(int(value)) > bound
    return bool(abs(float(value)) > bound)


def rows_beyond_exact(mat: np.ndarray, rows_of: Any, bound: int = EXACT_BOUND) -> np.ndarray:
    """Rows of the float64 matrix ``mat`` with a value beyond ±``bound``, as written: a value above it in
    ``mat``, or one equal to it whose written form (``rows_of(i)``: the row's values as given, numbers or
    text) is above it (an integer such as 2**53 + 1 rounds to 2**53 when read as float64)."""
    mag = np.abs(mat)
    big = (mag > bound).any(axis=1)
    on = np.flatnonzero((mag == bound).any(axis=1) & ~big)
    for i in on.tolist():  # (rare: only rows holding exactly ±2**53 are looked at again)
        big[i] = any(beyond_exact(v, bound) for v in rows_of(i))
    return np.flatnonzero(big)


def as_boxes(boxes: ArrayLike, what: str = "boxes") -> np.ndarray:
    """``boxes`` as a float64 array of shape (N, 4); an empty input gives shape (0, 4). Strings and booleans
    are refused, not read as numbers (:func:`numeric_array`)."""
    try:
        arr = numeric_array(boxes, np.float64)
    except TypeError as exc:
        raise ValidationError(f"{what} {exc}") from None
    if arr.size == 0:
        return arr.reshape(0, 4)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValidationError(f"{what} must have shape (N, 4), got {arr.shape}")
    return arr
