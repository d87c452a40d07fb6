"""COCO accumulation (pycocotools ``COCOeval.accumulate``) as ranked lists on the core.

For each maxDet m and area range a, pycocotools concatenates every image's first m detections of a category
(images in ascending id order, each image's detections by descending score), sorts them stably by descending
score, and over the non-ignored ones computes ``rc = tp/npig``, ``pr = tp/(tp + fp + np.spacing(1))``, the
right-to-left running maximum of ``pr``, and samples it at ``searchsorted(rc, recThrs, side="left")``
(0 beyond the last recall). Categories without non-ignored ground truth keep −1.

That is one ranked list per (threshold, category) for each area range and maxDet: one
:class:`~deteval.core.lists.RankedLists` of T × K lists per (a, m) (so that memory stays that of one slice),
all ranked by one stable sort by (category, −score, image, rank) shared by every threshold and area range
(only the outcome column differs). A category whose (image, category) groups are all shorter than two
consecutive maxDets has the same list at both: the later one copies its numbers (with many categories and
few detections per image, most of them).
The core's interpolated precision with eps = ``np.spacing(1)``, its scores at the sampled rows and the recall
at the last rank give ``precision[T,R,K,A,M]``, ``scores`` and ``recall[T,K,A,M]`` by a reshape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from deteval.core.lists import COCO_EPS, min_counts_for_recall, presorted_lists, safe_div
from deteval.core.sorting import lex_order, stable_order
from deteval.core.weighted import weighted_levels
from deteval.match.coco import MatchTable

__all__ = ["accumulate", "precision_recall", "pycocotools_views"]

#: Items (thresholds × detections) ranked at once: the thresholds are taken in groups of about this many
#: items, which bounds the temporaries of the core (lists are independent, so the numbers are the same).
LIST_ITEMS = 1 << 20

#: Slabs of every area range at once up to this size (precision, scores and recall): the result's layout is
#: then written in one sweep; larger (many categories), one area range at a time (bounded memory).
SLAB_BYTES = 32 << 20


def accumulate(
    table: MatchTable,
    rec_thrs: np.ndarray,
    max_dets: tuple[int, ...],
    *,
    weights: np.ndarray | None = None,
    npig: np.ndarray | None = None,
    cache: dict[str, Any] | None = None,
    only: set[tuple[int, int]] | None = None,
    out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``precision[T,R,K,A,M]``, ``recall[T,K,A,M]`` and ``scores[T,R,K,A,M]`` in pycocotools' layout.

    ``weights`` (one integer per table row) and ``npig`` (K, A) re-weight the table (deteval.stats: an image
    drawn k times gives its detections weight k and adds k times its ground truths to npig). ``cache``: a
    dict kept by the caller across calls on the same table (resamples): the sort and the per-slice outcome
    columns, which weights never change, are then computed once. ``only``: the (area, maxDet) index pairs to
    fill (the others stay −1), for callers that read a few slices. ``out``: precision, scores as (A, M, T, K, R)
    and recall as (A, M, T, K), e.g. views of memory shared with another process, filled in place (the
    arrays returned are then their transposed views, no copy); neither ``cache`` nor ``only`` with it."""
    if cache is None and only is None:
        precision, recall, scores = _accumulate_plain(
            table, rec_thrs, max_dets, weights=weights, npig=npig, into=out
        )
        assert scores is not None  # (scores are computed unless asked not to be)
        return precision, recall, scores
    if out is not None:
        raise ValueError("accumulate: out= goes with neither cache nor only")
    return _accumulate_resampled(table, rec_thrs, max_dets, weights, npig, cache, only)


