"""The report, compare and presets subcommands, end to end through deteval.cli.main."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from report_samples import VOC_CLASSES, coco_result, mir_result, trec_result, voc_result

from deteval import config
from deteval.cli import main
from deteval.errors import ConfigError, ValidationError
from deteval.report import render
from deteval.report.compare import compare_results
from deteval.results import EvalResult


def _save(path: Path, result: EvalResult, curves: bool = False) -> Path:
    path.write_text(result.to_json(include_curves=curves))
    return path


# --- deteval report -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
@pytest.mark.parametrize("make", [voc_result, coco_result, trec_result, mir_result])
def test_report_re_renders_a_saved_result(tmp_path, capsys, fmt, make):
    result = make()
    path = _save(tmp_path / "r.json", result, curves=True)
    assert main(["report", str(path), "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert out == render(result, fmt, include_curves=bool(result.curves))


def test_report_default_format_output_file_and_curves_kept(tmp_path, capsys):
    result = voc_result()
    path = _save(tmp_path / "r.json", result, curves=True)
    assert main(["report", str(path)]) == 0
    assert capsys.readouterr().out.startswith("metric: voc07\niou_threshold: 0.5000\nmap: ")
    out = tmp_path / "again.json"
    assert main(["report", str(path), "--format", "json", "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert json.loads(out.read_text()) == json.loads(path.read_text())  # curves survive a re-render


@pytest.mark.slow
def test_report_plots(tmp_path, capsys):
    path = _save(tmp_path / "r.json", voc_result(), curves=True)
    figs = tmp_path / "figs"
    assert main(["report", str(path), "--plots", str(figs), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # --quiet: the result only
    assert sorted(p.name for p in figs.iterdir()) == ["ap_bars.png", "pr_curves.png", "pr_overlay.png"]
    with Image.open(figs / "pr_overlay.png") as im:
        assert im.size == (800, 600)
    assert main(["report", str(path), "--plots", str(tmp_path / "f2")]) == 0
    assert "wrote 3 plot(s)" in capsys.readouterr().err


def test_report_errors_name_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"protocol": "voc",\n "map": }')
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"deteval: error: {bad}: line 2: invalid JSON")
    assert main(["report", str(tmp_path / "none.json")]) == 2
    assert "cannot read result file" in capsys.readouterr().err


# --- deteval compare ------------------------------------------------------------------------------------


def _pair():
    a = voc_result(0)
    b = voc_result(0, classes=VOC_CLASSES[1:] + ["cat"], shift=0.1)
    return a, b


def test_compare_rows_deltas_and_order():
    a, b = _pair()
    c = compare_results(a, b, sources=("a.json", "b.json"))
    assert c.protocol == "compare"
    assert c.summary["compared"] == "voc" and c.summary["metric"] == "ap"
    rows = c.per_class
    common = list(VOC_CLASSES[1:])
    for n in common:
        assert rows[n]["a"] == a.per_class[n]["ap"] and rows[n]["b"] == b.per_class[n]["ap"]
        assert rows[n]["delta"] == b.per_class[n]["ap"] - a.per_class[n]["ap"]
        assert rows[n]["present"] == "both"
    deltas = [rows[n]["delta"] for n in list(rows)[:4]]
    assert deltas == sorted(deltas, reverse=True)
    # one-sided classes are listed, after the compared ones, with null values
    assert list(rows)[4:] == ["aeroplane", "cat"]
    assert rows["aeroplane"] == {
        "a": a.per_class["aeroplane"]["ap"],
        "b": None,
        "delta": None,
        "present": "A only",
    }
    assert rows["cat"]["present"] == "B only" and rows["cat"]["a"] is None
    assert c.summary["classes"] == {"both": 4, "a_only": 1, "b_only": 1, "with_delta": 4}
    mean = c.summary["mean_over_common"]
    assert mean["a"] == pytest.approx(sum(a.per_class[n]["ap"] for n in common) / 4, abs=1e-15)
    assert c.summary["fields"]["map"] == {
        "a": a.summary["map"],
        "b": b.summary["map"],
        "delta": b.summary["map"] - a.summary["map"],
    }
    assert "1 class(es) only in A: aeroplane" in c.warnings
    assert "1 class(es) only in B: cat" in c.warnings
    assert "A: 2 detections with an unknown image id were skipped" in c.warnings


def test_compare_sort_options():
    a, b = _pair()
    by_abs = compare_results(a, b, sort="abs").per_class
    absd = [abs(r["delta"]) for r in list(by_abs.values())[:4]]
    assert absd == sorted(absd, reverse=True)
    assert list(compare_results(a, b, sort="name").per_class) == [
        "bicycle",
        "bird",
        "boat",
        "bottle",
        "aeroplane",
        "cat",
    ]
    assert list(compare_results(a, b, sort="none").per_class) == [*VOC_CLASSES, "cat"]
    rev = list(compare_results(a, b, reverse=True).per_class.values())
    assert [r["delta"] for r in rev[:4]] == sorted(r["delta"] for r in rev[:4])
    with pytest.raises(ConfigError, match="unknown sort"):
        compare_results(a, b, sort="random")


def test_compare_metric_choice():
    a, b = _pair()
    c = compare_results(a, b, metric="npos")
    assert c.summary["metric"] == "npos"
    assert all(isinstance(r["a"], (int, type(None))) for r in c.per_class.values())
    with pytest.raises(ConfigError, match="numeric columns: ap, npos, ndet, tp, fp"):
        compare_results(a, b, metric="f1")
    # no "ap" column: the first numeric one (TREC per-topic "map")
    t = compare_results(trec_result(), trec_result())
    assert t.summary["metric"] == "map" and [r["delta"] for r in t.per_class.values()] == [0.0, 0.0]
    assert t.summary["fields"]["all.num_q"] == {"a": 2, "b": 2, "delta": 0}


def test_compare_summary_only_protocols_and_differing_settings():
    a = mir_result()
    b = mir_result()
    b.summary["rule"] = "libfmp"
    b.summary["boundary"]["0.5"]["f"] = 0.5
    c = compare_results(a, b)
    assert c.per_class == {} and "metric" not in c.summary
    assert c.summary["fields"]["boundary.0.5.f"]["delta"] == 0.5 - 2 / 3
    assert any("'rule' differs (A: mir_eval, B: libfmp)" in w for w in c.warnings)
    with pytest.raises(ConfigError, match="neither result has per-class rows"):
        compare_results(a, b, metric="f")


def test_compare_null_values_and_nan():
    a = EvalResult("coco", {}, {"x": {"ap": 0.5}, "y": {"ap": None}, "z": {"ap": float("nan")}})
    b = EvalResult("coco", {}, {"x": {"ap": 0.25}, "y": {"ap": 0.5}, "z": {"ap": 0.5}})
    c = compare_results(a, b)
    assert c.per_class["x"]["delta"] == -0.25
    assert c.per_class["y"] == {"a": None, "b": 0.5, "delta": None, "present": "both"}
    assert c.per_class["z"]["a"] is None
    assert "2 class(es) without a ap value on one side: y, z" in c.warnings


def test_compare_different_protocols_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(ValidationError, match="cannot compare a 'voc' result with a 'coco' result"):
        compare_results(voc_result(), coco_result())
    pa = _save(tmp_path / "a.json", voc_result())
    pb = _save(tmp_path / "b.json", coco_result())
    assert main(["compare", str(pa), str(pb)]) == 2
    assert capsys.readouterr().err == (
        f"deteval: error: {pb}: cannot compare a 'voc' result with a 'coco' result: "
        "both files must come from the same protocol\n"
    )


def test_compare_command_formats(tmp_path, capsys):
    a, b = _pair()
    pa, pb = _save(tmp_path / "a.json", a), _save(tmp_path / "b.json", b)
    assert main(["compare", str(pa), str(pb), "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["class", "a", "b", "delta", "present"]
    body = {r[0]: r for r in rows[1:7]}
    assert float(body["bird"][3]) == b.per_class["bird"]["ap"] - a.per_class["bird"]["ap"]
    assert body["cat"][1:] == ["", repr(b.per_class["cat"]["ap"]), "", "B only"]
    assert main(["compare", str(pa), str(pb), "--format", "json", "--metric", "tp"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["protocol"] == "compare" and doc["metric"] == "tp" and doc["a"] == str(pa)
    assert doc["per_class"]["bird"]["delta"] == b.per_class["bird"]["tp"] - a.per_class["bird"]["tp"]
    assert main(["compare", str(pa), str(pb), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| class | a | b | delta | present |" in md and "| cat | - |" in md
    assert main(["compare", str(pa), str(pb)]) == 0
    table = capsys.readouterr().out
    assert "metric: ap" in table and "aeroplane" in table
    assert main(["compare", str(pa), str(pb), "--metric", "nope"]) == 2
    assert "no numeric per-class column 'nope'" in capsys.readouterr().err


# --- deteval presets ------------------------------------------------------------------------------------


def _presets_only_in(monkeypatch, folder):
    # Presets are looked up as the package deteval.configs (found under wheel and editable installs) and then
    # as the checkout's configs/ folder: hide the first, point the second at ``folder``.
    monkeypatch.setattr(config, "_PRESET_PACKAGE", "deteval_no_such_preset_package")
    monkeypatch.setattr(config, "_CHECKOUT_DIR", folder)


def test_presets_empty_folder(tmp_path, monkeypatch, capsys):
    _presets_only_in(monkeypatch, tmp_path)
    assert main(["presets"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"deteval: no presets found in {tmp_path}; pass --config path/to/file.toml to use your own\n"
    )


def test_presets_missing_folder(tmp_path, monkeypatch, capsys):
    _presets_only_in(monkeypatch, tmp_path / "absent")
    assert main(["presets"]) == 0
    assert "no presets found (no preset folder is installed)" in capsys.readouterr().err


def test_presets_listing(tmp_path, monkeypatch, capsys):
    (tmp_path / "voc07.toml").write_text('# Pascal VOC 2007: 11-point AP, IoU 0.5\nmetric = "voc07"\n')
    (tmp_path / "bare.toml").write_text('metric = "x"\n')
    (tmp_path / "latin1.toml").write_bytes(b"# caf\xe9 preset\n")
    (tmp_path / "notes.txt").write_text("# not a preset\n")
    _presets_only_in(monkeypatch, tmp_path)
    assert main(["presets"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "bare",
        "latin1  caf\ufffd preset",
        "voc07   Pascal VOC 2007: 11-point AP, IoU 0.5",
    ]
    assert err == ""


def test_installed_preset_package_wins_over_a_configs_folder_beside_it(tmp_path, monkeypatch, capsys):
    # Installed, the folder beside the package is site-packages/configs, another distribution's: it must not
    # be read while the deteval.configs package is importable.
    package = tmp_path / "site" / "deteval_test_presets"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "shipped.toml").write_text('# the shipped one\nmetric = "voc07"\n')
    foreign = tmp_path / "site" / "configs"
    foreign.mkdir()
    (foreign / "coco.toml").write_text('# not deteval\'s\nmetric = "x"\n')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(config, "_PRESET_PACKAGE", "deteval_test_presets")
    monkeypatch.setattr(config, "_CHECKOUT_DIR", foreign)
    assert config.list_presets() == {"shipped": "the shipped one"}
    assert config.resolve_preset("shipped") == package / "shipped.toml"
    with pytest.raises(config.ConfigError, match="unknown preset 'coco'"):
        config.resolve_preset("coco")
    assert main(["presets"]) == 0
    assert capsys.readouterr().out == "shipped  the shipped one\n"


def test_shipped_presets_are_found_however_deteval_is_imported():
    # Editable or wheel install: the deteval.configs package; a bare source tree: the checkout's configs/.
    presets = config.list_presets()
    on_disk = {p.stem for p in (Path(__file__).resolve().parent.parent / "configs").glob("*.toml")}
    assert set(presets) == on_disk and {"coco", "voc07", "voc2012"} <= on_disk
    assert all(presets.values())  # every shipped preset starts with its one-line description
