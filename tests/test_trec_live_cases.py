"""Cases where trec_eval 9.0.8 and 10.0, built from source and run live, print something specific; deteval
(``deteval trec --trec-eval-version V``) must print the same lines.

The expected outputs are in tests/data/trec_eval/live_cases.json, written by scripts/trec_eval_expected.py
with the two binaries (their tags and commits are in the file); each case says what it shows. Where trec_eval
stops with an error, deteval stops with a DetevalError (exit status 2) that names the same topic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _trec_files import DATA, case_arguments

from deteval.cli import main

LIVE = json.loads((DATA / "live_cases.json").read_text())
RUNS = [(case, version) for case in LIVE["cases"] for version in case["versions"]]


def test_the_binaries_are_named() -> None:
    assert set(LIVE["trec_eval"]) == {"9.0.8", "10.0"}
    assert all(len(tool["commit"]) == 40 for tool in LIVE["trec_eval"].values())


@pytest.mark.parametrize(("case", "version"), RUNS, ids=[f"{c['name']}-{v}" for c, v in RUNS])
def test_prints_what_trec_eval_prints(case: dict, version: str, tmp_path: Path, capsys) -> None:
    want = case["expected"][version]
    status = main(["trec", "--trec-eval-version", version, *case_arguments(case, tmp_path)])
    out, err = capsys.readouterr()
    if want["status"] == 0:
        assert status == 0, err
        assert out.splitlines() == want["stdout"]
    else:
        assert status == 2 and out == ""
        # trec_eval: "result qid '2' not found in qrels" (the qrels topic that has no results)
        topic = want["stderr"].split("'")[1]
        assert f"qrels topic '{topic}' has no results in the run" in err


def test_trec_eval_9_0_8_zscores_test_file(capsys) -> None:
    # trec_eval 9.0.8's test/out.test.aqZ (tests/data/trec_eval/v9.0.8): its zscores_file holds nan for
    # set_F, and every Zset_F line prints nan
    want = (DATA / "v9.0.8" / "out.test.aqZ").read_text().splitlines()
    assert [ln for ln in want if ln.startswith("Zset_F")][-1] == "Zset_F                 \tall\t   nan"
    case = next(c for c in LIVE["cases"] if c["name"] == "aqZ_9.0.8")
    assert case["expected"]["9.0.8"]["stdout"] == want
