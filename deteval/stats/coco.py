"""COCO summary numbers and per-category AP as functions of image weights: every system is matched once
(the :class:`~deteval.match.coco.MatchTable`), a resample re-weights its rows and ground truths.

An image of weight k: its detections are items of weight k in every (threshold, category) list of the
accumulation (:func:`~deteval.detection.coco_accumulate.accumulate` with ``weights``), and its non-ignored
ground truths count k times in npig. That equals evaluating the image duplicated k times (new image ids)
when the image's detections of a category have distinct scores; among equal scores of one image, the k copies
of an item are adjacent here while duplicated images would interleave them (d1 d1 d2 d2 against d1 d2 d1
d2), a different but equally valid resample of that image. All weights 1 give :func:`~deteval.detection.coco.evaluate_coco`'s
numbers bit for bit. Metric columns: the summary numbers (``AP``, ``AP50``, ...), then ``ap:<category>``
(the per-class ``ap``; NaN where a resample leaves a category without ground truth, −1 in pycocotools'
arrays). Resamples are evaluated many at once by :class:`~deteval.stats.coco_batch.CocoBatch` (the ranked
lists of the slices the columns read are laid out once, a resample only re-weights them:
:mod:`deteval.core.reweighted`); one weighted accumulation per resample (:mod:`deteval.core.weighted`), the
path the tests compare it with, is kept for parameters the batch does not take (repeated area labels or
maxDets).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from deteval.detection.coco.evaluation import (
    FULL_ARRAYS_BYTES,
    CocoEvaluation,
    finish_evaluation,
    full_arrays_bytes,
)
from deteval.detection.coco.params import resolve_params
from deteval.detection.coco.parts import match_in_shards
from deteval.detection.coco.summary import stat_maxdet, summarize, summarize_per_category
from deteval.detection.coco_accumulate import accumulate
from deteval.errors import ConfigError
from deteval.match.coco import MatchTable, merge_tables
from deteval.results import EvalResult
from deteval.run.coco_two_cores import fork_detections, match_image_halves, read_inputs
from deteval.stats.attach import add_statistics
from deteval.stats.coco_batch import CocoBatch
from deteval.stats.tests import SwapMix

__all__ = ["CocoUnits"]


class CocoUnits:
    """The COCO evaluation of one or more result sets on one ground truth, as functions of image weights."""

    def __init__(
        self,
        gt: Any,
        systems: Sequence[Any],
        *,
        iou_type: str | None = None,
        params: Any = None,
        compat: str = "pycocotools",
    ) -> None:
        p = resolve_params(params, iou_type)
        # each results file read as evaluate_coco reads it (a large one on two cores), the ground truth
        # with the first (read whole once, then passed on as it is)
        self.params, self.compat = p, compat
        self.tables: list[MatchTable] = []
        # each system's evaluation, made when first read (a compared system's is not needed for the statistics)
        self._evaluations: list[CocoEvaluation | Callable[[], CocoEvaluation]] = []
        g: Any = gt
        first: tuple[Any, dict[str, int]] | None = None  # the first system's ground truth and counts
        for res in systems:
            g, r = read_inputs(g, res, p)
            # matched by two processes (half of the images each, the tables merged) where evaluate_coco would
            split = match_image_halves(g, r, p, compat) if len(r) >= fork_detections(p.iou_type) else None
            if split is not None:
                table, _, counts, warnings = split
            else:
                table, counts, warnings = match_in_shards(g, r, p, compat)
            self.tables.append(table)
            counts = {**counts, "skipped_records": g.skipped + r.skipped}
            if first is None:
                first = (g, counts)
            self._evaluations.append(
                functools.partial(finish_evaluation, table, p, compat, g, counts, r.warnings + warnings)
            )
        if first is None:
            raise ValueError("CocoUnits needs at least one system")
        need = full_arrays_bytes(p, self.tables[0].n_cats)
        if p.use_cats and need > FULL_ARRAYS_BYTES:  # (each resample lays out arrays for every category)
            raise ConfigError(
                f"statistics over {self.tables[0].n_cats} categories need {need / 2**30:.1f} GiB of arrays per "
                f"resample, above the bound of {FULL_ARRAYS_BYTES / 2**30:.2f} GiB: restrict the categories "
                "(cat_ids) or evaluate without intervals and comparisons"
            )
        ev = self._shape_only(first[0], first[1])
        self.n_units = int(ev.counts["n_images"])
        self.rows = list(ev.per_class())
        self.names: tuple[str, ...] = (*ev.stat_names, *(f"ap:{c}" for c in self.rows))
        self._read = self._slices_read(ev.precision.shape, ev.recall.shape)
        self._batches: dict[int, CocoBatch | None] = {}

    def _shape_only(self, gt: Any, counts: dict[str, int]) -> CocoEvaluation:
        """The first system's evaluation with every number −1: its names, categories, counts and array shapes
        (precision (T, R, K, A, M), recall (T, K, A, M), as accumulate lays them out) without accumulating,
        which is left until its numbers are asked for (a randomization test never reads them)."""
        p, K = self.params, self.tables[0].n_cats
        shape = (p.iou_thrs.shape[0], p.rec_thrs.shape[0], K, len(p.area_rng), len(p.max_dets))
        blank = np.full(shape, -1.0)
        recall = np.full((shape[0], *shape[2:]), -1.0)
        return finish_evaluation(None, p, self.compat, gt, dict(counts), [], (blank, recall, blank))

    def _evaluation(self, system: int) -> CocoEvaluation:
        ev = self._evaluations[system]
        if not isinstance(ev, CocoEvaluation):
            ev = self._evaluations[system] = ev()
        return ev

    @property
    def evaluations(self) -> list[CocoEvaluation]:
        """Each system's :class:`~deteval.detection.coco.CocoEvaluation` (what ``evaluate_coco`` returns)."""
        return [self._evaluation(i) for i in range(len(self._evaluations))]

    def _slices_read(self, p_shape: tuple[int, ...], r_shape: tuple[int, ...]) -> set[tuple[int, int]]:
        """The (area, maxDet) slices the metric columns read: those whose values change a column when
        changed (probed once on constant arrays), so that a resample accumulates only these."""
        base = self._numbers(np.full(p_shape, 0.5), np.full(r_shape, 0.5))
        read: set[tuple[int, int]] = set()
        for a, m in itertools.product(range(p_shape[3]), range(p_shape[4])):
            prec, rec = np.full(p_shape, 0.5), np.full(r_shape, 0.5)
            prec[..., a, m], rec[..., a, m] = 0.25, 0.25
            if not np.array_equal(self._numbers(prec, rec), base, equal_nan=True):
                read.add((a, m))
        return read

    def _values(
        self,
        table: MatchTable,
        row_w: np.ndarray,
        img_w: np.ndarray,
        gt_table: MatchTable,
        cache: dict[str, Any] | None = None,
    ) -> np.ndarray:
        """The metrics of ``table`` with row weights ``row_w``; npig of image weights ``img_w`` counted on
        ``gt_table``'s ground truths (one system's: a merged table holds them twice)."""
        npig = gt_table.npig_weighted(img_w)
        prec, rec, _ = accumulate(
            table,
            self.params.rec_thrs,
            self.params.max_dets,
            weights=row_w,
            npig=npig,
            cache=cache,
            only=self._read,
        )
        return self._numbers(prec, rec)

    def _numbers(self, prec: np.ndarray, rec: np.ndarray) -> np.ndarray:
        """The metric columns of ``precision`` / ``recall`` (NaN for pycocotools' −1)."""
        stats, _ = summarize(prec, rec, self.params, self.compat)
        # the per-class "ap" of CocoEvaluation.per_class (same call, in category order), without the six
        # other per-class numbers it also computes
        md_ap = stat_maxdet(self.params, self.compat, "ap")
        aps = summarize_per_category(prec, rec, self.params, True, None, "all", md_ap)[: len(self.rows)]
        out = np.array([*stats.tolist(), *aps.tolist()], dtype=np.float64)
        return np.where(out == -1.0, np.nan, out)  # pycocotools' "undefined"

    def _batch(self, table: MatchTable, column: np.ndarray, gt_table: MatchTable) -> CocoBatch | None:
        """The batched evaluation of ``table`` (None where the parameters need the accumulation path)."""
        try:
            return CocoBatch(table, self.params, self.compat, len(self.rows), column, gt_table, self.n_units)
        except NotImplementedError:
            return None

    def _system_batch(self, system: int) -> CocoBatch | None:
        if system not in self._batches:
            t = self.tables[system]
            self._batches[system] = self._batch(t, t.img, t)
        return self._batches[system]

    def metric(self, system: int = 0) -> Callable[[np.ndarray], np.ndarray]:
        """Image weights (k, n_images) → (k, len(names)) of one system."""
        fast = self._system_batch(system)
        if fast is not None:
            return lambda w: fast(w, w)
        return self._metric_accumulated(system)

    def _metric_accumulated(self, system: int = 0) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`metric` as one weighted accumulation per weighting (the reference of the batched path)."""
        t = self.tables[system]
        cache: dict[str, Any] = {}  # the sort and outcome columns, shared by every resample
        return lambda w: np.stack([self._values(t, row[t.img], row, t, cache) for row in w])

    def mix(self, a: int, b: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """(w_a, w_b) → the metrics of the system answering each image with system a's results w_a times
        and b's w_b times (see :mod:`deteval.stats.bootstrap`)."""
        try:
            CocoBatch.summary_columns(self.params, self.compat, len(self.rows))
        except NotImplementedError:
            return self._mix_accumulated(a, b)
        ta, tb = self.tables[a], self.tables[b]
        made: list[CocoBatch] = []

        def merged() -> CocoBatch:
            # both systems' rows in one table: built on first use, since a paired bootstrap never needs it
            # (each of its rows weighs one system only: the single tables below)
            if not made:
                both = merge_tables([ta, tb])
                fast = self._batch(both, np.concatenate([ta.img, tb.img + self.n_units]), ta)
                if fast is None:  # summary_columns said the batched path applies
                    raise AssertionError("no batched evaluation of the merged table")
                made.append(fast)
            return made[0]

        def mixed(wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
            wa, wb = np.asarray(wa, dtype=np.int64), np.asarray(wb, dtype=np.int64)
            out = np.empty((wa.shape[0], len(self.names)))
            only_a, only_b = ~wb.any(axis=1), ~wa.any(axis=1) & wb.any(axis=1)
            both_ = ~(only_a | only_b)
            # a system with weight 0 on every image adds only items of weight 0: the other system's own
            # numbers, bit for bit (deteval.core.reweighted), from its smaller table (the paired bootstrap;
            # built on first use: randomization rounds need only the merged table)
            for rows, s, w in ((only_a, a, wa), (only_b, b, wb)):
                single = self._system_batch(s) if rows.any() else None
                if single is not None:
                    out[rows] = single(w[rows], w[rows])
                else:
                    both_ |= rows
            if both_.any():
                out[both_] = merged()(np.concatenate([wa[both_], wb[both_]], axis=1), wa[both_] + wb[both_])
            return out

        def rounds(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # mix(1 - s, s) and mix(s, 1 - s): complementary weights of the merged rows, ground truths 1
            s = np.asarray(s, dtype=np.int64)
            return merged().complements(np.concatenate([1 - s, s], axis=1), np.ones_like(s))

        return SwapMix(mixed, rounds)

    def _mix_accumulated(self, a: int, b: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """:meth:`mix` as one weighted accumulation per weighting (the reference of the batched path)."""
        ta, tb = self.tables[a], self.tables[b]
        both = merge_tables([ta, tb])
        cache: dict[str, Any] = {}
        return lambda wa, wb: np.stack(
            [
                self._values(both, np.concatenate([ra[ta.img], rb[tb.img]]), ra + rb, ta, cache)
                for ra, rb in zip(wa, wb)
            ]
        )

    def add_statistics(self, other_names: Sequence[str] = (), **options: Any) -> EvalResult:
        """System 0's result with intervals of the summary numbers and every category's AP, and comparisons
        with the other systems; ``options`` as :func:`deteval.stats.attach.add_statistics`."""
        result = self._evaluation(0).to_result()
        row_of = {f"ap:{c}": c for c in self.rows}
        others = [(n, self.mix(0, i + 1), None, self.n_units) for i, n in enumerate(other_names)]
        add_statistics(
            result, self.names, self.metric(0), self.n_units, "image", others=others, row_of=row_of, **options
        )
        return result
