"""COCO greedy matching for all (image, category) groups, IoU thresholds and area ranges at once.

pycocotools' ``evaluateImg`` loops over groups × area ranges × thresholds × detections × ground truths in
Python. The same decisions are made here with array operations:

1. Detections are sorted once, stably, by (group, −score, input position); ``rank`` is the position inside the
   group, and only ranks < ``maxDets[-1]`` are kept (pycocotools never looks at the others).
2. IoU is computed for the flat list of same-group (detection, ground truth) pairs, in chunks of at most
   ``pair_chunk`` pairs, one group split over several chunks when it is larger (memory stays bounded
   however crowded one image is: 50k × 50k pairs of one group would need 19 GB at once); only pairs with IoU ≥ the lowest effective
   threshold can ever match and are kept as candidates.
3. The greedy matching steps over detection rank (at most maxDets[-1] steps). At rank r every group's r-th
   detection picks, for every area range and threshold, the candidate maximising the key
   (regular before ignored, IoU, later ground truth): exactly pycocotools' rule "start from
   min(t, 1 − 1e−10); regular ground truth first, stop at the first ignored one once a regular match exists;
   take a ground truth whose IoU is ≥ the best so far (so the later one wins a tie)". Taken non-crowd ground
   truths become unavailable; crowds stay available. A detection whose candidates are all its own (or crowds)
   decides alone, so those are matched before the steps: with one candidate by a direct rule (nearly every
   detection of a set with many categories and about one object per category and image), with several in
   one step of their own (:func:`_decide_alone`). So are stars, a ground truth that is the only candidate of
   each of its detections (duplicates of one object): at each threshold the first of them in rank order
   whose IoU reaches it takes it.

The outcome is a :class:`MatchTable`: per kept detection its category, image, score and rank, and per area
range × threshold two flags (true positive, ignored), plus per category × area range the number of
non-ignored ground truths. Tables of disjoint image shards can be concatenated with :func:`merge_tables`
before accumulation, or merged into the single-process layout with :func:`merge_coco_tables`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from deteval.core.sorting import dense_ranks, lex_order
from deteval.errors import ValidationError

__all__ = ["MatchTable", "match_groups", "merge_coco_tables", "merge_tables"]

#: Upper bound on same-group pairs whose IoU is computed at once (about 100 MB of temporaries).
PAIR_CHUNK = 1_000_000

#: Upper bound on candidate pairs in one greedy step (about 1 MB of temporaries: A × T flags per pair; smaller
#: steps cost no time at COCO scale, as each stays in cache).
STEP_PAIRS = 4096


def _steps(
    bounds: np.ndarray, seg_start: np.ndarray, seg_id: np.ndarray, n_seg: int, n_pairs: int
) -> Iterator[tuple[int, int]]:
    """The greedy steps as pair ranges: one per detection rank (``bounds``; the first holds the detections
    that decide alone), a large one cut between
    detections (``seg_start``) into pieces of about ``STEP_PAIRS``. The detections of one rank belong to
    different (image, category) groups, which share no ground truth, so the pieces are independent."""
    for r in range(bounds.shape[0] - 1):
        s, end = int(bounds[r]), int(bounds[r + 1])
        while s < end:
            e = end
            if e - s > STEP_PAIRS:
                cut = int(seg_start[int(np.searchsorted(seg_start, s + STEP_PAIRS, side="right")) - 1])
                k = int(seg_id[s]) + 1
                nxt = int(seg_start[k]) if k < n_seg else n_pairs
                e = min(end, max(cut, nxt))
            yield s, e
            s = e


@dataclass
class MatchTable:
    """Compact matching outcome (see the module docstring). Arrays of length N over kept detections."""

    cat: np.ndarray  # category index
    img: np.ndarray  # image index (ascending image id)
    score: np.ndarray
    rank: np.ndarray  # rank inside its (image, category) group
    tp: np.ndarray  # (A, T, N) bool: matched to a regular ground truth, not ignored
    ig: np.ndarray  # (A, T, N) bool: ignored (matched to an ignored gt, or unmatched outside the area range)
    npig: np.ndarray  # (K, A) int64: non-ignored ground truths per category and area range
    n_cats: int
    # the ground truths npig counts, for re-weighting images (deteval.stats): image, category and (A, G)
    # "counted in npig" flags
    gt_img: np.ndarray | None = None
    gt_cat: np.ndarray | None = None
    gt_counted: np.ndarray | None = None
    # rows in the order accumulation ranks them, (category, -score, image, rank), instead of (category, image,
    # rank): :func:`match_groups` ``ranked``; accumulation then takes the flags as they are, not permuted
    ranked: bool = False

    def npig_weighted(self, image_weights: np.ndarray) -> np.ndarray:
        """(K, A) npig with image i's ground truths counted ``image_weights[i]`` times (integers)."""
        if self.gt_img is None or self.gt_cat is None or self.gt_counted is None:
            raise ValueError("this MatchTable was built without its ground-truth columns")
        w = np.asarray(image_weights, dtype=np.int64)[self.gt_img]
        out = np.zeros((self.n_cats, self.gt_counted.shape[0]), dtype=np.int64)
        for a in range(self.gt_counted.shape[0]):
            out[:, a] = np.bincount(self.gt_cat, weights=w * self.gt_counted[a], minlength=self.n_cats)[
                : self.n_cats
            ]
        return out

    def __len__(self) -> int:
        return int(self.score.shape[0])


