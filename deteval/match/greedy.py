"""Greedy matching of one block (one image and class) of ranked detections, every IoU threshold at once.

The readable, per-detection form of the two greedy rules that the vectorised engines apply to whole datasets
(:func:`deteval.match.coco.match_groups` for COCO, ``detection/voc.py`` for the VOC devkit); ``explain``
switches between them rule by rule on the same IoU matrix. Detections are walked in rank order (each depends
on what the ones before it took), all thresholds at once: ``taken`` is thresholds × ground truths.

* ``"coco"`` (pycocotools ``evaluateImg``): among the regular ground truths not yet taken whose IoU reaches the
  threshold, the largest IoU wins, the later ground truth on a tie; a detection with none but a crowd region
  reaching the threshold is ignored. Crowds are never taken.
* ``"voc"`` (VOCevaldet.m): the ground truth of largest IoU among all of them (taken or not; the first on a
  tie, as ``ov > ovmax``); if that IoU reaches the threshold, a difficult one makes the detection ignored,
  else it is a true positive when not yet taken and a false positive (duplicate) when taken.

The two tie rules are opposite on purpose (each is its tool's); do not unify them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["greedy_match"]


def greedy_match(
    iou: np.ndarray,
    crowd: np.ndarray,
    thresholds: np.ndarray,
    rule: Literal["coco", "voc"],
    strict: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Outcomes and the ground truth each true positive took, per threshold and detection.

    Parameters
    ----------
    iou : (G, D) float64 overlaps of the block's ground truths with its detections, detections in rank order.
    crowd : (G,) bool, crowd (COCO) or difficult (VOC) ground truths.
    thresholds : (T,) IoU thresholds.
    rule : ``"coco"`` or ``"voc"`` (module docstring).
    strict : compare ``IoU > t`` (py-faster-rcnn) instead of ``IoU >= t``.

    Returns
    -------
    outcomes : (T, D) int8, 1 true positive, 0 false positive, −1 ignored.
    matched : (T, D) int64, the row of ``iou`` a true positive took, −1 for the other outcomes.
    """
    n_g, n_d = iou.shape
    n_t = len(thresholds)
    out = np.zeros((n_t, n_d), dtype=np.int8)
    matched = np.full((n_t, n_d), -1, dtype=np.int64)
    if n_g == 0:
        return out, matched
    taken = np.zeros((n_t, n_g), dtype=bool)
    rows = np.arange(n_t)
    for d in range(n_d):
        col = iou[:, d]
        if rule == "voc":
            j = int(np.argmax(col))  # the first maximum, as the devkit's `ov > ovmax`
            hit = col[j] > thresholds if strict else col[j] >= thresholds
            if crowd[j]:
                out[hit, d] = -1
            else:
                new = hit & ~taken[:, j]
                out[new, d] = 1
                matched[new, d] = j
                taken[new, j] = True
            continue
        # pycocotools: regular ground truths first; among those qualifying the last maximum wins.
        ok = col[None, :] > thresholds[:, None] if strict else col[None, :] >= thresholds[:, None]
        regular = ok & ~crowd[None, :] & ~taken
        vals = np.where(regular, col[None, :], -np.inf)
        j = n_g - 1 - np.argmax(vals[:, ::-1], axis=1)
        has = regular.any(axis=1)
        out[has, d] = 1
        matched[has, d] = j[has]
        taken[rows[has], j[has]] = True
        on_crowd = ~has & (ok & crowd[None, :]).any(axis=1)
        out[on_crowd, d] = -1
    return out, matched