def precision_recall(
    table: MatchTable, rec_thrs: np.ndarray, max_dets: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """``precision[T,R,K,A,M]`` and ``recall[T,K,A,M]`` of :func:`accumulate`, the same numbers, for callers
    that never read pycocotools' ``scores`` (LVIS): the sampled rows and their scores are not computed."""
    precision, recall, _ = _accumulate_plain(table, rec_thrs, max_dets, with_scores=False)
    return precision, recall


def _accumulate_resampled(
    table: MatchTable,
    rec_thrs: np.ndarray,
    max_dets: tuple[int, ...],
    weights: np.ndarray | None,
    npig: np.ndarray | None,
    cache: dict[str, Any] | None,
    only: set[tuple[int, int]] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Resamples (deteval.stats): the sort and slices kept in ``cache``, copies of re-weighted rows never laid
    out (:func:`deteval.core.weighted.weighted_levels`), only the ``only`` slices filled."""
    A, T, _ = table.tp.shape
    K = table.n_cats
    R = rec_thrs.shape[0]
    M = len(max_dets)
    prec, sc, rec = _buffers(A, M, T, K, R)
    npig_ka = table.npig if npig is None else npig
    valid = (npig_ka > 0).T  # (A, K)

    for m, a, om, sm, per_list, tp, ig in accumulation_slices(table, max_dets, valid, cache):
        if only is not None and (a, m) not in only:
            continue
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
        sc[a, m] = _sampled_scores(rows.reshape(T, K, R), sm)
        rec[a, m] = safe_div(n_hits, n_pos).reshape(T, K)
        _no_truth(prec, sc, rec, a, m, valid[a])
    return _pycocotools_layout(prec, sc, rec)


_Slice = tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def accumulation_slices(
    table: MatchTable,
    max_dets: tuple[int, ...],
    valid: np.ndarray,
    cache: dict[str, Any] | None,
    only: set[tuple[int, int]] | None = None,
) -> Iterator[_Slice]:
    """(m, a, rows in ranked order, their scores, items per list, tp, ig) of every (maxDet, area range) slice
    with a category to score; from ``cache`` when it holds them (every slice is then kept); without a
    cache, ``only`` the (area, maxDet) index pairs in ``only`` when given (the others' columns not laid out)."""
    if cache is not None and "slices" in cache:
        yield from (s for s in cache["slices"] if valid[s[1]].any())
        return
    kept: list[_Slice] = []
    T, K = table.tp.shape[1], table.n_cats
    # pycocotools' ranking of a category: images in ascending id order, then a stable sort by -score (the
    # keys packed into one integer where they fit: a third of np.lexsort's time on two systems' 5k tables)
    order = lex_order((table.rank, table.img, -table.score, table.cat))
    cat_s = table.cat[order]
    rank_s = table.rank[order]
    score_s = table.score[order]
    want = None if cache is not None else only  # a cache keeps every slice
    for m, max_det in enumerate(max_dets):
        if want is not None and not any((a, m) in want for a in range(table.tp.shape[0])):
            continue
        sel = np.flatnonzero(rank_s < max_det) if rank_s.size and rank_s.max() >= max_det else None
        om = order if sel is None else order[sel]
        sm = score_s if sel is None else score_s[sel]
        per_list = np.tile(np.bincount(cat_s if sel is None else cat_s[sel], minlength=K), T)
        for a in range(table.tp.shape[0]):
            if cache is None and (not valid[a].any() or (want is not None and (a, m) not in want)):
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


def _accumulate_plain(
    table: MatchTable,
    rec_thrs: np.ndarray,
    max_dets: tuple[int, ...],
    *,
    weights: np.ndarray | None = None,
    npig: np.ndarray | None = None,
    into: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    with_scores: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One evaluation: every slice, thresholds taken in groups of about ``LIST_ITEMS`` items (bounded
    temporaries); weighted rows are laid out as copies by the core. ``with_scores=False``: no scores (None)."""
    A, T, _ = table.tp.shape
    K = table.n_cats
    R = rec_thrs.shape[0]
    M = len(max_dets)
    npig_ka = table.npig if npig is None else npig
    valid = (npig_ka > 0).T  # (A, K)
    order = _ranking_order(table)
    slices = _max_det_slices(table, order, max_dets, weights)
    if into is not None:
        prec, sc, rec = _out_buffers((A, M, T, K, R), into, with_scores)
        group = A
    else:
        # pycocotools' layout, filled from contiguous (G, M, T, K, R) slabs of G area ranges: the slices and
        # the maxDet copies are written in the slabs, the layout's strided writes happen once per group (all
        # area ranges at once where the slabs are small: the layout's array is then swept once, not once per
        # area range)
        group = A if A * M * T * K * (2 * R + 1) * 8 <= SLAB_BYTES else 1
        final = _final_buffers(A, M, T, K, R, with_scores)
        slab = _slab_buffers(group, M, T, K, R, with_scores)
        prec, sc, rec = slab
    for a in range(A):
        a_w = a if into is not None else a % group
        if into is None and not valid[a].all():
            # only the categories without ground truth keep -1: each slice writes or copies every entry of
            # the others
            for b in slab:
                if b is not None:
                    b[a_w][:, :, ~valid[a]] = -1.0
        if not valid[a].any():
            if into is None and a_w == group - 1:
                _to_final(final, slab, a + 1 - group)
            continue
        # the flags of one area range in ranked order once, tp as bit 0 and ig as bit 1 of one byte (one
        # gather of the rows instead of two); each maxDet reads its rows of them
        flags_a = _flag_bytes(table.tp[a], table.ig[a])
        # the detections each category must recall to reach each level: one n_pos per category for every
        # maxDet and threshold of the area range, so made once here
        counts_a = min_counts_for_recall(rec_thrs, npig_ka[:, a])
        if order is not None:
            flags_a = np.take(flags_a, order, axis=1)
        for m, (sel, sm, cm, wm, need) in enumerate(slices):
            bufs = (prec, rec) if sc is None else (prec, rec, sc)
            if need is not None:
                for buf in bufs:
                    buf[a_w, m] = buf[a_w, m - 1]
            # only the categories with non-ignored ground truth (the others keep pycocotools' -1) that this
            # maxDet computes: their rows, one list per (threshold, category)
            comp = valid[a] if need is None else valid[a] & need
            if not comp.any():
                continue
            whole = bool(comp.all())
            if not whole:
                sub = np.flatnonzero(comp[cm])
                sel = sub if sel is None else sel[sub]
                sm, cm = sm[sub], cm[sub]
                wm = None if wm is None else wm[sub]
            n_c = int(np.count_nonzero(comp))
            per_cat = np.bincount(cm, minlength=K)[comp]
            n_m = sm.shape[0]
            # thresholds in groups of about LIST_ITEMS items and LIST_ITEMS sampled levels (many categories:
            # each list is sampled at every recall level)
            step = max(1, min(T, LIST_ITEMS // max(n_m, 1), LIST_ITEMS // max(n_c * rec_thrs.shape[0], 1)))
            for t0 in range(0, T, step):
                t1 = min(T, t0 + step)
                nt = t1 - t0
                n_pos = np.tile(npig_ka[comp, a], nt)  # lists in (threshold, category) order
                fl = flags_a[t0:t1] if sel is None else np.take(flags_a[t0:t1], sel, axis=1)
                tp = (fl & 1).view(bool).reshape(-1)
                ig = (fl >> 1).view(bool).reshape(-1)
                w = None if wm is None else np.tile(wm, nt)
                lists = presorted_lists(np.tile(per_cat, nt), tp, n_pos, ig, weights=w)
                # items are nt copies of the same n_m detections
                q, rows = lists.precision_and_items(
                    rec_thrs, COCO_EPS, items=sc is not None, counts=np.tile(counts_a[comp], (nt, 1))
                )
                vals = [q.reshape(nt, n_c, R), safe_div(lists.n_hits, n_pos).reshape(nt, n_c)]
                if rows is not None:
                    if lists.order is not None:  # weighted: an expanded item back to the row it repeats
                        rows = np.where(rows >= 0, lists.order[np.maximum(rows, 0)], rows)
                    vals.append(_sampled_scores(rows.reshape(nt, n_c, R), sm))
                for buf, val in zip(bufs, vals, strict=True):
                    if whole:
                        buf[a_w, m, t0:t1] = val
                    else:
                        view = buf[a_w, m, t0:t1]  # (a view: the categories computed are written in place)
                        view[:, comp] = val
                del lists, tp, ig, vals
        del flags_a
        if into is None and a_w == group - 1:
            _to_final(final, slab, a + 1 - group)
    if into is not None and sc is not None:
        return pycocotools_views(prec, sc, rec)
    return final[0], final[2], final[1]


def _final_buffers(
    A: int, M: int, T: int, K: int, R: int, with_scores: bool
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """precision and scores as (T, R, K, A, M), recall as (T, K, A, M) (pycocotools' layout), not
    initialised: :func:`_to_final` writes every area range."""
    prec = np.empty((T, R, K, A, M))
    return prec, (np.empty((T, R, K, A, M)) if with_scores else None), np.empty((T, K, A, M))


def _slab_buffers(
    G: int, M: int, T: int, K: int, R: int, with_scores: bool
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """precision and scores as (G, M, T, K, R), recall as (G, M, T, K): G area ranges, contiguous."""
    shape = (G, M, T, K, R)
    return np.empty(shape), (np.empty(shape) if with_scores else None), np.empty(shape[:4])


def _to_final(
    final: tuple[np.ndarray, np.ndarray | None, np.ndarray],
    slab: tuple[np.ndarray, np.ndarray | None, np.ndarray],
    a: int,
) -> None:
    """The (G, M, T, K, R) and (G, M, T, K) slabs of the area ranges ``a``, ..., ``a + G - 1`` into
    pycocotools' layout."""
    g = slice(a, a + slab[0].shape[0])
    final[0][:, :, :, g, :] = slab[0].transpose(2, 4, 3, 0, 1)
    if final[1] is not None and slab[1] is not None:
        final[1][:, :, :, g, :] = slab[1].transpose(2, 4, 3, 0, 1)
    final[2][:, :, g, :] = slab[2].transpose(2, 3, 0, 1)


def _out_buffers(
    shape: tuple[int, int, int, int, int],
    into: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    with_scores: bool = True,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """precision, scores (A, M, T, K, R; None without scores) and recall (A, M, T, K), all -1: new, or
    ``into`` (accumulate's ``out=``) checked and reset."""
    if into is None:
        return _buffers(*shape, with_scores=with_scores)
    prec, sc, rec = into
    if prec.shape != shape or sc.shape != prec.shape or rec.shape != shape[:4]:
        raise ValueError("accumulate: out= arrays of the wrong shape")
    for buf in into:
        buf[...] = -1.0
    return prec, sc, rec


def _ranking_order(table: MatchTable) -> np.ndarray | None:
    """The rows in pycocotools' ranking of a category (images in ascending id order, then a stable sort by
    -score), or None when they already are."""
    if table.ranked:  # (match_groups' ranked: the rows are in that order, the flags taken as they are)
        return None
    if _in_group_order(table.cat, table.img, table.rank):
        # as match_groups leaves it: a stable sort by (category, -score) is enough
        return lex_order((-table.score, table.cat))
    # tables of consecutive image shards concatenated (each in group order): a stable sort by category alone
    # (radix) puts them in group order, checked, and the sort by (category, -score) follows
    by_cat = stable_order(table.cat)
    cat = table.cat[by_cat]
    if _in_group_order(cat, table.img[by_cat], table.rank[by_cat]):
        return by_cat[lex_order((-table.score[by_cat], cat))]
    return lex_order((table.rank, table.img, -table.score, table.cat))


_MaxDetRows = tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]


def _max_det_slices(
    table: MatchTable, order: np.ndarray | None, max_dets: tuple[int, ...], weights: np.ndarray | None
) -> list[_MaxDetRows]:
    """Per maxDet, in ranked rows: the rows it keeps (None: all), their scores, their categories,
    their weights, and the categories it computes (None: all; the others have every (image, category)
    group shorter than this and the previous maxDet, so their lists, and numbers, are the previous
    maxDet's: copied)."""
    K = table.n_cats
    cat_s = table.cat if order is None else table.cat[order]
    rank_s = table.rank if order is None else table.rank[order]
    score_s = table.score if order is None else table.score[order]
    top = _top_rank(cat_s, rank_s, K)
    slices: list[_MaxDetRows] = []
    for m, max_det in enumerate(max_dets):
        keep = rank_s < max_det if rank_s.size and rank_s.max() >= max_det else None
        need = None if m == 0 else top >= min(max_det, max_dets[m - 1])
        if need is not None:
            part = need[cat_s] if keep is None else keep & need[cat_s]
            # only when it leaves out most rows (else the copies of the selection cost more than they save)
            if 2 * np.count_nonzero(part) < (rank_s.size if keep is None else np.count_nonzero(keep)):
                keep = part
            else:
                need = None
        sel = None if keep is None else np.flatnonzero(keep)
        sm = score_s if sel is None else score_s[sel]
        wm = None
        if weights is not None:
            w_s = weights if order is None else weights[order]
            wm = w_s if sel is None else w_s[sel]
        slices.append((sel, sm, cat_s if sel is None else cat_s[sel], wm, need))
    return slices


def _top_rank(cat_s: np.ndarray, rank_s: np.ndarray, n_cats: int) -> np.ndarray:
    """(K,) the largest rank of every category's rows (``cat_s`` sorted), -1 for a category without rows."""
    top = np.full(n_cats, -1, dtype=np.int64)
    if cat_s.size:
        starts = np.flatnonzero(np.r_[True, cat_s[1:] != cat_s[:-1]])
        top[cat_s[starts]] = np.maximum.reduceat(rank_s, starts)
    return top


def _flag_bytes(tp: np.ndarray, ig: np.ndarray) -> np.ndarray:
    """One byte per flag pair: ``tp`` (bool) as bit 0, ``ig`` (bool) as bit 1."""
    out = np.asarray(ig, dtype=bool).view(np.uint8) << 1
    out |= np.asarray(tp, dtype=bool).view(np.uint8)
    return out


def _in_group_order(cat: np.ndarray, img: np.ndarray, rank: np.ndarray) -> bool:
    """Whether the rows (``cat``, ``img``, ``rank``) are sorted by (category, image, rank), no two alike."""
    if cat.shape[0] < 2:
        return True
    dc, di, dr = np.diff(cat), np.diff(img), np.diff(rank)
    return bool(((dc > 0) | ((dc == 0) & ((di > 0) | ((di == 0) & (dr > 0))))).all())


def _buffers(
    A: int, M: int, T: int, K: int, R: int, *, with_scores: bool = True
) -> tuple[np.ndarray, Any, np.ndarray]:
    """precision and scores as (A, M, T, K, R), recall as (A, M, T, K), all −1, filled slice by slice: views
    of arrays laid out as pycocotools' (:func:`pycocotools_views` reversed), so that
    :func:`_pycocotools_layout` hands them over without a transposing copy (half the peak memory).
    ``with_scores=False``: scores None."""
    precision = np.full((T, R, K, A, M), -1.0)
    scores = np.full((T, R, K, A, M), -1.0).transpose(3, 4, 0, 2, 1) if with_scores else None
    recall = np.full((T, K, A, M), -1.0)
    return precision.transpose(3, 4, 0, 2, 1), scores, recall.transpose(2, 3, 0, 1)


def pycocotools_views(
    prec: np.ndarray, sc: np.ndarray, rec: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``precision[T,R,K,A,M]``, ``recall[T,K,A,M]``, ``scores[T,R,K,A,M]`` as views (no copy) of buffers in
    the (A, M, T, K, R) layout accumulation fills (``out=`` of :func:`accumulate`)."""
    return prec.transpose(2, 4, 3, 0, 1), rec.transpose(2, 3, 0, 1), sc.transpose(2, 4, 3, 0, 1)


def _pycocotools_layout(prec: np.ndarray, sc: Any, rec: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
    """``precision[T,R,K,A,M]``, ``recall[T,K,A,M]``, ``scores[T,R,K,A,M]`` (None for None) from the filled
    buffers (no copy for :func:`_buffers`' own)."""
    precision = np.ascontiguousarray(prec.transpose(2, 4, 3, 0, 1))
    scores = None if sc is None else np.ascontiguousarray(sc.transpose(2, 4, 3, 0, 1))
    recall = np.ascontiguousarray(rec.transpose(2, 3, 0, 1))
    return precision, recall, scores


def _sampled_scores(rows: np.ndarray, sm: np.ndarray) -> np.ndarray:
    """The score of the item sampled at each level, ``rows`` as (thresholds, lists, levels): items are copies
    of the slice's detections, one run of ``len(sm)`` per threshold, so threshold t's items start at
    t·len(sm); 0 where no item reaches the level (``rows < 0``)."""
    n_m = sm.shape[0]
    if not n_m:
        return np.zeros(rows.shape)
    # (a subtraction broadcast per threshold rather than a modulo per level: a third cheaper)
    det = rows - (np.arange(rows.shape[0]) * n_m)[:, None, None]
    return np.where(rows >= 0, sm.take(det, mode="clip"), 0.0)


def _no_truth(prec: np.ndarray, sc: np.ndarray, rec: np.ndarray, a: int, m: int, valid_a: np.ndarray) -> None:
    """Categories without non-ignored ground truth keep pycocotools' −1."""
    prec[a, m][:, ~valid_a] = -1.0
    sc[a, m][:, ~valid_a] = -1.0
    rec[a, m][:, ~valid_a] = -1.0
