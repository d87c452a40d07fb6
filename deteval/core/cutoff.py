"""Measures of the top k ranks beyond P@k and R@k: reciprocal rank and AP truncated at k.

Ranks beyond the end of the list count as non-relevant, as in :mod:`deteval.core.summary`.

* RR@k = 1 / r₁ where r₁ is the rank of the first relevant item, 0 if none is within the first k ranks
  (``k=None``: the whole list, trec_eval's ``recip_rank``). MRR@k is its mean over queries (seed 003).
* AP@k = (1 / D) · Σ_{r ≤ k, rel(r)} P(r), with P(r) = |relevant in top r| / r and one of three
  denominators D, all in use under the same name:

  =================  =====================================================================================
  ``"n_pos"``        all relevant items of the reference: AP of the list cut at k (trec_eval on a run cut
                     at k); equals the uninterpolated AP when k >= the list length.
  ``"min_k_n_pos"``  min(k, n_pos): a perfect top k scores 1 even when n_pos > k (ml_metrics ``apk``).
  ``"retrieved"``    the relevant items within the top k: the mean of P(r) over those ranks (seed 003's
                     ``calc_AP(encoding[:k])``).
  =================  =====================================================================================

  AP@k is 0 when D is 0 (no relevant item in the reference, or none retrieved for ``"retrieved"``).
"""

from __future__ import annotations

from deteval.core.lists import AP_AT_K_DENOMINATORS, APDenominator
from deteval.core.ranking import Ranking
from deteval.core.summary import check_k

__all__ = ["AP_AT_K_DENOMINATORS", "APDenominator", "average_precision_at_k", "reciprocal_rank"]


def reciprocal_rank(ranking: Ranking, k: int | None = None) -> float:
    """RR@k = 1 / (rank of the first relevant item) if that rank is <= k, else 0; ``k=None``: no cutoff.

    >>> from deteval.core import rank
    >>> reciprocal_rank(rank(None, [0, 0, 1, 1], ties="presorted")), reciprocal_rank(
    ...     rank(None, [0, 0, 1, 1], ties="presorted"), k=2)
    (0.3333333333333333, 0.0)
    """
    return float(ranking.lists.reciprocal_rank(None if k is None else check_k(k))[0])


def average_precision_at_k(ranking: Ranking, k: int, *, denominator: APDenominator = "n_pos") -> float:
    """AP@k = (1 / D) · Σ_{r ≤ k, rel(r)} P(r); D = n_pos, min(k, n_pos) or |relevant in top k|; 0 if D = 0.

    >>> from deteval.core import rank
    >>> r = rank(None, [1, 0, 1, 0], n_pos=4, ties="presorted")
    >>> [average_precision_at_k(r, 3, denominator=d) for d in ("n_pos", "min_k_n_pos", "retrieved")]
    [0.41666666666666663, 0.5555555555555555, 0.8333333333333333]
    """
    return float(ranking.lists.average_precision_at(check_k(k), denominator)[0])
