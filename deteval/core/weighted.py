"""Interpolated precision at recall levels of weighted ranked lists, without laying out the copies.

:func:`~deteval.core.lists.presorted_lists` with ``weights`` repeats every item w times, so its measures are
those of the repeated list bit for bit, at a memory and time cost of Σw. For the level-sampled measures
(``coco101``, ``voc07``) the repeated list is not needed: in a run of w copies of a relevant item the
precision tp / (rank + eps) rises at every copy (tp and rank grow by one together, tp <= rank, and rounding is
monotone), so the envelope over the run and every later hit is the maximum of the run *ends*; a run of
non-relevant or ignored copies holds no hit. Hence, with T(k) and N(k) the relevant and ranked weights up to
and including item k (exact integers):

* the c-th hit lies in the first relevant item k with T(k) >= c, and env(c-th hit) = max over the relevant
  items k' >= k of the list (weight > 0) of T(k') / (N(k') + eps): the same two integers, the same division
  as the repeated list's precision at that copy, so the same double;
* the row pycocotools samples for level x (the c-th hit, or the list's first row when c = 0) is item k (the
  first item of weight > 0).

:func:`weighted_levels` returns what ``presorted_lists(..., weights=w)`` gives through
``interpolated_precision``, ``sampled_items`` (mapped back through ``order``) and ``n_hits``, in O(items)
instead of O(Σw); tests/test_stats.py checks the equality on random lists.
"""

from __future__ import annotations

import numpy as np

from deteval.core.lists import min_counts_for_recall, segment_suffix_max

__all__ = ["weighted_levels"]


def weighted_levels(
    count: np.ndarray,
    relevant: np.ndarray,
    ignored: np.ndarray | None,
    n_pos: np.ndarray,
    weights: np.ndarray,
    levels: np.ndarray,
    eps: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(L, R) interpolated precision max{P(r) : R(r) >= x}, (L, R) input index of the sampled row (-1 if
    none) and (L,) hits of lists given in (list, rank) order with integer ``weights`` (module docstring).

    ``count`` items per list; ``relevant`` / ``ignored`` flags per item (a relevant item is never ignored);
    ``n_pos`` per list (>= its relevant weight)."""
    cnt = np.asarray(count, dtype=np.int64)
    n_lists = cnt.shape[0]
    w = np.asarray(weights, dtype=np.int64)
    lid = np.repeat(np.arange(n_lists), cnt)
    kept = np.flatnonzero(w > 0)
    wk, lk = w[kept], lid[kept]
    rel = np.asarray(relevant, dtype=bool)[kept]
    ranked = wk if ignored is None else wk * ~np.asarray(ignored, dtype=bool)[kept]
    # cumulative relevant and ranked weights, global (list offsets are subtracted below)
    t_all = np.cumsum(wk * rel)
    n_all = np.cumsum(ranked)
    hit = np.flatnonzero(rel)
    n_hits = np.bincount(lk[hit], weights=wk[hit], minlength=n_lists).astype(np.int64)
    base_t = np.cumsum(n_hits) - n_hits  # relevant weight before each list
    n_ranked = np.bincount(lk, weights=ranked, minlength=n_lists).astype(np.int64)
    base_n = np.cumsum(n_ranked) - n_ranked
    hl = lk[hit]
    tp_end = t_all[hit] - base_t[hl]
    rank_end = n_all[hit] - base_n[hl]
    env = segment_suffix_max(tp_end / (rank_end + eps), hl)

    uniq, inv = np.unique(np.asarray(n_pos, dtype=np.int64), return_inverse=True)
    c = min_counts_for_recall(levels, uniq)[inv.reshape(-1)]  # once per distinct n_pos, as the core
    cc = np.maximum(c, 1)
    valid = cc <= n_hits[:, None]
    # the relevant item holding the cc-th hit of its list: first global cumulative count >= base + cc
    at = np.searchsorted(t_all[hit], np.where(valid, base_t[:, None] + cc, 0), side="left")
    at = np.minimum(at, max(hit.shape[0] - 1, 0))
    q = np.where(valid, env[at] if hit.size else 0.0, 0.0)
    rows = np.where(valid & (c >= 1), kept[hit[at]] if hit.size else -1, -1)
    first_pos = np.searchsorted(lk, np.arange(n_lists), side="left")
    has_item = np.bincount(lk, minlength=n_lists) > 0
    first = np.where(
        has_item, kept[np.minimum(first_pos, max(kept.shape[0] - 1, 0))] if kept.size else -1, -1
    )
    rows = np.where(c == 0, first[:, None], rows)
    return q, rows, n_hits
