"""Published COCO numbers: the cocoapi demo (val2014, 100 images), a detectron2 run, a keypoints case."""

from pathlib import Path

import numpy as np
import pytest
from _coco_cases import run_pycocotools

from deteval.detection.coco import evaluate_coco

DATA = Path(__file__).parent / "data" / "coco"
VAL = DATA / "coco_val2014_100"

BBOX = [
    0.5045806987249628,
    0.6969727247299577,
    0.5729816669904824,
    0.5856257209410443,
    0.5193996948036719,
    0.5013978986347466,
    0.38681277964578054,
    0.5936795762842003,
    0.595352982877607,
    0.6398109626113442,
    0.5664205978994309,
    0.5642905982905982,
]
SEGM = [
    0.3195452758576433,
    0.5622883972521636,
    0.29892653412086784,
    0.3873740315997838,
    0.31018272403369485,
    0.3269339071005138,
    0.2682297225711534,
    0.41544868114906375,
    0.4168394992198818,
    0.4694498622754236,
    0.37675922666197265,
    0.3814715099715099,
]
KPTS = [
    0.5048844884488449,
    0.7227722772277227,
    0.6336633663366337,
    0.46633663366336636,
    0.7504950495049505,
    0.5181818181818182,
    0.7272727272727273,
    0.6363636363636364,
    0.4666666666666666,
    0.75,
]


def test_val2014_bbox_official_numbers():
    ev = evaluate_coco(VAL / "instances_val2014_100.json", VAL / "instances_val2014_fakebbox100_results.json")
    np.testing.assert_allclose(ev.stats, BBOX, rtol=0, atol=1e-12)
    assert ev.precision.shape == (10, 101, 80, 4, 3)


def test_val2014_segm_official_numbers():
    ev = evaluate_coco(
        VAL / "instances_val2014_100.json",
        VAL / "instances_val2014_fakesegm100_results.json",
        iou_type="segm",
    )
    np.testing.assert_allclose(ev.stats, SEGM, rtol=0, atol=1e-12)


def test_val2014_printed_summary_matches_official_output():
    ev = evaluate_coco(VAL / "instances_val2014_100.json", VAL / "instances_val2014_fakebbox100_results.json")
    official = (VAL / "val2014_fake_eval_res.txt").read_text().split("type=bbox")[1]
    want = [" ".join(l.split()) for l in official.splitlines() if l.strip().startswith("Average")][:12]
    got = [" ".join(l.split()) for l in ev.lines]
    assert got == want


def test_fruits_detectron2_log():
    ev = evaluate_coco(
        DATA / "coco_fruits" / "fruit_val_coco_format.json",
        DATA / "coco_fruits" / "coco_instances_results.json",
    )
    want = [0.757732, 1.0, 0.917492, -1, 0.832871, 0.720163, 0.289583, 0.775, 0.775, -1, 0.8375, 0.74375]
    np.testing.assert_allclose(ev.stats, want, atol=5e-7)
    pc = ev.per_class()
    assert list(pc) == ["date", "fig", "hazelnut"]
    np.testing.assert_allclose([pc[c]["ap"] for c in pc], [0.79742, 0.64290, 0.83287], atol=5e-6)
    assert pc["date"]["aps"] == -1.0


def test_keypoints_published_numbers():
    ev = evaluate_coco(
        DATA / "coco_keypoints" / "gt_dataset.json",
        DATA / "coco_keypoints" / "dt_dataset.json",
        iou_type="keypoints",
    )
    np.testing.assert_allclose(ev.stats, KPTS, rtol=0, atol=1e-12)
    assert ev.precision.shape == (10, 101, 1, 3, 1)


@pytest.mark.slow
@pytest.mark.parametrize(
    "gt,dt,iou_type",
    [
        (VAL / "instances_val2014_100.json", VAL / "instances_val2014_fakebbox100_results.json", "bbox"),
        (VAL / "instances_val2014_100.json", VAL / "instances_val2014_fakesegm100_results.json", "segm"),
        (
            DATA / "coco_fruits" / "fruit_val_coco_format.json",
            DATA / "coco_fruits" / "coco_instances_results.json",
            "bbox",
        ),
        (
            DATA / "coco_keypoints" / "gt_dataset.json",
            DATA / "coco_keypoints" / "dt_dataset.json",
            "keypoints",
        ),
    ],
)
def test_fixtures_full_arrays_equal_pycocotools(gt, dt, iou_type):
    import json

    g, d = json.loads(gt.read_text()), json.loads(dt.read_text())
    stats, precision, recall, scores = run_pycocotools(g, d, iou_type)
    ev = evaluate_coco(g, d, iou_type=iou_type)
    assert np.array_equal(ev.precision, precision)
    assert np.array_equal(ev.recall, recall)
    assert np.array_equal(ev.scores, scores)
    assert np.array_equal(ev.stats, stats)