def merge_tables(tables: Sequence[MatchTable]) -> MatchTable:
    """Concatenate tables computed on disjoint sets of images (same parameters)."""
    if not tables:
        raise ValueError("no tables to merge")
    gt = _merged_gt(tables)
    return MatchTable(
        cat=np.concatenate([t.cat for t in tables]),
        img=np.concatenate([t.img for t in tables]),
        score=np.concatenate([t.score for t in tables]),
        rank=np.concatenate([t.rank for t in tables]),
        tp=np.concatenate([t.tp for t in tables], axis=2),
        ig=np.concatenate([t.ig for t in tables], axis=2),
        npig=np.sum([t.npig for t in tables], axis=0),
        n_cats=tables[0].n_cats,
        gt_img=gt.get("gt_img"),
        gt_cat=gt.get("gt_cat"),
        gt_counted=gt.get("gt_counted"),
    )


def merge_coco_tables(tables: Sequence[MatchTable]) -> MatchTable:
    """Merge COCO match tables of disjoint image shards (same parameters and categories).

    pycocotools accumulates a category's detections in ascending image-id order, then sorts stably by
    score, so ties between images are broken by image order. The rows are therefore reordered by
    (category, image, rank) with one stable sort: the layout of a single process's table, whatever order the
    shards arrive in, so accumulation gives the same bits. ``npig`` (positives per category × area) adds up.
    """
    if not tables:
        raise ValueError("no tables to merge")
    if len({t.n_cats for t in tables}) != 1 or len({t.tp.shape[:2] for t in tables}) != 1:
        raise ValidationError("match tables of different categories or parameters cannot be merged")
    merged = merge_tables(tables)
    order = np.lexsort((merged.rank, merged.img, merged.cat))
    if (order[1:] < order[:-1]).any():
        merged = MatchTable(
            cat=merged.cat[order],
            img=merged.img[order],
            score=merged.score[order],
            rank=merged.rank[order],
            tp=merged.tp[:, :, order],
            ig=merged.ig[:, :, order],
            npig=merged.npig,
            n_cats=merged.n_cats,
        )
    return merged


def _merged_gt(tables: Sequence[MatchTable]) -> dict[str, np.ndarray | None]:
    if any(t.gt_img is None or t.gt_cat is None or t.gt_counted is None for t in tables):
        return {}
    return {
        "gt_img": np.concatenate([t.gt_img for t in tables]),
        "gt_cat": np.concatenate([t.gt_cat for t in tables]),
        "gt_counted": np.concatenate([t.gt_counted for t in tables], axis=1),
    }


