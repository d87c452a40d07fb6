"""``deteval explain`` between the VOC profiles: steps sum to the difference, ends are evaluate_voc's own."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main
from deteval.detection.voc import VOCDetections, VOCGroundTruth
from deteval.explain.voc import VOC_PROFILE_RULES, explain_voc
from deteval.run.voc import evaluate_voc

ROOT = Path(__file__).resolve().parent.parent / "data_samples" / "voc"


def _random(seed: int) -> tuple[VOCGroundTruth, VOCDetections]:
    rng = np.random.default_rng(seed)
    n_img, n_cls = 8, 3
    gi, gl, gb, gd, di, dl, db, ds = [], [], [], [], [], [], [], []
    for i in range(n_img):
        for _ in range(int(rng.integers(1, 5))):
            x, y = rng.integers(0, 300, 2)
            w, h = rng.integers(20, 120, 2)
            c = int(rng.integers(0, n_cls))
            gi.append(i), gl.append(c), gb.append([x, y, x + w, y + h]), gd.append(rng.random() < 0.15)
            for _ in range(int(rng.choice([0, 1, 1, 2]))):
                j = rng.integers(-12, 13, 4)
                di.append(i), dl.append(c), db.append([x + j[0], y + j[1], x + w + j[2], y + h + j[3]])
                # Coarse scores so that ties occur and the ranking rule can matter.
                ds.append(float(rng.integers(1, 8)) / 8)
    db = np.sort(np.asarray(db, dtype=float).reshape(-1, 2, 2), axis=1).reshape(-1, 4)
    gt = VOCGroundTruth.from_arrays(gi, gl, gb, gd, images=n_img, classes=n_cls)
    return gt, VOCDetections.from_arrays(di, dl, db, ds, images=n_img, classes=n_cls)


@pytest.mark.parametrize("seed", range(6))
def test_steps_sum_and_ends(seed: int) -> None:
    gt, dets = _random(seed)
    for a, b in itertools.permutations(VOC_PROFILE_RULES, 2):
        e = explain_voc(gt, dets, a, b)
        assert not any(s["rule"].startswith("residual") for s in e.steps)
        metric = "voc2010" if b == "voc2012" else "voc07"
        profile = "py_faster_rcnn" if b == "py_faster_rcnn" else "voc_devkit"
        assert e.end["mAP50"] == evaluate_voc(gt, dets, metric=metric, profile=profile).summary["map"]
        total = e.end["mAP50"] - e.start["mAP50"]
        assert sum(s["delta"]["mAP50"] for s in e.steps) == pytest.approx(total, abs=1e-12, rel=0)


def test_cli_on_the_voc_sample(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explain", str(ROOT / "Annotations"), str(ROOT / "results" / "comp4_det_test_{cls}.txt")]
    args += [
        "--image-set",
        str(ROOT / "ImageSets" / "Main" / "test.txt"),
        "--from",
        "voc07",
        "--to",
        "voc2012",
    ]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"][0]["rule"].startswith("AP: VOC07 11-point vs VOC2010+ all-point")
    assert out["from"]["mAP50-95"] is None
    assert sum(s["delta"]["mAP50"] for s in out["steps"]) == pytest.approx(
        out["to"]["mAP50"] - out["from"]["mAP50"], abs=1e-12
    )


def test_cli_refuses_mixing_voc_and_yolo_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(ROOT / "Annotations"), "x", "--from", "voc07", "--to", "ultralytics"]) == 2
    assert "not one of each" in capsys.readouterr().err
