"""``all`` values and ``-q`` lines as trec_eval makes them (issue 20 item 3), and the recall-level rule
that differs between trec_eval 9.0.8 and 10.0 (item 1). Each expected value is derived from trec_eval's
source (meas_avg.c, m_set_map.c, m_11pt_avg.c, m_iprec_at_recall.c) or checked against pytrec_eval."""

from __future__ import annotations

import numpy as np
import pytest
from test_trec_vs_pytrec_eval import random_case

from deteval.retrieval import evaluate_trec, format_trec
from deteval.retrieval.trec_output import aggregate
from deteval.retrieval.versions import recall_cutoff

pytrec_eval = pytest.importorskip("pytrec_eval")


def c_sum(values) -> float:
    total = 0.0
    for v in values:
        total += v  # trec_eval's accumulation: one topic at a time, in topic order
    return total


def test_the_mean_is_a_sequential_sum_in_topic_order() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        vals = rng.random(int(rng.integers(8, 40)))
        assert aggregate(vals, "mean") == c_sum(vals.tolist()) / vals.shape[0]
    # not vacuous: numpy's pairwise sum differs from the sequential one on such data
    diffs = sum(float(np.sum(v)) != c_sum(v.tolist()) for v in (rng.random(33) for _ in range(200)))
    assert diffs > 0


def test_all_values_equal_trec_eval_accumulation_on_random_runs() -> None:
    for seed in range(6):
        qrels, run = random_case(seed, n_topics=30)
        res = evaluate_trec(qrels, run, ["map", "P.10", "ndcg", "gm_map"], per_query=True)
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_10", "ndcg", "gm_map"}).evaluate(run)
        topics = sorted(ref, key=str.encode)  # trec_eval's topic order: strcmp
        for name in ("map", "P_10", "ndcg"):
            assert res.summary[name] == c_sum([ref[t][name] for t in topics]) / len(topics)
        assert res.summary["gm_map"] == np.exp(c_sum([ref[t]["gm_map"] for t in topics]) / len(topics))


def test_counts_are_summed_and_printed_as_integers() -> None:
    qrels = {"a": {"d1": 1, "d2": 0, "d3": 0}, "b": {"d1": 0, "d4": 2}}
    run = {"a": {"d1": 3.0, "d2": 2.0, "d3": 1.0, "x": 0.5}, "b": {"d1": 1.0, "d4": 0.0}}
    res = evaluate_trec(qrels, run, ["num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"])
    assert res.summary == {"num_ret": 6, "num_rel": 2, "num_rel_ret": 2, "num_nonrel_judged_ret": 3}
    assert "num_nonrel_judged_ret \tall\t3" in res.lines


def test_set_map_is_nrr_squared_over_ret_times_r() -> None:
    # 7 relevant, 5 of them among 9 retrieved: (5*5) / (9*7), in doubles as m_set_map.c computes it
    qrels = {"q": {f"r{i}": 1 for i in range(7)}}
    run = {"q": {**{f"r{i}": 10.0 - i for i in range(5)}, **{f"n{i}": 1.0 - i / 10 for i in range(4)}}}
    got = evaluate_trec(qrels, run, ["set_map"]).summary["set_map"]
    assert got == (5.0 * 5.0) / (9.0 * 7.0)
    assert (5 / 9) * (5 / 7) != got  # the product of the two ratios is off in the last bit


def test_no_per_topic_gm_lines_and_measures_in_trec_eval_order() -> None:
    qrels, run = random_case(1)
    res = evaluate_trec(qrels, run, ["P.5", "gm_map", "map", "gm_bpref", "num_q", "runid"], per_query=True)
    lines = format_trec(res, per_query=True)
    per_topic = [ln for ln in lines if "\tall\t" not in ln]
    assert per_topic and not any(ln.startswith("gm_") for ln in per_topic)
    assert [ln.split()[0] for ln in lines if "\tall\t" in ln] == [
        "runid",
        "num_q",
        "map",
        "gm_map",
        "P_5",
        "gm_bpref",
    ]
    assert "gm_map" in next(iter(res.per_class.values()))  # the API keeps pytrec_eval's per-topic log


