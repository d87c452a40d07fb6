"""COCO run-length encoded masks: decoded and validated in numpy before pycocotools' C code sees them.

pycocotools trusts an RLE completely: a compressed string that ends inside a value makes its decoder read
past the end of the buffer (heap corruption, SIGABRT or SIGSEGV), and runs that do not add up to
height × width make its IoU loop spin forever. So every RLE is checked here first.

The compressed form (``counts`` as a string, as written by ``pycocotools.mask.encode``) is documented in
pycocotools' ``maskApi.h``: each count is written as a little-endian sequence of 5-bit groups, one character
per group, ``chr(48 + group)``, with bit 0x20 set on every character but the last of a value ("more
follows") and bit 0x10 of the last character the sign of the value. From the fourth value on (index ≥ 3),
the value stored is the difference to the count two places back; the first three are stored as they are.

A valid RLE here has:

* characters in ``'0'..'o'`` (48..111, the only ones the encoder writes), and its last value complete;
* values that pycocotools' decoder reads back exactly: it shifts 5-bit groups in a C ``int``, so a value of
  seven characters is decoded correctly only below 2**31 (its seventh group 0 or 1), and one of eight or
  more characters never;
* at least one run, no negative run, and runs adding up to ``height * width`` of its ``size``.

An uncompressed RLE (``counts`` a list of integers) must have at least one count, all ≥ 0, adding up to
``height * width``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError

__all__ = ["check_rles", "decode_counts"]

_FIRST, _LAST = 48, 111  # '0' .. 'o': 48 + a 6-bit group
_MORE, _SIGN, _BITS = 0x20, 0x10, 0x1F
#: Characters per value pycocotools' decoder reads correctly (the seventh only with a group of 0 or 1).
_MAX_CHARS = 7


def _as_bytes(counts: str | bytes) -> bytes | None:
    if isinstance(counts, bytes):
        return counts
    try:
        return counts.encode("ascii")
    except UnicodeEncodeError:
        return None


def decode_counts(strings: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]:
    """Decode many compressed RLE ``counts`` strings at once, in numpy.

    Returns ``(runs, owner, n_runs, errors)``: the runs of all strings concatenated (int64, exact), the string
    each run belongs to, the number of runs per string, and per string None or the reason it is malformed
    (a malformed string's runs are not meaningful). Run ``m`` of a string is ``x_m`` for ``m < 3`` and
    ``x_m + run_{m-2}`` after, ``x_m`` being the signed value of its characters (module docstring).
    """
    n = len(strings)
    errors: list[str | None] = [None] * n
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(strings), dtype=np.uint8).astype(np.int64)
    char_owner = np.repeat(np.arange(n), lengths)

    def fail(mask: np.ndarray, reason: str) -> None:
        for s in np.unique(char_owner[mask]).tolist():
            if errors[s] is None:
                errors[s] = reason

    for s in np.flatnonzero(lengths == 0).tolist():
        errors[s] = "RLE counts string is empty (no run at all)"
    fail((buf < _FIRST) | (buf > _LAST), "RLE counts string holds a character outside '0'..'o'")
    c = buf - _FIRST
    more = (c & _MORE) != 0
    ends_str = np.cumsum(lengths) - 1
    nonempty = lengths > 0
    cut = np.zeros(n, dtype=bool)
    cut[nonempty] = more[ends_str[nonempty]]
    for s in np.flatnonzero(cut).tolist():
        if errors[s] is None:
            errors[s] = "RLE counts string ends inside a value (truncated or corrupt)"
    # every value ends at a character without "more"; strings that end inside a value are already refused,
    # and the end of every string is forced to end a value so that no value straddles two strings
    is_end = ~more
    is_end[ends_str[nonempty]] = True
    ends = np.flatnonzero(is_end)
    starts = np.r_[0, ends[:-1] + 1] if ends.size else np.zeros(0, dtype=np.int64)
    nchar = ends - starts + 1
    k = np.arange(buf.shape[0]) - np.repeat(starts, nchar)  # group index inside its value
    too_long = np.repeat(nchar > _MAX_CHARS, nchar) | ((k == _MAX_CHARS - 1) & ((c & _BITS) > 1))
    fail(too_long, "RLE counts string holds a value too large for pycocotools to decode (2**31 or more)")
    k = np.minimum(k, _MAX_CHARS - 1)  # (refused above; keeps the shifts below in range)
    x = np.add.reduceat((c & _BITS) << (5 * k), starts) if ends.size else np.zeros(0, dtype=np.int64)
    neg = (c[ends] & _SIGN) != 0
    x = np.where(neg, x - (np.int64(1) << (5 * np.minimum(nchar, _MAX_CHARS))), x)
    owner = char_owner[ends]
    n_runs = np.bincount(owner, minlength=n).astype(np.int64)
    first = np.r_[0, np.cumsum(n_runs)[:-1]]
    m = np.arange(owner.shape[0]) - first[owner]
    # runs m >= 3 are x_m plus the run two back: running sums along two chains per string
    # (even m from 2 on; odd m from 1 on), so a segmented cumulative sum over (string, chain, m)
    chain = np.where(m == 0, 0, np.where(m % 2 == 1, 1, 2))
    order = np.lexsort((m, chain, owner))
    xs = x[order]
    key = owner[order] * 3 + chain[order]
    csum = np.cumsum(xs)
    seg_start = np.r_[True, key[1:] != key[:-1]] if key.size else np.zeros(0, dtype=bool)
    base = (csum - xs)[seg_start]
    runs_sorted = csum - np.repeat(base, np.diff(np.r_[np.flatnonzero(seg_start), key.shape[0]]))
    runs = np.empty_like(runs_sorted)
    runs[order] = runs_sorted
    return runs, owner, n_runs, errors


def _size_pixels(segm: dict) -> int:
    h, w = segm["size"]
    return int(h) * int(w)


def check_rles(segms: Sequence[Any], file: str, records: Sequence[str | int]) -> None:
    """Validate the RLE dicts among ``segms`` (also those inside a list of parts), raising a
    :class:`~deteval.errors.DetevalError` that names ``records[i]`` for the first bad one.

    The structure (``counts`` present, ``size`` two whole numbers) must already have been checked; this
    decodes compressed strings and checks the runs (module docstring).
    """
    strings: list[bytes] = []
    s_owner: list[int] = []
    s_pixels: list[int] = []
    first_bad: tuple[int, type, str] | None = None

    def bad(i: int, cls: type, reason: str) -> None:
        nonlocal first_bad
        if first_bad is None or i < first_bad[0]:
            first_bad = (i, cls, reason)

    for i, s in enumerate(segms):
        parts = (
            [s]
            if isinstance(s, dict)
            else [p for p in s if isinstance(p, dict)]
            if isinstance(s, list)
            else []
        )
        for p in parts:
            counts = p["counts"]
            if isinstance(counts, list):
                if not counts:
                    bad(i, InputFormatError, "RLE counts list is empty (no run at all)")
                elif sum(counts) != _size_pixels(p):
                    bad(
                        i,
                        ValidationError,
                        f"RLE runs add up to {sum(counts)} pixels, not height * width = {_size_pixels(p)}",
                    )
                continue
            raw = _as_bytes(counts)
            if raw is None:
                bad(i, InputFormatError, "RLE counts string holds a character outside '0'..'o'")
                continue
            strings.append(raw)
            s_owner.append(i)
            s_pixels.append(_size_pixels(p))
    if strings:
        runs, _, n_runs, errors = decode_counts(strings)
        for j, reason in enumerate(errors):
            if reason is not None:
                bad(s_owner[j], InputFormatError, reason)
        has = n_runs > 0  # (a string without runs is already refused)
        starts = (np.cumsum(n_runs) - n_runs)[has]
        negative = np.zeros(len(strings), dtype=bool)
        total = np.zeros(len(strings), dtype=np.int64)
        if starts.size:  # runs are grouped by string, in order
            negative[has] = np.logical_or.reduceat(runs < 0, starts)
            total[has] = np.add.reduceat(runs, starts)
        pixels = np.array(s_pixels, dtype=np.int64)
        valid = np.array([e is None for e in errors]) & has
        for j in np.flatnonzero(valid & negative).tolist():
            bad(s_owner[j], ValidationError, "RLE counts string decodes to a negative run")
        for j in np.flatnonzero(valid & ~negative & (total != pixels)).tolist():
            bad(
                s_owner[j],
                ValidationError,
                f"RLE runs add up to {int(total[j])} pixels, not height * width = {int(pixels[j])}",
            )
    if first_bad is not None:
        i, cls, reason = first_bad
        raise cls(reason, file=file, record=records[i])
