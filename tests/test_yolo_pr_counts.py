"""Precision and recall counts of the coco and supervision profiles read from their evaluation, as matched again."""

from __future__ import annotations

import numpy as np
import pytest
from _yolo_cases import random_dataset

from deteval.analysis.inputs import coco_match_counts, coco_match_counts_of
from deteval.io.yolo_coco import coco_tables
from deteval.run.yolo import evaluate_yolo, load_split_and_predictions


def _both(data, pred, profile):
    ds, preds = load_split_and_predictions(str(data), str(pred), "val", profile)
    result = evaluate_yolo(ds, preds, profile)
    assert result.coco_run is not None
    return coco_match_counts_of(*result.coco_run), coco_match_counts(*coco_tables(ds, preds), iou=0.5)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("profile", ["coco", "supervision"])
def test_counts_of_the_evaluation_are_those_matched_again(tmp_path, seed, profile):
    """True positives, detections (at most 100 per image and class: one file holds 130 of a class) and
    positives per category: the second matching's, integer for integer."""
    data, pred, _ = random_dataset(tmp_path, seed, n_images=12)
    first = sorted(pred.iterdir())[0]
    rng = np.random.default_rng(seed)
    extra = "".join(
        f"1 {a:.6f} {b:.6f} 0.1 0.1 {c:.6f}\n"
        for a, b, c in zip(
            rng.uniform(0.2, 0.8, 130), rng.uniform(0.2, 0.8, 130), rng.uniform(0.001, 0.9, 130)
        )
    )
    first.write_text(first.read_text() + extra)
    got, want = _both(data, pred, profile)
    assert got is not None
    assert want[1].max() >= 100 and want[0].sum() > 0
    for a, b in zip(got, want):
        assert a.dtype == np.int64
        np.testing.assert_array_equal(a, b)


def test_no_counts_read_where_a_box_could_be_ignored(tmp_path):
    """A label whose area lies outside area range "all" (an image over 100,000 pixels a side) would be
    ignored: None, and the counts come from matching again."""
    data, pred, _ = random_dataset(tmp_path, 4, n_images=4)
    ds, preds = load_split_and_predictions(str(data), str(pred), "val", "coco")
    result = evaluate_yolo(ds, preds, "coco")
    ev, gt, res = result.coco_run
    assert coco_match_counts_of(ev, gt, res) is not None
    area = gt.area
    gt.area = area.copy()
    gt.area[0] = 1e11
    assert coco_match_counts_of(ev, gt, res) is None
    gt.area = area
    res.area = res.area.copy()
    res.area[0] = np.nan
    assert coco_match_counts_of(ev, gt, res) is None
    assert coco_match_counts_of(ev, *coco_tables(ds, preds), iou=0.75) is None
