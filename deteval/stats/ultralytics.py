"""Intervals and paired comparisons of ``yolo val``'s numbers over images (the units :mod:`deteval.stats`
resamples).

Each system is matched once, as ``yolo val`` matches it (:func:`~deteval.detection.ultralytics.match_split`:
matching never looks across images). A resample in which image u appears ``w[u]`` times repeats u's matched
detections and its labels ``w[u]`` times, and the profile's ``ap_per_class`` scores the whole (its ranking,
AP and the P/R at the maximum class-mean F1). A mix ``mix(w_a, w_b)`` takes image u's detections from system A
``w_a[u]`` times and from B ``w_b[u]`` times, and its labels ``w_a[u] + w_b[u]`` times. The metrics:
``mAP50-95``, ``mAP50``, ``mAP75``, ``precision``, ``recall`` (the summary's names) and each labelled class's
AP50-95 (``ap:<class>``; NaN in a resample that leaves the class without labels).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from deteval.detection.ultralytics import MatchedSet, PairIou, ap_per_class, get_rules, match_split
from deteval.results import EvalResult
from deteval.stats.attach import add_statistics
from deteval.tables.boxes import BoxTable

__all__ = ["UltralyticsUnits"]

SUMMARY_NAMES = ("mAP50-95", "mAP50", "mAP75", "precision", "recall")


class UltralyticsUnits:
    """The matched systems (``systems[0]`` is the one reported) of one split under an Ultralytics profile."""

    def __init__(
        self,
        gt: BoxTable,
        systems: Sequence[BoxTable],
        n_images: int,
        class_names: Sequence[str],
        profile: str,
        ious: Sequence[PairIou | None] | None = None,
    ) -> None:
        """``ious``: per system, the pairs' IoU of another geometry (oriented boxes:
        :func:`~deteval.detection.ultralytics.obb_pair_iou`), as :func:`match_split` takes it."""
        self.rules = get_rules(profile)
        kernels = list(ious) if ious is not None else [None] * len(systems)
        self.sets: list[MatchedSet] = [
            match_split(gt, dt, n_images, self.rules, iou) for dt, iou in zip(systems, kernels)
        ]
        self.n_units = n_images
        self.classes = np.unique(gt.cls)
        self.rows = [str(class_names[int(c)]) for c in self.classes]
        self.names = [*SUMMARY_NAMES, *(f"ap:{r}" for r in self.rows)]

    def _one(self, weights: Sequence[np.ndarray]) -> np.ndarray:
        """The metrics of the test set answered by system i ``weights[i][u]`` times on image u."""
        parts = [
            (
                np.repeat(s.tp, w[s.pred_img], axis=0),
                np.repeat(s.conf, w[s.pred_img]),
                np.repeat(s.pred_cls, w[s.pred_img]),
            )
            for s, w in zip(self.sets, weights)
            if s.pred_img is not None
        ]
        first = self.sets[0]
        total = np.sum(np.stack(weights), axis=0)
        target = np.repeat(first.target_cls, total[first.target_img])
        m = ap_per_class(
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
            target,
            self.rules.sentinel,
        )
        per_class = dict(zip(m.classes.tolist(), m.ap.mean(1).tolist()))
        aps = [per_class.get(int(c), np.nan) for c in self.classes]
        return np.array([m.map, m.map50, m.map75, m.precision, m.recall, *aps])

    def metric(self, system: int = 0) -> Callable[[np.ndarray], np.ndarray]:
        """``metric(w)``: (k, n_units) integer weights → (k, m) values of ``system`` (module docstring)."""

        def values(w: np.ndarray) -> np.ndarray:
            zero = np.zeros(self.n_units, dtype=np.int64)
            return np.stack(
                [self._one([row if i == system else zero for i in range(len(self.sets))]) for row in w]
            )

        return values

    def mix(self, a: int, b: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """``mix(w_a, w_b)``: system ``a`` on image u ``w_a[u]`` times and ``b`` ``w_b[u]`` times."""

        def values(wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
            zero = np.zeros(self.n_units, dtype=np.int64)

            def weights(ra: np.ndarray, rb: np.ndarray) -> list[np.ndarray]:
                return [ra if i == a else rb if i == b else zero for i in range(len(self.sets))]

            return np.stack([self._one(weights(ra, rb)) for ra, rb in zip(wa, wb)])

        return values

    def add_statistics(self, result: EvalResult, other_names: Sequence[str] = (), **options: Any) -> None:
        """Intervals of the summary numbers and each class's AP50-95 in ``result`` (system 0's), and
        comparisons with the other systems; ``options`` as :func:`deteval.stats.attach.add_statistics`."""
        row_of = {f"ap:{r}": r for r in self.rows if r in result.per_class}
        others = [(n, self.mix(0, i + 1), None, self.n_units) for i, n in enumerate(other_names)]
        add_statistics(
            result, self.names, self.metric(0), self.n_units, "image", others=others, row_of=row_of, **options
        )
