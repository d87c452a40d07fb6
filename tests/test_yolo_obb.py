"""YOLO-OBB under the Ultralytics profiles against the numbers Ultralytics' own OBB code computed
(scripts/ultralytics_obb_expected.py: ``batch_probiou`` + ``match_predictions`` + ``ap_per_class`` +
``Metric`` of each version, on tests/data/ultralytics/obb-cases.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deteval.detection.box_table import BoxTable
from deteval.detection.ultralytics import evaluate_ultralytics, obb_pair_iou

DATA = Path(__file__).parent / "data" / "ultralytics"
CASES = {c["name"]: c for c in json.loads((DATA / "obb-cases.json").read_text())["cases"]}
VERSION_PROFILE = {
    "8.4.36": "ultralytics-8.0",
    "8.4.37": "ultralytics-8.4.37",
    "8.4.175": "ultralytics-8.4.37",
    "8.4.176": "ultralytics-8.4.176",
    "8.4.190": "ultralytics",
}


def obb_tables(case: dict) -> tuple[BoxTable, BoxTable, np.ndarray, np.ndarray, int]:
    gi, gc, gb, di, dc, db, dconf = [], [], [], [], [], [], []
    for i, im in enumerate(case["images"]):
        gi += [i] * len(im["gt_cls"])
        gc += im["gt_cls"]
        gb += im["gt_xywhr"]
        di += [i] * len(im["det_cls"])
        dc += im["det_cls"]
        db += im["det_xywhr"]
        dconf += im["conf"]
    g, d = np.asarray(gb, float).reshape(-1, 5), np.asarray(db, float).reshape(-1, 5)
    gt = BoxTable.from_arrays(gi, gc, np.c_[g[:, :2] - 1, g[:, :2] + 1])  # (boxes unused: the IoU is ProbIoU)
    dt = BoxTable.from_arrays(di, dc, np.c_[d[:, :2] - 1, d[:, :2] + 1], dconf)
    return gt, dt, g, d, len(case["images"])


@pytest.mark.parametrize("version", list(VERSION_PROFILE))
def test_every_obb_case_equals_ultralytics(version: str) -> None:
    data = json.loads((DATA / f"obb-expected-{version}.json").read_text())
    assert data["version"] == version and len(data["cases"]) == len(CASES)
    for name, want in data["cases"].items():
        gt, dt, g, d, n = obb_tables(CASES[name])
        got = evaluate_ultralytics(gt, dt, n, VERSION_PROFILE[version], iou=obb_pair_iou(g, d))
        assert got.classes.tolist() == want["ap_class_index"], name
        # Bit for bit (so within the 1e-12 asked of the profile): the same float64 values.
        assert got.ap.tolist() == want["ap"], name
        assert got.p.tolist() == want["p"], name
        assert got.r.tolist() == want["r"], name
        assert got.map == want["mAP50-95"], name
        assert got.map50 == want["mAP50"], name
        assert got.map75 == want["mAP75"], name
        assert got.precision == want["precision"], name
        assert got.recall == want["recall"], name


def test_the_cases_hold_what_they_claim() -> None:
    angles = np.concatenate(
        [np.asarray(im["gt_xywhr"]).reshape(-1, 5)[:, 4] for c in CASES.values() for im in c["images"]]
    )
    assert (np.abs(np.abs(angles) - np.float32(np.pi / 2)) < 1e-6).sum() > 5  # ±90°
    widths = np.concatenate(
        [np.asarray(im["gt_xywhr"]).reshape(-1, 5)[:, 2] for c in CASES.values() for im in c["images"]]
    )
    assert (widths == 0).sum() > 3  # zero-width boxes
    want = json.loads((DATA / "obb-expected-8.4.190.json").read_text())["cases"]
    assert sum(w["mAP50"] > 0 for w in want.values()) > 25  # the cases are not trivial
