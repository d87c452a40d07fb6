"""supervision ≥ 0.26 ``sv.metrics.MeanAveragePrecision`` from a COCO evaluation.

supervision's evaluator is a port of COCOeval: the same matching and the same 101-point precision table, but
the table is stored in float32. Its numbers are then means of those float32 values accumulated in float64:
``mAP_scores[t]`` = the mean over (recall level, category) of the valid entries (categories with no ground
truth hold −1 and are left out); ``map50_95`` = the mean of the valid ``mAP_scores``; ``map50`` and
``map75`` = ``mAP_scores`` at 0.5 and 0.75; per class, the mean over recall levels. So the numbers equal
pycocotools' to about 1e-8, not bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.detection.coco import CocoEvaluation


@dataclass
class SupervisionMetrics:
    """``map_scores`` (T), ``ap_per_class`` (K × T, −1 for categories without ground truth), the means."""

    map_scores: np.ndarray
    ap_per_class: np.ndarray

    @property
    def map50_95(self) -> float:
        valid = self.map_scores[self.map_scores > -1]
        return float(valid.mean()) if len(valid) else -1.0

    @property
    def map50(self) -> float:
        return float(self.map_scores[0])

    @property
    def map75(self) -> float:
        return float(self.map_scores[5])


def masked_mean(values: np.ndarray, valid: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """Mean of ``values`` where ``valid`` along ``axis``, summed in float64; −1 where nothing is valid."""
    sums = np.where(valid, values, np.float32(0.0)).sum(axis=axis, dtype=np.float64)
    counts = valid.sum(axis=axis)
    return np.divide(sums, counts, out=np.full(sums.shape, -1.0), where=counts > 0)


def supervision_from_coco(ev: CocoEvaluation) -> SupervisionMetrics:
    """supervision's numbers from deteval's COCO precision table (area ``all``, the largest maxDets)."""
    a = ev.params.area_lbl.index("all")
    prec = ev.precision[:, :, :, a, -1].astype(np.float32)  # T × R × K
    valid = prec != -1
    return SupervisionMetrics(masked_mean(prec, valid, (1, 2)), masked_mean(prec, valid, 1).T)
