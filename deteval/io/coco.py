"""COCO ground truth and results → columnar numpy tables.

Accepted inputs (``load_coco_gt`` / ``load_coco_results``):

* a path to a JSON file (parsed with ``orjson`` when installed, else ``json``; the garbage collector is off
  while the millions of small objects are built, which roughly halves parse time on large files);
* the parsed JSON (a dict for ground truth, a list of dicts for results);
* a ``pycocotools.coco.COCO`` object (its ``dataset``);
* for results, an N×7 numpy array ``[image_id, x, y, w, h, score, category_id]`` as in pycocotools'
  ``loadNumpyAnnotations``.

Only the fields the COCO protocol reads are extracted, into arrays of length N. Validation raises a
:class:`~deteval.errors.DetevalError` naming the file and the record (``annotations[17]`` for ground truth,
the JSON array index for results): unknown image or category id, a bbox that is not 4 numbers, NaN or inf,
negative width or height, duplicate ids. An empty results list is valid (pycocotools crashes on it).

Results follow pycocotools' ``loadRes``, which picks one branch from the *first* result record and applies
it to every record (:func:`loadres_branch`):

* a non-empty ``bbox``: every record needs a ``bbox``; ``area`` is ``w*h`` (even for segm evaluation); a
  record without a ``segmentation`` gets its box polygon;
* else a ``segmentation``: every record needs one; ``area`` is the mask area; each record keeps its own
  ``bbox``, and only a record without one gets the mask's box (``toBbox``);
* else ``keypoints``: ``bbox`` and ``area`` come from the keypoints' extent.

A pycocotools ``COCO`` object (what ``loadRes`` returned) is read as COCOeval reads it: its records' ``area``,
``bbox``, ``segmentation`` and ``keypoints`` as they are. segm evaluation needs a ``segmentation`` on every
record and keypoints evaluation ``keypoints`` on every record (pycocotools reads the latter only where the
image and category have ground truth).
"""

from __future__ import annotations

import importlib
import json
import math
import mmap
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain
from operator import itemgetter
from os import PathLike
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar, cast

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io import coco_typed
from deteval.io.arrays import rows_beyond_exact
from deteval.io.coco_typed import bbox_columns, gt_annotations, gt_box_columns, struct_field, typed_decoding
from deteval.io.guards import refuse_special
from deteval.io.json_errors import piece_error
from deteval.io.jsonkeys import DuplicateKeyError, check_unique_keys, loads_unique, unique_keys
from deteval.io.rle import check_rles
from deteval.io.skipping import check_on_error as _check_on_error
from deteval.io.skipping import load_skipping

# An optional accelerator, imported by name so that the type check gives the same answer with or without it.
_orjson: ModuleType | None
try:
    _orjson = importlib.import_module("orjson")
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None

__all__ = [
    "CocoGroundTruth",
    "CocoResults",
    "concat_results",
    "load_coco_gt",
    "load_coco_results",
    "loadres_branch",
    "read_json",
]


def read_json(path: str | PathLike[str]) -> Any:
    """Parse a JSON file (orjson when available) with the garbage collector paused.

    A UTF-8 BOM is ignored. ``NaN``, ``Infinity`` and ``-Infinity`` tokens (which Python's ``json.dump``
    writes) are read as floats so that the record holding one is named by the validation that follows (and
    can be skipped) instead of failing the whole file; UTF-16/32 with a BOM is decoded as Python's ``json``
    does. A key repeated in one object is refused (a parser would keep the last value silently; see
    :mod:`deteval.io.jsonkeys`). Anything else that is not JSON is an :class:`InputFormatError` naming the line.
    """
    p = Path(path)
    return _parse_json(_json_bytes(p), p)


def _json_bytes(p: Path) -> bytes:
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


def _parse_json(data: bytes, p: Path, exact: bool = False) -> Any:
    """The text ``data`` of the file ``p`` parsed as :func:`read_json` says (``exact``: by Python's ``json``,
    which keeps an integer beyond 64 bits as written: see :func:`wide_integers`)."""
    with paused():
        try:
            if _orjson is not None and not exact:
                try:
                    value = _orjson.loads(data)
                except ValueError:
                    pass  # the slower parser below accepts NaN/Infinity and gives the error's line
                else:
                    check_unique_keys(data, value, str(p), _orjson.dumps)
                    return value
            return loads_unique(data)
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
    in blocks of 4 MB (bounded memory); about 1 ms/MB, so it runs only where such a value was met."""
    n = len(data)
    for lo in range(0, n, _WIDE_BLOCK):
        block = data[lo : lo + _WIDE_BLOCK + len(_WIDE_DIGITS) - 1]
        if block.translate(_DIGITS_TO_ZEROS).find(_WIDE_DIGITS) >= 0:
            return True
    return False


def _of_file_text(path: Path, test: Callable[[Any], bool]) -> bool:
    """``test`` of a file's text (mapped, not read whole); False if unreadable."""
    try:
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return test(data)
    except (OSError, ValueError):
        return False


def _holds_wide(column: np.ndarray) -> bool:
    """A value of 2**63 or more in magnitude in the finite float column (two passes, no temporary array)."""
    return bool(column.size) and bool(column.max() >= _WIDE or column.min() <= -_WIDE)


def wide_scores(r: CocoResults, text: Any) -> bool:
    """Whether results read by a faster path than :func:`load_coco_results` (orjson) hold a score that may
    have been written as an integer beyond 64 bits (one of 2**63 or more, and a run of 19 digits in ``text``,
    a path or the bytes read, looked at only then): that loader reads such an integer as written and refuses
    it, so it must read them instead."""
    if not _holds_wide(r.score):
        return False
    return (
        _of_file_text(Path(text), wide_integers) if isinstance(text, (str, PathLike)) else wide_integers(text)
    )


def _read_json_exact(path: Path) -> Any:
    """:func:`read_json` by Python's ``json`` where the file may hold an integer beyond 64 bits (each kept as
    written, as in a dict given in memory), else by orjson."""
    data = _json_bytes(path)
    return _parse_json(data, path, exact=wide_integers(data))


# --------------------------------------------------------------------------------------------- helpers


def _rec(where: str | None, i: int) -> str | int:
    return i if where is None else f"{where}[{i}]"


def _field(records: list, key: str, file: str, where: str | None, default: Any = ...) -> list:
    """``[r[key] for r in records]`` with a precise error for a non-object or a missing key (records decoded
    by type: :func:`deteval.io.coco_typed.struct_field`)."""
    if records and not isinstance(records[0], dict) and hasattr(records[0], "__struct_fields__"):
        values, missing = struct_field(records, key, default)
        if missing >= 0:
            raise InputFormatError(f"missing field {key!r}", file=file, record=_rec(where, missing))
        return values
    try:
        if default is ...:
            return [r[key] for r in records]
        return [r.get(key, default) for r in records]
    except (KeyError, TypeError, AttributeError):
        for i, r in enumerate(records):
            if not isinstance(r, dict):
                raise InputFormatError(
                    f"expected a JSON object, got {type(r).__name__}", file=file, record=_rec(where, i)
                ) from None
            if default is ... and key not in r:
                raise InputFormatError(f"missing field {key!r}", file=file, record=_rec(where, i)) from None
        raise  # pragma: no cover - unreachable


def _first_bad(values: list, ok: Callable[[Any], bool]) -> int:
    for i, v in enumerate(values):
        if not ok(v):
            return i
    return -1  # pragma: no cover


def _numeric(values: list) -> np.ndarray | None:
    """``np.array(values)`` if it is a plain numeric array (no strings, None or nested objects), else None."""
    try:
        arr = np.array(values)
    except (ValueError, TypeError):
        return None
    return arr if arr.dtype.kind in "iuf" else None


def _floats(values: list, what: str, file: str, where: str | None, *, flags: bool = False) -> np.ndarray:
    """Numbers as float64, finite; ``flags``: only 0 or 1 (``true``/``false`` accepted too)."""
    n = len(values)
    arr = _numeric(values) if n else np.zeros(0)
    if flags and arr is None and n and set(map(type, values)) == {bool}:
        arr = np.array(values)  # all true/false
    if arr is not None and not flags and not _BOOL_SET.isdisjoint(map(type, values)):
        arr = None  # true/false is not a score or an area (numpy would read it as 1/0)
    if arr is None or arr.shape != (n,):

        def ok(v: Any) -> bool:  # one value alone: a number numpy can hold (not 10**400)
            if isinstance(v, _BOOL_TYPES):
                return flags
            return _is_real(v) and _numeric([v]) is not None

        i = _first_bad(values, ok)
        v = values[i]
        too_big = _is_real(v) and not isinstance(v, float)  # (an integer numpy holds in no int64/uint64)
        raise InputFormatError(
            f"{what} must be a number{' below 2**64' if too_big else ''}, got {_shown(v)}",
            file=file,
            record=_rec(where, i),
        ) from None
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"{what} is {values[i]!r}: must be finite", file=file, record=_rec(where, i))
    if flags:
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValidationError(
                f"{what} must be 0 or 1, got {values[i]!r}", file=file, record=_rec(where, i)
            )
    return arr


def _boxes(values: list, file: str, where: str | None) -> np.ndarray:
    """An N×4 float64 array of COCO ``[x, y, w, h]`` boxes, validated."""
    n = len(values)
    boxes = _numeric(values) if n else np.zeros((0, 4))
    if boxes is None or boxes.shape != (n, 4):
        for i, b in enumerate(values):
            if not isinstance(b, (list, tuple, np.ndarray)):
                raise InputFormatError(
                    f"bbox must be a list of 4 numbers, got {b!r}", file=file, record=_rec(where, i)
                )
            if len(b) != 4:
                raise InputFormatError(
                    f"bbox must have 4 numbers [x, y, w, h], got {len(b)}", file=file, record=_rec(where, i)
                )
            if not all(map(_is_real, b)):
                raise InputFormatError(f"bbox must hold numbers, got {b!r}", file=file, record=_rec(where, i))
            if any(abs(v) > MAX_COORD for v in b):  # (an integer numpy cannot hold in one array: 2**64)
                raise ValidationError(f"bbox {b!r} is beyond \u00b12**53", file=file, record=_rec(where, i))
        raise InputFormatError("bbox values must be numbers", file=file)  # pragma: no cover
    _refuse_bools(values, boxes, "bbox", file, where)
    boxes = boxes.astype(np.float64, copy=False)
    bad = ~np.isfinite(boxes).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"bbox {values[i]!r} is not finite", file=file, record=_rec(where, i))
    neg = (boxes[:, 2] < 0) | (boxes[:, 3] < 0)
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise ValidationError(
            f"bbox {values[i]!r} has a negative width or height", file=file, record=_rec(where, i)
        )
    _check_magnitude(boxes, "bbox", values, file, where)
    return boxes


#: Coordinates beyond this are refused: areas overflow to inf and IoUs to NaN (as in the VOC loaders).
MAX_COORD = 2.0**53

#: ``true``/``false`` (and numpy's booleans): numpy reads them as 1/0 inside an array of numbers.
_BOOL_TYPES = (bool, np.bool_)
_BOOL_SET = frozenset(_BOOL_TYPES)


def _refuse_bools(values: list, mat: np.ndarray, what: str, file: str, where: str | None) -> None:
    """Refuse a ``true``/``false`` that ``np.array`` read as 1/0 into the rows of ``mat`` (from ``values``).
    Only rows holding a 0 or a 1 can hide one, so only their items' types are looked at (a C-level pass)."""
    rows = np.flatnonzero(((mat == 0) | (mat == 1)).any(axis=1))
    if rows.size == 0:
        return
    picked = [values[i] for i in rows.tolist()]
    if _BOOL_SET.isdisjoint(map(type, chain.from_iterable(picked))):
        return
    j = _first_bad(picked, lambda r: _BOOL_SET.isdisjoint(map(type, r)))
    i = int(rows[j])
    raise InputFormatError(
        f"{what} must hold numbers, got {values[i]!r} (true/false is not a number)",
        file=file,
        record=_rec(where, i),
    )


def _check_magnitude(mat: np.ndarray, what: str, values: list, file: str, where: str | None) -> None:
    """Refuse a row of ``mat`` beyond ±2**53 as written in ``values`` (2**53 + 1 reads as 2**53)."""
    big = rows_beyond_exact(mat, values.__getitem__)
    if big.size:
        i = int(big[0])
        raise ValidationError(f"{what} {values[i]!r} is beyond \u00b12**53", file=file, record=_rec(where, i))


