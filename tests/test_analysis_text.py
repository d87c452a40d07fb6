"""The table output shows what the analysis options computed (per-class operating points, reliability bins),
and the options that write files say so on stderr, as ``--plots`` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deteval.cli import main

S = Path(__file__).resolve().parent.parent / "data_samples" / "voc"
VOC = [
    "voc", "--annotations", str(S / "Annotations"), "--image-set", str(S / "ImageSets" / "Main" / "test.txt"),
    "--detections", str(S / "results" / "comp4_det_test_{cls}.txt"),
]  # fmt: skip


def test_operating_points_and_calibration_print_their_per_class_values(capsys):
    assert main([*VOC, "--operating-points", "--calibration", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main([*VOC, "--operating-points", "--calibration"]) == 0
    out = capsys.readouterr().out
    for name, best in doc["operating_points"]["per_class"].items():
        at_global = doc["operating_points"]["global"]["f1"][name]
        row = f"  {name:<7} {best['threshold']:>9.4g} {best['precision']:6.4f} {best['recall']:6.4f} "
        row += f"{best['f1']:6.4f} {best['tp']:6d} {best['fp']:6d} {best['n_gt']:6d} {at_global:9.4f}"
        assert row in out, row
    bins = doc["calibration"]["bins"]
    assert sum(bins["count"]) == 28 and len(bins["count"]) == 10
    for i, (n, conf, acc) in enumerate(zip(bins["count"], bins["confidence"], bins["accuracy"])):
        lo, hi = bins["edges"][i], bins["edges"][i + 1]
        span = f"[{lo:.2f}, {hi:.2f}{']' if i == 9 else ')'}"
        assert f"  {span:<11} {n:>10} {conf:10.4f} {acc:9.4f} {acc - conf:+7.4f}" in out


@pytest.mark.slow  # (above a second of CPU: full suite only)
def test_images_and_html_say_what_they_wrote(tmp_path, capsys):
    html, images = tmp_path / "r.html", tmp_path / "img"
    assert main([*VOC, "--images", str(images), "--worst-images", "2", "--html", str(html)]) == 0
    err = capsys.readouterr().err
    drawn = sorted(p.name for p in images.iterdir())
    assert len(drawn) == 2 and f"deteval: wrote 2 image(s) to {images}: {drawn[0]}, ..." in err
    assert f"deteval: wrote the HTML report to {html}" in err and html.stat().st_size > 10_000
    assert main([*VOC, "--images", str(images), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("compat", ["pycocotools", "fixed"])
def test_tide_base_ap_is_the_printed_ap50_with_four_max_dets(compat, capsys):
    """The error block's AP is the AP50 the same run prints, also when the summary reads it at maxDets[2]
    (pycocotools' rule with four maxDets; the sample has more than 3 detections per image and category)."""
    c = Path(__file__).resolve().parent.parent / "data_samples" / "coco"
    args = ["coco", str(c / "instances_val.json"), str(c / "results_bbox.json"), "--max-dets", "1,2,3,4"]
    assert main([*args, "--compat", compat, "--errors", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"]["ap"] == doc["AP50"]
    assert (doc["AP50"] == 0.8118811881188119) == (compat == "pycocotools")  # at maxDets 3 and 4 they differ
