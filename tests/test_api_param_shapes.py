"""MeanAveragePrecision's keys name the slice they hold for any number of maxDets, IoU thresholds or area
ranges (not only pycocotools' default 3 / 10 / 4). The oracle is pycocotools run with its default maxDets
[1, 10, 100]: its precision/recall arrays hold every slice a shorter or longer list reads."""

import numpy as np
import pytest
from _coco_cases import run_pycocotools
from test_api_torchmetrics import _per_image, _run, _val2014, keypoints_case


def _mean(a: np.ndarray) -> float:
    v = a[a > -1]
    return float(np.mean(v)) if v.size else -1.0


@pytest.fixture(scope="module")
def reference():
    gt, res = _val2014()
    _, precision, recall, _ = run_pycocotools(gt, res, "bbox", {"max_dets": [1, 10, 100]})
    return gt, res, precision, recall


def test_two_max_dets_fixed_compat_keys_hold_their_slices(reference):
    gt, res, precision, recall = reference
    r = _run(
        *_per_image(gt, res), box_format="xywh", max_detection_thresholds=[1, 10], params=None, compat="fixed"
    )
    areas = {"all": 0, "small": 1, "medium": 2, "large": 3}
    # fixed: every stat reads maxDets[-1] = 10 (index 1 of pycocotools' [1, 10, 100])
    assert r["map"] == _mean(precision[:, :, :, 0, 1])
    for area in ("small", "medium", "large"):
        assert r[f"map_{area}"] == _mean(precision[:, :, :, areas[area], 1])
        assert r[f"mar_{area}"] == _mean(recall[:, :, areas[area], 1]), area
    assert r["mar_1"] == _mean(recall[:, :, 0, 0])
    assert r["mar_10"] == _mean(recall[:, :, 0, 1])
    assert "mar_100" not in r and r["mar_small"] != r["mar_medium"]


def test_two_max_dets_pycocotools_compat_keys(reference):
    gt, res, _, recall = reference
    r = _run(*_per_image(gt, res), box_format="xywh", max_detection_thresholds=[1, 10])
    # pycocotools would crash; the stats read at maxDets[2] (and AP at 100) are -1, the others are right
    assert r["map"] == -1.0 and r["map_small"] == -1.0 and r["mar_small"] == -1.0
    assert r["mar_1"] == _mean(recall[:, :, 0, 0]) and r["mar_10"] == _mean(recall[:, :, 0, 1])


def test_four_max_dets_name_each_recall(reference):
    gt, res, precision, recall = reference
    preds, targets = _per_image(gt, res)
    r = _run(preds, targets, box_format="xywh", max_detection_thresholds=[1, 10, 100, 1000], compat="fixed")
    # fixed: AR over areas at maxDets[-1] = 1000 (no image has more than 100 detections per category here,
    # so it equals pycocotools' AR at 100); every maxDets value has its own key
    assert r["mar_1"] == _mean(recall[:, :, 0, 0]) and r["mar_10"] == _mean(recall[:, :, 0, 1])
    assert r["mar_100"] == _mean(recall[:, :, 0, 2]) == r["mar_1000"]
    assert r["mar_1000_per_class"] == -1.0
    p = _run(preds, targets, box_format="xywh", max_detection_thresholds=[1, 10, 20, 100])
    # pycocotools compat: stat 8 and the area recalls are read at maxDets[2] = 20
    assert p["mar_20"] == p.results["bbox"].summary["stats"][8]
    assert p["mar_100"] == _mean(recall[:, :, 0, 2]) and p["map"] == _mean(precision[:, :, :, 0, 2])


def test_keypoints_recall_key_names_the_max_dets_read():
    gt, res, pred, target = keypoints_case()
    stats = run_pycocotools(gt, res, "keypoints", {"max_dets": [20, 50]})[0]
    r = _run([pred], [target], iou_type="keypoints", box_format="xywh", max_detection_thresholds=[20, 50])
    # pycocotools reads every keypoint stat at maxDets 20 literally: the recall key says 20, not 50
    assert r["mar_20"] == stats[5] and r["map"] == stats[0] > 0.5
    # AR at maxDets 50 cannot be "mar_50" (AR at IoU 0.5 for keypoints)
    assert r["mar_50"] == stats[6] and r["mar_75"] == stats[7]
    assert r["mar_maxdets_50"] == _mean(
        run_pycocotools(gt, res, "keypoints", {"max_dets": [50]})[2][:, :, 0, 0]
    )
