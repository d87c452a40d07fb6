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
    ``x_m + run_{m-2}`` after, ``x_m`` being the signed value of its characters (module docstring): so the
    odd runs are running sums of the odd values, and the even runs from ``m = 2`` on of the even values.
    Work is per character on uint8 arrays and per value on int64 ones (no sort).
    """
    n = len(strings)
    errors: list[str | None] = [None] * n
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=n)
    str_end = np.cumsum(lengths)  # exclusive end of each string in the joined buffer
    buf = np.frombuffer(b"".join(strings), dtype=np.uint8)

    def fail(positions: np.ndarray, reason: str) -> None:
        for i in np.unique(np.searchsorted(str_end, positions, side="right")).tolist():
            if errors[i] is None:
                errors[i] = reason

    for i in np.flatnonzero(lengths == 0).tolist():
        errors[i] = "RLE counts string is empty (no run at all)"
    fail(
        np.flatnonzero((buf < _FIRST) | (buf > _LAST)), "RLE counts string holds a character outside '0'..'o'"
    )
    c = buf - np.uint8(_FIRST)  # (wraps for the characters just refused; their strings are already bad)
    more = (c & _MORE) != 0
    last = str_end[lengths > 0] - 1
    fail(last[more[last]], "RLE counts string ends inside a value (truncated or corrupt)")
    is_end = ~more
    is_end[last] = True  # so that no value straddles two strings (those strings are refused above)
    ends = np.flatnonzero(is_end)
    nchar = np.diff(ends, prepend=-1)
    top = c[ends] & _BITS  # the last group of each value
    fail(
        ends[(nchar > _MAX_CHARS) | ((nchar == _MAX_CHARS) & (top > 1))],
        "RLE counts string holds a value too large for pycocotools to decode (2**31 or more)",
    )
    # Horner from the last group down, on the ever fewer values that have one more group (most have one)
    x = top.astype(np.int64)
    sub = np.flatnonzero(nchar > 1)
    for j in range(1, _MAX_CHARS):
        if not sub.size:
            break
        x[sub] = (x[sub] << 5) | (c[ends[sub] - j] & _BITS)
        sub = sub[nchar[sub] > j + 1]
    neg = np.flatnonzero(top & _SIGN)
    x[neg] -= np.int64(1) << (5 * np.minimum(nchar[neg], _MAX_CHARS))
    n_runs = np.zeros(n, dtype=np.int64)
    nonempty = np.flatnonzero(lengths > 0)
    if nonempty.size:
        n_runs[nonempty] = np.add.reduceat(is_end, (str_end - lengths)[nonempty])
    owner = np.repeat(np.arange(n), n_runs)
    first = np.cumsum(n_runs) - n_runs
    m = np.arange(owner.shape[0]) - np.repeat(first, n_runs)
    runs = x.copy()
    if owner.size:
        at = np.minimum(first, owner.shape[0] - 1)  # (strings without runs: never looked up)
        for chain in ((m & 1) == 1, ((m & 1) == 0) & (m >= 2)):
            w = np.where(chain, x, 0)
            total = np.cumsum(w)
            before = total[at] - w[at]  # the running sum just before each string's first value
            np.subtract(total, np.repeat(before, n_runs), out=runs, where=chain)
    return runs, owner, n_runs, errors


def _size_pixels(segm: dict) -> int:
    h, w = segm["size"]
    return int(h) * int(w)


#: Characters decoded at once by :func:`check_rles`.
BATCH_CHARS = 1 << 18


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
    # batches of about BATCH_CHARS characters: the int64 arrays per value stay small (and in cache)
    ends = np.cumsum(np.fromiter(map(len, strings), dtype=np.int64, count=len(strings)))
    lo = 0
    while lo < len(strings):
        base = int(ends[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(ends, base + BATCH_CHARS, side="right")), lo + 1)
        runs, _, n_runs, errors = decode_counts(strings[lo:hi])
        for j, reason in enumerate(errors):
            if reason is not None:
                bad(s_owner[lo + j], InputFormatError, reason)
        has = n_runs > 0  # (a string without runs is already refused)
        starts = (np.cumsum(n_runs) - n_runs)[has]
        negative = np.zeros(hi - lo, dtype=bool)
        total = np.zeros(hi - lo, dtype=np.int64)
        if starts.size:  # runs are grouped by string, in order
            negative[has] = np.logical_or.reduceat(runs < 0, starts)
            total[has] = np.add.reduceat(runs, starts)
        pixels = np.array(s_pixels[lo:hi], dtype=np.int64)
        valid = np.array([e is None for e in errors]) & has
        for j in np.flatnonzero(valid & negative).tolist():
            bad(s_owner[lo + j], ValidationError, "RLE counts string decodes to a negative run")
        for j in np.flatnonzero(valid & ~negative & (total != pixels)).tolist():
            bad(
                s_owner[lo + j],
                ValidationError,
                f"RLE runs add up to {int(total[j])} pixels, not height * width = {int(pixels[j])}",
            )
        lo = hi
    if first_bad is not None:
        i, cls, reason = first_bad
        raise cls(reason, file=file, record=records[i])
