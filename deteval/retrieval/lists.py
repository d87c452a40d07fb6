"""Measures of one ranked list, and seed 003's list form (ranked lists + ground-truth lists).

For quick use from Python without qrels/run files. ``relevance`` is the judged value of the document at
each rank (best first; 0 or less = non-relevant), ``n_rel`` the number of relevant documents of the topic
(defaults to the relevant documents in the list). They run on the core's :class:`~deteval.core.Ranking`
and follow trec_eval's definitions and options (:mod:`deteval.retrieval.measures`, the vectorised
all-topics version, is tested against them and against pytrec_eval).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deteval.core import summary as core_summary
from deteval.core.ap import average_precision as core_average_precision
from deteval.core.cutoff import reciprocal_rank as core_reciprocal_rank
from deteval.core.ranking import Ranking, rank
from deteval.errors import ValidationError
from deteval.io.trec_memory import qrels_from_lists, run_from_lists
from deteval.results import EvalResult
from deteval.retrieval import trec
from deteval.retrieval.measures import discounts, gain_values


def _rel(relevance: ArrayLike, level: int = 1) -> np.ndarray:
    arr = np.asarray(relevance)
    if arr.ndim != 1:
        raise ValidationError(f"relevance must be one-dimensional, got shape {arr.shape}")
    if arr.dtype == np.bool_:
        return arr
    return arr >= level


def _ranking(rel: np.ndarray, n_rel: int | None) -> Ranking:
    """The core's ranking of a list already in rank order (n_rel >= the relevant documents listed)."""
    return rank(None, rel, None if n_rel is None else int(n_rel), ties="presorted")


def precision_at_k(relevance: ArrayLike, k: int, *, level: int = 1) -> float:
    """P@k = |relevant in the top k| / k (trec_eval ``P_k``; a shorter list still divides by k).

    >>> precision_at_k([1, 0, 1, 0], 3)
    0.6666666666666666
    """
    return core_summary.precision_at_k(_ranking(_rel(relevance, level), None), core_summary.check_k(k))


def recall_at_k(
    relevance: ArrayLike, k: int, n_rel: int | None = None, *, level: int = 1, denominator: str = "R"
) -> float:
    """R@k = |relevant in the top k| / R (trec_eval ``recall_k``); ``denominator="min_k_R"``: / min(k, R)."""
    k = core_summary.check_k(k)
    ranking = _ranking(_rel(relevance, level), n_rel)
    if denominator == "R":
        return core_summary.recall_at_k(ranking, k)
    den = min(k, ranking.n_pos)
    return 0.0 if den == 0 else core_summary.relevant_in_top(ranking, k) / den


def average_precision(
    relevance: ArrayLike,
    n_rel: int | None = None,
    *,
    k: int | None = None,
    level: int = 1,
    denominator: str = "num_rel",
) -> float:
    """AP = (1/R) Σ_{relevant ranks i <= k} tp(i)/i (trec_eval ``map`` / ``map_cut_k``, uninterpolated).

    ``denominator="num_rel_ret"`` divides by the relevant documents found within the cutoff (seed 003).
    """
    rel = _rel(relevance, level)
    n_pos = _ranking(rel, n_rel).n_pos
    if k is not None:
        rel = rel[: core_summary.check_k(k)]
    if denominator == "num_rel_ret":
        n_pos = int(np.count_nonzero(rel))
    return core_average_precision(_ranking(rel, n_pos), "uninterpolated")


def break_even_point(relevance: ArrayLike, n_rel: int | None = None, *, level: int = 1) -> float:
    """P(R) = R(R): the break-even point of the PR curve (trec_eval ``Rprec``; FMP, seed 000)."""
    return core_summary.summarize_ranking(_ranking(_rel(relevance, level), n_rel)).break_even_point


def f_max(relevance: ArrayLike, n_rel: int | None = None, *, level: int = 1) -> float:
    """max over ranks r of F(r) = 2 P(r) R(r) / (P(r) + R(r)) (FMP, seed 000)."""
    return core_summary.summarize_ranking(_ranking(_rel(relevance, level), n_rel)).f_max


