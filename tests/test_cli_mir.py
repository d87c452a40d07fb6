"""`deteval mir`: JSON and table output, options, errors; numbers checked against mir_eval."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from deteval.cli import main
from deteval.mir import evaluate_mir
from deteval.results import EvalResult

ROOT = Path(__file__).resolve().parents[1]
REF = str(ROOT / "data_samples" / "mir" / "ref.lab")
EST = str(ROOT / "data_samples" / "mir" / "est.lab")


def _json(capsys, *args: str) -> dict:
    assert main(["mir", REF, EST, *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_document_shape_and_values(capsys) -> None:
    doc = _json(capsys, "--tau", "0.5", "--tau", "3.0")
    assert doc["protocol"] == "mir" and doc["rule"] == "one_to_one"
    assert set(doc["pairwise"]) >= {"precision", "recall", "f"}
    assert list(doc["boundary"]) == ["0.5", "3.0"]
    for block in doc["boundary"].values():
        assert set(block) == {"precision", "recall", "f", "tp", "fp", "fn"}
        assert all(isinstance(block[k], int) for k in ("tp", "fp", "fn"))
    assert doc["boundary"]["0.5"] == {
        "precision": 0.6,
        "recall": 0.5,
        "f": 0.5454545454545454,
        "tp": 6,
        "fp": 4,
        "fn": 6,
    }
    assert doc["boundary"]["3.0"] == {
        "precision": 0.9,
        "recall": 0.75,
        "f": 0.8181818181818182,
        "tp": 9,
        "fp": 1,
        "fn": 3,
    }
    assert (doc["pairwise"]["tp"], doc["pairwise"]["fp"], doc["pairwise"]["fn"]) == (511361, 81115, 15690)
    # the reference's 0.42 s leading silence breaks FMP's 2*tau spacing at both tolerances
    assert len(doc["warnings"]) == 2 and doc["warnings"][0].startswith("boundary tau 0.5: ")
    assert EvalResult.from_dict(doc).summary["boundary"] == doc["boundary"]


def test_sample_numbers_equal_mir_eval(capsys) -> None:
    mir_eval = pytest.importorskip("mir_eval")
    ri, rl = mir_eval.io.load_labeled_intervals(REF)
    ei, el = mir_eval.io.load_labeled_intervals(EST)
    doc = _json(capsys, "--tau", "0.5", "--tau", "3", "--trim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pw = mir_eval.segment.pairwise(ri, rl, ei, el, frame_size=0.1)
        for key in ("0.5", "3"):
            expected = mir_eval.segment.detection(ri, ei, window=float(key), trim=True)
            b = doc["boundary"][key]
            assert (b["precision"], b["recall"], b["f"]) == expected
    p = doc["pairwise"]
    assert (p["precision"], p["recall"], p["f"]) == tuple(float(x) for x in pw)


def test_default_taus_and_fmp_rule(capsys) -> None:
    doc = _json(capsys, "--rule", "fmp")
    assert doc["rule"] == "fmp" and list(doc["boundary"]) == ["0.5", "3.0"]
    # fmp: every estimate but the extra one at 76.1 s is in reach (TP 9, FP 1); only the missed chorus at
    # 153.01 s has no estimate in reach (FN 1). one_to_one leaves 0.42 and 180.93 unmatched too (FN 3).
    b = doc["boundary"]["3.0"]
    assert (b["tp"], b["fp"], b["fn"]) == (9, 1, 1)
    assert (b["precision"], b["recall"]) == (0.9, 0.9)


def test_table_output_is_readable(capsys) -> None:
    assert main(["mir", REF, EST, "--tau", "0.5", "--tau", "3.0"]) == 0
    out, err = capsys.readouterr()
    assert "pairwise frame-label (10 frames/s, 1824 frames)" in out
    assert "precision 0.8631  recall 0.9702  F 0.9135" in out
    assert "  0.5     0.6000  0.5000  0.5455     6     4     6" in out
    assert "  3.0     0.9000  0.7500  0.8182     9     1     3" in out
    # warnings once, on stderr only: the terminal's table leaves them out
    assert "warning: boundary tau 0.5:" in err and "warning:" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tau", "abc"], "--tau must be a number"),
        (["--tau", "-1"], "--tau must be a number >= 0"),
        (["--tau", "0.5", "--tau", "0.5"], "tolerance given twice: 0.5"),
        (["--frame-rate", "0"], "--frame-rate must be a positive number"),
    ],
)
def test_bad_options_exit_2(capsys, args: list, message: str) -> None:
    assert main(["mir", REF, EST, *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_bad_file_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lab"
    bad.write_text("0 10 A\n10 oops B\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "deteval", "mir", REF, str(bad)], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 2
    assert out.stderr.strip() == f"deteval: error: {bad}: line 2: end time 'oops' is not a number"
    assert "Traceback" not in out.stderr


def test_evaluate_mir_api_with_annotation_lists() -> None:
    ref = [[0, 4, "A"], [4, 7, "B"], [7, 10, "A"]]
    est = [[0, 1, "X"], [1, 3, "Y"], [3, 7, "Z"], [7, 9, "Y"], [9, 10, "X"]]
    res = evaluate_mir(ref, est, taus=[0, 1], rule="fmp", frame_rate=None)
    d = res.to_dict()
    assert (d["pairwise"]["tp"], d["pairwise"]["fp"], d["pairwise"]["fn"]) == (10, 3, 14)
    # boundaries: ref {0, 4, 7, 10}, est {0, 1, 3, 7, 9, 10}
    assert (d["boundary"]["0"]["tp"], d["boundary"]["0"]["fp"], d["boundary"]["0"]["fn"]) == (3, 3, 1)
    assert (d["boundary"]["1"]["tp"], d["boundary"]["1"]["fp"], d["boundary"]["1"]["fn"]) == (6, 0, 0)


def test_presets(capsys) -> None:
    doc = _json(capsys, "--config", "mir_eval_segment")
    assert (doc["rule"], doc["grid"], doc["frame_rate"], list(doc["boundary"])) == (
        "one_to_one",
        "mir_eval",
        10.0,
        ["0.5", "3.0"],
    )
    doc = _json(capsys, "--config", "fmp_boundary", "--tau", "3.0")
    assert doc["rule"] == "fmp" and list(doc["boundary"]) == ["3.0"]  # the flag wins over the default
    assert (doc["boundary"]["3.0"]["tp"], doc["boundary"]["3.0"]["fn"]) == (9, 1)


def test_unknown_format_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["mir", REF, EST, "--format", "xml"])
    assert info.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_output_file(tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.json"
    assert main(["mir", REF, EST, "--format", "json", "--output", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert json.loads(out.read_text(encoding="utf-8"))["protocol"] == "mir"


def test_csv_and_markdown_carry_the_nested_numbers(capsys) -> None:
    doc = _json(capsys, "--tau", "0.5")
    assert main(["mir", REF, EST, "--tau", "0.5", "--format", "csv"]) == 0
    rows = dict(line.split(",", 1) for line in capsys.readouterr().out.splitlines() if "," in line)
    assert float(rows["pairwise.f"]) == doc["pairwise"]["f"]
    assert float(rows["boundary.0.5.recall"]) == doc["boundary"]["0.5"]["recall"]
    assert main(["mir", REF, EST, "--tau", "0.5", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert f"| boundary.0.5.f | {doc['boundary']['0.5']['f']:.4f} |" in md
