"""COCO JSON text: files parsed (orjson when installed, else Python's ``json``), pieces of a large file
parsed, integers beyond 64 bits found and read exactly, and the scans that prove a text free of booleans or of
strings other than its records' keys.
"""

from __future__ import annotations

import importlib
import json
import mmap
import os
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError, InputFormatError
from deteval.io.guards import refuse_special
from deteval.io.jsonkeys import DuplicateKeyError, check_unique_keys, loads_unique, quote_count

# An optional accelerator, imported by name so that the type check gives the same answer with or without it.
_orjson: ModuleType | None
try:
    _orjson = importlib.import_module("orjson")
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None


def orjson_available() -> bool:
    """Whether orjson is installed (the fast parser of :func:`loads_json` and :func:`loads_piece`)."""
    return _orjson is not None


def loads_json(data: bytes, file: str, exact: bool = False) -> Any:
    """The JSON text ``data`` parsed by orjson, or by Python's ``json`` where orjson is missing or refuses it
    (``NaN``, ``Infinity``: read as floats; its errors name the line) or ``exact`` (an integer beyond 64 bits
    kept as written: see :func:`wide_integers`); a key repeated in one object raises."""
    if _orjson is not None and not exact:
        try:
            value = _orjson.loads(data)
        except ValueError:
            pass  # the slower parser below accepts NaN/Infinity and gives the error's line
        else:
            check_unique_keys(data, value, file, _orjson.dumps)
            return value
    return loads_unique(data)


def read_json(path: str | PathLike[str]) -> Any:
    """Parse a JSON file (orjson when available) with the garbage collector paused.

    A UTF-8 BOM is ignored. ``NaN``, ``Infinity`` and ``-Infinity`` tokens (which Python's ``json.dump``
    writes) are read as floats so that the record holding one is named by the validation that follows (and
    can be skipped) instead of failing the whole file; UTF-16/32 with a BOM is decoded as Python's ``json``
    does. A key repeated in one object is refused (a parser would keep the last value silently; see
    :mod:`deteval.io.jsonkeys`). Anything else that is not JSON is an :class:`InputFormatError` naming the line.
    """
    p = Path(path)
    return parse_json(json_bytes(p), p)


def json_bytes(p: Path) -> bytes:
    """The bytes of the JSON file ``p`` without a UTF-8 BOM; an unreadable or empty file raises."""
    refuse_special(p, "JSON file")  # (a pipe would block the open, /dev/zero never end)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=p) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data or data.isspace():  # (isspace scans without copying the file)
        raise InputFormatError("empty file (no JSON at all)", file=p)
    return data


def parse_json(data: bytes, p: Path, exact: bool = False) -> Any:
    """The text ``data`` of the file ``p`` parsed as :func:`read_json` says (``exact``: by Python's ``json``,
    which keeps an integer beyond 64 bits as written: see :func:`wide_integers`)."""
    with paused():
        try:
            return loads_json(data, str(p), exact)
        except DuplicateKeyError as exc:
            raise InputFormatError(str(exc), file=p) from None
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise InputFormatError(f"not UTF-8 text: {exc.reason}", file=p, record=f"line {line}") from None
        except json.JSONDecodeError as exc:
            raise InputFormatError(
                f"invalid JSON: {exc.msg} (column {exc.colno})", file=p, record=f"line {exc.lineno}"
            ) from None
        except RecursionError:
            raise InputFormatError("invalid JSON: nested too deeply", file=p) from None
        except ValueError as exc:
            raise InputFormatError(f"invalid JSON: {exc}", file=p) from None


#: Digits to ``0``, every other byte to a blank: a run of digits is then a run of ``0`` that ``bytes.find`` finds.
_DIGITS_TO_ZEROS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))


#: The fewest digits of an integer beyond int64 and uint64 (``-2**63 - 1`` and ``2**64`` have 19 and 20).
_WIDE_DIGITS = b"0" * 19


_WIDE_BLOCK = 1 << 22


#: 2**63: an integer written beyond int64/uint64 becomes, in orjson, a float at least this large in magnitude.
_WIDE = 2.0**63


def wide_integers(data: Any) -> bool:
    """Whether the JSON text ``data`` (bytes or a mapped file) may hold an integer beyond int64 and uint64
    (``2**64 + 1``, ``-2**63 - 1``): a run of 19 or more digits. orjson reads such an integer as the nearest
    float, where Python's ``json`` (and a dict given in memory) keeps the integer, which the checks then refuse
    as written; a loader that meets a value which could be such a float reads the text again exactly. Streamed
    in blocks of 4 MB (bounded memory); a pass over the whole text, so it runs only where such a value was met."""
    n = len(data)
    for lo in range(0, n, _WIDE_BLOCK):
        block = data[lo : lo + _WIDE_BLOCK + len(_WIDE_DIGITS) - 1]
        if block.translate(_DIGITS_TO_ZEROS).find(_WIDE_DIGITS) >= 0:
            return True
    return False


