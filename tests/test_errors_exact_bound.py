"""Coordinates are bounded by ±2**53 *as written*: the integer 2**53 + 1 is not a float64 (it rounds to 2**53,
the bound itself) and is refused naming the file and the record on every path (COCO ground truth and results
in memory, as a file whole or in pieces, as an integer array; VOC arrays; YOLO predictions.json). 2**53 itself
is exact and accepted."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from _yolo_cases import write_image

from deteval.detection.voc import VOCDetections, match_voc
from deteval.errors import ValidationError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.tables.arrays import beyond_exact

B = 2**53
OVER = [B + 1, -(B + 1), 2**63 - 1]


def _gt(n: int = 2) -> dict:
    ann = {"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "area": 400, "iscrowd": 0}
    return {
        "images": [{"id": i, "height": 100, "width": 100} for i in (1, 2)],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [dict(copy.deepcopy(ann), id=k + 1, image_id=1 + k % 2) for k in range(n)],
    }


def _res(n: int = 2) -> list:
    return [
        {"image_id": 1 + k % 2, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9} for k in range(n)
    ]


def test_beyond_exact_compares_the_written_value():
    assert [beyond_exact(v) for v in (B, -B, float(B), B + 1, -(B + 1), np.int64(B + 1), np.uint64(B + 2))] == [
        False, False, False, True, True, True, True,
    ]  # fmt: skip
    assert float(B + 1) == B  # (why the check is needed)
    texts = ["9007199254740992", "9007199254740993", "-9007199254740992.5", "9.007199254740993e15", "1e300"]
    assert [beyond_exact(t) for t in texts] == [False, True, True, True, True]
    assert [beyond_exact(t.encode()) for t in texts] == [False, True, True, True, True]


@pytest.mark.parametrize("value", OVER)
def test_coco_ground_truth_in_memory(value):
    gt = _gt()
    gt["annotations"][1]["bbox"] = [value, 2.5, 3, 4]  # (x: a negative width is another error)
    with pytest.raises(ValidationError, match=r"bbox \[-?\d+, 2.5, 3, 4\] is beyond") as err:
        load_coco_gt(gt)
    assert err.value.record == "annotations[1]" and str(abs(value)) in err.value.reason


@pytest.mark.parametrize("value", OVER)
def test_coco_results_in_memory_and_as_an_array(value):
    gt = load_coco_gt(_gt())
    res = _res()
    res[1]["bbox"] = [2, value, 3, 4]
    with pytest.raises(ValidationError, match="is beyond") as err:
        load_coco_results(res, gt)
    assert err.value.record == 1 and str(value) in err.value.reason
    arr = np.array([[1, 1, 2, 3, 4, 1, 1], [2, 1, value, 3, 4, 1, 1]], dtype=np.int64)
    with pytest.raises(ValidationError, match="is beyond") as err:
        load_coco_results(arr, gt)
    assert err.value.record == 1 and str(value) in err.value.reason


def test_coco_integer_array_ids_are_exact():
    """An int64 results array's ids are read as integers, not through float64 (2**53 + 1 is not 2**53)."""
    gt = _gt()
    gt["images"][1]["id"] = B
    for a in gt["annotations"][1::2]:
        a["image_id"] = B
    g = load_coco_gt(gt)
    arr = np.array([[B + 1, 1, 2, 3, 4, 1, 1]], dtype=np.int64)
    with pytest.raises(ValidationError, match=f"unknown image_id {B + 1}"):
        load_coco_results(arr, g)
    ok = load_coco_results(np.array([[B, 1, 2, 3, 4, 1, 1]], dtype=np.int64), g)
    assert ok.img.tolist() == [1]


