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

from collections import deque
from collections.abc import Callable, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError

__all__ = ["check_rle_text", "check_rles", "decode_counts", "text_slices"]

_FIRST, _LAST = 48, 111  # '0' .. 'o': 48 + a 6-bit group
_MORE, _SIGN, _BITS = 0x20, 0x10, 0x1F
#: Characters per value pycocotools' decoder reads correctly (the seventh only with a group of 0 or 1).
_MAX_CHARS = 7
#: Values per string up to which the sum of its runs cannot leave int64. Every stored value is below 2**31 in
#: magnitude and run m sums at most m // 2 + 1 of them, so c values add up to less than (c**2 / 4 + c) * 2**31,
#: below 2**62 for c up to 2**16. The int64 arithmetic is exact modulo 2**64, hence exact for such a string;
#: a longer one has its total estimated in float64 too, where a sum beyond int64 cannot wrap round to
#: height × width.
_EXACT_VALUES = 1 << 16
_HUGE_TOTAL = 2.0**62


def decode_counts(strings: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]:
    """Decode many compressed RLE ``counts`` strings at once, in numpy.

    Returns ``(runs, owner, n_runs, errors)``: the runs of all strings concatenated (int64, exact), the string
    each run belongs to, the number of runs per string, and per string None or the reason it is malformed
    (a malformed string's runs are not meaningful). See :func:`_decode`.
    """
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    d = _decode(np.frombuffer(b"".join(strings), dtype=np.uint8), lengths)
    return d.runs, np.repeat(np.arange(len(strings)), d.n_runs), d.n_runs, d.errors


class _Decoded:
    """The values of a batch of strings (:func:`_decode`), their runs when asked for, and what validation and
    ``area`` read from them."""

    def __init__(self, runs: np.ndarray, n_runs: np.ndarray, errors: list[str | None]) -> None:
        self.runs, self.n_runs, self.errors = runs, n_runs, errors
        n = n_runs.shape[0]
        self.total = np.zeros(n, dtype=np.int64)
        self.area = np.zeros(n, dtype=np.int64)  # pixels of the odd (foreground) runs
        self.negative = np.zeros(n, dtype=bool)
        self.huge = np.zeros(
            n, dtype=bool
        )  # runs adding up to 2**62 or more (beyond what int64 holds exactly)


