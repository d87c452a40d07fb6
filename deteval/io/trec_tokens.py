"""TREC text to columns: the fields of every line of a block of whole lines (:func:`tokenise`), and the
numbers in them (:func:`parse_numbers`, :func:`parse_floats`, trec_eval's ``atol`` of a relevance), all
vectorised over the block; Python runs per line only to name a bad line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from deteval.errors import InputFormatError, ValidationError, first_true
from deteval.io.trec_tables import MAX_TOPIC_BYTES, column_width

_WS = np.zeros(256, dtype=bool)


_WS[[9, 10, 11, 12, 13, 32]] = True  # the separators of C's isspace(), which trec_eval splits on


Tokens = tuple[list[np.ndarray], list[dict[int, bytes]], np.ndarray, int]


def _gather_field(
    padded: np.ndarray, start: np.ndarray, end: np.ndarray, long: dict[int, bytes] | None = None
) -> np.ndarray:
    """Byte strings ``padded[start[i]:end[i]]`` as one fixed-width ``S`` array, without a per-row loop.

    ``padded`` must extend at least the longest field's width past the last start (zero bytes). With a
    ``long`` dict, the width follows :func:`column_width`: longer tokens are cut in the array and stored
    whole in ``long`` by row.
    """
    n = start.shape[0]
    if n == 0:
        return np.zeros(0, dtype="S1")
    length = end - start
    if long is None:
        width = int(length.max())
    else:
        width = column_width(length)
        over = np.flatnonzero(length > width)
        if over.size:
            long.update((int(i), padded[start[i] : end[i]].tobytes()) for i in over.tolist())
            length = np.minimum(length, width)
    # one fancy-indexing copy of n rows from a zero-copy sliding window view (no n x width index array)
    out = np.lib.stride_tricks.sliding_window_view(padded, width)[start]
    out *= np.arange(width) < length[:, None]  # NUL padding: "S" strings end at the first trailing NUL
    return out.view(f"S{width}").reshape(n)


def _gather_fields(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    keep: Sequence[int],
    path: str,
    line_of: Callable[[int], int],
) -> tuple[list[dict[int, bytes]], list[np.ndarray]]:
    """The kept fields (see :func:`tokenise`) of the block ``buf``. Field 0, the topic id, is never cut: it
    must be at most ``MAX_TOPIC_BYTES`` long; every other field's width follows :func:`column_width`."""
    widest = int(max((ends[:, j] - starts[:, j]).max(initial=0) for j in keep))
    padded = np.concatenate((buf, np.zeros(widest + 1, dtype=np.uint8)))
    longs: list[dict[int, bytes]] = [{} for _ in keep]
    fields = []
    for i, j in enumerate(keep):
        if j == 0 and starts.shape[0] and int((ends[:, 0] - starts[:, 0]).max()) > MAX_TOPIC_BYTES:
            length = ends[:, 0] - starts[:, 0]  # error path only
            r = int(np.argmax(length))
            raise InputFormatError(
                f"topic id of {int(length[r])} bytes; deteval accepts at most {MAX_TOPIC_BYTES}",
                file=path,
                record=f"line {line_of(r)}",
            )
        fields.append(_gather_field(padded, starts[:, j], ends[:, j], None if j == 0 else longs[i]))
    return longs, fields


