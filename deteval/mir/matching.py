"""Which estimates are in reach of which references, and the one-to-one maximum matching.

Reach (the hit test of mir_eval.util.match_events, whose fast path ``_fast_hit_windows`` this follows):
reference r is in reach of estimate e when ``e − w ≤ r ≤ e + w`` with ``e − w`` and ``e + w`` rounded to
float64. In exact arithmetic that is ``|r − e| ≤ w``; the rounded bounds are what mir_eval evaluates, so
distances within an ulp of the window are decided as mir_eval decides them.

With both point sets sorted, the references in reach of estimate j are a contiguous run ``[lo_j, hi_j)``
of the sorted references, and lo_j, hi_j never decrease with j (rounding is monotone).

One-to-one maximum matching, greedy: take the estimates in ascending order; estimate j takes the smallest
reference that is still free, not before lo_j, and before hi_j. This is a maximum matching (so its size
equals mir_eval's Hopcroft–Karp result; the size of a maximum matching is unique even when the matching
is not):

* A reference skipped because it lies before lo_j is out of reach of every later estimate (lo only grows).
* Exchange argument: suppose an optimal matching M agrees with the greedy one on the earlier estimates,
  and greedy pairs j with reference i (the smallest free one in reach). If M pairs j with i' ≠ i, then
  i < i' (i' is free and in reach, i is the smallest), so if i is matched in M, it is matched to a later
  estimate j' > j, and lo_j' ≤ lo_j ≤ i < i' < hi_j ≤ hi_j' puts i' in reach of j': swap the two partners.
  If i is free in M, give it to j instead of i'. If M leaves j unmatched, i is matched to some j' > j
  (otherwise M + (i, j) is larger): move i to j. Each case keeps |M| and agrees with greedy one step
  further. If greedy leaves j unmatched, every reference in reach of j is already taken by earlier
  estimates, in M as well. So greedy's matching is as large as M.

The loop runs only over estimates with at least one reference in reach, in plain Python over lists: the
update ``p ← max(p, lo_j) (+1 if < hi_j)`` is a sequential scan that NumPy has no primitive for.
"""

from __future__ import annotations

import numpy as np


def reach_windows(
    ref_sorted: np.ndarray, est_sorted: np.ndarray, window: float
) -> tuple[np.ndarray, np.ndarray]:
    """For each estimate j (sorted), the run ``[lo_j, hi_j)`` of sorted references in reach."""
    lo = np.searchsorted(ref_sorted, est_sorted - window, side="left")
    hi = np.searchsorted(ref_sorted, est_sorted + window, side="right")
    return lo, hi


def match_one_to_one(
    ref_sorted: np.ndarray, est_sorted: np.ndarray, window: float
) -> tuple[np.ndarray, np.ndarray]:
    """A maximum one-to-one matching within the window: (reference indices, estimate indices), sorted input.

    Both arrays must be sorted ascending. See the module docstring for the proof of maximality.
    """
    lo, hi = reach_windows(ref_sorted, est_sorted, window)
    cand = np.flatnonzero(hi > lo)
    ref_idx: list[int] = []
    est_idx: list[int] = []
    p = 0
    for j, lo_j, hi_j in zip(cand.tolist(), lo[cand].tolist(), hi[cand].tolist()):
        if p < lo_j:
            p = lo_j
        if p < hi_j:
            ref_idx.append(p)
            est_idx.append(j)
            p += 1
    return np.asarray(ref_idx, dtype=np.int64), np.asarray(est_idx, dtype=np.int64)


def fmp_counts(ref_sorted: np.ndarray, est_sorted: np.ndarray, window: float) -> tuple[int, int, int]:
    """(TP, FP, FN) under FMP's rule: an estimate with any reference in reach is a TP, else an FP; a
    reference with no estimate in reach is an FN."""
    lo, hi = reach_windows(ref_sorted, est_sorted, window)
    hit = hi > lo
    tp = int(np.count_nonzero(hit))
    # References covered by some estimate's run: a difference array over the runs, then a running sum.
    cover = np.zeros(ref_sorted.shape[0] + 1, dtype=np.int64)
    np.add.at(cover, lo[hit], 1)
    np.add.at(cover, hi[hit], -1)
    covered = np.count_nonzero(np.cumsum(cover[:-1]) > 0)
    return tp, int(est_sorted.shape[0]) - tp, int(ref_sorted.shape[0] - covered)
