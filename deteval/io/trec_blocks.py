"""Reading a TREC file's text in blocks of whole lines: read whole (:func:`read_bytes`, cut by
:class:`ByteBlocks`) or read as they are needed (:class:`FileBlocks`), trec_eval 10.0's comment lines, and
the table built from the blocks' fields by a few threads (:func:`read_table`)."""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from os import PathLike
from pathlib import Path

import numpy as np

from deteval.errors import InputFormatError
from deteval.io.guards import refuse_special
from deteval.io.trec_tables import column_width
from deteval.io.trec_tokens import Tokens, tokenise

BLOCK = 1 << 21  # 2 MiB of text per block bounds the temporaries (a few blocks are in flight)


class ByteBlocks:
    """A text in memory read as :class:`FileBlocks` reads a file: blocks of whole lines (about ``BLOCK``
    bytes each, zero-copy views) with the 0-based number of their first line; ``size`` and ``tag`` as
    there."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    @property
    def tag(self) -> str:
        return last_tag(self.data)

    def __iter__(self) -> Iterator[tuple[int, memoryview]]:
        data = self.data
        pos, line0, n = 0, 0, len(data)
        view = memoryview(data)
        while pos < n:
            stop = min(pos + BLOCK, n)
            if stop < n:
                nl = data.find(b"\n", stop)
                stop = n if nl < 0 else nl + 1
            yield line0, view[pos:stop]
            line0 += data.count(b"\n", pos, stop)
            pos = stop


def nul_error(path: str | PathLike[str], line: int) -> InputFormatError:
    return InputFormatError(
        "binary data (a NUL byte) in a text file; save it as UTF-8 text",
        file=str(path),
        record=f"line {line}",
    )


def refuse_nul(path: str | PathLike[str]) -> None:
    """:func:`read_bytes`' refusals (an unreadable file, the first NUL byte named by its line) read in blocks
    of ``BLOCK`` bytes, not the whole text at once: the error path of a streamed read."""
    lines = 0
    refuse_special(path, "file")  # (a pipe would block the open, /dev/zero never end)
    try:
        with Path(path).open("rb") as fh:
            while block := fh.read(BLOCK):
                nul = block.find(b"\x00")
                if nul >= 0:
                    raise nul_error(path, lines + block.count(b"\n", 0, nul) + 1)
                lines += block.count(b"\n")
    except OSError as exc:
        raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None


def read_bytes(path: str | PathLike[str]) -> bytes:
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
        raise nul_error(path, data.count(b"\n", 0, nul) + 1)
    if b"\n" not in data and b"\r" in data:
        data = data.replace(b"\r", b"\n")
    return data


def line_fields(
    data: bytes, what: str, path: str | PathLike[str], *, blank_ok: bool, comments: bool = False
) -> Iterator[tuple[str, list[bytes]]]:
    """The whitespace-separated fields of each line of a small file, with the line's record name: a line
    whose fields are not the ones ``what`` names raises (a blank line too, unless ``blank_ok``: it is then
    skipped); with ``comments``, a line starting with ``#`` is skipped."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    for no, raw in enumerate(lines, 1):
        parts = raw.split()
        if (comments and raw.startswith(b"#")) or (blank_ok and not parts):
            continue
        if len(parts) != len(what.split()):
            message = f"expected {len(what.split())} fields ({what}), found {len(parts)}"
            raise InputFormatError(message, file=str(path), record=f"line {no}")
        yield f"line {no}", parts


_EMPTY = np.zeros(0, dtype="S1")


def blank_warning(n_blank: int, path: str) -> list[str]:
    return [f"{path}: {n_blank} blank line(s) skipped"] if n_blank else []


def read_table(
    blocks: Iterable[tuple[int, bytes | memoryview]],
    path: str | PathLike[str],
    n_fields: int,
    keep: Sequence[int],
    what: str,
    convert: Callable[[list[np.ndarray], list[dict[int, bytes]], np.ndarray], list[np.ndarray]] | None = None,
    more: bool = False,
    size: int = 0,
) -> Tokens:
    """Kept fields of every line, block by block; ``convert`` (e.g. number parsing) runs per block.

    Blocks are processed by a few threads: numpy releases the GIL in the heavy steps. At most one block
    per thread waits ahead (``blocks`` may be read from the file as they are needed: the text is never held
    whole), and results are taken in file order, so the first bad line of the file is the one reported.
    Returns what :func:`tokenise` does, for the whole file (the ``longs`` dicts keyed by row of the file's
    table).
    """

    def work(item: tuple[int, bytes | memoryview]) -> Tokens:
        fields, longs, ln, nb = tokenise(item[1], n_fields, keep, str(path), item[0], what, more)
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
            pending: deque[tuple[Future[Tokens], int]] = deque(
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
    """The columns of :func:`read_table`, each block's rows copied in as the block is done.

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

    def add(self, part: Tokens, nbytes: int) -> None:
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

    def result(self, n_fields: int) -> Tokens:
        if not self.cols:
            return (
                [_EMPTY] * n_fields,
                self.longs or [{} for _ in range(n_fields)],
                np.zeros(0, np.int64),
                self.n_blank,
            )
        cols = [c[: self.n] for c in self.cols]
        return cols[:-1], self.longs, cols[-1], self.n_blank


# trec_eval 10.0's comment lines: in qrels a '#' as the first byte of a line (get_qrels.c), in runs a '#'
# as the first non-blank byte (get_trec_results.c)
QRELS_COMMENT = re.compile(rb"(?m)^#[^\n]*")


RUN_COMMENT = re.compile(rb"(?m)^[ \t\v\f\r]*#[^\n]*")


def without_comments(data: bytes, pattern: re.Pattern[bytes]) -> tuple[bytes, int]:
    """The comment lines blanked out with spaces (line numbers stay those of the file) and their count."""
    if b"#" not in data:
        return data, 0
    n = 0

    def blank(m: re.Match[bytes]) -> bytes:
        nonlocal n
        n += 1
        return b" " * len(m.group())

    return pattern.sub(blank, data), n


class FileBlocks:
    """The file's text in blocks of whole lines (about ``BLOCK`` bytes), read only as they are consumed, so
    that the whole text is never in memory at once; each block prepared as :func:`read_bytes` prepares a
    whole file (BOM, NUL bytes, old-Mac line ends) and, with ``pattern``, comment lines blanked as
    :func:`without_comments` does (counted in ``n_comments``). ``tag``: the run tag of the last non-blank
    line read (see :func:`last_tag`)."""

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
            with Path(self.path).open("rb") as fh:
                line0, carry, first = 0, b"", True
                while True:
                    chunk = fh.read(BLOCK)
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
        except OSError as exc:
            raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=str(self.path)) from None

    def _prepare(self, block: bytes, line0: int) -> bytes:
        nul = block.find(b"\x00")
        if nul >= 0:
            raise nul_error(self.path, line0 + block.count(b"\n", 0, nul) + 1)
        if self.pattern is not None:
            block, n = without_comments(block, self.pattern)
            self.n_comments += n
        tag = last_tag(block)
        if tag:
            self.tag = tag
        return block


def last_tag(data: bytes) -> str:
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