def tokenise(
    chunk: bytes | memoryview,
    n_fields: int,
    keep: Sequence[int],
    path: str,
    line0: int,
    what: str,
    more: bool = False,
) -> Tokens:
    """Fields ``keep`` of every non-blank line of ``chunk`` (which ends at a line end or at the file end).

    Returns ``(fields, longs, line_numbers, n_blank)``: one ``S`` array per kept field (tokens much longer
    than the rest cut, and kept whole in that field's ``longs`` dict by row, see :func:`column_width`) and
    the 1-based line of each row. A line with a number of fields other than 0 or ``n_fields`` raises,
    naming the line; with ``more``, fields after the first ``n_fields`` are ignored (trec_eval's run reader
    ignores everything after the run tag).
    """
    buf = np.frombuffer(chunk, dtype=np.uint8)
    # whitespace positions, with sentinels before and after the chunk; a token lies between two
    # whitespace positions more than one byte apart
    # bytes <= 32 are the candidates (one comparison pass); a control character that is not whitespace
    # (rare) sends the chunk through the exact lookup table
    wpos = np.flatnonzero(buf <= 32)
    wbytes = buf[wpos]
    if not _WS[wbytes].all():
        wpos = np.flatnonzero(_WS[buf])
        wbytes = buf[wpos]
    fast = _tokenise_simple(buf, wpos, wbytes, n_fields, keep, line0, path)
    if fast is not None:
        return fast
    wpos = np.concatenate(([-1], wpos, [buf.shape[0]]))
    gap = np.flatnonzero(wpos[1:] - wpos[:-1] > 1)
    starts = wpos[gap] + 1
    ends = wpos[gap + 1]
    newlines = wpos[1:-1][buf[wpos[1:-1]] == 10]
    line_starts = np.concatenate(([0], newlines + 1))
    if line_starts[-1] == buf.shape[0]:
        line_starts = line_starts[:-1]
    first_tok = np.searchsorted(starts, line_starts)
    counts = np.diff(np.append(first_tok, starts.shape[0]))
    bad = ((counts < n_fields) if more else (counts != n_fields)) & (counts != 0)
    if (i := first_true(bad)) >= 0:
        raw = bytes(chunk[line_starts[i] : line_starts[i] + 200]).split(b"\n", 1)[0]
        text = raw.decode("utf-8", "replace").rstrip("\r")
        raise InputFormatError(
            f"expected {n_fields} fields ({what}), found {int(counts[i])}: {text[:120]!r}",
            file=path,
            record=f"line {line0 + i + 1}",
        )
    filled = counts != 0
    n_blank = int(counts.shape[0] - np.count_nonzero(filled))
    if more and (counts > n_fields).any():
        tok = first_tok[filled][:, None] + np.arange(n_fields)
        starts, ends = starts[tok], ends[tok]
    else:
        starts = starts.reshape(-1, n_fields)
        ends = ends.reshape(-1, n_fields)
    longs, fields = _gather_fields(
        buf, starts, ends, keep, path, lambda r: int(np.flatnonzero(filled)[r]) + line0 + 1
    )
    line_numbers = np.flatnonzero(filled).astype(np.int64) + (line0 + 1)
    return fields, longs, line_numbers, n_blank


def _tokenise_simple(
    buf: np.ndarray,
    wpos: np.ndarray,
    wbytes: np.ndarray,
    n_fields: int,
    keep: Sequence[int],
    line0: int,
    path: str,
) -> Tokens | None:
    """The common layout, checked cheaply: one separator byte between fields, lines ending in a single
    LF, no blank line. Then every whitespace byte ends one field and no token search is needed.
    Returns None when the chunk does not have that layout (the general path then handles it)."""
    if wpos.shape[0] == 0 or wpos.shape[0] % n_fields or buf[-1] != 10 or buf[0] <= 32:
        return None
    ends = wpos.reshape(-1, n_fields)
    kinds = wbytes.reshape(-1, n_fields)
    if not (kinds[:, -1] == 10).all() or (kinds[:, :-1] == 10).any():
        return None
    starts = np.empty_like(wpos)
    starts[0] = 0
    starts[1:] = wpos[:-1] + 1
    starts = starts.reshape(-1, n_fields)
    # two adjacent separators (in any field, also one not kept: "... 24.17 \n" has no tag): not this layout
    if (ends <= starts).any():
        return None
    longs, fields = _gather_fields(buf, starts, ends, keep, path, lambda r: line0 + 1 + r)
    return fields, longs, np.arange(line0 + 1, line0 + 1 + ends.shape[0], dtype=np.int64), 0


