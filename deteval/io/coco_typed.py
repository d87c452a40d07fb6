"""COCO bbox and keypoints results decoded by type (msgspec, when installed): columns without a dict per record.

A bbox results file is a list of ``{"image_id", "category_id", "bbox", "score"}`` records. Parsing it with
orjson makes a dict, a list and eight numbers per record, and the loader then pulls each field out of every
dict again; msgspec decodes it straight into small fixed records (a ``Struct`` per record, a tuple for the
box), about twice as fast, and the columns are read off them in four C-level passes. Keypoints results
(``"keypoints"``: 3K numbers instead of the box) alike.

This is only a shortcut: :func:`bbox_columns` (:func:`keypoints_columns`) returns columns only for a text it
can vouch that the ordinary path (:func:`deteval.io.coco.read_json` or its piece reader, then the field
checks) reads *without error and to the same arrays*, and None for anything else, after which the caller
runs the ordinary path on the same bytes, which gives its own result or error message. It vouches when:

* the text decodes as a JSON list of objects holding exactly the four keys, and perhaps a string
  ``file_name`` (Ultralytics writes it; the loader never reads it), with a box of four numbers (an unknown
  key, a missing one, a ``true``/``false``, a string or null, a whole float as an id, ``NaN``, a BOM, text
  that is not UTF-8 or not JSON: msgspec refuses it);
* no key is repeated (msgspec keeps the last value silently): the text's key tokens
  (:func:`deteval.io.jsonkeys.key_tokens`, which counts a ``\\":`` inside a string as well, never fewer than
  the keys written) are as many as the keys decoded exactly when none repeats;
* every id fits an int64, every coordinate is below 2**53 and every score below 2**63 in magnitude, all
  finite, and no box has a negative width or height. In that range the values are the ones orjson gives
  (the same integers, floats rounded to nearest by both parsers; orjson reads an integer beyond 2**64 as a
  float) and the ordinary path converts them to the same float64 (an int64 and a Python int round alike);
* keypoints: every record has as many numbers, a multiple of 3 and not 0 (the ground truth's width is
  checked by the caller, as on the ordinary path).

Anything outside (a value at the bound, an empty list, a file with ``segmentation`` or ``id`` keys next to the
box) is left to the ordinary path, which also names the record at fault.
"""

from __future__ import annotations

import importlib
from itertools import chain
from operator import attrgetter
from types import ModuleType
from typing import Any

import numpy as np

from deteval.collector import paused
from deteval.io.jsonkeys import key_tokens

__all__ = ["BboxColumns", "bbox_columns", "keypoints_columns", "typed_decoding"]

# Optional, as orjson is; imported by name so that the type check gives the same answer with or without it.
_msgspec: ModuleType | None
try:
    _msgspec = importlib.import_module("msgspec")
except ImportError:  # pragma: no cover - exercised only without msgspec
    _msgspec = None

#: (image ids int64, category ids int64, scores float64, N×4 boxes or N×3K keypoints float64) of the
#: records, in file order
BboxColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

_FIELDS = ("image_id", "category_id", "bbox", "keypoints", "score", "file_name")
_IMG, _CAT, _BOX, _KEYPOINTS, _SCORE, _NAME = (attrgetter(f) for f in _FIELDS)


def _decoders(module: ModuleType | None) -> tuple[Any, Any]:
    """The decoders of a bbox and of a keypoints results list (None, None without msgspec)."""
    if module is None:
        return None, None
    number = int | float  # (a plain ``float`` field would turn 2**53 + 1 into 2**53 before any check)
    ids = [("image_id", int), ("category_id", int)]
    bbox = module.defstruct(
        "BboxResult",
        [
            *ids,
            ("bbox", tuple[number, number, number, number]),
            ("score", number),
            ("file_name", str | None, None),  # (a JSON null: decoded as absent, then one key too many)
        ],
        forbid_unknown_fields=True,
        gc=False,  # (records hold numbers only: never part of a cycle)
    )
    keypoints = module.defstruct(
        "KeypointsResult",
        [*ids, ("keypoints", tuple[number, ...]), ("score", number)],
        forbid_unknown_fields=True,
        gc=False,
    )
    # (list[record]: ``record`` is made here)
    return module.json.Decoder(list.__class_getitem__(bbox)), module.json.Decoder(
        list.__class_getitem__(keypoints)
    )


_DECODER, _KEYPOINTS_DECODER = _decoders(_msgspec)


def typed_decoding() -> bool:
    """Whether results are decoded by type (msgspec is installed)."""
    return _DECODER is not None


def _records(text: bytes, decoder: Any, names: bool = False) -> list | None:
    """``text`` decoded as a non-empty list of records of 4 keys each (and a ``file_name`` where decoded, if
    ``names``) with no key repeated; None otherwise."""
    try:
        records: list = decoder.decode(text)
    except ValueError:  # (msgspec's DecodeError and ValidationError, UnicodeDecodeError)
        return None
    n = len(records)
    named = n - list(map(_NAME, records)).count(None) if names else 0
    return records if n and key_tokens(text) == 4 * n + named else None


def _id_score_columns(records: list) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    n = len(records)
    try:
        img = np.fromiter(map(_IMG, records), np.int64, n)
        cat = np.fromiter(map(_CAT, records), np.int64, n)
        score = np.fromiter(map(_SCORE, records), np.float64, n)
    except OverflowError:  # (an integer beyond int64, or beyond float64 for a number)
        return None
    return (img, cat, score) if (np.abs(score) < 2.0**63).all() else None  # (NaN: not below anything)


def _numbers(values: Any, count: int) -> np.ndarray | None:
    """``count`` numbers as float64, each finite and below 2**53 in magnitude; None otherwise."""
    try:
        flat = np.fromiter(values, np.float64, count)
    except OverflowError:
        return None
    return flat if (np.abs(flat) < 2.0**53).all() else None


def bbox_columns(text: bytes) -> BboxColumns | None:
    """The columns of the bbox results list ``text`` (JSON), as the ordinary loader would read them; None
    whenever that is not certain (see the module's docstring) or msgspec is not installed."""
    if _DECODER is None:
        return None
    with paused():
        records = _records(text, _DECODER, names=True)
        if records is None:
            return None
        n = len(records)
        cols = _id_score_columns(records)
        flat = _numbers(chain.from_iterable(map(_BOX, records)), 4 * n)
    if cols is None or flat is None:
        return None
    bbox = flat.reshape(n, 4)
    if (bbox[:, 2] < 0).any() or (bbox[:, 3] < 0).any():
        return None
    return (*cols, bbox)


def keypoints_columns(text: bytes) -> BboxColumns | None:
    """The columns of the keypoints results list ``text`` (JSON; N×3K keypoints, 3K: the first record's), as
    the ordinary loader would read them; None whenever that is not certain or msgspec is not installed."""
    if _KEYPOINTS_DECODER is None:
        return None
    with paused():
        records = _records(text, _KEYPOINTS_DECODER)
        if records is None:
            return None
        n = len(records)
        rows = list(map(_KEYPOINTS, records))
        k3 = len(rows[0])
        if k3 == 0 or k3 % 3 or set(map(len, rows)) != {k3}:
            return None
        cols = _id_score_columns(records)
        flat = _numbers(chain.from_iterable(rows), k3 * n)
    if cols is None or flat is None:
        return None
    return (*cols, flat.reshape(n, k3))
