"""COCO accumulation (pycocotools ``COCOeval.accumulate``) vectorised across categories and thresholds.

For each maxDet m and area range a, pycocotools concatenates every image's first m detections of a category
(images in ascending id order, each image's detections by descending score), sorts them stably by descending
score, and over the non-ignored ones computes ``rc = tp/npig``, ``pr = tp/(tp + fp + np.spacing(1))``, the
right-to-left running maximum of ``pr``, and samples it at ``searchsorted(rc, recThrs, side="left")``
(0 beyond the last recall). Categories without non-ignored ground truth keep −1.

Here one stable sort by (category, −score, image, rank) serves every (a, m) slice. Because precision
only rises at a true positive, the running maximum and the sampled values only depend on the true
positives: the c-th true positive of a (threshold, category) has ``pr = c / ((fp_c + c) + eps)`` where
``fp_c`` counts the non-ignored detections before it that are not true positives. The sample at recall
level x is taken at the smallest count c with ``fl(c / npig) ≥ x`` (found exactly per category), the
running maximum by block maxima between sample points plus a maximum over at most R blocks. Same
operations on the same doubles, hence the same bits as pycocotools.
"""

from __future__ import annotations

import numpy as np

from deteval.detection.coco_match import MatchTable

__all__ = ["accumulate", "min_counts_for_recall"]


def min_counts_for_recall(rec_thrs: np.ndarray, npig: np.ndarray) -> np.ndarray:
    """(K, R) smallest integer c >= 0 with ``fl(c / npig_k) >= rec_thrs[r]`` (npig + 1 when none ≤ npig)."""
    n = npig.astype(np.float64)[:, None]
    x = rec_thrs[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.clip(np.ceil(x * n), 0, n + 1)
        for _ in range(4):
            down = (c >= 1) & ((c - 1) / n >= x)
            c = c - down
            up = (c <= n) & ~(c / n >= x)
            c = c + up
    return c.astype(np.int64)


def accumulate(
    table: MatchTable, rec_thrs: np.ndarray, max_dets: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``precision[T,R,K,A,M]``, ``recall[T,K,A,M]`` and ``scores[T,R,K,A,M]`` in pycocotools' layout."""
    A, T, _ = table.tp.shape
    K = table.n_cats
    R = rec_thrs.shape[0]
    M = len(max_dets)
    precision = -np.ones((T, R, K, A, M))
    recall = -np.ones((T, K, A, M))
    scores = -np.ones((T, R, K, A, M))
    eps = np.spacing(1)

    order = np.lexsort((table.rank, table.img, -table.score, table.cat))
    cat_s = table.cat[order]
    rank_s = table.rank[order]
    score_s = table.score[order]
    karange = np.arange(K)
    for m, max_det in enumerate(max_dets):
        if rank_s.size and rank_s.max() >= max_det:
            sel = np.flatnonzero(rank_s < max_det)
            om, cm, sm = order[sel], cat_s[sel], score_s[sel]
        else:
            om, cm, sm = order, cat_s, score_s
        n_m = om.shape[0]
        seg_s = np.searchsorted(cm, karange, side="left")
        seg_e = np.searchsorted(cm, karange, side="right")
        nd = seg_e - seg_s
        for a in range(A):
            npig = table.npig[:, a]
            valid_k = npig > 0
            if not valid_k.any():
                continue
            tp_s = np.take(table.tp[a], om, axis=1)  # (T, n_m), detections in accumulation order
            # flat running count of non-ignored detections; differences give counts inside a (t, k) segment
            cdt = np.int32 if T * n_m < 2**31 - 1 else np.int64
            nonig = np.cumsum(~np.take(table.ig[a], om, axis=1).reshape(-1), dtype=cdt)
            f = np.flatnonzero(tp_s)
            t_i = f // max(n_m, 1)
            p_i = f - t_i * n_m
            k_i = cm[p_i]
            grp = t_i * K + k_i  # non-decreasing: rows in t order, positions in category order
            n_tp = grp.shape[0]
            gstart = np.searchsorted(grp, np.arange(T * K), side="left")
            ntp = np.diff(np.r_[gstart, n_tp]).reshape(T, K)
            j = np.arange(n_tp) - gstart[grp] + 1
            base = t_i * n_m + seg_s[k_i] - 1
            before = np.where(base >= 0, nonig[np.maximum(base, 0)], 0)
            fp = (nonig[f].astype(np.int64) - before) - j
            jf = j.astype(np.float64)
            pr = jf / (fp.astype(np.float64) + jf + eps)

            c = min_counts_for_recall(rec_thrs, npig)  # (K, R)
            cc = np.maximum(c, 1)
            valid = cc[None, :, :] <= ntp[:, :, None]  # (T, K, R)
            gs = gstart.reshape(T, K)
            end = (gs + ntp)[:, :, None]
            pos = np.where(valid, gs[:, :, None] + cc[None, :, :] - 1, end)  # (T, K, R)
            bounds = np.concatenate([pos, end], axis=2).reshape(-1)
            pr_ext = np.r_[pr, -np.inf]
            block = np.maximum.reduceat(pr_ext, bounds).reshape(T, K, R + 1)[:, :, :R]
            block = np.where(valid, block, -np.inf)
            env = np.maximum.accumulate(block[:, :, ::-1], axis=2)[:, :, ::-1]
            q = np.where(valid, env, 0.0)

            # the score at the sampled rank: the c-th true positive, or the category's first detection (c = 0)
            p_ext = np.r_[p_i, 0]
            at = np.where(valid, sm[p_ext[np.minimum(pos, n_tp)]] if n_m else 0.0, 0.0)
            first = np.where(nd > 0, sm[np.minimum(seg_s, max(n_m - 1, 0))] if n_m else 0.0, 0.0)  # (K,)
            ss = np.where(
                (c == 0)[None, :, :], np.where((nd > 0)[None, :, None], first[None, :, None], 0.0), at
            )

            with np.errstate(divide="ignore", invalid="ignore"):
                rc_last = ntp / npig[None, :]
            kk = np.flatnonzero(valid_k)
            precision[:, :, kk, a, m] = q[:, kk, :].transpose(0, 2, 1)
            scores[:, :, kk, a, m] = ss[:, kk, :].transpose(0, 2, 1)
            recall[:, kk, a, m] = rc_last[:, kk]
    return precision, recall, scores
