"""Calibration of the confidence: reliability diagram and expected calibration error (ECE).

Detections (kept, not ignored) are put in ``n_bins`` equal-width confidence bins, bin
``b = min(floor(score * n_bins), n_bins - 1)`` (so 1.0 falls in the last bin); in each bin, the mean score
(confidence) and the fraction of true positives at the protocol's IoU (accuracy). ECE = sum over bins of
``n_b / N * |accuracy_b - confidence_b|`` (Guo et al. 2017); MCE = the largest gap. Scores must lie in
[0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.analysis.ranked import Matched
from deteval.errors import ValidationError

__all__ = ["Calibration", "calibration"]


@dataclass
class Calibration:
    """Per-bin counts, mean confidence and accuracy (None for an empty bin), ECE and MCE."""

    edges: np.ndarray
    count: np.ndarray
    confidence: list[float | None]
    accuracy: list[float | None]
    ece: float
    mce: float
    iou: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "iou": self.iou,
            "ece": self.ece,
            "mce": self.mce,
            "bins": {
                "edges": self.edges.tolist(),
                "count": self.count.tolist(),
                "confidence": self.confidence,
                "accuracy": self.accuracy,
            },
        }


def calibration(m: Matched, n_bins: int = 10) -> Calibration:
    """Reliability bins and ECE of all classes' detections pooled (module docstring)."""
    if n_bins < 1:
        raise ValidationError(f"n_bins must be at least 1, got {n_bins}")
    s = m.score
    if s.size and (s.min() < 0.0 or s.max() > 1.0):
        raise ValidationError(
            f"calibration needs scores in [0, 1]; the scores range over [{s.min():g}, {s.max():g}]"
        )
    b = np.minimum(np.floor(s * n_bins).astype(np.int64), n_bins - 1)
    count = np.bincount(b, minlength=n_bins)
    conf_sum = np.bincount(b, weights=s, minlength=n_bins)
    tp_sum = np.bincount(b, weights=m.tp.astype(np.float64), minlength=n_bins)
    nz = count > 0
    conf = np.divide(conf_sum, count, out=np.zeros(n_bins), where=nz)
    acc = np.divide(tp_sum, count, out=np.zeros(n_bins), where=nz)
    gap = np.abs(acc - conf)
    n = int(count.sum())
    ece = float(np.sum(count * gap) / n) if n else 0.0
    mce = float(gap[nz].max()) if n else 0.0
    return Calibration(
        edges=np.arange(n_bins + 1) / n_bins,
        count=count,
        confidence=[float(v) if z else None for v, z in zip(conf, nz)],
        accuracy=[float(v) if z else None for v, z in zip(acc, nz)],
        ece=ece,
        mce=mce,
        iou=m.iou,
    )
