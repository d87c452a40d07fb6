"""Array-likes given in memory (lists, numpy arrays, tensors) → numpy numbers, without coercion.

``np.asarray(value, dtype=float)`` reads the string ``"12.5"`` as 12.5, ``True`` as 1.0 and keeps only the
real part of a complex number: an input that is not numbers would be scored as if it were. Here the array's
own kind decides: integers and floats are numbers; booleans only where a flag or a mask is expected; strings,
objects (``None``, ragged rows, integers beyond 64 bits), complex numbers and datetimes never are. A list that
mixes ``True`` with numbers becomes a float array in numpy, so such lists are also looked at item by item
(only when the array holds a 0 or a 1, the values a boolean becomes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["numeric_array"]

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
