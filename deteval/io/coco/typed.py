"""COCO bbox results, and the annotations of a ground truth read in pieces, decoded by type (msgspec): the
columns without a dict per record (the annotations: :func:`gt_annotations`, below; oriented-box results and
ground truth: :func:`obb_columns`, :func:`obb_gt_columns`, at the end).

A bbox results file is a list of ``{"image_id", "category_id", "bbox", "score"}`` records. Parsing it with
orjson makes a dict, a list and eight numbers per record, and the loader then pulls each field out of every
dict again; msgspec decodes it straight into small fixed records (a ``Struct`` per record, a tuple for the
box), faster, and the columns are read off them in four C-level passes.

This is only a shortcut: :func:`bbox_columns` returns columns only for a text it can vouch that the ordinary
path (:func:`deteval.io.coco.read_json` or its piece reader, then the field checks) reads *without error and
to the same arrays*, and None for anything else, after which the caller runs the ordinary path on the same
bytes, which gives its own result or error message. It vouches when:

* the text decodes as a JSON list of objects holding exactly the four keys, and perhaps a string
  ``file_name`` (Ultralytics writes it; the loader never reads it), with a box of four numbers (an unknown
  key, a missing one, a ``true``/``false``, a string or null, a whole float as an id, ``NaN``, a BOM, text
  that is not UTF-8 or not JSON: msgspec refuses it);
* no key is repeated (msgspec keeps the last value silently): the text's ``"`` characters
  (:func:`deteval.io.jsonkeys.quote_count`; its only strings are the keys and the file names, two quotes each
  and one more per escaped quote) are twice the keys and names decoded exactly when none repeats;
* every id fits an int64, every coordinate is below 2**53 and every score below 2**63 in magnitude, all
  finite, and no box has a negative width or height. In that range the values are the ones orjson gives
  (the same integers, floats rounded to nearest by both parsers; orjson reads an integer beyond 2**64 as a
  float) and the ordinary path converts them to the same float64 (an int64 and a Python int round alike).

A list whose every record also carries a compressed RLE mask (``"segmentation": {"size", "counts"}``, as
detectron2 and mmdetection write a mask model's results) is read the same way for a bbox evaluation, which
never reads the masks (loadRes' bbox branch): decoded with the Struct of :func:`segm_bbox_columns`, its box
columns taken under the same checks. Anything outside (a value at the bound, an empty list, an ``id`` key, a
polygon or any other segmentation, only some records with a mask) is left to the ordinary path, which also
names the record at fault.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Callable
from functools import partial
from itertools import chain
from operator import attrgetter, countOf
from types import ModuleType
from typing import Annotated, Any

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError
from deteval.io.jsonkeys import key_tokens, quote_count

__all__ = [
    "BboxColumns",
    "GtBoxColumns",
    "ObbColumns",
    "ObbGtColumns",
    "SegmColumns",
    "bbox_columns",
    "gt_annotations",
    "gt_box_columns",
    "obb_columns",
    "obb_gt_columns",
    "segm_bbox_columns",
    "segm_columns",
    "struct_field",
    "typed_decoding",
]

#: (image ids int64, category ids int64, scores float64, N×4 boxes float64) of the records, in file order
BboxColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

_FIELDS = ("image_id", "category_id", "bbox", "score", "file_name")
_IMG, _CAT, _BOX, _SCORE, _NAME = (attrgetter(f) for f in _FIELDS)
_SEGM = attrgetter("segmentation")


def _build(module: ModuleType) -> Any:
    number = int | float  # (a plain ``float`` field would turn 2**53 + 1 into 2**53 before any check)
    return _records_decoder(
        module,
        "BboxResult",
        [
            ("image_id", int),
            ("category_id", int),
            ("bbox", tuple[number, number, number, number]),
            ("score", number),
            ("file_name", str | None, None),  # (a JSON null: decoded as absent, then one key too many)
        ],
    )


def _records_decoder(module: ModuleType, name: str, fields: list) -> Any:
    """A decoder of a JSON list of records with exactly ``fields`` (msgspec ``defstruct`` fields)."""
    record = module.defstruct(name, fields, forbid_unknown_fields=True, gc=False)  # (numbers: no cycles)
    return module.json.Decoder(list.__class_getitem__(record))  # (list[record]: ``record`` is made here)


_UNBUILT: Any = object()
#: The decoder of a bbox results list; None: msgspec is not installed (or the tests turned it off). Built on
#: first use: importing msgspec (with typing_extensions) takes time that only a large file repays. Each
#: decoder below is such a module global, built by :func:`_cached`.
_DECODER: Any = _UNBUILT
#: msgspec's UNSET (a field the record does not have), once msgspec is imported
UNSET: Any = object()

#: Whole files from this size on are decoded by type (the pieces of a large file always are): the time it saves
#: grows with the file, and a smaller file would not repay the import.
MIN_BYTES = 2 << 20


def _cached(name: str, build: Callable[[ModuleType], Any]) -> Any:
    """The decoder in the module global ``name``; if not yet built, ``build(msgspec)`` kept there (None
    without msgspec: the callers then take the ordinary path)."""
    global UNSET
    decoder = globals()[name]
    if decoder is _UNBUILT:
        try:  # (a dependency, but the loader reads every file without it; imported by name for the type check)
            module = importlib.import_module("msgspec")
            UNSET = module.UNSET
            decoder = build(module)
        except ImportError:  # pragma: no cover - exercised only without msgspec
            decoder = None
        globals()[name] = decoder
    return decoder


def typed_decoding() -> bool:
    """Whether bbox results are decoded by type (msgspec is installed), without importing it."""
    if _DECODER is _UNBUILT:
        return importlib.util.find_spec("msgspec") is not None
    return _DECODER is not None


def bbox_columns(text: bytes) -> BboxColumns | None:
    """The columns of the bbox results list ``text`` (JSON), as the ordinary loader would read them; None
    whenever that is not certain (see the module's docstring) or msgspec is not installed."""
    records = _decoded(_cached("_DECODER", _build), text)
    if records is None:
        return _masked_bbox_columns(text)
    with paused():
        # (the text's strings: the keys and the file names; a repeated key adds two quotes, nothing decoded.
        # The quotes are at least twice the keys and names decoded, so as many as the four keys alone means no
        # name and no repeat, without a pass over the names)
        quotes, n = quote_count(text), len(records)
        if quotes != 8 * n and quotes != 2 * (4 * n + 2 * (n - countOf(map(_NAME, records), None))):
            return None
    return _result_columns(records, _BOX, 4)


def _result_columns(records: list, box: Callable[[Any], Any], width: int) -> BboxColumns | None:
    """Image ids, category ids, scores (:func:`_key_columns`) and the ``width`` numbers of ``box(record)`` of
    decoded results; None for a value out of the ordinary path's exact range: those of the keys, a box value
    not below 2**53 in magnitude (also NaN), a negative width or height (the box's third and fourth numbers)."""
    keys = _key_columns(records)
    if keys is None:
        return None
    n = len(records)
    with paused():
        try:
            boxes = np.fromiter(chain.from_iterable(map(box, records)), np.float64, width * n).reshape(
                n, width
            )
        except OverflowError:  # (beyond float64 for a number)
            return None
    if not (np.abs(boxes) < 2.0**53).all():
        return None  # (also NaN: not below anything)
    if (boxes[:, 2] < 0).any() or (boxes[:, 3] < 0).any():
        return None
    return (*keys, boxes)


def _key_columns(records: list) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Image ids, category ids and scores of decoded results; None for an id beyond int64 or a score not
    below 2**63 in magnitude (also NaN), where the ordinary path reads other values."""
    n = len(records)
    with paused():
        try:
            img = np.fromiter(map(_IMG, records), np.int64, n)
            cat = np.fromiter(map(_CAT, records), np.int64, n)
            score = np.fromiter(map(_SCORE, records), np.float64, n)
        except OverflowError:  # (an integer beyond int64, or beyond float64 for a number)
            return None
    if not (np.abs(score) < 2.0**63).all():
        return None  # (also NaN: not below anything)
    return img, cat, score


# ------------------------------------------------------------------- ground-truth annotations (bbox, keypoints)
# The annotation pieces of a large ground truth, for an evaluation that never reads ``segmentation`` (bbox,
# keypoints): each record decoded into a Struct whose segmentation stays unparsed (``msgspec.Raw``: no Python
# list per polygon to make and free, 60% of the piece's time). The loader's own field checks then run on the
# values read off the Structs (:func:`struct_field`), which are the Python values orjson gives (ints within
# [-2**63, 2**63), floats rounded to nearest, strings, lists), so the columns and every error are the ordinary
# path's. It vouches for a piece when the records hold no key but the fields below, each a number, a string id
# or a list of numbers (msgspec refuses anything else: a true/false, a null, an integer beyond those bounds,
# NaN), and no key repeats at any depth: the text's key tokens are as many as the keys decoded, counting the
# keys of each segmentation that is an object (an RLE, parsed for that) and none inside a polygon list (a key
# there, or a string holding a key token, makes the counts differ). Otherwise None: the caller parses the piece
# as before.

_GT_DECODER: Any = _UNBUILT


def _build_gt(module: ModuleType) -> Any:
    meta = module.Meta

    id_int = Annotated[int, meta(ge=-(2**63), le=2**63 - 1)]
    num = id_int | float  # (an integer beyond int64 is left to the ordinary path)
    unset = module.UNSET
    return _records_decoder(
        module,
        "GtAnnotation",
        [
            ("id", id_int | str, unset),
            ("image_id", id_int | str, unset),
            ("category_id", id_int | str, unset),
            ("bbox", list.__class_getitem__(num), unset),
            ("area", num, unset),
            ("iscrowd", num, unset),
            ("ignore", num, unset),
            ("segmentation", module.Raw, unset),
            ("num_keypoints", num, unset),
            ("keypoints", list.__class_getitem__(num), unset),
        ],
    )


_GT_FIELDS = (
    "id",
    "image_id",
    "category_id",
    "bbox",
    "area",
    "iscrowd",
    "ignore",
    "segmentation",
    "num_keypoints",
    "keypoints",
)


def gt_annotations(text: bytes) -> list | None:
    """The annotation records of the JSON list ``text`` as Structs whose fields the loader reads with
    :func:`struct_field`, or None whenever the ordinary parse is not certain to give the same values (see
    above) or msgspec is not installed."""
    records = _decoded(_cached("_GT_DECODER", _build_gt), text)
    if records is None:
        return None
    with paused():
        keys = sum(len(records) - list(map(attrgetter(f), records)).count(UNSET) for f in _GT_FIELDS)
        if not _keys_all_decoded(text, records, keys):
            return None
    return records


def _decoded(decoder: Any, text: bytes) -> list | None:
    """``decoder.decode(text)``; None without a decoder (no msgspec), for a text it refuses (msgspec's
    DecodeError and ValidationError, UnicodeDecodeError: ValueErrors) and for an empty list."""
    if decoder is None:
        return None
    with paused():
        try:
            records = decoder.decode(text)
        except ValueError:
            return None
    return records or None


def _keys_all_decoded(text: bytes, records: list, keys: int) -> bool:
    """Whether the ``keys`` decoded from ``text`` (the records' fields) are all the keys it holds, none
    repeated: tokens >= the keys written >= the fields decoded, so equal counts prove it (no RLE has a key,
    none repeats); more tokens: each RLE segmentation's keys (parsed for that; json keeps a repeated key's
    last value, so a repeat still leaves the counts apart) are added before comparing."""
    tokens = key_tokens(text)
    if tokens > keys:
        objects = [
            raw for raw in map(_SEGM, records) if raw is not UNSET and memoryview(raw)[0] == 0x7B
        ]  # "{"
        if objects:
            # each object's distinct keys (a repeated key is one entry), its values left unparsed: a crowd's
            # uncompressed counts are a list of hundreds of numbers
            try:
                keys += _object_keys(objects)
            except ValueError:
                return False
    return tokens == keys


_KEYS_DECODER: Any = _UNBUILT


def _build_keys(module: ModuleType) -> Any:
    return module.json.Decoder(dict.__class_getitem__((str, module.Raw)))


def _object_keys(objects: list) -> int:
    """The distinct keys of the JSON objects ``objects`` (msgspec ``Raw`` values decoded from a text)."""
    decoder = _cached("_KEYS_DECODER", _build_keys)
    if decoder is None:  # pragma: no cover - msgspec decoded the objects
        return sum(len(json.loads(bytes(raw))) for raw in objects)
    return sum(map(len, map(decoder.decode, objects)))


def struct_field(records: list, key: str, default: Any) -> tuple[list, int]:
    """``[r.key for r in records]``, an absent field given ``default`` (``...``: none); with the index of the
    first record without it (-1: none)."""
    values = list(map(attrgetter(key), records))
    if UNSET not in values:
        return values, -1
    if default is ...:
        return values, values.index(UNSET)
    return [default if v is UNSET else v for v in values], -1


# ------------------------------------------------------------------- ground-truth boxes, straight to columns
# A bbox evaluation reads six fields of an annotation, all numbers. Their Structs are decoded with the fields
# typed as tightly as the loader checks them (ids int64, a box of exactly four numbers, the area a number; the
# segmentation and keypoints left unparsed), required where the loader requires them, and the columns read off
# in one C-level pass each: no Python list per field, no second pass to find absent fields (an absent optional
# number decodes as NaN, which no JSON text holds), no ``np.array`` discovering types. It vouches only where the
# ordinary path (:func:`gt_annotations` or orjson, then ``_ann_columns``) gives the same arrays without error:
# every number below 2**53 in magnitude (where an integer and its float are the same value; msgspec refuses
# NaN, infinities and true/false), boxes without a negative side, areas not negative, iscrowd and ignore 0 or
# 1, iscrowd present (unless ``crowd_optional``), ids within int64, and every key decoded once (the count of
# :func:`_keys_all_decoded`). Anything else, a string id included, is left to the ordinary path.

_BOX_DECODER: Any = _UNBUILT
_NAN = float("nan")
#: The fields a bbox evaluation reads, and those it only counts (their values are never read)
_BOX_REQUIRED = ("id", "image_id", "category_id", "bbox", "area")
_BOX_COUNTED = ("segmentation", "num_keypoints", "keypoints")
_BOX_GET = attrgetter("bbox")

#: Columns of a piece of annotations, as :func:`deteval.io.coco.annotations.ann_columns` gives them for a bbox
#: evaluation
GtBoxColumns = dict[str, Any]


def _build_gt_boxes(module: ModuleType) -> Any:

    id_int = Annotated[int, module.Meta(ge=-(2**63), le=2**63 - 1)]
    raw, unset = module.Raw, module.UNSET
    return _records_decoder(
        module,
        "GtBox",
        [
            ("id", id_int),
            ("image_id", id_int),
            ("category_id", id_int),
            ("bbox", tuple[float, float, float, float]),
            ("area", float),
            ("iscrowd", float, _NAN),
            ("ignore", float, _NAN),
        ]
        + [(name, raw, unset) for name in _BOX_COUNTED],
    )


def gt_box_columns(text: bytes, crowd_optional: bool = False) -> GtBoxColumns | None:
    """The columns a bbox evaluation reads from the annotation records of the JSON list ``text`` (ids not yet
    mapped), or None whenever the ordinary path is not certain to give the same arrays without error (see
    above) or msgspec is not installed. ``crowd_optional``: an absent ``iscrowd`` is 0 (LVIS)."""
    records = _decoded(_cached("_BOX_DECODER", _build_gt_boxes), text)
    if records is None:
        return None
    n = len(records)
    with paused():
        ann_id, img, cat = (np.fromiter(map(attrgetter(f), records), np.int64, n) for f in _BOX_REQUIRED[:3])
        bbox = np.fromiter(chain.from_iterable(map(_BOX_GET, records)), np.float64, 4 * n).reshape(n, 4)
        area, crowd, ignore = (
            np.fromiter(map(attrgetter(f), records), np.float64, n) for f in ("area", "iscrowd", "ignore")
        )
        no_crowd, no_ignore = np.isnan(crowd), np.isnan(ignore)
        keys = (7 * n - int(no_crowd.sum()) - int(no_ignore.sum())) + sum(
            n - countOf(map(attrgetter(f), records), UNSET) for f in _BOX_COUNTED
        )
        if not _keys_all_decoded(text, records, keys):
            return None
        del records
    if no_crowd.any():
        if not crowd_optional:
            return None
        crowd[no_crowd] = 0.0
    ignore[no_ignore] = 0.0
    if not ((np.abs(bbox) < 2.0**53).all() and (bbox[:, 2:] >= 0).all()):
        return None
    if not ((area >= 0).all() and (area < 2.0**53).all()):
        return None
    if not (((crowd == 0) | (crowd == 1)).all() and ((ignore == 0) | (ignore == 1)).all()):
        return None
    return {
        "ann_id": ann_id,
        "image_id": img,
        "category_id": cat,
        "bbox": bbox,
        "area": area,
        "iscrowd": crowd != 0,
        "ignore": ignore != 0,
        "num_keypoints": np.full(n, -1, dtype=np.int64),
        "keypoints": None,
        "segmentation": None,
    }


# ------------------------------------------------------------------- oriented-box results (COCO-style OBB)
# A results list of ``{"image_id", "category_id", "obb", "score"}`` records (hotcoco's form,
# :mod:`deteval.io.coco_obb`), decoded as the bbox results above: the columns only where the ordinary path
# (orjson, then its plain-records reader) reads the same values without error: exactly those four keys, none
# repeated, five numbers in the box, integer ids below 2**53 in magnitude (that reader puts them in pycocotools'
# float64 N×7 array), box values below 2**53 and scores below 2**63, finite, no negative width or height.

#: (image ids int64, category ids int64, scores float64, N×5 ``[cx, cy, w, h, angle]`` float64)
ObbColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

_OBB_DECODER: Any = _UNBUILT
_OBB = attrgetter("obb")


def _build_obb(module: ModuleType) -> Any:
    number = int | float  # (as for bbox: a plain float field would round an integer before any check)
    return _records_decoder(
        module,
        "ObbResult",
        [
            ("image_id", int),
            ("category_id", int),
            ("obb", tuple[number, number, number, number, number]),
            ("score", number),
        ],
    )


def obb_columns(text: bytes) -> ObbColumns | None:
    """The columns of the oriented-box results list ``text`` (JSON), as the ordinary reader would read them;
    None whenever that is not certain (see above) or msgspec is not installed."""
    records = _decoded(_cached("_OBB_DECODER", _build_obb), text)
    if records is None:
        return None
    with paused():
        if key_tokens(text) != 4 * len(records):
            return None
    cols = _result_columns(records, _OBB, 5)
    if cols is None or not ((np.abs(cols[0]) < 2**53).all() and (np.abs(cols[1]) < 2**53).all()):
        return None
    return cols


# ------------------------------------------------------------------- oriented-box ground truth (COCO-style OBB)
# A ground-truth document whose annotations are ``{"id", "image_id", "category_id", "obb"}`` records with
# perhaps ``area``, ``iscrowd`` and ``ignore`` (hotcoco's form): the annotations decoded by type, ``images``,
# ``categories``, ``info`` and ``licenses`` kept as text and parsed by the ordinary parser (which refuses a
# repeated key in them). It vouches when the annotations hold no other key, integer ids, five numbers in the
# box, numbers elsewhere (msgspec refuses the rest), no key repeats in the annotations or at the top level
# (the text's key tokens, less those of the parts parsed as text, are as many as the keys decoded: a top-level
# key outside those five is one more token), every box value and area below 2**53 in magnitude and finite, no
# negative width, height or area, iscrowd and ignore 0 or 1.

#: (the document's parts parsed as text: images, categories; annotation ids, image ids, category ids int64,
#: N×5 obb, area (NaN where absent), iscrowd, ignore float64)
ObbGtColumns = tuple[
    dict[str, Any], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]

_OBB_GT_DECODER: Any = _UNBUILT
_OBB_GT_TEXT = ("images", "categories", "info", "licenses")


def _build_obb_gt(module: ModuleType) -> Any:
    id_int = Annotated[int, module.Meta(ge=-(2**63), le=2**63 - 1)]
    number = int | float
    raw, unset = module.Raw, module.UNSET
    ann = module.defstruct(
        "ObbAnnotation",
        [
            ("id", id_int),
            ("image_id", id_int),
            ("category_id", id_int),
            ("obb", tuple[number, number, number, number, number]),
            ("area", number, _NAN),
            ("iscrowd", number, _NAN),
            ("ignore", number, _NAN),
        ],
        forbid_unknown_fields=True,
        gc=False,
    )
    doc = module.defstruct(
        "ObbGroundTruth",
        [("annotations", list.__class_getitem__(ann)), *((name, raw, unset) for name in _OBB_GT_TEXT)],
    )
    return module.json.Decoder(doc)


def obb_gt_columns(text: bytes, parse: Callable[[bytes], Any]) -> ObbGtColumns | None:
    """The oriented-box ground truth ``text`` (JSON) as columns (see above), its text parts parsed by
    ``parse`` (the ordinary parser: a part it refuses, a repeated key among them, gives None); None whenever
    the ordinary reader is not certain to give the same arrays without error, or msgspec is not installed."""
    doc: Any = _decoded(
        _cached("_OBB_GT_DECODER", _build_obb_gt), text
    )  # (a Struct, never empty: None only if refused)
    if doc is None:
        return None
    with paused():
        parts = {name: getattr(doc, name) for name in _OBB_GT_TEXT if getattr(doc, name) is not UNSET}
        if "images" not in parts or "categories" not in parts:
            return None
        records = doc.annotations
        n = len(records)
        try:
            ann_id, img, cat = (
                np.fromiter(map(attrgetter(f), records), np.int64, n)
                for f in ("id", "image_id", "category_id")
            )
            area, crowd, ignore = (
                np.fromiter(map(attrgetter(f), records), np.float64, n) for f in ("area", "iscrowd", "ignore")
            )
            obb = np.fromiter(chain.from_iterable(map(_OBB, records)), np.float64, 5 * n).reshape(n, 5)
        except OverflowError:  # (a number beyond float64)
            return None
        del records, doc
        keys = 4 * n + int((~np.isnan(area)).sum() + (~np.isnan(crowd)).sum() + (~np.isnan(ignore)).sum())
        if key_tokens(text) - sum(key_tokens(bytes(raw)) for raw in parts.values()) != keys + len(parts) + 1:
            return None
        try:
            parsed = {name: parse(bytes(raw)) for name, raw in parts.items()}
        except (ValueError, DetevalError):
            return None
    if not (np.abs(obb) < 2.0**53).all() or (obb[:, 2] < 0).any() or (obb[:, 3] < 0).any():
        return None
    given = ~np.isnan(area)
    if not ((area[given] >= 0).all() and (area[given] < 2.0**53).all()):
        return None
    ignore[np.isnan(ignore)] = 0.0  # (an absent iscrowd stays NaN: refused, as the ordinary reader needs it)
    if not (((crowd == 0) | (crowd == 1)).all() and ((ignore == 0) | (ignore == 1)).all()):
        return None
    return parsed, ann_id, img, cat, obb, area, crowd, ignore


# ------------------------------------------------------------------- segm results (compressed RLE masks)
# A segm results list of ``{"image_id", "category_id", "segmentation": {"size", "counts"}, "score"}`` records
# (loadRes' segm branch, every box then taken from its mask): decoded into Structs whose ``counts`` stays one
# string per mask, no dict per record or per mask, no list per size. It vouches for the text where the
# ordinary path (orjson, then the segm-branch checks of :func:`deteval.io.coco.segm_tail`'s raw reader) reads
# the same columns: exactly those keys, none repeated at either depth (the text's quotes are two per key and
# per counts string, 14 per record, exactly when none repeats: :func:`deteval.io.jsonkeys.quote_count`),
# integer ids within int64, a finite score below 2**63 in magnitude, a size of two integers within int64, and
# ASCII counts strings. The sizes' bounds (:func:`deteval.io.coco.masks.rle_sizes_fit`) and the runs are
# checked by the caller, the runs on the text of all counts laid end to end.
#
# The same records with a ``bbox`` in every one (detectron2's ``instances_to_coco_json`` and mmdetection's
# ``results2json`` write the box head's box next to each mask) are decoded by a second Struct
# (:func:`segm_bbox_columns`): the box four numbers, each value below 2**53 in magnitude, finite, no negative
# width or height (the bounds of the bbox results above), 16 quotes per record. A list where only some
# records carry a box is refused by both Structs and left to the ordinary path (loadRes' branch is then the
# first record's, and its rule for the others differs).

#: (image ids int64, category ids int64, scores float64, N×2 ``[height, width]`` int64, the ``counts`` strings
#: laid end to end as ASCII bytes, the length of each)
SegmColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bytes, np.ndarray]

_SEGM_DECODER: Any = _UNBUILT
_SEGM_BOX_DECODER: Any = _UNBUILT
_SIZE, _COUNTS = attrgetter("size"), attrgetter("counts")


def _build_segm(module: ModuleType, boxed: bool) -> Any:
    number = int | float  # (as for bbox: a plain float field would round an integer before any check)
    rle = module.defstruct(
        "RleMask", [("size", tuple[int, int]), ("counts", str)], forbid_unknown_fields=True, gc=False
    )
    fields = [("image_id", int), ("category_id", int), ("segmentation", rle), ("score", number)]
    if boxed:
        fields.append(("bbox", tuple[number, number, number, number]))
    return _records_decoder(module, "SegmBoxResult" if boxed else "SegmResult", fields)


def _segm_decoder(boxed: bool) -> Any:
    """The decoder of segm results with (``boxed``) or without a ``bbox`` in every record."""
    return _cached("_SEGM_BOX_DECODER" if boxed else "_SEGM_DECODER", partial(_build_segm, boxed=boxed))


def _masked_bbox_columns(text: bytes) -> BboxColumns | None:
    """:data:`BboxColumns` of a results list whose every record also carries a compressed RLE mask (the
    records of :func:`segm_bbox_columns`), for a bbox evaluation: loadRes' bbox branch, which never reads the
    masks. Vouched for as :func:`bbox_columns` vouches (no key repeated at either depth: 16 quotes per record;
    the same bounds on ids, scores and boxes), the masks only as far as their Struct checks them (a size of
    two integers, a counts string) and their counts strings ASCII; None otherwise."""
    records = _decoded(_segm_decoder(True), text)
    if records is None:
        return None
    with paused():
        if quote_count(text) != 16 * len(records):
            return None
        if not all(map(str.isascii, map(_COUNTS, map(_SEGM, records)))):  # (O(1) each: CPython's flag)
            return None
    return _result_columns(records, _BOX, 4)


def segm_columns(text: bytes) -> SegmColumns | None:
    """The columns of the segm results list ``text`` (JSON) whose masks are all compressed RLEs and which
    carry no box, as the ordinary reader would read them (see above; the runs not yet checked); None whenever
    that is not certain or msgspec is not installed."""
    got = _segm_records(text, False)
    return None if got is None else got[0]


def segm_bbox_columns(text: bytes) -> tuple[SegmColumns, np.ndarray] | None:
    """The columns of the segm results list ``text`` (JSON) whose masks are all compressed RLEs and whose
    every record carries a ``bbox`` of four numbers (as detectron2 and mmdetection write them: loadRes' bbox
    branch when the first record is one of them), and the N×4 float64 boxes, as the ordinary reader would
    read them (see above; the runs not yet checked); None whenever that is not certain or msgspec is not
    installed."""
    got = _segm_records(text, True)
    return None if got is None or got[1] is None else (got[0], got[1])


def _segm_records(text: bytes, boxed: bool) -> tuple[SegmColumns, np.ndarray | None] | None:
    """:data:`SegmColumns` of the segm records decoded from ``text``, and (``boxed``) their N×4
    float64 boxes; None where the ordinary path is not certain to read the same values (see above; the ids,
    scores and boxes within the bbox results' bounds, :func:`_result_columns`)."""
    records = _decoded(_segm_decoder(boxed), text)
    if records is None:
        return None
    n = len(records)
    # (the text's strings: six keys, a seventh with the box, and a counts string per record)
    if quote_count(text) != (16 if boxed else 14) * n:
        return None
    boxes: np.ndarray | None = None
    if boxed:
        cols = _result_columns(records, _BOX, 4)
        if cols is None:
            return None
        img, cat, score, boxes = cols
    else:
        keys = _key_columns(records)
        if keys is None:
            return None
        img, cat, score = keys
    with paused():
        masks = list(map(_SEGM, records))
        del records
        try:
            hw = np.fromiter(chain.from_iterable(map(_SIZE, masks)), np.int64, 2 * n).reshape(n, 2)
        except OverflowError:  # (a size beyond int64)
            return None
        counts = list(map(_COUNTS, masks))
        del masks
        try:
            joined = "".join(counts).encode("ascii")
        except UnicodeEncodeError:
            return None
        lengths = np.fromiter(map(len, counts), np.int64, n)
    return (img, cat, score, hw, joined, lengths), boxes