@pytest.mark.parametrize("chunk", [1 << 30, 300])
def test_coco_files_whole_and_in_pieces(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", chunk)
    gt = _gt(40)
    bad = copy.deepcopy(gt)
    bad["annotations"][33]["bbox"][2] = B + 1
    gpath = tmp_path / "gt.json"
    gpath.write_text(json.dumps(bad, indent=1))
    with pytest.raises(ValidationError, match="is beyond") as err:
        load_coco_gt(str(gpath))
    assert err.value.file == str(gpath) and err.value.record == "annotations[33]"
    res = _res(60)
    res[47]["bbox"] = [1.5, 2, B + 1, 4]
    rpath = tmp_path / "res.json"
    rpath.write_text(json.dumps(res, indent=1))
    with pytest.raises(ValidationError, match="is beyond") as err:
        load_coco_results(str(rpath), load_coco_gt(gt))
    assert err.value.file == str(rpath) and err.value.record == 47
    res[47]["bbox"] = [1.5, 2, B, 4]  # the bound itself is exact: accepted
    rpath.write_text(json.dumps(res, indent=1))
    assert load_coco_results(str(rpath), load_coco_gt(gt)).bbox[47].tolist() == [1.5, 2, B, 4]


@pytest.mark.parametrize("kind", [np.int64, np.uint64, list])
def test_voc_arrays(kind):
    box = np.array([[0, 0, 10, 10], [0, 0, B + 1, 10]], dtype=np.uint64).astype(kind)
    box = box.tolist() if kind is list else box
    with pytest.raises(
        ValidationError, match=r"detection box \[0, 0, 9007199254740993, 10\] has a coord"
    ) as e:
        match_voc([0, 0], box, [0.9, 0.8], [0], [[0.0, 0.0, 10.0, 10.0]])
    assert e.value.record == 1
    with pytest.raises(ValidationError, match="beyond") as e:
        VOCDetections.from_arrays([0, 0], [0, 0], box, [0.9, 0.8])
    assert e.value.record == 1
    ok = [[0, 0, 10, 10], [0, 0, B, 10]]
    assert match_voc([0, 0], ok, [0.9, 0.8], [0], [[0.0, 0.0, 10.0, 10.0]]).tolist() == [1, 0]


def test_yolo_predictions_json(tmp_path):
    for stem in ("a", "b"):
        write_image(tmp_path / "images" / "val" / f"{stem}.jpg", 100, 50)
    (tmp_path / "data.yaml").write_text("val: images/val\nnames: [a, b]\n")
    ds = load_yolo_dataset(tmp_path / "data.yaml")
    pj = tmp_path / "p.json"
    good = {"image_id": "a", "category_id": 1, "bbox": [40, 20, 20, 10], "score": 0.5}
    pj.write_text(json.dumps([good, dict(good, bbox=[40, 20, B + 1, 10])]))
    with pytest.raises(ValidationError, match="is beyond") as err:
        load_yolo_predictions(pj, ds)
    assert err.value.file == str(pj) and err.value.record == 1
    pj.write_text(json.dumps([good, dict(good, bbox=[40, 20, B, 10])]))
    assert load_yolo_predictions(pj, ds).xyxy[1].tolist() == [40, 20, 40 + B, 30]


@pytest.mark.parametrize("value", OVER)
@pytest.mark.parametrize("side", ["preds", "targets"])
@pytest.mark.parametrize("as_array", [False, True])
def test_coco_per_image_arrays(value, side, as_array):
    """evaluate_coco_arrays (and so MeanAveragePrecision, CocoStream): an integer box beyond 2**53 is refused
    whether given as Python ints or an int64 array; 2**53 itself is accepted."""
    from deteval.detection.coco import evaluate_coco_arrays

    def case(x2: int) -> tuple[list, list]:
        box = [[0, 0, 5, 5], [0, 0, x2, 10]]
        boxes = np.array(box, dtype=np.int64) if as_array and abs(x2) < 2**63 else box
        preds = [{"boxes": [[0, 0, 5, 5]], "scores": [0.5], "labels": [1]}]
        targets = [{"boxes": [[0, 0, 5, 5]], "labels": [1]}]
        one = preds if side == "preds" else targets
        one[0] = dict(
            one[0], boxes=boxes, **({"scores": [0.5, 0.4]} if side == "preds" else {}), labels=[1, 1]
        )
        return preds, targets

    with pytest.raises(ValidationError) as err:
        evaluate_coco_arrays(*case(value))
    assert err.value.file == f"<{side}>" and err.value.record == "image 0, box 1"
    assert "beyond ±2**53" in str(err.value) and str(value) in str(err.value)
    evaluate_coco_arrays(*case(B))  # exact: accepted
