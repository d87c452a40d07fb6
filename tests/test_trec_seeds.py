"""The numbers printed in the seeds (INLS 509 slides = seed 002, embedding-evaluation tutorial = seed 003)."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.retrieval import evaluate_trec
from deteval.retrieval.lists import (
    average_precision,
    break_even_point,
    dcg_at_k,
    evaluate_lists,
    f_max,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)


def as_dicts(relevant_ranks, n_ranks, n_rel, gains=None):
    """A run of n_ranks documents (descending scores) and qrels with n_rel relevant documents."""
    run = {"t": {f"r{i:02d}": float(n_ranks - i) for i in range(1, n_ranks + 1)}}
    qrels = {"t": {f"r{i:02d}": 1 for i in relevant_ranks}}
    if gains is not None:
        qrels = {"t": {f"r{i:02d}": int(g) for i, g in enumerate(gains, start=1)}}
    for j in range(n_rel - len(qrels["t"])):
        qrels["t"][f"unretrieved{j}"] = 1
    return qrels, run


# seed 002, "precision and recall: exercise": 20 relevant documents, ranks 1..10
PR_TABLE_RELEVANT = [1, 3, 4, 5, 6, 7, 9]
PR_TABLE_P = [1.0, 0.5, 0.67, 0.75, 0.80, 0.83, 0.86, 0.75, 0.78, 0.70]
PR_TABLE_R = [0.05, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.30, 0.35, 0.35]


def test_seed002_precision_recall_at_k_table():
    qrels, run = as_dicts(PR_TABLE_RELEVANT, 10, 20)
    res = evaluate_trec(qrels, run, ["P.1,2,3,4,5,6,7,8,9,10", "recall.1,2,3,4,5,6,7,8,9,10"])
    rel = np.isin(np.arange(1, 11), PR_TABLE_RELEVANT)
    for k in range(1, 11):
        assert round(res.summary[f"P_{k}"], 2) == PR_TABLE_P[k - 1]
        assert round(res.summary[f"recall_{k}"], 2) == PR_TABLE_R[k - 1]
        assert precision_at_k(rel, k) == res.summary[f"P_{k}"]
        assert recall_at_k(rel, k, n_rel=20) == res.summary[f"recall_{k}"]


# seed 002, "average precision" tables: 10 relevant documents in 20 ranks
AP_TABLES = [
    ([1, 3, 4, 5, 6, 7, 9, 11, 14, 20], 0.76),
    (list(range(1, 11)), 1.00),
    (list(range(11, 21)), 0.33),
    ([1, 2, 4, 5, 6, 7, 9, 11, 14, 20], 0.79),  # ranks 2 and 3 swapped
    ([1, 3, 4, 5, 6, 7, 8, 11, 14, 20], 0.77),  # ranks 8 and 9 swapped
]
AP_TABLE_P = [
    1.00,
    0.50,
    0.67,
    0.75,
    0.80,
    0.83,
    0.86,
    0.75,
    0.78,
    0.70,
    0.73,
    0.67,
    0.62,
    0.64,
    0.60,
    0.56,
    0.53,
    0.50,
    0.47,
    0.50,
]
AP_TABLE_R = [
    0.10,
    0.10,
    0.20,
    0.30,
    0.40,
    0.50,
    0.60,
    0.60,
    0.70,
    0.70,
    0.80,
    0.80,
    0.80,
    0.90,
    0.90,
    0.90,
    0.90,
    0.90,
    0.90,
    1.00,
]


@pytest.mark.parametrize("ranks,printed", AP_TABLES)
def test_seed002_average_precision_tables(ranks, printed):
    qrels, run = as_dicts(ranks, 20, 10)
    res = evaluate_trec(qrels, run, ["map"])
    assert round(res.summary["map"], 2) == printed
    rel = np.isin(np.arange(1, 21), ranks)
    assert average_precision(rel) == pytest.approx(res.summary["map"], abs=1e-15)


def test_seed002_first_ap_table_columns():
    qrels, run = as_dicts(AP_TABLES[0][0], 20, 10)
    cuts = ",".join(str(k) for k in range(1, 21))
    res = evaluate_trec(qrels, run, [f"P.{cuts}", f"recall.{cuts}"])
    assert [round(res.summary[f"P_{k}"], 2) for k in range(1, 21)] == AP_TABLE_P
    assert [round(res.summary[f"recall_{k}"], 2) for k in range(1, 21)] == AP_TABLE_R


# seed 002, DCG with the discount log2(max(i, 2)) and gain = REL_i
DCG_CASES = [
    ([4, 3, 4, 2, 0, 0, 0, 1, 1, 0], 11.17),
    ([3, 3, 4, 2, 0, 0, 0, 1, 1, 0], 10.17),
    ([4, 3, 4, 2, 0, 0, 0, 1, 1, 3], 12.08),
]
DCG_COLUMN = [4.00, 7.00, 9.52, 10.52, 10.52, 10.52, 10.52, 10.86, 11.17, 11.17]


@pytest.mark.parametrize("rels,printed", DCG_CASES)
def test_seed002_dcg(rels, printed):
    assert round(dcg_at_k(rels, 10, discount="max2"), 2) == printed
    qrels, run = as_dicts([], 10, 0, gains=rels)
    res = evaluate_trec(qrels, run, ["dcg_cut.10"], discount="max2")
    assert res.summary["dcg_cut_10"] == pytest.approx(dcg_at_k(rels, 10, discount="max2"), abs=1e-13)
    assert any("discount=max2" in w for w in res.warnings)


def test_seed002_dcg_column():
    qrels, run = as_dicts([], 10, 0, gains=DCG_CASES[0][0])
    res = evaluate_trec(qrels, run, ["dcg_cut.1,2,3,4,5,6,7,8,9,10"], discount="max2")
    assert [round(res.summary[f"dcg_cut_{k}"], 2) for k in range(1, 11)] == DCG_COLUMN
    # trec_eval's own discount, log2(rank + 1), gives a different (smaller) number
    assert dcg_at_k(DCG_CASES[0][0], 10) < 11.17 - 1


def test_seed002_ndcg_ideal_example():
    # "a query has two 4's, one 3, and the rest are 0's": the best ranking for i = 3 is 4, 4, 3
    judged = [4, 4, 3, 0, 0]
    assert ndcg_at_k([4, 4, 3], judged, 3) == 1.0
    assert ndcg_at_k([4, 3, 4], judged, 1) == 1.0
    assert ndcg_at_k([4, 3, 4], judged, 3) < 1.0


# seed 003: ground truth and ranked lists, cutoffs 1, 5, 10, with the printed numbers
GROUND_TRUTH = [[11, 1, 7, 17, 21], [4, 16, 1], [26, 10, 22, 8]]
RESULTS = [
    [11, 1, 17, 7, 21, 8, 0, 28, 9, 20],
    [16, 1, 6, 18, 3, 4, 25, 19, 8, 14],
    [24, 10, 26, 2, 8, 28, 4, 23, 13, 21],
]
SEED003 = {
    "recall": [0.6666666666666666, 0.8055555555555555, 0.9166666666666666],
    "recip_rank_cut": [0.6666666666666666, 0.8333333333333334, 0.8333333333333334],
    "P": [0.6666666666666666, 0.6666666666666666, 0.3666666666666667],
    "map_cut": [0.6666666666666666, 0.862962962962963, 0.8074074074074075],
}


def test_seed003_tables():
    res = evaluate_lists(RESULTS, GROUND_TRUTH, (1, 5, 10))
    for family, values in SEED003.items():
        for k, v in zip((1, 5, 10), values):
            assert res.summary[f"{family}_{k}"] == pytest.approx(v, abs=1e-15), (family, k)


def test_seed003_single_list_functions():
    for k, mrr in zip((1, 5, 10), SEED003["recip_rank_cut"]):
        per_query = [reciprocal_rank(np.isin(r, g), k=k) for r, g in zip(RESULTS, GROUND_TRUTH)]
        assert np.mean(per_query) == pytest.approx(mrr, abs=1e-15)
    for k, rec in zip((1, 5, 10), SEED003["recall"]):
        per_query = [
            recall_at_k(np.isin(r, g), k, len(g), denominator="min_k_R")
            for r, g in zip(RESULTS, GROUND_TRUTH)
        ]
        assert np.mean(per_query) == pytest.approx(rec, abs=1e-15)
    for k, m in zip((1, 5, 10), SEED003["map_cut"]):
        per_query = [
            average_precision(np.isin(r, g), k=k, denominator="num_rel_ret")
            for r, g in zip(RESULTS, GROUND_TRUTH)
        ]
        assert np.mean(per_query) == pytest.approx(m, abs=1e-15)


def test_seed003_trec_convention_differs():
    res = evaluate_lists(RESULTS, GROUND_TRUTH, (1, 5, 10), convention="trec")
    # trec_eval's recall@1 divides by R (5, 3 and 4 relevant documents)
    assert res.summary["recall_1"] == pytest.approx((1 / 5 + 1 / 3 + 0) / 3, abs=1e-15)
    assert res.summary["P_10"] == pytest.approx(SEED003["P"][2], abs=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_single_list_functions_equal_evaluate_trec(seed):
    rng = np.random.default_rng(seed)
    rels = rng.integers(0, 4, size=30)
    judged_extra = rng.integers(0, 4, size=10)  # judged, not retrieved
    qrels = {
        "t": {f"r{i:02d}": int(r) for i, r in enumerate(rels)}
        | {f"x{i}": int(r) for i, r in enumerate(judged_extra)}
    }
    run = {"t": {f"r{i:02d}": float(30 - i) for i in range(30)}}
    n_rel = int(np.count_nonzero(rels >= 1) + np.count_nonzero(judged_extra >= 1))
    judged = np.concatenate((rels, judged_extra))
    res = evaluate_trec(
        qrels, run, ["P.5,10", "recall.5,10", "map", "map_cut.10", "recip_rank", "ndcg", "ndcg_cut.5,10"]
    )
    s = res.summary
    assert precision_at_k(rels, 10) == pytest.approx(s["P_10"], abs=1e-15)
    assert recall_at_k(rels, 5, n_rel) == pytest.approx(s["recall_5"], abs=1e-15)
    assert average_precision(rels, n_rel) == pytest.approx(s["map"], abs=1e-15)
    assert average_precision(rels, n_rel, k=10) == pytest.approx(s["map_cut_10"], abs=1e-15)
    assert reciprocal_rank(rels) == pytest.approx(s["recip_rank"], abs=1e-15)
    assert ndcg_at_k(rels, judged) == pytest.approx(s["ndcg"], abs=1e-14)
    assert ndcg_at_k(rels, judged, 5) == pytest.approx(s["ndcg_cut_5"], abs=1e-14)


# seed 000 (FMP notebook C7S3): document-level retrieval, values as libfmp's compute_prf_metrics returns them
# (shared/fixtures/fmp/fmp_expected.json, cases nb_toy_K10 and nb_exercise_7_12_K8)
FMP_CASES = [
    (
        [8, 52, 22, 10, 12, 34, 11, 27, 72, 18],
        [2, 7, 8, 9],
        {"BEP": 0.75, "F_max": 0.75, "AP": 0.8125},
        [1.0, 1.0, 0.6666666666666666, 0.75, 0.6, 0.5, 0.42857142857142855, 0.5, 0.4444444444444444, 0.4],
        [0.25, 0.5, 0.5, 0.75, 0.75, 0.75, 0.75, 1.0, 1.0, 1.0],
        [
            0.4,
            0.6666666666666666,
            0.5714285714285715,
            0.75,
            0.6666666666666665,
            0.6,
            0.5454545454545454,
            0.6666666666666666,
            0.6153846153846153,
            0.5714285714285715,
        ],
    ),
    (
        [0.7, 2.6, 3.6, 3.5, 3.2, 3.7, 1.5, 3.1],
        [2, 3, 4, 8],
        {"BEP": 0.5, "F_max": 0.8, "AP": 0.6083333333333333},
        [0.0, 0.5, 0.6666666666666666, 0.5, 0.6, 0.6666666666666666, 0.5714285714285714, 0.5],
        [0.0, 0.25, 0.5, 0.5, 0.75, 1.0, 1.0, 1.0],
        [
            0.0,
            0.3333333333333333,
            0.5714285714285715,
            0.5,
            0.6666666666666665,
            0.8,
            0.7272727272727273,
            0.6666666666666666,
        ],
    ),
]


@pytest.mark.parametrize("scores,relevant,expected,P,R,F", FMP_CASES)
def test_seed000_document_retrieval(scores, relevant, expected, P, R, F):
    K = len(scores)
    run = {"Q": {str(i + 1): float(s) for i, s in enumerate(scores)}}
    qrels = {"Q": {str(i): 1 for i in relevant}}
    cuts = ",".join(str(k) for k in range(1, K + 1))
    res = evaluate_trec(qrels, run, ["Rprec", "Fmax", "map", f"P.{cuts}", f"recall.{cuts}", f"F.{cuts}"])
    s = res.summary
    assert s["Rprec"] == expected["BEP"]
    assert s["Fmax"] == pytest.approx(expected["F_max"], abs=1e-15)
    assert s["map"] == pytest.approx(expected["AP"], abs=1e-15)
    for k in range(1, K + 1):
        assert s[f"P_{k}"] == pytest.approx(P[k - 1], abs=1e-15)
        assert s[f"recall_{k}"] == pytest.approx(R[k - 1], abs=1e-15)
        assert s[f"F_{k}"] == pytest.approx(F[k - 1], abs=1e-15)
    # the same numbers from the single-list functions on the core's Ranking
    order = np.argsort(-np.asarray(scores), kind="stable")
    rel = np.isin(order + 1, relevant)
    assert break_even_point(rel) == expected["BEP"]
    assert f_max(rel) == pytest.approx(expected["F_max"], abs=1e-15)
    assert average_precision(rel) == pytest.approx(expected["AP"], abs=1e-15)


def test_docstring_examples():
    import doctest

    import deteval.retrieval.lists as lists_mod
    import deteval.retrieval.trec as trec_mod

    for mod in (lists_mod, trec_mod):
        failed, attempted = doctest.testmod(mod, raise_on_error=False)
        assert attempted > 0 and failed == 0, mod.__name__
