"""``np.lexsort`` computed by one unstable sort: the same permutation, several times faster.

numpy's default (quick) sort of an int64 or float64 array is a vectorised introsort, many times faster than
the merge sorts behind ``np.lexsort`` and ``kind="stable"``. Its order among equal values is unspecified,
so it is used only on keys that are all different: every key is replaced by its dense rank (equal values,
``-0.0`` and ``0.0`` included, get the same rank, as ``<`` sees them), and the ranks and the position are
packed into one int64 in mixed radix, primary key first, position last. Sorting that key gives exactly
``np.lexsort(keys)``: ascending by the last key, ties broken by the keys before it, then by input order.
Where the packed key would not fit in 63 bits, or a key holds NaN (whose order among NaNs is only the input
order), :func:`lex_order` calls ``np.lexsort`` itself.

:func:`sorted_unique`: ``np.unique`` of an array already in order, without its sort (nor its import of
``numpy.ma``, which numpy 2's ``unique`` makes on first use: 5-10 ms in a fresh process or forked child);
:func:`distinct` and :func:`distinct_counts`: ``np.unique`` (with ``return_counts``) of any 1-d array, by the
same sort, without that import. :func:`stable_order`: ``np.argsort(key, kind="stable")`` of an integer key,
by numpy's radix sort where the key's range fits 16 bits (one pass per byte instead of a merge sort).
:func:`member_of`: ``np.isin`` of integer keys of a known small range, by a lookup table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "dense_ranks",
    "distinct",
    "distinct_counts",
    "lex_order",
    "member_of",
    "sorted_unique",
    "stable_order",
]

#: Integer keys spanning at most this many values (times 4 the length) are used as they are, without ranking.
_DIRECT_SPAN = 1 << 20


def _dense(key: np.ndarray) -> tuple[np.ndarray, int] | None:
    """(rank of each value among the distinct values, number of distinct values) or, for an integer key of a
    small range, (value − min, range); None for NaN."""
    n = key.shape[0]
    if key.dtype.kind in "iub":
        k = key.astype(np.int64, copy=False)
        lo, hi = int(k.min()), int(k.max())
        if hi - lo < max(_DIRECT_SPAN, 4 * n):
            return k - lo, hi - lo + 1
    elif key.dtype.kind == "f":
        if np.isnan(key).any():
            return None
    else:
        return None
    o = np.argsort(key)
    ks = key[o]
    new = np.empty(n, dtype=np.int64)
    new[0] = 0
    np.not_equal(ks[1:], ks[:-1], out=new[1:])
    np.cumsum(new, out=new)
    rank = np.empty(n, dtype=np.int64)
    rank[o] = new
    return rank, int(new[-1]) + 1


def dense_ranks(key: np.ndarray) -> np.ndarray | None:
    """An int64 code per value of ``key`` in the same order, equal values (``-0.0`` and ``0.0`` included)
    sharing one: the rank among the distinct values (value − min for an integer key of a small range), or
    None for a key holding NaN. :func:`lex_order` takes it as it is (no sort of its own) in place of ``key``,
    with the same order: for callers that sort by one key more than once."""
    if key.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    d = _dense(key)
    return None if d is None else d[0]


def lex_order(keys: Sequence[np.ndarray], *, unique: bool = False) -> np.ndarray:
    """``np.lexsort(keys)`` (last key primary, ties in input order). ``unique``: the keys together are expected
    to differ for every two items, so the position is not packed in (more room for the keys); checked on the
    sorted keys (``np.lexsort`` is called if two are equal after all)."""
    n = int(keys[0].shape[0]) if keys else 0
    if n < 2 or any(k.ndim != 1 or k.shape[0] != n for k in keys):
        return np.lexsort(keys)
    packed: np.ndarray | None = None
    room = 1
    for key in reversed(keys):  # primary first
        d = _dense(np.asarray(key))
        if d is None:
            return np.lexsort(keys)
        rank, span = d
        room *= span
        if room >= 2**63:
            return np.lexsort(keys)
        packed = rank if packed is None else packed * span + rank
    if not unique:
        room *= n
        if room >= 2**63:
            return np.lexsort(keys)
        assert packed is not None
        packed = packed * n + np.arange(n, dtype=np.int64)
    assert packed is not None
    order = np.argsort(packed)
    if unique:
        ps = packed[order]
        if (ps[1:] == ps[:-1]).any():
            return np.lexsort(keys)
    return order


def stable_order(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key, kind="stable")`` of a 1-d integer array (ascending, ties in input order): for a key
    spanning fewer than 2**16 values, numpy's stable sort of ``key - min`` as uint16, a radix sort (linear
    time); otherwise the stable sort of ``key`` itself."""
    if key.shape[0] > 1 and key.dtype.kind in "iu":
        lo, hi = int(key.min()), int(key.max())
        if hi - lo < 1 << 16:
            return np.argsort((key - lo).astype(np.uint16), kind="stable")
    return np.argsort(key, kind="stable")


def member_of(values: np.ndarray, members: np.ndarray, span: int) -> np.ndarray:
    """``np.isin(values, members)`` for integer arrays whose values all lie in ``[0, span)`` (e.g. (image,
    category) keys ``img * K + cat``): one table of ``span`` booleans, set at ``members`` and read at
    ``values``, where it is no larger than 8 entries per value (numpy's own table path checks and converts
    more); ``np.isin`` otherwise."""
    if span <= 8 * (values.shape[0] + members.shape[0]):
        table = np.zeros(span, dtype=bool)
        table[members] = True
        return table[values]
    return np.isin(values, members)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values of a non-decreasing 1-d array, ascending: ``np.unique(values)`` for such input (each
    run of equal values gives its first element)."""
    keep = np.empty(values.shape[0], dtype=bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-d array (sorted by numpy's default sort, as ``np.unique`` sorts; each run of
    equal values gives its first element), without ``np.unique``'s import of ``numpy.ma``."""
    return sorted_unique(np.sort(values))


def distinct_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_counts=True)`` of a 1-d array (see :func:`distinct`)."""
    ordered = np.sort(values)
    keep = np.empty(ordered.shape[0], dtype=bool)
    keep[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    starts = np.flatnonzero(keep)
    return ordered[starts], np.diff(np.append(starts, ordered.shape[0])).astype(np.intp)
