"""trec_eval versions: 9.0.8 reads run scores as C floats (float32), 10.0 as doubles (issue 11 item 2).

Scores that differ only beyond float32 precision tie in 9.0.8 and the tie is broken by docno (descending);
10.0 ranks them apart. pytrec_eval wraps trec_eval 9.0.x and is the oracle for the default.
"""

from __future__ import annotations

import numpy as np
import pytest
from _trec_files import write_trec
from test_trec_vs_pytrec_eval import MEASURES, assert_same

from deteval.errors import ConfigError
from deteval.retrieval import evaluate_trec

pytrec_eval = pytest.importorskip("pytrec_eval")

# 0.99999999 and 0.999999999 are distinct doubles but the same float32 (1.0)
HI, LO = 0.999999999, 0.99999999
assert HI != LO and np.float32(HI) == np.float32(LO)


def test_scores_equal_in_float32_tie_in_9_0_8_and_not_in_10_0() -> None:
    qrels = {"q": {"a": 1, "b": 0}}
    # "a" has the higher double score, but in float32 both are 1.0 and docno "b" > "a" ranks first
    run = {"q": {"a": HI, "b": LO}}
    old = evaluate_trec(qrels, run, ["map", "recip_rank", "P.1"])
    assert old.summary == {"map": 0.5, "recip_rank": 0.5, "P_1": 0.0}
    new = evaluate_trec(qrels, run, ["map", "recip_rank", "P.1"], version="10.0")
    assert new.summary == {"map": 1.0, "recip_rank": 1.0, "P_1": 1.0}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank"}).evaluate(run)
    assert ref["q"]["map"] == old.summary["map"]


def test_scores_distinct_in_float32_rank_apart_in_both_versions() -> None:
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 0.5000001, "b": 0.5}}  # 0.5000001 is a float32 above 0.5
    for version in ("9.0.8", "10.0"):
        assert evaluate_trec(qrels, run, ["map"], version=version).summary["map"] == 1.0


def test_huge_scores_become_inf_in_float32_and_tie() -> None:
    # 1e300 and 1e299 overflow float32 to +inf: tied, docno decides (as a C double-to-float conversion)
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 1e300, "b": 1e299}}
    assert evaluate_trec(qrels, run, ["map"]).summary["map"] == 0.5
    assert evaluate_trec(qrels, run, ["map"], version="10.0").summary["map"] == 1.0


