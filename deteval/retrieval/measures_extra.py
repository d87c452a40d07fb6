"""trec_eval measures beyond the common ones: Rprec_mult, utility, binG, set_F with a beta, and the gain
family (G, ndcg_rel, Rndcg, ndcg with a gain map), each as the named m_*.c file computes it.

The gain family runs a small loop per topic (the ideal ranking walks the relevance levels in trec_eval's
gain order); these measures are rarely asked for, and the common ones stay vectorised in
:mod:`deteval.retrieval.measures`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from deteval.retrieval.measures import Cache, num_rel_ret, safe_div


def rprec_mult(c: Cache, mult: float) -> np.ndarray:
    """Rprec_mult_x = tp(n) / n at n = (long)(x R + 0.9) ranks (0 when n is 0), m_Rprec_mult.c: precision
    after x times R documents (a list shorter than n counts as padded with non-relevant documents)."""
    n = (mult * c.rt.num_rel.astype(np.float64) + 0.9).astype(np.int64)
    return safe_div(c.tp_at(np.maximum(n, 0)), n)


def utility(
    c: Cache, coef: Sequence[float], num_docs: int = 0, added: np.ndarray | None = None
) -> np.ndarray:
    """utility = p1 a + p2 b + p3 c + p4 d over the contingency table (a relevant retrieved, b non-relevant
    retrieved, c relevant not retrieved, d = num_docs + a - retrieved - R), m_utility.c. ``added`` (bool
    per topic) marks topics scored as one retrieved unjudged document
    (:func:`~deteval.retrieval.trec_values.bogus_topics`)."""
    rt = c.rt
    a = num_rel_ret(c)
    ret = (rt.num_ret if added is None else rt.num_ret + added).astype(np.float64)
    r = rt.num_rel.astype(np.float64)
    p1, p2, p3, p4 = (float(x) for x in coef)
    # the C expression, term by term: (long) counts converted to double, multiplied, summed left to right
    return p1 * a + p2 * (ret - a) + p3 * (r - a) + p4 * (num_docs + a - ret - r)


def bin_g(c: Cache) -> np.ndarray:
    """binG = (1/R) sum over relevant retrieved docs of 1 / log2(2 + non-relevant docs ranked above), 0 when
    no relevant document is retrieved (m_binG.c)."""
    rt = c.rt
    rows = np.flatnonzero(rt.relevant)
    w = 1.0 / np.log2((2 + rt.rank[rows] - c.tp[rows]).astype(np.float64))
    s = np.bincount(rt.row_topic[rows], weights=w, minlength=rt.n_topics)
    return safe_div(s, rt.num_rel)


def set_f(c: Cache, beta: float = 1.0) -> np.ndarray:
    """set_F = (x + 1) P R / (x P + R) with P = num_rel_ret / num_ret, R = num_rel_ret / num_rel, 0 when
    nothing relevant is retrieved (m_set_F.c; x = 1: the harmonic mean). A negative x can make x P + R zero:
    the C division's NaN or infinity, as trec_eval prints it."""
    nrr = num_rel_ret(c)
    p = safe_div(nrr, c.rt.num_ret)
    r = safe_div(nrr, c.rt.num_rel)
    x = float(beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nrr > 0, (x + 1.0) * p * r / (x * p + r), 0.0)


# ----------------------------------------------------------------------------------------------------
# The gain family


def _c_gain_order(a: tuple[int, float], b: tuple[int, float]) -> int:
    # trec_eval's comparator returns the difference of two double gains converted to int: gains closer
    # than 1 compare equal, so the comparator is not transitive and the order is that of glibc's qsort
    return int(a[1] - b[1])


