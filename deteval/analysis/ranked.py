"""Matched detections as one flat table (class, score, true positive) plus positives per class: the input of
the operating-point and calibration analyses."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.analysis.tide import TideInput, assign

__all__ = ["Matched", "matched"]


@dataclass(frozen=True)
class Matched:
    """Kept, non-ignored detections: ``cls`` (index into ``names``), ``score``, ``tp``; ``n_gt`` positives
    per class (non-crowd / non-difficult ground truth)."""

    cls: np.ndarray
    score: np.ndarray
    tp: np.ndarray
    n_gt: np.ndarray
    names: list[str]
    iou: float


def matched(inp: TideInput, names: list[str], *, iou: float, rule: str, max_dets: int) -> Matched:
    """Match ``inp`` with the protocol's rule (:func:`deteval.analysis.tide.assign`: ``"coco"`` or ``"voc"``)
    at IoU ``iou``; ignored detections (crowd, difficult) are left out."""
    a = assign(inp, iou, 0.0, max_dets, rule)
    keep = a.state != 2
    n_gt = np.bincount(inp.gt_cls[~inp.gt_crowd], minlength=len(names)).astype(np.int64)
    return Matched(
        cls=a.cls[keep], score=a.score[keep], tp=a.state[keep] == 1, n_gt=n_gt, names=list(names), iou=iou
    )
