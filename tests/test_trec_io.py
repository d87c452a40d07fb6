"""TREC loaders: formats tolerated, errors that name the file and the line, in-memory forms."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.errors import ConfigError, InputFormatError, ValidationError
from deteval.io import trec_blocks, trec_tokens
from deteval.io.trec import (
    load_qrels,
    load_run,
    qrels_from_dict,
    qrels_from_lists,
    run_from_dict,
    run_from_lists,
)
from deteval.retrieval import evaluate_trec


def test_run_whitespace_crlf_and_blank_lines(tmp_path):
    p = tmp_path / "run.txt"
    p.write_bytes(b"q1\tQ0  docA 1 2.5 tagX\r\n\r\n   \nq1 Q0 docB\t2 -1e-3 tagX\r\nq2 Q0 d 1 7 tagX")
    run = load_run(p)
    assert run.topic.tolist() == [b"q1", b"q1", b"q2"]
    assert run.docno.tolist() == [b"docA", b"docB", b"d"]
    assert run.score.tolist() == [2.5, -0.001, 7.0]
    assert run.line.tolist() == [1, 4, 5]
    assert run.tag == "tagX" and run.blank_lines == 2
    assert run.warnings == [f"{p}: 2 blank line(s) skipped"]


def test_qrels_parse_and_negative_relevance(tmp_path):
    p = tmp_path / "qrels"
    p.write_text("1 0 a 1\n1 0 b -1\n2 Q0 c 2\n")
    q = load_qrels(p)
    assert q.rel.tolist() == [1, -1, 2] and q.topic.tolist() == [b"1", b"1", b"2"]


def test_block_boundaries_keep_line_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(trec_blocks, "BLOCK", 64)  # many tiny blocks
    lines = [f"q{i % 7} Q0 doc{i} {i} {1.0 / (i + 1)!r} t\n" for i in range(200)]
    lines[150] = "q1 Q0 bad 1 0.5\n"
    p = tmp_path / "run.txt"
    p.write_text("".join(lines))
    with pytest.raises(InputFormatError) as exc:
        load_run(p)
    assert str(exc.value).startswith(f"{p}: line 151: expected 6 fields")
    del lines[150]
    p.write_text("".join(lines))
    run = load_run(p)
    assert len(run) == 199 and run.line[-1] == 199
    assert run.score[10] == 1.0 / 11


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("1 0 a 1\n1 0 b\n", "line 2: expected 4 fields"),
        ("1 0 a 1\n1 0 b x\n", "line 2: relevance 'x' is not a valid number"),
        ("1 0 a 1\n1 0 b 0.5e1\n", "line 2: relevance '0.5e1'"),
        ("1 0 a 1\n1 0 a 0\n", "line 2: duplicate document 'a'"),
    ],
)
def test_qrels_errors(tmp_path, text, fragment):
    p = tmp_path / "qrels.txt"
    p.write_text(text)
    with pytest.raises((InputFormatError, ValidationError)) as exc:
        evaluate_trec(load_qrels(p), {"1": {"a": 1.0}})
    assert fragment in str(exc.value) and str(p) in str(exc.value)


def test_run_errors(tmp_path):
    p = tmp_path / "run.txt"
    p.write_text("1 Q0 a 1 nan t\n")
    with pytest.raises(ValidationError, match="line 1: score nan is not finite"):
        load_run(p)
    with pytest.raises(InputFormatError, match="cannot read file"):
        load_run(tmp_path / "missing.txt")


def test_in_memory_errors():
    with pytest.raises(ValidationError, match="relevance must be an integer"):
        qrels_from_dict({"q": {"d": 0.5}})
    with pytest.raises(ValidationError, match="not finite"):
        run_from_dict({"q": {"d": float("inf")}})
    with pytest.raises(InputFormatError, match="whitespace"):
        run_from_dict({"q": {"a b": 1.0}})
    with pytest.raises(ValidationError, match="appears twice"):
        run_from_lists([[1, 2, 1]])


def test_list_forms():
    run = run_from_lists([[5, 3, 9]], topics=["t"])
    assert run.docno.tolist() == [b"5", b"3", b"9"] and run.score.tolist() == [3.0, 2.0, 1.0]
    q = qrels_from_lists([[3]], topics=["t"])
    res = evaluate_trec(q, run, ["recip_rank"])
    assert res.summary["recip_rank"] == 0.5


def test_ties_broken_by_docno_descending():
    # equal scores: trec_eval ranks "b" before "a" and "a10" before "a1" (strcmp, descending)
    qrels = {"q": {"a": 1, "a1": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "a10": 1.0, "a1": 1.0}}
    res = evaluate_trec(qrels, run, ["recip_rank", "map"])
    # order: b, a10, a1, a  -> relevant at ranks 3 and 4
    assert res.summary["recip_rank"] == pytest.approx(1 / 3)
    assert res.summary["map"] == pytest.approx((1 / 3 + 2 / 4) / 2)


def test_unsorted_run_is_reranked():
    qrels = {"q": {"x": 1}, "p": {"y": 1}}
    run_sorted = {"p": {"y": 0.1, "z": 0.9}, "q": {"w": 3.0, "x": 2.0}}
    run_shuffled = {"q": {"x": 2.0, "w": 3.0}, "p": {"z": 0.9, "y": 0.1}}
    a = evaluate_trec(qrels, run_sorted, ["map"], per_query=True)
    b = evaluate_trec(qrels, run_shuffled, ["map"], per_query=True)
    assert a.per_class == b.per_class == {"p": {"map": 0.5}, "q": {"map": 0.5}}
    assert np.isclose(a.summary["map"], 0.5)


def test_vectorised_decimal_parser_equals_float():
    rng = np.random.default_rng(7)
    texts = [
        "-0",
        "0",
        ".5",
        "5.",
        "+3",
        "-2.50",
        "007.25",
        "123456789012345",
        "1234567890123456",
        "1e5",
        "-1.5E-3",
        "inf",
        "-nan",
        "0.1000000000000000055511151231257827",
        "9" * 15,
        "4.35",
    ]
    texts += [f"{x:.{int(rng.integers(0, 9))}f}" for x in rng.normal(scale=1000, size=2000)]
    texts += [repr(float(x)) for x in rng.normal(size=500)]
    arr = np.array([t.encode() for t in texts], dtype="S")
    values = trec_tokens.parse_floats(arr, np.arange(arr.size), "<test>", "score")
    expected = np.array([float(t) for t in texts])
    assert np.array_equal(values, expected, equal_nan=True)
    assert np.array_equal(np.signbit(values), np.signbit(expected))
    _, ok = trec_tokens.parse_decimals(arr)
    assert ok[:3].all() and not ok[9] and not ok[10] and ok.sum() > 2000


def test_control_characters_are_not_separators(tmp_path):
    p = tmp_path / "run.txt"
    p.write_bytes(b"q1 Q0 do\x01c 1 2.5 t\nq1 Q0 d2 2 1 t\n")
    run = load_run(p)
    assert run.docno.tolist() == [b"do\x01c", b"d2"]


def test_in_memory_duplicate_names_the_entry():
    # 1 and "1" are the same docno once written as text, as they would be in a TREC file
    with pytest.raises(ValidationError, match=r"<in-memory run>: entry 1: duplicate document '1'"):
        evaluate_trec({"q": {"1": 1}}, {"q": {1: 0.5, "1": 0.3}})


def test_bad_options_are_config_errors():
    from deteval.errors import ConfigError

    with pytest.raises(ConfigError, match="relevance_level"):
        evaluate_trec({"q": {"d": 1}}, {"q": {"d": 1.0}}, relevance_level=-1)
    with pytest.raises(ConfigError, match="gain must be one of"):
        evaluate_trec({"q": {"d": 1}}, {"q": {"d": 1.0}}, gain="linear")
    with pytest.raises(ConfigError, match="takes no parameters"):
        evaluate_trec({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["map.5"])
    with pytest.raises(ConfigError, match="cutoffs must be positive"):
        evaluate_trec({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["P.0"])


def test_measure_syntax():
    from deteval.retrieval import parse_measures

    got = [
        (f.name, p)
        for f, p in parse_measures(["P.5,10", "ndcg_cut_10", "map", "P_20", "recall", "ndcg_cut.5"])
    ]
    assert got == [
        ("map", ()),
        ("P", (5, 10, 20)),
        ("recall", (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
        ("ndcg_cut", (5, 10)),
    ]
    names = [f.name for f, _ in parse_measures("all_trec")]
    assert names[:3] == ["runid", "num_q", "num_ret"] and "dcg_cut" not in names and "set_F" in names


def test_a_request_with_parameters_replaces_the_defaults_as_in_trec_eval():
    """trec_eval (meas_init.c) and pytrec_eval use a family's ``name.params`` instead of its default
    parameters, whether the family was also marked bare or by a set: ``-m official -m P.5`` prints P_5
    alone. Several requests with parameters merge, as in pytrec_eval (trec_eval keeps the first)."""
    from deteval.retrieval import parse_measures

    def params(specs: list[str]) -> dict[str, tuple]:
        return {f.name: tuple(p) for f, p in parse_measures(specs)}

    official = params(["official"])
    assert official["P"] == (5, 10, 15, 20, 30, 100, 200, 500, 1000)
    got = params(["official", "P.5"])
    assert got["P"] == (5,) and got["map"] == () and set(got) == set(official)
    assert params(["P.20,5", "P"])["P"] == (5, 20) == params(["P", "P.20,5"])["P"]
    assert params(["P.5,10", "P.5,10"])["P"] == (5, 10) == params(["P.10", "P.5"])["P"]
    assert params(["ndcg_cut.5", "official", "ndcg_cut.10,5"])["ndcg_cut"] == (5, 10)
    assert params(["iprec_at_recall.0.5", "official"])["iprec_at_recall"] == (0.5,)
    assert params(["P_30", "P.5"])["P"] == (5, 30)  # deteval's P_30 form adds a value
    with pytest.raises(ConfigError, match="given parameters twice"):
        parse_measures(["utility.1,-1,0,0", "utility.2,-1,0,0"])  # printed as one value


@pytest.mark.parametrize(
    "measures",
    [
        {"P.5", "P.10"},
        {"P", "P.2"},
        {"official", "P.2"},
        {"ndcg_cut.3", "ndcg_cut.1,3", "map"},
        {"recall", "P"},
    ],
)
def test_measure_requests_name_what_pytrec_eval_computes(measures):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from deteval.retrieval import evaluate_trec

    rng = np.random.default_rng(len(measures))
    qrels = {f"q{t}": {f"d{i}": int(rng.integers(0, 3)) for i in range(12)} for t in range(3)}
    run = {q: {f"d{i}": float(rng.random()) for i in range(0, 15, 2)} for q in qrels}
    want = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
    got = evaluate_trec(qrels, run, sorted(measures))
    names = {n for n in got.summary if n != "runid"}
    assert names == set(want["q0"]) - {"runid"}


def test_simple_layout_fast_path_still_counts_fields(tmp_path):
    p = tmp_path / "run.txt"
    # 5 + 7 fields: the total is a multiple of 6, but the line ends are in the wrong places
    p.write_text("q1 Q0 a 1 2.5\nq1 Q0 b 2 1.5 t extra\n")
    with pytest.raises(InputFormatError, match="line 1: expected 6 fields"):
        load_run(p)
    p.write_text("q1 Q0 a 1 2.5 t\nq1 Q0 b 2 1.5 t\n")
    assert load_run(p).line.tolist() == [1, 2]
    p.write_text(" q1 Q0 a 1 2.5 t\n")  # leading space: general path, same result
    assert load_run(p).docno.tolist() == [b"a"]


def test_no_common_topic_is_an_error_and_empty_inputs_work():
    with pytest.raises(ValidationError, match="no topic has both results and judgements"):
        evaluate_trec({"q": {"a": 1}}, {})
    with pytest.raises(ValidationError, match="no topic has both results and judgements"):
        evaluate_trec({}, {"q": {"a": 1.0}})
    res = evaluate_trec({"q": {"a": 1}}, {}, ["map", "num_q", "ndcg", "bpref", "Fmax"], complete=True)
    assert res.summary == {"num_q": 1, "map": 0.0, "bpref": 0.0, "ndcg": 0.0, "Fmax": 0.0}
    res = evaluate_trec({"q": {"a": 0}}, {"q": {"a": 1.0}}, ["map", "ndcg", "Rprec", "bpref", "recip_rank"])
    assert set(res.summary.values()) == {0.0}


def test_empty_files(tmp_path):
    p = tmp_path / "empty.txt"
    p.write_text("")
    run, qrels = load_run(p), load_qrels(p)
    assert len(run) == 0 and run.score.dtype == np.float64 and run.tag == ""
    assert len(qrels) == 0 and qrels.rel.dtype == np.int64
    with pytest.raises(ValidationError, match="no topic has both"):
        evaluate_trec(qrels, run)


def test_duplicates_only_matter_where_trec_eval_looks(tmp_path):
    q = tmp_path / "qrels.txt"
    q.write_text("1 0 a 1\n1 0 b 0\n2 0 x 1\n2 0 x 0\n")  # topic 2 (repeated x) is not in the run
    r = tmp_path / "run.txt"
    r.write_text(
        "1 Q0 a 1 3.0 t\n1 Q0 b 2 2.0 t\n1 Q0 c 3 1.0 t\n1 Q0 a 4 0.5 t\n"  # a repeated at rank 4
        "9 Q0 z 1 1.0 t\n9 Q0 z 2 0.5 t\n"  # topic 9 has no judgements
    )
    with pytest.raises(ValidationError, match=r"run.txt: line 4: duplicate document 'a'"):
        evaluate_trec(load_qrels(q), load_run(r), ["map"])
    # with -M 3 trec_eval never sees the repeat at rank 4; the other repeats are outside evaluated topics
    res = evaluate_trec(load_qrels(q), load_run(r), ["map", "num_ret"], max_docs=3, per_query=True)
    assert res.per_class == {"1": {"num_ret": 3, "map": 1.0}}
    assert any("2 repeated document(s) in the run" in w for w in res.warnings)  # a (beyond -M) and z
    assert any("1 repeated document(s) in the qrels" in w for w in res.warnings)
