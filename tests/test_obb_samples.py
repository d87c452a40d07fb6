"""The README's oriented-box commands on data_samples/obb/ (scripts/make_obb_sample.py), each against its live
reference: hotcoco's OBB mode for the COCO JSON, the DOTA devkit for the DOTA files; the YOLO-OBB copy of the
same case under both profiles."""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "obb"


def run_json(args: list[str], tmp_path: Path) -> dict:
    out = tmp_path / "out.json"
    assert main([*args, "--format", "json", "--output", str(out)]) == 0
    return json.loads(out.read_text())


def test_coco_obb_sample_equals_hotcoco(tmp_path):
    hotcoco = pytest.importorskip("hotcoco")
    got = run_json(
        [
            "coco",
            str(SAMPLE / "coco" / "gt.json"),
            str(SAMPLE / "coco" / "results.json"),
            "--iou-type",
            "obb",
        ],
        tmp_path,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coco = hotcoco.COCO(str(SAMPLE / "coco" / "gt.json"))
        ev = hotcoco.COCOeval(coco, coco.loadRes(str(SAMPLE / "coco" / "results.json")), "obb")
        ev.evaluate()
        ev.accumulate()
        with contextlib.redirect_stdout(io.StringIO()):
            ev.summarize()
    assert got["iou_type"] == "obb"
    np.testing.assert_array_equal(got["stats"], np.asarray(ev.stats))


def test_dota_sample_equals_the_devkit(tmp_path):
    task1 = pytest.importorskip("dotadevkit.evaluate.task1")
    got = run_json(["dota", str(SAMPLE / "dota" / "labelTxt"), str(SAMPLE / "dota" / "det")], tmp_path)
    (tmp_path / "set.txt").write_text("im0\nim1\nim2\n")
    for name in ("plane", "ship"):
        with contextlib.redirect_stdout(io.StringIO()):
            _, _, ap = task1.voc_eval(
                str(SAMPLE / "dota" / "det" / "Task1_{:s}.txt"), str(SAMPLE / "dota" / "labelTxt" / "{:s}.txt"),
                str(tmp_path / "set.txt"), name, ovthresh=0.5, use_07_metric=True,
            )  # fmt: skip
        assert got["per_class"][name]["ap"] == float(ap)


def test_yolo_obb_sample_under_both_profiles(tmp_path):
    data, preds = str(SAMPLE / "yolo" / "data.yaml"), str(SAMPLE / "yolo" / "predictions")
    ultra = run_json(["yolo", data, preds, "--task", "obb"], tmp_path)
    coco = run_json(["yolo", data, preds, "--task", "obb", "--profile", "coco"], tmp_path)
    assert ultra["profile"] == "ultralytics" and coco["profile"] == "coco"
    assert ultra["iou_type"] == coco["iou_type"] == "obb"
    assert 0.5 < ultra["mAP50"] < 1 and 0.5 < coco["mAP50"] < 1
    # the COCO JSON holds the same boxes with one crowd region per image; YOLO has no crowds
    assert coco["mAP50-95"] != pytest.approx(0.0)


def test_coco_obb_with_intervals_and_a_comparison(tmp_path):
    gt, res = str(SAMPLE / "coco" / "gt.json"), str(SAMPLE / "coco" / "results.json")
    plain = run_json(["coco", gt, res, "--iou-type", "obb"], tmp_path)
    out = run_json(["coco", gt, res, "--iou-type", "obb", "--compare-to", res, "--bootstrap", "30"], tmp_path)
    assert out["stats"] == plain["stats"]  # the statistics resample the same OBB matches
    ap = out["comparison"]["AP"]  # the same results against themselves: no difference, p = 1
    assert ap["a"] == ap["b"] == plain["stats"][0] and ap["delta"] == 0.0 and ap["p_value"] == 1.0
