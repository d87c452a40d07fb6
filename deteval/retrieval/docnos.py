"""Docno columns with a few long docnos kept apart: equality, hashing and exact sort codes.

A loaded docno column is a fixed-width ``S`` array whose width follows the typical docno
(:func:`deteval.io.trec.column_width`); the rare docnos longer than that are cut in the array and kept whole
in a ``{row: bytes}`` dict. These helpers give the answers the whole strings would give, so that one 20 KB
docno costs 20 KB, not 20 KB per row. Without long docnos each is the plain numpy operation.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

import numpy as np


def full(docno: np.ndarray, long: dict[int, bytes], i: int) -> bytes:
    """The whole docno of row ``i``."""
    b = long.get(int(i))
    return bytes(docno[i]) if b is None else b


def _is_long(long: dict[int, bytes], rows: np.ndarray) -> np.ndarray:
    if not long:
        return np.zeros(rows.shape[0], dtype=bool)
    return np.isin(rows, np.fromiter(long, dtype=np.int64, count=len(long)))


def equal(
    a: np.ndarray,
    a_long: dict[int, bytes],
    ia: np.ndarray,
    b: np.ndarray,
    b_long: dict[int, bytes],
    ib: np.ndarray,
) -> np.ndarray:
    """``full(a, ia[k]) == full(b, ib[k])`` for every k, vectorised over the short docnos."""
    eq = a[ia] == b[ib]
    if a_long or b_long:
        for k in np.flatnonzero(_is_long(a_long, ia) | _is_long(b_long, ib)).tolist():
            eq[k] = full(a, a_long, ia[k]) == full(b, b_long, ib[k])
    return eq


def codes(docno: np.ndarray, long: dict[int, bytes], rows: np.ndarray) -> np.ndarray:
    """Dense integer codes of the docnos of ``rows`` in bytewise (``strcmp``) order: equal docnos get equal
    codes, and code order is string order. The short docnos are sorted by numpy; each distinct long one
    is placed among them by binary search."""
    is_long = _is_long(long, rows)
    if not is_long.any():
        return np.unique(docno[rows], return_inverse=True)[1].astype(np.int64).reshape(-1)
    short_u, short_inv = np.unique(docno[rows[~is_long]], return_inverse=True)
    long_u = sorted({long[int(i)] for i in rows[is_long].tolist()})
    m = len(long_u)
    pos = np.empty(m, dtype=np.int64)
    same = np.zeros(m, dtype=bool)
    for j, x in enumerate(long_u):
        lo = bisect.bisect_left(short_u, x)  # the first short docno >= x (np.bytes_ compares as bytes)
        pos[j] = lo
        same[j] = lo < short_u.shape[0] and bytes(short_u[lo]) == x
    # merge keys: short docno k -> (k, m); long docno j -> (pos, m) if equal to that short one, else (pos, j)
    # (it sorts before short docno `pos` and after the long docnos before it)
    span = m + 1
    key_short = np.arange(short_u.shape[0], dtype=np.int64) * span + m
    key_long = pos * span + np.where(same, m, np.arange(m, dtype=np.int64))
    index = {x: j for j, x in enumerate(long_u)}
    key = np.empty(rows.shape[0], dtype=np.int64)
    key[~is_long] = key_short[short_inv.reshape(-1)]
    key[is_long] = key_long[[index[long[int(i)]] for i in rows[is_long].tolist()]]
    return np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)


def hash_long(
    keys: np.ndarray,
    topic: np.ndarray,
    long: dict[int, bytes],
    pair_hash: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """``keys`` (``pair_hash`` of the cut column) with the rows of long docnos rehashed from the whole
    docno; rows are grouped by length up to a power of two, so the temporary arrays stay within twice the
    long docnos' size."""
    if not long:
        return keys
    rows = np.fromiter(long, dtype=np.int64, count=len(long))
    lengths = np.array([len(long[int(i)]) for i in rows.tolist()], dtype=np.int64)
    bucket = np.ceil(np.log2(lengths)).astype(np.int64)
    for b in np.unique(bucket).tolist():
        sel = rows[bucket == b]
        keys[sel] = pair_hash(topic[sel], np.array([long[int(i)] for i in sel.tolist()]))
    return keys
