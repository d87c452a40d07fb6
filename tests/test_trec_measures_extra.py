"""trec_eval measures beyond the common set (issue 20 item 2): pytrec_eval (trec_eval 9.0.x) per topic on
random runs where it takes the measure, constructed cases with values derived from the m_*.c source
where it does not (pytrec_eval aborts on gain maps and rejects utility coefficients)."""

from __future__ import annotations

import math

import pytest
from test_trec_vs_pytrec_eval import assert_same, random_case

from deteval.errors import ConfigError
from deteval.retrieval import evaluate_trec

pytrec_eval = pytest.importorskip("pytrec_eval")

EXTRA = [
    "Rprec_mult",
    "Rprec_mult.5.0,0.2,0.35",
    "utility",
    "binG",
    "G",
    "ndcg_rel",
    "Rndcg",
    "set_F",
    "ndcg_cut.10,20,23.4",
    "success.2,5,20",
    "iprec_at_recall.0.10,0.20",
]


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("level", [1, 2])
def test_extra_measures_match_pytrec_eval(seed: int, level: int) -> None:
    qrels, run = random_case(seed)
    for spec in EXTRA:
        ref = pytrec_eval.RelevanceEvaluator(qrels, {spec}, relevance_level=level).evaluate(run)
        got = evaluate_trec(qrels, run, [spec], relevance_level=level, per_query=True).per_class
        assert_same(ref, got)


def test_set_f_beta_matches_pytrec_eval() -> None:
    qrels, run = random_case(4)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"set_F.0.5"}).evaluate(run)
    got = evaluate_trec(qrels, run, ["set_F.0.5"], per_query=True).per_class
    # trec_eval prints a single-valued measure with explicit parameters as name_<parameters>
    # (test/out.test.meas_params); pytrec_eval keys it by the bare name
    assert_same(ref, {t: {"set_F": row["set_F_0.5"]} for t, row in got.items()})
    # x = 0.5 weighs precision more: (1.5 P R) / (0.5 P + R)
    q = {"q": {"a": 1, "b": 1, "c": 1, "d": 1}}
    r = {"q": {"a": 2.0, "x": 1.0}}  # P = 1/2, R = 1/4
    assert evaluate_trec(q, r, ["set_F.0.5"]).summary["set_F_0.5"] == 1.5 * 0.5 * 0.25 / (0.5 * 0.5 + 0.25)


def test_utility_coefficients() -> None:
    # 2 relevant of 5 retrieved, R = 3: a=2, b=3, c=1, d = 0 + 2 - 5 - 3 = -6 (no -N): 2*2 - 3 + 0 + 0
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1}}
    run = {"q": {"r1": 5.0, "n1": 4.0, "r2": 3.0, "n2": 2.0, "n3": 1.0}}
    assert evaluate_trec(qrels, run, ["utility.2,-1,0,0"]).summary == {"utility_2,-1,0,0": 1.0}
    got = evaluate_trec(qrels, run, ["utility.1,-1,-0.5,0.25"]).summary
    assert got == {"utility_1,-1,-0.5,0.25": 2 - 3 - 0.5 - 1.5}
    assert evaluate_trec(qrels, run, ["utility"]).summary == {"utility": 2 - 3}
    with pytest.raises(ConfigError, match="takes 4 number"):
        evaluate_trec(qrels, run, ["utility.1,2"])


def test_ndcg_gain_map() -> None:
    # gains 1 -> 3, 2 -> 9, 4 -> 4.5 (level 3 keeps 3); relevant at ranks 1 (level 1) and 2 (level 2),
    # one level-4 document unretrieved. Ideal order by gain: 9, 4.5, 3.
    qrels = {"q": {"a": 1, "b": 2, "c": 4, "n": 0}}
    run = {"q": {"a": 3.0, "b": 2.0, "n": 1.0}}
    dcg = 3 / math.log2(2) + 9 / math.log2(3)
    ideal = 9 / math.log2(2) + 4.5 / math.log2(3) + 3 / math.log2(4)
    got = evaluate_trec(qrels, run, ["ndcg.1=3,2=9,4=4.5"]).summary["ndcg_1=3,2=9,4=4.5"]
    assert got == pytest.approx(dcg / ideal, abs=1e-15)
    # without the map: gain = level, as pytrec_eval
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}).evaluate(run)["q"]["ndcg"]
    assert evaluate_trec(qrels, run, ["ndcg"]).summary["ndcg"] == ref
    # the per-topic loop with the identity map equals the vectorised default
    same = evaluate_trec(qrels, run, ["ndcg.1=1,2=2,4=4"]).summary["ndcg_1=1,2=2,4=4"]
    assert same == pytest.approx(ref, abs=1e-15)


