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
COCO = ["coco", str(ROOT / "data_samples/coco/instances_val.json"), str(ROOT / "data_samples/coco/results_bbox.json")]


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
        assert "--progress" in subparser._option_string_actions, name
    # trec keeps trec_eval's -q (per-topic values); elsewhere -q is --quiet.
    assert sub.choices["trec"]._option_string_actions["-q"].dest != "quiet"
    assert sub.choices["voc"]._option_string_actions["-q"].dest == "quiet"