def _decode(buf: np.ndarray, lengths: np.ndarray, runs: bool = True) -> _Decoded:
    """Decode the strings laid end to end in ``buf`` (uint8), ``lengths[i]`` characters each: per string its
    number of runs, fault, sum of runs, sum of odd runs (``area``) and whether a run is negative; ``runs``:
    also the runs themselves (else ``.runs`` holds the stored values, not the runs).

    Work is per character on uint8 arrays and per value on int64 ones (no sort, no per-string loop). A value
    of one character (most of them) is its 5 bits sign-extended; the few longer ones (an end whose previous
    character is no end) are assembled from their last group down. Run ``m`` of a string is ``x_m`` for
    ``m < 3`` and ``x_m + run_{m-2}`` after: with ``P`` the running sums of the values over every other
    position of the whole batch, run ``m ≥ 1`` is ``P`` there minus ``P`` just before the string's chain of
    that parity starts (``P[f−1]`` for odd ``m``, ``P[f]`` for even, ``f`` the string's first value), so a
    string's sums and smallest run are its segments' sums and minima of ``P`` less that base (the term of
    ``P[f]`` itself, in the even chain's segment, is 0 there).
    """
    n = lengths.shape[0]
    errors: list[str | None] = [None] * n
    str_end = np.cumsum(lengths)  # exclusive end of each string in ``buf``

    def fail(positions: np.ndarray, reason: str) -> None:
        if not positions.size:  # (valid input: no np.unique, whose numpy 2 code imports numpy.ma)
            return
        for i in np.unique(np.searchsorted(str_end, positions, side="right")).tolist():
            if errors[i] is None:
                errors[i] = reason

    for i in np.flatnonzero(lengths == 0).tolist():
        errors[i] = "RLE counts string is empty (no run at all)"
    c = buf - np.uint8(_FIRST)  # wraps below '0': one comparison finds every character outside '0'..'o'
    if c.size and c.max() > _LAST - _FIRST:  # (the maximum first: no mask, no search, on valid input)
        fail(np.flatnonzero(c > _LAST - _FIRST), "RLE counts string holds a character outside '0'..'o'")
    is_end = c < _MORE  # (a refused character may look like either: its string is already bad)
    last = str_end[lengths > 0] - 1
    fail(last[~is_end[last]], "RLE counts string ends inside a value (truncated or corrupt)")
    is_end[last] = True  # so that no value straddles two strings (those strings are refused above)
    ends = np.flatnonzero(is_end)
    top = c[ends]
    top &= _BITS  # the last group of each value
    x = ((top << 3).view(np.int8) >> 3).astype(np.int64)  # the 5-bit group, sign-extended from bit 0x10
    # the ends of values of more than one character (uint8 passes over the characters, few found)
    long_end = np.flatnonzero(is_end[1:] > is_end[:-1])
    if long_end.size:  # Horner from the (signed) last group down, on the values that have more groups
        long_end += 1
        sub = np.searchsorted(ends, long_end)  # (their places among the values)
        sx, s_end = x[sub], long_end
        for j in range(1, _MAX_CHARS):
            pos = s_end - j
            sx = (sx << 5) | (c[pos] & _BITS)
            more = ~is_end[pos - 1]
            more &= pos > 0  # (the first character of the batch starts its value)
            if (
                j + 1 == _MAX_CHARS
            ):  # seven characters are read right only below 2**31: a last group of 0 or 1
                fail(
                    s_end[more | (top[sub] > 1)],
                    "RLE counts string holds a value too large for pycocotools to decode (2**31 or more)",
                )
            done = ~more
            x[sub[done]] = sx[done]
            if not more.any():
                break
            sub, sx, s_end = sub[more], sx[more], s_end[more]
    v_end = np.searchsorted(ends, str_end - 1, side="right")  # values up to each string's end
    n_runs = np.diff(v_end, prepend=0)
    out = _Decoded(x, n_runs, errors)
    has = np.flatnonzero(n_runs > 0)
    if not has.size:
        return out
    first, count = (v_end - n_runs)[has], n_runs[has]
    p_even, p_odd = np.cumsum(x[0::2]), np.cumsum(x[1::2])  # P at the even and at the odd positions
    # each string's values at even and at odd positions of the batch: back-to-back segments of p_even, p_odd
    e0, e1 = (first + 1) // 2, (first + count + 1) // 2
    o0, o1 = first // 2, (first + count) // 2
    f_odd = (first & 1).astype(bool)
    at_f = np.empty(first.shape[0], dtype=np.int64)  # P[f]
    at_f[f_odd] = p_odd[o0[f_odd]]
    at_f[~f_odd] = p_even[e0[~f_odd]]
    before = np.zeros(first.shape[0], dtype=np.int64)  # P[f - 1], the odd chain's base (0 before the batch)
    after_odd, after_even = f_odd & (first > 0), ~f_odd & (first > 0)
    before[after_odd] = p_even[e0[after_odd] - 1]
    before[after_even] = p_odd[o0[after_even] - 1]
    sum_e, min_e = _segment_sums(p_even, e0, e1 - e0), _segment_mins(p_even, e0, e1 - e0)
    sum_o, min_o = _segment_sums(p_odd, o0, o1 - o0), _segment_mins(p_odd, o0, o1 - o0)
    # the chain of even m (with f itself, whose term is 0) and of odd m, by the parity of f
    base_e, base_o = np.where(f_odd, before, at_f), np.where(f_odd, at_f, before)
    odd_runs = np.where(f_odd, sum_e - (e1 - e0) * base_e, sum_o - (o1 - o0) * base_o)
    even_runs = np.where(f_odd, sum_o - (o1 - o0) * base_o, sum_e - (e1 - e0) * base_e)
    out.total[has] = even_runs + odd_runs + x[first]
    out.area[has] = odd_runs
    long = count > _EXACT_VALUES
    if long.any():  # (the same sums in float64, for the few strings whose int64 sums could wrap round)
        fe = _segment_sums(p_even.astype(np.float64), e0, e1 - e0) - (e1 - e0) * base_e.astype(np.float64)
        fo = _segment_sums(p_odd.astype(np.float64), o0, o1 - o0) - (o1 - o0) * base_o.astype(np.float64)
        out.huge[has[long]] = np.abs((fe + fo + x[first])[long]) >= _HUGE_TOTAL
    out.negative[has] = (x[first] < 0) | (min_e < base_e) | (min_o < base_o)
    if runs:
        out.runs = _runs(x, first, count, p_even, p_odd, base_e, base_o)
    return out


