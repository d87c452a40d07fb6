"""A large results file cut into pieces between records, each parsed on its own (bounded memory), and a
file's pieces split into a head and a tail.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import Any

from deteval.io.coco.json_text import loads_piece, loads_plain_piece, mapped_file
from deteval.io.guards import refuse_special

RECORD_BOUNDARY = re.compile(rb"\}\s*,\s*\{")


#: Results files larger than this are parsed in pieces of about this size (bounded memory for the objects).
CHUNK_BYTES = 4 << 20


def _result_cuts(data: Any, chunk: int | None = None) -> list[tuple[int, int]]:
    """Where a large results file is cut into pieces of about ``CHUNK_BYTES``: (end of one record, start of
    the next) after every ``CHUNK_BYTES`` (COCO results hold no lists of objects, and neither RLE strings nor
    numbers contain braces)."""
    chunk = CHUNK_BYTES if chunk is None else chunk
    cuts = []
    pos = chunk
    while pos < len(data):
        m = RECORD_BOUNDARY.search(data, pos)
        if m is None:
            break
        cuts.append((m.start() + 1, m.end() - 1))  # end of one record, start of the next
        pos = m.end() + chunk
    return cuts


def read_in_pieces(path: Path, chunk: int | None = None) -> tuple[Any, list[tuple[int, int]]] | None:
    """A results file mapped in memory (:func:`~deteval.io.coco.json_text.mapped_file`) and its cuts
    (:func:`_result_cuts`); None if unreadable or too small to cut."""
    refuse_special(path, "results file")  # (a pipe would block the open, /dev/zero never end)
    data = mapped_file(path, 2 * (CHUNK_BYTES if chunk is None else chunk))
    if data is None:
        return None
    cuts = _result_cuts(data, chunk)
    return (data, cuts) if cuts else None


def piece_bounds(data: Any, cuts: list[tuple[int, int]], i: int) -> tuple[int, int]:
    return (0 if i == 0 else cuts[i - 1][1]), (len(data) if i == len(cuts) else cuts[i][0])


def piece_text(data: Any, cuts: list[tuple[int, int]], i: int) -> bytes:
    """Piece ``i`` as the text of a JSON list (one copy: the piece with its brackets)."""
    lo, hi = piece_bounds(data, cuts, i)
    with memoryview(data) as view:
        return b"".join((b"" if i == 0 else b"[", view[lo:hi], b"" if i == len(cuts) else b"]"))


def parsed_piece(text: bytes, file: str) -> list | None:
    """A piece's text parsed as a list of records; None if it does not parse as a non-empty list whose first
    element is an object (the whole file is then parsed at once, which names the fault)."""
    try:
        records = loads_piece(text, file)
    except ValueError:
        return None
    return _records(records)


def _records(value: Any) -> list | None:
    return value if isinstance(value, list) and value and type(value[0]) is dict else None


def parsed_number_piece(text: bytes, file: str) -> tuple[list | None, bool]:
    """:func:`parsed_piece` and whether the piece holds no string but its records' keys
    (:func:`~deteval.io.coco.json_text.only_key_strings`). Where it holds, the repeated-key check is not needed: a key
    written twice in one object is one entry of the parsed dict, and its second string would leave more than two quotes
    per key kept (nested objects can only be ``{}``: any key of theirs is another string)."""
    try:
        value, numbers = loads_plain_piece(text, file)
    except ValueError:
        return None, False
    records = _records(value)
    return records, numbers and records is not None


def part_texts(
    path: str | PathLike[str], start: int, head: bool, chunk: int | None = None
) -> Iterator[bytes] | None:
    """The text (:func:`piece_text`) of each piece that begins before byte ``start`` (``head``; always the
    first piece) or of each other piece; None if the file is not read in pieces."""
    read = read_in_pieces(Path(path), chunk)
    if read is None:
        return None
    data, cuts = read
    return (
        piece_text(data, cuts, i)
        for i in range(len(cuts) + 1)
        if (i == 0 or piece_bounds(data, cuts, i)[0] < start) == head
    )


def part_pieces(
    path: str | PathLike[str], start: int, head: bool, chunk: int | None = None
) -> Iterator[list | None] | None:
    """The records of each piece of :func:`part_texts` (None for a piece that does not parse)."""
    texts = part_texts(path, start, head, chunk)
    file = str(path)
    return None if texts is None else (parsed_piece(text, file) for text in texts)


def bbox_piece_bytes() -> int:
    """The pieces of a large file in a bbox evaluation, results and ground truth, one process or two: a quarter
    of ``CHUNK_BYTES`` (which still decides which files are read in pieces). A piece's decoded records then
    stay in the processor's cache while their columns are read off them, and two processes' shares of a
    file end within a megabyte of the split byte (whole pieces overshot it by up to 4 MB)."""
    return CHUNK_BYTES // 4
