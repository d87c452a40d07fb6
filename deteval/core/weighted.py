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
``interpolated_precision``, ``sampled_items`` (mapped back through ``order``) and ``n_hits``, in O(items +
hits) instead of O(Σw) (only a hit-to-run index is laid out); tests/test_stats.py checks the equality on
random lists.
"""

from __future__ import annotations

import numpy as np

from deteval.core.lists import envelope_at_units, min_counts_for_recall

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
    ends = np.cumsum(cnt)
    starts = ends - cnt
    w = np.asarray(weights, dtype=np.int64)
    wr = w * np.asarray(relevant, dtype=bool)
    # cumulative relevant and ranked weights over all lists; a list's own counts subtract its start
    t_all = np.concatenate(([0], np.cumsum(wr)))
    n_all = np.concatenate(([0], np.cumsum(w if ignored is None else w * ~np.asarray(ignored, dtype=bool))))
    base_t, base_n = t_all[starts], n_all[starts]
    n_hits = t_all[ends] - base_t
    is_hit = wr > 0
    hit = np.flatnonzero(is_hit)  # relevant items of weight > 0: each ends a run of hits
    h_all = np.concatenate(([0], np.cumsum(is_hit)))
    h_cnt = h_all[ends] - h_all[starts]
    hl = np.repeat(np.arange(n_lists), h_cnt)
    t_hit = t_all[hit + 1]
    prec = (t_hit - base_t[hl]) / ((n_all[hit + 1] - base_n[hl]) + eps)

    uniq, inv = np.unique(np.asarray(n_pos, dtype=np.int64), return_inverse=True)
    c = min_counts_for_recall(levels, uniq)[inv.reshape(-1)]  # once per distinct n_pos, as the core
    # the run holding the c-th hit of its list: the first relevant item whose cumulative count reaches it
    run_of_hit = np.repeat(np.arange(hit.shape[0]), wr[hit])  # one entry per hit, not per item
    q, valid, at = envelope_at_units(prec, c, base_t, n_hits, run_of_hit, np.cumsum(h_cnt))
    rows = np.where(valid & (c >= 1), hit.take(at, mode="clip") if hit.size else -1, -1)
    nz = np.flatnonzero(w > 0)  # the list's first row: its first item of weight > 0
    f_at = np.searchsorted(nz, starts, side="left")
    f_item = nz[np.minimum(f_at, max(nz.shape[0] - 1, 0))] if nz.size else starts
    first = np.where((f_at < nz.shape[0]) & (f_item < ends), f_item, -1)
    rows = np.where(c == 0, first[:, None], rows)
    return q, rows, n_hits