@pytest.mark.parametrize(
    "level,r,old,new",
    [
        (0.4, 3, 2, 1),
        (0.7, 3, 2, 2),
        (0.1, 4, 1, 0),
        (0.5, 3, 2, 2),
        (0.3, 5, 2, 2),
        (0.25, 6, 2, 2),
        (0.45, 5, 3, 2),
    ],
)
def test_recall_cutoffs_by_version(level: float, r: int, old: int, new: int) -> None:
    # 9.0.8: (long)(p*R + 0.9); 10.0: lround(p*R)
    assert recall_cutoff(level, np.array([r]), "9.0.8").tolist() == [old]
    assert recall_cutoff(level, np.array([r]), "10.0").tolist() == [new]


def test_iprec_at_recall_differs_between_versions_where_the_cutoffs_do() -> None:
    # R = 3, relevant at ranks 1, 4, 9: precision 1, 2/4, 3/9. Level 0.4: 9.0.8 needs the 2nd relevant
    # ((long)(1.2 + 0.9) = 2) -> max(2/4, 3/9) = 0.5; 10.0 the 1st (lround(1.2) = 1) -> 1.0
    rels = [1, 0, 0, 1, 0, 0, 0, 0, 1]
    qrels = {"q": {f"d{i}": r for i, r in enumerate(rels)}}
    run = {"q": {f"d{i}": 10.0 - i for i in range(len(rels))}}
    old = evaluate_trec(qrels, run, ["iprec_at_recall.0.4", "11pt_avg"]).summary
    new = evaluate_trec(qrels, run, ["iprec_at_recall.0.4", "11pt_avg"], version="10.0").summary
    assert old["iprec_at_recall_0.40"] == 0.5 and new["iprec_at_recall_0.40"] == 1.0
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall", "11pt_avg"}).evaluate(run)["q"]
    assert ref["iprec_at_recall_0.40"] == old["iprec_at_recall_0.40"]
    assert ref["11pt_avg"] == old["11pt_avg"]
    # 11pt_avg: cutoffs 0..3 relevant; levels from 1.0 down, added one at a time (m_11pt_avg.c)
    ranks = [1.0, 0.5, 3 / 9]

    def expected(cut) -> float:
        total = 0.0
        for p in reversed([i / 10 for i in range(11)]):
            c = max(int(cut(p)), 1)
            total += max(ranks[c - 1 :])
        return total / 11

    assert old["11pt_avg"] == expected(lambda p: p * 3 + 0.9)
    assert new["11pt_avg"] == expected(lambda p: np.floor(p * 3 + 0.5))


def test_11pt_avg_equals_pytrec_eval_bit_for_bit_on_random_runs() -> None:
    for seed in range(8):
        qrels, run = random_case(seed)
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"11pt_avg"}).evaluate(run)
        got = evaluate_trec(qrels, run, ["11pt_avg"], per_query=True).per_class
        assert {t: ref[t]["11pt_avg"] for t in ref} == {t: got[t]["11pt_avg"] for t in ref}


def test_complete_topics_missing_from_the_run_are_not_printed_by_9_0_8() -> None:
    qrels = {"a": {"d1": 1}, "b": {"d2": 1}}
    run = {"a": {"d1": 1.0}}
    old = evaluate_trec(qrels, run, ["map"], complete=True, per_query=True)
    new = evaluate_trec(qrels, run, ["map"], complete=True, per_query=True, version="10.0")
    assert old.summary == new.summary == {"map": 0.5}
    assert [ln.split("\t")[1] for ln in format_trec(old, per_query=True)] == ["a", "all"]
    assert [ln.split("\t")[1] for ln in format_trec(new, per_query=True)] == ["a", "b", "all"]


def test_complete_counts_missing_topics_in_the_sums() -> None:
    # topic b (two relevant documents) is missing from the run: trec_eval evaluates it as an empty ranking
    # and sums it (test/out.test.aqc, in the 9.0.x and 10.0 eras: num_rel 561 = 474 + 10 + 77 with topic
    # 302 missing); iprec_at_recall is 0 (not the 0/0 of a -J empty ranking). utility with coefficients is 0
    # there in 9.0.8 (never evaluated) but, in 10.0, the value of its one unjudged document (reset only by
    # the exact name "utility"): -1 (non-relevant retrieved) - 2 (relevant missed), as the 10.0 binary prints
    # (tests/data/trec_eval/live_cases.json, c_missing_topic_named_measures)
    qrels = {"a": {"d1": 1, "d3": 0}, "b": {"d2": 1, "d4": 1}}
    run = {"a": {"d1": 1.0, "d3": 0.5}}
    want = ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "utility.1,-1,-1,0", "iprec_at_recall.0"]
    for version, utility in (("9.0.8", 0.0), ("10.0", (0.0 - 3.0) / 2)):
        got = evaluate_trec(qrels, run, want, complete=True, version=version).summary
        assert got == {
            "num_q": 2,
            "num_ret": 2,
            "num_rel": 3,
            "num_rel_ret": 1,
            "map": 0.5,
            "iprec_at_recall_0.00": 0.5,
            "utility_1,-1,-1,0": utility,
        }