@pytest.mark.parametrize("bad", ["ndcg.1=x", "ndcg.=3", "ndcg.a=1", "set_F.1,2", "Rprec_mult.0", "P.x"])
def test_bad_parameters_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError):
        evaluate_trec({"q": {"a": 1}}, {"q": {"a": 1.0}}, [bad])


@pytest.mark.parametrize("seed", range(12))
def test_inf_ap_matches_pytrec_eval(seed: int) -> None:
    # random_case has negative relevance (in the pool, unjudged) on odd seeds: infAP's sample estimate
    qrels, run = random_case(seed)
    for level in (1, 2):
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"infAP"}, relevance_level=level).evaluate(run)
        assert_same(
            ref, evaluate_trec(qrels, run, ["infAP"], relevance_level=level, per_query=True).per_class
        )


def test_inf_ap_constructed() -> None:
    # ranks: a (rel), x (not in pool: skipped), b (nonrel), c (unjudged), d (rel, level 12)
    qrels = {"q": {"a": 1, "b": 0, "c": -1, "d": 12}}
    run = {"q": {"a": 5.0, "x": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    e = 1e-5
    j = 4.0  # d at 0-based rank 4: r-1 = 1 relevant, n = 1 nonrel, u = 1 unjudged before it
    second = 1 / (j + 1) + (j / (j + 1)) * (3 / j) * ((1 + e) / (1 + 1 + 2 * e))
    assert evaluate_trec(qrels, run, ["infAP"]).summary["infAP"] == (1.0 + second) / 2


def test_relstring_is_printed_per_topic_only() -> None:
    from deteval.retrieval import format_trec

    qrels = {"q": {"a": 1, "b": 0, "c": -1, "d": 12}}
    run = {"q": {"a": 5.0, "x": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    res = evaluate_trec(qrels, run, ["relstring", "map"], per_query=True)
    assert "relstring" not in res.summary and res.per_class["q"]["relstring"] == "1-0.>"
    assert "relstring             \tq\t'1-0.>'" in format_trec(res, per_query=True)
    assert evaluate_trec(qrels, run, ["relstring.3"], per_query=True).per_class["q"]["relstring_3"] == "1-0"


def ten(measures: list[str], qrels: dict, run: dict) -> dict:
    return evaluate_trec(qrels, run, measures, version="10.0").summary


RBP_QRELS = {"q": {"a": 2, "b": 0, "c": 1, "u": -1}}
RBP_RUN = {"q": {"a": 6.0, "x": 5.0, "b": 4.0, "c": 3.0, "u": 2.0, "y": 1.0}}  # a x b c u y


def test_rbp_and_rbp_resid_constructed() -> None:
    # gains 0, 1, 2 -> scaled to [0, 1]: a = 1, c = 0.5; p^i made by repeated multiplication
    p = 0.9
    pw = [1.0]
    for _ in range(6):
        pw.append(pw[-1] * p)
    assert ten(["rbp"], RBP_QRELS, RBP_RUN) == {"rbp": (1 - p) * (1.0 * pw[0] + 0.5 * pw[3])}
    q = 0.5
    pq = [1.0, q, q * q, q * q * q]
    assert ten(["rbp.p=0.5"], RBP_QRELS, RBP_RUN) == {"rbp_p=0.5": (1 - q) * (1.0 * pq[0] + 0.5 * pq[3])}
    # unjudged ranks (x: not in the pool, u: in the pool unjudged, y): 1, 4, 5 (0-based); six retrieved
    assert ten(["rbp_resid"], RBP_QRELS, RBP_RUN) == {"rbp_resid": pw[6] + (1 - p) * (pw[1] + pw[4] + pw[5])}
    judged = {"q": {"a": 6.0, "b": 4.0, "c": 3.0}}
    assert ten(["rbp_resid"], RBP_QRELS, judged) == {"rbp_resid": 0.0}


def test_unj_constructed() -> None:
    # unjudged at ranks 2, 5, 6 (1-based); a cutoff beyond the list counts judged documents after it
    got = ten(["unj.1,2,5,10"], RBP_QRELS, RBP_RUN)
    assert got == {"unj_1": 0.0, "unj_2": 0.5, "unj_5": 2 / 5, "unj_10": 3 / 10}
    assert list(ten(["unj"], RBP_QRELS, RBP_RUN)) == ["unj_5", "unj_10", "unj_20"]


def test_10_0_measures_are_refused_under_9_0_8() -> None:
    for name in ("rbp", "rbp_resid", "unj"):
        with pytest.raises(ConfigError, match=r"trec_eval 10\.0 measure"):
            evaluate_trec(RBP_QRELS, RBP_RUN, [name])
    names = list(evaluate_trec(RBP_QRELS, RBP_RUN, ["all_trec"], version="10.0").summary)
    assert {"unj_5", "rbp", "rbp_resid"} <= set(names)
    assert not {"unj_5", "rbp", "rbp_resid"} & set(evaluate_trec(RBP_QRELS, RBP_RUN, ["all_trec"]).summary)


ALL_9 = [
    "map", "P.1,2,3,5,10,20", "recall.5,10", "ndcg", "ndcg_cut.5,10", "bpref", "Rprec", "recip_rank",
    "infAP", "num_ret", "num_rel_ret", "iprec_at_recall", "G", "binG", "Rndcg", "ndcg_rel", "success.1,5",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(8))
def test_judged_only_matches_pytrec_eval(seed: int) -> None:
    qrels, run = random_case(seed)
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(ALL_9), judged_docs_only_flag=True).evaluate(run)
    got = evaluate_trec(qrels, run, ALL_9, judged_only=True, per_query=True).per_class
    assert_same(ref, got)
    plain = evaluate_trec(qrels, run, ["num_ret"]).summary["num_ret"]
    assert sum(row["num_ret"] for row in got.values()) < plain  # not vacuous: documents were dropped


def test_num_docs_feeds_utility() -> None:
    # a = 2, b = 3, c = 1, d = N + a - retrieved - R = 100 + 2 - 5 - 3 = 94
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1}}
    run = {"q": {"r1": 5.0, "n1": 4.0, "r2": 3.0, "n2": 2.0, "n3": 1.0}}
    got = evaluate_trec(qrels, run, ["utility.1,-1,-1,0.5"], num_docs=100).summary["utility_1,-1,-1,0.5"]
    assert got == 2 - 3 - 1 + 0.5 * 94


def test_nothing_judged_left_gives_trec_eval_nan() -> None:
    # -J removes the only retrieved document: trec_eval's precision 0/0 reaches the levels with cutoff 0
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"x": 1.0}}
    res = evaluate_trec(qrels, run, ["iprec_at_recall.0,0.5", "11pt_avg", "map"], judged_only=True)
    assert math.isnan(res.summary["iprec_at_recall_0.00"]) and math.isnan(res.summary["11pt_avg"])
    assert res.summary["iprec_at_recall_0.50"] == 0.0 and res.summary["map"] == 0.0  # (long)(1.5+0.9) = 2
    assert "iprec_at_recall_0.00  \tall\t  -nan" in res.lines
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}, judged_docs_only_flag=True).evaluate(run)
    assert math.isnan(ref["q"]["iprec_at_recall_0.00"]) and ref["q"]["iprec_at_recall_0.50"] == 0.0


