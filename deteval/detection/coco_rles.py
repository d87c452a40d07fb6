"""Segmentation masks as RLEs for segm IoU (COCO and LVIS): a table of one kind of annotation (ground truth or
results) whose masks are converted on demand, as pycocotools' ``annToRLE`` converts them, and validated first
(a bad polygon or RLE is a :class:`~deteval.errors.InputFormatError` naming its file and record)."""

from __future__ import annotations

from collections import deque
from functools import partial
from itertools import chain, repeat
from typing import Any

import numpy as np

from deteval.detection.coco_iou import LazyCounts, bbox_iou_blocks, boundary_iou_blocks, segm_iou_blocks
from deteval.detection.coco_params import CocoParams
from deteval.errors import InputFormatError
from deteval.io.coco import (
    MAX_POLYGON_COORD,
    CocoGroundTruth,
    CocoResults,
    check_rle_size,
    check_segmentation,
    to_rle,
)
from deteval.io.rle import check_rles
from deteval.match.boundary import BOUNDARY_PROFILES, mask_boundaries
from deteval.match.coco import IouFn

__all__ = ["LAZY", "BoundaryTable", "RleTable", "dt_rles", "gt_rles", "region_measure"]

#: An :class:`RleTable`'s cache entry for a mask read from a text when it takes part (one shared object).
LAZY: dict = {"size": None, "counts": None}


