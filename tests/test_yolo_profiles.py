"""The coco and supervision profiles against pycocotools and supervision, run live on random YOLO datasets."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
import pytest
from _yolo_cases import random_dataset

from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco
from deteval.run.yolo import evaluate_yolo

SEEDS = range(8)


def _pycocotools_stats(ds, preds, iou_type: str = "bbox") -> np.ndarray:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    segm = iou_type == "segm"
    gt = COCO()
    gt.dataset = dataset_to_coco(ds, segm=segm)
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes(predictions_to_coco(ds, preds, segm=segm))
        ev = COCOeval(gt, dt, iou_type)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev.stats


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS)
def test_coco_profile_equals_pycocotools(tmp_path: Path, seed: int) -> None:
    data, pred_dir, _ = random_dataset(tmp_path, seed)
    ds = load_yolo_dataset(data)
    preds = load_yolo_predictions(pred_dir, ds)
    if len(preds) == 0:  # pycocotools cannot load an empty results list
        pytest.skip("no predictions drawn")
    got = evaluate_yolo(ds, preds, "coco")
    want = _pycocotools_stats(ds, preds)
    assert got.stats == want.tolist()  # bit for bit
    assert got.summary["mAP50-95"] == want[0] and got.summary["mAP50"] == want[1]


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_coco_segm_profile_equals_pycocotools(tmp_path: Path, seed: int) -> None:
    data, pred_dir, _ = random_dataset(tmp_path, seed, polygons=True)
    ds = load_yolo_dataset(data)
    preds = load_yolo_predictions(pred_dir, ds)
    if len(preds) == 0:
        pytest.skip("no predictions drawn")
    got = evaluate_yolo(ds, preds, "coco", iou_type="segm")
    assert got.stats == _pycocotools_stats(ds, preds, "segm").tolist()
    assert got.stats != evaluate_yolo(ds, preds, "coco").stats  # masks, not boxes


def test_segm_needs_polygons_and_the_coco_profile(tmp_path: Path) -> None:
    from deteval.errors import DetevalError

    data, pred_dir, _ = random_dataset(tmp_path, 1)
    ds = load_yolo_dataset(data)
    preds = load_yolo_predictions(pred_dir, ds)
    with pytest.raises(DetevalError, match="needs polygon rows"):
        evaluate_yolo(ds, preds, "coco", iou_type="segm")
    with pytest.raises(DetevalError, match="coco profile only"):
        evaluate_yolo(ds, preds, "ultralytics", iou_type="segm")


def _supervision(ds, preds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "OpenCV is not installed": supervision's numpy fallback is used
        import supervision as sv

    targets, predictions = [], []
    for i in range(ds.n_images):
        g, d = ds.labels.img == i, preds.img == i
        targets.append(sv.Detections(xyxy=ds.labels.xyxy[g].reshape(-1, 4), class_id=ds.labels.cls[g]))
        predictions.append(
            sv.Detections(xyxy=preds.xyxy[d].reshape(-1, 4), class_id=preds.cls[d], confidence=preds.conf[d])
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sv.metrics.MeanAveragePrecision().update(predictions, targets).compute()


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS)
def test_supervision_profile_equals_supervision(tmp_path: Path, seed: int) -> None:
    data, pred_dir, _ = random_dataset(tmp_path, seed)
    ds = load_yolo_dataset(data)
    preds = load_yolo_predictions(pred_dir, ds)
    got = evaluate_yolo(ds, preds, "supervision")
    want = _supervision(ds, preds)
    assert got.summary["mAP50-95"] == want.map50_95
    assert got.summary["mAP50"] == want.map50
    assert got.summary["mAP75"] == want.map75
    rows = got.per_class  # class name -> row
    for c, ap in zip(want.matched_classes, want.ap_per_class):
        if ap[0] < 0:
            continue
        assert rows[ds.names[int(c)]]["AP50"] == ap[0]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_txt_and_json_predictions_score_alike(tmp_path: Path, seed: int) -> None:
    data, pred_dir, pred_json = random_dataset(tmp_path, seed)
    ds = load_yolo_dataset(data)
    a = evaluate_yolo(ds, load_yolo_predictions(pred_dir, ds), "coco")
    b = evaluate_yolo(ds, load_yolo_predictions(pred_json, ds), "coco")
    assert a.summary == pytest.approx(b.summary, abs=1e-12)
