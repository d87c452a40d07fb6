"""Deliberately plain reference implementations, one detection at a time, for the tests only.

Written from the rules in DESIGN.md ("Official VOC devkit" and "py-faster-rcnn"), not from deteval's code:
no numpy vectorisation, no shared helpers, so that the vectorised matcher is checked against an independent
reading of the rules.

Inputs are plain Python lists for ONE class:
* ``gts``: list of (image_id, [x1, y1, x2, y2], difficult)
* ``dets``: list of (image_id, score, [x1, y1, x2, y2]) in file order
"""

from __future__ import annotations

import math

import numpy as np


def matlab_for_values(a: float, d: float, b: float) -> list[float]:
    """The values a MATLAB (or Octave) ``for t = a:d:b`` loop gives t (d > 0): ``a + k*d`` for
    k = 0..n, n = floor((b - a)/d) (with MATLAB's small tolerance). The loop never materialises the
    colon array, so the from-both-ends values of an ``x = a:d:b`` array do not apply."""
    n = math.floor((b - a) / d + 1e-10)
    return [a + k * d for k in range(n + 1)]


def devkit_overlap(bb, bbgt, one=1.0):
    """VOCevaldet.m's overlap, or None when the boxes do not overlap (iw <= 0 or ih <= 0)."""
    bi = [max(bb[0], bbgt[0]), max(bb[1], bbgt[1]), min(bb[2], bbgt[2]), min(bb[3], bbgt[3])]
    iw = bi[2] - bi[0] + one
    ih = bi[3] - bi[1] + one
    if iw > 0 and ih > 0:
        ua = (
            (bb[2] - bb[0] + one) * (bb[3] - bb[1] + one)
            + (bbgt[2] - bbgt[0] + one) * (bbgt[3] - bbgt[1] + one)
            - iw * ih
        )
        return iw * ih / ua
    return None


def _nanmax(values):
    """MATLAB's max: NaN skipped; all-NaN gives NaN; empty gives None (MATLAB's [])."""
    if not values:
        return None
    finite = [v for v in values if not math.isnan(v)]
    return max(finite) if finite else math.nan


def devkit_outcomes(gts, dets, minoverlap=0.5, one=1.0):
    """Per detection, in FILE order: 1 TP, 0 FP, -1 ignored; the devkit's loop, literally."""
    # stable sort by descending confidence (Python's sort is stable)
    order = sorted(range(len(dets)), key=lambda d: -dets[d][1])
    taken = {}
    outcome = [None] * len(dets)
    for d in order:
        img, _, bb = dets[d]
        ovmax = -math.inf
        jmax = None
        for j, (gimg, bbgt, _diff) in enumerate(gts):
            if gimg != img:
                continue
            ov = devkit_overlap(bb, bbgt, one)
            if ov is not None and ov > ovmax:
                ovmax = ov
                jmax = j
        if ovmax >= minoverlap:
            if not gts[jmax][2]:
                if not taken.get(jmax, False):
                    outcome[d] = 1
                    taken[jmax] = True
                else:
                    outcome[d] = 0
            else:
                outcome[d] = -1
        else:
            outcome[d] = 0
    return outcome, order


def devkit_ap(gts, dets, minoverlap=0.5, use07=False, one=1.0):
    """(AP, tp, fp) as VOCevaldet.m + VOCap.m; NaN where MATLAB would give NaN."""
    outcome, order = devkit_outcomes(gts, dets, minoverlap, one)
    npos = sum(1 for g in gts if not g[2])
    tp, fp = [], []
    ctp = cfp = 0
    for d in order:
        ctp += 1 if outcome[d] == 1 else 0
        cfp += 1 if outcome[d] == 0 else 0
        tp.append(ctp)
        fp.append(cfp)
    rec = [t / npos if npos else math.nan for t in tp]
    prec = [t / (t + f) if (t + f) else math.nan for t, f in zip(tp, fp)]
    if use07:
        ap = 0.0
        for t in matlab_for_values(0.0, 0.1, 1.0):  # VOCevaldet.m: for t=0:0.1:1
            p = _nanmax([p for p, r in zip(prec, rec) if r >= t])
            if p is None:
                p = 0.0
            ap = ap + p / 11
    else:
        mrec = [0.0] + rec + [1.0]
        mpre = [0.0] + prec + [0.0]
        for i in range(len(mpre) - 2, -1, -1):
            mpre[i] = _nanmax([mpre[i], mpre[i + 1]])
        ap = 0.0
        terms = []
        for i in range(1, len(mrec)):
            if mrec[i] != mrec[i - 1]:
                terms.append((mrec[i] - mrec[i - 1]) * mpre[i])
        ap = float(np.sum(terms)) if terms else 0.0
    return ap, ctp, cfp


def pyfrcnn_ap(gts, dets, ovthresh=0.5, use07=True):
    """py-faster-rcnn voc_eval.py's rules, one detection at a time: argsort(-conf) (numpy's default sort),
    strict IoU > threshold, +1 areas with iw, ih clipped at 0, np.arange(0, 1.1, 0.1) levels and
    tp / max(tp + fp, eps) precision. Returns (AP, tp, fp)."""
    conf = np.array([d[1] for d in dets], dtype=np.float64)
    order = np.argsort(-conf).tolist()
    npos = sum(1 for g in gts if not g[2])
    det_flag = {}
    tp = np.zeros(len(dets))
    fp = np.zeros(len(dets))
    for r, d in enumerate(order):
        img, _, bb = dets[d]
        ovmax = -np.inf
        jmax = None
        cand = [(j, g) for j, g in enumerate(gts) if g[0] == img]
        if cand:
            overlaps = []
            for _, (_, g, _) in cand:
                iw = max(min(bb[2], g[2]) - max(bb[0], g[0]) + 1.0, 0.0)
                ih = max(min(bb[3], g[3]) - max(bb[1], g[1]) + 1.0, 0.0)
                inters = iw * ih
                uni = (
                    (bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0)
                    + (g[2] - g[0] + 1.0) * (g[3] - g[1] + 1.0)
                    - inters
                )
                overlaps.append(inters / uni)
            k = int(np.argmax(overlaps))
            ovmax = overlaps[k]
            jmax = cand[k][0]
        if ovmax > ovthresh:
            if not gts[jmax][2]:
                if not det_flag.get(jmax, False):
                    tp[r] = 1.0
                    det_flag[jmax] = True
                else:
                    fp[r] = 1.0
        else:
            fp[r] = 1.0
    fp = np.cumsum(fp)
    tp = np.cumsum(tp)
    rec = tp / float(npos)
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    if use07:
        ap = 0.0
        for t in np.arange(0.0, 1.1, 0.1):
            if np.sum(rec >= t) == 0:
                p = 0
            else:
                p = np.max(prec[rec >= t])
            ap = ap + p / 11.0
    else:
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.concatenate(([0.0], prec, [0.0]))
        for i in range(mpre.size - 1, 0, -1):
            mpre[i - 1] = max(mpre[i - 1], mpre[i])
        idx = [i for i in range(mrec.size - 1) if mrec[i + 1] != mrec[i]]
        ap = float(np.sum([(mrec[i + 1] - mrec[i]) * mpre[i + 1] for i in idx])) if idx else 0.0
    ntp = int(tp[-1]) if len(dets) else 0
    nfp = int(fp[-1]) if len(dets) else 0
    return float(ap), ntp, nfp
