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

__all__ = ["greedy_match", "greedy_match_pairs"]


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


def greedy_match_pairs(
    pair_det: np.ndarray,
    pair_gt: np.ndarray,
    pair_iou: np.ndarray,
    det_block: np.ndarray,
    crowd: np.ndarray,
    thresholds: np.ndarray,
    rule: Literal["coco", "voc"],
    strict: bool = False,
) -> np.ndarray:
    """:func:`greedy_match`'s outcomes for many blocks at once, given as pairs.

    Parameters
    ----------
    pair_det, pair_gt, pair_iou : (P,) the (detection, ground truth) pairs whose IoU reaches the lowest
        threshold (no other pair can decide an outcome), sorted by detection, then by the ground truth's place
        in its block (the order the tie rules read).
    det_block : (D,) the block of each detection; detections are numbered block by block in rank order.
    crowd : (G,) bool, crowd (COCO) or difficult (VOC) ground truths.
    thresholds, rule, strict : as :func:`greedy_match`.

    Returns
    -------
    outcomes : (T, D) int8, 1 true positive, 0 false positive, −1 ignored.

    Step ``s`` takes, in every block at once, the ``s``-th detection having a pair, so each block is walked in
    rank order as :func:`greedy_match` walks it.
    """
    n_t, n_d = len(thresholds), len(det_block)
    out = np.zeros((n_t, n_d), dtype=np.int8)
    if not len(pair_det):
        return out
    taken = np.zeros((n_t, len(crowd)), dtype=bool)
    starts = np.flatnonzero(np.diff(pair_det, prepend=-1))
    sizes = np.diff(np.append(starts, len(pair_det)))
    dets = pair_det[starts]
    block = det_block[dets]
    step = np.arange(len(dets)) - np.searchsorted(block, block)
    cols = np.arange(n_t)
    for s in range(int(step.max()) + 1):
        these = np.flatnonzero(step == s)
        sz = sizes[these]
        first = np.cumsum(sz) - sz
        seg = np.repeat(starts[these] - first, sz) + np.arange(int(sz.sum()))
        gt, iou, d = pair_gt[seg], pair_iou[seg], dets[these]
        if rule == "voc":
            best = np.maximum.reduceat(iou, first)
            at = np.where(iou == np.repeat(best, sz), np.arange(len(iou)), len(iou))
            j = gt[np.minimum.reduceat(at, first)]  # the first maximum, as the devkit's `ov > ovmax`
            hit = best[:, None] > thresholds if strict else best[:, None] >= thresholds
            on_crowd = crowd[j]
            new = hit & ~on_crowd[:, None] & ~taken[:, j].T
            res = np.where(new, 1, 0).astype(np.int8)
            res[hit & on_crowd[:, None]] = -1
            out[:, d] = res.T
            rows, ts = np.nonzero(new)
            taken[ts, j[rows]] = True
            continue
        ok = iou[:, None] > thresholds if strict else iou[:, None] >= thresholds
        regular = ok & ~crowd[gt][:, None] & ~taken[:, gt].T
        vals = np.where(regular, iou[:, None], -np.inf)
        best = np.maximum.reduceat(vals, first, axis=0)
        at = np.where(regular & (vals == np.repeat(best, sz, axis=0)), np.arange(len(iou))[:, None], -1)
        last = np.maximum.reduceat(at, first, axis=0)  # the last maximum wins (pycocotools)
        has = last >= 0
        on_crowd = ~has & np.logical_or.reduceat(ok & crowd[gt][:, None], first, axis=0)
        res = np.where(has, 1, np.where(on_crowd, -1, 0)).astype(np.int8)
        out[:, d] = res.T
        rows, ts = np.nonzero(has)
        taken[cols[ts], gt[last[rows, ts]]] = True
    return out
