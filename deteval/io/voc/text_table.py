"""Whitespace-separated text tables (VOC detection result files), parsed with numpy over the whole file.

Token boundaries come from a byte mask, string columns are gathered as fixed-width byte arrays, numbers are
parsed by numpy's C parser (correctly rounded, as ``float``) after the string tokens are blanked out. A bad
line (another number of fields, a token that is not a number, a non-finite value, a coordinate beyond
±2**53, an inverted box, bytes that are not UTF-8) raises naming the file and the line, or is left out and
listed under ``on_error="skip"``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

import numpy as np

from deteval.errors import InputFormatError, ValidationError
from deteval.io.voc.files import PathLike
from deteval.tables.arrays import rows_beyond_exact

__all__ = ["read_table", "token_text"]


_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True  # the ASCII whitespace bytes.split() splits on


def _string_column(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Tokens buf[starts[i]:ends[i]] as a fixed-width bytes array, gathered without a Python loop."""
    if starts.size == 0:
        return np.empty(0, dtype="S1")
    lengths = ends - starts
    width = int(lengths.max())
    if width > 64:  # a very long token: gathering a rows x width matrix could be huge; slice instead
        raw = buf.tobytes()
        return np.array([raw[a:b] for a, b in zip(starts.tolist(), ends.tolist())], dtype=bytes)
    cols = np.arange(width)
    idx = np.minimum(starts[:, None] + cols, buf.shape[0] - 1)
    mat = np.where(cols < lengths[:, None], buf[idx], 0).astype(np.uint8)
    return np.ascontiguousarray(mat).view(f"S{width}").reshape(-1)


class _BadLines(Exception):
    """Internal: the bad lines found by one stage of the table parser, as (line, error class, reason)."""

    def __init__(self, bad: Sequence[tuple[int, type[InputFormatError | ValidationError], str]]) -> None:
        super().__init__(bad)
        self.bad = bad


