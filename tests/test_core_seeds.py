"""Every ranked-retrieval number printed by the seed texts, recomputed through the core.

* seed 000: FMP notebook C7 "Evaluation Measures" (Müller & Zalkow): the K=10 toy example and Exercise 7.12.
* seed 002: J. Arguello, INLS 509 "Evaluation Metrics" slides: the P@K / R@K tables and their APs
  (the DCG slides belong to the TREC measures and are tested there).
* seed 003: an embedding-model tutorial: recall@k, MRR@k, precision@k and MAP@k over three queries (its
  nDCG numbers come from ``sklearn.metrics.ndcg_score`` called with the document ids as scores, so they do not
  measure the ranking; nDCG belongs to the TREC measures anyway).
* seed 004: "Precision and Recall" blog post: the 5-item ranking's P@k and R@k.
* tests/data/fmp/fmp_expected.json: outputs of libfmp's ``compute_prf_metrics`` (libfmp v1.3.0, MIT,
  Meinard Müller and Frank Zalkow; see tests/data/fmp/LICENSE.libfmp.txt).

Printed numbers are compared as the seed printed them (same rounding), and the exact values are asserted
as well wherever the text states them.
"""

import json
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from deteval.core import (
    average_precision,
    precision_at_k,
    rank,
    recall_at_k,
    summarize_ranking,
)
from deteval.core.cutoff import average_precision_at_k, reciprocal_rank
from deteval.core.summary import relevant_in_top

FMP_FIXTURE = Path(__file__).parent / "data" / "fmp" / "fmp_expected.json"


def pct2(x: float) -> str:
    """Python's ``'%.2f'`` (round half to even on the binary value), as pandas printed FMP's tables."""
    return f"{x:.2f}"


