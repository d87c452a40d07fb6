"""One sign for "delta" everywhere: the system under test minus its baseline (``deteval compare A B``:
B − A; ``--compare-to OTHER``: this system − OTHER), said in every output that shows a delta."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_stats import VOC_ARGS

from deteval.cli import main
from deteval.report.plots import figures
from deteval.results import load_result

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def weaker(tmp_path, monkeypatch):
    """System B of the VOC sample: every second detection dropped (a lower AP on some classes)."""
    for f in (ROOT / "data_samples/voc/results").glob("*.txt"):
        lines = f.read_text().splitlines()
        (tmp_path / f.name).write_text("".join(x + "\n" for i, x in enumerate(lines, 1) if i % 2))
    monkeypatch.chdir(ROOT)
    return str(tmp_path / "comp4_det_test_{cls}.txt")


def test_compare_and_compare_to_agree_on_the_sign(weaker, tmp_path, capsys):
    base, weak = tmp_path / "base.json", tmp_path / "weak.json"
    assert main([*VOC_ARGS, "--format", "json", "--output", str(base)]) == 0
    args = VOC_ARGS[:-1] + [weaker]
    assert main([*args, "--format", "json", "--output", str(weak)]) == 0
    # compare base weak: the weaker system under test, the base its baseline -> delta = weak - base < 0
    assert main(["compare", str(base), str(weak), "--format", "json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert cmp["delta"] == f"B ({weak}) - A ({base})"
    d_compare = cmp["fields"]["map"]["delta"]
    assert d_compare < 0
    for fmt in ("table", "markdown", "csv"):
        assert main(["compare", str(base), str(weak), "--format", fmt]) == 0
        assert f"B ({weak}) - A ({base})" in capsys.readouterr().out
    # --compare-to with the weaker system under test and the base as OTHER: the same delta, the same sign
    assert main([*args, "--compare-to", VOC_ARGS[-1], "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert f"b = {VOC_ARGS[-1]}; delta = a - b" in out
    assert main([*args, "--compare-to", VOC_ARGS[-1], "--bootstrap", "20", "--format", "json"]) == 0
    d_stats = json.loads(capsys.readouterr().out)["comparison"]["map"]["delta"]
    assert d_stats == d_compare


def test_class_deltas_plot_names_the_sign(weaker, tmp_path, capsys):
    saved = tmp_path / "cmp.json"
    args = [
        *VOC_ARGS,
        "--compare-to",
        weaker,
        "--bootstrap",
        "20",
        "--format",
        "json",
        "--output",
        str(saved),
    ]
    assert main(args) == 0
    ax = figures(load_result(str(saved)))["class_deltas.png"].axes[0]
    assert ax.get_xlabel().startswith(f"AP delta = this system - {weaker}, with its interval")