MEAS_PARAMS_NAMES = [
    "iprec_at_recall_0.10", "iprec_at_recall_0.20", "iprec_at_recall_0.25", "iprec_at_recall_0.50",
    "iprec_at_recall_0.75", "P_3", "P_5", "P_7", "recall_20", "recall_2000", "Rprec_mult_0.20",
    "Rprec_mult_0.35", "Rprec_mult_5.00", "utility_2,-1,0,0", "11pt_avg_.25,.5,.75", "ndcg_1=3,2=9,4=4.5",
    "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23", "success_2", "success_5", "success_20",
]  # fmt: skip


def test_measure_parameters_named_as_trec_eval_prints_them() -> None:
    # the measure lines of trec_eval's test/out.test.meas_params, in its order, for its -m arguments
    qrels, run = random_case(2)
    specs = [
        "P.5,7,3", "recall.20,2000", "Rprec_mult.5.0,0.2,0.35", "utility.2,-1,0,0", "11pt_avg..25,.5,.75",
        "ndcg.1=3,2=9,4=4.5", "ndcg_cut.10,20,23.4", "iprec_at_recall..10,.20,.25,.75,.50", "success.2,5,20",
    ]  # fmt: skip
    res = evaluate_trec(qrels, run, specs, per_query=True)
    assert [ln.split()[0] for ln in res.lines] == MEAS_PARAMS_NAMES
    topic_lines = [
        ln.split("\t")[0].strip() for ln in format_trec(res, per_query=True) if "\tall\t" not in ln
    ]
    assert topic_lines[: len(MEAS_PARAMS_NAMES)] == MEAS_PARAMS_NAMES


def aqc_all_names(version: str) -> list[str]:
    """The measure names of the all lines of trec_eval's test/out.test.aqc (-a -q -c): the 10.0-era file
    ends with rbp, rbp_resid, unj_5/10/20; the 9.0.x-era file stops at num_nonrel_judged_ret."""
    cuts = ["5", "10", "15", "20", "30", "100", "200", "500", "1000"]
    levels = [f"{i / 10:.2f}" for i in range(11)]
    mults = ["0.20", "0.40", "0.60", "0.80", "1.00", "1.20", "1.40", "1.60", "1.80", "2.00"]
    names = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref"]
    names += ["recip_rank"] + [f"iprec_at_recall_{x}" for x in levels] + [f"P_{k}" for k in cuts]
    names += [f"recall_{k}" for k in cuts] + ["infAP", "gm_bpref"] + [f"Rprec_mult_{x}" for x in mults]
    names += ["utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg"]
    names += [f"ndcg_cut_{k}" for k in cuts] + [f"map_cut_{k}" for k in cuts]
    names += [f"relative_P_{k}" for k in cuts] + ["success_1", "success_5", "success_10"]
    names += ["set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret"]
    if version == "10.0":
        names += ["rbp", "rbp_resid", "unj_5", "unj_10", "unj_20"]
    return names


@pytest.mark.parametrize("version", ["9.0.8", "10.0"])
def test_all_trec_lines_named_and_ordered_as_trec_eval(version: str) -> None:
    qrels, run = random_case(3)
    res = evaluate_trec(qrels, run, ["all_trec"], complete=True, per_query=True, version=version)
    assert [ln.split()[0] for ln in res.lines] == aqc_all_names(version)
    # per topic: no runid, num_q or gm_* lines; relstring between P and recall, quoted
    first = next(iter(res.per_class))
    lines = [ln for ln in format_trec(res, per_query=True) if ln.split("\t")[1] == first]
    names = [ln.split()[0] for ln in lines]
    assert (
        names[names.index("P_1000") + 1] == "relstring" and names[names.index("relstring") + 1] == "recall_5"
    )
    assert not {"runid", "num_q", "gm_map", "gm_bpref"} & set(names)