def sigmoid_run(seed: int, n_topics: int = 15, depth: int = 100):
    """A reranker-like run: sigmoid of a logit, printed with full precision, most scores near 1.0."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for t in range(n_topics):
        docs = [f"D{x:07d}" for x in rng.choice(10**6, depth + 20, replace=False)]
        logits = rng.normal(9.0, 3.0, depth)
        scores = 1.0 / (1.0 + np.exp(-logits))
        run[f"{t}"] = {d: float(repr_round(s)) for d, s in zip(docs[:depth], scores)}
        judged = rng.choice(depth + 20, 30, replace=False)
        qrels[f"{t}"] = {docs[j]: int(rng.integers(0, 3)) for j in judged}
    return qrels, run


def repr_round(x: float) -> float:
    return float(repr(float(x)))  # "printed with full precision" and read back


@pytest.mark.parametrize("seed", range(4))
def test_sigmoid_runs_match_pytrec_eval_per_topic(seed: int) -> None:
    qrels, run = sigmoid_run(seed)
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run)
    got = evaluate_trec(qrels, run, MEASURES, per_query=True)
    assert_same(ref, got.per_class)
    # the case is not vacuous: 10.0's double scores rank differently and change some topic's AP
    new = evaluate_trec(qrels, run, ["map"], per_query=True, version="10.0")
    assert any(new.per_class[t]["map"] != got.per_class[t]["map"] for t in got.per_class)


def test_sigmoid_run_from_a_file_matches_pytrec_eval(tmp_path) -> None:
    from deteval.io.trec import load_qrels, load_run

    qrels, run = sigmoid_run(7)
    qp, rp = write_trec(tmp_path, qrels, run, tag="rr")
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run)
    assert_same(ref, evaluate_trec(load_qrels(qp), load_run(rp), MEASURES, per_query=True).per_class)


def test_unknown_version_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"9\.0\.8, 10\.0"):
        evaluate_trec({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["map"], version="9.0.9")


def test_cli_version_switch(tmp_path, capsys) -> None:
    from deteval.cli import main

    qp, rp = tmp_path / "qrels", tmp_path / "run"
    qp.write_text("q 0 a 1\nq 0 b 0\n")
    rp.write_text(f"q Q0 a 1 {HI!r} t\nq Q0 b 2 {LO!r} t\n")
    values = {}
    for version in ("9.0.8", "10.0"):
        assert main(["trec", str(qp), str(rp), "-m", "map", "--trec-eval-version", version]) == 0
        values[version] = capsys.readouterr().out.split()[-1]
    assert values == {"9.0.8": "0.5000", "10.0": "1.0000"}
    assert main(["trec", str(qp), str(rp), "-m", "map"]) == 0
    assert capsys.readouterr().out.split()[-1] == "0.5000"


def test_comment_lines_are_read_by_10_0_only(tmp_path, capsys) -> None:
    from deteval.cli import main
    from deteval.errors import InputFormatError
    from deteval.io.trec import load_qrels, load_run

    qp, rp = tmp_path / "qrels", tmp_path / "run"
    # as trec_eval's test/results.comment.test: comments at the top, in the middle and (runs) indented
    qp.write_text("# judged by hand\nq 0 a 1\n#another one\nq 0 b 0\n")
    rp.write_text("# my run\nq Q0 a 1 0.2 t\n   # an indented comment\nq Q0 b 2 0.9 t\nq Q0 c 3 x t\n# end\n")
    with pytest.raises(InputFormatError) as info:
        load_run(rp, comments=True)
    assert info.value.record == "line 5"  # line numbers stay those of the file
    rp.write_text("# my run\nq Q0 a 1 0.2 t\n   # an indented comment\nq Q0 b 2 0.9 last\n# end\n")
    run = load_run(rp, comments=True)
    assert run.docno.tolist() == [b"a", b"b"] and run.line.tolist() == [2, 4] and run.tag == "last"
    assert f"{rp}: 3 comment line(s) skipped (trec_eval 10.0)" in run.warnings
    assert load_qrels(qp, comments=True).rel.tolist() == [1, 0]
    with pytest.raises(InputFormatError, match="expected 4 fields"):
        load_qrels(qp)  # 9.0.8 has no comments: "# judged by hand" is a malformed line
    assert main(["trec", str(qp), str(rp), "-m", "map", "--trec-eval-version", "10.0"]) == 0
    assert capsys.readouterr().out.split()[-1] == "0.5000"
    assert main(["trec", str(qp), str(rp), "-m", "map"]) == 2


def test_all_trec_names_of_both_versions() -> None:
    from deteval.retrieval import parse_measures
    from deteval.retrieval.trec_measures import FAMILIES
    from deteval.retrieval.versions import ALL_TREC

    # measures.c's trec_names: 10.0 added unj, rbp and rbp_resid
    assert set(ALL_TREC["10.0"]) - set(ALL_TREC["9.0.8"]) == {"unj", "rbp", "rbp_resid"}
    assert len(ALL_TREC["9.0.8"]) == 34 and ALL_TREC["9.0.8"][:12] == (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
        "recip_rank", "iprec_at_recall", "P",
    )  # fmt: skip
    for version in ("9.0.8", "10.0"):
        got = [f.name for f, _ in parse_measures("all_trec", version)]
        assert set(got) <= set(ALL_TREC[version])
        assert got == sorted(got, key=list(FAMILIES).index)  # printed in trec_eval's measure order
    # pytrec_eval (trec_eval 9.0.x) knows every 9.0.8 all_trec measure (runid aside) and none of 10.0's new ones
    supported = set(pytrec_eval.supported_measures)
    assert set(ALL_TREC["9.0.8"]) - {"runid"} <= supported and not {"unj", "rbp", "rbp_resid"} & supported
