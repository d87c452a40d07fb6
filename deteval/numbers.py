"""Strict number syntax for text inputs and option values: ASCII decimal notation only.

Python's ``float()`` and ``int()`` also read ``1_0`` as 10 and accept any Unicode decimal digit (``٥``, ``５``),
which no evaluation file format or reference tool means (the VOC devkit's ``str2double`` and trec_eval's
``atof`` read ``1_0`` as NaN or 1). deteval accepts ``[+-]digits[.digits][e[+-]digits]`` (and ``inf``/``nan``
where the caller refuses them with a clearer message), nothing else.
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
