"""evaluate_voc_at (one preparation and one best-box search for many IoU thresholds) against evaluate_voc run
once per threshold: the same result, field for field, for both profiles and both metrics."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.detection.voc import VOCDetections, VOCGroundTruth
from deteval.run.voc import evaluate_voc, evaluate_voc_at

THRESHOLDS = [0.0, 0.3, 0.5, 0.5, 0.75, 0.95, 1.0]


def _tables(seed: int) -> tuple[VOCGroundTruth, VOCDetections]:
    """Ground truth boxes (a fifth difficult), and detections: jittered copies of them (some several times,
    some in another class) and random boxes, scores rounded to one decimal (ties)."""
    rng = np.random.default_rng(seed)
    n_img, n = int(rng.integers(1, 8)), int(rng.integers(0, 40))
    xy = rng.integers(1, 40, size=(n, 2)).astype(float)
    g_boxes = np.concatenate([xy, xy + rng.integers(0, 20, size=(n, 2))], axis=1)
    g_img, g_cls = rng.integers(0, n_img, n), rng.integers(0, 3, n)
    src = rng.integers(0, n, int(rng.integers(0, 3 * n + 1))) if n else np.zeros(0, dtype=np.int64)
    near = g_boxes[src] + np.round(rng.normal(0, 2, (len(src), 4)), 1)
    k = int(rng.integers(0, 20))
    xy = rng.integers(1, 40, size=(k, 2)).astype(float)
    d_boxes = np.concatenate([near, np.concatenate([xy, xy + rng.integers(0, 20, size=(k, 2))], axis=1)])
    d_boxes[:, :2] = d_boxes[:, :2].clip(1, None)
    d_boxes[:, 2:] = np.maximum(d_boxes[:, 2:], d_boxes[:, :2])
    d_cls = np.concatenate([np.where(rng.random(len(src)) < 0.9, g_cls[src], rng.integers(0, 3, len(src))),
                            rng.integers(0, 3, k)])  # fmt: skip
    d_img = np.concatenate([g_img[src], rng.integers(0, n_img, k)])
    images, classes = [f"im{i}" for i in range(n_img)], ["a", "b", "c"]
    gt = VOCGroundTruth.from_arrays(
        g_img, g_cls, g_boxes, rng.random(n) < 0.2, images=images, classes=classes
    )
    scores = np.round(rng.random(len(d_img)), 1)
    return gt, VOCDetections.from_arrays(d_img, d_cls, d_boxes, scores, images=images, classes=classes)


@pytest.mark.fast_cases(seed=0)
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("metric", "profile"), [("voc07", "voc_devkit"), ("voc2010", "voc_devkit"),
                                                 ("voc07", "py_faster_rcnn")])  # fmt: skip
def test_many_thresholds_equal_one_evaluation_each(seed, metric, profile):
    gt, dets = _tables(seed)
    got = evaluate_voc_at(gt, dets, THRESHOLDS, metric=metric, profile=profile)
    assert len(got) == len(THRESHOLDS)
    for t, res in zip(THRESHOLDS, got):
        expected = evaluate_voc(gt, dets, iou_threshold=t, metric=metric, profile=profile)
        assert res.to_dict() == expected.to_dict()
        assert res.summary["iou_threshold"] == t


def test_no_threshold_no_result():
    gt, dets = _tables(1)
    assert evaluate_voc_at(gt, dets, []) == []
