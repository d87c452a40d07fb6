"""COCO keypoints as N×3K float64 matrices: checked record by record or built at once from a text without
booleans, and loadRes' boxes and areas from the keypoints' extent.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain

import numpy as np

from deteval.errors import InputFormatError, ValidationError, first_true
from deteval.io.coco.fields import (
    FLOAT_MAX,
    MAX_COORD,
    check_magnitude,
    first_bad,
    is_list,
    is_real,
    record_at,
)


def plain_keypoints(values: list, numbers: bool = False) -> np.ndarray | None:
    """``values`` (lists of numbers from a JSON text without ``true``/``false``) as an N×3K float64 matrix in
    one ``np.array`` call, if it gives one that :func:`keypoint_matrix` would accept as it is (finite, within
    ±2**53, 3K > 0 numbers per record, the same K): strings, ``null``, nesting and rows of unequal length give
    another dtype or shape, or an error. None otherwise (the record-by-record checks then name the fault). Only
    booleans would pass unseen (as 1/0), hence the condition on the text. A value of magnitude 2**53 in the
    matrix is left to those checks too: the integer 2**53 + 1 becomes 2**53 in float64, and only the value as
    written tells them apart.

    ``numbers``: the text is also known to hold no string but the records' keys
    (:func:`~deteval.io.coco.json_text.only_key_strings`), so that the values are numbers, ``null``, lists or ``{}``:
    then one ``np.fromiter`` over them all builds the matrix, faster than ``np.array`` (no pass to find the dtype and
    shape), once every row has the same length. It reads ``null`` as NaN (refused below, as the NaN would be) and
    refuses a list or ``{}`` among the numbers and an integer beyond float64; the numbers it keeps are the floats
    themselves or integers below 2**53, exact in float64, which ``np.array`` gives too."""
    if numbers:
        mat = _number_rows(values)
        if mat is None:
            return None
    else:
        try:
            mat = np.array(values)
        except (ValueError, TypeError, OverflowError):
            return None
        if mat.ndim != 2 or mat.dtype.kind not in "iuf" or mat.shape[1] == 0 or mat.shape[1] % 3:
            return None
        mat = mat.astype(np.float64, copy=False)
    return mat if np.isfinite(mat).all() and not (np.abs(mat) >= MAX_COORD).any() else None


def _number_rows(values: list) -> np.ndarray | None:
    """:func:`plain_keypoints`' matrix from rows proven free of strings and booleans; None where any row is
    not a list of 3K > 0 items, the same K, or an item is not a number (``null``: NaN, left to the caller)."""
    try:
        lens = set(map(len, values))
    except TypeError:  # (a number or null instead of a list)
        return None
    if len(lens) != 1:
        return None
    (width,) = lens
    if width == 0 or width % 3:
        return None
    try:
        flat = np.fromiter(chain.from_iterable(values), dtype=np.float64, count=len(values) * width)
    except (TypeError, ValueError, OverflowError):
        return None
    return flat.reshape(len(values), width)


def keypoint_matrix(
    values: list,
    file: str,
    where: str | None,
    what: str,
    *,
    width: int | None = None,
    gt: bool = False,
    plain: bool = False,
    numbers: bool = False,
) -> np.ndarray:
    """An N×3K float64 matrix; ``width``: the 3K every record must have (the ground truth's), else the first
    record's. ``gt``: visibility flags must be 0, 1 or 2. ``plain``: the values come from a text without
    ``true``/``false`` (:func:`plain_keypoints` then builds the matrix at once); ``numbers``: and without
    strings but the records' keys (:func:`~deteval.io.coco.json_text.only_key_strings`)."""
    n = len(values)
    mat = plain_keypoints(values, numbers) if plain and n else None
    if mat is not None and (width is None or mat.shape[1] == width):
        if gt:
            _check_visibility(mat, file, where, what)
        return mat
    if set(map(type, values)) != {list} and not all(map(is_list, values)):  # (the first: one C-level pass)
        i = first_bad(values, is_list)
        raise InputFormatError(
            f"{what} must be a list of numbers, got {str(values[i])[:40]}",
            file=file,
            record=record_at(where, i),
        )
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    if n == 0:
        return np.zeros((0, width or 0), dtype=np.float64)
    if (i := first_true((lens == 0) | (lens % 3 != 0))) >= 0:
        raise InputFormatError(
            f"{what} must have 3K numbers (x, y, v per keypoint), got {int(lens[i])}",
            file=file,
            record=record_at(where, i),
        )
    k3 = max(int(lens.max()), width or 0)
    try:
        # (fromiter alone would read True as 1.0 and "12.5" as 12.5; the second test only for unusual types)
        if not set(map(type, chain.from_iterable(values))) <= {int, float} and not all(
            map(is_real, chain.from_iterable(values))
        ):
            raise TypeError
        flat = np.fromiter(chain.from_iterable(values), dtype=np.float64, count=int(lens.sum()))
    except (TypeError, ValueError, OverflowError):
        i = first_bad(values, lambda b: all(map(is_real, b)) and all(abs(v) <= FLOAT_MAX for v in b))
        raise InputFormatError(
            f"{what} must hold numbers, got {str(values[i])[:40]}", file=file, record=record_at(where, i)
        ) from None
    padding = None if (lens == k3).all() else np.arange(k3) >= lens[:, None]
    if padding is None:
        mat = flat.reshape(n, k3)
    else:  # (rows of several lengths: 0 past each row's numbers for the checks, NaN there at the end)
        mat = np.zeros(padding.shape, dtype=np.float64)
        mat[~padding] = flat
    if (i := first_true(~np.isfinite(mat).all(axis=1))) >= 0:
        raise ValidationError(f"{what} are not finite", file=file, record=record_at(where, i))
    check_magnitude(mat, what, values, file, where)
    if gt:
        _check_visibility(mat, file, where, what)
    if padding is not None:
        mat[padding] = np.nan
    return mat


def keypoint_counts(keypoints: np.ndarray) -> np.ndarray:
    """Each row's keypoint count K: its numbers / 3 (a matrix holding rows of several lengths pads the shorter
    ones with NaN past their numbers, which are finite)."""
    n, width = keypoints.shape
    if n == 0 or width == 0 or not np.isnan(keypoints[:, -1]).any():
        return np.full(n, width // 3, dtype=np.int64)
    return np.count_nonzero(~np.isnan(keypoints[:, 0::3]), axis=1)


def several_counts(*mats: np.ndarray) -> bool:
    """Whether keypoint matrices hold rows of several keypoint counts: the non-empty ones differ in width, or
    one has rows padded with NaN (see :func:`keypoint_counts`)."""
    full = [m for m in mats if m.shape[0]]
    if len({m.shape[1] for m in full}) > 1:
        return True
    return any(m.shape[1] and np.isnan(m[:, -1]).any() for m in full)


def category_keypoint_counts(
    cat_ids: np.ndarray, category_records: list | None, cat: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each category's keypoint count K_c (in the order of ``cat_ids``) and whether its record fixes it: the
    length of the record's ``keypoints`` name list where it has one, else that of the first row of ``cat``
    (category indices) in the category (``counts``: each row's K); 0 for a category with neither."""
    n_cat = len(cat_ids)
    kc = np.zeros(n_cat, dtype=np.int64)
    named = np.zeros(n_cat, dtype=bool)
    index = {cid: c for c, cid in enumerate(cat_ids.tolist())}
    for rec in category_records or ():
        names = rec.get("keypoints") if isinstance(rec, dict) else None
        c = index.get(rec.get("id")) if isinstance(rec, dict) else None
        if c is not None and isinstance(names, list) and names:
            kc[c], named[c] = len(names), True
    first = np.zeros(n_cat, dtype=np.int64)
    first[cat[::-1]] = counts[::-1]  # (the last write of an index wins: the category's first row)
    return np.where(named, kc, first), named


def check_keypoint_counts(
    kc: np.ndarray,
    named: np.ndarray,
    cat_ids: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray],
    file: str,
    record_of: Callable[[int], str | int],
) -> None:
    """Refuse the first row (``rows``: category indices, keypoint counts) whose count is not its category's
    K_c (categories of K_c = 0 are not checked), naming ``file``, the record (``record_of(row)``), the
    category, the count expected and the one found."""
    cat, counts = rows
    want = kc[cat]
    if (i := first_true((counts != want) & (want > 0))) >= 0:
        c = int(cat[i])
        source = "its record's keypoint names" if named[c] else "its first annotation"
        raise ValidationError(
            f"keypoints of category {cat_ids[c].item()!r} must have 3·K = {3 * int(kc[c])} numbers "
            f"(K = {int(kc[c])}, from {source}), got {3 * int(counts[i])}",
            file=file,
            record=record_of(i),
        )


def stack_keypoints(mats: list[np.ndarray]) -> np.ndarray:
    """Keypoint matrices of several parts one after the other; parts of different widths are padded to the
    widest with NaN (see :func:`keypoint_counts`). Empty parts (their width is no record's) are left out."""
    full = [m for m in mats if m.shape[0]] or mats[:1]
    width = max(m.shape[1] for m in full)
    if all(m.shape[1] == width for m in full):
        return np.concatenate(full)
    return np.concatenate(
        [np.pad(m, ((0, 0), (0, width - m.shape[1])), constant_values=np.nan) for m in full]
    )


def _check_visibility(mat: np.ndarray, file: str, where: str | None, what: str) -> None:
    v = mat[:, 2::3]
    if (i := first_true(((v != 0) & (v != 1) & (v != 2)).any(axis=1))) >= 0:
        raise ValidationError(
            f"{what} visibility flags must be 0, 1 or 2, got {sorted(set(v[i].tolist()))}",
            file=file,
            record=record_at(where, i),
        )


def keypoint_extent(keypoints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """loadRes' keypoints branch, for every record: ``bbox`` = the keypoints' extent ``[x0, y0, x1 − x0,
    y1 − y0]``, ``area = (x1 − x0)·(y1 − y0)``."""
    return boxes_from_bounds(keypoint_bounds(keypoints))


def keypoint_bounds(keypoints: np.ndarray) -> np.ndarray:
    """(4, N): every record's smallest x and y and largest x and y over all its keypoints (:func:`row_extents`
    of the x and of the y columns)."""
    (x0, x1), (y0, y1) = row_extents(keypoints[:, 0::3]), row_extents(keypoints[:, 1::3])
    return np.stack([x0, y0, x1, y1])


def row_extents(a: np.ndarray, where: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's minimum and maximum of ``a`` (rows × K), over the columns where ``where`` (K × rows, the
    transposed mask) holds: +inf and −inf for a row without any. One elementwise pass per column of a
    transposed copy: ``a.min(axis=1)`` loops over each short row in turn and costs several times as much.
    The copies are made per block of rows, small enough to stay in cache and to reuse the same memory: one
    transposed copy of all the rows costs as much again in fresh pages."""
    n = a.shape[0]
    lo, hi = np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64)
    for s in range(0, n, _EXTENT_ROWS):
        e = min(n, s + _EXTENT_ROWS)
        t = a[s:e].T.copy()
        if where is None and np.isnan(t[-1]).any():  # (rows padded with NaN: their own numbers only)
            np.fmin.reduce(t, axis=0, out=lo[s:e])
            np.fmax.reduce(t, axis=0, out=hi[s:e])
        elif where is None:
            np.minimum.reduce(t, axis=0, out=lo[s:e])
            np.maximum.reduce(t, axis=0, out=hi[s:e])
        else:
            w = where[:, s:e]
            np.minimum.reduce(np.where(w, t, np.inf), axis=0, out=lo[s:e])
            np.maximum.reduce(np.where(w, t, -np.inf), axis=0, out=hi[s:e])
    return lo, hi


def boxes_from_bounds(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``bbox`` and ``area`` (:func:`keypoint_extent`) from :func:`keypoint_bounds`."""
    x0, y0, x1, y1 = bounds
    return np.stack([x0, y0, x1 - x0, y1 - y0], axis=1), (x1 - x0) * (y1 - y0)


#: Rows per block of :func:`row_extents` (17 keypoints: 136 KB per transposed copy)
_EXTENT_ROWS = 1024