class RleTable:
    """RLEs of annotations, converted on demand (only what IoU needs) and in batches.

    Conversion follows pycocotools' ``annToRLE``: polygons through ``frPyObjects`` (+ ``merge`` of the parts),
    uncompressed RLE through ``frPyObjects``, compressed RLE as is. The polygons of the polygon annotations of
    one image size are converted with one ``frPyObjects`` call (the same C routine per polygon, so the same
    RLEs), an annotation's several then merged.
    """

    def __init__(
        self,
        segs: list,
        img: np.ndarray,
        image_hw: np.ndarray,
        file: str,
        where: str | None,
        index: np.ndarray | None = None,
    ) -> None:
        self.segs, self.img, self.image_hw, self.file, self.where = segs, img, image_hw, file, where
        self.index = index  # position of each entry in the input, to name its record
        self.cache: list = [None] * len(segs)
        # entries whose counts are still in a text (set_lazy): each one's mask number there, else -1
        self.lazy: np.ndarray | None = None
        self.source: Any = None

    def set_lazy(self, source: Any, index: np.ndarray) -> None:
        """Read the masks of the entries with ``index >= 0`` from ``source`` (a
        :class:`~deteval.io.coco.segm_tail.PendingMasks`: validated, of their images' size) when they take part:
        their places in the cache hold :data:`LAZY` (so :meth:`ensure` leaves them alone), no dict each."""
        pos = np.flatnonzero(index >= 0)
        if not pos.size:
            return
        self.lazy, self.source = index, source
        deque(map(self.cache.__setitem__, pos.tolist(), repeat(LAZY)), maxlen=0)

    def lazy_counts(self, rows: np.ndarray) -> LazyCounts | None:
        """The lazy entries among ``rows`` (:class:`~deteval.detection.coco_iou.LazyCounts` of the list
        ``[self[i] for i in rows]``), None if there is none."""
        if self.lazy is None:
            return None
        idx = self.lazy[rows]
        pos = np.flatnonzero(idx >= 0)
        if not pos.size:
            return None
        k = idx[pos]
        src = self.source
        return LazyCounts(pos, src.starts[k], src.ends[k], src.hw[k], src.texts, src.which[k])

    def _record(self, i: int) -> str | int:
        j = i if self.index is None else int(self.index[i])
        return j if self.where is None else f"{self.where}[{j}]"

    def _hw(self, i: int) -> tuple[int, int]:
        h, w = (int(v) for v in self.image_hw[self.img[i]])
        if h < 0 or w < 0:
            raise InputFormatError(
                "the image has no height/width (needed for polygons)", file=self.file, record=self._record(i)
            )
        return h, w

    def ensure(self, idx: np.ndarray) -> None:

        batches: dict[tuple[int, int], list[int]] = {}
        todo = [i for i in idx.tolist() if self.cache[i] is None]
        todo = self._polygon_lists(todo, batches)
        for i in todo:
            s = self.segs[i]
            if s is None:
                raise InputFormatError("missing field 'segmentation'", file=self.file, record=self._record(i))
            check_segmentation(s, self.file, self._record(i))
            check_rle_size(s, self.image_hw[self.img[i]], self.file, self._record(i))
        # every RLE decoded and checked in numpy before pycocotools sees it (a corrupt one crashes or hangs it)
        check_rles([self.segs[i] for i in todo], self.file, [self._record(i) for i in todo])
        for i in todo:
            s = self.segs[i]
            if isinstance(s, dict) and not isinstance(s.get("counts"), list):
                self.cache[i] = s
            elif (
                isinstance(s, list)
                and len(s) == 1
                and isinstance(s[0], list)
                and len(s[0]) > 4
                and len(s[0]) % 2 == 0
            ):
                batches.setdefault(self._hw(i), []).append(i)
            else:
                self.cache[i] = to_rle(s, *self._hw(i), self.file, self._record(i))
        self._convert(batches)

    def _convert(self, batches: dict[tuple[int, int], list[int]]) -> None:
        """Polygon annotations, one ``frPyObjects`` call per image size for all their polygons, those of an
        annotation of several merged (``annToRLE``: ``merge(frPyObjects(polygons))``, the same C routine per
        polygon)."""
        from pycocotools import mask as mask_utils

        for (h, w), members in batches.items():
            parts = list(map(len, map(self.segs.__getitem__, members)))
            try:
                rles = mask_utils.frPyObjects(
                    list(chain.from_iterable(map(self.segs.__getitem__, members))), h, w
                )
                if len(rles) != sum(parts):
                    raise ValueError
            except Exception:
                for i in members:
                    self.cache[i] = to_rle(self.segs[i], h, w, self.file, self._record(i))
                continue
            if max(parts) == 1:
                deque(map(self.cache.__setitem__, members, rles), maxlen=0)
                continue
            k = 0
            for i, n in zip(members, parts):
                self.cache[i] = rles[k] if n == 1 else mask_utils.merge(rles[k : k + n])
                k += n

    def _polygon_lists(self, todo: list[int], batches: dict[tuple[int, int], list[int]]) -> list[int]:
        """Put the entries of ``todo`` that are lists of polygons (the usual ground truth: one to a few each) in
        ``batches`` by image size when all of them are numbers that :func:`check_segmentation` accepts, in
        images with a size, checked in a few C-level passes; returns the entries left for the record-by-record
        checks (all of them at any doubt: those checks then name the bad record)."""
        listed = [i for i in todo if type(s := self.segs[i]) is list and s and set(map(type, s)) == {list}]
        if not listed:
            return todo
        polys = list(chain.from_iterable(map(self.segs.__getitem__, listed)))
        lens = np.fromiter(map(len, polys), dtype=np.int64, count=len(polys))
        if (lens < 6).any() or (lens % 2).any():
            return todo
        if not set(map(type, chain.from_iterable(polys))) <= {float, int}:  # (fromiter reads "7", True too)
            return todo
        try:
            flat = np.fromiter(chain.from_iterable(polys), dtype=np.float64, count=int(lens.sum()))
        except (TypeError, ValueError, OverflowError):
            return todo
        if not (np.isfinite(flat).all() and (np.abs(flat) <= MAX_POLYGON_COORD).all()):
            return todo
        hw = self.image_hw[self.img[np.asarray(listed, dtype=np.int64)]]
        if (hw < 0).any():
            return todo
        for i, h, w in zip(listed, hw[:, 0].tolist(), hw[:, 1].tolist()):
            batches.setdefault((h, w), []).append(i)
        if len(listed) == len(todo):
            return []
        taken = set(listed)
        return [i for i in todo if i not in taken]

    def __getitem__(self, i: int) -> Any:
        mask = self.cache[i]
        if mask is LAZY:
            made = self.lazy_counts(np.array([i], dtype=np.int64))
            assert made is not None
            return made.made([mask], 0, 1)[0]
        return mask