def mapped_file(path: str | PathLike[str], min_bytes: int = 0) -> Any | None:
    """The bytes of the file ``path`` mapped read-only (``mmap``: the page cache's pages, no copy of the file,
    no fresh memory to fault in); None if it is unreadable, empty or smaller than ``min_bytes``."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < min_bytes:
                return None
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def of_file_text(path: Path, test: Callable[[Any], bool]) -> bool:
    """``test`` of a file's text (mapped, not read whole); False if unreadable."""
    data = mapped_file(path)
    if data is None:
        return False
    try:
        with data:
            return test(data)
    except (OSError, ValueError):
        return False


def holds_wide(column: np.ndarray) -> bool:
    """A value of 2**63 or more in magnitude in the finite float column (two passes, no temporary array)."""
    return bool(column.size) and bool(column.max() >= _WIDE or column.min() <= -_WIDE)


def read_json_exact(path: Path) -> Any:
    """:func:`read_json` by Python's ``json`` where the file may hold an integer beyond 64 bits (each kept as
    written, as in a dict given in memory), else by orjson."""
    data = json_bytes(path)
    return parse_json(data, path, exact=wide_integers(data))


def only_key_strings(text: bytes, records: list) -> bool:
    """Whether the JSON text ``text`` (parsed as ``records``, a list of objects) holds no string but the
    records' own keys: its ``"`` are exactly two per key. Every string in the text takes at least two, and
    every key of a record is one of them, so that equality leaves none for another string (a value, a nested
    object's key, an escaped quote); a repeated key (one entry in the object) only adds to the count."""
    if not records or set(map(type, records)) != {dict}:
        return False
    return quote_count(text) == 2 * sum(map(len, records))


def no_json_booleans(data: Any, lo: int = 0, hi: int | None = None) -> bool:
    """Whether the JSON text ``data[lo:hi]`` (bytes or a mapping of a file) holds no ``true`` or ``false``.
    Without a ``u`` or an ``l`` (in none of a keypoints result's keys) two ``memchr`` passes tell; otherwise
    the bytes before every ``e`` are compared at once (numpy, in blocks), faster than
    ``find(b"true")`` and ``find(b"false")``."""
    hi = len(data) if hi is None else hi
    if data.find(b"u", lo, hi) < 0 and data.find(b"l", lo, hi) < 0:
        return True
    text = np.frombuffer(data, dtype=np.uint8)
    for start in range(lo, hi, _WORD_BLOCK):
        part = text[max(lo, start - 4) : min(hi, start + _WORD_BLOCK)]  # (4 bytes back: words across blocks)
        e = np.flatnonzero(part == 0x65)  # "e"
        for word in (b"tru", b"fals"):
            at = e[e >= len(word)]
            found = np.ones(at.shape[0], dtype=bool)
            for k, c in enumerate(word):
                found &= part[at - len(word) + k] == c
            if found.any():
                return False
    return True


_WORD_BLOCK = 1 << 24


_T = TypeVar("_T")


def exact_on_doubt(
    read: Callable[[], _T],
    column: Callable[[_T], np.ndarray],
    doubt: Callable[[], bool],
    exact: Callable[[], _T],
) -> _T:
    """``read()`` (of a text parsed by orjson); where it raised, or ``column`` of its table (a value read as a
    float and not bounded by the checks: an area, a score) holds one of 2**63 or more, and ``doubt()`` (the
    text may hold an integer beyond 64 bits: :func:`wide_integers`, which orjson reads as a float), ``exact()``
    (the same text parsed by Python's json): such an integer is then refused with the message a dict given in
    memory gets (not shown as the float orjson made of it, nor accepted as one)."""
    try:
        got = read()
    except DetevalError as exc:  # (a fault of the text, named by line or not at all, is no value's)
        file_fault = exc.record is None or (isinstance(exc.record, str) and exc.record.startswith("line "))
        if file_fault or not doubt():
            raise
    else:
        if not holds_wide(column(got)) or not doubt():
            return got
    return exact()


def file_without_booleans(path: Path) -> bool:
    """:func:`no_json_booleans` of a file's text (mapped, not read again); False if unreadable."""
    return of_file_text(path, no_json_booleans)


def loads_plain_piece(text: bytes, file: str) -> tuple[Any, bool]:
    """:func:`~deteval.io.coco.gt_pieces._ann_piece` of a keypoints ground truth's piece (parsed by orjson, from a text
    without ``true``/``false``) and whether its text holds no string but its records' keys, in which case no key is
    repeated (:func:`~deteval.io.coco.pieces.parsed_number_piece`) and the repeated-key check is skipped."""
    if _orjson is None:
        value = loads_piece(text, file)
        return value, type(value) is list and only_key_strings(text, value)
    value = _orjson.loads(text)
    if type(value) is list and only_key_strings(text, value):
        return value, True
    check_unique_keys(text, value, file, _orjson.dumps)
    return value, False


def loads_piece(text: bytes, file: str) -> Any:
    """Parse one piece of a large file; a repeated key raises (orjson: :class:`InputFormatError`; json:
    :class:`DuplicateKeyError`, a ValueError, so that the whole file is then read by :func:`read_json`)."""
    if _orjson is None:
        return loads_unique(text)
    value = _orjson.loads(text)
    check_unique_keys(text, value, file, _orjson.dumps)
    return value


def parsed_exactly(read: Callable[[list], _T], text: bytes) -> _T:
    """``read`` of the records of ``text`` parsed by Python's json (integers kept as written)."""
    return read(loads_unique(text))
