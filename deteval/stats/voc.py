"""Pascal VOC AP and mAP as functions of image weights: the match outcomes of every system are computed once
(:func:`~deteval.detection.voc.match_part`, one part of every image), a resample only re-weights them.

An image of weight k counts k times: each of its detections is an item of weight k in its class's ranked
list (:func:`~deteval.core.lists.presorted_lists`), and its non-difficult ground-truth boxes add k × their
count to the class's npos. All weights 1 give :func:`~deteval.run.voc.evaluate_voc`'s numbers bit for
bit; an image of weight 2 gives the numbers of the files in which that image is listed twice (its copy's
detections right after its own among equal scores). Metric columns: ``map``, then AP of every class in
``classes`` order (NaN where a resample leaves a class without ground truth; mAP averages the others).
The 11-point metric (``voc07``) lays no copy out: the ranking is made once per system (or pair of systems)
and a resample re-weights it (:class:`~deteval.core.reweighted.ReweightedLists`), with the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.core.lists import mean_in_level_order, presorted_lists, sort_lists
from deteval.core.reweighted import ReweightedLists
from deteval.detection.voc import VOCDetections, VOCGroundTruth, VOCParams, finish, match_part, prepare
from deteval.results import EvalResult
from deteval.stats.attach import add_statistics

__all__ = ["VOCUnits"]


@dataclass(frozen=True)
class _Items:
    image: np.ndarray  # image index of each detection
    lst: np.ndarray  # class list of each detection
    score: np.ndarray
    outcome: np.ndarray  # 1 TP, 0 FP, -1 ignored


class VOCUnits:
    """The VOC evaluation of one or more systems on one ground truth, as functions of image weights."""

    def __init__(
        self,
        gt: VOCGroundTruth,
        systems: Sequence[VOCDetections],
        params: VOCParams,
        classes: Sequence[str] | None = None,
    ) -> None:
        self.params = params
        # each system matched once: its outcomes give its result and the items every resample re-weights
        evaluations = [prepare(gt, d, params, classes) for d in systems]
        outcomes = [match_part(ev.whole).outcome for ev in evaluations]
        self.results: list[EvalResult] = [finish(ev, o) for ev, o in zip(evaluations, outcomes)]
        self.classes: tuple[str, ...] = tuple(self.results[0].per_class)
        self.names: tuple[str, ...] = ("map", *self.classes)
        self.n_units = len(gt.images)
        pos = {c: i for i, c in enumerate(self.classes)}
        gt_list = np.array([pos.get(c, -1) for c in gt.classes], dtype=np.int64)
        g_l = gt_list[gt.label] if gt.label.size else gt.label
        keep = (g_l >= 0) & ~gt.difficult
        # (images, classes) non-difficult boxes: a resample's npos is its weights times this
        self.npos_img = np.zeros((self.n_units, len(self.classes)), dtype=np.int64)
        np.add.at(self.npos_img, (gt.image[keep], g_l[keep]), 1)
        self.items = []
        for d, ev, o in zip(systems, evaluations, outcomes):
            if ev.selected != self.classes:  # (another system naming other classes: re-read on system 0's)
                ev = prepare(gt, d, params, self.classes)
                o = match_part(ev.whole).outcome
            self.items.append(_Items(ev.whole.det_image, ev.det_list, ev.det_scores, o))
        self._engines: dict[tuple[int, ...], ReweightedLists] = {}

    def metric(self, system: int = 0) -> Callable[[np.ndarray], np.ndarray]:
        """Image weights (k, n_images) → (k, 1 + classes): mAP and per-class AP of one system."""
        if self.params.metric == "voc07":
            return lambda w: self._evaluate_voc07((system,), [w])
        return lambda w: self._evaluate([self.items[system]], [w])

    def mix(self, a: int, b: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """(w_a, w_b) → the metrics of the system answering each image with system a's detections w_a
        times and system b's w_b times (see :mod:`deteval.stats.bootstrap`)."""
        if self.params.metric == "voc07":
            return lambda wa, wb: self._evaluate_voc07((a, b), [wa, wb])
        return lambda wa, wb: self._evaluate([self.items[a], self.items[b]], [wa, wb])

    def add_statistics(self, other_names: Sequence[str] = (), **options: Any) -> EvalResult:
        """System 0's result with intervals of mAP and every class's AP and comparisons with the other
        systems (named ``other_names``); ``options`` as :func:`deteval.stats.attach.add_statistics`."""
        result = self.results[0]
        row_of = {f"ap:{c}": c for c in self.classes}
        names = ["map", *row_of]
        others = [(n, self.mix(0, i + 1), None, self.n_units) for i, n in enumerate(other_names)]
        add_statistics(
            result, names, self.metric(0), self.n_units, "image", others=others, row_of=row_of, **options
        )
        return result

    def _evaluate_voc07(self, systems: tuple[int, ...], weights: Sequence[np.ndarray]) -> np.ndarray:
        """:meth:`_evaluate` for the 11-point metric without laying out copies: the ranking of the systems'
        detections is made once (:class:`~deteval.core.reweighted.ReweightedLists`, image u of system j is
        weight column j · n_images + u), and AP sums the sampled precision over the levels in order, as
        ``RankedLists.average_precision("voc07")``; equal to :meth:`_evaluate` bit for bit."""
        if systems not in self._engines:
            parts = [self.items[j] for j in systems]
            count, order, outcome = self._ranking(parts)
            column = np.concatenate([p.image + j * self.n_units for j, p in enumerate(parts)])[order]
            self._engines[systems] = ReweightedLists(
                count, column, (outcome == 1)[None], (outcome == -1)[None], self.params.levels
            )
        w = np.concatenate([np.asarray(x, dtype=np.int64) for x in weights], axis=1)
        npos = self._npos(weights)
        q, _ = self._engines[systems].evaluate(w, npos)
        assert q is not None
        ap = mean_in_level_order(np.moveaxis(q[:, 0], 1, 0))
        return self._with_map(np.where(npos > 0, ap, np.nan))

    def _with_map(self, ap: np.ndarray) -> np.ndarray:
        """(k, 1 + classes): the mean of each row's defined APs, then the APs."""
        out = np.empty((ap.shape[0], 1 + ap.shape[1]))
        out[:, 1:] = ap
        for r in range(ap.shape[0]):
            row = ap[r][~np.isnan(ap[r])]
            out[r, 0] = float(np.mean(row)) if row.size else np.nan
        return out

    def _ranking(self, parts: Sequence[_Items]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Items per class, the ranking and the ranked outcomes of the concatenated systems ``parts``, under the
        profile's tie policy (a stable sort keeps system a's detections before system b's among equal
        scores)."""
        lst = np.concatenate([p.lst for p in parts])
        order = sort_lists(lst, np.concatenate([p.score for p in parts]), ties=self.params.ties)
        count = np.bincount(lst, minlength=len(self.classes)).astype(np.int64)
        return count, order, np.concatenate([p.outcome for p in parts])[order]

    def _npos(self, weights: Sequence[np.ndarray]) -> np.ndarray:
        """(k, classes) npos of the weightings: each system's image weights times the images' boxes, summed."""
        return sum(
            (np.asarray(w, dtype=np.int64) @ self.npos_img for w in weights), np.zeros((1, 1), np.int64)
        )

    def _evaluate(self, parts: Sequence[_Items], weights: Sequence[np.ndarray]) -> np.ndarray:
        count, order, outcome = self._ranking(parts)
        k, n_c = weights[0].shape[0], count.shape[0]
        item_w = np.concatenate([w[:, p.image] for p, w in zip(parts, weights)], axis=1)[:, order]
        npos = self._npos(weights)
        lists = presorted_lists(
            np.tile(count, k),
            np.tile(outcome == 1, k),
            npos.reshape(-1),
            np.tile(outcome == -1, k),
            weights=item_w.reshape(-1),
        )
        if self.params.metric == "voc07":
            ap = lists.average_precision("voc07", levels=self.params.levels)
        else:
            ap = lists.average_precision("all_points")
        return self._with_map(np.where(npos.reshape(-1) > 0, ap, np.nan).reshape(k, n_c))
