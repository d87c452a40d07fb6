"""Ranked-list summaries (FMP, seed 000): P(r), R(r), F(r) at every rank, break-even point, F-max, AP.

* P(r) = |relevant in top r| / r, R(r) = |relevant in top r| / n_pos, F(r) their harmonic mean (0 where
  both are 0).
* Break-even point: P(n_pos) = R(n_pos), i.e. the fraction of relevant items among the first n_pos ranks
  (trec_eval's R-precision). A list shorter than n_pos counts its missing ranks as non-relevant.
* F-max: max over r of F(r).
* AP: uninterpolated, (1 / n_pos) * sum of P(r) over relevant ranks.

With ``n_pos == 0`` all three summaries are 0 (nothing to find). With an empty list they are 0 too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deteval.core.ranking import Ranking
from deteval.errors import ValidationError


@dataclass(frozen=True)
class RankedSummary:
    """Per-rank curves and the three single-number summaries of one ranked list."""

    precision: np.ndarray
    recall: np.ndarray
    f: np.ndarray
    break_even_point: float
    f_max: float
    average_precision: float


def check_k(k: int) -> int:
    """``k`` as an int when it is a positive integer (not a bool), else a :class:`ValidationError`."""
    try:
        ok = not isinstance(k, bool) and int(k) == k and k >= 1
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ValidationError(f"cutoff k must be a positive integer, got {k!r}")
    return int(k)


def relevant_in_top(ranking: Ranking, k: int) -> int:
    """Number of relevant items among the first k ranks (ranks beyond the list are non-relevant)."""
    k = check_k(k)
    n = len(ranking)
    return 0 if n == 0 else int(ranking.tp[min(k, n) - 1])


def precision_at_k(ranking: Ranking, k: int) -> float:
    """P@k = |relevant in top k| / k (divides by k even when the list is shorter, as trec_eval)."""
    return float(ranking.lists.precision_at(check_k(k))[0])


def recall_at_k(ranking: Ranking, k: int) -> float:
    """R@k = |relevant in top k| / n_pos; 0 when n_pos is 0."""
    return float(ranking.lists.recall_at(check_k(k))[0])


def summarize_ranking(ranking: Ranking) -> RankedSummary:
    """P(r), R(r), F(r), break-even point, F-max and AP of a ranked list (see module docstring)."""
    rl = ranking.lists
    return RankedSummary(
        precision=rl.precision(),
        recall=rl.recall(),
        f=rl.f_curve(),
        break_even_point=float(rl.r_precision()[0]),
        f_max=float(rl.f_max()[0]),
        average_precision=float(rl.average_precision("uninterpolated")[0]),
    )
