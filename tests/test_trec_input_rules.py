"""Input read as trec_eval reads it (issue 20 item 4), each rule a small case with trec_eval's value.

get_trec_results.c ignores everything after the run tag and keeps the tag of the last line as ``runid``;
get_qrels.c reads the relevance with ``atol`` (``1.5`` -> 1, ``-0.7`` -> 0, ``.5`` -> 0).
"""

from __future__ import annotations

import pytest

from deteval.errors import ValidationError
from deteval.io.trec import load_qrels, load_run
from deteval.retrieval import evaluate_trec


def test_fields_after_the_run_tag_are_ignored(tmp_path) -> None:
    plain, extra = tmp_path / "plain", tmp_path / "extra"
    plain.write_text("q Q0 a 1 0.9 t\nq Q0 b 2 0.8 t\nq Q0 c 3 0.7 t\n")
    # trec_eval's own results.trunc has such lines; mixed with six-field lines and tabs
    extra.write_text("q Q0 a 1 0.9 t 17 more\nq Q0 b 2 0.8 t\nq\tQ0\tc\t3\t0.7\tt\tx\n")
    a, b = load_run(plain), load_run(extra)
    assert a.docno.tolist() == b.docno.tolist() == [b"a", b"b", b"c"]
    assert a.score.tolist() == b.score.tolist() and b.line.tolist() == [1, 2, 3]
    qrels = tmp_path / "qrels"
    qrels.write_text("q 0 a 0\nq 0 b 1\nq 0 c 1\n")
    res = evaluate_trec(load_qrels(qrels), b, ["map", "runid"])
    assert res.summary == {"runid": "t", "map": (1 / 2 + 2 / 3) / 2}


def test_runid_is_the_tag_of_the_last_line(tmp_path) -> None:
    run = tmp_path / "run"
    run.write_text("q Q0 a 1 0.9 first\nq Q0 b 2 0.8 middle\nq Q0 c 3 0.7 last extra\n\n  \n")
    assert load_run(run).tag == "last"


@pytest.mark.parametrize(
    "text,rel",
    [("1.5", 1), ("2.99", 2), ("-0.7", 0), (".5", 0), ("-.5", 0), ("3.", 3), ("-1.2", -1), ("+2.5", 2)],
)
def test_a_fractional_relevance_is_cut_to_its_integer_part(tmp_path, text: str, rel: int) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text(f"q 0 a 1\nq 0 b {text}\n")
    assert load_qrels(qrels).rel.tolist() == [1, rel]


def test_fractional_relevance_changes_relevance_as_trec_eval(tmp_path) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q 0 a 0.9\nq 0 b 1.9\n")  # a: 0 (not relevant), b: 1
    run.write_text("q Q0 a 1 2 t\nq Q0 b 2 1 t\n")
    res = evaluate_trec(load_qrels(qrels), load_run(run), ["map", "num_rel"])
    assert res.summary == {"num_rel": 1, "map": 0.5}


@pytest.mark.parametrize("score", ["nan", "inf", "-inf", "1e999"])
def test_non_finite_scores_are_refused(tmp_path, score: str) -> None:
    # trec_eval's atof accepts them, but NaN has no place in a ranking (every comparison with it is false,
    # so the order qsort leaves depends on the input order) and inf ties with inf silently
    run = tmp_path / "run"
    run.write_text(f"q Q0 a 1 0.5 t\nq Q0 b 2 {score} t\n")
    with pytest.raises(ValidationError, match="is not finite") as info:
        load_run(run)
    assert info.value.record == "line 2"


def test_a_topic_judged_only_negative_is_evaluated_with_no_relevant_document() -> None:
    # trec_eval's form_res_rels sizes its level counts from the largest relevance (-1 here: malloc(0)) and
    # then reads stale counts: undefined behaviour (pytrec_eval crashes). deteval evaluates the topic
    # with R = 0, the value every measure gives a topic without relevant documents.
    qrels = {"q": {"a": -1, "b": -1}, "p": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 0.5, "c": 0.2}, "p": {"a": 1.0}}
    res = evaluate_trec(qrels, run, ["num_rel", "num_ret", "map", "P.5", "ndcg", "bpref"], per_query=True)
    assert res.per_class["q"] == {
        "num_ret": 3,
        "num_rel": 0,
        "map": 0.0,
        "bpref": 0.0,
        "ndcg": 0.0,
        "P_5": 0.0,
    }
    assert res.summary["map"] == 0.5


def test_an_empty_run_with_complete_is_a_documented_departure(tmp_path) -> None:
    # trec_eval refuses an empty results file ("Cannot read results file"); with -c deteval scores every
    # qrels topic as an empty ranking, and without -c it stops as trec_eval does when no topic is left
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q 0 a 1\n")
    run.write_text("")
    res = evaluate_trec(load_qrels(qrels), load_run(run), ["map", "num_q"], complete=True)
    assert res.summary == {"num_q": 1, "map": 0.0}
    with pytest.raises(ValidationError, match="no topic has both results and judgements"):
        evaluate_trec(load_qrels(qrels), load_run(run), ["map"])
