"""The error a whole JSON file's parse names, found from the one piece of it that fails, in bounded memory.

A large COCO results file is parsed in pieces cut between records (:mod:`deteval.io.coco`). Where a piece
does not parse, the file used to be parsed again whole by Python's ``json`` only to name the fault (``line L:
invalid JSON: Expecting ',' delimiter (column C)``): a multi-GB file then held every record before the fault
as Python objects, on an error path. :func:`piece_error` gives the same error from the piece alone:

* Python's ``json`` decodes the whole text before parsing it, so a byte that is not UTF-8 anywhere in the file
  is the error (``not UTF-8 text``), whatever the syntax: the file is decoded block by block to find it;
* else every piece before this one parsed (orjson) as a list of records, so this piece begins where the whole
  parse is at depth 1, expecting an element (a piece that parses ends with an element's ``}``, which then
  closes an element of the file's array too, and the cut's ``, {`` follows), and the whole parse meets the
  same bytes from there as the piece's parse: it fails at the same place with the same message, when that
  place is before the piece's end (the bracket added to close the piece, or a cut inside a string, could make
  a fault the whole file does not have). An unterminated string is a fault only the rest of the file can
  confirm, and a nesting too deep depends on the stack the parse starts from: both are left to the whole parse;
* the line and column are counted in the file, block by block (the column in characters, as ``json`` counts).
"""

from __future__ import annotations

import codecs
import json
from typing import Any

import numpy as np

from deteval.errors import InputFormatError
from deteval.io.jsonkeys import DuplicateKeyError, loads_unique

__all__ = ["piece_error", "utf8_fault"]

_BLOCK = 1 << 22


def utf8_fault(data: Any) -> tuple[int, str] | None:
    """The byte offset and reason of the first fault of ``data`` as UTF-8 text (``surrogatepass``, as
    ``json.loads`` decodes bytes), or None; decoded block by block (the decoder holds back a character cut
    by a block's end, and an error's offset counts from those held-back bytes)."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
    n = len(data)
    for lo in range(0, n, _BLOCK):
        held = len(decoder.getstate()[0])
        try:
            decoder.decode(bytes(data[lo : lo + _BLOCK]), lo + _BLOCK >= n)
        except UnicodeDecodeError as exc:
            return lo - held + exc.start, exc.reason
    return None


def _newlines(data: Any, hi: int) -> int:
    return sum(bytes(data[lo : min(lo + _BLOCK, hi)]).count(b"\n") for lo in range(0, hi, _BLOCK))


def _characters(data: Any, lo: int, hi: int) -> int:
    """Characters of the UTF-8 text ``data[lo:hi]``: its bytes that do not continue a character."""
    total = 0
    for a in range(lo, hi, _BLOCK):
        block = np.frombuffer(bytes(data[a : min(a + _BLOCK, hi)]), dtype=np.uint8)
        total += int(np.count_nonzero((block & 0xC0) != 0x80))
    return total


def piece_error(data: Any, lo: int, text: bytes, last: bool, file: str) -> InputFormatError | None:
    """The error :func:`deteval.io.coco.read_json` gives for the whole text ``data`` (a results file without a
    BOM), from ``text``: its piece from byte ``lo`` that orjson refused, every piece before it parsed
    (``text``: ``data[lo:hi]`` with ``[`` before it unless ``lo`` is 0, and ``]`` after it unless ``last``).
    None where the piece cannot tell (it parses with Python's json, or see the module docstring)."""
    if data[:3] == b"\xef\xbb\xbf" or data[:4].find(b"\x00") >= 0:
        return None  # (the whole file's text would begin after the BOM; json would read UTF-16 or UTF-32)
    fault = utf8_fault(data)
    if fault is not None:
        at, reason = fault
        return InputFormatError(
            f"not UTF-8 text: {reason}", file=file, record=f"line {_newlines(data, at) + 1}"
        )
    s = text.decode("utf-8", "surrogatepass")
    try:
        loads_unique(s)
    except DuplicateKeyError as exc:
        return InputFormatError(str(exc), file=file)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Unterminated string") or (not last and exc.pos >= len(s) - 1):
            return None
        at = lo + len(s[: exc.pos].encode("utf-8", "surrogatepass")) - (1 if lo else 0)
        nl = data.rfind(b"\n", 0, at)
        return InputFormatError(
            f"invalid JSON: {exc.msg} (column {_characters(data, nl + 1, at) + 1})",
            file=file,
            record=f"line {_newlines(data, at) + 1}",
        )
    except (ValueError, RecursionError):
        return None
    return None
