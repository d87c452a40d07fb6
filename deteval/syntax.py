"""Strict text syntax for input files and option values: numbers, lines and fields.

Numbers are ASCII decimal notation only.
Python's ``float()`` and ``int()`` also read ``1_0`` as 10 and accept any Unicode decimal digit (``٥``, ``５``),
which no evaluation file format or reference tool means (the VOC devkit's ``str2double`` and trec_eval's
``atof`` read ``1_0`` as NaN or 1). deteval accepts ``[+-]digits[.digits][e[+-]digits]`` (and ``inf``/``nan``
where the caller refuses them with a clearer message), nothing else. Lines end at ``\n``, ``\r\n`` or ``\r``
only and fields are separated by ASCII whitespace only, as in the files deteval parses as bytes.
"""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.ASCII | re.I)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


def parse_decimal(text: str) -> float:
    """``float(text)`` for ASCII decimal notation only (surrounding whitespace allowed); else ValueError."""
    s = text.strip()
    if not _DECIMAL.fullmatch(s):
        raise ValueError(f"not a decimal number: {text!r}")
    return float(s)


def parse_integer(text: str) -> int:
    """``int(text)`` for ASCII digits with an optional sign only (no ``1_0``, no other scripts' digits)."""
    s = text.strip()
    if not _INTEGER.fullmatch(s) or len(s) > 40:
        raise ValueError(f"not an integer: {text!r}")
    return int(s)


#: Line ends of text files: ``\n``, ``\r\n`` and ``\r`` only. ``str.splitlines`` would also split at
#: U+2028, U+0085 and other separators that may sit inside an id or a label, shifting every line number.
_LINE_END = re.compile(r"\r\n|\r|\n")
#: Field separators: the ASCII whitespace ``bytes.split()`` splits on (``str.split()`` would also split at
#: U+00A0, U+2028, U+3000 ...).
_FIELD_SEP = re.compile(r"[ \t\n\r\f\v]+")
ASCII_SPACE = " \t\n\r\f\v"


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` split at ``\n``, ``\r\n`` and ``\r`` only (a final line end adds no line)."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def fields(line: str, maxsplit: int = 0) -> list[str]:
    """``line.split(None, maxsplit)`` on ASCII whitespace only (``maxsplit=0``: no limit)."""
    parts = _FIELD_SEP.split(line.strip(ASCII_SPACE), maxsplit)
    return [] if parts == [""] else parts