def _id_array(values: list, what: str, file: str, where: str | None, *, strings: bool = True) -> np.ndarray:
    """Ids as int64 (or str, if ``strings``) array: integers (Python or numpy), or, if ``strings``, all
    strings. A whole float below 2**53 (``15.0``) is the integer it equals, as in pycocotools' dict index (JSON
    has one number type; the value is kept exactly); ``true``/``false`` are refused, although that index would
    find them under 1 and 0, so that no id is ever read as another value than the one written."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    types = set(map(type, values))
    if not all(_id_type(t, strings) for t in types):
        i = _first_bad(values, lambda v: _id_type(type(v), strings))
        _bad_id(values[i], what, file, _rec(where, i), strings)
    try:
        arr = np.array(values)
    except (ValueError, TypeError, OverflowError):
        arr = None
    if arr is not None and arr.ndim == 1:
        if arr.dtype.kind == "i":
            return arr.astype(np.int64)
        if arr.dtype.kind == "u" and (arr < 2**63).all():
            return arr.astype(np.int64)
        if strings and arr.dtype.kind == "U" and types == {str}:
            return arr
        if arr.dtype.kind == "f" and (np.abs(arr) < 2.0**53).all() and (arr == np.trunc(arr)).all():
            return arr.astype(
                np.int64
            )  # (below 2**53 every int and whole float is exact; NaN fails the test)
    i = _first_bad(values, _exact_id)
    if i < 0:  # big integers next to whole floats: each exact on its own, so read one by one
        return np.array([int(v) for v in values], dtype=np.int64)
    _bad_id(values[i], what, file, _rec(where, i), strings)
    raise AssertionError  # pragma: no cover - _bad_id raises


def _exact_id(v: Any) -> bool:
    if isinstance(v, (float, np.floating)):
        return abs(v) < 2.0**53 and float(v).is_integer()  # (False for NaN)
    return type(v) is not str and -(2**63) <= v < 2**63


def _id_type(t: type, strings: bool) -> bool:
    return t is int or t is float or issubclass(t, (np.integer, np.floating)) or (strings and t is str)


def _bad_id(v: Any, what: str, file: str, record: str | int, strings: bool) -> None:
    hint = ""
    if isinstance(v, _BOOL_TYPES):
        hint = " (true/false is not an id)"
    elif isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer():
        hint = " (a whole float is read as an id only below 2**53, where it is exact)"
    raise InputFormatError(
        f"{what} must be an integer within ±2**63{' (or all ids strings)' if strings else ''}, got {v!r}{hint}",
        file=file,
        record=record,
    )


def _index_of(ids: np.ndarray, table: np.ndarray, what: str, file: str, where: str | None) -> np.ndarray:
    """Position of each id in the sorted unique ``table``; an unknown id raises naming the record."""
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    if table.size == 0 or (ids.dtype.kind == "U") != (table.dtype.kind == "U"):
        raise ValidationError(f"unknown {what} {ids[0].item()!r}", file=file, record=_rec(where, 0))
    if table.dtype.kind == "i" and int(table[-1]) - int(table[0]) < 16 * table.size + (1 << 16):
        # integer ids within a range not much wider than the table: a lookup table, not a binary search
        lo, span = table[0], int(table[-1]) - int(table[0])
        lut = np.full(span + 1, -1, dtype=np.int64)
        lut[table - lo] = np.arange(table.size)
        inside = (ids >= lo) & (ids <= table[-1])
        pos_c = lut[np.where(inside, ids - lo, 0)]
        bad = ~inside | (pos_c < 0)
    else:
        pos = np.searchsorted(table, ids)
        pos_c = np.minimum(pos, table.size - 1)
        bad = table[pos_c] != ids
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"unknown {what} {ids[i].item()!r}", file=file, record=_rec(where, i))
    return pos_c.astype(np.int64, copy=False)


def _unique_ids(ids: np.ndarray, what: str, file: str, where: str) -> np.ndarray:
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        j = int(np.flatnonzero(counts > 1)[0])
        dup = np.flatnonzero(ids == uniq[j])
        raise ValidationError(
            f"duplicate {what} {uniq[j].item()!r} (also at index {int(dup[0])})",
            file=file,
            record=f"{where}[{int(dup[1])}]",
        )
    return uniq


# --------------------------------------------------------------------------------------------- tables


@dataclass
class CocoGroundTruth:
    """Columnar COCO ground truth. Images and categories are sorted by id (pycocotools' order).

    Annotation arrays (length N, in file order): ``ann_id``, ``img`` (index into ``image_ids``), ``cat``
    (index into ``cat_ids``), ``bbox`` (N×4 xywh), ``area``, ``iscrowd``, ``ignore`` (the user's ``ignore``
    flag, False when absent), ``num_keypoints`` (-1 when absent), ``keypoints`` (N×3K or None),
    ``segmentation`` (the raw objects, kept only when asked for).
    """

    image_ids: np.ndarray
    image_hw: np.ndarray
    cat_ids: np.ndarray
    cat_names: list[str]
    ann_id: np.ndarray
    img: np.ndarray
    cat: np.ndarray
    bbox: np.ndarray
    area: np.ndarray
    iscrowd: np.ndarray
    ignore: np.ndarray
    num_keypoints: np.ndarray
    keypoints: np.ndarray | None = None
    segmentation: list | None = None
    source: str = "<in-memory ground truth>"
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    #: the file's ``images`` and ``categories`` lists as read (file order), for protocols that need more
    #: fields than COCO's (LVIS: ``neg_category_ids``, ``not_exhaustive_category_ids``, ``frequency``)
    image_records: list | None = None
    category_records: list | None = None
    #: the file's ``images`` list as indices into ``image_ids`` (tidecv walks images in file order)
    image_file_order: np.ndarray | None = None
    #: a subset of the file's annotations (an image shard's): each one's index in the file's ``annotations``,
    #: which errors name; None: all of them, in file order
    file_rows: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.ann_id.shape[0])


class MaskBoxes:
    """``toBbox`` of validated, converted RLEs, computed when first needed (:class:`BoxColumn`)."""

    def __init__(self, rles: list, file: str) -> None:
        self.rles, self.file = rles, file

    def compute(self) -> np.ndarray:
        return _mask_boxes(self.rles, self.file)


class BoxColumn:
    """The ``bbox`` field of :class:`CocoResults`: an N×4 array, or a :class:`MaskBoxes` that is computed (once)
    when the field is first read. loadRes gives every segm result without a ``bbox`` its mask's box, which
    segm evaluation never reads (``toBbox`` of 61k masks: 0.12 s); only what reads the field pays for it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> np.ndarray:
        if obj is None:
            raise AttributeError(self.slot)  # (a dataclass field without a default)
        value = obj.__dict__[self.slot]
        if isinstance(value, MaskBoxes):
            value = obj.__dict__[self.slot] = value.compute()
        return value

    def __set__(self, obj: Any, value: np.ndarray | MaskBoxes) -> None:
        obj.__dict__[self.slot] = value


def stored_boxes(r: CocoResults) -> np.ndarray | MaskBoxes:
    """``r.bbox`` as stored: a :class:`MaskBoxes` not yet computed stays so."""
    value: np.ndarray | MaskBoxes = r.__dict__["_bbox"]
    return value


def concat_boxes(parts: Sequence[CocoResults]) -> np.ndarray | MaskBoxes:
    """The ``bbox`` columns of ``parts`` one after the other; still to be computed if all of them are."""
    stored = [stored_boxes(p) for p in parts]
    if stored and all(isinstance(b, MaskBoxes) for b in stored):
        lazy = [b for b in stored if isinstance(b, MaskBoxes)]
        return MaskBoxes(list(chain.from_iterable(b.rles for b in lazy)), lazy[0].file)
    return np.concatenate([p.bbox for p in parts])


@dataclass
class CocoResults:
    """Columnar COCO results (length N, in input order; ``det_id`` = 1..N as loadRes assigns).

    ``kind``: the loadRes branch (``"bbox"``, ``"segm"``, ``"keypoints"``) or ``"loaded"`` (read from a
    pycocotools ``COCO``). ``bbox`` is NaN where segm/keypoints evaluation, which never reads it, got no box;
    segm results without boxes get their masks' boxes, computed when ``bbox`` is first read (:class:`BoxColumn`).
    A copy with other values is :meth:`replace`, which leaves them so: ``dataclasses.replace`` reads every field
    it is not given, ``bbox`` too, and so computes them.
    """

    img: np.ndarray
    cat: np.ndarray
    score: np.ndarray
    bbox: BoxColumn = BoxColumn()
    area: np.ndarray  # type: ignore[misc]  # (bbox has no default: BoxColumn raises on class access)
    keypoints: np.ndarray | None = None
    segmentation: list | None = None
    kind: str = "bbox"
    source: str = "<in-memory results>"
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    #: segm branch: every mask as a pycocotools RLE, validated and converted at load (the matcher reads these
    #: instead of validating ``segmentation`` again); None otherwise
    rles: list | None = None
    #: segm masks validated but not made into dicts (their places in ``segmentation`` and ``rles`` hold None):
    #: a :class:`~deteval.io.coco_segm_tail.PendingMasks` whose texts the matcher reads them from; set by
    #: :func:`~deteval.detection.coco.evaluate_coco` on results it read itself
    lazy_masks: Any = None

    def __len__(self) -> int:
        return int(self.score.shape[0])

    def replace(self, **changes: Any) -> CocoResults:
        """``dataclasses.replace(self, **changes)``, the masks' boxes still to be computed if they are (the
        stored ``bbox`` is passed on unless ``changes`` has one)."""
        changes.setdefault("bbox", stored_boxes(self))
        return replace(self, **changes)


def _is_coco_object(obj: Any) -> bool:
    """Whether ``obj`` is a pycocotools ``COCO``; one whose index (``anns``, ``imgs``, ``cats``) no longer
    counts what its ``dataset`` holds (appended to without ``createIndex()``) is refused: pycocotools would
    evaluate the index, deteval reads ``dataset``, and the two would differ."""
    if not (hasattr(obj, "dataset") and hasattr(obj, "createIndex") and isinstance(obj.dataset, dict)):
        return False
    for index, key in (("anns", "annotations"), ("imgs", "images"), ("cats", "categories")):
        held, listed = getattr(obj, index, None), obj.dataset.get(key)
        if isinstance(held, dict) and isinstance(listed, list) and len(held) != len(listed):
            raise ValidationError(
                f"the COCO object's index holds {len(held)} {key} but its dataset {len(listed)}: call "
                "createIndex() after changing dataset (pycocotools evaluates the index)",
                file="<pycocotools COCO>",
            )
    return True


def plain_keypoints(values: list, numbers: bool = False) -> np.ndarray | None:
    """``values`` (lists of numbers from a JSON text without ``true``/``false``) as an N×3K float64 matrix in
    one ``np.array`` call, if it gives one that :func:`_keypoint_matrix` would accept as it is (finite, within
    ±2**53, 3K > 0 numbers per record, the same K): strings, ``null``, nesting and rows of unequal length give
    another dtype or shape, or an error. None otherwise (the record-by-record checks then name the fault). Only
    booleans would pass unseen (as 1/0), hence the condition on the text. A value of magnitude 2**53 in the
    matrix is left to those checks too: the integer 2**53 + 1 becomes 2**53 in float64, and only the value as
    written tells them apart.

    ``numbers``: the text is also known to hold no string but the records' keys (:func:`only_key_strings`),
    so that the values are numbers, ``null``, lists or ``{}``: then one ``np.fromiter`` over them all builds
    the matrix, about a third faster than ``np.array`` (no pass to find the dtype and shape), once every row
    has the same length. It reads ``null`` as NaN (refused below, as the NaN would be) and refuses a list or
    ``{}`` among the numbers and an integer beyond float64; the numbers it keeps are the floats themselves or
    integers below 2**53, exact in float64, which ``np.array`` gives too."""
    if numbers:
        mat = _number_rows(values)
        if mat is None:
            return None
    else:
        try:
            mat = np.array(values)
        except (ValueError, TypeError, OverflowError):
            return None
        if mat.ndim != 2 or mat.dtype.kind not in "iuf" or mat.shape[1] == 0 or mat.shape[1] % 3:
            return None
        mat = mat.astype(np.float64, copy=False)
    return mat if np.isfinite(mat).all() and not (np.abs(mat) >= MAX_COORD).any() else None


def _number_rows(values: list) -> np.ndarray | None:
    """:func:`plain_keypoints`' matrix from rows proven free of strings and booleans; None where any row is
    not a list of 3K > 0 items, the same K, or an item is not a number (``null``: NaN, left to the caller)."""
    try:
        lens = set(map(len, values))
    except TypeError:  # (a number or null instead of a list)
        return None
    if len(lens) != 1:
        return None
    (width,) = lens
    if width == 0 or width % 3:
        return None
    try:
        flat = np.fromiter(chain.from_iterable(values), dtype=np.float64, count=len(values) * width)
    except (TypeError, ValueError, OverflowError):
        return None
    return flat.reshape(len(values), width)


def only_key_strings(text: bytes, records: list) -> bool:
    """Whether the JSON text ``text`` (parsed as ``records``, a list of objects) holds no string but the
    records' own keys: its ``"`` are exactly two per key. Every string in the text takes at least two, and
    every key of a record is one of them, so that equality leaves none for another string (a value, a nested
    object's key, an escaped quote); a repeated key (one entry in the object) only adds to the count."""
    if not records or set(map(type, records)) != {dict}:
        return False
    return int(np.count_nonzero(np.frombuffer(text, dtype=np.uint8) == 0x22)) == 2 * sum(map(len, records))


def no_json_booleans(data: Any, lo: int = 0, hi: int | None = None) -> bool:
    """Whether the JSON text ``data[lo:hi]`` (bytes or a mapping of a file) holds no ``true`` or ``false``.
    Without a ``u`` or an ``l`` (in none of a keypoints result's keys) two ``memchr`` passes tell; otherwise
    the bytes before every ``e`` are compared at once (numpy, in blocks), about 4 times as fast as
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


def _keypoint_matrix(
    values: list,
    file: str,
    where: str | None,
    what: str,
    *,
    width: int | None = None,
    gt: bool = False,
    plain: bool = False,
    numbers: bool = False,
) -> np.ndarray:
    """An N×3K float64 matrix; ``width``: the 3K every record must have (the ground truth's), else the first
    record's. ``gt``: visibility flags must be 0, 1 or 2. ``plain``: the values come from a text without
    ``true``/``false`` (:func:`plain_keypoints` then builds the matrix at once); ``numbers``: and without
    strings but the records' keys (:func:`only_key_strings`)."""
    n = len(values)
    mat = plain_keypoints(values, numbers) if plain and n else None
    if mat is not None and (width is None or mat.shape[1] == width):
        if gt:
            _check_visibility(mat, file, where, what)
        return mat
    if set(map(type, values)) != {list} and not all(map(_is_list, values)):  # (the first: one C-level pass)
        i = _first_bad(values, _is_list)
        raise InputFormatError(
            f"{what} must be a list of numbers, got {str(values[i])[:40]}", file=file, record=_rec(where, i)
        )
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    if n == 0:
        return np.zeros((0, width or 0), dtype=np.float64)
    k3 = int(lens[0]) if width is None else width
    if (lens != k3).any() or k3 % 3 or k3 == 0:
        i = int(np.flatnonzero(lens != k3)[0]) if (lens != k3).any() else 0
        raise InputFormatError(
            f"{what} must have 3K numbers, the same K for every record "
            f"(expected {k3 if k3 and k3 % 3 == 0 else '3K'}, got {int(lens[i])})",
            file=file,
            record=_rec(where, i),
        )
    try:
        # (fromiter alone would read True as 1.0 and "12.5" as 12.5; the second test only for unusual types)
        if not set(map(type, chain.from_iterable(values))) <= {int, float} and not all(
            map(_is_real, chain.from_iterable(values))
        ):
            raise TypeError
        flat = np.fromiter(chain.from_iterable(values), dtype=np.float64, count=int(lens.sum()))
    except (TypeError, ValueError, OverflowError):
        i = _first_bad(values, lambda b: all(map(_is_real, b)) and all(abs(v) <= _FLOAT_MAX for v in b))
        raise InputFormatError(
            f"{what} must hold numbers, got {str(values[i])[:40]}", file=file, record=_rec(where, i)
        ) from None
    mat = flat.reshape(n, k3)
    bad = ~np.isfinite(mat).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"{what} are not finite", file=file, record=_rec(where, i))
    _check_magnitude(mat, what, values, file, where)
    if gt:
        _check_visibility(mat, file, where, what)
    return mat


def _check_visibility(mat: np.ndarray, file: str, where: str | None, what: str) -> None:
    v = mat[:, 2::3]
    bad = ((v != 0) & (v != 1) & (v != 2)).any(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(
            f"{what} visibility flags must be 0, 1 or 2, got {sorted(set(v[i].tolist()))}",
            file=file,
            record=_rec(where, i),
        )


_FLOAT_MAX = float(np.finfo(np.float64).max)


def _is_real(v: Any) -> bool:
    """A Python or numpy integer or float, not a bool."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _shown(v: Any) -> str:
    """``repr(v)``, cut to 60 characters (an integer of 400 digits is not worth printing whole)."""
    r = repr(v)
    return r if len(r) <= 60 else f"{r[:50]}...({len(r)} characters)"


def _is_list(v: Any) -> bool:
    return isinstance(v, (list, tuple, np.ndarray))


def _ann_columns(
    anns: list,
    file: str,
    keep_segmentation: bool,
    need_keypoints: bool,
    kp_width: int | None = None,
    crowd_optional: bool = False,
    plain: bool = False,
    numbers: bool = False,
) -> dict[str, Any]:
    """The annotation fields the protocol reads, as arrays (ids not yet mapped to indices). ``kp_width``: the
    3K every record's keypoints must have (default: the first record's). ``crowd_optional``: a missing
    ``iscrowd`` means 0 (LVIS has no such field). ``plain``: read from a text without ``true``/``false``;
    ``numbers``: and without strings but the records' keys (:func:`only_key_strings`)."""
    where = "annotations"
    ann_id = _id_array(_field(anns, "id", file, where), "annotation id", file, where, strings=False)
    crowd_raw = _field(anns, "iscrowd", file, where, **({"default": 0} if crowd_optional else {}))
    ign_raw = _field(anns, "ignore", file, where, default=0)
    cols: dict[str, Any] = {
        "ann_id": ann_id,
        "image_id": _id_array(_field(anns, "image_id", file, where), "image_id", file, where),
        "category_id": _id_array(_field(anns, "category_id", file, where), "category_id", file, where),
        "bbox": _boxes(_field(anns, "bbox", file, where), file, where),
        "area": _non_negative(_field(anns, "area", file, where), "area", file, where),
        "iscrowd": _floats(crowd_raw, "iscrowd", file, where, flags=True) != 0,
        "ignore": _floats(ign_raw, "ignore", file, where, flags=True) != 0,
        "num_keypoints": np.full(len(anns), -1, dtype=np.int64),
        "keypoints": None,
        "segmentation": _field(anns, "segmentation", file, where) if keep_segmentation else None,
    }
    if need_keypoints:
        nk_raw = _field(anns, "num_keypoints", file, where)
        nk = _non_negative(nk_raw, "num_keypoints", file, where)
        bad = (nk != np.round(nk)) | (nk > 2**31)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValidationError(
                f"num_keypoints must be a whole number, got {nk_raw[i]!r}", file=file, record=_rec(where, i)
            )
        cols["num_keypoints"] = nk.astype(np.int64)
        cols["keypoints"] = _keypoint_matrix(
            _field(anns, "keypoints", file, where),
            file,
            where,
            "keypoints",
            width=kp_width,
            gt=True,
            plain=plain,
            numbers=numbers,
        )
    return cols


def _non_negative(values: list, what: str, file: str, where: str) -> np.ndarray:
    """Finite numbers >= 0 (a negative area would make OKS exceed 1 and area ranges meaningless)."""
    arr = _floats(values, what, file, where)
    neg = arr < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise ValidationError(
            f"{what} must not be negative, got {values[i]!r}", file=file, record=_rec(where, i)
        )
    return arr


def _image_size(images: list, key: str, file: str) -> np.ndarray:
    """Image heights or widths (needed to rasterise polygons): whole numbers >= 0, -1 when absent."""
    arr = _floats(_field(images, key, file, "images", default=-1), key, file, "images")
    bad = (arr != np.round(arr)) | (arr < -1) | (arr > MAX_COORD)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(
            f"{key} must be a whole number of pixels, got {arr[i]!r}", file=file, record=f"images[{i}]"
        )
    return arr.astype(np.int64)


def _concat_columns(parts: list[dict[str, Any]]) -> dict[str, Any]:
    if len(parts) == 1:
        return parts[0]
    out: dict[str, Any] = {}
    for key in parts[0]:
        vals = [p[key] for p in parts]
        if vals[0] is None:
            out[key] = None
        elif isinstance(vals[0], list):
            out[key] = [v for part in vals for v in part]
        elif key == "keypoints":
            if len({v.shape[1] for v in vals if v.shape[0]}) > 1:
                raise InputFormatError("keypoints must have the same length in every annotation")
            out[key] = np.concatenate([v for v in vals if v.shape[0]] or [vals[0]])
        else:
            out[key] = np.concatenate(vals)
    return out


def load_coco_gt(
    source: Any,
    *,
    keep_segmentation: bool = False,
    need_keypoints: bool = False,
    on_error: str = "raise",
    crowd_optional: bool = False,
) -> CocoGroundTruth:
    """Load COCO ground truth (path, parsed dict or pycocotools ``COCO``) into a :class:`CocoGroundTruth`.

    Required per annotation: ``id``, ``image_id``, ``category_id``, ``bbox``, ``area``, ``iscrowd`` (pycocotools
    reads all of them; ``crowd_optional=True`` reads a missing ``iscrowd`` as 0, as LVIS files have none);
    ``segmentation`` for segm, ``keypoints`` and ``num_keypoints`` for keypoints. A large
    file's ``annotations`` array is parsed in pieces (bounded memory), with the same result.

    ``on_error="skip"``: a bad annotation is left out (listed in ``warnings``, counted in ``skipped``), the
    rest loaded exactly as the file without it; bad images or categories, duplicate ids still raise.
    """
    _check_on_error(on_error)
    if isinstance(source, CocoGroundTruth):
        return source
    if on_error == "raise":
        return _load_gt(source, keep_segmentation, need_keypoints, crowd_optional=crowd_optional)
    try:
        return _load_gt(source, keep_segmentation, need_keypoints, crowd_optional=crowd_optional)
    except DetevalError as exc:
        if not (isinstance(exc.record, str) and _ANN_RECORD.match(exc.record)):
            raise
    if _is_coco_object(source):
        data, file = source.dataset, "<pycocotools COCO ground truth>"
    elif isinstance(source, (str, PathLike)):
        data, file = _read_json_exact(Path(source)), str(source)
    else:
        data, file = source, "<in-memory ground truth>"
    anns = data["annotations"]

    def load(idx: np.ndarray) -> CocoGroundTruth:
        sub = {**data, "annotations": [anns[i] for i in idx.tolist()]}
        return _load_gt(sub, keep_segmentation, need_keypoints, file=file, crowd_optional=crowd_optional)

    def local(exc: DetevalError) -> int | None:
        m = _ANN_RECORD.match(exc.record) if isinstance(exc.record, str) else None
        return int(m.group(1)) if m else None

    g, bad, _ = load_skipping(len(anns), load, local, lambda i: f"annotations[{i}]")
    g.skipped = len(bad)
    g.warnings = [f"skipped bad record: {exc}" for exc in bad.values()] + g.warnings
    return g


def load_gt_with_head(path: str | PathLike[str], head: GtHead) -> CocoGroundTruth:
    """:func:`load_coco_gt` of a bbox ground-truth file (``on_error="raise"``) whose first annotation pieces
    a forked child reads (``head``, see :func:`_gt_in_pieces`); the same table, errors and messages."""
    return _load_gt(path, False, False, head=head)


def _load_gt(
    source: Any,
    keep_segmentation: bool,
    need_keypoints: bool,
    file: str | None = None,
    crowd_optional: bool = False,
    head: GtHead | None = None,
) -> CocoGroundTruth:
    """:func:`_gt_table`, a file read again exactly where it may hold an integer beyond 64 bits
    (:func:`_exact_on_doubt`: an error, or an area of 2**63 or more)."""
    args = (keep_segmentation, need_keypoints)
    if not isinstance(source, (str, PathLike)):
        return _gt_table(source, *args, file, crowd_optional, head)
    path = Path(source)
    return _exact_on_doubt(
        lambda: _gt_table(source, *args, file, crowd_optional, head),
        lambda g: g.area,
        lambda: _of_file_text(path, wide_integers),
        lambda: _gt_table(_read_json_exact(path), *args, str(source), crowd_optional),
    )


_T = TypeVar("_T")


def _exact_on_doubt(
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
        if not _holds_wide(column(got)) or not doubt():
            return got
    return exact()


def _gt_table(
    source: Any,
    keep_segmentation: bool,
    need_keypoints: bool,
    file: str | None = None,
    crowd_optional: bool = False,
    head: GtHead | None = None,
) -> CocoGroundTruth:
    cols = None
    plain = False  # (keypoints from a text without true/false: read as one matrix)
    if _is_coco_object(source):
        data, file = source.dataset, "<pycocotools COCO ground truth>"
    elif isinstance(source, (str, PathLike)):
        file = str(source)
        pieces = None
        if head is not None:
            pieces = _gt_in_pieces(Path(source), keep_segmentation, need_keypoints, crowd_optional, head)
        if pieces is None:
            pieces = _gt_in_pieces(Path(source), keep_segmentation, need_keypoints, crowd_optional)
        if pieces is not None:
            data, cols = pieces
        else:
            data = read_json(source)
            plain = need_keypoints and _file_without_booleans(Path(source))
    elif isinstance(source, dict):
        data, file = source, file or "<in-memory ground truth>"
    else:
        raise InputFormatError(
            f"ground truth must be a path, a dict or a pycocotools COCO, not {type(source).__name__}"
        )
    if not isinstance(data, dict):
        raise InputFormatError(
            "ground truth JSON must be an object with images, categories, annotations", file=file
        )
    for key in ("images", "categories"):
        if not isinstance(data.get(key), list):
            raise InputFormatError(f"missing or invalid {key!r} list", file=file)
    if cols is None:
        anns = data.get("annotations", [])
        if not isinstance(anns, list):
            raise InputFormatError("'annotations' must be a list", file=file)
        cols = _ann_columns(
            anns, file, keep_segmentation, need_keypoints, crowd_optional=crowd_optional, plain=plain
        )
    images, cats = data["images"], data["categories"]

    img_ids_file = _id_array(_field(images, "id", file, "images"), "image id", file, "images")
    image_ids = _unique_ids(img_ids_file, "image id", file, "images")
    order = np.argsort(img_ids_file, kind="stable")
    hw = np.full((len(images), 2), -1, dtype=np.int64)
    if not keep_segmentation:
        # read only to flag boxes past the border (a likely xyxy/xywh mix-up); bbox never needs the size
        try:
            hw = np.stack([_image_size(images, k, file) for k in ("height", "width")], axis=1)
        except DetevalError:
            pass
    if keep_segmentation:
        hw = np.stack([_image_size(images, k, file) for k in ("height", "width")], axis=1)
        big = hw[:, 0].astype(np.float64) * hw[:, 1] >= MAX_MASK_PIXELS  # (in floats: no int64 wrap)
        if big.any():
            i = int(np.flatnonzero(big)[0])
            raise ValidationError(
                f"an image of {int(hw[i, 0])}x{int(hw[i, 1])} pixels is beyond the 2**32 pixels pycocotools' "
                "masks can hold (its sizes are 32-bit)",
                file=file,
                record=f"images[{i}]",
            )
    image_hw = hw[order]

    cat_ids_file = _id_array(_field(cats, "id", file, "categories"), "category id", file, "categories")
    cat_ids = _unique_ids(cat_ids_file, "category id", file, "categories")
    names_file = [str(c.get("name", c["id"])) for c in cats]
    corder = np.argsort(cat_ids_file, kind="stable")
    cat_names = [names_file[i] for i in corder]

    where = "annotations"
    _unique_ids(cols["ann_id"], "annotation id", file, where)
    img = _index_of(cols["image_id"], image_ids, "image_id", file, where)
    cat = _index_of(cols["category_id"], cat_ids, "category_id", file, where)
    return CocoGroundTruth(
        image_ids=image_ids,
        image_hw=image_hw,
        cat_ids=cat_ids,
        cat_names=cat_names,
        ann_id=cols["ann_id"],
        img=img,
        cat=cat,
        bbox=cols["bbox"],
        area=cols["area"],
        iscrowd=cols["iscrowd"],
        ignore=cols["ignore"],
        num_keypoints=cols["num_keypoints"],
        keypoints=cols["keypoints"],
        segmentation=cols["segmentation"],
        source=file,
        image_records=images,
        category_records=cats,
        image_file_order=np.argsort(order, kind="stable"),
    )


def _file_without_booleans(path: Path) -> bool:
    """:func:`no_json_booleans` of a file's text (mapped, not read again); False if unreadable."""
    return _of_file_text(path, no_json_booleans)


_ANNOTATIONS_KEY = re.compile(rb'"annotations"\s*:\s*\[')
_ANN_RECORD = re.compile(r"^annotations\[(\d+)\]$")


def _same_id_kinds(
    parts: list[dict[str, Any]], starts: list[int], file: str, failed: str | None = None
) -> None:
    """The rule of :func:`_id_array` across pieces (piece k from ``annotations[starts[k]]``): ids all integers
    or all strings. A piece holds one kind (else it raised on its own); a mix of pieces is refused naming the
    file's first string id, as the whole-file path does: the first record of the first piece of strings.
    ``failed``: the id a piece just refused for a mix inside it (refused again here if a string came before)."""
    for key in ("image_id", "category_id"):
        kinds = [p[key].dtype.kind == "U" for p in parts]
        if (key == failed and any(kinds)) or (kinds and min(kinds) != max(kinds)):
            k = kinds.index(True)
            raise InputFormatError(
                f"{key} must be an integer within ±2**63 (or all ids strings), got {parts[k][key][0].item()!r}",
                file=file,
                record=f"annotations[{starts[k]}]",
            )


_OBJECT_LIST_END = re.compile(rb"\}\s*\]")


def _last_piece(
    data: Any, lo: int, file: str, typed: bool = False, boxes: _Boxes = None
) -> tuple[list | _BoxPiece | None, int]:
    """The records from ``lo`` to the end of the annotations array (and the byte just past its ``]``) when the
    first ``}]`` after ``lo`` closes it, parsed by orjson; (None, -1) otherwise (the caller then lets Python's
    ``raw_decode`` find the end). A text that parses as one array up to that ``]`` is the array ``raw_decode``
    reads: a JSON value ends where its own brackets close."""
    m = _OBJECT_LIST_END.search(data, lo)
    if m is None or _orjson is None:
        return None, -1
    try:
        records = _ann_piece(b"[" + data[lo : m.end()], file, typed, boxes)
    except (ValueError, DetevalError):  # (a repeated key: named by the path below, as before)
        return None, -1
    return records, m.end()


#: The child's share of a ground truth read on two cores: the bytes of the annotations array it reads (from
#: the array's start) and the function that returns what it read (:func:`gt_head`), None on any fault.
GtHead = tuple[int, Callable[[], "tuple[list[dict[str, Any]], int] | None"]]


def _head_pieces(data: Any, lo: int, end: int, piece: int) -> tuple[list[tuple[int, int]], int] | None:
    """The annotation pieces :func:`_gt_in_pieces` cuts from byte ``lo`` (every ``piece`` bytes) that begin
    before byte ``end``, as (start, end) byte ranges, and the start of the next piece; found without parsing
    (None: no cut left)."""
    pieces = []
    while lo < end:
        cut = _RECORD_BOUNDARY.search(data, lo + piece)
        if cut is None:
            return None
        pieces.append((lo, cut.start() + 1))
        lo = cut.end() - 1
    return pieces, lo


def gt_head(
    path: str | PathLike[str], length: int, keep_segmentation: bool = False, need_keypoints: bool = False
) -> tuple[list[dict[str, Any]], int] | None:
    """A forked child's share of a large ground-truth file: the columns (ids not yet mapped) of the
    annotation pieces :func:`_gt_in_pieces` would cut in the first ``length`` bytes of the annotations
    array, and the byte where the next piece starts; None on any fault (the parent then reads them itself)."""
    file = str(path)
    refuse_special(path, "JSON file")  # (a pipe would block the open, /dev/zero never end)
    try:
        with open(path, "rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    m = _ANNOTATIONS_KEY.search(data)
    typed = not keep_segmentation and (KEYPOINT_GT_TYPED or not need_keypoints) and typed_decoding()
    boxes = _box_mode(typed, need_keypoints, False)
    cut = None if m is None else _head_pieces(data, m.end(), m.end() + length, _gt_piece_bytes(boxes))
    if cut is None:
        return None
    parts: list[dict[str, Any]] = []
    for lo, hi in cut[0]:
        try:
            with memoryview(data) as view:  # one copy: the piece with its brackets
                text = b"".join((b"[", view[lo:hi], b"]"))
            records = _ann_piece(text, file, typed, boxes)
            del text
            if not isinstance(records, (list, _BoxPiece)):
                return None
            kp_width = parts[0]["keypoints"].shape[1] if parts and parts[0]["keypoints"] is not None else None
            parts.append(_piece_columns(records, file, keep_segmentation, need_keypoints, kp_width))
        except (ValueError, DetevalError):
            return None
        del records
    return parts, cut[1]


#: A keypoints ground truth from twice this size on is parsed in pieces of about this size: each piece's
#: objects (51 numbers an annotation) are made, read into columns and freed while in cache, and the next
#: piece reuses their memory. bench_coco keypoints 5k (4.8 MB), CPU of load_coco_gt, fastest of 6 fresh
#: processes: 93 ms whole (13.5k page faults), 68 in pieces of 1 MB, 64 of 512 KB, 58 of 256 KB (6.2k page
#: faults), 61 of 128 KB; 72 of 512 KB decoded by type (msgspec: its import included).
KEYPOINT_GT_PIECE_BYTES = 256 << 10
#: Whether those pieces are decoded by type (:mod:`deteval.io.coco_typed`) where msgspec is installed: no, it
#: is slower for keypoints (59 against 69 ms in pieces of 256 KB, msgspec already imported; its import costs
#: 17-34 ms more).
KEYPOINT_GT_TYPED = False


def _gt_in_pieces(
    path: Path,
    keep_segmentation: bool,
    need_keypoints: bool,
    crowd_optional: bool = False,
    head: GtHead | None = None,
) -> tuple[dict, dict] | None:
    """Parse a large ground-truth file with its ``annotations`` array in pieces of about ``CHUNK_BYTES``
    (bbox: :func:`_gt_piece_bytes`; keypoints: :data:`KEYPOINT_GT_PIECE_BYTES`, parsed by orjson, not by
    type).

    Only one piece's Python objects exist at a time: each is reduced to columns at once. The pieces are cut
    between records (``}, {``); the piece that runs past the end of the array is read with
    ``json.JSONDecoder.raw_decode``, which reports where the array ends; the rest of the document is parsed
    with an empty annotations list. Returns None whenever this does not apply, and the caller parses the whole
    file (which also gives the precise error message).

    ``head``: the first pieces are read by a forked child (:data:`GtHead`, :func:`gt_head`) while this
    process reads the others; any fault, here or there, gives None (the caller then reads the file alone,
    which names the first fault as one process does).
    """
    step = min(CHUNK_BYTES, KEYPOINT_GT_PIECE_BYTES) if need_keypoints else CHUNK_BYTES
    # mapped read-only, as the results (:func:`_read_in_pieces`): no copy of the file, no fresh memory to fault in
    refuse_special(path, "JSON file")  # (a pipe would block the open, /dev/zero never end)
    try:
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size < 2 * step:
                return None
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    first = data.find(b'"annotations"')
    if first < 0 or data.find(b'"annotations"', first + 1) >= 0:  # (exactly one: else the whole-file path)
        return None
    m = _ANNOTATIONS_KEY.search(data)
    if m is None:
        return None
    file = str(path)
    plain = need_keypoints and no_json_booleans(data)
    typed = not keep_segmentation and (KEYPOINT_GT_TYPED or not need_keypoints) and typed_decoding()
    boxes = _box_mode(typed, need_keypoints, crowd_optional)
    piece = step if need_keypoints else _gt_piece_bytes(boxes)
    parts: list[dict[str, Any]] = []
    starts: list[int] = []  # each part's first annotation index
    offset = 0
    lo = m.end()
    if head is not None:  # the child reads the pieces before byte ``lo`` (the same cuts, found here unparsed)
        skipped = _head_pieces(data, lo, lo + head[0], piece)
        if skipped is None or not skipped[0]:
            return None
        lo = skipped[1]
    first_lo = lo
    ann_end = -1
    with paused():
        try:
            while ann_end < 0:
                cut = _RECORD_BOUNDARY.search(data, lo + piece)
                records = None
                numbers = False  # (the piece's text holds no string but its records' keys)
                if cut is not None:
                    nxt = cut.end() - 1
                    try:
                        text = b"[" + data[lo : cut.start() + 1] + b"]"
                        if plain and not typed and boxes is None:
                            records, numbers = _plain_ann_piece(text, file)
                        else:
                            records = _ann_piece(text, file, typed, boxes)
                        del text
                    except ValueError:
                        records = None  # this piece runs past the end of the annotations array
                if records is None:  # the last piece: it ends at the array's closing bracket
                    records, ann_end = _last_piece(data, lo, file, typed, boxes)
                    nxt = ann_end
                if records is None:  # raw_decode stops at the array's closing bracket
                    try:
                        tail = "[" + data[lo:].decode("utf-8")
                        records, end = json.JSONDecoder(object_pairs_hook=unique_keys).raw_decode(tail)
                    except (ValueError, UnicodeDecodeError):
                        return None
                    # the byte offset just past the closing "]"
                    ann_end = lo + len(tail[:end].encode("utf-8")) - 1
                    del tail
                    nxt = ann_end
                if not isinstance(records, (list, _BoxPiece)):
                    return None
                try:
                    kp_width = (
                        parts[0]["keypoints"].shape[1]
                        if parts and parts[0]["keypoints"] is not None
                        else None
                    )
                    parts.append(
                        _piece_columns(
                            records,
                            file,
                            keep_segmentation,
                            need_keypoints,
                            kp_width,
                            crowd_optional=crowd_optional,
                            plain=plain,
                            numbers=numbers,
                        )
                    )
                except DetevalError as exc:
                    if head is not None:  # (its record index depends on the child's count)
                        return None
                    ids = ("image_id", "category_id")
                    failed = next((k for k in ids if exc.reason.startswith(f"{k} must be an integer")), None)
                    _same_id_kinds(parts, starts, file, failed)
                    rec = exc.record
                    mm = _ANN_RECORD.match(rec) if isinstance(rec, str) else None
                    if mm:
                        rec = f"annotations[{int(mm.group(1)) + offset}]"
                    raise type(exc)(exc.reason, file=exc.file, record=rec) from None
                starts.append(offset)
                if head is None:
                    _same_id_kinds(parts, starts, file)
                offset += len(records)
                del records
                lo = nxt
            rest = _loads_piece(data[: m.start()] + b'"annotations": []' + data[ann_end:], file)
            del data  # (before the child's share comes in: the peak memory)
        except ValueError:
            return None
    if not isinstance(rest, dict) or rest.get("annotations") != []:
        return None
    if head is not None:
        got = head[1]()
        if got is None or got[1] != first_lo:
            return None
        parts = got[0] + parts
        lengths = [len(part["ann_id"]) for part in parts]
        try:
            _same_id_kinds(parts, [sum(lengths[:k]) for k in range(len(parts))], file)
        except DetevalError:
            return None
    return rest, _concat_columns(parts)


def _results_from_array(arr: np.ndarray, gt: CocoGroundTruth, file: str) -> CocoResults:
    if arr.ndim != 2 or arr.shape[1] != 7:
        raise InputFormatError(
            f"a results array must be N×7 [image_id, x, y, w, h, score, category_id], got shape {arr.shape}",
            file=file,
        )
    if arr.dtype.kind not in "iuf":  # (astype would read the strings "12.5" and booleans as numbers)
        raise InputFormatError(f"a results array must hold numbers, not {arr.dtype}", file=file)
    a = np.asarray(arr, dtype=np.float64)
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"row {a[i].tolist()} is not finite", file=file, record=i)
    bbox = a[:, 1:5].copy()
    neg = (bbox[:, 2] < 0) | (bbox[:, 3] < 0)
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise ValidationError(f"bbox {bbox[i].tolist()} has a negative width or height", file=file, record=i)
    _check_magnitude(bbox, "bbox", arr[:, 1:5].tolist(), file, None)
    ids = a[:, [0, 6]]
    bad = ((ids != np.round(ids)) | (np.abs(ids) >= 2.0**63)).any(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputFormatError(f"ids must be integers, got row {a[i].tolist()}", file=file, record=i)
    exact = arr if arr.dtype.kind in "iu" else a  # (an integer id beyond 2**53 would round as float64)
    img = _index_of(exact[:, 0].astype(np.int64), gt.image_ids, "image_id", file, None)
    cat = _index_of(exact[:, 6].astype(np.int64), gt.cat_ids, "category_id", file, None)
    return CocoResults(
        img=img,
        cat=cat,
        score=a[:, 5].copy(),
        bbox=bbox,
        area=bbox[:, 2] * bbox[:, 3],
        kind="bbox",
        source=file,
    )


def load_coco_results(
    source: Any, gt: CocoGroundTruth, *, iou_type: str = "bbox", on_error: str = "raise"
) -> CocoResults:
    """Load detection results (path, list of dicts, N×7 array or pycocotools ``COCO``) against ``gt``.

    The input is never modified (pycocotools' loadRes writes ``area``, ``id`` and ``iscrowd`` into the
    caller's dicts; the same values are computed here into arrays).

    ``on_error="skip"``: a bad record (including one for an image or category the ground truth does not
    have) is left out and listed in ``warnings`` (``skipped bad record: <file>: record N: <reason>``), counted
    in ``skipped``; the rest is loaded exactly as the input without those records. Faults of the whole input
    (not JSON, not a list) still raise.
    """
    _check_on_error(on_error)
    if isinstance(source, CocoResults):
        return source
    if on_error == "raise":
        return _load_results(source, gt, iou_type)
    try:
        return _load_results(source, gt, iou_type)
    except DetevalError as exc:
        if not isinstance(exc.record, int) or isinstance(source, np.ndarray):
            raise
    if _is_coco_object(source):
        records, file, from_coco = source.dataset.get("annotations", []), "<pycocotools COCO results>", True
    elif isinstance(source, (str, PathLike)):
        records, file, from_coco = _read_json_exact(Path(source)), str(source), False
    else:
        records, file, from_coco = list(source), "<in-memory results>", False

    def load(idx: np.ndarray, kind: str | None = None) -> CocoResults:
        return _results_from_records([records[i] for i in idx.tolist()], file, from_coco, gt, iou_type, kind)

    def local(exc: DetevalError) -> int | None:
        return exc.record if isinstance(exc.record, int) else None

    # loadRes' branch is the first record's, so with records left out it is the first kept record's: the
    # first record that loads alone (each one before it is bad whatever the branch), and every record is
    # then read in that branch (a subset must not pick its own from its first record: a record of another
    # kind would load alone, pass as good, and fail the final load)
    lead, bad = 0, {}
    while lead < len(records):
        try:
            load(np.array([lead]))
            break
        except DetevalError as exc:
            if local(exc) is None:
                raise
            bad[lead] = type(exc)(exc.reason, file=exc.file, record=lead)
            lead += 1
    if lead == len(records):
        res = load(np.zeros(0, dtype=np.int64))
    else:
        kind = "loaded" if from_coco else loadres_branch(records[lead], file)
        rest = np.arange(lead, len(records))
        res, bad_rest, _ = load_skipping(
            rest.shape[0], lambda idx: load(rest[idx], kind), local, lambda i: int(rest[i])
        )
        bad.update({int(rest[i]): exc for i, exc in bad_rest.items()})
    res.skipped = len(bad)
    res.warnings = [f"skipped bad record: {exc}" for exc in bad.values()] + res.warnings
    return res


def _load_results(source: Any, gt: CocoGroundTruth, iou_type: str) -> CocoResults:
    from_coco = False
    if _is_coco_object(source):
        records, file, from_coco = source.dataset.get("annotations", []), "<pycocotools COCO results>", True
    elif isinstance(source, (str, PathLike)):
        if iou_type in ("bbox", "keypoints"):
            fast = _bbox_results_in_chunks(Path(source), gt, iou_type)  # (exact piece by piece)
            if fast is not None:
                return fast
        path = Path(source)
        return _exact_on_doubt(
            lambda: _whole_results(path, gt, iou_type),
            _score,
            lambda: _of_file_text(path, wide_integers),
            lambda: _results_from_records(_read_json_exact(path), str(path), False, gt, iou_type),
        )
    elif isinstance(source, np.ndarray):
        return _results_from_array(source, gt, "<numpy results array>")
    elif isinstance(source, (list, tuple)):
        records, file = list(source), "<in-memory results>"
    else:
        raise InputFormatError(
            f"results must be a path, a list of dicts, an N×7 array or a pycocotools COCO, "
            f"not {type(source).__name__}"
        )
    return _results_from_records(records, file, from_coco, gt, iou_type)


def _whole_results(path: Path, gt: CocoGroundTruth, iou_type: str) -> CocoResults:
    """A results file read at once: decoded by type where that vouches for it, else parsed."""
    file = str(path)
    data = _json_bytes(path)
    typed = _typed_bbox(data, gt, file) if iou_type == "bbox" and len(data) >= coco_typed.MIN_BYTES else None
    if typed is not None:
        return typed
    return _results_from_records(_parse_json(data, path), file, False, gt, iou_type)


def _results_from_records(
    records: Any, file: str, from_coco: bool, gt: CocoGroundTruth, iou_type: str, kind: str | None = None
) -> CocoResults:
    """``kind``: the loadRes branch when already decided (a piece of a file: by the file's first record)."""
    if not isinstance(records, list):
        raise InputFormatError(
            f"results JSON must be a list of objects, not {type(records).__name__}", file=file
        )
    n = len(records)
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return CocoResults(
            img=z,
            cat=z.copy(),
            score=np.zeros(0),
            bbox=np.zeros((0, 4)),
            area=np.zeros(0),
            keypoints=np.zeros((0, 0)) if iou_type == "keypoints" else None,
            segmentation=[] if iou_type == "segm" else None,
            kind="bbox",
            source=file,
        )
    first = records[0]
    if not isinstance(first, dict):
        raise InputFormatError(f"expected a JSON object, got {type(first).__name__}", file=file, record=0)
    # A pycocotools COCO from loadRes already holds what loadRes computed (area, bbox, segmentation): read it
    # as COCOeval does. Otherwise compute it as loadRes would, in the branch its first record picks.
    if kind is None:
        kind = "loaded" if from_coco else loadres_branch(first, file)
    img, cat, score = _result_keys(records, gt, file)

    segmentation = None
    keypoints = None
    if iou_type == "segm" or kind == "segm":
        segmentation = [r.get("segmentation", _MISSING) for r in records]
        if kind == "bbox":  # loadRes gives a record without a segmentation its box polygon
            boxes = _boxes(_field(records, "bbox", file, None), file, None)
            segmentation = [
                [[x, y, x, y + h, x + w, y + h, x + w, y]] if sg is _MISSING else sg
                for sg, (x, y, w, h) in zip(segmentation, boxes.tolist())
            ]
        segmentation = [None if sg is _MISSING else sg for sg in segmentation]
        missing = [i for i, sg in enumerate(segmentation) if sg is None]
        if missing:  # COCOeval converts every detection's mask, not only those it compares
            raise InputFormatError("missing field 'segmentation'", file=file, record=missing[0])
        if kind != "segm":  # (a segm-kind result is checked where its masks are read)
            _check_given_segmentations(segmentation, img, gt, file)
    if iou_type == "keypoints" or kind == "keypoints":
        width = gt.keypoints.shape[1] if gt.keypoints is not None and len(gt) else None
        keypoints = _keypoint_matrix(
            _field(records, "keypoints", file, None), file, None, "keypoints", width=width
        )

    if kind == "keypoints" and keypoints is not None:  # loadRes: the keypoints' extent, for every record
        bbox: np.ndarray | MaskBoxes
        bbox, area = keypoint_extent(keypoints)
    else:
        # segm branch: every mask validated and converted once, read for the areas, the missing boxes and
        # (kept in ``rles``) by the matcher
        rles, areas = _rles(segmentation or [], img, gt, file) if kind == "segm" else (None, None)
        bbox = _result_boxes(records, kind, iou_type, rles, img, gt, file)
        if kind == "loaded":
            area = _floats(_field(records, "area", file, None), "area", file, None)
        elif kind == "bbox" and isinstance(bbox, np.ndarray):
            area = bbox[:, 2] * bbox[:, 3]
        else:  # segm: loadRes takes every record's area from its mask
            area = areas if areas is not None else np.zeros(0)
    return CocoResults(
        img=img,
        cat=cat,
        score=score,
        bbox=bbox,
        area=area,
        keypoints=keypoints,
        segmentation=segmentation,
        kind=kind,
        source=file,
        rles=rles if kind == "segm" else None,
    )


_MISSING: Any = object()


def keypoint_extent(keypoints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """loadRes' keypoints branch, for every record: ``bbox`` = the keypoints' extent ``[x0, y0, x1 − x0,
    y1 − y0]``, ``area = (x1 − x0)·(y1 − y0)``."""
    return boxes_from_bounds(keypoint_bounds(keypoints))


def keypoint_bounds(keypoints: np.ndarray) -> np.ndarray:
    """(4, N): every record's smallest x and y and largest x and y over all its keypoints (:func:`row_extents`
    of the x and of the y columns)."""
    (x0, x1), (y0, y1) = row_extents(keypoints[:, 0::3]), row_extents(keypoints[:, 1::3])
    return np.stack([x0, y0, x1, y1])


def row_extents(a: np.ndarray, where: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's minimum and maximum of ``a`` (rows × K), over the columns where ``where`` (K × rows, the
    transposed mask) holds: +inf and −inf for a row without any. One elementwise pass per column of a
    transposed copy: ``a.min(axis=1)`` costs about 30 ns a row for rows of 17 numbers, four times as much.
    The copies are made per block of rows, small enough to stay in cache and to reuse the same memory: one
    transposed copy of all the rows (8 MB for 60k detections) costs as much again in fresh pages."""
    n = a.shape[0]
    lo, hi = np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64)
    for s in range(0, n, _EXTENT_ROWS):
        e = min(n, s + _EXTENT_ROWS)
        t = a[s:e].T.copy()
        if where is None:
            np.minimum.reduce(t, axis=0, out=lo[s:e])
            np.maximum.reduce(t, axis=0, out=hi[s:e])
        else:
            w = where[:, s:e]
            np.minimum.reduce(np.where(w, t, np.inf), axis=0, out=lo[s:e])
            np.maximum.reduce(np.where(w, t, -np.inf), axis=0, out=hi[s:e])
    return lo, hi


def boxes_from_bounds(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``bbox`` and ``area`` (:func:`keypoint_extent`) from :func:`keypoint_bounds`."""
    x0, y0, x1, y1 = bounds
    return np.stack([x0, y0, x1 - x0, y1 - y0], axis=1), (x1 - x0) * (y1 - y0)


#: Rows per block of :func:`row_extents` (17 keypoints: 136 KB per transposed copy)
_EXTENT_ROWS = 1024


def loadres_branch(first: dict, file: str) -> str:
    """The branch pycocotools' ``loadRes`` takes for *every* record, decided from the first record alone:
    ``"bbox"`` if it has a non-empty ``bbox``, else ``"segm"`` if it has a ``segmentation``, else
    ``"keypoints"`` if it has ``keypoints``."""
    box = first.get("bbox", _MISSING)
    if box is not _MISSING and not (_is_list(box) and len(box) == 0):
        return "bbox"
    if "segmentation" in first:
        return "segm"
    if "keypoints" in first:
        return "keypoints"
    raise InputFormatError("a result needs a bbox, a segmentation or keypoints", file=file, record=0)


def _result_boxes(
    records: list,
    kind: str,
    iou_type: str,
    rles: list | None,
    img: np.ndarray,
    gt: CocoGroundTruth,
    file: str,
) -> np.ndarray | MaskBoxes:
    """The ``bbox`` column as loadRes leaves it: each record's own ``bbox``; in the segm branch the mask's box
    (``toBbox`` of its RLE in ``rles``) only for a record without one, computed when first read where no
    record has one and the evaluation is not bbox. bbox evaluation needs a valid box in every record."""
    if kind == "bbox":
        return _boxes(_field(records, "bbox", file, None), file, None)
    raw = [r.get("bbox", _MISSING) for r in records]
    missing = [i for i, b in enumerate(raw) if b is _MISSING]
    if missing and len(missing) == len(raw) and kind == "segm" and rles is not None and iou_type != "bbox":
        return MaskBoxes(rles, file)  # (the usual segm results: no record has a box)
    if missing and kind == "segm" and rles is not None:
        derived = _mask_boxes([rles[i] for i in missing], file)
        for j, i in enumerate(missing):
            raw[i] = derived[j]
        missing = []
    if iou_type == "bbox":
        if missing:
            raise InputFormatError("missing field 'bbox'", file=file, record=missing[0])
        return _boxes(raw, file, None)
    # segm and keypoints evaluation never read a detection's box (loadRes even keeps a `[]` there): where the
    # column would not be valid boxes it holds NaN instead of failing.
    if missing:
        return _nan_boxes(len(raw))
    try:
        return _boxes(raw, file, None)
    except DetevalError:
        return _nan_boxes(len(raw))


def _nan_boxes(n: int) -> np.ndarray:
    return np.full((n, 4), np.nan)


def _typed_bbox(text: bytes, gt: CocoGroundTruth, file: str) -> CocoResults | None:
    """The bbox results in the JSON list ``text`` decoded by type (:mod:`deteval.io.coco_typed`) and mapped to
    ``gt``, as :func:`_results_from_records` reads them in loadRes' bbox branch; None where it cannot vouch
    for that or an id is not in ``gt`` (the ordinary path then reads ``text`` and names the fault)."""
    raw = bbox_columns(text)
    if raw is None:
        return None
    try:
        return _mapped_bbox(raw, gt, file)
    except DetevalError:
        return None


def _mapped_bbox(raw: RawColumns, gt: CocoGroundTruth, file: str) -> CocoResults:
    """Checked bbox columns (:data:`RawColumns`) with their ids mapped to ``gt`` (an unknown one raises)."""
    img_ids, cat_ids, score, bbox = raw
    img = _index_of(img_ids, gt.image_ids, "image_id", file, None)
    cat = _index_of(cat_ids, gt.cat_ids, "category_id", file, None)
    return CocoResults(img=img, cat=cat, score=score, bbox=bbox, area=bbox[:, 2] * bbox[:, 3], source=file)


def _ann_piece(text: bytes, file: str, typed: bool, boxes: _Boxes = None) -> Any:
    """The annotation records of one piece of a large ground truth: decoded by type when ``typed`` (an
    evaluation that reads no segmentation) and :func:`deteval.io.coco_typed.gt_annotations` vouches for the
    text, else :func:`_loads_piece`. ``boxes`` (a bbox evaluation: whether ``iscrowd`` is optional): first
    its columns straight from the text (:class:`_BoxPiece`) where :func:`~deteval.io.coco_typed.gt_box_columns`
    vouches for them."""
    if boxes is not None:
        columns = gt_box_columns(text, boxes)
        if columns is not None:
            return _BoxPiece(columns)
    records = gt_annotations(text) if typed else None
    return _loads_piece(text, file) if records is None else records


def _plain_ann_piece(text: bytes, file: str) -> tuple[Any, bool]:
    """:func:`_ann_piece` of a keypoints ground truth's piece (parsed by orjson, from a text without
    ``true``/``false``) and whether its text holds no string but its records' keys, in which case no key is
    repeated (:func:`parsed_number_piece`) and the repeated-key check is skipped."""
    if _orjson is None:
        value = _loads_piece(text, file)
        return value, type(value) is list and only_key_strings(text, value)
    value = _orjson.loads(text)
    if type(value) is list and only_key_strings(text, value):
        return value, True
    check_unique_keys(text, value, file, _orjson.dumps)
    return value, False


#: ``_ann_piece``'s ``boxes``: None, or a bbox evaluation's ``crowd_optional``
_Boxes = bool | None


class _BoxPiece:
    """A piece of annotations read straight to the columns a bbox evaluation uses, in place of its records
    (:func:`_piece_columns` hands them on; ``len`` is the records')."""

    def __init__(self, columns: dict[str, Any]) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns["ann_id"])


def _gt_piece_bytes(boxes: _Boxes) -> int:
    """The size of a large ground truth's annotation pieces: :func:`_bbox_piece_bytes` for bbox (``boxes``),
    else ``CHUNK_BYTES``."""
    return CHUNK_BYTES if boxes is None else _bbox_piece_bytes()


def _box_mode(typed: bool, need_keypoints: bool, crowd_optional: bool) -> _Boxes:
    """``_ann_piece``'s ``boxes`` for an evaluation: ``crowd_optional`` for bbox (typed, no keypoints)."""
    return crowd_optional if typed and not need_keypoints else None


def _piece_columns(records: Any, file: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`_ann_columns` of a piece's records (a :class:`_BoxPiece`: its columns)."""
    if isinstance(records, _BoxPiece):
        return records.columns
    return _ann_columns(records, file, *args, **kwargs)


def _loads_piece(text: bytes, file: str) -> Any:
    """Parse one piece of a large file; a repeated key raises (orjson: :class:`InputFormatError`; json:
    :class:`DuplicateKeyError`, a ValueError, so that the whole file is then read by :func:`read_json`)."""
    if _orjson is None:
        return loads_unique(text)
    value = _orjson.loads(text)
    check_unique_keys(text, value, file, _orjson.dumps)
    return value


_RECORD_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
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
        m = _RECORD_BOUNDARY.search(data, pos)
        if m is None:
            break
        cuts.append((m.start() + 1, m.end() - 1))  # end of one record, start of the next
        pos = m.end() + chunk
    return cuts


def _read_in_pieces(path: Path, chunk: int | None = None) -> tuple[Any, list[tuple[int, int]]] | None:
    """A results file mapped in memory (read-only ``mmap``: the page cache's pages, no copy, no fresh memory
    to fault in) and its cuts (:func:`_result_cuts`); None if unreadable or too small to cut."""
    refuse_special(path, "results file")  # (a pipe would block the open, /dev/zero never end)
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 2 * (CHUNK_BYTES if chunk is None else chunk):
                return None
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    cuts = _result_cuts(data, chunk)
    return (data, cuts) if cuts else None


def _piece_bounds(data: Any, cuts: list[tuple[int, int]], i: int) -> tuple[int, int]:
    return (0 if i == 0 else cuts[i - 1][1]), (len(data) if i == len(cuts) else cuts[i][0])


def _piece_text(data: Any, cuts: list[tuple[int, int]], i: int) -> bytes:
    """Piece ``i`` as the text of a JSON list (one copy: the piece with its brackets)."""
    lo, hi = _piece_bounds(data, cuts, i)
    with memoryview(data) as view:
        return b"".join((b"" if i == 0 else b"[", view[lo:hi], b"" if i == len(cuts) else b"]"))


def _piece_records(data: Any, cuts: list[tuple[int, int]], i: int, file: str) -> list | None:
    """Piece ``i`` parsed as a list of records (:func:`_parsed_piece`)."""
    return _parsed_piece(_piece_text(data, cuts, i), file)


def _parsed_piece(text: bytes, file: str) -> list | None:
    """A piece's text parsed as a list of records; None if it does not parse as a non-empty list whose first
    element is an object (the whole file is then parsed at once, which names the fault)."""
    try:
        records = _loads_piece(text, file)
    except ValueError:
        return None
    return _records(records)


def _records(value: Any) -> list | None:
    return value if isinstance(value, list) and value and type(value[0]) is dict else None


def parsed_number_piece(text: bytes, file: str) -> tuple[list | None, bool]:
    """:func:`_parsed_piece` and whether the piece holds no string but its records' keys
    (:func:`only_key_strings`). Where it holds, the repeated-key check is not needed: a key written twice in
    one object is one entry of the parsed dict, and its second string would leave more than two quotes per
    key kept (nested objects can only be ``{}``: any key of theirs is another string)."""
    try:
        value, numbers = _plain_ann_piece(text, file)
    except ValueError:
        return None, False
    records = _records(value)
    return records, numbers and records is not None


def _bbox_results_in_chunks(path: Path, gt: CocoGroundTruth, iou_type: str = "bbox") -> CocoResults | None:
    """Parse a large bbox (or keypoints) results file piece by piece, so only one piece's Python objects exist
    at a time. Keypoints results are read so only in loadRes' keypoints branch and when the ground truth fixes
    the number of keypoints (so that every piece is checked against the same width).

    The file is cut between records (:func:`_result_cuts`). Returns None whenever this does not apply (small
    file, not bbox results, a piece that does not parse); the caller then parses the whole file, which also
    produces the precise error message.
    """
    try:  # (a file below 2 * CHUNK_BYTES is read whole, even where its pieces would be smaller)
        if path.stat().st_size < 2 * CHUNK_BYTES:
            return None
    except OSError:
        return None
    read = _read_in_pieces(path, _bbox_piece_bytes() if iou_type == "bbox" else None)
    if read is None:
        return None
    data, cuts = read
    file = str(path)
    parts: list[CocoResults] = []
    offset = 0

    def columns(records: list) -> CocoResults:
        if iou_type == "bbox":
            return _bbox_columns(records, gt, file)
        return _results_from_records(records, file, False, gt, iou_type, kind="keypoints")

    with paused():
        for i in range(len(cuts) + 1):
            text = _piece_text(data, cuts, i)
            typed = _typed_bbox(text, gt, file) if iou_type == "bbox" else None
            if typed is not None:
                parts.append(typed)
                offset += len(typed)
                continue
            records = _parsed_piece(text, file)
            if records is None:  # (the error the whole file's parse gives, found from this piece, if it can)
                fault = piece_error(data, _piece_bounds(data, cuts, i)[0], text, i == len(cuts), file)
                if fault is not None:
                    raise fault
                return None
            first = records[0]
            if i == 0 and iou_type == "bbox" and not _bbox_branch(first):
                return None
            if i == 0 and iou_type == "keypoints":
                try:
                    if loadres_branch(first, file) != "keypoints" or gt.keypoints is None or not len(gt):
                        return None
                except DetevalError:
                    return None
            try:  # (exact where the piece may hold an integer beyond 64 bits: see _exact_on_doubt)
                part = _exact_on_doubt(
                    partial(columns, records),
                    _score,
                    partial(wide_integers, text),
                    partial(_exactly, columns, text),
                )
            except DetevalError as exc:
                rec = exc.record + offset if isinstance(exc.record, int) else exc.record
                raise type(exc)(exc.reason, file=exc.file, record=rec) from None
            parts.append(part)
            offset += len(records)
            del records
    return concat_results(parts, file)


def _score(r: CocoResults) -> np.ndarray:
    return r.score


def _exactly(read: Callable[[list], _T], text: bytes) -> _T:
    """``read`` of the records of ``text`` parsed by Python's json (integers kept as written)."""
    return read(loads_unique(text))


def _bbox_branch(first: dict) -> bool:
    return "bbox" in first and first["bbox"] != []


def concat_results(parts: Sequence[CocoResults], source: str | None = None) -> CocoResults:
    """Results read one after the other (pieces of one file, or several files), as one.

    The columns of the non-empty parts in order (an empty part's keypoint matrix may have no width); the
    ``bbox`` columns still to be computed if every such part's are (:func:`concat_boxes`); ``rles`` only if
    every such part has them; the warnings and skipped counts of all parts. ``source``: the result's source
    (default: the parts' sources joined by ", "). The other fields (``kind``) are the first non-empty part's.
    """
    if not parts:
        raise ValueError("no results to put together")
    full = [p for p in parts if len(p)] or [parts[0]]
    first = full[0]
    return replace(
        first,
        img=np.concatenate([p.img for p in full]),
        cat=np.concatenate([p.cat for p in full]),
        score=np.concatenate([p.score for p in full]),
        bbox=concat_boxes(full),
        area=np.concatenate([p.area for p in full]),
        keypoints=None if first.keypoints is None else np.concatenate([p.keypoints for p in full]),
        segmentation=None
        if first.segmentation is None
        else [s for p in full for s in (p.segmentation or [])],
        rles=None if any(p.rles is None for p in full) else [x for p in full for x in (p.rles or [])],
        source=", ".join(p.source for p in parts) if source is None else source,
        warnings=[w for p in parts for w in p.warnings],
        skipped=sum(p.skipped for p in parts),
    )


# ------------------------------------------------------------------------ a large bbox file on two cores
# A forked child parses the tail of the file (:func:`results_tail`) while the parent reads the ground truth
# and then the head (:func:`results_with_tail`). Any fault anywhere makes these return None: the caller then
# loads the file in one process, which raises the error with the record it names (so the messages, and which
# fault is reported first, are those of the one-process path).

#: (image ids, category ids, scores, N×4 boxes) of one piece, validated but not yet mapped to the ground truth
RawColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def results_byte_cost(gt_bytes: int = 0) -> float:
    """Parse time of a byte of bbox results relative to a byte of a ground truth of ``gt_bytes``: about 1 with
    orjson or json; with msgspec (:mod:`deteval.io.coco_typed`) 0.5 against a ground truth read whole by
    orjson (bench_coco bbox 5k: 5.6 ms/MB against 11.3 ms/MB), and about 1 again against one read in pieces
    (from ``2 * CHUNK_BYTES``), whose annotations are decoded by type too (4.9-5.2 ms/MB against the
    results' 5.3-5.8)."""
    if not typed_decoding():
        return 1.0
    return 1.0 if gt_bytes >= 2 * CHUNK_BYTES else 0.5


#: The parent's cost of taking in the child's results (unpickling and mapping their ids; they come joined),
#: per byte of results parsed by the child, in bytes of ground truth parsed (:func:`split_reading`).
#: Objects365-like set (bench_scale --full), reading alone, DETEVAL_PROCESSES=2, load average 1.5-1.7, wall
#: (parent CPU / child CPU) s: 0.15: 0.88 (0.87/0.68), 0.83, 0.81; 0.2: 0.83 (0.79/0.67), 0.82, 0.79;
#: 0.3: 0.80 (0.75/0.69), 0.83, 0.81, 0.82, 0.80; 0.35: 0.81 (0.73/0.70), 0.81; 0.45: 0.86 (0.72/0.75), 0.85
#: (the parent waits); 0: the parent waits 0.05-0.07 s for the child's value.
HANDOVER_COST = 0.3


#: When the parent reads the whole ground truth and the head of the results, a byte of results weighs this many
#: times :func:`results_byte_cost` in the split (:func:`split_reading`), on both sides: the parent maps the
#: head's ids to the ground truth as it parses them, and the child writes its columns into a
#: :class:`TailBuffer` that the parent then maps and copies. Reading alone, the parent's end (wall s, fastest /
#: median of 5 fresh processes, interleaved; the columns in a TailBuffer): bench_coco 20k (59 MB ground truth,
#: 120 MB results) 1.0: 0.425 / 0.450 (the parent waits 40-60 ms for the child), 1.17: 0.401 / 0.433, 1.3:
#: 0.409 / 0.427 (the child waits); bench_coco 5k 1.0: 0.115 / 0.116, 1.2: 0.110 / 0.111. (Not in the choice of
#: the split: the Objects365-like set, whose 134 MB ground truth weighs more than its 117 MB of results at 1.0,
#: read its way in 0.755 s against 0.989 s with the whole ground truth here.)
HEAD_SPLIT_COST = 1.2


def split_reading(results_bytes: int, gt_bytes: int, results_cost: float | None = None) -> tuple[int, int]:
    """(the byte from which the child parses the results, the bytes of the ground truth's annotations array
    it parses first): both processes then take about as long, a byte of results costing ``results_cost``
    bytes of ground truth (default :func:`results_byte_cost`; ``HEAD_SPLIT_COST`` times that when the parent
    reads the whole ground truth and the head). A ground truth that costs less than the
    results stays whole with the parent, which also parses the head of the results; a costlier one gives its
    first pieces to the child, which then parses all the results (checking the first record's loadRes branch
    as the parent would; a results file too small to cut stays whole with the parent). The parent also takes
    in the child's results (:data:`HANDOVER_COST`), which counts on its side. ``gt_bytes`` 0: a ground truth
    in memory."""
    w = results_byte_cost(gt_bytes) if results_cost is None else results_cost
    if gt_bytes <= w * results_bytes or gt_bytes < 2 * CHUNK_BYTES:
        h = w * HEAD_SPLIT_COST
        return max(CHUNK_BYTES, int((h * results_bytes - gt_bytes) / (2 * h))), 0
    theirs = results_bytes if results_bytes >= 2 * CHUNK_BYTES else 0
    ours = results_bytes - theirs
    head = int(gt_bytes + w * (ours - theirs) + int(theirs * HANDOVER_COST)) // 2
    return (0 if theirs else CHUNK_BYTES), max(0, min(head, gt_bytes - 2 * CHUNK_BYTES))


def _part_texts(
    path: str | PathLike[str], start: int, head: bool, chunk: int | None = None
) -> Iterator[bytes] | None:
    """The text (:func:`_piece_text`) of each piece that begins before byte ``start`` (``head``; always the
    first piece) or of each other piece; None if the file is not read in pieces."""
    read = _read_in_pieces(Path(path), chunk)
    if read is None:
        return None
    data, cuts = read
    return (
        _piece_text(data, cuts, i)
        for i in range(len(cuts) + 1)
        if (i == 0 or _piece_bounds(data, cuts, i)[0] < start) == head
    )


def _part_pieces(
    path: str | PathLike[str], start: int, head: bool, chunk: int | None = None
) -> Iterator[list | None] | None:
    """The records of each piece of :func:`_part_texts` (None for a piece that does not parse)."""
    texts = _part_texts(path, start, head, chunk)
    file = str(path)
    return None if texts is None else (_parsed_piece(text, file) for text in texts)


def _bbox_piece_bytes() -> int:
    """The pieces of a large file in a bbox evaluation, results and ground truth, one process or two: a quarter
    of ``CHUNK_BYTES`` (which still decides which files are read in pieces). A piece's decoded records then
    stay in the processor's cache while their columns are read off them (Objects365-like set, one process:
    the ground truth 1.12 -> 0.85 s, the results 0.85 -> 0.70 s; bench_coco 5k results 0.156 -> 0.140 s), and
    two processes' shares of a file end within a megabyte of the split byte (whole pieces overshot by up to
    4 MB, about 20 ms of parsing)."""
    return CHUNK_BYTES // 4


#: What a child that read the tail of a bbox results file sends back (:func:`results_tail`): how many pieces it
#: read and their columns, joined into one when it read them all (the parent then takes them as they are), or
#: the number of rows it wrote into the :class:`TailBuffer` shared with the parent
RawTail = tuple[int, list[RawColumns] | int]

#: The fewest bytes of text a bbox result record takes (``{"image_id":1,"category_id":1,"bbox":[1,1,1,1],
#: "score":1}`` and a comma: 58), with room to spare: a :class:`TailBuffer` for a tail of n bytes holds
#: n // this many rows (a record it cannot hold only sends the columns through the pipe, as before).
MIN_BBOX_RECORD_BYTES = 48


class TailBuffer:
    """Memory shared with the child that reads the tail of a bbox results file (anonymous, mapped before the
    fork): the child writes each piece's columns into it as it reads them (:meth:`put`) and this process
    reads them in place once the child is done (:meth:`columns`), instead of the columns coming pickled
    through the pipe (90 MB of text at 20k images: 50 MB of columns, copied into the pipe and out of it after
    the child has finished, 30-40 ms this process waits). With ``head_bytes`` (the byte where the tail
    begins), room for the rows of the head of the file (this process's share) is left before the tail's: this process writes its columns
    there (:meth:`put_head`) while the child reads, maps the tail's ids in place, and the results' columns
    are the buffer's, not a concatenation of both parts. Only the pages written take memory; the rest is
    address space."""

    def __init__(self, tail_bytes: int, head_bytes: int = 0) -> None:
        # (this process's pieces begin before byte ``head_bytes`` and end within two pieces of it)
        head = head_bytes + 2 * _bbox_piece_bytes() if head_bytes > 0 else 0
        self.base = head // MIN_BBOX_RECORD_BYTES + 1 if head else 0
        self.rows = self.base + max(0, tail_bytes) // MIN_BBOX_RECORD_BYTES + 1
        self.map = mmap.mmap(-1, 56 * self.rows)
        self.used = 0  # (rows the child wrote, from row ``base``)

    def _views(self) -> RawColumns:
        n = self.rows
        return (
            np.frombuffer(self.map, dtype=np.int64, count=n),
            np.frombuffer(self.map, dtype=np.int64, count=n, offset=8 * n),
            np.frombuffer(self.map, dtype=np.float64, count=n, offset=16 * n),
            np.frombuffer(self.map, dtype=np.float64, count=4 * n, offset=24 * n).reshape(n, 4),
        )

    def _populate(self, advice: int, lo: int, hi: int) -> None:
        """Map the pages of rows [lo, hi) of every column in one call each (Linux 5.14+: MADV_POPULATE_*),
        not one page fault per 4 KB (elsewhere: nothing, the pages fault in as they are touched)."""
        for at, width in ((0, 8), (8, 8), (16, 8), (24, 32)):
            a = (at * self.rows + width * lo) // mmap.PAGESIZE * mmap.PAGESIZE
            try:
                self.map.madvise(advice, a, at * self.rows + width * hi - a)
            except (OSError, ValueError):
                return

    def put(self, raw: RawColumns) -> RawColumns | None:
        """(the child) Write one piece's columns after the previous ones; their views in the buffer, or None if
        they do not fit or are not the typed columns (int64 ids, float64 scores and N×4 boxes)."""
        n = raw[0].shape[0]
        lo = self.base + self.used
        if not self._fits(raw, lo):
            return None
        views = self._write(raw, lo)
        self.used += n
        return views

    def _fits(self, raw: RawColumns, lo: int, hi: int | None = None) -> bool:
        """Whether ``raw`` (typed columns: int64 ids, float64 scores and N×4 boxes) fits in rows [lo, hi)."""
        img, cat, score, bbox = raw
        n = img.shape[0]
        return (
            lo + n <= (self.rows if hi is None else hi)
            and (img.dtype, cat.dtype, score.dtype, bbox.dtype) == (_I8, _I8, _F8, _F8)
            and cat.shape == score.shape == (n,)
            and bbox.shape == (n, 4)
        )

    def _write(self, raw: RawColumns, lo: int) -> RawColumns:
        hi = lo + raw[0].shape[0]
        self._populate(MADV_POPULATE_WRITE, lo, hi)
        views = tuple(v[lo:hi] for v in self._views())
        for v, col in zip(views, raw):
            v[...] = col
        return cast(RawColumns, views)

    def put_head(self, parts: Sequence[CocoResults]) -> int | None:
        """(this process) Write the head's columns (ids mapped) so that they end where the tail's rows begin;
        the row where they begin, or None if they do not fit or are not plain typed bbox columns."""
        lo = self.base - sum(len(p) for p in parts)
        if lo < 0:
            return None
        raws: list[RawColumns] = []
        at = lo
        for p in parts:
            boxes = stored_boxes(p)
            if p.warnings or p.skipped or not isinstance(boxes, np.ndarray):
                return None
            raw = (p.img, p.cat, p.score, boxes)
            if not self._fits(raw, at, self.base):
                return None
            raws.append(raw)
            at += len(p)
        at = lo
        for raw in raws:
            self._write(raw, at)
            at += raw[0].shape[0]
        return lo

    def release_ids(self) -> None:
        """Free the pages of the image and category id columns (mapped to the ground truth once read): the
        scores and boxes the results keep as views hold the buffer, and with it those pages, until they go
        (Linux' MADV_REMOVE; elsewhere nothing)."""
        try:
            self.map.madvise(mmap.MADV_REMOVE, 0, 16 * self.rows // mmap.PAGESIZE * mmap.PAGESIZE)
        except (AttributeError, OSError, ValueError):
            pass

    def columns(self, n: int, lo: int | None = None) -> RawColumns | None:
        """(this process) The first ``n`` rows the child wrote, from row ``lo`` on when given (the head's,
        :meth:`put_head`); None if it claims more than the buffer holds."""
        if not 0 <= n <= self.rows - self.base:
            return None
        self._populate(MADV_POPULATE_READ, self.base, self.base + n)
        first = self.base if lo is None else lo
        return cast(RawColumns, tuple(v[first : self.base + n] for v in self._views()))


_I8, _F8 = np.dtype(np.int64), np.dtype(np.float64)
#: Linux' madvise flags that map a range's pages at once, to read or to write (not in Python's mmap module
#: before 3.13)
MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)
MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)


def _in_tail(data: Any, cuts: list[tuple[int, int]], i: int, start: int) -> bool:
    """Whether piece ``i`` is the child's: it begins at or after byte ``start``; the first piece only when
    ``start`` is 0 (the child then reads every piece)."""
    return start <= 0 or (i > 0 and _piece_bounds(data, cuts, i)[0] >= start)


def results_tail(path: str | PathLike[str], start: int, shared: TailBuffer | None = None) -> RawTail | None:
    """The child's share: every piece that begins at or after byte ``start`` (the first one only from
    ``start`` 0, its first record then checked for loadRes' bbox branch, as the parent does), as validated
    unmapped columns (:data:`RawTail`: written into ``shared`` when every piece fits there, only their number
    of rows then sent; else joined from ``start`` 0, where the parent has no columns of its own to put first,
    or piece by piece, as the parent puts them after its own in one copy); None on any fault."""
    read = _read_in_pieces(Path(path), _bbox_piece_bytes())
    if read is None:
        return None
    data, cuts = read
    file = str(path)
    out: list[RawColumns] = []
    in_shared = shared is not None
    with paused():
        for i in range(len(cuts) + 1):
            if not _in_tail(data, cuts, i, start):
                continue
            text = _piece_text(data, cuts, i)
            raw = bbox_columns(text)
            if raw is None:
                records = _parsed_piece(text, file)
                if records is None or (i == 0 and not _bbox_branch(records[0])):
                    return None
                try:
                    raw = _raw_bbox_columns(records, file)
                except DetevalError:
                    return None
                del records
            if in_shared and shared is not None:
                # (written while the piece's columns are in cache; one that does not fit: every piece goes
                # through the pipe, those already written as views of the buffer)
                views = shared.put(raw)
                in_shared = views is not None
                raw = raw if views is None else views
            out.append(raw)
    if not out:
        return None
    if in_shared and shared is not None:
        return len(out), shared.used
    if start <= 0 and len(out) > 1:
        return len(out), [cast(RawColumns, tuple(np.concatenate(col) for col in zip(*out)))]
    return len(out), out


def results_with_tail(
    path: str | PathLike[str],
    gt: CocoGroundTruth,
    start: int,
    tail: Callable[[], RawTail | None],
    shared: TailBuffer | None = None,
) -> CocoResults | None:
    """The parent's share (the pieces before byte ``start``, mapped to ``gt`` as they are parsed; none from
    ``start`` 0), then the child's (``tail()``: what :func:`results_tail` returned, its columns in ``shared``
    when it says so) mapped and appended; None on any fault."""
    read = _read_in_pieces(Path(path), _bbox_piece_bytes())
    if read is None:
        return None
    data, cuts = read
    file = str(path)
    parts: list[CocoResults] = []
    n_tail = 0
    with paused():
        for i in range(len(cuts) + 1):
            if _in_tail(data, cuts, i, start):
                n_tail += 1
                continue
            text = _piece_text(data, cuts, i)
            typed = _typed_bbox(text, gt, file)
            if typed is not None:
                parts.append(typed)
                continue
            records = _parsed_piece(text, file)
            if records is None or (i == 0 and not _bbox_branch(records[0])):
                return None
            try:
                parts.append(_bbox_columns(records, gt, file))
            except DetevalError:
                return None
            del records
        del data, read  # (the mapping is closed: the tail comes from the child)
        # (while the child reads: the head's columns written into the buffer, just before the tail's rows)
        head_lo = shared.put_head(parts) if shared is not None and shared.base and parts else None
        got = tail()
        if got is None or got[0] != n_tail:
            return None
        columns_in = got[1]
        in_buffer = isinstance(columns_in, int)
        if isinstance(columns_in, int) and head_lo is not None and shared is not None:
            return _joined_in_buffer(shared, columns_in, head_lo, parts[0], gt, file)
        if isinstance(columns_in, int):
            one = None if shared is None else shared.columns(columns_in)
            if one is None:
                return None
            columns_in = [one]
        for columns in columns_in:
            try:
                parts.append(_mapped_bbox(columns, gt, file))
            except DetevalError:
                return None
        del got, columns_in
        if in_buffer and shared is not None:
            shared.release_ids()  # (mapped: the scores and boxes may stay in the buffer, the ids need not)
    # (the child's columns alone: taken as they are, not copied once more)
    return parts[0] if len(parts) == 1 else concat_results(parts, file)


def _joined_in_buffer(
    shared: TailBuffer, n: int, lo: int, first: CocoResults, gt: CocoGroundTruth, file: str
) -> CocoResults | None:
    """The results from the buffer's rows: the head's from row ``lo`` (:meth:`TailBuffer.put_head`), then the
    ``n`` the child wrote, their ids mapped to ``gt`` in place; the columns are views of the buffer, with
    ``first``'s other fields (the head's first part: plain bbox columns, as every part). None if an id is
    unknown (the one-process path then names it)."""
    tail = shared.columns(n)
    whole = shared.columns(n, lo)
    if tail is None or whole is None:
        return None
    try:
        img = _index_of(tail[0], gt.image_ids, "image_id", file, None)
        cat = _index_of(tail[1], gt.cat_ids, "category_id", file, None)
    except DetevalError:
        return None
    tail[0][...], tail[1][...] = img, cat
    bbox = whole[3]
    return replace(first, img=whole[0], cat=whole[1], score=whole[2], bbox=bbox, area=bbox[:, 2] * bbox[:, 3])


# ------------------------------------------------------------- a large segm or keypoints file on two cores
# Forked once the ground truth is read: a child reads the tail of the file against it (:func:`results_part`)
# while the parent reads the head; both run the one-process code on whole pieces (every value of a record
# depends on that record alone), and any fault or doubt makes the parent read the file in one process.


def results_part(
    path: str | PathLike[str], gt: CocoGroundTruth, iou_type: str, start: int, head: bool
) -> list[CocoResults] | None:
    """The pieces of a segm or keypoints results file that begin before byte ``start`` (``head``; always the
    first) or the others, read against ``gt`` as the one-process path reads them; None on any fault, or if a
    piece's first record is not in the loadRes branch of ``iou_type`` (the file's first record decides the
    branch of every record)."""
    if iou_type == "keypoints" and (gt.keypoints is None or not len(gt)):
        return None
    # quarter pieces: the two parts then end within a megabyte of ``start`` (the parts balanced)
    pieces = _part_pieces(path, start, head, CHUNK_BYTES // 4)
    if pieces is None:
        return None
    file = str(path)
    parts: list[CocoResults] = []
    with paused():
        for records in pieces:
            if records is None:
                return None
            try:
                if loadres_branch(records[0], file) != iou_type:
                    return None
                part = _results_from_records(records, file, False, gt, iou_type, kind=iou_type)
            except DetevalError:
                return None
            # segm: a piece whose given boxes are not all valid gets NaN boxes throughout, as the whole
            # file would only if it held no valid box column at all: left to the one-process path
            boxes = stored_boxes(part)  # (boxes made from masks are never NaN)
            if (isinstance(boxes, np.ndarray) and np.isnan(boxes).any()) or part.warnings:
                return None
            parts.append(part)
            del records
    return parts


def results_two_parts(
    path: str | PathLike[str],
    gt: CocoGroundTruth,
    iou_type: str,
    start: int,
    tail: Callable[[], list[CocoResults] | None],
) -> CocoResults | None:
    """The head read here (:func:`results_part`), then the tail (``tail()``: the child's) appended; None on
    any fault (the caller then reads the file in one process, which names it)."""
    parts = results_part(path, gt, iou_type, start, True)
    if parts is None:
        return None
    rest = tail()
    if rest is None:
        return None
    return concat_results(parts + rest, str(path))


def _result_keys(records: list, gt: CocoGroundTruth, file: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Image index, category index and score columns of result records (ids checked against ``gt``)."""
    img = _index_of(_result_ids(records, "image_id", file), gt.image_ids, "image_id", file, None)
    cat = _index_of(_result_ids(records, "category_id", file), gt.cat_ids, "category_id", file, None)
    return img, cat, _floats(_field(records, "score", file, None), "score", file, None)


def _result_ids(records: list, key: str, file: str) -> np.ndarray:
    return _id_array(_field(records, key, file, None), key, file, None)


def _bbox_columns(records: list, gt: CocoGroundTruth, file: str) -> CocoResults:
    img, cat, score = _result_keys(records, gt, file)
    bbox = _boxes(_field(records, "bbox", file, None), file, None)
    return CocoResults(img=img, cat=cat, score=score, bbox=bbox, area=bbox[:, 2] * bbox[:, 3], source=file)


def _raw_bbox_columns(records: list, file: str) -> RawColumns:
    """:func:`_bbox_columns` without the ground truth: every check but the ids' presence in it."""
    return (
        _result_ids(records, "image_id", file),
        _result_ids(records, "category_id", file),
        _floats(_field(records, "score", file, None), "score", file, None),
        _boxes(_field(records, "bbox", file, None), file, None),
    )


#: pycocotools stores mask sizes and pixel counts in 32-bit unsigned ints: h*w must stay below 2**32.
MAX_MASK_PIXELS = 2**32

#: Polygon coordinates beyond this are refused: pycocotools rasterises the whole outline, so a stray
#: 1e12 (or a NaN, which becomes INT_MIN) would take unbounded time and memory.
MAX_POLYGON_COORD = 1e6


def check_segmentation(segm: Any, file: str, record: str | int) -> None:
    """Refuse what pycocotools would crash on or rasterise without bound: polygons that are not lists of at
    least 4 finite numbers within ±1e6, RLE objects without ``counts`` or a ``[height, width]`` ``size``."""
    if isinstance(segm, dict):
        size = segm.get("size")
        if "counts" not in segm or not (
            isinstance(size, (list, tuple))
            and len(size) == 2
            and all(type(v) is int and v >= 0 for v in size)
            and size[0] * size[1] < MAX_MASK_PIXELS
        ):
            raise InputFormatError(
                "an RLE segmentation needs 'counts' and 'size': [height, width] (below 2**32 pixels)",
                file=file,
                record=record,
            )
        counts = segm["counts"]
        # (a count from 2**63 on: orjson reads it from a file as a float, refused so; refused so in a dict too)
        if not isinstance(counts, (str, bytes, list)) or (
            isinstance(counts, list) and not all(type(v) is int and 0 <= v < 2**63 for v in counts)
        ):
            raise InputFormatError(
                "RLE 'counts' must be a string or a list of counts", file=file, record=record
            )
        return
    if not isinstance(segm, list) or not segm:
        raise InputFormatError(f"invalid segmentation {str(segm)[:60]!r}", file=file, record=record)
    for poly in segm:
        if isinstance(poly, dict):
            check_segmentation(poly, file, record)
            continue
        if isinstance(poly, list) and poly and (len(poly) < 6 or len(poly) % 2):
            # pycocotools drops an odd last coordinate silently, reads a first polygon of 4 numbers as a
            # box and fails ("Argument 'bb' has incorrect type"), and rasterises other 2-point ones to nothing
            raise InputFormatError(
                f"a polygon needs an even number of coordinates, at least 6 (3 points x, y), got {len(poly)}",
                file=file,
                record=record,
            )
        try:
            if not isinstance(poly, list) or len(poly) < 6:
                raise TypeError
            # C-level passes: a string or None raises TypeError, a NaN makes the sum NaN (min/max skip it)
            lo, hi, total = min(poly), max(poly), sum(poly)
            if not _BOOL_SET.isdisjoint(map(type, poly)):  # (pycocotools would read true as 1)
                raise TypeError
        except (TypeError, ValueError):
            raise InputFormatError(
                f"a polygon must be a list of at least 6 numbers, got {str(poly)[:60]}",
                file=file,
                record=record,
            ) from None
        if not (-MAX_POLYGON_COORD <= lo and hi <= MAX_POLYGON_COORD and math.isfinite(total)):
            raise ValidationError(
                "polygon coordinates must be finite and within \u00b11e6", file=file, record=record
            )


def check_rle_size(segm: Any, hw: np.ndarray, file: str, record: str | int) -> None:
    """An RLE mask must have its image's size: pycocotools gives masks of different sizes an IoU of -1, so
    a wrong-size mask would silently never match."""
    h, w = (int(v) for v in hw)
    parts = [segm] if isinstance(segm, dict) else [p for p in segm if isinstance(p, dict)]
    for part in parts:
        if h >= 0 and w >= 0 and list(part["size"]) != [h, w]:
            raise ValidationError(
                f"RLE size {list(part['size'])} differs from the image's [height, width] [{h}, {w}]",
                file=file,
                record=record,
            )


def to_rle(segm: Any, h: int, w: int, file: str, record: str | int) -> Any:
    """pycocotools' ``annToRLE``: polygons are merged into one RLE, uncompressed RLE is compressed."""
    from pycocotools import mask as mask_utils

    check_segmentation(segm, file, record)
    check_rles([segm], file, [record])
    try:
        if isinstance(segm, list):
            return mask_utils.merge(mask_utils.frPyObjects(segm, h, w))
        if isinstance(segm, dict) and isinstance(segm.get("counts"), list):
            return mask_utils.frPyObjects(segm, h, w)
        if isinstance(segm, dict) and "counts" in segm and "size" in segm:
            return segm
    except Exception as exc:
        raise InputFormatError(f"invalid segmentation: {exc}", file=file, record=record) from None
    raise InputFormatError(f"invalid segmentation {str(segm)[:60]!r}", file=file, record=record)


def _image_hw(gt: CocoGroundTruth, img: int, file: str, record: Any) -> tuple[int, int]:
    h, w = (int(v) for v in gt.image_hw[img])
    if h < 0 or w < 0:
        raise InputFormatError(
            f"image {gt.image_ids[img]!r} has no height/width (needed for polygons)", file=file, record=record
        )
    return h, w


def _plain_rles_fit(segmentation: list, img: np.ndarray, gt: CocoGroundTruth) -> bool:
    """Whether every entry is a compressed RLE dict (string ``counts``, ``size`` two ints) of its image's size:
    what :func:`check_segmentation` and :func:`check_rle_size` accept, checked in a few C-level passes. False
    means only "not sure": the record-by-record checks then run and name the bad record."""
    hw = plain_rle_sizes(segmentation)
    return hw is not None and bool((hw == gt.image_hw[img]).all())


def plain_rle_sizes(segmentation: list) -> np.ndarray | None:
    """The ``[height, width]`` of every entry (an N×2 int64 array) when every one is a compressed RLE dict
    (string ``counts``, ``size`` two ints, each below 2**31, below 2**32 pixels): what
    :func:`check_segmentation` accepts, checked in a few C-level passes; None means only "not sure"."""
    if not segmentation or set(map(type, segmentation)) != {dict}:
        return None
    try:
        counts = list(map(itemgetter("counts"), segmentation))
        sizes = list(map(itemgetter("size"), segmentation))
    except KeyError:
        return None
    if set(map(type, counts)) != {str} or set(map(type, sizes)) != {list} or set(map(len, sizes)) != {2}:
        return None
    if set(map(type, chain.from_iterable(sizes))) != {int}:
        return None
    try:
        hw = np.fromiter(chain.from_iterable(sizes), dtype=np.int64, count=2 * len(sizes)).reshape(-1, 2)
    except OverflowError:
        return None
    ok = (hw >= 0).all() and (hw < 2**31).all() and (hw[:, 0] * hw[:, 1] < MAX_MASK_PIXELS).all()
    return hw if ok else None


def _rles(segmentation: list, img: np.ndarray, gt: CocoGroundTruth, file: str) -> tuple[list, np.ndarray]:
    """Every mask validated and converted as loadRes' ``annToRLE`` would, and its ``area`` (read from the
    runs decoded in the validation for compressed RLEs; from pycocotools for the converted ones)."""
    plain = _plain_rles_fit(segmentation, img, gt)
    if not plain:
        for i, s in enumerate(segmentation):
            if s is None:
                raise InputFormatError("missing field 'segmentation'", file=file, record=i)
            check_segmentation(s, file, i)
            check_rle_size(s, gt.image_hw[int(img[i])], file, i)
    hw = gt.image_hw[img] if plain else None  # (the sizes just checked: each mask's image's)
    pixels = hw[:, 0] * hw[:, 1] if hw is not None else None
    area = check_rles(segmentation, file, range(len(segmentation)), pixels=pixels)
    if plain:  # compressed RLEs, used as they are
        return list(segmentation), area
    out = []
    for i, s in enumerate(segmentation):
        if isinstance(s, dict) and not isinstance(s.get("counts"), list):
            out.append(s)
            continue
        out.append(to_rle(s, *_image_hw(gt, int(img[i]), file, i), file, i))
    converted = np.flatnonzero(np.isnan(area))
    if converted.size:
        area[converted] = _mask_areas([out[i] for i in converted.tolist()], file)
    return out, area


def _check_given_segmentations(segmentation: list, img: np.ndarray, gt: CocoGroundTruth, file: str) -> None:
    """Check the segmentations results carry (None: absent) at load, so that a bad one can be skipped."""
    given = [i for i, s in enumerate(segmentation) if s is not None]
    for i in given:
        check_segmentation(segmentation[i], file, i)
        check_rle_size(segmentation[i], gt.image_hw[int(img[i])], file, i)
    check_rles([segmentation[i] for i in given], file, given)


def _mask_areas(rles: list, file: str) -> np.ndarray:
    """pycocotools' ``area`` of RLEs already validated and converted (:func:`_rles`)."""
    from pycocotools import mask as mask_utils

    try:
        # chunks of <= 255: pycocotools' _mask.area builds a uint8 array of the count (fails beyond 255 on numpy 2)
        return np.concatenate(
            [
                np.asarray(mask_utils.area(rles[i : i + 255]), dtype=np.float64).reshape(-1)
                for i in range(0, len(rles), 255)
            ]
            or [np.zeros(0)]
        )
    except Exception as exc:
        raise InputFormatError(f"invalid RLE segmentation: {exc}", file=file) from None


def _mask_boxes(rles: list, file: str) -> np.ndarray:
    """pycocotools' ``toBbox`` of RLEs already validated and converted (:func:`_rles`)."""
    from pycocotools import mask as mask_utils

    try:
        return np.concatenate(
            [
                np.asarray(mask_utils.toBbox(rles[i : i + 255]), dtype=np.float64).reshape(-1, 4)
                for i in range(0, len(rles), 255)
            ]
            or [np.zeros((0, 4))]
        )
    except Exception as exc:
        raise InputFormatError(f"invalid RLE segmentation: {exc}", file=file) from None
