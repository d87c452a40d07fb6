"""TREC qrels and run files, and the equivalent in-memory inputs, as columnar arrays.

File formats (whitespace-separated; tabs, repeated spaces and CRLF line ends are accepted):

* qrels: ``qid iter docno rel`` (``iter`` is ignored; ``rel`` an integer, or a plain decimal such as ``1.5``
  cut to its integer part as trec_eval's ``atol`` does; a negative ``rel`` means "in the pool but
  unjudged", as in trec_eval);
* run: ``qid Q0 docno rank score tag [anything]`` (``Q0`` and ``rank`` are ignored: trec_eval re-ranks by
  score; fields after the tag are ignored, as trec_eval does; the tag of the last line is the ``runid``).

Blank lines are skipped and counted. Every other line must have the expected number of fields (four; a run
line at least six); otherwise :class:`~deteval.errors.InputFormatError` names the file and the line.

Parsing is vectorised: the file is read in large blocks, fields are located with numpy on the raw bytes
and gathered into fixed-width byte-string arrays (``dtype "S"``, which sort bytewise like C's ``strcmp``);
no Python code runs per line unless a line is bad and has to be named.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.guards import refuse_special
from deteval.io.skipping import check_on_error, load_skipping

_BLOCK = 1 << 21  # 2 MiB of text per block bounds the temporaries (a few blocks are in flight)

__all__ = [
    "Qrels",
    "Run",
    "load_qrels",
    "load_run",
    "load_zscores",
    "qrels_from_dict",
    "qrels_from_lists",
    "run_from_dict",
    "run_from_lists",
]


@dataclass
class Qrels:
    """Relevance judgements, one row per (topic, document): byte-string ``topic`` and ``docno``, int ``rel``.

    ``line`` holds the 1-based source line of each row (for in-memory input: the 0-based entry index, and
    ``record_kind`` is ``"entry"``) so that later checks (duplicates) can still name the record.

    ``docno_long``: the few docnos much longer than the rest, by row (``docno`` holds only their first
    bytes), so that the column's width, and memory, follow the typical docno and not the longest one.
    """

    topic: np.ndarray
    docno: np.ndarray
    rel: np.ndarray
    line: np.ndarray
    source: str = "<in-memory qrels>"
    record_kind: str = "line"
    blank_lines: int = 0
    warnings: list[str] = field(default_factory=list)
    skipped: int | None = None  # bad lines left out with on_error="skip" (None: not asked for)
    docno_long: dict[int, bytes] = field(default_factory=dict)
    group: np.ndarray | None = None  # the judgment group (iter field) of each row, for -R qrels_jg

    def __len__(self) -> int:
        return int(self.topic.shape[0])


@dataclass
class Run:
    """A ranked run, one row per retrieved document: byte-string ``topic`` and ``docno``, float ``score``.

    ``tag`` is the run tag of the last line (trec_eval's ``runid``); ``line``/``record_kind``/``docno_long``
    as in :class:`Qrels`.
    """

    topic: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    line: np.ndarray
    tag: str = ""
    source: str = "<in-memory run>"
    record_kind: str = "line"
    blank_lines: int = 0
    warnings: list[str] = field(default_factory=list)
    skipped: int | None = None
    docno_long: dict[int, bytes] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.topic.shape[0])


# --------------------------------------------------------------------------------------------------------
# Tokenising


_LONG_COST = 128  # bytes that one token kept as a Python bytes object (and its dict entry) costs


def column_width(length: np.ndarray) -> int:
    """Width of a fixed-width column for tokens of these lengths: the longest, unless that makes the
    column mostly padding; then the width w minimising ``n*w + sum(len + overhead)`` over the tokens
    longer than w (those are kept apart, whole). Memory then grows with the tokens' total size, not with
    the number of rows times the longest token (one 20 KB docno in 500k rows would need 10 GB)."""
    n = length.shape[0]
    widest = int(length.max(initial=0))
    if widest * n <= 2 * int(length.sum()) + 64 * n:
        return widest
    u, c = np.unique(length, return_counts=True)
    above = np.cumsum((c * (u + _LONG_COST))[::-1])[::-1]  # cost of the tokens of length >= u[k]
    cost = n * u + np.append(above[1:], 0)
    return int(u[int(np.argmin(cost))])


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


def _split_lines(data: bytes) -> Iterable[tuple[int, memoryview]]:
    """Blocks of whole lines (about ``_BLOCK`` bytes each, zero-copy views) with the 0-based number of
    their first line."""
    pos, line0, n = 0, 0, len(data)
    view = memoryview(data)
    while pos < n:
        stop = min(pos + _BLOCK, n)
        if stop < n:
            nl = data.find(b"\n", stop)
            stop = n if nl < 0 else nl + 1
        yield line0, view[pos:stop]
        line0 += data.count(b"\n", pos, stop)
        pos = stop


_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True  # the separators of C's isspace(), which trec_eval splits on


_Tokens = tuple[list[np.ndarray], list[dict[int, bytes]], np.ndarray, int]
MAX_TOPIC_BYTES = 256  # longer topic ids are refused (no test collection comes close; bounds memory)


def _gather_fields(
    padded: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    keep: Sequence[int],
    path: str,
    line_of: Callable[[int], int],
) -> tuple[list[dict[int, bytes]], list[np.ndarray]]:
    """The kept fields (see :func:`_tokenise`). Field 0, the topic id, is never cut: it must be at most
    ``MAX_TOPIC_BYTES`` long; every other field's width follows :func:`column_width`."""
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


def _tokenise(
    chunk: bytes | memoryview,
    n_fields: int,
    keep: Sequence[int],
    path: str,
    line0: int,
    what: str,
    more: bool = False,
) -> _Tokens:
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
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
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
    widest = int(max((ends[:, j] - starts[:, j]).max(initial=0) for j in keep))
    padded = np.concatenate((buf, np.zeros(widest + 1, dtype=np.uint8)))
    longs, fields = _gather_fields(
        padded, starts, ends, keep, path, lambda r: int(np.flatnonzero(filled)[r]) + line0 + 1
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
) -> _Tokens | None:
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
    lengths = [ends[:, j] - starts[:, j] for j in keep]
    widest = int(max(ln.max() for ln in lengths))
    padded = np.concatenate((buf, np.zeros(widest + 1, dtype=np.uint8)))
    del lengths  # before the gather: the blocks are tokenised in parallel, peaks add up
    longs, fields = _gather_fields(padded, starts, ends, keep, path, lambda r: line0 + 1 + r)
    return fields, longs, np.arange(line0 + 1, line0 + 1 + ends.shape[0], dtype=np.int64), 0


def _nul_error(path: str | PathLike[str], line: int) -> InputFormatError:
    return InputFormatError(
        "binary data (a NUL byte) in a text file; save it as UTF-8 text",
        file=str(path),
        record=f"line {line}",
    )


def _refuse_nul(path: str | PathLike[str]) -> None:
    """:func:`_read_bytes`' refusals (an unreadable file, the first NUL byte named by its line) read in blocks
    of ``_BLOCK`` bytes, not the whole text at once: the error path of a streamed read."""
    lines = 0
    refuse_special(path, "file")  # (a pipe would block the open, /dev/zero never end)
    try:
        with Path(path).open("rb") as fh:
            while block := fh.read(_BLOCK):
                nul = block.find(b"\x00")
                if nul >= 0:
                    raise _nul_error(path, lines + block.count(b"\n", 0, nul) + 1)
                lines += block.count(b"\n")
    except OSError as exc:
        raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None


def _read_bytes(path: str | PathLike[str]) -> bytes:
    """The file's bytes, ready to tokenise: a UTF-8 BOM removed (else it would glue onto the first topic
    id), old-Mac CR line ends made LF; NUL bytes (binary or UTF-16 data) refused."""
    refuse_special(path, "file")  # (a pipe would block the open, /dev/zero never end)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\x00")
    if nul >= 0:
        raise _nul_error(path, data.count(b"\n", 0, nul) + 1)
    if b"\n" not in data and b"\r" in data:
        data = data.replace(b"\r", b"\n")
    return data


def _parse_numbers(text: np.ndarray, dtype: type, lines: np.ndarray, path: str, what: str) -> np.ndarray:
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


def _parse_decimals(text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _parse_floats(text: np.ndarray, lines: np.ndarray, path: str, what: str) -> np.ndarray:
    if text.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    values, ok = _parse_decimals(text)
    if not ok.all():
        rest = np.flatnonzero(~ok)
        values[rest] = _parse_numbers(text[rest], float, lines[rest], path, what)
    return values


def _with_long(
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


def _concat(parts: list[np.ndarray], dtype: str) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _read_table(
    blocks: Iterable[tuple[int, bytes | memoryview]],
    path: str | PathLike[str],
    n_fields: int,
    keep: Sequence[int],
    what: str,
    convert: Callable[[list[np.ndarray], list[dict[int, bytes]], np.ndarray], list[np.ndarray]] | None = None,
    more: bool = False,
    size: int = 0,
) -> _Tokens:
    """Kept fields of every line, block by block; ``convert`` (e.g. number parsing) runs per block.

    Blocks are processed by a few threads: numpy releases the GIL in the heavy steps. At most one block
    per thread waits ahead (``blocks`` may be read from the file as they are needed: the text is never held
    whole), and results are taken in file order, so the first bad line of the file is the one reported.
    Returns what :func:`_tokenise` does, for the whole file (the ``longs`` dicts keyed by row of the file's
    table).
    """

    def work(item: tuple[int, bytes | memoryview]) -> _Tokens:
        fields, longs, ln, nb = _tokenise(item[1], n_fields, keep, str(path), item[0], what, more)
        return (convert(fields, longs, ln) if convert else fields), longs, ln, nb

    table = _Table(size, [k != 0 for k in keep] + [False])
    it = iter(blocks)
    first = next(it, None)
    second = next(it, None) if first is not None else None
    if first is None or second is None:
        if first is not None:
            table.add(work(first), len(first[1]))
    else:
        workers = min(4, os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            pending: deque[tuple[Future[_Tokens], int]] = deque(
                (pool.submit(work, b), len(b[1])) for b in (first, second)
            )
            for item in it:
                pending.append((pool.submit(work, item), len(item[1])))
                while len(pending) > workers:  # bounded read-ahead: the memory of a few blocks
                    future, nbytes = pending.popleft()
                    table.add(future.result(), nbytes)
            while pending:
                future, nbytes = pending.popleft()
                table.add(future.result(), nbytes)
    return table.result(len(keep))


class _Table:
    """The columns of :func:`_read_table`, each block's rows copied in as the block is done.

    Columns are allocated once for the rows the file's size suggests (untouched capacity costs no memory:
    the pages are never written) and grown or widened by a copy only when a block outgrows them, so that
    loading holds the table and a few blocks' temporaries, never the table twice."""

    def __init__(self, size: int, cuttable: Sequence[bool]) -> None:
        self.size = size
        self.cuttable = list(cuttable)
        self.n = 0
        self.cap = 0
        self.cols: list[np.ndarray] = []
        self.longs: list[dict[int, bytes]] = []
        self.n_blank = 0
        self.read = 0  # bytes of the blocks added

    def _reserve(self, rows: int, like: Sequence[np.ndarray]) -> None:
        for j, a in enumerate(like):
            old = self.cols[j] if j < len(self.cols) else None
            wider = old is not None and a.dtype.itemsize > old.dtype.itemsize
            if old is None or rows > self.cap or wider:
                new = np.empty(max(rows, self.cap), dtype=a.dtype if old is None or wider else old.dtype)
                if old is not None:
                    new[: self.n] = old[: self.n]
                    self.cols[j] = new
                else:
                    self.cols.append(new)
        self.cap = max(rows, self.cap)

    def _fit(self, j: int, a: np.ndarray, long: dict[int, bytes]) -> np.ndarray:
        """Block column ``a`` cut to the width :func:`column_width` gives the table's rows and the block's
        together (the longer tokens kept whole in ``long``), so that one block of a few long tokens does
        not widen every row of the table."""
        width = self.cols[j].dtype.itemsize
        if not self.cuttable[j] or a.dtype.kind != "S" or a.dtype.itemsize <= width:
            return a
        length = np.strings.str_len(a)
        for i, b in long.items():
            length[i] = len(b)
        # the table's rows weigh as rows of its width (at most 65536 of them, bounding the cost)
        w = max(column_width(np.concatenate((length, np.full(min(self.n, 1 << 16), width)))), width)
        if w >= a.dtype.itemsize:
            return a
        long.update((i, bytes(a[i])) for i in np.flatnonzero(length > w).tolist() if i not in long)
        return a.astype(f"S{w}")  # the cut rows keep their first w bytes, as a block's own cut does

    def add(self, part: _Tokens, nbytes: int) -> None:
        fields, longs, lines, n_blank = part
        self.n_blank += n_blank
        m = lines.shape[0]
        if self.cols and m:
            fields = [self._fit(j, a, longs[j]) for j, a in enumerate(fields)]
        if not self.longs:
            self.longs = [{} for _ in longs]
        for j, d in enumerate(longs):
            self.longs[j].update((self.n + i, b) for i, b in d.items())
        self.read += nbytes
        if m == 0:
            return
        cols = [*fields, lines]
        # rows expected: the rows so far scaled by the bytes still to come, with a margin (an underestimate
        # costs a copy of the table; an overestimate only address space)
        if self.size > self.read:
            expect = int((self.n + m) * (self.size / max(self.read, 1)) * 1.05) + 64
        else:  # size unknown (a pipe) or passed: grow geometrically
            expect = int((self.n + m) * 1.5) + 64
        if not self.cols:
            self.cap = 0
            self._reserve(max(m, expect), cols)
        elif self.n + m > self.cap or any(
            a.dtype.itemsize > c.dtype.itemsize for a, c in zip(cols, self.cols, strict=True)
        ):
            self._reserve(max(self.n + m, expect, int(self.cap * 1.05)), cols)
        for a, c in zip(cols, self.cols, strict=True):
            c[self.n : self.n + m] = a
        self.n += m

    def result(self, n_fields: int) -> _Tokens:
        if not self.cols:
            return (
                [_EMPTY] * n_fields,
                self.longs or [{} for _ in range(n_fields)],
                np.zeros(0, np.int64),
                self.n_blank,
            )
        cols = [c[: self.n] for c in self.cols]
        return cols[:-1], self.longs, cols[-1], self.n_blank


_EMPTY = np.zeros(0, dtype="S1")


def _blank_warning(n_blank: int, path: str) -> list[str]:
    return [f"{path}: {n_blank} blank line(s) skipped"] if n_blank else []


# trec_eval 10.0's comment lines: in qrels a '#' as the first byte of a line (get_qrels.c), in runs a '#'
# as the first non-blank byte (get_trec_results.c)
_QRELS_COMMENT = re.compile(rb"(?m)^#[^\n]*")
_RUN_COMMENT = re.compile(rb"(?m)^[ \t\v\f\r]*#[^\n]*")


def _without_comments(data: bytes, pattern: re.Pattern[bytes]) -> tuple[bytes, int]:
    """The comment lines blanked out with spaces (line numbers stay those of the file) and their count."""
    if b"#" not in data:
        return data, 0
    n = 0

    def blank(m: re.Match[bytes]) -> bytes:
        nonlocal n
        n += 1
        return b" " * len(m.group())

    return pattern.sub(blank, data), n


class _FileBlocks:
    """The file's text in blocks of whole lines (about ``_BLOCK`` bytes), read only as they are consumed, so
    that the whole text is never in memory at once; each block prepared as :func:`_read_bytes` prepares a
    whole file (BOM, NUL bytes, old-Mac line ends) and, with ``pattern``, comment lines blanked as
    :func:`_without_comments` does (counted in ``n_comments``). ``tag``: the run tag of the last non-blank
    line read (see :func:`_last_tag`)."""

    def __init__(self, path: str | PathLike[str], pattern: re.Pattern[bytes] | None) -> None:
        self.path = path
        self.pattern = pattern
        self.n_comments = 0
        self.tag = ""
        try:
            self.size = os.stat(path).st_size  # a hint for the table's capacity
        except OSError:
            self.size = 0  # the read names the problem

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        refuse_special(self.path, "file")  # (a pipe would block the open, /dev/zero never end)
        try:
            fh = Path(self.path).open("rb")
        except OSError as exc:
            raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=str(self.path)) from None
        with fh:
            line0, carry, first = 0, b"", True
            while True:
                try:
                    chunk = fh.read(_BLOCK)
                except OSError as exc:
                    raise InputFormatError(
                        f"cannot read file: {exc.strerror or exc}", file=str(self.path)
                    ) from None
                buf = carry + chunk if carry else chunk
                if first:  # a UTF-8 BOM would glue onto the first topic id
                    if len(buf) < 3 and chunk:
                        carry = buf
                        continue
                    first = False
                    if buf.startswith(b"\xef\xbb\xbf"):
                        buf = buf[3:]
                if chunk:
                    cut = buf.rfind(b"\n") + 1
                    if cut == 0:  # no line end yet: read on (a line longer than a block)
                        carry = buf
                        continue
                    block, carry = buf[:cut], buf[cut:]
                else:
                    block, carry = buf, b""
                    if line0 == 0 and b"\n" not in block and b"\r" in block:  # the whole file, no LF
                        block = block.replace(b"\r", b"\n")
                if block:
                    yield line0, self._prepare(block, line0)
                    line0 += block.count(b"\n")
                if not chunk:
                    return

    def _prepare(self, block: bytes, line0: int) -> bytes:
        nul = block.find(b"\x00")
        if nul >= 0:
            raise _nul_error(self.path, line0 + block.count(b"\n", 0, nul) + 1)
        if self.pattern is not None:
            block, n = _without_comments(block, self.pattern)
            self.n_comments += n
        tag = _last_tag(block)
        if tag:
            self.tag = tag
        return block


def _read(
    path: str | PathLike[str],
    on_error: str,
    comments: bool,
    pattern: re.Pattern[bytes],
    parse: Callable[[bytes, str | PathLike[str]], Any],
    stream: Callable[[_FileBlocks, str | PathLike[str]], Any] | None = None,
) -> Any:
    check_on_error(on_error)
    if stream is not None and on_error == "raise":
        blocks = _FileBlocks(path, pattern if comments else None)
        try:
            out = stream(blocks, path)
        except DetevalError:
            _refuse_nul(
                path
            )  # a NUL byte anywhere is named first, as when the whole file is checked up front
            raise
        n_comments = blocks.n_comments
    else:
        data = _read_bytes(path)
        n_comments = 0
        if comments:
            data, n_comments = _without_comments(data, pattern)
        out = _skipping(data, path, parse) if on_error == "skip" else parse(data, path)
    if n_comments:  # blanked comment lines are not blank lines of the file
        out.blank_lines -= n_comments
        out.warnings = [w for w in out.warnings if not w.endswith("blank line(s) skipped")]
        out.warnings += _blank_warning(out.blank_lines, str(path))
        out.warnings.append(f"{path}: {n_comments} comment line(s) skipped (trec_eval 10.0)")
    return out


def load_qrels(
    path: str | PathLike[str],
    *,
    on_error: str = "raise",
    comments: bool = False,
    judgment_groups: bool = False,
) -> Qrels:
    """Read a TREC qrels file (``qid iter docno rel``); see the module docstring.

    ``on_error="skip"``: bad lines (field count, relevance) are left out, listed in ``warnings`` and
    counted in ``skipped``; the rest is read exactly as the file without them. Whole-file faults (unreadable,
    binary) and duplicates (two lines at fault, checked at evaluation) still raise.
    ``comments=True``: lines starting with ``#`` are comments, as trec_eval 10.0 reads qrels (9.0.8 has no
    comments: such a line is data, usually with the wrong number of fields).
    ``judgment_groups=True``: the ``iter`` field is kept as each row's judgment group (``Qrels.group``,
    trec_eval's ``-R qrels_jg``); the same document may then be judged once per group.
    """
    if judgment_groups:
        return _read(path, on_error, comments, _QRELS_COMMENT, _qrels_jg_from_bytes)
    return _read(
        path, on_error, comments, _QRELS_COMMENT, _qrels_from_bytes, lambda b, p: _qrels_table(b, p, b.size)
    )


_LINE = re.compile(r"^line (\d+)$")


def _skipping(data: bytes, path: str | PathLike[str], parse: Callable) -> Any:
    """``parse(data, path)`` without the bad lines (see :mod:`deteval.io.skipping`); line numbers in the
    result and in the warnings are those of the file."""
    try:
        out = parse(data, path)
        out.skipped = 0
        return out
    except DetevalError as exc:
        if not (isinstance(exc.record, str) and _LINE.match(exc.record)):
            raise
    # error path only: a Python pass over the lines to find the non-blank ones
    pieces = data.split(b"\n")
    if pieces and not pieces[-1]:
        pieces.pop()
    nonblank = np.array([i for i, t in enumerate(pieces) if t.strip()], dtype=np.int64)

    def load(idx: np.ndarray) -> Any:
        return parse(b"".join(pieces[i] + b"\n" for i in nonblank[idx].tolist()), path)

    def local(exc: DetevalError) -> int | None:
        m = _LINE.match(exc.record) if isinstance(exc.record, str) else None
        return int(m.group(1)) - 1 if m else None

    out, bad, keep = load_skipping(len(nonblank), load, local, lambda i: f"line {int(nonblank[i]) + 1}")
    out.line = nonblank[keep][out.line - 1] + 1
    out.blank_lines = len(pieces) - len(nonblank)
    out.skipped = len(bad)
    out.warnings = [f"skipped bad record: {e}" for e in bad.values()] + _blank_warning(
        out.blank_lines, str(path)
    )
    return out


def _qrels_jg_from_bytes(data: bytes, path: str | PathLike[str]) -> Qrels:
    (group,), longs, _, _ = _read_table(
        _split_lines(data), path, 4, (1,), "qid iter docno rel", size=len(data)
    )
    if longs[0]:
        row = min(longs[0])
        raise InputFormatError(
            f"judgment group id of {len(longs[0][row])} bytes is far longer than the others",
            file=str(path),
            record=f"row {row + 1}",
        )
    out = _qrels_from_bytes(data, path)
    out.group = group
    return out


def _qrels_from_bytes(data: bytes, path: str | PathLike[str]) -> Qrels:
    return _qrels_table(_split_lines(data), path, len(data))


def _qrels_table(
    blocks: Iterable[tuple[int, bytes | memoryview]], path: str | PathLike[str], size: int
) -> Qrels:
    (topic, docno, rel_text), longs, lines, n_blank = _read_table(
        blocks, path, 4, (0, 2, 3), "qid iter docno rel", size=size
    )
    rel = _with_long(
        rel_text,
        longs[2],
        lines,
        lambda t, ln: _parse_numbers(_truncate_fractions(t), int, ln, str(path), "relevance"),
    )
    return Qrels(
        topic=topic,
        docno=docno,
        rel=rel.astype(np.int64),
        line=lines,
        source=str(path),
        blank_lines=n_blank,
        warnings=_blank_warning(n_blank, str(path)),
        docno_long=longs[1],
    )


def _last_tag(data: bytes) -> str:
    """The run tag (6th field) of the last non-blank line: trec_eval's ``runid`` (get_trec_results.c keeps
    the tag of the last line read)."""
    end = len(data)
    while end > 0:  # backwards, line by line, without copying the data
        start = data.rfind(b"\n", 0, end) + 1
        parts = data[start:end].split()
        if parts:
            return parts[5].decode("utf-8", "replace") if len(parts) > 5 else ""
        end = start - 1
    return ""


_FRACTION = re.compile(rb"([+-]?)(\d*)\.(\d*)")


def _truncate_fractions(text: np.ndarray) -> np.ndarray:
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


def load_run(path: str | PathLike[str], *, on_error: str = "raise", comments: bool = False) -> Run:
    """Read a TREC run file (``qid Q0 docno rank score tag``); scores must be finite numbers.

    ``on_error="skip"``: bad lines (field count, score) are left out, as in :func:`load_qrels`.
    ``comments=True``: lines whose first non-blank byte is ``#`` are comments (trec_eval 10.0).
    """
    return _read(
        path,
        on_error,
        comments,
        _RUN_COMMENT,
        _run_from_bytes,
        lambda b, p: _run_table(b, p, lambda: b.tag, b.size),
    )


def _run_from_bytes(data: bytes, path: str | PathLike[str]) -> Run:
    return _run_table(_split_lines(data), path, lambda: _last_tag(data), len(data))


def _run_table(
    blocks: Iterable[tuple[int, bytes | memoryview]],
    path: str | PathLike[str],
    tag: Callable[[], str],
    size: int,
) -> Run:
    def scores(
        fields: list[np.ndarray], longs: list[dict[int, bytes]], lines: np.ndarray
    ) -> list[np.ndarray]:
        parse = lambda t, ln: _parse_floats(t, ln, str(path), "score")  # noqa: E731
        return [fields[0], fields[1], _with_long(fields[2], longs[2], lines, parse)]

    (topic, docno, score), longs, lines, n_blank = _read_table(
        blocks, path, 6, (0, 2, 4), "qid Q0 docno rank score tag", convert=scores, more=True, size=size
    )
    score = score.astype(np.float64, copy=False)  # an empty file gives an empty "S1" column
    bad = ~np.isfinite(score)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(
            f"score {float(score[i])!r} is not finite", file=str(path), record=f"line {int(lines[i])}"
        )
    return Run(
        topic=topic,
        docno=docno,
        score=score,
        line=lines,
        tag=tag(),
        source=str(path),
        docno_long=longs[1],
        blank_lines=n_blank,
        warnings=_blank_warning(n_blank, str(path)),
    )


# --------------------------------------------------------------------------------------------------------
# In-memory inputs


def _key_bytes(value: object, what: str, source: str, record: str) -> bytes:
    if isinstance(value, bytes):
        b = value
    elif isinstance(value, (str, int, np.integer)) and not isinstance(value, bool):
        b = str(value).encode("utf-8")
    else:
        raise InputFormatError(
            f"{what} must be a string or an integer, got {type(value).__name__}", file=source, record=record
        )
    if not b or any(c in b for c in b" \t\r\n\v\f\x00"):
        raise InputFormatError(f"{what} {b!r} is empty or contains whitespace", file=source, record=record)
    if what == "topic id" and len(b) > MAX_TOPIC_BYTES:
        raise InputFormatError(
            f"topic id of {len(b)} bytes; deteval accepts at most {MAX_TOPIC_BYTES}",
            file=source,
            record=record,
        )
    return b


def _as_s(values: list[bytes]) -> np.ndarray:
    return np.array(values, dtype="S") if values else np.zeros(0, dtype="S1")


def _as_column(values: list[bytes]) -> tuple[np.ndarray, dict[int, bytes]]:
    """Docnos as an ``S`` column of :func:`column_width`, and the longer ones whole by row."""
    if not values:
        return np.zeros(0, dtype="S1"), {}
    length = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    width = column_width(length)
    long = {i: values[i] for i in np.flatnonzero(length > width).tolist()}
    return np.array(values, dtype=f"S{width}"), long


def qrels_from_dict(
    qrels: Mapping[object, Mapping[object, int]], *, source: str = "<in-memory qrels>"
) -> Qrels:
    """Qrels from ``{qid: {docno: rel}}`` (pytrec_eval's input form). Relevance values must be integers."""
    if not isinstance(qrels, Mapping):
        raise InputFormatError("qrels must be a dict qid -> {docno: rel}", file=source)
    topics: list[bytes] = []
    docs: list[bytes] = []
    rels: list[int] = []
    for qid, judged in qrels.items():
        q = _key_bytes(qid, "topic id", source, f"topic {qid!r}")
        if not isinstance(judged, Mapping):
            raise InputFormatError(
                "judgements must be a dict docno -> rel", file=source, record=f"topic {qid!r}"
            )
        for doc, rel in judged.items():
            rec = f"topic {qid!r}, document {doc!r}"
            docs.append(_key_bytes(doc, "docno", source, rec))
            if isinstance(rel, bool) or not isinstance(rel, (int, np.integer)):
                if isinstance(rel, (float, np.floating)) and float(rel).is_integer():
                    rel = int(rel)
                else:
                    raise ValidationError(
                        f"relevance must be an integer, got {rel!r}", file=source, record=rec
                    )
            if not -(2**63) <= int(rel) < 2**63:  # (the column is int64, as for qrels files)
                raise ValidationError(f"relevance {rel!r} is out of range", file=source, record=rec)
            rels.append(int(rel))
            topics.append(q)
    n = len(topics)
    docno, long = _as_column(docs)
    return Qrels(
        topic=_as_s(topics),
        docno=docno,
        docno_long=long,
        rel=np.array(rels, dtype=np.int64),
        line=np.arange(n, dtype=np.int64),
        source=source,
        record_kind="entry",
    )


def run_from_dict(
    run: Mapping[object, Mapping[object, float]], *, tag: str = "", source: str = "<in-memory run>"
) -> Run:
    """Run from ``{qid: {docno: score}}`` (pytrec_eval's input form). Scores must be finite numbers."""
    if not isinstance(run, Mapping):
        raise InputFormatError("run must be a dict qid -> {docno: score}", file=source)
    topics: list[bytes] = []
    docs: list[bytes] = []
    scores: list[float] = []
    for qid, ranked in run.items():
        q = _key_bytes(qid, "topic id", source, f"topic {qid!r}")
        if not isinstance(ranked, Mapping):
            raise InputFormatError(
                "a run topic must be a dict docno -> score", file=source, record=f"topic {qid!r}"
            )
        for doc, score in ranked.items():
            rec = f"topic {qid!r}, document {doc!r}"
            docs.append(_key_bytes(doc, "docno", source, rec))
            try:
                if isinstance(score, (bool, np.bool_, str, bytes)):  # float() would read True, "1" and b"1"
                    raise TypeError
                s = float(score)
            except OverflowError:  # an integer beyond float range
                raise ValidationError(f"score {score!r} is not finite", file=source, record=rec) from None
            except (TypeError, ValueError):
                raise ValidationError(
                    f"score must be a number, got {score!r}", file=source, record=rec
                ) from None
            if not math.isfinite(s):
                raise ValidationError(f"score {s!r} is not finite", file=source, record=rec)
            scores.append(s)
            topics.append(q)
    n = len(topics)
    docno, long = _as_column(docs)
    return Run(
        topic=_as_s(topics),
        docno=docno,
        docno_long=long,
        score=np.array(scores, dtype=np.float64),
        line=np.arange(n, dtype=np.int64),
        tag=tag,
        source=source,
        record_kind="entry",
    )


def run_from_lists(
    results: Sequence[Sequence[object]],
    *,
    topics: Sequence[object] | None = None,
    source: str = "<in-memory run>",
) -> Run:
    """Run from ranked lists (seed 003's ``results``): list ``i`` is topic ``i``'s documents, best first.

    The list order is the ranking: scores are ``n, n-1, ..., 1`` so that no tie rule can reorder them.
    Topic names default to ``"0"``, ``"1"``, ...
    """
    if topics is not None and len(topics) != len(results):
        raise ValidationError(f"{len(topics)} topic names for {len(results)} ranked lists", file=source)
    d: dict[object, dict[object, float]] = {}
    for i, ranked in enumerate(results):
        name = topics[i] if topics is not None else str(i)
        items = list(ranked)
        scores: dict[object, float] = {}
        for r, doc in enumerate(items):
            key = doc.item() if isinstance(doc, np.generic) else doc
            if key in scores:
                raise ValidationError(
                    f"document {key!r} appears twice in ranked list {i}",
                    file=source,
                    record=f"list {i}, position {r}",
                )
            scores[key] = float(len(items) - r)
        d[name] = scores
    return run_from_dict(d, source=source)


def qrels_from_lists(
    ground_truth: Sequence[Sequence[object]],
    *,
    topics: Sequence[object] | None = None,
    source: str = "<in-memory qrels>",
) -> Qrels:
    """Binary qrels from lists of relevant documents (seed 003's ``ground_truth``); each gets relevance 1."""
    if topics is not None and len(topics) != len(ground_truth):
        raise ValidationError(
            f"{len(topics)} topic names for {len(ground_truth)} ground-truth lists", file=source
        )
    d: dict[object, dict[object, int]] = {}
    for i, rel_docs in enumerate(ground_truth):
        name = topics[i] if topics is not None else str(i)
        d[name] = {(doc.item() if isinstance(doc, np.generic) else doc): 1 for doc in rel_docs}
    return qrels_from_dict(d, source=source)


def load_zscores(path: str | PathLike[str]) -> dict[tuple[str, str], tuple[float, float]]:
    """Read a trec_eval ``-Z`` file (``qid measure mean stddev`` per line, get_zscores.c) into
    ``{(qid, measure): (mean, stddev)}``. trec_eval reads the numbers with ``atof`` (garbage as 0); deteval
    refuses a line that is not four fields with two finite numbers, and a repeated (qid, measure)."""
    data = _read_bytes(path)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for i, raw in enumerate(data.split(b"\n"), 1):
        parts = raw.split()
        if not parts:
            continue
        record = f"line {i}"
        if len(parts) != 4:
            raise InputFormatError(
                f"expected 4 fields (qid measure mean stddev), found {len(parts)}",
                file=str(path),
                record=record,
            )
        try:
            mean, std = float(parts[2]), float(parts[3])
        except ValueError:
            raise InputFormatError("mean and stddev must be numbers", file=str(path), record=record) from None
        if not (math.isfinite(mean) and math.isfinite(std)) or b"_" in parts[2] + parts[3]:
            raise InputFormatError("mean and stddev must be finite numbers", file=str(path), record=record)
        if std < 0 or 0 < std < sys.float_info.min:  # (a sign flip; a z-score overflowing to inf)
            raise ValidationError(
                f"stddev {std:g} must be 0 or a positive normal number", file=str(path), record=record
            )
        key = (parts[0].decode("utf-8", "backslashreplace"), parts[1].decode("utf-8", "backslashreplace"))
        if key in out:
            raise ValidationError(f"({key[0]}, {key[1]}) given twice", file=str(path), record=record)
        out[key] = (mean, std)
    return out
