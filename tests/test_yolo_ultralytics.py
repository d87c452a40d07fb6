"""The Ultralytics profiles against the numbers Ultralytics' own code computed (scripts/ultralytics_expected.py).

tests/data/ultralytics/expected-<version>.json holds, per case of cases.json, what that version's
``box_iou`` + ``DetectionValidator.match_predictions`` + ``ap_per_class`` + ``Metric`` returned.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _yolo_cases import case_tables as _tables

from deteval.detection.ultralytics import (
    IOU_THRESHOLDS_32,
    ap_per_class,
    evaluate_ultralytics,
    get_rules,
    match_image,
    with_rules,
)

DATA = Path(__file__).parent / "data" / "ultralytics"
CASES = {c["name"]: c for c in json.loads((DATA / "cases.json").read_text())["cases"]}
VERSION_PROFILE = {
    "8.0.239": "ultralytics-8.0",
    "8.3.253": "ultralytics-8.0",
    "8.4.36": "ultralytics-8.0",
    "8.4.37": "ultralytics-8.4.37",
    "8.4.175": "ultralytics-8.4.37",
    "8.4.176": "ultralytics-8.4.176",
    "8.4.190": "ultralytics",
}
EXPECTED = {v: json.loads((DATA / f"expected-{v}.json").read_text()) for v in VERSION_PROFILE}


def _run(case: dict, profile: str):
    rules = get_rules(profile)
    if "iou" in case:  # the worked example gives the IoU matrix itself
        im = case["images"][0]
        tp = match_image(
            np.asarray(case["iou"], dtype=np.float32),
            np.asarray(im["gt_cls"]),
            np.asarray(im["det_cls"]),
            IOU_THRESHOLDS_32,
            rules.matcher,
        )
        m = ap_per_class(
            tp,
            np.asarray(im["conf"], np.float32),
            np.asarray(im["det_cls"]),
            np.asarray(im["gt_cls"]),
            rules.sentinel,
        )
        return m, tp
    gt, dt, n = _tables(case)
    return evaluate_ultralytics(gt, dt, n, profile), None


@pytest.mark.fast_cases(version=1)
@pytest.mark.parametrize("version", list(VERSION_PROFILE))
def test_every_case_equals_ultralytics(version: str) -> None:
    data = EXPECTED[version]
    assert data["version"] == version
    profile = VERSION_PROFILE[version]
    for name, want in data["cases"].items():
        got, tp = _run(CASES[name], profile)
        if tp is not None:
            assert tp.astype(int).tolist() == want["tp"], name
        assert got.classes.tolist() == want["ap_class_index"], name
        # Bit for bit: the same float64 values, not approximately.
        assert got.ap.tolist() == want["ap"], name
        assert got.p.tolist() == want["p"], name
        assert got.r.tolist() == want["r"], name
        assert got.map == want["mAP50-95"], name
        assert got.map50 == want["mAP50"], name
        assert got.map75 == want["mAP75"], name
        assert got.precision == want["precision"], name
        assert got.recall == want["recall"], name


@pytest.mark.parametrize(
    ("profile", "ap50"),
    [("ultralytics-8.0", 0.6225), ("ultralytics-8.4.37", 0.495), ("ultralytics-8.4.176", 0.995)],
)
def test_worked_example_iou_matrix(profile: str, ap50: float) -> None:
    got, _ = _run(CASES["iou_matrix_0.9_0.8_0_0.7"], profile)
    assert got.map50 == pytest.approx(ap50, abs=1e-12)


def test_worked_examples_perfect_and_half_recall() -> None:
    for profile in ("ultralytics-8.0", "ultralytics-8.4.37", "ultralytics"):
        assert _run(CASES["perfect"], profile)[0].map == pytest.approx(0.995, abs=1e-12)
    assert _run(CASES["recall_half_precision_one"], "ultralytics-8.0")[0].map50 == pytest.approx(
        0.75, abs=1e-12
    )
    assert _run(CASES["recall_half_precision_one"], "ultralytics")[0].map50 == pytest.approx(0.495, abs=1e-12)


def test_float32_iou_misses_the_065_threshold() -> None:
    case = CASES["iou_0.65_float64_above_float32_below"]
    gt, dt, n = _tables(case)
    f32 = evaluate_ultralytics(gt, dt, n, "ultralytics")
    f64 = evaluate_ultralytics(gt, dt, n, with_rules("ultralytics", float32=False))
    assert f32.map == pytest.approx(0.995 * 3 / 10, abs=1e-12)  # TP at 0.50, 0.55, 0.60 only
    assert f64.map == pytest.approx(0.995 * 4 / 10, abs=1e-12)  # float64: 0.65 too


def test_the_tie_cases_really_have_ties() -> None:
    """The ties_* cases (compared above like every case) hold exact score ties and repeated labels."""
    ties = [c for name, c in CASES.items() if name.startswith("ties_")]
    assert len(ties) == 6
    confs = [x for c in ties for im in c["images"] for x in im["conf"]]
    assert len(confs) - len(set(confs)) > 50
    repeated = sum(
        len(im["gt_xyxy"]) - len({tuple(b) for b in im["gt_xyxy"]}) for c in ties for im in c["images"]
    )
    assert repeated > 5
