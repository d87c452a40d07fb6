"""A reader for the small YAML subset that Ultralytics ``data.yaml`` files use (PyYAML is not a dependency).

Supported: top-level ``key: value`` pairs; scalars (plain, ``'single'`` or ``"double"`` quoted, integers,
floats, ``true``/``false``, ``null``/``~``/empty); flow lists ``[a, b]`` and flow mappings ``{0: a, 1: b}``
of scalars; block lists (``- item`` lines) and block mappings (``key: value`` lines) of scalars, one level
deep; ``#`` comments. The value of a key that is not read (``download: |`` scripts, ``roboflow:`` blocks,
anything nested) is skipped without being interpreted. Anything else in a key that is read is a
:class:`~deteval.errors.InputFormatError` naming the line, never a guess.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from deteval.errors import InputFormatError

_KEY = re.compile(r"^([A-Za-z_][\w\-]*|'[^']*'|\"[^\"]*\"|-?\d+)\s*:(?:\s+|$)(.*)$")


def _strip_comment(text: str) -> str:
    """Drop a ``#`` comment that is outside quotes (YAML: only when preceded by whitespace or at the start)."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _scalar(text: str, file: str, line: int) -> Any:
    t = text.strip()
    if t == "" or t in ("~", "null", "Null", "NULL"):
        return None
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        body = t[1:-1]
        if t[0] == "'":
            return body.replace("''", "'")
        if "\\" in body:
            raise InputFormatError(
                "escape sequences in double-quoted strings are not supported",
                file=file,
                record=f"line {line}",
            )
        return body
    if t[0] in "'\"[]{}&*!|>%@`":
        raise InputFormatError(f"unsupported YAML value {t!r}", file=file, record=f"line {line}")
    if t in ("true", "True", "TRUE"):
        return True
    if t in ("false", "False", "FALSE"):
        return False
    if re.fullmatch(
        r"[-+]?\d+", t, re.ASCII
    ):  # (without ASCII, \d matches other scripts' digits: int('٥') is 5)
        return int(t)
    if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", t, re.ASCII):
        return float(t)
    return t


def _split_flow(body: str, file: str, line: int) -> list[str]:
    items, cur, quote = [], "", None
    for ch in body:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur += ch
        elif ch in "[]{}":
            raise InputFormatError(
                "nested flow collections are not supported", file=file, record=f"line {line}"
            )
        elif ch == ",":
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if quote:
        raise InputFormatError("unterminated quoted string", file=file, record=f"line {line}")
    items.append(cur)
    if items and items[-1].strip() == "":
        items.pop()  # a trailing comma
    return items


def _flow(text: str, file: str, line: int) -> Any:
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        return [_scalar(x, file, line) for x in _split_flow(t[1:-1], file, line)]
    if t.startswith("{") and t.endswith("}"):
        out: dict[Any, Any] = {}
        for item in _split_flow(t[1:-1], file, line):
            k, sep, v = item.partition(":")
            if not sep:
                raise InputFormatError(
                    f"flow mapping item {item.strip()!r} has no ':'", file=file, record=f"line {line}"
                )
            out[_scalar(k, file, line)] = _scalar(v, file, line)
        return out
    return _scalar(t, file, line)


def read_yaml_subset(path: str | Path, keys: set[str]) -> dict[str, Any]:
    """Top-level mapping of ``path``; only the values of ``keys`` are parsed (the others are left out)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"cannot read: {exc}", file=file) from None
    lines = text.splitlines()
    out: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        raw = lines[i]
        content = _strip_comment(raw)
        if not content.strip() or content.strip() in ("---", "..."):
            i += 1
            continue
        if raw[0] in " \t":
            raise InputFormatError("indented line outside a block", file=file, record=f"line {i + 1}")
        m = _KEY.match(content)
        if not m:
            raise InputFormatError(
                f"expected 'key: value', got {content.strip()!r}", file=file, record=f"line {i + 1}"
            )
        key, value = str(_scalar(m.group(1), file, i + 1)), m.group(2).strip()
        block_start = i + 1
        j = block_start
        while j < len(lines) and (
            not lines[j].strip() or lines[j][0] in " \t" or lines[j].lstrip().startswith("#")
        ):
            j += 1
        # Block-list items may sit at the key's own indentation ("names:\n- a").
        while j < len(lines) and lines[j].startswith("- ") and value == "":
            j += 1
            while j < len(lines) and (not lines[j].strip() or lines[j][0] in " \t"):
                j += 1
        if key in out:
            raise InputFormatError(f"duplicate key {key!r}", file=file, record=f"line {i + 1}")
        if key in keys:
            out[key] = _value(value, lines[block_start:j], file, i + 1)
        i = j
    return out


def _value(value: str, block: list[str], file: str, line: int) -> Any:
    body = [(line + 1 + k, _strip_comment(b)) for k, b in enumerate(block)]
    body = [(n, b) for n, b in body if b.strip()]
    if value:
        if body:
            raise InputFormatError(
                "a value followed by an indented block is not supported",
                file=file,
                record=f"line {body[0][0]}",
            )
        if value[0] in "|>":
            raise InputFormatError("block scalars are not supported here", file=file, record=f"line {line}")
        return _flow(value, file, line)
    if not body:
        return None
    indent = len(body[0][1]) - len(body[0][1].lstrip())
    if body[0][1].lstrip().startswith("- "):
        items = []
        for n, b in body:
            s = b.strip()
            if len(b) - len(b.lstrip()) != indent or not (s.startswith("- ") or s == "-"):
                raise InputFormatError("nested or irregular block list", file=file, record=f"line {n}")
            items.append(_scalar(s[1:], file, n))
        return items
    mapping: dict[Any, Any] = {}
    for n, b in body:
        m = _KEY.match(b.strip())
        if len(b) - len(b.lstrip()) != indent or not m:
            raise InputFormatError("nested or irregular block mapping", file=file, record=f"line {n}")
        k = _scalar(m.group(1), file, n)
        if k in mapping:
            raise InputFormatError(f"duplicate key {k!r}", file=file, record=f"line {n}")
        mapping[k] = _flow(m.group(2), file, n) if m.group(2).strip() else None
    return mapping
