"""The YOLO split as COCO tables built from its arrays (``coco_tables``) against the tables read from its COCO
records, and the precision/recall counts of the vectorized matcher against the per-image matcher's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _yolo_cases import random_dataset, write_image

from deteval.analysis.inputs import coco_match_counts, coco_matched
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_coco import coco_tables
from deteval.run.yolo import coco_inputs

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"


def _numeric_stems(root: Path) -> tuple[Path, Path]:
    """Numeric stems whose id order is not the file order ("10" sorts before "9"); "100" unlabelled, "8"
    without labels or predictions (its size never read)."""
    root.mkdir(exist_ok=True)
    (root / "data.yaml").write_text(f"path: {root}\nval: images/val\nnames:\n  0: a\n  1: b\n  2: c\n")
    rows = {"9": "0 0.5 0.5 0.2 0.3\n2 0.3 0.3 0.1 0.1\n", "10": "1 0.4 0.6 0.3 0.2\n", "100": "", "8": ""}
    preds = {"9": "0 0.5 0.5 0.2 0.31 0.9\n2 0.31 0.3 0.1 0.1 0.4\n", "10": "1 0.4 0.6 0.3 0.2 0.7\n",
             "100": "0 0.5 0.5 0.1 0.1 0.2\n", "8": ""}  # fmt: skip
    for k, (stem, text) in enumerate(rows.items()):
        write_image(root / "images" / "val" / f"{stem}.png", 100 + 10 * k, 80)
        if text:
            (root / "labels" / "val").mkdir(parents=True, exist_ok=True)
            (root / "labels" / "val" / f"{stem}.txt").write_text(text)
        (root / "pred").mkdir(exist_ok=True)
        if preds[stem]:
            (root / "pred" / f"{stem}.txt").write_text(preds[stem])
    return root / "data.yaml", root / "pred"


def _splits(tmp_path: Path) -> list[tuple[Path, Path]]:
    out = [(SAMPLE / "data.yaml", SAMPLE / "predictions" / "labels")]
    for seed in (0, 1):
        (tmp_path / f"r{seed}").mkdir()
        data, pred, _ = random_dataset(tmp_path / f"r{seed}", seed, n_images=9)
        out.append((data, pred))
    out.append(_numeric_stems(tmp_path / "numeric"))
    return out


def _same_fields(a: CocoGroundTruth | CocoResults, b: CocoGroundTruth | CocoResults) -> list[str]:
    differ = []
    for name in vars(a):
        key = name.lstrip("_")
        if key == "image_records":
            continue
        x, y = getattr(a, key), getattr(b, key)
        if isinstance(x, np.ndarray):
            same = isinstance(y, np.ndarray) and x.dtype == y.dtype and np.array_equal(x, y)
        else:
            same = x == y
        if not same:
            differ.append(key)
    return differ


def test_tables_from_arrays_are_the_tables_from_records(tmp_path: Path) -> None:
    for data, pred in _splits(tmp_path):
        ds = load_yolo_dataset(data)
        preds = load_yolo_predictions(pred, ds)
        gt, res = coco_inputs(ds, preds)
        gt2, res2 = coco_tables(ds, preds)
        assert _same_fields(gt, gt2) == [], data
        assert _same_fields(res, res2) == [], data
        assert gt2.image_records is None


def test_numeric_stems_are_sorted_by_id(tmp_path: Path) -> None:
    data, pred = _numeric_stems(tmp_path)
    ds = load_yolo_dataset(data)
    gt, res = coco_tables(ds, load_yolo_predictions(pred, ds))
    assert gt.image_ids.tolist() == [8, 9, 10, 100]
    # file order is 10, 100, 8, 9: the labels of "10" then "9" are images 2 and 1 in id order
    assert gt.img.tolist() == [2, 1, 1]
    assert gt.image_hw.tolist() == [[-1, -1], [80, 100], [80, 110], [80, 120]]
    assert res.img.tolist() == [2, 3, 1, 1]


def test_match_counts_are_the_per_image_matchers(tmp_path: Path) -> None:
    for data, pred in _splits(tmp_path):
        ds = load_yolo_dataset(data)
        gt, res = coco_tables(ds, load_yolo_predictions(pred, ds))
        m = coco_matched(gt, res, iou=0.5)
        k = len(gt.cat_ids)
        tp, n_det, n_gt = coco_match_counts(gt, res, iou=0.5)
        assert tp.tolist() == np.bincount(m.cls[m.tp], minlength=k).tolist()
        assert n_det.tolist() == np.bincount(m.cls, minlength=k).tolist()
        assert n_gt.tolist() == m.n_gt.tolist()
        assert tp.sum() > 0


def test_match_counts_on_the_sample() -> None:
    ds = load_yolo_dataset(SAMPLE / "data.yaml")
    gt, res = coco_tables(ds, load_yolo_predictions(SAMPLE / "predictions" / "labels", ds))
    tp, n_det, n_gt = coco_match_counts(gt, res, iou=0.5)
    assert (tp.tolist(), n_det.tolist(), n_gt.tolist()) == ([3, 3, 3], [4, 4, 5], [3, 3, 4])
    # the class means deteval yolo --profile coco prints as precision and recall
    assert float(np.mean(tp / n_det)) == pytest.approx(0.7, abs=1e-12)
    assert float(np.mean(tp / n_gt)) == pytest.approx(11 / 12, abs=1e-12)


def test_match_counts_are_for_boxes() -> None:
    from deteval.detection.coco_params import CocoParams
    from deteval.errors import ConfigError

    ds = load_yolo_dataset(SAMPLE / "data.yaml")
    gt, res = coco_tables(ds, load_yolo_predictions(SAMPLE / "predictions" / "labels", ds))
    with pytest.raises(ConfigError, match="bbox only"):
        coco_match_counts(gt, res, params=CocoParams.from_options("segm"))