def sheet2(x: float) -> str:
    """Round half up to two decimals, as the slides' spreadsheet did (10/16 = 0.625 is shown 0.63)."""
    return str(Decimal(x).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def ranks_of_items(order: np.ndarray) -> np.ndarray:
    """rho^-1: the rank (1-based) of every input item."""
    out = np.empty(order.shape[0], dtype=np.int64)
    out[order] = np.arange(1, order.shape[0] + 1)
    return out


# --- seed 000: FMP C7 -------------------------------------------------------------------------------------

TOY_IDS = np.arange(1, 11)
TOY_SCORES = [8, 52, 22, 10, 12, 34, 11, 27, 72, 18]
TOY_RELEVANT_IDS = [2, 7, 8, 9]


def toy_ranking():
    return rank(TOY_SCORES, np.isin(TOY_IDS, TOY_RELEVANT_IDS))


def test_seed000_toy_rank_tables():
    r = toy_ranking()
    # First table: the rank of each document 1..10.
    assert ranks_of_items(r.order).tolist() == [10, 2, 5, 9, 7, 3, 8, 4, 1, 6]
    # Second table: rank, ID, relevance, P(r), R(r) printed with %.2f.
    assert (TOY_IDS[r.order]).tolist() == [9, 2, 6, 8, 3, 10, 5, 7, 4, 1]
    assert r.relevant.tolist() == [True, True, False, True, False, False, False, True, False, False]
    s = summarize_ranking(r)
    assert [pct2(p) for p in s.precision] == [
        "1.00",
        "1.00",
        "0.67",
        "0.75",
        "0.60",
        "0.50",
        "0.43",
        "0.50",
        "0.44",
        "0.40",
    ]
    assert [pct2(x) for x in s.recall] == [
        "0.25",
        "0.50",
        "0.50",
        "0.75",
        "0.75",
        "0.75",
        "0.75",
        "1.00",
        "1.00",
        "1.00",
    ]
    # "the relevant items occur at the rank positions r in {1, 2, 4, 8}" and P(3) = 2/3, R(3) = 2/4.
    assert (np.flatnonzero(r.relevant) + 1).tolist() == [1, 2, 4, 8]
    assert s.precision[2] == 2 / 3 and s.recall[2] == 2 / 4


def test_seed000_toy_break_even_f_max_and_ap():
    s = summarize_ranking(toy_ranking())
    # "Break-even point = 0.75", "F_Q = [0.4 0.67 0.57 0.75 0.67 0.6 0.55 0.67 0.62 0.57]", "F_max = 0.75"
    assert s.break_even_point == 0.75
    assert np.round(s.f, 2).tolist() == [0.4, 0.67, 0.57, 0.75, 0.67, 0.6, 0.55, 0.67, 0.62, 0.57]
    assert s.f_max == 0.75
    # "Average precision = 0.8125" = (1 + 1 + 0.75 + 0.5) / 4
    assert s.average_precision == 0.8125
    assert average_precision(toy_ranking(), "uninterpolated") == 0.8125


def test_seed000_swapped_ranks_8_and_9():
    # "interchanging chi(8) and chi(9) ... leaves the break-even point and the maximal F-measure unchanged,
    # whereas the average precision decreases to (1 + 1 + 0.75 + 0.44)/4 = 0.7975".
    relevant = toy_ranking().relevant.copy()
    relevant[[7, 8]] = relevant[[8, 7]]
    s = summarize_ranking(rank(None, relevant, ties="presorted"))
    assert s.break_even_point == 0.75 and s.f_max == 0.75
    assert s.average_precision == pytest.approx((1 + 1 + 0.75 + 4 / 9) / 4, abs=1e-15)
    # The text's 0.7975 uses P(9) = 4/9 rounded to 0.44; the exact AP is 0.798611...
    p9 = float(pct2(s.precision[8]))
    assert p9 == 0.44 and (1 + 1 + 0.75 + p9) / 4 == pytest.approx(0.7975, abs=1e-15)
    assert pct2(s.average_precision) == "0.80"


def test_seed000_exercise_7_12():
    ids = np.arange(1, 9)
    scores = [0.7, 2.6, 3.6, 3.5, 3.2, 3.7, 1.5, 3.1]
    r = rank(scores, np.isin(ids, [2, 3, 4, 8]))
    s = summarize_ranking(r)
    assert ids[r.order].tolist() == [6, 3, 4, 5, 8, 2, 7, 1]
    assert [pct2(x) for x in r.scores] == ["3.70", "3.60", "3.50", "3.20", "3.10", "2.60", "1.50", "0.70"]
    assert r.relevant.tolist() == [False, True, True, False, True, True, False, False]
    assert [pct2(x) for x in s.precision] == ["0.00", "0.50", "0.67", "0.50", "0.60", "0.67", "0.57", "0.50"]
    assert [pct2(x) for x in s.recall] == ["0.00", "0.25", "0.50", "0.50", "0.75", "1.00", "1.00", "1.00"]
    assert [pct2(x) for x in s.f] == ["0.00", "0.33", "0.57", "0.50", "0.67", "0.80", "0.73", "0.67"]
    # "Break-even point = 0.50", "F_max = 0.80", "Average precision = 0.60833" (np.round(P_average, 5))
    assert s.break_even_point == 0.5
    assert s.f_max == pytest.approx(0.8, abs=1e-15)
    assert np.round(s.average_precision, 5) == 0.60833
    assert s.average_precision == pytest.approx((1 / 2 + 2 / 3 + 3 / 5 + 4 / 6) / 4, abs=1e-15)


# --- tests/data/fmp/fmp_expected.json: libfmp compute_prf_metrics ------------------------------------------


def _fmp_ranking_cases():
    cases = json.loads(FMP_FIXTURE.read_text(encoding="utf-8"))["cases"]
    return [c for c in cases if c["func"] == "compute_prf_metrics"]


def _check_against_libfmp(case, r):
    exp = case["expected"]
    ids = np.asarray(case["I"])
    s = summarize_ranking(r)
    assert ids[r.order].tolist() == exp["I_sorted"]
    assert ranks_of_items(r.order).tolist() == exp["rank"]
    assert r.relevant.tolist() == exp["X_Q"]
    # Same divisions as libfmp (cumsum / r, cumsum / M, 2PR / (P + R)): equal bit for bit.
    assert s.precision.tolist() == exp["P_Q"]
    assert s.recall.tolist() == exp["R_Q"]
    assert s.f.tolist() == exp["F_Q"]
    assert s.break_even_point == exp["BEP"]
    assert s.f_max == exp["F_max"]
    assert s.average_precision == pytest.approx(exp["P_average"], abs=1e-15)


def test_fmp_fixture_has_the_four_ranking_cases():
    names = [c["name"] for c in _fmp_ranking_cases()]
    assert names == ["nb_toy_K10", "nb_exercise_7_12_K8", "edge_tie_two_items", "edge_no_rel_in_top_M"]


@pytest.mark.parametrize(
    "case", [c for c in _fmp_ranking_cases() if c["name"] != "edge_tie_two_items"], ids=lambda c: c["name"]
)
def test_fmp_fixture_ranking_cases(case):
    ids = np.asarray(case["I"])
    _check_against_libfmp(case, rank(case["score"], np.isin(ids, case["I_Q"])))


def test_fmp_fixture_tie_follows_the_text_not_libfmp():
    # Items 1 and 2 tie at 5.0. The notebook text: on equal scores the lower identifier ranks higher, so
    # item 1 (the relevant one) is first. libfmp's flipped argsort puts item 2 first; the fixture records that.
    case = next(c for c in _fmp_ranking_cases() if c["name"] == "edge_tie_two_items")
    ids = np.asarray(case["I"])
    outcomes = np.isin(ids, case["I_Q"])
    r = rank(case["score"], outcomes)
    s = summarize_ranking(r)
    assert ids[r.order].tolist() == [1, 2, 3]
    assert s.precision.tolist() == [1.0, 0.5, 1 / 3]
    assert s.recall.tolist() == [1.0, 1.0, 1.0]
    assert s.f.tolist() == [1.0, 2 / 3, 0.5]
    assert (s.break_even_point, s.f_max, s.average_precision) == (1.0, 1.0, 1.0)
    # The recorded libfmp output is exactly what the opposite tie order (higher identifier first) gives.
    _check_against_libfmp(case, rank(case["score"], outcomes, tiebreak=-ids))


# --- seed 002: INLS 509 slides ---------------------------------------------------------------------------


def test_seed002_pk_rk_exercise_with_20_relevant():
    # "Assume 20 relevant documents": K, P@K = (a/K), R@K = (a/20) for K = 1..10.
    relevant = [1, 0, 1, 1, 1, 1, 1, 0, 1, 0]
    r = rank(None, relevant, n_pos=20, ties="presorted")
    hits = [1, 1, 2, 3, 4, 5, 6, 6, 7, 7]
    printed_p = ["1.0", "0.5", "0.67", "0.75", "0.80", "0.83", "0.86", "0.75", "0.78", "0.70"]
    printed_r = ["0.05", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30", "0.30", "0.35", "0.35"]
    for k in range(1, 11):
        assert relevant_in_top(r, k) == hits[k - 1]
        assert precision_at_k(r, k) == float(Fraction(hits[k - 1], k))
        assert recall_at_k(r, k) == float(Fraction(hits[k - 1], 20))
        assert sheet2(precision_at_k(r, k)) == f"{float(printed_p[k - 1]):.2f}"
        assert sheet2(recall_at_k(r, k)) == printed_r[k - 1]


# Relevant ranks (1-based) of each 20-rank table (10 relevant documents), its printed R@K and P@K columns and
# its printed AP. "A" appears three times on the slides with the same numbers.
SEED002_TABLES = {
    "A": (
        [1, 3, 4, 5, 6, 7, 9, 11, 14, 20],
        "0.10 0.10 0.20 0.30 0.40 0.50 0.60 0.60 0.70 0.70 0.80 0.80 0.80 0.90 0.90 0.90 0.90 0.90 0.90 1.00",
        "1.00 0.50 0.67 0.75 0.80 0.83 0.86 0.75 0.78 0.70 0.73 0.67 0.62 0.64 0.60 0.56 0.53 0.50 0.47 0.50",
        "0.76",
    ),
    "perfect": (
        list(range(1, 11)),
        "0.10 0.20 0.30 0.40 0.50 0.60 0.70 0.80 0.90 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00",
        "1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 0.91 0.83 0.77 0.71 0.67 0.63 0.59 0.56 0.53 0.50",
        "1.00",
    ),
    "worst": (
        list(range(11, 21)),
        "0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.10 0.20 0.30 0.40 0.50 0.60 0.70 0.80 0.90 1.00",
        "0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.09 0.17 0.23 0.29 0.33 0.38 0.41 0.44 0.47 0.50",
        "0.33",
    ),
    "A swapped ranks 2 and 3": (
        [1, 2, 4, 5, 6, 7, 9, 11, 14, 20],
        "0.10 0.20 0.20 0.30 0.40 0.50 0.60 0.60 0.70 0.70 0.80 0.80 0.80 0.90 0.90 0.90 0.90 0.90 0.90 1.00",
        "1.00 1.00 0.67 0.75 0.80 0.83 0.86 0.75 0.78 0.70 0.73 0.67 0.62 0.64 0.60 0.56 0.53 0.50 0.47 0.50",
        "0.79",
    ),
    "A swapped ranks 8 and 9": (
        [1, 3, 4, 5, 6, 7, 8, 11, 14, 20],
        "0.10 0.10 0.20 0.30 0.40 0.50 0.60 0.70 0.70 0.70 0.80 0.80 0.80 0.90 0.90 0.90 0.90 0.90 0.90 1.00",
        "1.00 0.50 0.67 0.75 0.80 0.83 0.86 0.88 0.78 0.70 0.73 0.67 0.62 0.64 0.60 0.56 0.53 0.50 0.47 0.50",
        "0.77",
    ),
}


@pytest.mark.parametrize("name", list(SEED002_TABLES))
def test_seed002_average_precision_tables(name):
    relevant_ranks, printed_r, printed_p, printed_ap = SEED002_TABLES[name]
    relevant = np.isin(np.arange(1, 21), relevant_ranks)
    r = rank(None, relevant, n_pos=10, ties="presorted")
    assert [sheet2(recall_at_k(r, k)) for k in range(1, 21)] == printed_r.split()
    assert [sheet2(precision_at_k(r, k)) for k in range(1, 21)] == printed_p.split()
    assert int(r.tp[-1]) == 10  # the "total 10.00" row: relevant documents in the ranking
    ap = average_precision(r, "uninterpolated")
    exact = sum(Fraction(i + 1, k) for i, k in enumerate(relevant_ranks)) / 10
    assert ap == pytest.approx(float(exact), abs=1e-15)
    assert sheet2(ap) == printed_ap
    # AP is the mean of P@K at the relevant ranks, the slides' recipe.
    assert ap == pytest.approx(np.mean([precision_at_k(r, k) for k in relevant_ranks]), abs=1e-15)


# --- seed 003: recall@k, MRR@k, precision@k, MAP@k over three queries ---------------------------------------

SEED003_TRUTH = [[11, 1, 7, 17, 21], [4, 16, 1], [26, 10, 22, 8]]
SEED003_RESULTS = [
    [11, 1, 17, 7, 21, 8, 0, 28, 9, 20],
    [16, 1, 6, 18, 3, 4, 25, 19, 8, 14],
    [24, 10, 26, 2, 8, 28, 4, 23, 13, 21],
]
CUTOFFS = [1, 5, 10]


def seed003_rankings():
    return [
        rank(None, np.isin(results, truth), n_pos=len(truth), ties="presorted")
        for results, truth in zip(SEED003_RESULTS, SEED003_TRUTH)
    ]


def recall_at_k_min(r, k: int) -> float:
    """Seed 003's recall@k: |relevant in top k| / max(min(k, n_pos), 1)."""
    return relevant_in_top(r, k) / max(min(k, r.n_pos), 1)


def mean_over_queries(measure, k):
    # Accumulated query by query and divided once, as the seed does, so the printed digits match exactly.
    total = 0.0
    for r in seed003_rankings():
        total += measure(r, k)
    return total / len(SEED003_RESULTS)


@pytest.mark.parametrize(
    "label, measure, printed",
    [
        ("recall", recall_at_k_min, [0.6666666666666666, 0.8055555555555555, 0.9166666666666666]),
        ("MRR", reciprocal_rank, [0.6666666666666666, 0.8333333333333334, 0.8333333333333334]),
        ("precision", precision_at_k, [0.6666666666666666, 0.6666666666666666, 0.3666666666666667]),
        (
            "MAP",
            lambda r, k: average_precision_at_k(r, k, denominator="retrieved"),
            [0.6666666666666666, 0.862962962962963, 0.8074074074074075],
        ),
    ],
)
def test_seed003_printed_values(label, measure, printed):
    assert [mean_over_queries(measure, k) for k in CUTOFFS] == printed, label


def test_seed003_recall_and_map_differ_from_the_trec_conventions():
    # The seed's recall divides by min(k, n_pos) and its MAP@k by the relevant retrieved in the top k; with
    # the trec_eval denominators (n_pos) the same rankings score lower.
    assert mean_over_queries(recall_at_k, 1) == pytest.approx((1 / 5 + 1 / 3 + 0) / 3, abs=1e-15)
    assert mean_over_queries(lambda r, k: average_precision_at_k(r, k), 5) == pytest.approx(
        (5 / 5 + 2 / 3 + (1 / 2 + 2 / 3 + 3 / 5) / 4) / 3, abs=1e-15
    )


# --- seed 004: 5 retrieved, 3 relevant ---------------------------------------------------------------------


def test_seed004_precision_and_recall_at_k():
    r = rank(None, [1, 0, 1, 0, 1], n_pos=3, ties="presorted")
    assert [precision_at_k(r, k) for k in range(1, 6)] == [1 / 1, 1 / 2, 2 / 3, 2 / 4, 3 / 5]
    assert [recall_at_k(r, k) for k in range(1, 6)] == [1 / 3, 1 / 3, 2 / 3, 2 / 3, 3 / 3]
    # The same numbers are the per-rank curves of the ranking.
    assert r.precision().tolist() == [1 / 1, 1 / 2, 2 / 3, 2 / 4, 3 / 5]
    assert r.recall().tolist() == [1 / 3, 1 / 3, 2 / 3, 2 / 3, 3 / 3]