def glibc_merge_sort(items: list[Any], cmp: Callable[[Any, Any], int]) -> list[Any]:
    """``items`` in the order glibc's ``qsort`` (msort.c: top-down merge sort, the first half ``n // 2``
    items, ties taken from the first half) leaves them with the comparator ``cmp``. The same as a stable
    sort for a consistent comparator; for trec_eval's int-valued gain comparator, which is not transitive,
    it is the order trec_eval sees."""
    n = len(items)
    if n <= 1:
        return list(items)
    left, right = glibc_merge_sort(items[: n // 2], cmp), glibc_merge_sort(items[n // 2 :], cmp)
    out, i, j = [], 0, 0
    while i < len(left) and j < len(right):
        if cmp(left[i], right[j]) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


#: levels up to which the empty ones are listed as trec_eval lists them (they can move the others in its
#: non-transitive sort); past it a huge relevance value would cost that many entries per topic
MAX_LISTED_LEVEL = 4096


def gain_levels(
    pairs: Sequence[tuple[int, float]], counts: Mapping[int, int]
) -> list[tuple[int, float, int]]:
    """(level, gain, judged docs at that level) in trec_eval's order (setup_gains in gain_init.c): the
    parameter pairs first, then every level from 0 to the topic's highest judged level not named by a pair
    (gain = level), sorted by gain with trec_eval's int-valued comparator in glibc's merge-sort order
    (:func:`glibc_merge_sort`). Where every gain is an integer the comparator is consistent and the empty
    levels cannot move the others: they are then left out, as they are past :data:`MAX_LISTED_LEVEL`, so
    that a huge relevance value costs nothing."""
    levels = [(lvl, float(g)) for lvl, g in pairs]
    named = {lvl for lvl, _ in levels}
    top = max((lvl for lvl, n in counts.items() if n > 0), default=0)
    every = top <= MAX_LISTED_LEVEL and any(not g.is_integer() for _, g in levels)
    listed = range(top + 1) if every else sorted(set(counts) | {0})
    levels += [(i, float(i)) for i in listed if i not in named]
    levels = glibc_merge_sort(levels, _c_gain_order)
    return [(lvl, g, int(counts.get(lvl, 0)) if lvl >= 0 else 0) for lvl, g in levels]


class _Ideal:
    """The ideal ranking's gains, walked one rank at a time from the highest gain level down."""

    def __init__(self, levels: list[tuple[int, float, int]]) -> None:
        self.levels = levels
        self.cur = len(levels) - 1
        self.gain = levels[self.cur][1] if self.cur >= 0 else 0.0
        self.at = 0

    def step(self) -> float:
        self.at += 1
        while self.cur >= 0 and self.at > self.levels[self.cur][2]:
            self.at = 1
            self.cur -= 1
            self.gain = self.levels[self.cur][1] if self.cur >= 0 else 0.0
        return self.gain


#: One topic's value from its ranking's judged values and its gain levels (:func:`gain_levels`)
_Walk = Callable[[list[int], list[tuple[int, float, int]]], float]


def _per_topic(c: Cache, pairs: Sequence[tuple[int, float]], one: _Walk) -> np.ndarray:
    rt = c.rt
    out = np.zeros(rt.n_topics, dtype=np.float64)
    # judged documents per level and topic: levels > 0 from the ideal list (sorted by topic), level 0 the
    # rest of the judged documents
    bounds = np.searchsorted(rt.ideal_topic, np.arange(rt.n_topics + 1))
    for t in range(rt.n_topics):
        g = rt.ideal_gain[bounds[t] : bounds[t + 1]].astype(np.int64)
        levels, n_at = np.unique(g, return_counts=True)
        counts = dict(zip(levels.tolist(), n_at.tolist()))
        counts[0] = int(rt.num_rel[t] + rt.num_nonrel[t]) - g.size
        rels = rt.rel[rt.start[t] : rt.start[t] + rt.num_ret[t]].tolist()
        out[t] = one(rels, gain_levels(pairs, counts))
    return out


def _gain_of(levels: list[tuple[int, float, int]]) -> Callable[[int], float]:
    table: dict[int, float] = {}
    for lvl, g, _ in levels:
        table.setdefault(lvl, g)  # get_gain returns the first match in sorted order
    return lambda rel: table.get(rel, 0.0)


def _cdiv(a: float, b: float) -> float:
    """a / b with C's IEEE result for b == 0 (inf or nan) instead of Python's exception."""
    if b == 0.0:
        return math.nan if a == 0.0 else math.copysign(math.inf, a)
    return a / b


def _clog2(x: float) -> float:
    """log2(x) with C's IEEE result for x <= 0 (-inf at 0, nan below) instead of Python's exception."""
    if x > 0.0:
        return math.log2(x)
    return -math.inf if x == 0.0 else math.nan


def _ndcg_walk(rels: list[int], levels: list[tuple[int, float, int]]) -> tuple[float, float]:
    """(ndcg_rel, ndcg) of one topic, the DCGs accumulated in the order of m_ndcg_rel.c (m_ndcg.c adds them
    in the same order)."""
    gain = _gain_of(levels)
    ideal = _Ideal(levels)
    results_dcg = ideal_dcg = total = 0.0
    n_rel = n_rel_ret = i = 0
    # the results, then the rest of the ideal ranking: it is walked alongside while it has gain left
    while i < len(rels) or ideal.gain > 0.0:
        walking = ideal.gain > 0.0
        g = gain(rels[i]) if i < len(rels) else 0.0
        if g != 0:
            results_dcg += g / math.log2(i + 2)
        if walking:
            ig = ideal.step()
            if ig > 0.0:
                n_rel += 1
                ideal_dcg += ig / math.log2(i + 2)
        if g > 0:
            total += _cdiv(results_dcg, ideal_dcg)
            n_rel_ret += 1
        i += 1
    total += _cdiv((n_rel - n_rel_ret) * results_dcg, ideal_dcg)
    return (total / n_rel if total > 0.0 else 0.0), (results_dcg / ideal_dcg if ideal_dcg > 0.0 else 0.0)


def _rndcg_one(rels: list[int], levels: list[tuple[int, float, int]]) -> float:
    gain = _gain_of(levels)
    ideal = _Ideal(levels)
    results_dcg = ideal_dcg = total = 0.0
    changes = 0
    old = ideal.gain
    i, n = 0, len(rels)
    # the ideal ranking is walked rank by rank (alongside the results while they last); nDCG is taken
    # where the ideal gain changes
    while ideal.gain > 0.0:
        g = gain(rels[i]) if i < n else 0.0
        ig = ideal.step()
        if old != ig:
            if ideal_dcg > 0.0:
                total += results_dcg / ideal_dcg
                changes += 1
            old = ig
        if g != 0:
            results_dcg += g / math.log2(i + 2)
        if ig > 0.0:
            ideal_dcg += ig / math.log2(i + 2)
        i += 1
    if i < n:  # results beyond the ideal ranking: one more point at the end
        for j in range(i, n):
            g = gain(rels[j])
            if g != 0:
                results_dcg += g / math.log2(j + 2)
        if ideal_dcg > 0.0:
            total += results_dcg / ideal_dcg
            changes += 1
    return total / changes if changes else math.nan


def _g_one(rels: list[int], levels: list[tuple[int, float, int]]) -> float:
    gain = _gain_of(levels)
    ideal = _Ideal(levels)
    results_g = sum_results = sum_ideal = sum_cost = 0.0
    min_cost = 1.0
    for rel in rels:
        g = gain(rel)
        sum_results += g
        ig = ideal.step() if ideal.gain > 0.0 else 0.0  # past the ideal ranking every rank costs min_cost
        if ig > 0.0:
            sum_ideal += ig
        sum_cost += ig if ig >= min_cost else min_cost
        if g != 0:
            results_g += _cdiv(g, _clog2(2 + sum_cost - sum_results))  # a gain map may outrun the cost
    while ideal.gain > 0.0:
        ig = ideal.step()
        if ig > 0.0:
            sum_ideal += ig
    return results_g / sum_ideal if sum_ideal > 0.0 else 0.0


#: The gain family's walks, by measure
_GAIN_WALKS: dict[str, _Walk] = {
    "ndcg": lambda rels, levels: _ndcg_walk(rels, levels)[1],
    "ndcg_rel": lambda rels, levels: _ndcg_walk(rels, levels)[0],
    "Rndcg": _rndcg_one,
    "G": _g_one,
}


def gain_measure(c: Cache, name: str, pairs: Sequence[tuple[int, float]] = ()) -> np.ndarray:
    """A measure of the gain family with the gain map ``pairs`` (``level=gain``; levels not named keep
    gain = level): ``ndcg`` (m_ndcg.c with parameters), ``ndcg_rel`` (nDCG averaged over the ranks of the
    relevant documents, m_ndcg_rel.c), ``Rndcg`` (nDCG averaged at the ranks where the ideal gain changes,
    m_Rndcg.c; a topic without relevant documents is 0) or ``G`` (gain over log2(2 + cost so far - gain so
    far), normalised by the ideal gain sum, m_G.c)."""
    out = _per_topic(c, pairs, _GAIN_WALKS[name])
    if name == "Rndcg":
        out[c.rt.num_rel == 0] = 0.0
    return out


INFAP_EPSILON = 0.00001


def inf_ap(c: Cache) -> np.ndarray:
    """infAP (Yilmaz and Aslam), as m_infap.c: over the judged retrieved documents (documents not in the
    pool are skipped; in the pool but unjudged count in the sample estimate), each relevant one at 0-based
    rank j adds 1 (j = 0) or 1/(j+1) + (j/(j+1)) * ((r-1+n+u)/j) * ((r-1+e)/(r-1+n+2e)), with r the relevant,
    n the judged non-relevant and u the unjudged pool documents seen so far (r counting this one),
    e = 1e-5; the sum is divided by R."""
    rt = c.rt
    rows = np.flatnonzero(rt.relevant)
    r1 = c.tp[rows] - 1  # relevant before this one
    n = c.count_before((rt.rel >= 0) & ~rt.relevant)[rows]
    u = c.count_before(rt.rel == -2)[rows]  # (-2: prepare.UNJUDGED)
    fj = (rt.rank[rows] - 1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((r1 + n + u) / fj) * (
            (r1 + INFAP_EPSILON) / (r1 + n + 2 * INFAP_EPSILON)
        )
    term = np.where(fj == 0, 1.0, term)
    s = np.bincount(rt.row_topic[rows], weights=term, minlength=rt.n_topics)
    return np.where(rt.num_rel > 0, safe_div(s, rt.num_rel), s)


def relstring(c: Cache, length: int = 10, added: np.ndarray | None = None) -> list[str]:
    """The relevance of the first ``length`` retrieved documents as text (m_relstring.c): the digit for
    0-9, '>' above 9, '-' not in the pool, '.' in the pool but unjudged. Printed per topic only. ``added``
    (bool per topic) marks topics scored as one document not in the pool
    (:func:`~deteval.retrieval.trec_values.bogus_topics`)."""
    rt = c.rt
    out = []
    for t in range(rt.n_topics):
        # m_relstring.c: MIN((long) length, num_ret), then 0 if negative
        rels = rt.rel[rt.start[t] : rt.start[t] + max(min(int(length), int(rt.num_ret[t])), 0)].tolist()
        if added is not None and added[t]:
            rels = [-1] * min(max(int(length), 0), 1)
        out.append(
            "".join(
                ">" if r > 9 else str(r) if r >= 0 else "-" if r == -1 else "." if r == -2 else "<"
                for r in rels
            )
        )
    return out


def unjudged_at(c: Cache, k: int) -> np.ndarray:
    """unj_k (trec_eval 10.0, m_unjudged.c) = documents in the top k that are not judged (not in the qrels,
    or in the pool but unjudged) / k; a shorter list counts as filled with judged documents."""
    rt = c.rt
    rows = np.flatnonzero((rt.rel < 0) & (rt.rank <= k))
    return np.bincount(rt.row_topic[rows], minlength=rt.n_topics) / float(k)


def rbp_resid(
    c: Cache, pairs: Sequence[tuple[int | str, float]] = (), added: np.ndarray | None = None
) -> np.ndarray:
    """rbp_resid (trec_eval 10.0, m_rbp_resid.c): p^n + (1 - p) * sum of p^i over the unjudged ranks i
    (0-based, n retrieved); 0 when every retrieved document is judged. p = 0.9 or ``p=x``; the gain pairs
    rbp takes are accepted and, as m_rbp_resid.c does, unused. ``added`` (bool per topic) marks topics
    scored as one unjudged document, p + (1 - p) (:func:`~deteval.retrieval.trec_values.bogus_topics`)."""
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = float(value)
    rt = c.rt
    # 1, p, p*p, ... as trec_eval's cur_p = cur_p * p makes them (one rounding per step)
    powers = np.concatenate(([1.0], np.cumprod(np.full(int(rt.num_ret.max(initial=0)), p))))
    rows = np.flatnonzero(rt.rel < 0)
    s = np.bincount(rt.row_topic[rows], weights=powers[rt.rank[rows] - 1], minlength=rt.n_topics)
    has = np.bincount(rt.row_topic[rows], minlength=rt.n_topics) > 0
    out = np.where(has, powers[rt.num_ret] + (1 - p) * s, 0.0)
    if added is not None:
        out[added] = p + (1 - p) * 1.0
    return out


def _rbp_one(p: float) -> _Walk:
    def one(rels: list[int], levels: list[tuple[int, float, int]]) -> float:
        gains = [g for _, g, _ in levels]
        # m_rbp.c leaves min and max uninitialised (undefined behaviour); deteval starts them at the
        # first gain, which gives the intended result: gains scaled to [0, 1] when outside it
        lo, hi = (min(gains), max(gains)) if gains else (0.0, 0.0)
        if lo < 0 or hi > 1:
            levels = [(lvl, (g - lo) / (hi - lo), n) for lvl, g, n in levels]
        gain = _gain_of(levels)
        total, cur = 0.0, 1.0
        for rel in rels:
            g = gain(rel)
            if g != 0:
                total += g * cur
            cur = cur * p
        return (1.0 - p) * total

    return one


def rbp(c: Cache, pairs: Sequence[tuple[int | str, float]] = ()) -> np.ndarray:
    """rbp (trec_eval 10.0, m_rbp.c): (1 - p) * sum of gain(i) p^i over the ranking, p = 0.9 or ``p=x``;
    gains as in ndcg (``level=gain``), scaled to [0, 1] when any lies outside."""
    p = 0.9
    levels: list[tuple[int, float]] = []
    for name, value in pairs:
        if name == "p":
            p = float(value)
        elif isinstance(name, int):
            levels.append((name, value))
    return _per_topic(c, levels, _rbp_one(p))