def reciprocal_rank(relevance: ArrayLike, *, k: int | None = None, level: int = 1) -> float:
    """1 / rank of the first relevant document (0 if none, or none within the cutoff k)."""
    return core_reciprocal_rank(
        _ranking(_rel(relevance, level), None), None if k is None else core_summary.check_k(k)
    )


def dcg_at_k(gains: ArrayLike, k: int | None = None, *, gain: str = "trec", discount: str = "trec") -> float:
    """DCG@k = Σ_{i<=k} g(rel_i) / d(i); g = rel (``"trec"``) or 2^rel − 1 (``"exp2"``), only for rel > 0;
    d(i) = log2(i + 1) (``"trec"``) or log2(max(i, 2)) (``"max2"``, seed 002).

    >>> round(dcg_at_k([4, 3, 4, 2, 0, 0, 0, 1, 1, 0], 10, discount="max2"), 2)
    11.17
    """
    g = np.asarray(gains, dtype=np.float64)
    if k is not None:
        g = g[: core_summary.check_k(k)]
    return float(np.sum(gain_values(g, gain) / discounts(np.arange(1, g.shape[0] + 1), discount)))


def ndcg_at_k(
    gains: ArrayLike,
    judged: ArrayLike | None = None,
    k: int | None = None,
    *,
    gain: str = "trec",
    discount: str = "trec",
) -> float:
    """nDCG@k = DCG@k / ideal DCG@k, the ideal ranking sorting ``judged`` (all judged values of the topic;
    default: ``gains``) in descending order (trec_eval ``ndcg_cut_k``; ``k=None``: ``ndcg``)."""
    ideal = np.sort(np.asarray(gains if judged is None else judged, dtype=np.float64))[::-1]
    idcg = dcg_at_k(ideal, k, gain=gain, discount=discount)
    return 0.0 if idcg <= 0 else dcg_at_k(gains, k, gain=gain, discount=discount) / idcg


def evaluate_lists(
    results: Sequence[Sequence[Any]],
    ground_truth: Sequence[Sequence[Any]],
    cutoffs: Sequence[int] = (1, 5, 10),
    *,
    convention: str = "seed003",
    per_query: bool = False,
) -> EvalResult:
    """Evaluate ranked lists against lists of relevant documents (seed 003's input form).

    ``results[i]`` is query i's ranking (best first), ``ground_truth[i]`` its relevant documents. Returns
    ``recall_k``, ``recip_rank_cut_k`` (MRR@k), ``P_k``, ``map_cut_k`` and ``ndcg_cut_k`` per cutoff.
    ``convention="seed003"``: recall divides by min(k, R) and MAP@k by the relevant documents found within
    k (that tutorial's definitions); ``"trec"``: trec_eval's (both divide by R).
    """
    if len(results) != len(ground_truth):
        raise ValidationError(f"{len(results)} ranked lists for {len(ground_truth)} ground-truth lists")
    if convention not in ("seed003", "trec"):
        raise ValidationError(f"convention must be 'seed003' or 'trec', got {convention!r}")
    names = [f"{i:0{len(str(len(results)))}d}" for i in range(len(results))]
    cuts = ",".join(str(core_summary.check_k(k)) for k in cutoffs)
    seed = convention == "seed003"
    task = trec.start(
        qrels_from_lists(ground_truth, topics=names),
        run_from_lists(results, topics=names),
        [f"recall.{cuts}", f"recip_rank_cut.{cuts}", f"P.{cuts}", f"map_cut.{cuts}", f"ndcg_cut.{cuts}"],
        complete=True,
        per_query=per_query,
        recall_denominator="min_k_R" if seed else "R",
        ap_denominator="num_rel_ret" if seed else "num_rel",
    )
    return trec.finish(task, trec.merge(task, [trec.part_values(task.spec, *task.whole())]))
