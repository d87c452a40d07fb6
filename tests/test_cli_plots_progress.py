"""--plots on the detection subcommands, --curves in saved JSON, --quiet / --progress on every subcommand."""

import json
from pathlib import Path

from PIL import Image

from deteval.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
VOC = [
    "voc",
    "--annotations", str(ROOT / "data_samples/voc/Annotations"),
    "--image-set", str(ROOT / "data_samples/voc/ImageSets/Main/test.txt"),
    "--detections", str(ROOT / "data_samples/voc/results/comp4_det_test_{cls}.txt"),
]  # fmt: skip
COCO = [
    "coco",
    str(ROOT / "data_samples/coco/instances_val.json"),
    str(ROOT / "data_samples/coco/results_bbox.json"),
]


def _pngs(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: Image.open(p).size for p in sorted(folder.glob("*.png"))}


def test_voc_plots(tmp_path, capsys):
    assert main([*VOC, "--plots", str(tmp_path)]) == 0
    sizes = _pngs(tmp_path)
    assert set(sizes) == {"pr_curves.png", "pr_overlay.png", "ap_bars.png"}
    assert sizes["pr_overlay.png"] == (800, 600)
    assert "wrote 3 plot(s)" in capsys.readouterr().err


def test_coco_plots_include_the_precision_figures(tmp_path, capsys):
    assert main([*COCO, "--plots", str(tmp_path), "--quiet"]) == 0
    sizes = _pngs(tmp_path)
    assert {"coco_precision.png", "coco_precision_all.png", "ap_bars.png"} <= set(sizes)
    captured = capsys.readouterr()
    assert captured.err == "" and "Average Precision" in captured.out


def test_saved_curves_feed_report_plots(tmp_path, capsys):
    saved = tmp_path / "voc.json"
    assert main([*VOC, "--format", "json", "--curves", "-o", str(saved)]) == 0
    doc = json.loads(saved.read_text())
    assert set(doc["curves"]) == set(doc["per_class"])
    car = doc["curves"]["car"]
    assert len(car["recall"]) == doc["per_class"]["car"]["tp"] + doc["per_class"]["car"]["fp"]
    assert main(["report", str(saved), "--plots", str(tmp_path / "figs")]) == 0
    assert "pr_curves.png" in _pngs(tmp_path / "figs")
    plain = tmp_path / "plain.json"
    assert main([*VOC, "--format", "json", "-o", str(plain)]) == 0
    assert "curves" not in json.loads(plain.read_text())


def test_every_subcommand_takes_quiet_and_progress():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, subparser in sub.choices.items():
        assert "--quiet" in subparser._option_string_actions, name
        # presets only lists files: no progress to show, so no --progress that would do nothing
        assert ("--progress" in subparser._option_string_actions) == (name != "presets"), name
    # trec keeps trec_eval's -q (per-topic values); elsewhere -q is --quiet.
    assert sub.choices["trec"]._option_string_actions["-q"].dest != "quiet"
    assert sub.choices["voc"]._option_string_actions["-q"].dest == "quiet"


def test_staged_progress_counts_each_stage_once():
    import io

    from deteval.report.progress import Progress, configure

    configure()
    stream = io.StringIO()
    with Progress(3, "job", enabled=True, stream=stream, min_interval=0) as bar:
        bar.stage("one")
        assert bar.count == 0 and bar.desc == "job: one"
        bar.stage("two")
        bar.stage("three")
        assert bar.count == 2
    assert bar.count == 3 and bar.desc == "job"
    frames = stream.getvalue().split("\r")[1:]
    assert frames[0].startswith("job: one:   0% ") and frames[-1].startswith("job: 100% ")
    assert frames[-1].endswith("\n")


def test_voc_progress_on_request_and_silenced_by_quiet(capsys):
    assert main([*VOC, "--progress"]) == 0
    err = capsys.readouterr().err
    assert "deteval voc: reading annotations" in err and "deteval voc: 100% " in err
    assert main([*VOC, "--progress", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "map:" in captured.out
    # Not a terminal and not asked for: no bar.
    assert main(VOC) == 0
    assert capsys.readouterr().err == ""


TREC = ["trec", str(ROOT / "data_samples/trec/qrels.txt"), str(ROOT / "data_samples/trec/run.txt")]


def test_coco_and_trec_progress_stages(capsys):
    assert main([*COCO, "--progress"]) == 0
    err = capsys.readouterr().err
    for stage in ("reading ground truth", "reading results", "matching and accumulating"):
        assert f"deteval coco: {stage}" in err
    assert main([*TREC, "--progress"]) == 0
    err = capsys.readouterr().err
    assert "deteval trec: reading qrels" in err and "deteval trec: 100% " in err


def test_trec_warnings_go_to_stderr_unless_quiet(capsys):
    # The sample has a judged topic the run lacks: trec_eval's format has no room for the warning.
    assert main(TREC) == 0
    captured = capsys.readouterr()
    assert "deteval: warning: 1 qrels topic(s) absent from the run" in captured.err
    assert main([*TREC, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.startswith("runid")


def test_trec_unwritable_output_is_a_clean_error(tmp_path, capsys):
    assert main([*TREC, "-o", str(tmp_path / "missing" / "out.txt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deteval: error: ") and "cannot write the output" in err and "out.txt" in err