def read_table(
    data: bytes,
    n_str: int,
    num_names: Sequence[str],
    path: PathLike,
    layout: str,
    on_error: str = "raise",
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, list[str]]:
    """Parse a whitespace-separated text table: ``n_str`` string columns, then numeric columns.

    Returns (string columns, numbers (rows, n_num), 1-based line of each row, skipped records). A bad line
    (another number of fields, a token that is not a number, a non-finite value, an inverted box, bytes that
    are not UTF-8) raises naming the file and the line; with ``on_error="skip"`` every such line is blanked
    out instead (so the table is exactly that of the file without those lines, line numbers unchanged) and
    described in the returned list. A NUL byte (a binary or UTF-16 file) always raises.
    """
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise InputFormatError(
            "binary data (a NUL byte) in a text detection file; save it as UTF-8 text",
            file=path,
            record=f"line {line}",
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = b"   " + data[3:]  # a UTF-8 byte-order mark: not part of the first image id
    if b"\r" in data:
        data = re.sub(rb"\r(?!\n)", b"\n", data)  # old Mac line ends; \r before \n is whitespace
    skipped: list[tuple[int, str]] = []
    blanked: set[int] = set()
    while True:
        try:
            strings, values, lines = _parse_table(data, n_str, num_names, path, layout)
            # In line order, whichever check found them.
            return strings, values, lines, [f"{path}: line {n}: {why}" for n, why in sorted(skipped)]
        except _BadLines as exc:
            first_line, cls, reason = exc.bad[0]
            if on_error != "skip" or any(line in blanked for line, _, _ in exc.bad):
                raise cls(reason, file=path, record=f"line {first_line}") from None
            skipped += [(line, reason) for line, _, reason in exc.bad]
            blanked.update(line for line, _, _ in exc.bad)
            data = _blank_lines(data, [line for line, _, _ in exc.bad])


def _blank_lines(data: bytes, lines: Sequence[int]) -> bytes:
    """``data`` with the given 1-based lines turned into spaces (newlines kept, so numbering is unchanged)."""
    buf = np.frombuffer(data, dtype=np.uint8).copy()
    nl = buf == 10
    line_of_byte = np.cumsum(nl) - nl + 1  # a newline belongs to the line it ends
    buf[np.isin(line_of_byte, np.asarray(lines, dtype=np.int64)) & ~nl] = 32
    return buf.tobytes()


def _parse_table(
    data: bytes, n_str: int, num_names: Sequence[str], path: PathLike, layout: str
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """One pass of :func:`read_table`; raises :class:`_BadLines` listing every bad line of one stage.

    Vectorised over the whole file: token boundaries from a byte mask, string columns gathered as
    fixed-width byte arrays, numbers parsed by numpy's C parser (correctly rounded, as ``float``) after the
    string tokens are blanked out.
    """
    ncols = n_str + len(num_names)
    _check_utf8(data)
    buf = np.frombuffer(data, dtype=np.uint8)
    empty = ([np.empty(0, dtype="S1")] * n_str, np.empty((0, len(num_names))), np.empty(0, dtype=np.int64))
    if buf.size == 0:
        return empty
    space = _WS[buf]
    prev_space = np.concatenate(([True], space[:-1]))
    next_space = np.concatenate((space[1:], [True]))
    starts = np.flatnonzero(~space & prev_space)
    ends = np.flatnonzero(~space & next_space) + 1
    if starts.size == 0:
        return empty
    line_of_byte = np.cumsum(buf == 10)
    tok_line = line_of_byte[starts]
    per_line = np.bincount(tok_line)
    bad = (per_line != 0) & (per_line != ncols)
    if bad.any():
        text = data.split(b"\n")
        raise _BadLines(
            [
                (
                    int(i) + 1,
                    InputFormatError,
                    f"expected {ncols} fields ({layout}), found {int(per_line[i])}: "
                    f"{text[i].decode('utf-8', 'replace').strip()[:80]!r}",
                )
                for i in np.flatnonzero(bad).tolist()
            ]
        )
    rows = starts.shape[0] // ncols
    lines = tok_line[::ncols] + 1
    strings = [_string_column(buf, starts[c::ncols], ends[c::ncols]) for c in range(n_str)]
    # Blank the string tokens, parse the rest in one C call.
    delta = np.zeros(buf.shape[0] + 1, dtype=np.int8)
    for c in range(n_str):
        delta[starts[c::ncols]] = 1
        delta[ends[c::ncols]] = -1
    numeric = buf.copy()
    numeric[np.cumsum(delta[:-1], dtype=np.int8) > 0] = 32
    values = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            values = np.fromstring(numeric.tobytes(), dtype=np.float64, sep=" ")
    except (ValueError, DeprecationWarning):
        values = None
    if values is None or values.shape[0] != rows * len(num_names):
        raise _BadLines(_bad_numbers(data, n_str, num_names, path))
    values = values.reshape(rows, len(num_names))
    _check_values(data, values, lines, num_names)
    return strings, values, lines


def _check_utf8(data: bytes) -> None:
    """Raise :class:`_BadLines` listing every line that is not UTF-8 text."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        bad_utf8 = []
        for lineno, line in enumerate(data.split(b"\n"), 1):  # error path only
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad_utf8.append((lineno, InputFormatError, f"not valid UTF-8 text ({exc.reason})"))
        raise _BadLines(bad_utf8) from None


def _check_values(data: bytes, values: np.ndarray, lines: np.ndarray, num_names: Sequence[str]) -> None:
    """Raise :class:`_BadLines` listing the rows with a non-finite value, else those with a coordinate (the
    last four columns) beyond ±2**53 as written, else the inverted boxes."""
    bad_val = ~np.isfinite(values)
    if bad_val.any():
        found = []
        for r in np.flatnonzero(bad_val.any(axis=1)).tolist():
            c = int(np.flatnonzero(bad_val[r])[0])
            found.append(
                (int(lines[r]), ValidationError, f"{num_names[c]} is not finite: {float(values[r, c])!r}")
            )
        raise _BadLines(found)
    split: list[bytes] = []

    def written(r: int) -> list[bytes]:  # (the coordinates as written: 2**53 + 1 reads as 2**53)
        if not split:
            split.extend(data.split(b"\n"))
        return split[int(lines[r]) - 1].split()[-4:]

    big = rows_beyond_exact(values[:, -4:], written)
    if big.size:
        raise _BadLines(
            [
                (
                    int(lines[r]),
                    ValidationError,
                    f"a coordinate is beyond ±2**53: {b' '.join(written(r)).decode()}",
                )
                for r in big.tolist()
            ]
        )
    inv = (values[:, -2] < values[:, -4]) | (values[:, -1] < values[:, -3])
    if inv.any():
        found = []
        for r in np.flatnonzero(inv).tolist():
            x1, y1, x2, y2 = values[r, -4:].tolist()
            found.append(
                (int(lines[r]), ValidationError, f"inverted box: x1={x1:g} y1={y1:g} x2={x2:g} y2={y2:g}")
            )
        raise _BadLines(found)


_NUMBER = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE)


def _bad_numbers(
    data: bytes, n_str: int, num_names: Sequence[str], path: PathLike
) -> list[tuple[int, type[InputFormatError], str]]:
    """Error path only: every line holding a token that is not a number (numpy's C syntax), line by line."""
    found: list[tuple[int, type[InputFormatError], str]] = []
    for lineno, line in enumerate(data.split(b"\n"), 1):
        for c, tok in enumerate(line.split()[n_str:]):
            if not _NUMBER.fullmatch(tok):
                found.append(
                    (lineno, InputFormatError, f"{num_names[c]} is not a number: {token_text(tok)!r}")
                )
                break
    if not found:  # pragma: no cover - the syntax above is what numpy's parser accepts
        raise InputFormatError("unparsable numbers", file=path)
    return found


def token_text(token: bytes | np.bytes_) -> str:
    return bytes(token).decode("utf-8", "replace")
