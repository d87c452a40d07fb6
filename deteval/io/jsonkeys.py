"""A key repeated in one JSON object is refused by every JSON loader of deteval.

JSON parsers keep the last value of a repeated key silently: a COCO file with ``"annotations"`` twice (the
second empty) would lose every ground truth. Python's ``json`` reports each key through
``object_pairs_hook`` (:func:`unique_keys`), but orjson, the fast parser used for large COCO files, has no
such hook. :func:`check_unique_keys` therefore checks an orjson parse cheaply, by counting:

1. the key tokens of the text (``"`` then optional whitespace then ``:``; inside a string a ``"`` is always
   escaped as ``\\"``, so the rare string holding ``\\":`` only adds to this count) must equal the keys of the
   parsed top-level object and of its records (the dicts at the first two levels). Equal: no key was lost.
   This costs one ``bytes.count`` and one regex scan of the text plus a C-level pass over the records: about
   a tenth of orjson's parse time.
2. Otherwise (deeper objects such as RLE masks, or ``\\":`` inside strings) the parsed value is serialised
   again with orjson (compact, each key once) and its key tokens counted the same way: equal counts mean no
   key was lost, as long as the text has no ``\\u0022``, ``\\u003a`` or ``\\u0020`` escape (which could hide a
   ``"``, ``:`` or blank from the count); about a third of the parse time.
3. Otherwise the text is parsed again with Python's ``json`` and :func:`unique_keys`, which names the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from itertools import chain
from typing import Any

import numpy as np

from deteval.errors import InputFormatError

__all__ = [
    "DuplicateKeyError",
    "check_unique_keys",
    "key_tokens",
    "loads_unique",
    "quote_count",
    "unique_keys",
]

_SPACED_KEY_END = re.compile(rb'"[ \t\r\n]+:')
_BLANKS = np.frombuffer(b" \t\r\n", dtype=np.uint8)
_BLOCK = 1 << 23
_HIDING_ESCAPE = re.compile(rb"\\u00(?:22|3[aA]|20)")


class DuplicateKeyError(ValueError):
    """A key appears twice in one JSON object; ``key`` is that key."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r} in one JSON object (which one is meant?)")
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads` that raises :class:`DuplicateKeyError` on a repeated key."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def loads_unique(data: bytes | str, **kwargs: Any) -> Any:
    """:func:`json.loads` refusing repeated keys (:class:`DuplicateKeyError`)."""
    return json.loads(data, object_pairs_hook=unique_keys, **kwargs)


def key_tokens(data: bytes) -> int:
    """The key tokens of the JSON text ``data`` (and any ``\\":`` inside its strings): ``data.count(b'":')``
    plus the rare spaced key ends (``"key" : value``), read from the byte after each ``"`` (vectorised, in
    blocks of bounded memory, instead of a count and a regex scan of the text)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    n, blank = 0, False
    for lo in range(0, max(buf.size - 1, 0), _BLOCK):
        part = buf[lo : lo + _BLOCK + 1]
        after = part[1:][part[:-1] == 0x22]  # the byte after each '"'
        n += int(np.count_nonzero(after == 0x3A))
        blank = blank or bool(np.isin(after, _BLANKS).any())
    if blank and _SPACED_KEY_END.search(data) is not None:
        n += len(_SPACED_KEY_END.findall(data))
    return n


def quote_count(data: bytes) -> int:
    """The ``"`` characters of the JSON text ``data``: two per string (key or value), plus one per escaped
    quote inside one. For a text whose only strings are its objects' keys and some known values (a decoder by
    type refuses any other string), twice the keys and values decoded is this count exactly when no key is
    written twice in one object: one numpy pass, where :func:`key_tokens` takes several."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 0x22))


def _record_keys(value: Any, deep: bool) -> int:
    """Keys of a record (or of each record of a list); ``deep``: also of the objects its fields hold (a segm
    result's RLE ``segmentation``: without them every such file took the slow check)."""
    if type(value) is dict:
        return len(value) + (_inner_keys(value.values()) if deep else 0)
    if type(value) is list and value and set(map(type, value)) == {dict}:
        inner = _inner_keys(chain.from_iterable(map(dict.values, value))) if deep else 0
        return sum(map(len, value)) + inner
    return 0


def _inner_keys(fields: Iterable[Any]) -> int:
    return sum(len(v) for v in fields if type(v) is dict)


def _shallow_keys(obj: Any, deep: bool = False) -> int:
    if type(obj) is dict:
        return len(obj) + sum(_record_keys(v, deep) for v in obj.values())
    return _record_keys(obj, deep)


def check_unique_keys(data: bytes, parsed: Any, file: str, dumps: Any = None) -> None:
    """Raise :class:`~deteval.errors.InputFormatError` naming ``file`` and the key if the JSON text ``data``
    repeats a key in one object (``parsed``: its value as orjson read it; ``dumps``: ``orjson.dumps``)."""
    n = key_tokens(data)
    # the records' own keys first: walking every field for objects (segm RLEs) costs 0.12 s on a 305k-record
    # bbox file, which has none
    if n == _shallow_keys(parsed) or n == _shallow_keys(parsed, deep=True):
        return
    if dumps is not None and _HIDING_ESCAPE.search(data) is None:
        try:
            if n == key_tokens(dumps(parsed)):
                return
        except (TypeError, ValueError):
            pass
    try:
        loads_unique(data)
    except DuplicateKeyError as exc:
        raise InputFormatError(str(exc), file=file) from None
    except ValueError:
        pass  # (not this check's business: the caller has parsed it)
