"""trec_eval measures, per topic, computed for all topics at once on a :class:`RankedTopics`.

Every function takes the prepared topics and returns one float64 value per topic (or a 2-D array, one
column per cutoff). The ranked-list summaries (P, recall, AP, R-precision, reciprocal rank, interpolated
precision, F-max) are the core's: each topic is one list of a :class:`~deteval.core.lists.RankedLists`
(``Cache.lists``), whose sums run per list in rank order like trec_eval's loops, so results agree with
trec_eval to the last bits. bpref and (n)DCG, which read judged values rather than a ranked list's
relevant/non-relevant outcome, are computed here on the same ranking.

Definitions (R = ``num_rel``, the judged documents with ``rel >= level``; rel(i) the judged value at rank
i; [i rel] 1 if the document at rank i is relevant; tp(k) the relevant documents in the top k):

* ``P_k`` = tp(k) / k;  ``recall_k`` = tp(k) / R (0 if R = 0); ``recall_mode="min_k_R"``: tp(k) / min(k, R)
* ``map`` (AP, uninterpolated) = (1/R) Σ_i [i rel] tp(i)/i;  ``map_cut_k`` the same over i <= k
  (``ap_denominator="num_rel_ret"``: divide by the relevant documents retrieved within the cutoff instead)
* ``gm_map``: per topic log(max(AP, 1e-5)); averaged as exp(mean) (trec_eval's MIN_GEO_MEAN)
* ``Rprec`` = tp(R) / R (the break-even point of the PR curve)
* ``recip_rank`` = 1 / rank of the first relevant document (0 if none); ``recip_rank_cut_k`` only within k
* ``success_k`` = 1 if tp(k) > 0
* ``bpref`` = (1/R) Σ_{relevant retrieved r} (1 − min(n_r, R) / min(N, R)), n_r the judged non-relevant
  documents ranked above r, N the judged non-relevant documents (trec_eval 9, ``m_bpref.c``)
* ``ndcg`` = DCG / ideal DCG, DCG = Σ_i g(rel(i)) / log2(i + 1) over the whole ranking, the ideal from all
  judged documents of the topic sorted by gain; ``ndcg_cut_k`` both truncated at k. Default gain g(r) = r
  for r > 0 (trec_eval); ``gain="exp2"``: 2^r − 1. ``discount="max2"`` uses log2(max(i, 2)) (seed 002).
  ``dcg_cut_k`` is the un-normalised DCG at k (deteval extension).
* ``iprec_at_recall_x`` = max precision at the ranks where the c-th relevant document is retrieved, over
  c >= floor(x R + 0.9) (trec_eval 9.0.8 and pytrec_eval; c >= lround(x R) in trec_eval 10.0; 0 beyond the
  last relevant retrieved); ``11pt_avg`` their mean over x = 0, 0.1, ..., 1
* ``num_ret``, ``num_rel``, ``num_rel_ret``, ``num_nonrel_judged_ret``; ``set_P`` = num_rel_ret / num_ret,
  ``set_recall`` = num_rel_ret / R, ``set_F`` = 2 P R / (P + R), ``set_map`` = set_P * set_recall,
  ``set_relative_P`` = num_rel_ret / min(num_ret, R); ``relative_P_k`` = tp(k) / min(k, R)
* ``gm_bpref``: like gm_map, from bpref
* deteval extensions: ``F_k`` (F1 of P_k and recall_k), ``Fmax`` = max over ranks of F1(P(i), R(i))
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from deteval.core.lists import RankedLists, presorted_lists
from deteval.core.lists import safe_div as safe_div
from deteval.core.lists import segment_suffix_max as segment_suffix_max
from deteval.retrieval.prepare import RankedTopics
from deteval.retrieval.versions import DEFAULT_RECALL_LEVELS, DEFAULT_VERSION, recall_cutoff

MIN_GEO_MEAN = 0.00001


class Cache:
    """Per-row quantities shared by several measures, computed once; ``lists`` is the ranking as the core's
    :class:`~deteval.core.lists.RankedLists` (one list per topic)."""

    def __init__(self, rt: RankedTopics) -> None:
        self.rt = rt

    @cached_property
    def lists(self) -> RankedLists:
        return presorted_lists(self.rt.num_ret, self.rt.relevant, self.rt.num_rel)

    @property
    def tp(self) -> np.ndarray:
        """Relevant documents at or above each row, within its topic (exact integers)."""
        return self.lists.tp

    def tp_at(self, k: np.ndarray | int) -> np.ndarray:
        """tp(k) per topic; k may be a per-topic array. Ranks beyond the list add nothing."""
        return self.lists.tp_at(k)

    def count_before(self, mask: np.ndarray) -> np.ndarray:
        """Rows of ``mask`` ranked strictly above each row, within its topic (exact integers)."""
        rt = self.rt
        above = np.cumsum(mask, dtype=np.int64) - mask
        offs = np.zeros(rt.n_topics, dtype=np.int64)
        has = rt.num_ret > 0
        offs[has] = above[rt.start[has]]
        return above - np.repeat(offs, rt.num_ret)


def num_ret(c: Cache) -> np.ndarray:
    """Documents retrieved per topic."""
    return c.rt.num_ret.astype(np.float64)


def num_rel(c: Cache) -> np.ndarray:
    """R: judged documents with rel >= level per topic."""
    return c.rt.num_rel.astype(np.float64)


def num_rel_ret(c: Cache) -> np.ndarray:
    """Relevant documents retrieved per topic."""
    return c.lists.n_hits.astype(np.float64)


def num_nonrel_judged_ret(c: Cache) -> np.ndarray:
    """Judged non-relevant documents (0 <= rel < level) retrieved per topic."""
    rt = c.rt
    return np.bincount(rt.row_topic[(rt.rel >= 0) & ~rt.relevant], minlength=rt.n_topics).astype(np.float64)


def precision_at(c: Cache, k: int) -> np.ndarray:
    """P_k = tp(k) / k."""
    return c.tp_at(k) / float(k)


def recall_at(c: Cache, k: int, mode: str = "R") -> np.ndarray:
    """recall_k = tp(k) / R, or tp(k) / min(k, R) with ``mode="min_k_R"``; 0 when the denominator is 0."""
    den = c.rt.num_rel if mode == "R" else np.minimum(k, c.rt.num_rel)
    return safe_div(c.tp_at(k), den)


def f_at(c: Cache, k: int, mode: str = "R") -> np.ndarray:
    """F_k = 2 P_k recall_k / (P_k + recall_k), 0 when both are 0."""
    p, r = precision_at(c, k), recall_at(c, k, mode)
    return safe_div(2.0 * p * r, p + r)


def average_precision(c: Cache, k: int | None = None, denominator: str = "num_rel") -> np.ndarray:
    """AP (``map``), or AP over the top k (``map_cut_k``): Σ_{relevant i <= k} tp(i)/i divided by R, or by the
    relevant documents within k with ``denominator="num_rel_ret"``."""
    lists = c.lists
    if k is None and denominator == "num_rel":
        return lists.average_precision("uninterpolated")
    cut = int(c.rt.num_ret.max(initial=0)) + 1 if k is None else k
    return lists.average_precision_at(cut, "n_pos" if denominator == "num_rel" else "retrieved")


def gm_map_per_topic(c: Cache, denominator: str = "num_rel") -> np.ndarray:
    """log(max(AP, 1e-5)): what trec_eval stores (and prints with -q) per topic for gm_map."""
    return np.log(np.maximum(average_precision(c, None, denominator), MIN_GEO_MEAN))


def r_precision(c: Cache) -> np.ndarray:
    """Rprec = tp(R) / R (the break-even point)."""
    return c.lists.r_precision()


def recip_rank(c: Cache, k: int | None = None) -> np.ndarray:
    """1 / rank of the first relevant document (within k if given), 0 if none."""
    return c.lists.reciprocal_rank(k)


def success_at(c: Cache, k: int) -> np.ndarray:
    """success_k = 1 if a relevant document is in the top k, else 0."""
    return (c.tp_at(k) > 0).astype(np.float64)


def bpref(c: Cache) -> np.ndarray:
    """bpref as trec_eval 9 (``m_bpref.c``): see the module docstring."""
    rt = c.rt
    # (the relevant rows, the only ones summed, have no judged non-relevant document of their own to count)
    nonrel_above = c.count_before((rt.rel >= 0) & ~rt.relevant)
    R = rt.num_rel[rt.row_topic]
    N = rt.num_nonrel[rt.row_topic]
    frac = safe_div(np.minimum(nonrel_above, R), np.minimum(N, R))
    contrib = np.where(nonrel_above > 0, 1.0 - frac, 1.0)
    rel = rt.relevant
    return safe_div(np.bincount(rt.row_topic[rel], weights=contrib[rel], minlength=rt.n_topics), rt.num_rel)


def gain_values(values: ArrayLike, gain: str = "trec") -> np.ndarray:
    """g(rel): rel (``"trec"``) or 2^rel - 1 (``"exp2"``) for rel > 0, else 0."""
    v = np.asarray(values, dtype=np.float64)
    return np.where(v > 0, np.exp2(v) - 1.0 if gain == "exp2" else v, 0.0)


def discounts(rank: np.ndarray, discount: str = "trec") -> np.ndarray:
    """d(i) of 1-based ranks: log2(i + 1) (``"trec"``) or log2(max(i, 2)) (``"max2"``)."""
    r = rank.astype(np.float64)
    return np.log2(np.maximum(r, 2.0)) if discount == "max2" else np.log2(r + 1.0)


def dcg(c: Cache, k: int | None = None, gain: str = "trec", discount: str = "trec") -> np.ndarray:
    """DCG over the whole ranking (k=None) or the top k: Σ g(rel(i)) / d(i) over documents with rel > 0."""
    rt = c.rt
    mask = rt.rel > 0 if k is None else (rt.rel > 0) & (rt.rank <= k)
    rows = np.flatnonzero(mask)  # only documents with a gain: the logarithms of the rest are not needed
    g = gain_values(rt.rel[rows], gain)
    w = g / discounts(rt.rank[rows], discount)
    return np.bincount(rt.row_topic[rows], weights=w, minlength=rt.n_topics)


def ideal_dcg(c: Cache, k: int | None = None, gain: str = "trec", discount: str = "trec") -> np.ndarray:
    """DCG of the ideal ranking: all judged documents of the topic with rel > 0, by decreasing rel."""
    rt = c.rt
    g = gain_values(rt.ideal_gain, gain)
    mask = g > 0 if k is None else (g > 0) & (rt.ideal_rank <= k)
    w = g / discounts(rt.ideal_rank, discount)
    return np.bincount(rt.ideal_topic[mask], weights=w[mask], minlength=rt.n_topics)


def ndcg(c: Cache, k: int | None = None, gain: str = "trec", discount: str = "trec") -> np.ndarray:
    """nDCG = DCG / ideal DCG (0 when the ideal is 0), both over the whole ranking or both cut at k."""
    return safe_div(dcg(c, k, gain, discount), ideal_dcg(c, k, gain, discount))


def iprec_at_recall(
    c: Cache, levels: np.ndarray, version: str = DEFAULT_VERSION, rule: str = DEFAULT_RECALL_LEVELS
) -> np.ndarray:
    """Interpolated precision at recall levels, shape (n_topics, n_levels) (see the module docstring);
    ``version`` and ``rule`` pick trec_eval's rule for turning a level into a rank (:func:`recall_cutoff`)."""
    rt = c.rt
    if len(levels) == 0:
        return np.zeros((rt.n_topics, 0), dtype=np.float64)
    # The envelope at the c-th relevant document retrieved, c = recall_cutoff(x, R), at least 1 (level 0 ->
    # the first relevant); 0 where the topic retrieves fewer than c relevant documents.
    counts = np.stack(
        [np.maximum(recall_cutoff(float(x), rt.num_rel, version, rule), 1) for x in levels], axis=1
    )
    return c.lists.envelope_at_counts(counts)[0]


def f_max(c: Cache) -> np.ndarray:
    """Fmax = max over ranks i of F1(P(i), R(i)) (0 for an empty ranking)."""
    return c.lists.f_max()
