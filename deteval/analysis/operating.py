"""Operating points: precision, recall and F1 against the confidence threshold, per class and overall.

For a class with ``n`` positives and a threshold ``s``, the detections kept are those scored ``>= s``:
``P(s) = TP / (TP + FP)`` (0 when nothing is kept), ``R(s) = TP / n``, ``F1 = 2PR / (P + R)`` (0 when
``P + R = 0``). The candidate thresholds are the class's distinct scores; the best one maximises F1, the
highest such score on a tie (the fewest detections). The global threshold maximises the mean F1 over the
classes with positives, over every distinct score of all classes (highest on a tie); a class has F1 0 at a
threshold above all its scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.analysis.ranked import Matched

__all__ = ["ClassCurve", "OperatingPoints", "class_curve", "operating_points"]


@dataclass(frozen=True)
class ClassCurve:
    """P, R, F1 at each distinct score (descending) of one class, and the TP / FP counts there."""

    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    n_gt: int

    def best(self) -> dict[str, Any]:
        """The point of maximum F1 (the highest threshold on a tie); None values when the class has none."""
        if self.thresholds.size == 0:
            return {"threshold": None, "precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 0}
        i = int(np.argmax(self.f1))  # thresholds descend: the first maximum is the highest threshold
        return {
            "threshold": float(self.thresholds[i]),
            "precision": float(self.precision[i]),
            "recall": float(self.recall[i]),
            "f1": float(self.f1[i]),
            "tp": int(self.tp[i]),
            "fp": int(self.fp[i]),
        }

    def at(self, s: np.ndarray) -> np.ndarray:
        """F1 at arbitrary thresholds ``s`` (0 above the highest score)."""
        # number of distinct scores >= s: thresholds are descending, so search the negated array
        k = np.searchsorted(-self.thresholds, -np.asarray(s, dtype=np.float64), side="right")
        f1 = np.concatenate([[0.0], self.f1])
        return f1[k]


def _f1(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    den = p + r
    out = np.zeros_like(den)
    np.divide(2 * p * r, den, out=out, where=den > 0)
    return out


def class_curve(score: np.ndarray, tp: np.ndarray, n_gt: int) -> ClassCurve:
    """The curve of one class from its detections' scores and outcomes."""
    o = np.argsort(-score, kind="stable")
    s, t = score[o], tp[o].astype(np.int64)
    ctp, cfp = np.cumsum(t), np.cumsum(1 - t)
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True]) if s.size else np.zeros(0, dtype=np.int64)
    ctp, cfp, th = ctp[last], cfp[last], s[last]
    prec = ctp / np.maximum(ctp + cfp, 1)
    rec = ctp / n_gt if n_gt > 0 else np.zeros(len(ctp))
    return ClassCurve(th, prec, rec, _f1(prec, rec), ctp, cfp, int(n_gt))


@dataclass
class OperatingPoints:
    """Per-class curves and best points, and the global threshold of maximum mean F1."""

    curves: dict[str, ClassCurve]
    best: dict[str, dict[str, Any]]
    global_threshold: float | None
    global_mean_f1: float
    global_per_class: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (curves left out: they are drawn in the HTML report)."""
        return {
            "per_class": self.best,
            "global": {
                "threshold": self.global_threshold,
                "mean_f1": self.global_mean_f1,
                "f1": self.global_per_class,
            },
        }


def operating_points(m: Matched) -> OperatingPoints:
    """Best F1 point per class and the one threshold maximising the mean F1 (module docstring)."""
    curves = {
        name: class_curve(m.score[m.cls == k], m.tp[m.cls == k], int(m.n_gt[k]))
        for k, name in enumerate(m.names)
    }
    best = {name: {**c.best(), "n_gt": c.n_gt} for name, c in curves.items()}
    scored = [c for c in curves.values() if c.n_gt > 0]
    cand = np.unique(m.score)[::-1]
    if not scored or cand.size == 0:
        return OperatingPoints(curves, best, None, 0.0, {})
    total = np.zeros(cand.size)
    for c in scored:
        total += c.at(cand)
    mean = total / len(scored)
    i = int(np.argmax(mean))
    s = float(cand[i])
    per = {name: float(c.at(np.array([s]))[0]) for name, c in curves.items() if c.n_gt > 0}
    return OperatingPoints(curves, best, s, float(mean[i]), per)
