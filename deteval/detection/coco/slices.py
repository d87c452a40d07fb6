"""pycocotools' arrays one (area range, maxDets) slice at a time, for evaluations of very many categories.

``precision[T,R,K,A,M]`` and ``scores`` take 8·T·R·K·A·M bytes each whatever the input's size: 1.8 GiB for
10,000 categories with one box each under the default parameters. Every number deteval reports reads one
area label and one maxDets value at a time (the twelve summary numbers, the per-class rows, the curves of the
per-class AP50), so :class:`ArraySlices` accumulates only the area ranges and maxDets one number selects,
as ``(T, R, K, A', M')`` arrays, and keeps the last slice for the next number that reads it.

Exact: accumulation ranks each (category, area range, maxDets, threshold) list on its own, so the lists of a
slice, and their numbers, are those of the whole evaluation; and a slice holds the selected area ranges and
maxDets in their order, so ``s[s > -1]`` of pycocotools' ``_summarize`` sees the same values in the same order
(the same pairwise sum). ``tests/test_coco_many_categories.py`` compares every number with the whole arrays.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from deteval.detection.coco_accumulate import accumulate, precision_recall
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError
from deteval.match.coco import MatchTable

__all__ = ["MAX_SLICE_BYTES", "ArraySlices", "selection"]

#: The most bytes of one slice (precision, and scores where asked for, of the selected area ranges and maxDets
#: for every category): 256 MiB, about 16,000 categories with ground truth under the default parameters
#: (about 33,000 without scores). Above, the evaluation is refused rather than run out of memory.
MAX_SLICE_BYTES = 1 << 28


def selection(p: CocoParams, area: str, max_det: int | None) -> tuple[list[int], list[int]]:
    """The indices of the area ranges labelled ``area`` and of the maxDets equal to ``max_det`` (none for
    None), as pycocotools' ``_summarize`` selects them."""
    aind = [i for i, lbl in enumerate(p.area_lbl) if lbl == area]
    mind = [] if max_det is None else [i for i, m in enumerate(p.max_dets) if m == max_det]
    return aind, mind


class ArraySlices:
    """Slices of the arrays of ``table`` (accumulated under ``params``), computed when asked for."""

    def __init__(self, table: MatchTable, params: CocoParams) -> None:
        self.table = table
        self.params = params
        self._key: tuple[tuple[int, ...], tuple[int, ...], bool] | None = None
        self._value: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None

    @property
    def held(self) -> tuple[list[int], list[int]] | None:
        """The area ranges and maxDets of the slice kept from the last :meth:`arrays`, or None."""
        return None if self._key is None else (list(self._key[0]), list(self._key[1]))

    def slice_bytes(self, n_areas: int, n_max_dets: int, scores: bool) -> int:
        """Bytes of one slice's precision (and scores) and recall."""
        T, R = self.params.iou_thrs.shape[0], self.params.rec_thrs.shape[0]
        return 8 * T * self.table.n_cats * n_areas * n_max_dets * (R * (2 if scores else 1) + 1)

    def check(self, n_areas: int = 1, n_max_dets: int = 1, scores: bool = True) -> None:
        """Refuse (:class:`~deteval.errors.ConfigError`) slices above :data:`MAX_SLICE_BYTES`."""
        need = self.slice_bytes(n_areas, n_max_dets, scores)
        if need > MAX_SLICE_BYTES:
            raise ConfigError(
                f"{self.table.n_cats:,} categories with ground truth need {need / 2**30:.1f} GiB for one area "
                f"range and maxDets of pycocotools' arrays, above the bound of {MAX_SLICE_BYTES / 2**30:.2f} "
                "GiB: evaluate the categories in parts (cat_ids), or with fewer IoU thresholds or recall levels"
            )

    def arrays(
        self, aind: list[int], mind: list[int], *, scores: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``precision[T,R,K,A',M']``, ``recall[T,K,A',M']`` and (``scores=True``) ``scores`` of the area
        ranges ``aind`` and maxDets ``mind`` (indices into the parameters, in that order)."""
        key = (tuple(aind), tuple(mind), scores)
        if self._value is not None and self._key in (key, (key[0], key[1], True)):
            return self._value
        self.check(len(aind), len(mind), scores)
        self._key = self._value = None  # (the previous slice is freed before the next is laid out)
        t = self.table
        sub = replace(
            t,
            tp=t.tp[aind],
            ig=t.ig[aind],
            npig=t.npig[:, aind],
            gt_counted=None if t.gt_counted is None else t.gt_counted[aind],
        )
        max_dets = tuple(self.params.max_dets[i] for i in mind)
        if scores:
            self._value = accumulate(sub, self.params.rec_thrs, max_dets)
        else:
            precision, recall = precision_recall(sub, self.params.rec_thrs, max_dets)
            self._value = (precision, recall, None)
        self._key = key
        return self._value

    def sub_params(self, aind: list[int], mind: list[int]) -> CocoParams:
        """``params`` with only the area ranges ``aind`` and maxDets ``mind``: what a slice's arrays index."""
        p = self.params
        return replace(
            p,
            area_rng=tuple(p.area_rng[i] for i in aind),
            area_lbl=tuple(p.area_lbl[i] for i in aind),
            max_dets=tuple(p.max_dets[i] for i in mind),
        )
