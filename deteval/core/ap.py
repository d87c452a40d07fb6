"""Average precision by method, and interpolated precision at recall levels.

All functions take a PR curve as two arrays in rank order: ``recall`` (non-decreasing) and ``precision``,
with ignored items already removed (see :mod:`deteval.core.ranking`).

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
``uninterpolated``  IR average precision: sum of P(r) at each relevant rank r, divided by n_pos.
==================  =======================================================================================
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from deteval.core.ranking import Ranking
from deteval.errors import ValidationError

APMethod = Literal["voc07", "all_points", "coco101", "uninterpolated"]
AP_METHODS: tuple[str, ...] = ("voc07", "all_points", "coco101", "uninterpolated")

#: The VOC devkit's recall levels: VOCevaldet.m loops ``for t=0:0.1:1``, and a MATLAB (and Octave) for-loop
#: variable is ``a + k*d``, so t = k*0.1: 0.30000000000000004, 0.6000000000000001 and 0.7000000000000001 at
#: k = 3, 6, 7 (a recall of exactly 0.3, 0.6 or 0.7 does not reach them). The default of ``voc07``.
VOC_DEVKIT_LEVELS = np.array([0.0 + k * 0.1 for k in range(11)], dtype=np.float64)
#: py-faster-rcnn's ``np.arange(0.0, 1.1, 0.1)``: the same eleven doubles as the devkit's loop.
PY_FASTER_RCNN_LEVELS = np.arange(0.0, 1.1, 0.1)
#: 0.0, 0.1, ..., 1.0 as the nearest doubles to the decimals (i / 10 is correctly rounded), for tools that
#: sample the decimals; not the devkit's levels.
VOC07_LEVELS = np.array([i / 10 for i in range(11)], dtype=np.float64)
#: pycocotools' ``recThrs``.
COCO_RECALL_LEVELS = np.linspace(0.0, 1.0, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)


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
    """Right-to-left running maximum: env[i] = max(precision[i:])."""
    prec = np.asarray(precision, dtype=np.float64)
    if prec.size == 0:
        return prec.copy()
    return np.maximum.accumulate(prec[::-1])[::-1]


def interpolated_precision(recall: ArrayLike, precision: ArrayLike, levels: ArrayLike) -> np.ndarray:
    """p_interp(t) = max{P(r) : R(r) >= t}, 0 where no rank reaches t, for every t in ``levels``.

    Computed as the envelope sampled at ``searchsorted(recall, t, side="left")``: the same index rule as
    pycocotools, and the same value as the devkit's ``max(prec(rec >= t))``.
    """
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
    lv = np.asarray(levels, dtype=np.float64)
    ap = 0.0
    for p in interpolated_precision(recall, precision, lv).tolist():
        ap = ap + p / float(lv.shape[0])
    return float(ap)


def ap_all_points(recall: ArrayLike, precision: ArrayLike) -> float:
    """VOC2010+ all-point AP (VOCap.m): area under the monotone envelope of the padded PR curve."""
    rec, prec = _curve(recall, precision)
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = precision_envelope(np.concatenate(([0.0], prec, [0.0])))
    i = np.flatnonzero(mrec[1:] != mrec[:-1]) + 1
    return float(np.sum((mrec[i] - mrec[i - 1]) * mpre[i]))


def ap_coco101(recall: ArrayLike, precision: ArrayLike, levels: ArrayLike = COCO_RECALL_LEVELS) -> float:
    """pycocotools AP of one curve: mean of the envelope sampled at the 101 recall thresholds."""
    return float(np.mean(interpolated_precision(recall, precision, levels)))


def ap_uninterpolated(relevant: ArrayLike, precision: ArrayLike, n_pos: int) -> float:
    """IR AP: (1 / n_pos) * sum of P(r) over the ranks r holding a relevant item; 0 when n_pos is 0."""
    rel = np.asarray(relevant, dtype=bool)
    prec = np.asarray(precision, dtype=np.float64)
    if rel.ndim != 1 or rel.shape != prec.shape:
        raise ValidationError(f"relevant {rel.shape} and precision {prec.shape} must be 1-D of equal length")
    if n_pos <= 0:
        return 0.0
    return float(np.sum(prec[rel]) / n_pos)


def average_precision(
    ranking: Ranking,
    method: APMethod = "all_points",
    *,
    levels: ArrayLike | None = None,
    if_no_positives: float = 0.0,
) -> float:
    """AP of a :class:`Ranking` by ``method`` (see the module table).

    With ``n_pos == 0`` AP is undefined; ``if_no_positives`` is returned (0.0 as trec_eval; pycocotools uses
    -1; the VOC protocol leaves such classes out of the mean instead of asking). ``levels`` overrides the
    recall levels of ``voc07`` / ``coco101``. ``coco101`` uses the pycocotools precision denominator.
    """
    if method not in AP_METHODS:
        raise ValidationError(f"unknown AP method {method!r}; choose one of {', '.join(AP_METHODS)}")
    if ranking.n_pos == 0:
        return float(if_no_positives)
    if method == "uninterpolated":
        return ap_uninterpolated(ranking.relevant, ranking.precision(), ranking.n_pos)
    rec = ranking.recall()
    if method == "voc07":
        return ap_voc07(rec, ranking.precision(), VOC_DEVKIT_LEVELS if levels is None else levels)
    if method == "all_points":
        return ap_all_points(rec, ranking.precision())
    if method == "coco101":
        prec = ranking.precision(eps=float(np.spacing(1)))
        return ap_coco101(rec, prec, COCO_RECALL_LEVELS if levels is None else levels)
    raise ValidationError(f"unknown AP method {method!r}; choose one of {', '.join(AP_METHODS)}")
