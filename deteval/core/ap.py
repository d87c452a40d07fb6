"""Average precision: of a :class:`~deteval.core.ranking.Ranking` (the one-list case of
:class:`~deteval.core.lists.RankedLists`, where the methods are defined and computed), and of a PR curve
given as two arrays (a curve from elsewhere, e.g. another tool's output).

The curve functions take ``recall`` (non-decreasing) and ``precision`` in rank order with ignored items
already removed, and follow the same definitions as the table in :mod:`deteval.core.lists`:

==================  =======================================================================================
method              definition
==================  =======================================================================================
``voc07``           VOC2007 11-point: mean over the devkit's levels t = k*0.1, k = 0..10 (``for t=0:0.1:1``;
                    0.3, 0.6 and 0.7 are one ulp above the decimals) of the maximum precision at recall >= t,
                    0 if no rank reaches t. Summed as the devkit does, ``ap += p/11``.
``all_points``      VOC2010+ (VOCap.m): recall padded [0, rec, 1], precision [0, prec, 0], right-to-left
                    running max, sum of Δrecall × precision over the points where recall changes.
``coco101``         pycocotools: envelope sampled at ``np.linspace(0, 1, 101)`` with
                    ``searchsorted(side="left")``, 0 beyond the last recall, mean of the 101 samples. Pass the
                    precision computed with ``eps=np.spacing(1)`` (``Ranking.precision``) to match exactly.
``uninterpolated``  IR average precision: sum of P(r) at each relevant rank r, left to right, divided by n_pos.
==================  =======================================================================================
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from deteval.core.levels import COCO_RECALL_LEVELS, VOC_DEVKIT_LEVELS
from deteval.core.lists import AP_METHODS, APMethod, mean_in_level_order
from deteval.core.ranking import Ranking
from deteval.errors import ValidationError

__all__ = [
    "ap_all_points",
    "ap_coco101",
    "ap_uninterpolated",
    "ap_voc07",
    "average_precision",
    "interpolated_precision",
    "precision_envelope",
]


def _curve(recall: ArrayLike, precision: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    rec = np.asarray(recall, dtype=np.float64)
    prec = np.asarray(precision, dtype=np.float64)
    if rec.ndim != 1 or rec.shape != prec.shape:
        raise ValidationError(f"recall {rec.shape} and precision {prec.shape} must be 1-D of equal length")
    if rec.size > 1 and np.any(rec[1:] < rec[:-1]):
        raise ValidationError("recall must be non-decreasing along the ranking")
    if np.isnan(prec).any() or np.isnan(rec).any():
        raise ValidationError("precision and recall must not contain NaN (remove ignored items first)")
    return rec, prec


def precision_envelope(precision: ArrayLike) -> np.ndarray:
    """Right-to-left running maximum of one curve: env[i] = max(precision[i:]), NaN skipped (MATLAB's ``max``
    over the devkit's 0/0 precision); all-NaN stays NaN."""
    prec = np.asarray(precision, dtype=np.float64)
    if prec.size == 0:
        return prec.copy()
    return np.fmax.accumulate(prec[::-1])[::-1]


def interpolated_precision(recall: ArrayLike, precision: ArrayLike, levels: ArrayLike) -> np.ndarray:
    """p_interp(t) = max{P(r) : R(r) >= t}, 0 where no rank reaches t, for every t in ``levels``: the
    envelope sampled at ``searchsorted(recall, t, side="left")`` (pycocotools' index rule)."""
    rec, prec = _curve(recall, precision)
    lv = np.asarray(levels, dtype=np.float64)
    env = precision_envelope(prec)
    idx = np.searchsorted(rec, lv, side="left")
    out = np.zeros(lv.shape, dtype=np.float64)
    inside = idx < rec.shape[0]
    out[inside] = env[idx[inside]]
    return out


def ap_voc07(recall: ArrayLike, precision: ArrayLike, levels: ArrayLike = VOC_DEVKIT_LEVELS) -> float:
    """VOC2007 11-point AP (VOCevaldet.m): sum over t of max{P : R >= t} / 11, accumulated in order."""
    return float(mean_in_level_order(interpolated_precision(recall, precision, levels)))


def ap_all_points(recall: ArrayLike, precision: ArrayLike) -> float:
    """VOC2010+ all-point AP of a curve (VOCap.m): area under the monotone envelope of the padded curve."""
    rec, prec = _curve(recall, precision)
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = precision_envelope(np.concatenate(([0.0], prec, [0.0])))
    i = np.flatnonzero(mrec[1:] != mrec[:-1]) + 1
    return float(np.sum((mrec[i] - mrec[i - 1]) * mpre[i]))


def ap_coco101(recall: ArrayLike, precision: ArrayLike, levels: ArrayLike = COCO_RECALL_LEVELS) -> float:
    """pycocotools AP of one curve: mean of the envelope sampled at the 101 recall thresholds."""
    return float(np.mean(interpolated_precision(recall, precision, levels)))


def ap_uninterpolated(relevant: ArrayLike, precision: ArrayLike, n_pos: int) -> float:
    """IR AP: (1 / n_pos) * sum of P(r) over the relevant ranks r, left to right; 0 when n_pos is 0."""
    rel = np.asarray(relevant, dtype=bool)
    prec = np.asarray(precision, dtype=np.float64)
    if rel.ndim != 1 or rel.shape != prec.shape:
        raise ValidationError(f"relevant {rel.shape} and precision {prec.shape} must be 1-D of equal length")
    if n_pos <= 0 or not rel.any():
        return 0.0
    return float(np.cumsum(prec[rel])[-1] / n_pos)


def average_precision(
    ranking: Ranking,
    method: APMethod = "all_points",
    *,
    levels: ArrayLike | None = None,
    if_no_positives: float = 0.0,
) -> float:
    """AP of a :class:`Ranking` by ``method`` (see :mod:`deteval.core.lists`).

    With ``n_pos == 0`` AP is undefined; ``if_no_positives`` is returned (0.0 as trec_eval; pycocotools uses
    -1; the VOC protocol leaves such classes out of the mean instead of asking). ``levels`` overrides the
    recall levels of ``voc07`` / ``coco101``. ``coco101`` uses the pycocotools precision denominator.
    """
    if method not in AP_METHODS:
        raise ValidationError(f"unknown AP method {method!r}; choose one of {', '.join(AP_METHODS)}")
    return float(ranking.lists.average_precision(method, levels=levels, if_no_positives=if_no_positives)[0])