def _runs(
    x: np.ndarray,
    first: np.ndarray,
    count: np.ndarray,
    p_even: np.ndarray,
    p_odd: np.ndarray,
    base_e: np.ndarray,
    base_o: np.ndarray,
) -> np.ndarray:
    """The runs of the strings whose values (``x``) start at ``first`` (``count`` each; :func:`_decode`): ``P``
    less each string's base of that parity of position, its first run its first value."""
    runs = np.empty_like(x)
    runs[0::2] = p_even
    runs[1::2] = p_odd
    n_even = (first + count + 1) // 2 - (first + 1) // 2  # a string's values at even positions
    runs[0::2] -= np.repeat(base_e, n_even)
    runs[1::2] -= np.repeat(base_o, count - n_even)
    runs[first] = x[first]
    return runs


def _segment_sums(a: np.ndarray, start: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sums of ``a[start[i] : start[i] + n[i]]`` for consecutive, back-to-back segments (some empty)."""
    sums = np.zeros(start.shape[0], dtype=a.dtype)
    full = np.flatnonzero(n > 0)  # (reduceat would give an empty segment an element of the next)
    if full.size:
        sums[full] = np.add.reduceat(a, start[full])
    return sums


def _segment_mins(a: np.ndarray, start: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Minima of back-to-back segments of ``a`` as :func:`_segment_sums` (the largest int64 for an empty one)."""
    mins = np.full(start.shape[0], np.iinfo(np.int64).max, dtype=np.int64)
    full = np.flatnonzero(n > 0)
    if full.size:
        mins[full] = np.minimum.reduceat(a, start[full])
    return mins


def _size_pixels(segm: dict) -> int:
    h, w = segm["size"]
    return int(h) * int(w)


#: Characters decoded at once by :func:`check_rles`.
BATCH_CHARS = 1 << 18


class _FirstFault:
    """The fault of the lowest entry seen so far (errors name the first bad record of the input)."""

    def __init__(self) -> None:
        self.first: tuple[int, type, str] | None = None

    def __call__(self, i: int, cls: type, reason: str) -> None:
        if self.first is None or i < self.first[0]:
            self.first = (i, cls, reason)

    def raise_first(self, file: str, records: Sequence[str | int]) -> None:
        if self.first is not None:
            i, cls, reason = self.first
            raise cls(reason, file=file, record=records[i])


def check_rles(
    segms: Sequence[Any], file: str, records: Sequence[str | int], *, pixels: np.ndarray | None = None
) -> np.ndarray:
    """Validate the RLE dicts among ``segms`` (also those inside a list of parts), raising a
    :class:`~deteval.errors.DetevalError` that names ``records[i]`` for the first bad one.

    The structure (``counts`` present, ``size`` two whole numbers) must already have been checked; this
    decodes compressed strings and checks the runs (module docstring). Returns per entry the area of an RLE
    dict with compressed counts (its foreground pixels, the sum of its odd runs: pycocotools' ``area``), NaN
    for any other entry (a polygon, a count list, a list of parts). ``pixels``: height × width of every entry,
    when the caller has checked that each is a dict with ``size`` (spares reading the sizes again).
    """
    plain = _plain_strings(segms, pixels)
    if plain is not None:  # every entry a dict with a counts string: no loop over the records
        return check_rle_text(*plain, file, records)
    area = np.full(len(segms), np.nan)
    bad = _FirstFault()
    strings: list[bytes] = []
    s_owner: list[int] = []
    s_pixels: list[int] = []
    s_whole: list[bool] = []
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
            try:
                raw = counts if isinstance(counts, bytes) else counts.encode("ascii")
            except UnicodeEncodeError:
                bad(i, InputFormatError, "RLE counts string holds a character outside '0'..'o'")
                continue
            strings.append(raw)
            s_owner.append(i)
            s_pixels.append(_size_pixels(p))
            s_whole.append(p is s)
    _check_batches(
        np.frombuffer(b"".join(strings), dtype=np.uint8),
        np.fromiter(map(len, strings), dtype=np.int64, count=len(strings)),
        np.array(s_pixels, dtype=np.int64),
        np.array(s_owner, dtype=np.int64),
        np.array(s_whole, dtype=bool),
        area,
        bad,
    )
    bad.raise_first(file, records)
    return area


def check_rle_text(
    buf: np.ndarray, lengths: np.ndarray, pixels: np.ndarray, file: str, records: Sequence[str | int]
) -> np.ndarray:
    """:func:`check_rles` of compressed ``counts`` strings laid end to end (``buf``, uint8; entry ``i`` has
    ``lengths[i]`` characters and ``pixels[i]`` = height × width): their areas."""
    area = np.full(lengths.shape[0], np.nan)
    bad = _FirstFault()
    _check_batches(buf, lengths, pixels, None, None, area, bad)
    bad.raise_first(file, records)
    return area


def _check_batches(
    buf: np.ndarray,
    lengths: np.ndarray,
    pixels: np.ndarray,
    owner: np.ndarray | None,
    whole: np.ndarray | None,
    area: np.ndarray,
    bad: Callable[[int, type, str], None],
) -> None:
    """Decode and check the strings of ``buf`` (:func:`check_rles`), reporting each fault to ``bad`` with its
    entry (``owner`` of each string, else its position); the areas of whole entries written to ``area``."""
    # batches of about BATCH_CHARS characters: the int64 arrays per value stay small (and in cache)
    ends = np.cumsum(lengths)
    lo = 0
    while lo < lengths.shape[0]:
        base = int(ends[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(ends, base + BATCH_CHARS, side="right")), lo + 1)
        d = _decode(buf[base : int(ends[hi - 1])], lengths[lo:hi], runs=False)
        who = np.arange(lo, hi) if owner is None else owner[lo:hi]
        for j, reason in enumerate(d.errors):
            if reason is not None:
                bad(int(who[j]), InputFormatError, reason)
        valid = np.array([e is None for e in d.errors]) & (d.n_runs > 0)
        for j in np.flatnonzero(valid & d.negative).tolist():
            bad(int(who[j]), ValidationError, "RLE counts string decodes to a negative run")
        for j in np.flatnonzero(valid & ~d.negative & d.huge).tolist():
            bad(
                int(who[j]),
                ValidationError,
                f"RLE runs add up to 2**62 pixels or more, not height * width = {int(pixels[lo + j])}",
            )
        for j in np.flatnonzero(valid & ~d.negative & ~d.huge & (d.total != pixels[lo:hi])).tolist():
            bad(
                int(who[j]),
                ValidationError,
                f"RLE runs add up to {int(d.total[j])} pixels, not height * width = {int(pixels[lo + j])}",
            )
        if whole is None:
            area[lo:hi] = d.area
        else:
            sel = whole[lo:hi]
            area[who[sel]] = d.area[sel]
        lo = hi


def _plain_strings(
    segms: Sequence[Any], pixels: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The counts of ``segms`` laid end to end (uint8), their lengths and pixels per mask, when every entry
    is a dict with an ASCII ``counts`` string (a few C-level passes); else None."""
    if not segms or set(map(type, segms)) != {dict}:
        return None
    try:
        counts = list(map(itemgetter("counts"), segms))
        if pixels is None:
            sizes = list(map(itemgetter("size"), segms))
            if set(map(len, sizes)) != {2} or set(map(type, chain.from_iterable(sizes))) != {int}:
                return None
            hw = np.fromiter(chain.from_iterable(sizes), dtype=np.int64, count=2 * len(sizes)).reshape(-1, 2)
            pixels = hw[:, 0] * hw[:, 1]
        joined = "".join(counts).encode("ascii")
    except (KeyError, TypeError, ValueError, OverflowError):  # (UnicodeEncodeError is a ValueError)
        return None
    if set(map(type, counts)) != {str}:
        return None
    lengths = np.fromiter(map(len, counts), dtype=np.int64, count=len(counts))
    return np.frombuffer(joined, dtype=np.uint8), lengths, pixels


def text_slices(
    texts: Sequence[bytes], which: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> list[bytes]:
    """``[texts[which[k]][starts[k]:ends[k]] for k ...]``: counts strings cut from texts that hold many of them
    laid end to end, one C-level pass per text."""
    if len(texts) == 1:
        return list(map(texts[0].__getitem__, map(slice, starts.tolist(), ends.tolist())))
    out: list[bytes] = [b""] * which.shape[0]
    for t in np.flatnonzero(np.bincount(which, minlength=len(texts))).tolist():
        sel = np.flatnonzero(which == t)
        cut = map(texts[t].__getitem__, map(slice, starts[sel].tolist(), ends[sel].tolist()))
        deque(map(out.__setitem__, sel.tolist(), cut), maxlen=0)  # (out[i] = slice, in C)
    return out