def parse_numbers(text: np.ndarray, dtype: type, lines: np.ndarray, path: str, what: str) -> np.ndarray:
    """``text.astype(dtype)``; on failure find and name the first bad line (error path only)."""
    try:
        if text.shape[0] and (np.strings.find(text, b"_") >= 0).any():
            raise ValueError  # numpy and Python read "1_0" as 10, trec_eval's atof as 1: refuse it
        values: np.ndarray = text.astype(dtype)
    except (ValueError, OverflowError):
        for i, t in enumerate(text.tolist()):
            try:
                if b"_" in t:
                    raise ValueError
                v = dtype(t.decode("ascii"))
                if dtype is int and not -(2**63) <= v < 2**63:
                    raise ValidationError(
                        f"{what} {v} is out of range", file=path, record=f"line {int(lines[i])}"
                    )
            except (ValueError, OverflowError, UnicodeDecodeError):
                raise InputFormatError(
                    f"{what} {t.decode('utf-8', 'replace')!r} is not a valid number",
                    file=path,
                    record=f"line {int(lines[i])}",
                ) from None
        raise  # pragma: no cover - astype failed but every value parses alone
    return values


_POW10 = 10.0 ** np.arange(23)


def parse_decimals(text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised parse of plain decimals (``-12.345``, ``+7``, ``.5``) with at most 15 digits.

    value = mantissa / 10**fraction_digits: both are exact doubles, so the IEEE division gives the
    correctly rounded value, identical to ``strtod``/``float()``. Returns ``(values, ok)``; rows that are
    not plain decimals (exponents, more digits, inf, nan, garbage) are left to the general parser.
    """
    n = text.shape[0]
    width = text.dtype.itemsize
    mat = text.view(np.uint8).reshape(n, width)
    mant = np.zeros(n, dtype=np.int64)
    ndig = np.zeros(n, dtype=np.int64)
    frac = np.zeros(n, dtype=np.int64)
    dots = np.zeros(n, dtype=np.int64)
    first = mat[:, 0]
    neg = first == 45
    bad = np.zeros(n, dtype=bool)
    for j in range(width):
        c = mat[:, j]
        d = c.astype(np.int64) - 48
        dig = (d >= 0) & (d <= 9)
        np.multiply(mant, 10, out=mant, where=dig)
        np.add(mant, d, out=mant, where=dig)
        ndig += dig
        frac += dig & (dots > 0)
        isdot = c == 46
        dots += isdot
        other = ~dig & ~isdot & (c != 0)
        if j == 0:
            other &= ~(neg | (first == 43))
        bad |= other
    ok = ~bad & (dots <= 1) & (ndig >= 1) & (ndig <= 15)
    values = mant / _POW10[np.minimum(frac, 22)]
    np.negative(values, out=values, where=neg)
    return values, ok


def parse_floats(text: np.ndarray, lines: np.ndarray, path: str, what: str) -> np.ndarray:
    if text.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    values, ok = parse_decimals(text)
    if not ok.all():
        rest = np.flatnonzero(~ok)
        values[rest] = parse_numbers(text[rest], float, lines[rest], path, what)
    return values


def with_long(
    text: np.ndarray,
    long: dict[int, bytes],
    lines: np.ndarray,
    parse: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """``parse(text, lines)``, the tokens kept apart in ``long`` parsed one by one (their cut heads in
    ``text`` are not the numbers)."""
    if not long:
        return parse(text, lines)
    rows = sorted(long)
    text = text.copy()
    text[rows] = b"0"
    values = parse(text, lines)
    for i in rows:
        values[i] = parse(np.array([long[i]]), lines[i : i + 1])[0]
    return values


_FRACTION = re.compile(rb"([+-]?)(\d*)\.(\d*)")


def truncate_fractions(text: np.ndarray) -> np.ndarray:
    """Plain decimals (``1.5``, ``-0.7``, ``.5``) cut to their integer part, as trec_eval's ``atol`` reads a
    relevance; other tokens are left for the number parser to accept or refuse."""
    if text.shape[0] == 0:
        return text
    dotted = np.flatnonzero(np.strings.find(text, b".") >= 0)
    if dotted.size == 0:
        return text
    text = text.copy()
    for i in dotted.tolist():
        m = _FRACTION.fullmatch(bytes(text[i]))
        if m and (m.group(2) or m.group(3)):
            text[i] = m.group(1) + m.group(2) if m.group(2) else b"0"
    return text
