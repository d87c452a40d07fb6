"""COCO accumulation (pycocotools ``COCOeval.accumulate``) as ranked lists on the core.

For each maxDet m and area range a, pycocotools concatenates every image's first m detections of a category
(images in ascending id order, each image's detections by descending score), sorts them stably by descending
score, and over the non-ignored ones computes ``rc = tp/npig``, ``pr = tp/(tp + fp + np.spacing(1))``, the
right-to-left running maximum of ``pr``, and samples it at ``searchsorted(rc, recThrs, side="left")``
(0 beyond the last recall). Categories without non-ignored ground truth keep −1.

That is one ranked list per (threshold, category) for each area range and maxDet: one
:class:`~deteval.core.lists.RankedLists` of T × K lists per (a, m) (so that memory stays that of one slice),
all ranked by one stable sort by (category, −score, image, rank) shared by every threshold and area range
(only the outcome column differs).
The core's interpolated precision with eps = ``np.spacing(1)``, its scores at the sampled rows and the recall
at the last rank give ``precision[T,R,K,A,M]``, ``scores`` and ``recall[T,K,A,M]`` by a reshape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from deteval.core.lists import COCO_EPS, presorted_lists, safe_div
from deteval.core.weighted import weighted_levels
from deteval.detection.coco_match import MatchTable

__all__ = ["accumulate"]


def accumulate(
    table: MatchTable,
    rec_thrs: np.ndarray,
    max_dets: tuple[int, ...],
    *,
    weights: np.ndarray | None = None,
    npig: np.ndarray | None = None,
    cache: dict[str, Any] | None = None,
    only: set[tuple[int, int]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``precision[T,R,K,A,M]``, ``recall[T,K,A,M]`` and ``scores[T,R,K,A,M]`` in pycocotools' layout.

    ``weights`` (one integer per table row) and ``npig`` (K, A) re-weight the table (deteval.stats: an image
    drawn k times gives its detections weight k and adds k times its ground truths to npig). ``cache``: a
    dict kept by the caller across calls on the same table (resamples): the sort and the per-slice outcome
    columns, which weights never change, are then computed once. ``only``: the (area, maxDet) index pairs to
    fill (the others stay −1), for callers that read a few slices."""
    A, T, _ = table.tp.shape
    K = table.n_cats
    R = rec_thrs.shape[0]
    M = len(max_dets)
    # filled as (A, M, T, K, R) and (A, M, T, K): pycocotools' layout is a transpose of it
    prec = -np.ones((A, M, T, K, R))
    sc = -np.ones((A, M, T, K, R))
    rec = -np.ones((A, M, T, K))
    npig_ka = table.npig if npig is None else npig
    valid = (npig_ka > 0).T  # (A, K)

    for m, a, om, sm, per_list, tp, ig in _slices(table, max_dets, valid, cache):
        if only is not None and (a, m) not in only:
            continue
        n_m = om.shape[0]
        n_pos = np.tile(npig_ka[:, a], T)  # lists in (threshold, category) order
        if weights is None:
            lists = presorted_lists(per_list, tp, n_pos, ig)
            rows = lists.sampled_items(rec_thrs)  # items are T copies of the same n_m detections
            q = lists.interpolated_precision(rec_thrs, COCO_EPS)
            n_hits = lists.n_hits
        else:
            # the copies of a re-weighted row are never laid out (exact: deteval.core.weighted)
            q, rows, n_hits = weighted_levels(
                per_list, tp, ig, n_pos, np.tile(weights[om], T), rec_thrs, COCO_EPS
            )
        prec[a, m] = q.reshape(T, K, R)
        sc[a, m] = np.where(rows >= 0, sm[rows % max(n_m, 1)] if n_m else 0.0, 0.0).reshape(T, K, R)
        rec[a, m] = safe_div(n_hits, n_pos).reshape(T, K)
        prec[a, m][:, ~valid[a]] = -1.0
        sc[a, m][:, ~valid[a]] = -1.0
        rec[a, m][:, ~valid[a]] = -1.0
    precision = np.ascontiguousarray(prec.transpose(2, 4, 3, 0, 1))
    scores = np.ascontiguousarray(sc.transpose(2, 4, 3, 0, 1))
    recall = np.ascontiguousarray(rec.transpose(2, 3, 0, 1))
    return precision, recall, scores


_Slice = tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _slices(
    table: MatchTable, max_dets: tuple[int, ...], valid: np.ndarray, cache: dict[str, Any] | None
) -> Iterator[_Slice]:
    """(m, a, rows in ranked order, their scores, items per list, tp, ig) of every (maxDet, area range) slice
    with a category to score; from ``cache`` when it holds them (every slice is then kept)."""
    if cache is not None and "slices" in cache:
        yield from (s for s in cache["slices"] if valid[s[1]].any())
        return
    kept: list[_Slice] = []
    T, K = table.tp.shape[1], table.n_cats
    # pycocotools' ranking of a category: images in ascending id order, then a stable sort by -score
    order = np.lexsort((table.rank, table.img, -table.score, table.cat))
    cat_s = table.cat[order]
    rank_s = table.rank[order]
    score_s = table.score[order]
    for m, max_det in enumerate(max_dets):
        sel = np.flatnonzero(rank_s < max_det) if rank_s.size and rank_s.max() >= max_det else None
        om = order if sel is None else order[sel]
        sm = score_s if sel is None else score_s[sel]
        per_list = np.tile(np.bincount(cat_s if sel is None else cat_s[sel], minlength=K), T)
        for a in range(table.tp.shape[0]):
            if cache is None and not valid[a].any():
                continue
            tp = np.take(table.tp[a], om, axis=1).reshape(-1)
            ig = np.take(table.ig[a], om, axis=1).reshape(-1)
            one = (m, a, om, sm, per_list, tp, ig)
            if cache is not None:
                kept.append(one)
            if valid[a].any():
                yield one
    if cache is not None:
        cache["slices"] = kept
