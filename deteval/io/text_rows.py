"""Whitespace-separated numeric rows of many text files (YOLO label and prediction files), read in bulk.

A file is read as ``str.splitlines`` lines of ``str.split`` fields, blank lines skipped, after UTF-8 decoding
with a leading BOM dropped (:func:`deteval.io.guards.decode_text`). A field is a number when it is ASCII,
has no ``_`` (``float`` reads ``"1_0"`` as 10 and ``"\\u0665"`` as 5) and ``float()`` reads it; its value is
that ``float()`` (correctly rounded), else NaN with the row marked :attr:`TextRows.unparsed`.

:func:`read_rows` concatenates the text of many files and finds fields, lines and rows with a few numpy
passes over the bytes; the fields become float64 in one call of numpy's text parser (correctly rounded, the
same value as ``float()``). A file with any byte outside ``0-9 . e E + - space tab CR LF``, or a piece with a
field that parser does not read whole, is read line by line in Python instead (the rule above, literally), so the result never depends on which way a file went. The text is
handled in pieces of about :data:`PIECE_BYTES`, so memory stays proportional to it.

Readers check their rows as columns (:meth:`TextRows.matrix`, per-row masks) and name the first fault with
:func:`first_fault`, in the order a file-by-file reader would have met it: the first file with a fault, and in
it the first phase of checks that fails (say, column counts before values), at its first row.
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from deteval.errors import DetevalError
from deteval.io.guards import decode_text, read_bytes, read_listed, read_regular

__all__ = ["PIECE_BYTES", "Check", "TextRows", "first_fault", "is_number", "read_rows"]

#: About this many bytes of text are tokenized at once.
PIECE_BYTES = 1 << 24

# Byte classes of the bulk path: 0 blank, 1 line break (LF, CR), 2 part of a number, 3 anything else.
_CLASS = np.full(256, 3, dtype=np.uint8)
_CLASS[[ord(" "), ord("\t")]] = 0
_CLASS[[ord("\n"), ord("\r")]] = 1
_CLASS[[ord(c) for c in "0123456789.eE+-"]] = 2
_BOM = b"\xef\xbb\xbf"
#: The bytes of the first three classes (what ``bytes.translate`` deletes to find a byte of the fourth), and a
#: table mapping the number bytes to 1 and every other byte to 0.
_KNOWN = bytes(np.flatnonzero(_CLASS < 3).astype(np.uint8))
_FIELD = bytes((_CLASS == 2).astype(np.uint8))


def is_number(x: str) -> bool:
    """The field rule: ASCII, no ``_``, and ``float(x)`` reads it (``nan`` and ``inf`` included)."""
    if "_" in x or not x.isascii():
        return False
    try:
        float(x)
    except ValueError:
        return False
    return True


@dataclass
class TextRows:
    """The non-blank lines of ``paths`` as rows, sorted by file then line; the fields of all rows one after
    another in ``values`` (row ``r``'s are ``values[start[r]:start[r] + width[r]]``).

    ``file_errors``: files that could not be read (a folder, a dangling link, not UTF-8, …), by file index;
    a reader may add its own file-level faults there (they come before the file's row faults)."""

    paths: list[str | os.PathLike[str]]
    file: np.ndarray  # (R,) int64: index into paths
    line: np.ndarray  # (R,) int64: 1-based line number (str.splitlines numbering)
    start: np.ndarray  # (R,) int64: offset of the row's first field in values
    width: np.ndarray  # (R,) int64: number of fields
    values: np.ndarray  # (V,) float64, NaN where a field is not a number
    unparsed: np.ndarray  # (R,) bool: a field of the row is not a number
    file_errors: dict[int, DetevalError] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.file.shape[0])

    def where(self, row: int) -> tuple[Path, str]:
        """(file, ``"line N"``) of a row, for an error message."""
        return Path(self.paths[int(self.file[row])]), f"line {int(self.line[row])}"

    def column(self, k: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Field ``k`` (negative: from the end) of each of the rows ``rows`` (all by default)."""
        start, width = (self.start, self.width) if rows is None else (self.start[rows], self.width[rows])
        return self.values[start + (k if k >= 0 else width + k)]

    def matrix(self, n: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The first ``n`` fields of the rows ``rows`` (all by default; each must have at least ``n``) as an
        (R, n) float64 array."""
        if rows is None and (self.width == n).all():
            return self.values.reshape(-1, n)  # (rows of one width lie end to end: a view)
        start = self.start if rows is None else self.start[rows]
        return self.values[start[:, None] + np.arange(n)]

    def row_reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        """``ufunc.reduceat`` of an array laid out like ``values`` over each row (every row has a field)."""
        if not len(self):
            return np.zeros(0, dtype=values.dtype)
        return ufunc.reduceat(values, self.start)

    def position(self) -> np.ndarray:
        """For each value, its field index in its row."""
        return np.arange(len(self.values)) - np.repeat(self.start, self.width)

    def file_rows(self, f: int) -> tuple[int, int]:
        """The rows of file ``f``: ``range(lo, hi)``."""
        lo, hi = np.searchsorted(self.file, [f, f + 1])
        return int(lo), int(hi)

    def unparsed_field(self, row: int) -> str:
        """The text of the first field of ``row`` that is not a number (the file is read again)."""
        path = Path(self.paths[int(self.file[row])])
        text = decode_text(read_bytes(path), path)
        fields = text.splitlines()[int(self.line[row]) - 1].split()
        return next(x for x in fields if not is_number(x))


#: A per-row fault mask and the error it raises for a row.
Check = tuple[np.ndarray, Callable[[int], DetevalError]]


def first_fault(rows: TextRows, phases: Sequence[Sequence[Check]]) -> tuple[int, DetevalError] | None:
    """The error a file-by-file reader would raise first, and the index of its file; or None.

    Files are checked in order; in a file, its ``file_errors`` entry first, then each phase in turn: a phase
    faults at its first row where any of its masks is set, and that row raises the first of its checks that
    is set (so a phase checks row by row, each row check by check)."""
    combined = []
    first_file = min(rows.file_errors, default=None)
    for checks in phases:
        any_mask = np.zeros(len(rows), dtype=bool)
        for mask, _ in checks:
            any_mask |= mask
        combined.append(any_mask)
        hit = np.flatnonzero(any_mask)
        if len(hit) and (first_file is None or rows.file[hit[0]] < first_file):
            first_file = int(rows.file[hit[0]])
    if first_file is None:
        return None
    if first_file in rows.file_errors:
        return first_file, rows.file_errors[first_file]
    lo, hi = rows.file_rows(first_file)
    for checks, any_mask in zip(phases, combined):
        hit = np.flatnonzero(any_mask[lo:hi])
        if len(hit):
            r = lo + int(hit[0])
            return first_file, next(make(r) for mask, make in checks if mask[r])
    raise AssertionError("a faulty file without a fault")  # pragma: no cover


# ------------------------------------------------------------------------------------------------- reading
#: The rows of one piece or one file read in Python, as the TextRows fields ``file``, ``line``, ``width``,
#: ``values``, ``unparsed``
_Part = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_PART_TYPES = (np.int64, np.int64, np.int64, np.float64, np.bool_)


def read_rows(
    paths: Sequence[str | os.PathLike[str]],
    what: str = "file",
    *,
    missing_ok: bool = False,
    listed: Sequence[bool] | None = None,
) -> TextRows:
    """The rows of the text files ``paths`` (module docstring), read in bulk.

    Parameters
    ----------
    paths
        The files, in the order their faults are reported.
    what
        What a file is, for messages ("label file").
    missing_ok
        A path that does not exist reads as an empty file (a YOLO image without labels); a dangling link
        still does not.
    listed
        Per path, whether its folder's listing gave it as a regular file, not a link: read with
        :func:`~deteval.io.guards.read_listed` (no ``fstat``; the same bytes and errors).

    Returns
    -------
    TextRows
        Rows sorted by file then line; unreadable files in ``file_errors`` (not raised).
    """
    plist = list(paths)
    parts: list[_Part] = []
    errors: dict[int, DetevalError] = {}
    slow: list[tuple[int, bytes]] = []
    piece: list[tuple[int, bytes]] = []
    size = 0
    known = [False] * len(plist) if listed is None else listed
    for f, (p, regular) in enumerate(zip(plist, known)):
        try:
            data = read_listed(p, what) if regular else read_regular(p, what, missing_ok=missing_ok)
        except DetevalError as exc:
            errors[f] = exc
            continue
        if not data:
            continue
        if data.startswith(_BOM):
            data = b"   " + data[3:]  # (decode_text drops a leading BOM; blanks keep the offsets)
        piece.append((f, data))
        size += len(data) + 1
        if size >= PIECE_BYTES:
            slow += _fast_piece(piece, parts)
            piece, size = [], 0
    if piece:
        slow += _fast_piece(piece, parts)
    for f, data in slow:
        try:
            _slow_file(f, Path(plist[f]), data, parts)
        except DetevalError as exc:
            errors[f] = exc
    rows = _assemble(plist, parts, reorder=bool(slow))
    rows.file_errors.update(errors)
    return rows


def _assemble(paths: list[str | os.PathLike[str]], parts: list[_Part], *, reorder: bool) -> TextRows:
    columns = zip(*parts) if parts else [()] * len(_PART_TYPES)
    file, line, width, values, unparsed = (
        np.concatenate(col) if col else np.zeros(0, dtype=t) for col, t in zip(columns, _PART_TYPES)
    )
    start = np.cumsum(width) - width
    if reorder:  # files read in Python were appended last: put rows, then values, back in file order
        order = np.argsort(file, kind="stable")
        file, line, width, unparsed, start = (x[order] for x in (file, line, width, unparsed, start))
        pos = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
        values = values[np.repeat(start, width) + pos]
        start = np.cumsum(width) - width
    return TextRows(paths, file, line, start, width, values, unparsed)


def _slow_file(f: int, path: Path, data: bytes, parts: list[_Part]) -> None:
    """One file read line by line in Python: the rule of the module docstring, literally."""
    text = decode_text(data, path)
    lines, widths, values, unparsed = [], [], [], []
    for n, text_line in enumerate(text.splitlines(), 1):
        fields = text_line.split()
        if not fields:
            continue
        lines.append(n)
        widths.append(len(fields))
        ok = [is_number(x) for x in fields]
        values += [float(x) if good else np.nan for x, good in zip(fields, ok)]
        unparsed.append(not all(ok))
    parts.append(
        (
            np.full(len(lines), f, dtype=np.int64),
            np.array(lines, dtype=np.int64),
            np.array(widths, dtype=np.int64),
            np.array(values, dtype=np.float64),
            np.array(unparsed, dtype=np.bool_),
        )
    )


def _fast_piece(piece: list[tuple[int, bytes]], parts: list[_Part]) -> list[tuple[int, bytes]]:
    """Tokenize the files of ``piece`` together; returns the files left to the Python path."""
    text = b"\n".join([d for _, d in piece] + [b""])  # (each file ends a line)
    slow: list[tuple[int, bytes]] = []
    if text.translate(None, _KNOWN):  # files with a byte of another class go to the Python path
        odd = np.flatnonzero(_CLASS[np.frombuffer(text, dtype=np.uint8)] == 3)
        lengths = np.array([len(d) + 1 for _, d in piece], dtype=np.int64)
        bad = np.unique(np.searchsorted(np.cumsum(lengths), odd, side="right"))
        slow = [piece[k] for k in bad.tolist()]
        fast = np.ones(len(piece), dtype=bool)
        fast[bad] = False
        piece = [piece[k] for k in np.flatnonzero(fast).tolist()]
        text = b"\n".join([d for _, d in piece] + [b""])
    if not piece:
        return slow
    buf = np.frombuffer(text, dtype=np.uint8)
    # Line breaks as str.splitlines counts them: LF, CR, and CR LF once. Line j ends at breaks[j].
    is_break = buf == 10
    if b"\r" in text:
        cr = np.flatnonzero(buf == 13)
        is_break[cr[buf[cr + 1] != 10]] = True  # (the buffer's last byte is LF: cr + 1 exists)
    breaks = np.flatnonzero(is_break)
    del is_break
    table = None if b"\r" in text else _one_width(text, breaks)
    if table is not None:  # (every non-empty line a row of one width: no need to find the fields)
        rows_at, values = table
        width = np.full(len(rows_at), len(values) // max(len(rows_at), 1), dtype=np.int64)
    else:
        found = _fields(text, breaks)
        if found is None:  # a field that is not a number: every file of the piece in Python
            return slow + piece
        rows_at, width, values = found
    ids = np.array([f for f, _ in piece], dtype=np.int64)
    lengths = np.array([len(d) + 1 for _, d in piece], dtype=np.int64)
    file_start = np.cumsum(lengths) - lengths
    first_line = np.searchsorted(breaks, file_start)  # global index of each file's first line
    row_file = np.searchsorted(first_line, rows_at, side="right") - 1
    line = rows_at - first_line[row_file] + 1
    parts.append((ids[row_file], line, width, values, np.zeros(len(width), dtype=bool)))
    return slow


def _one_width(text: bytes, breaks: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(the non-empty lines, their fields' values) where numpy's table reader (``np.loadtxt``, C) reads every
    non-empty line of ``text`` (number and blank bytes, LF breaks only, ending in one) as a row of one width;
    else None. The table reader splits fields at blanks and lines at LF as :func:`_fields` does; a row for each
    non-empty line means no line was blank or of another width (the reader refuses a width change), so the
    fields need not be found first. The reader parses with Python's correctly rounded conversion, is taken
    only where it accepts the whole text, and accepts no field of these bytes that ``float()`` refuses (checked
    over every field of up to 5 bytes)."""
    lengths = np.diff(breaks, prepend=-1) - 1  # (line j: text[breaks[j - 1] + 1 : breaks[j]])
    rows_at = np.flatnonzero(lengths)
    if not len(rows_at):
        return rows_at, np.zeros(0, dtype=np.float64)
    values = _table(text)
    if values is None or values.shape[0] != len(rows_at) or values.shape[1] == 0:
        return None
    return rows_at, values.reshape(-1)


def _table(text: bytes) -> np.ndarray | None:
    """``np.loadtxt`` of ``text`` as an (R, W) float64 array, or None where it refuses it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # ("input contained no data": blank lines only)
            return np.loadtxt(io.BytesIO(text), dtype=np.float64, ndmin=2, comments=None)
    except ValueError:
        return None


def _fields(text: bytes, breaks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(the non-blank lines, their field counts, the fields' values) of ``text`` (number and blank bytes,
    ending in a break at ``breaks``), or None if a field is not a whole number."""
    # fields per line: the bytes where a field starts (a number byte after a blank, a break or the start),
    # counted per line from their positions, which are fewer than the piece's bytes (an add.reduceat of the
    # byte flags into int64 casts element by element: several times slower)
    in_field = np.frombuffer(text.translate(_FIELD), dtype=np.uint8)
    first = np.empty_like(in_field)
    first[0] = in_field[0]
    np.greater(in_field[1:], in_field[:-1], out=first[1:])
    del in_field
    starts = np.flatnonzero(first)
    del first
    # (the text ends with a break: line j is [breaks[j - 1] + 1, breaks[j] + 1))
    per_line = np.diff(np.searchsorted(starts, np.concatenate([[0], breaks + 1]))).astype(np.int64)
    del starts
    values = _numbers(text, int(per_line.sum()))
    if values is None:
        return None
    rows_at = np.flatnonzero(per_line)  # non-blank lines (global line index)
    return rows_at, per_line[rows_at], values


def _numbers(text: bytes, n_fields: int) -> np.ndarray | None:
    """The ``n_fields`` whitespace-separated fields of ``text`` (bytes of the number class and blanks only) as
    float64, correctly rounded (the same value as ``float()``), or None if one is not a whole number: numpy's
    text parser (``np.fromstring``, Python's correctly rounded conversion), which stops at a field it does not
    read whole (fewer values than fields)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # (numpy warns, or raises, where it stops)
        try:
            values = np.fromstring(text, dtype=np.float64, sep=" ")
        except (DeprecationWarning, ValueError):
            return None
    return values if len(values) == n_fields else None