@pytest.mark.parametrize("seed", range(3))
def test_extra_measures_on_full_precision_sigmoid_scores(seed: int) -> None:
    # reranker-like scores near 1.0, printed with full precision: float32 ties decide the ranking (9.0.8)
    from test_trec_versions import sigmoid_run

    qrels, run = sigmoid_run(seed, n_topics=8)
    for spec in [*EXTRA, "infAP"]:
        ref = pytrec_eval.RelevanceEvaluator(qrels, {spec}).evaluate(run)
        assert_same(ref, evaluate_trec(qrels, run, [spec], per_query=True).per_class)


def test_gain_family_with_a_huge_relevance_value_stays_small() -> None:
    # trec_eval would allocate one counter per level up to the largest relevance (here 10**15); deteval
    # keeps the levels that occur, with the same values (empty levels change nothing)
    qrels = {"q": {"a": 10**15, "b": 1, "c": 0}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    res = evaluate_trec(qrels, run, ["G", "ndcg_rel", "Rndcg", "rbp"], version="10.0")
    assert res.summary["Rndcg"] == 1.0 and res.summary["ndcg_rel"] == 1.0  # the ideal order
    small = evaluate_trec({"q": {"a": 5, "b": 1, "c": 0}}, run, ["ndcg_rel"]).summary
    assert small == {"ndcg_rel": 1.0}
    assert 0.0 < res.summary["rbp"] < 1.0 and res.summary["G"] > 0.0
