"""Masks in a predictions JSON (``yolo val save_json`` of a segment model: an RLE ``segmentation`` per
record; or COCO polygons) score as mask AP under ``coco``, equal to pycocotools on the same file."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _yolo_cases import random_dataset

from deteval.errors import DetevalError
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco
from deteval.run.yolo import evaluate_yolo


def _masks_json(tmp_path: Path, seed: int, polygons_as_lists: bool = False) -> tuple[Any, Any, Path, Any]:
    """The random polygon dataset's txt predictions written as a predictions.json with masks, the way
    Ultralytics writes it: bbox rounded to 3 decimals, score to 5, an RLE with string counts."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    data, pred_dir, _ = random_dataset(tmp_path, seed, polygons=True)
    ds = load_yolo_dataset(data)
    txt = load_yolo_predictions(pred_dir, ds)
    rles = predictions_to_coco(ds, txt, segm=True)
    records = []
    for k, r in enumerate(rles):
        x1, y1, x2, y2 = txt.xyxy[k].tolist()
        seg: Any = r["segmentation"]
        if polygons_as_lists:
            seg = [[float(v) for v in txt.polygons[k]]]  # type: ignore[index]
        records.append({"image_id": r["image_id"], "file_name": r["file_name"], "category_id": r["category_id"],
                        "bbox": [round(x1, 3), round(y1, 3), round(x2 - x1, 3), round(y2 - y1, 3)],
                        "score": round(float(txt.conf[k]), 5), "segmentation": seg})  # fmt: skip
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps(records))
    return ds, txt, path, records


def _pycocotools(ds: Any, records: list[dict[str, Any]]) -> list[float]:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt = COCO()
    gt.dataset = dataset_to_coco(ds, segm=True)
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes(json.loads(json.dumps(records)))  # loadRes writes into the records: a copy
        ev = COCOeval(gt, dt, "segm")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return [float(v) for v in ev.stats]


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(3))
def test_rle_masks_equal_pycocotools_on_the_file(tmp_path: Path, seed: int) -> None:
    ds, txt, path, records = _masks_json(tmp_path, seed)
    if not records:
        pytest.skip("no predictions drawn")
    preds = load_yolo_predictions(path, ds)
    got = evaluate_yolo(ds, preds, "coco", iou_type="segm").stats
    assert got == _pycocotools(ds, records)  # bit for bit
    # The same masks as polygon txt rows: the all-area numbers agree (only the area column, box vs mask area,
    # moves the small/medium/large ones).
    assert got[:3] == evaluate_yolo(ds, txt, "coco", iou_type="segm").stats[:3]
    assert got != evaluate_yolo(ds, preds, "coco").stats  # masks, not boxes


def test_polygon_masks_in_json(tmp_path: Path) -> None:
    ds, _, path, records = _masks_json(tmp_path, 0, polygons_as_lists=True)
    got = evaluate_yolo(ds, load_yolo_predictions(path, ds), "coco", iou_type="segm").stats
    assert got == _pycocotools(ds, records)


def _rewrite(path: Path, change: Any) -> None:
    records = json.loads(path.read_text())
    change(records)
    path.write_text(json.dumps(records))


def test_bad_masks_name_the_record(tmp_path: Path) -> None:
    ds, _, path, records = _masks_json(tmp_path, 0)
    assert len(records) > 2
    _rewrite(path, lambda r: r[1].pop("segmentation"))
    with pytest.raises(DetevalError, match=r"predictions.json.*record 1.*mask AP needs one per detection"):
        load_yolo_predictions(path, ds)
    ds, _, path, _ = _masks_json(tmp_path / "b", 0)

    def wrong_size(r: list[dict[str, Any]]) -> None:
        r[2]["segmentation"]["size"] = [r[2]["segmentation"]["size"][0] + 1, r[2]["segmentation"]["size"][1]]

    _rewrite(path, wrong_size)
    with pytest.raises(DetevalError, match=r"record 2.*differs from the image's"):
        load_yolo_predictions(path, ds)
    ds, _, path, _ = _masks_json(tmp_path / "c", 0)
    _rewrite(path, lambda r: r[0]["segmentation"].update(counts="0" + "\x7f"))
    with pytest.raises(DetevalError, match="record 0"):
        load_yolo_predictions(path, ds)


def test_box_ap_of_a_masks_file_is_unchanged(tmp_path: Path) -> None:
    ds, _, path, _ = _masks_json(tmp_path, 1)
    with_masks = load_yolo_predictions(path, ds)
    _rewrite(path, lambda r: [x.pop("segmentation") for x in r])
    plain = load_yolo_predictions(path, ds)
    assert plain.masks is None and with_masks.masks is not None
    for profile in ("coco", "ultralytics"):
        a = evaluate_yolo(ds, with_masks, profile).summary
        assert a == evaluate_yolo(ds, plain, profile).summary
    assert np.isfinite(evaluate_yolo(ds, with_masks, "coco").stats[0])
