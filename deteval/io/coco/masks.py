"""COCO segmentations (polygons and RLE) checked and converted as pycocotools would, without its crashes and
unbounded rasterisation; mask areas and boxes.
"""

from __future__ import annotations

import math
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError
from deteval.io.coco.fields import BOOL_SET
from deteval.io.rle import check_rles

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
            isinstance(counts, list) and not _plain_counts(counts)
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
            if not BOOL_SET.isdisjoint(map(type, poly)):  # (pycocotools would read true as 1)
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


def _plain_counts(counts: list) -> bool:
    """Every entry an ``int`` (not a bool), 0 <= count < 2**63: C-level passes over a crowd's hundreds of counts."""
    return not counts or (set(map(type, counts)) == {int} and min(counts) >= 0 and max(counts) < 2**63)


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
    return hw if rle_sizes_fit(hw) else None


def rle_sizes_fit(hw: np.ndarray) -> bool:
    """Whether every ``[height, width]`` row of the int64 array ``hw`` is a size :func:`check_segmentation`
    accepts for an RLE: both at least 0 and below 2**31, below ``MAX_MASK_PIXELS`` pixels."""
    return bool((hw >= 0).all() and (hw < 2**31).all() and (hw[:, 0] * hw[:, 1] < MAX_MASK_PIXELS).all())


def mask_areas(rles: list, file: str) -> np.ndarray:
    """pycocotools' ``area`` of RLEs already validated and converted
    (:func:`~deteval.io.coco.result_masks.checked_rles`)."""
    return _in_chunks("area", rles, file, (-1,))


def mask_boxes(rles: list, file: str) -> np.ndarray:
    """pycocotools' ``toBbox`` of RLEs already validated and converted
    (:func:`~deteval.io.coco.result_masks.checked_rles`)."""
    return _in_chunks("toBbox", rles, file, (-1, 4))


def _in_chunks(name: str, rles: list, file: str, shape: tuple[int, ...]) -> np.ndarray:
    """pycocotools' ``mask.<name>`` of ``rles`` as float64 rows of ``shape``, in chunks of <= 255: its
    _mask.area builds a uint8 array of the count (fails beyond 255 on numpy 2)."""
    from pycocotools import mask as mask_utils

    fn = getattr(mask_utils, name)
    try:
        return np.concatenate(
            [
                np.asarray(fn(rles[i : i + 255]), dtype=np.float64).reshape(shape)
                for i in range(0, len(rles), 255)
            ]
            or [np.zeros((0, *shape[1:]))]
        )
    except Exception as exc:
        raise InputFormatError(f"invalid RLE segmentation: {exc}", file=file) from None