class BoundaryTable:
    """The boundaries of an :class:`RleTable`'s masks (:func:`~deteval.match.boundary.mask_boundaries`),
    computed once per mask, when it first takes part, many masks per pass; read as the table's masks are
    (the same image sizes)."""

    def __init__(self, masks: RleTable, ratio: float, profile: str) -> None:
        self.masks, self.ratio, self.rounding = masks, ratio, BOUNDARY_PROFILES[profile]
        self.cache: list = [None] * len(masks.cache)
        self.img, self.image_hw = masks.img, masks.image_hw

    def ensure(self, idx: np.ndarray) -> None:
        """Compute the boundaries of rows ``idx`` (ascending, distinct) not computed yet."""
        todo = [i for i in idx.tolist() if self.cache[i] is None]
        if not todo:
            return
        self.masks.ensure(np.asarray(todo, dtype=np.int64))
        made = mask_boundaries([self.masks[i] for i in todo], self.ratio, self.rounding)
        for i, b in zip(todo, made):
            self.cache[i] = b

    def __getitem__(self, i: int) -> Any:
        return self.cache[i]


def region_measure(p: CocoParams, dgeom: Any, ggeom: Any, crowd: np.ndarray) -> IouFn:
    """The matcher's IoU function (pairs ``di``, ``gi`` in blocks ``bs``, ``bnd``, ``bng``) of ``p.iou_type``
    bbox (``dgeom``/``ggeom``: the boxes; :func:`~deteval.match.iou.bbox_iou_blocks`), segm or boundary (the
    masks' :class:`RleTable`; :func:`~deteval.detection.coco_iou.segm_iou_blocks`,
    :func:`~deteval.detection.coco_iou.boundary_iou_blocks`, each mask's boundary made once; pairs below all
    of ``p.iou_thrs`` by their mask IoU are left as they are: the matcher drops them)."""
    if p.iou_type == "bbox":
        return partial(bbox_iou_blocks, dgeom, ggeom, crowd)
    if p.iou_type != "boundary":
        return partial(segm_iou_blocks, dgeom, ggeom, crowd)
    db, gb = (BoundaryTable(t, p.dilation_ratio, p.boundary_profile) for t in (dgeom, ggeom))
    floor = min(float(np.min(p.iou_thrs)), 1 - 1e-10)  # (the matcher's lowest threshold, min(t, 1 − 1e−10))
    return partial(boundary_iou_blocks, dgeom, ggeom, db, gb, crowd, floor=floor)


def gt_rles(gt: CocoGroundTruth, keep: np.ndarray) -> RleTable:
    """The ground truth's annotations at rows ``keep`` (ascending) as an :class:`RleTable`, named in errors
    as ``annotations[i]`` of the ground-truth file."""
    if gt.segmentation is None:
        raise InputFormatError("segm evaluation needs 'segmentation' in the ground truth", file=gt.source)
    named = keep if gt.file_rows is None else gt.file_rows[keep]  # (an image shard's: the file's index)
    return RleTable(_take(gt.segmentation, keep), gt.img[keep], gt.image_hw, gt.source, "annotations", named)


def dt_rles(res: CocoResults, keep: np.ndarray, gt: CocoGroundTruth) -> RleTable:
    """The results at rows ``keep`` (ascending) as an :class:`RleTable` (image sizes from ``gt``, records named
    by their position in the results file); RLEs converted at load are taken as they are."""
    if res.segmentation is None:
        raise InputFormatError("segm evaluation needs 'segmentation' in the results", file=res.source)
    table = RleTable(_take(res.segmentation, keep), res.img[keep], gt.image_hw, res.source, None, keep)
    if res.rles is not None and len(res.rles) == len(res):  # validated and converted at load
        table.cache = _take(res.rles, keep)
    if res.lazy_masks is not None:
        table.set_lazy(res.lazy_masks, res.lazy_masks.index(len(res))[keep])
    return table


def _take(items: list, keep: np.ndarray) -> list:
    """``[items[i] for i in keep]`` (``keep`` ascending, distinct): a copy when it keeps everything."""
    if keep.shape[0] == len(items):
        return list(items)
    return list(map(items.__getitem__, keep.tolist()))