def _candidate_pairs(
    det: np.ndarray,
    dgrp: np.ndarray,
    gsort: np.ndarray,
    ggrp: np.ndarray,
    iou_fn: IouFn,
    thr_min: float,
    pair_chunk: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same-group (kept detection, sorted ground truth) pairs whose IoU reaches ``thr_min``, and their
    IoU: computed by blocks of nd × ng, at most about ``pair_chunk`` pairs at once (a crowded group split
    into sub-blocks). ``det``/``dgrp``: the kept detections (caller indices, groups) in (group, rank)
    order; ``gsort``/``ggrp``: the ground truth (caller indices, groups) in (group, input) order."""
    d_starts = _group_starts(dgrp)
    d_cnt = np.diff(np.r_[d_starts, dgrp.shape[0]])
    g_starts = _group_starts(ggrp)
    g_cnt = np.diff(np.r_[g_starts, ggrp.shape[0]])
    _, i_d, i_g = np.intersect1d(dgrp[d_starts], ggrp[g_starts], assume_unique=True, return_indices=True)
    b_ds, b_nd, b_gs, b_ng = _split_blocks(d_starts[i_d], d_cnt[i_d], g_starts[i_g], g_cnt[i_g], pair_chunk)
    b_np = b_nd * b_ng
    none = np.zeros(0, dtype=np.int64)  # (the columns' types where no pair is a candidate)
    cand_d, cand_g, cand_iou = [none], [none], [np.zeros(0)]
    b = 0
    nb = b_ds.shape[0]
    cum = np.cumsum(b_np)
    while b < nb:
        base = cum[b - 1] if b else 0
        e = int(np.searchsorted(cum, base + pair_chunk, side="right"))
        e = max(e, b + 1)
        nd, ng, ds, gs, npairs = b_nd[b:e], b_ng[b:e], b_ds[b:e], b_gs[b:e], b_np[b:e]
        bstart = np.r_[0, np.cumsum(npairs)[:-1]]
        if e - b == 1:  # one (sub-)block, e.g. of a crowded group: no per-pair division
            pd = ds[0] + np.repeat(np.arange(nd[0]), ng[0])
            pg = gs[0] + np.tile(np.arange(ng[0]), nd[0])
        else:
            blk = np.repeat(np.arange(e - b), npairs)
            local = np.arange(int(npairs.sum())) - bstart[blk]
            ngb = ng[blk]
            pd = ds[blk] + local // ngb  # kept-detection index
            pg = gs[blk] + local % ngb  # sorted-gt index
        iou = iou_fn(det[pd], gsort[pg], bstart, nd, ng)
        ok = iou >= thr_min
        cand_d.append(pd[ok])
        cand_g.append(pg[ok])
        cand_iou.append(iou[ok])
        b = e
    return np.concatenate(cand_d), np.concatenate(cand_g), np.concatenate(cand_iou)


def _greedy_steps(
    pairs: list[np.ndarray],
    gig: np.ndarray,
    gcrowd: np.ndarray,
    thr: np.ndarray,
    tp: np.ndarray,
    ig: np.ndarray,
    row: np.ndarray | None,
) -> None:
    """The greedy matching of the candidate pairs left after :func:`_decide_alone` (sorted by ground truth,
    IoU, detection, rank), stepping over detection rank (module docstring, step 3): at each rank every
    group's detection takes, per area range and threshold, the available candidate of the highest key
    (regular before ignored, IoU, later ground truth); its flags are written into ``tp`` and ``ig`` (at
    ``row`` of it when given). ``pairs``: (detection, ground truth, IoU, rank) of each pair, emptied here."""
    pd, pg, piou, prank = pairs
    pairs.clear()
    A, T, N = tp.shape
    G = gig.shape[1]
    P = pd.shape[0]
    seg_start = _group_starts(pd)
    seg_id = np.cumsum(np.r_[True, pd[1:] != pd[:-1]], dtype=np.int32 if P < 2**31 else np.int64) - 1
    ord_in = np.arange(P) - seg_start[seg_id]
    big = int(ord_in.max()) + 1
    kdt = np.int32 if 2 * big < 2**31 else np.int64
    key = (ord_in[None, :] + (~gig[:, pg]) * big).astype(kdt)  # (A, P): regular first, then IoU, later gt
    elig_thr = piou[None, :] >= thr[:, None]  # (T, P)
    crowd_p = gcrowd[pg]
    taken = np.zeros((A, T, G), dtype=bool)
    bounds = np.searchsorted(prank, np.arange(-1, int(prank.max()) + 2))
    del ord_in, piou, prank
    n_seg = seg_start.shape[0]
    for s, e in _steps(bounds, seg_start, seg_id, n_seg, P):
        gi_s = pg[s:e]
        avail = ~taken[:, :, gi_s]
        avail |= crowd_p[s:e]
        avail &= elig_thr[None, :, s:e]
        vals = np.where(avail, key[:, None, s:e], -1)
        first_seg = int(seg_id[s])
        segs = seg_start[first_seg : int(seg_id[e - 1]) + 1]
        best = np.maximum.reduceat(vals, segs - s, axis=2)  # (A, T, n_dets at this rank)
        a_i, t_i, s_i = np.nonzero(best >= 0)
        del vals, avail
        if a_i.size == 0:
            continue
        pair = segs[s_i] + best[a_i, t_i, s_i] % big
        gsel = pg[pair]
        at_t = a_i * T + t_i
        _flat(taken)[at_t * G + gsel] = True
        d_i = pd[pair] if row is None else row[pd[pair]]
        det_ig = gig[a_i, gsel]  # a match to an ignored ground truth makes the detection ignored
        at = at_t * N + d_i  # (flat indices: the scatter takes half the time)
        _flat(ig)[at] = det_ig
        _flat(tp)[at] = ~det_ig


def _group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    n = sorted_keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])


def _split_blocks(
    ds: np.ndarray, nd: np.ndarray, gs: np.ndarray, ng: np.ndarray, pair_chunk: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cut every group's nd × ng block of pairs into sub-blocks of at most ``pair_chunk`` pairs: runs of
    whole detection rows, and runs of ground-truth columns where one row alone is too long. A sub-block is
    still detection-major over one contiguous run of detections and one of ground truths, so the IoU
    callbacks take it as they take a whole group (and the matching is the same: it sorts the candidates)."""
    g_piece = np.minimum(ng, pair_chunk)  # ground truths per sub-block
    n_gp = -(-ng // g_piece)
    d_piece = np.maximum(1, pair_chunk // g_piece)  # detections per sub-block
    n_dp = -(-nd // d_piece)
    per = n_gp * n_dp
    if (per == 1).all():
        return ds, nd, gs, ng
    blk = np.repeat(np.arange(ds.shape[0]), per)
    k = np.arange(blk.shape[0]) - np.repeat(np.cumsum(per) - per, per)
    di, gj = k // n_gp[blk], k % n_gp[blk]  # (detection piece, ground-truth piece)
    d0 = di * d_piece[blk]
    g0 = gj * g_piece[blk]
    return (
        ds[blk] + d0,
        np.minimum(d_piece[blk], nd[blk] - d0),
        gs[blk] + g0,
        np.minimum(g_piece[blk], ng[blk] - g0),
    )


def _decide_alone(
    pd: np.ndarray,
    pg: np.ndarray,
    piou: np.ndarray,
    prank: np.ndarray,
    n_det: int,
    gig: np.ndarray,
    gcrowd: np.ndarray,
    thr: np.ndarray,
    tp: np.ndarray,
    ig: np.ndarray,
    row: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Decide the detections that decide alone, and return the candidate pairs left to the greedy steps.

    A detection whose candidates are all its own (no other detection's candidate, or a crowd, which is never
    taken) decides alone: nothing another detection does changes what it may take, and what it takes no
    other detection could have taken. With one candidate (nearly every detection of a large set with many
    categories) the rule comes down to: matched at the thresholds its IoU reaches, a true positive unless the
    ground truth is ignored in the area range, which makes the detection ignored; those are written into
    ``tp`` and ``ig`` here. The others that decide alone are returned first, in one step (rank -1), moved
    stably so that each detection's candidates stay together in their order; the rest keep their ranks.
    ``row``: the table row of each detection (:func:`match_groups` ``ranked``), where its flags are written."""
    shared = (np.bincount(pg, minlength=gig.shape[1])[pg] > 1) & ~gcrowd[pg]
    contested = np.zeros(n_det, dtype=bool)
    contested[pd[shared]] = True
    alone = ~contested[pd]
    one = np.bincount(pd, minlength=n_det)[pd] == 1  # the detection's only candidate
    # a star: a ground truth (not a crowd) whose detections all have it as their only candidate
    several = np.zeros(gig.shape[1], dtype=bool)
    several[pg[~one]] = True
    star = shared & one & ~several[pg]
    del shared, contested, several
    single = alone & one
    q = np.flatnonzero(single)
    for c in range(0, q.shape[0], STEP_PAIRS):
        qc = q[c : c + STEP_PAIRS]
        _write_matches(piou[qc][None, :] >= thr[:, None], pd[qc], pg[qc], gig, tp, ig, row)
    if star.any():
        _decide_stars(np.flatnonzero(star), pd, pg, piou, prank, gig, thr, tp, ig, row)
    rest = ~(single | star)
    o = np.flatnonzero(rest)[np.argsort(~alone[rest], kind="stable")]
    return pd[o], pg[o], piou[o], np.where(alone[o], -1, prank[o])


def _write_matches(
    hit: np.ndarray,
    d: np.ndarray,
    g: np.ndarray,
    gig: np.ndarray,
    tp: np.ndarray,
    ig: np.ndarray,
    row: np.ndarray | None = None,
) -> None:
    """Detections ``d`` (one pair each; their flags at ``row[d]`` when given) matched to ``g`` at the
    thresholds where ``hit`` (T, n): a true positive unless the ground truth is ignored in the area range,
    which makes the detection ignored."""
    t_i, j_i = np.nonzero(hit)  # only the matches are written (tp is False, ig as set, elsewhere)
    d_j, g_j = (d[j_i] if row is None else row[d[j_i]]), g[j_i]
    at = t_i * tp.shape[2] + d_j  # (one flat index instead of two: the scatter takes half the time)
    for a in range(gig.shape[0]):
        g_ig = gig[a, g_j]
        _flat(tp[a])[at] = ~g_ig
        _flat(ig[a])[at] = g_ig


def _flat(x: np.ndarray) -> np.ndarray:
    """``x`` (C-contiguous) as one row, a view: what is written into it is written into ``x``."""
    if not x.flags.c_contiguous:
        raise ValueError("the match flags must be C-contiguous")
    return x.reshape(-1)


def _decide_stars(
    q: np.ndarray,
    pd: np.ndarray,
    pg: np.ndarray,
    piou: np.ndarray,
    prank: np.ndarray,
    gig: np.ndarray,
    thr: np.ndarray,
    tp: np.ndarray,
    ig: np.ndarray,
    row: np.ndarray | None = None,
) -> None:
    """Pairs ``q`` of stars (a ground truth, not a crowd, that is the only candidate of each of its
    detections): at each threshold the first of its detections in rank order whose IoU reaches it takes it,
    and the others stay unmatched (the greedy steps' outcome: nothing else competes for it)."""
    o = q[np.lexsort((prank[q], pg[q]))]  # by ground truth, then rank
    seg = _group_starts(pg[o])
    counts = np.diff(np.r_[seg, o.shape[0]])
    hit = np.empty((thr.shape[0], o.shape[0]), dtype=bool)
    for t in range(thr.shape[0]):
        elig = piou[o] >= thr[t]
        c = np.cumsum(elig, dtype=np.int64)
        before = np.repeat(c[seg] - elig[seg], counts)  # eligible detections before the star's first
        hit[t] = elig & (c - before == 1)
    for c0 in range(0, o.shape[0], STEP_PAIRS):  # (bounded temporaries)
        oc = o[c0 : c0 + STEP_PAIRS]
        _write_matches(hit[:, c0 : c0 + STEP_PAIRS], pd[oc], pg[oc], gig, tp, ig, row)


# IoU callback: (det indices, gt indices, block_start, block_nd, block_ng) -> IoU per pair. Indices point
# into the caller's detection and ground-truth arrays; pairs come in blocks of nd × ng (detection-major)
# that each hold one group.
IouFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def match_groups(
    *,
    n_imgs: int,
    n_cats: int,
    iou_thrs: np.ndarray,
    area_rng: Sequence[tuple[float, float]],
    max_det: int,
    d_img: np.ndarray,
    d_cat: np.ndarray,
    d_score: np.ndarray,
    d_order: np.ndarray,
    d_area: np.ndarray,
    g_img: np.ndarray,
    g_cat: np.ndarray,
    g_order: np.ndarray,
    g_area: np.ndarray,
    g_crowd: np.ndarray,
    g_ignore: np.ndarray,
    iou_fn: IouFn,
    pair_chunk: int | None = None,
    ranked: bool = False,
) -> MatchTable:
    """Match detections to ground truth in every (image, category) group (see the module docstring).

    ``ranked``: the table's rows in the order accumulation ranks them (a stable sort of the group order by
    (category, -score): :attr:`MatchTable.ranked`), the flags written there as the matches are found, so
    that accumulation need not permute them (4 area ranges × 2 flags × 10 thresholds of every row).

    ``d_order`` / ``g_order`` break score ties and order ground truth inside a group (input position).
    A ground truth is identified by its position, never by its annotation id (pycocotools stores a match as
    the id, so that the annotation with id 0 can never be matched: a bug deteval does not reproduce).
    """
    pair_chunk = PAIR_CHUNK if pair_chunk is None else int(pair_chunk)
    if pair_chunk < 1:
        raise ValueError(f"pair_chunk must be at least 1, got {pair_chunk}")
    thr = np.minimum(np.asarray(iou_thrs, dtype=np.float64), 1 - 1e-10)
    T = thr.shape[0]
    lo = np.array([a for a, _ in area_rng], dtype=np.float64)
    hi = np.array([b for _, b in area_rng], dtype=np.float64)
    A = lo.shape[0]

    # detections: one stable sort by (group, -score, input order); keep the first max_det of each group
    d_grp = d_cat.astype(np.int64) * n_imgs + d_img
    # (ranked: the scores ranked once for both sorts by them, here and below)
    by_score = dense_ranks(-d_score) if ranked and n_imgs else None
    if by_score is None:
        by_score = -d_score
    order = lex_order((d_order, by_score, d_grp), unique=True)
    sg = d_grp[order]
    starts = _group_starts(sg)
    counts = np.diff(np.r_[starts, sg.shape[0]])
    rank_all = np.arange(sg.shape[0]) - np.repeat(starts, counts)
    keep = rank_all < max_det
    det = order[keep]  # caller indices of kept detections, in (group, rank) order
    rank = rank_all[keep]
    dgrp = sg[keep]
    N = det.shape[0]
    # (temporaries are dropped as soon as they are used: this function sets the evaluation's peak memory)
    del order, sg, starts, counts, rank_all, keep

    # the row of each kept detection in the table (ranked: a stable sort by (category, -score) of the group
    # order, which is (category, image, rank)); the flags are written there
    perm = lex_order((by_score[det], dgrp // n_imgs)) if ranked and N else None
    row = None
    if perm is not None:
        row = np.empty(N, dtype=np.int64)
        row[perm] = np.arange(N)

    # ground truth: stable by (group, input order)
    g_grp = g_cat.astype(np.int64) * n_imgs + g_img
    gsort = lex_order((g_order, g_grp), unique=True)
    ggrp = g_grp[gsort]
    garea = g_area[gsort]
    gcrowd = g_crowd[gsort]
    gig = g_ignore[gsort][None, :] | (garea[None, :] < lo[:, None]) | (garea[None, :] > hi[:, None])  # (A, G)
    npig = np.zeros((n_cats, A), dtype=np.int64)
    gcat = g_cat[gsort]
    for a in range(A):
        npig[:, a] = np.bincount(gcat[~gig[a]], minlength=n_cats)[:n_cats]

    # same-group pairs, by blocks of nd × ng; only those that can match at some threshold are kept
    pd, pg, piou = _candidate_pairs(det, dgrp, gsort, ggrp, iou_fn, float(thr.min()), pair_chunk)

    # greedy matching, stepping over detection rank
    o = lex_order((pg, piou, pd, rank[pd]), unique=True)  # (a detection meets a ground truth once)
    pd, pg, piou = pd[o], pg[o], piou[o]
    del o
    prank = rank[pd]
    P = pd.shape[0]
    # per-detection flags, written as the matches are found (a detection is matched at most once per area
    # range and threshold): no list of matches is kept
    det_rows = det if perm is None else det[perm]  # (the table's rows: kept for its columns below)
    d_area_k = d_area[det_rows]
    d_out = (d_area_k[None, :] < lo[:, None]) | (d_area_k[None, :] > hi[:, None])  # (A, N)
    ig = np.repeat(d_out[:, None, :], T, axis=1)
    tp = np.zeros((A, T, N), dtype=bool)
    del d_area_k, d_out
    if P:
        pd, pg, piou, prank = _decide_alone(pd, pg, piou, prank, N, gig, gcrowd, thr, tp, ig, row)
        P = pd.shape[0]
    if P:
        # (handed over in a list that the steps empty: the IoUs and ranks are freed before the steps' own
        # temporaries are made, as this function's peak memory is the evaluation's)
        pairs = [pd, pg, piou, prank]
        del pd, pg, piou, prank
        _greedy_steps(pairs, gig, gcrowd, thr, tp, ig, row)
    if perm is not None:
        det, rank = det_rows, rank[perm]
    return MatchTable(
        cat=d_cat[det].astype(np.int64, copy=False),
        img=d_img[det].astype(np.int64, copy=False),
        score=d_score[det],
        rank=rank,
        tp=tp,
        ig=ig,
        npig=npig,
        n_cats=n_cats,
        gt_img=g_img[gsort].astype(np.int64),
        gt_cat=gcat.astype(np.int64),
        gt_counted=~gig,
        ranked=perm is not None or N < 2,
    )
