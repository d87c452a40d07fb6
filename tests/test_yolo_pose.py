"""Ultralytics' pose metrics (box and OKS mAP as ``yolo val`` prints them) against the numbers Ultralytics' own
code computed (scripts/ultralytics_pose_expected.py: ``kpt_iou``, ``match_predictions``, ``ap_per_class``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deteval.detection.box_table import BoxTable
from deteval.detection.ultralytics import evaluate_ultralytics_pose, pose_sigmas, with_rules

DATA = Path(__file__).parent / "data" / "ultralytics"
CASES = {c["name"]: c for c in json.loads((DATA / "pose-cases.json").read_text())["cases"]}
#: version → the profile (rules) that reproduces its pose validator
VERSION_RULES = {
    "8.0.239": with_rules("ultralytics-8.0"),
    "8.4.36": with_rules("ultralytics-8.0", oks="product"),
    "8.4.37": with_rules("ultralytics-8.4.37"),
    "8.4.175": with_rules("ultralytics-8.4.37"),
    "8.4.176": with_rules("ultralytics-8.4.176"),
    "8.4.190": with_rules("ultralytics"),
}
EXPECTED = {v: json.loads((DATA / f"pose-expected-{v}.json").read_text()) for v in VERSION_RULES}


def _arrays(case: dict) -> tuple[BoxTable, np.ndarray, BoxTable, np.ndarray, int]:
    k = case["kpt_shape"][0]
    gi, gc, gb, gk, di, dc, db, dk, conf = [], [], [], [], [], [], [], [], []
    for i, im in enumerate(case["images"]):
        gi += [i] * len(im["gt_cls"])
        gc += im["gt_cls"]
        gb += im["gt_xyxy"]
        gk += im["gt_kpts"]
        di += [i] * len(im["det_cls"])
        dc += im["det_cls"]
        db += im["det_xyxy"]
        dk += im["det_kpts"]
        conf += im["conf"]
    return (
        BoxTable.from_arrays(gi, gc, gb),
        np.asarray(gk, dtype=np.float64).reshape(-1, k, 3),
        BoxTable.from_arrays(di, dc, db, conf),
        np.asarray(dk, dtype=np.float64).reshape(-1, k, 3),
        len(case["images"]),
    )


@pytest.mark.parametrize("version", list(VERSION_RULES))
def test_every_pose_case_equals_ultralytics(version: str) -> None:
    data = EXPECTED[version]
    assert data["version"] == version
    rules = VERSION_RULES[version]
    assert len(data["cases"]) >= 48
    for name, want in data["cases"].items():
        case = CASES[name]
        gt, gk, dt, dk, n = _arrays(case)
        sigma = pose_sigmas(tuple(case["kpt_shape"]), rules.oks, case.get("kpt_oks_sigmas"))
        box, pose = evaluate_ultralytics_pose(gt, gk, dt, dk, n, rules, sigma)
        for got, w in ((box, want["box"]), (pose, want["pose"])):
            assert got.classes.tolist() == w["ap_class_index"], name
            # Bit for bit: the same float64 values, not approximately.
            assert got.ap.tolist() == w["ap"], name
            assert got.p.tolist() == w["p"], name
            assert got.r.tolist() == w["r"], name
            assert got.map == w["mAP50-95"], name
            assert got.map50 == w["mAP50"], name
            assert got.precision == w["precision"], name
            assert got.recall == w["recall"], name


def test_the_cases_cover_the_skeletons_and_visibilities() -> None:
    shapes = {tuple(c["kpt_shape"]) for c in CASES.values()}
    assert {(1, 3), (5, 3), (17, 3), (17, 2), (68, 3)} <= shapes
    vis = {v for c in CASES.values() for im in c["images"] for kp in im["gt_kpts"] for _, _, v in kp}
    assert vis == {0.0, 1.0, 2.0}
    # some pose numbers differ from the box numbers, and not all are 0
    data = EXPECTED["8.4.190"]["cases"]
    assert any(w["pose"]["mAP50-95"] != w["box"]["mAP50-95"] for w in data.values())
    assert all(0 <= w["pose"]["mAP50-95"] <= 0.995 for w in data.values())
    assert sum(w["pose"]["mAP50-95"] > 0.2 for w in data.values()) > 10


def test_sigma_rules() -> None:
    coco84 = pose_sigmas((17, 3), "product")
    coco80 = pose_sigmas((17, 3), "divided")
    assert coco84.dtype == np.float32 and coco80.dtype == np.float32
    assert np.allclose(coco84, coco80, rtol=1e-6)
    assert pose_sigmas((17, 2), "product").tolist() == [np.float32(1 / 17)] * 17
    assert pose_sigmas((5, 3), "product", [0.1] * 5).tolist() == [np.float32(0.1)] * 5
