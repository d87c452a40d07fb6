"""``deteval trec``: trec_eval's output format, checked against pytrec_eval on the bundled sample."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main

pytrec_eval = pytest.importorskip("pytrec_eval")

SAMPLE = Path(__file__).resolve().parents[1] / "data_samples" / "trec"
QRELS, RUN = str(SAMPLE / "qrels.txt"), str(SAMPLE / "run.txt")
OFFICIAL_PYTREC = {
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
    "ndcg_cut.10",
    "ndcg",
    "recall.10",
}


def pytrec_reference(level: int = 1) -> dict:
    with open(QRELS) as fq:
        qrels = pytrec_eval.parse_qrel(fq)
    with open(RUN) as fr:
        run = pytrec_eval.parse_run(fr)
    return pytrec_eval.RelevanceEvaluator(qrels, OFFICIAL_PYTREC, relevance_level=level).evaluate(run)


def expected_all(ref: dict, name: str) -> str:
    vals = [ref[t][name] for t in ref]
    if name in ("num_ret", "num_rel", "num_rel_ret"):
        return str(round(sum(vals)))
    if name == "gm_map":
        return f"{np.exp(np.mean(vals)):6.4f}"
    return f"{np.mean(vals):6.4f}"


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["trec", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def parse(out: str) -> list[tuple[str, str, str]]:
    rows = []
    for line in out.splitlines():
        name, topic, value = line.split("\t")
        assert len(name) >= 22 and name == name.rstrip() + " " * (len(name) - len(name.rstrip()))
        rows.append((name.strip(), topic, value))
    return rows


def test_readme_example_equals_pytrec_eval(capsys):
    code, out, err = run_cli(capsys, QRELS, RUN)
    assert code == 0
    rows = parse(out)
    names = [r[0] for r in rows]
    assert names[:6] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map"]
    assert names[-1] == "P_1000" and "iprec_at_recall_0.10" in names
    ref = pytrec_reference()
    checked = 0
    for name, topic, value in rows:
        assert topic == "all"
        if name == "runid":
            assert value == "bm25-sample"
        elif name == "num_q":
            assert value == str(len(ref))
        else:
            assert value == expected_all(ref, name), name
            checked += 1
    assert checked == 4 + 11 + 9 + 4  # counts, map..recip_rank, iprec, P
    assert "absent from the run" in err  # topic 405 is judged but not retrieved


def test_per_query_lines_equal_pytrec_eval(capsys):
    code, out, _ = run_cli(
        capsys, QRELS, RUN, "-q", "-m", "map", "-m", "P.5,10", "-m", "ndcg_cut.10", "-m", "recall_10"
    )
    assert code == 0
    ref = pytrec_reference()
    rows = parse(out)
    per_topic = [r for r in rows if r[1] != "all"]
    assert {r[1] for r in per_topic} == set(ref) == {"401", "402", "403", "404"}
    for name, topic, value in per_topic:
        assert value == f"{ref[topic][name]:6.4f}", (name, topic)
    assert [r[0] for r in rows if r[1] == "all"] == ["map", "P_5", "P_10", "recall_10", "ndcg_cut_10"]
    # trec_eval prints runid and num_q only in the summary
    _, out, _ = run_cli(capsys, QRELS, RUN, "-q")
    rows = parse(out)
    assert {r[0] for r in rows if r[1] != "all"} & {"runid", "num_q"} == set()
    assert [r[1] for r in rows if r[0] == "num_q"] == ["all"]


def test_relevance_level_and_complete(capsys):
    _, out, _ = run_cli(capsys, QRELS, RUN, "-l", "2", "-m", "map", "-m", "num_rel")
    ref = pytrec_reference(level=2)
    rows = {r[0]: r[2] for r in parse(out)}
    assert rows["map"] == expected_all(ref, "map")
    assert rows["num_rel"] == expected_all(ref, "num_rel")
    _, out, _ = run_cli(capsys, QRELS, RUN, "-c", "-m", "map", "-m", "num_q")
    rows = {r[0]: r[2] for r in parse(out)}
    assert rows["num_q"] == "5"
    ref = pytrec_reference()
    assert rows["map"] == f"{sum(ref[t]['map'] for t in ref) / 5:6.4f}"  # 4 evaluated topics + 405 as 0


def test_json_and_csv(capsys, tmp_path):
    code, out, _ = run_cli(capsys, QRELS, RUN, "-m", "map", "-m", "P.10", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    ref = pytrec_reference()
    assert doc["protocol"] == "trec"
    assert doc["map"] == pytest.approx(np.mean([ref[t]["map"] for t in ref]), abs=1e-12)
    assert set(doc["per_class"]) == set(ref)
    assert doc["per_class"]["401"]["P_10"] == pytest.approx(ref["401"]["P_10"], abs=1e-12)
    target = tmp_path / "out.csv"
    assert main(["trec", QRELS, RUN, "-m", "map", "--format", "csv", "-o", str(target)]) == 0
    text = target.read_text()
    assert text.splitlines()[0] == "topic,map" and "401," in text


def test_bad_input_names_file_and_line(capsys, tmp_path):
    bad = tmp_path / "run.txt"
    bad.write_text("1 Q0 d1 1 0.5 x\n1 Q0 d2 2 0.4\n")
    code, _, err = run_cli(capsys, QRELS, str(bad))
    assert code == 2 and f"{bad}: line 2: expected 6 fields" in err
    bad.write_text("1 Q0 d1 1 0.5 x\n1 Q0 d2 2 abc x\n")
    code, _, err = run_cli(capsys, QRELS, str(bad))
    assert code == 2 and "line 2" in err and "'abc'" in err
    bad.write_text("401 Q0 d1 1 0.5 x\n401 Q0 d2 2 0.4 x\n401 Q0 d1 3 0.3 x\n")
    code, _, err = run_cli(capsys, QRELS, str(bad))
    assert code == 2 and "line 3" in err and "duplicate document 'd1'" in err
    code, _, err = run_cli(capsys, QRELS, RUN, "-m", "nonsense")
    assert code == 2 and "unknown measure 'nonsense'" in err
