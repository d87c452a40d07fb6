"""MeanAveragePrecision: the training-loop API gives the file-based path's numbers on the same data."""

from pathlib import Path

import numpy as np
import pytest

from deteval.api import MeanAveragePrecision, to_numpy
from deteval.detection.boxes import convert_boxes
from deteval.errors import ConfigError, ValidationError
from deteval.io.voc import load_voc_annotations, load_voc_detections
from deteval.run.voc import evaluate_voc

VOC = Path(__file__).resolve().parent.parent / "data_samples" / "voc"


def _voc_sample():
    gt = load_voc_annotations(VOC / "Annotations", VOC / "ImageSets" / "Main" / "test.txt")
    dets = load_voc_detections(str(VOC / "results" / "comp4_det_test_{cls}.txt"), gt.images)
    return gt, dets


def _batches(gt, dets, box_format, batch_size=3):
    """Per-image dicts in image order; detections of an image keep their file order."""
    class_ids = {name: 10 + i for i, name in enumerate(dets.classes)}
    gt_label = np.array([class_ids[gt.classes[k]] for k in gt.label], dtype=np.int64)
    dt_label = np.array([class_ids[dets.classes[k]] for k in dets.label], dtype=np.int64)
    preds, targets = [], []
    for img in range(len(gt.images)):
        g = gt.image == img
        d = np.flatnonzero(dets.image == img)
        preds.append(
            {
                "boxes": convert_boxes(dets.boxes[d], "xyxy", box_format),
                "scores": dets.scores[d],
                "labels": dt_label[d],
            }
        )
        targets.append(
            {
                "boxes": convert_boxes(gt.boxes[g], "xyxy", box_format),
                "labels": gt_label[g],
                "difficult": gt.difficult[g],
            }
        )
    names = {v: k for k, v in class_ids.items()}
    return [
        (preds[i : i + batch_size], targets[i : i + batch_size]) for i in range(0, len(preds), batch_size)
    ], names


@pytest.mark.parametrize("metric", ["voc07", "voc2010"])
def test_voc_api_equals_file_path(metric):
    gt, dets = _voc_sample()
    # Within an image the API keeps the given order; across images it is the update order. Distinct scores
    # make the global ranking independent of that, so both paths see the same ranking.
    assert np.unique(dets.scores).size == dets.scores.size
    expected = evaluate_voc(gt, dets, metric=metric)
    batches, names = _batches(gt, dets, "xyxy")
    m = MeanAveragePrecision(protocol="voc", box_format="xyxy", class_names=names, metric=metric)
    for preds, targets in batches:
        m.update(preds, targets)
    got = m.compute()
    assert got.summary["map"] == expected.summary["map"]
    assert set(got.per_class) == set(expected.per_class)
    for name, row in expected.per_class.items():
        assert got.per_class[name] == row
    m.reset()
    assert m.n_images == 0


def test_voc_api_box_formats_agree():
    gt, dets = _voc_sample()
    results = {}
    for fmt in ("xyxy", "xywh", "cxcywh"):
        batches, names = _batches(gt, dets, fmt)
        m = MeanAveragePrecision(protocol="voc", box_format=fmt, class_names=names)
        for preds, targets in batches:
            m.update(preds, targets)
        results[fmt] = m.compute().summary["map"]
    # Coordinates in the sample are small dyadic-friendly numbers; conversions round-trip within 1e-12.
    assert results["xywh"] == pytest.approx(results["xyxy"], abs=1e-12)
    assert results["cxcywh"] == pytest.approx(results["xyxy"], abs=1e-12)


class _FakeTensor:
    """Duck-typed like a torch tensor on a device: detach() and cpu() must be called before __array__."""

    def __init__(self, data, on_cpu=False):
        self.data, self.on_cpu = np.asarray(data), on_cpu

    def detach(self):
        return self

    def cpu(self):
        return _FakeTensor(self.data, on_cpu=True)

    def __array__(self, dtype=None, copy=None):
        assert self.on_cpu, "converted without moving to the CPU"
        return self.data if dtype is None else self.data.astype(dtype)


def test_tensor_like_inputs():
    assert to_numpy(_FakeTensor([[1, 2, 3, 4]]), what="x").tolist() == [[1.0, 2.0, 3.0, 4.0]]
    m = MeanAveragePrecision(protocol="voc")
    m.update(
        [{"boxes": _FakeTensor([[0, 0, 9, 9]]), "scores": _FakeTensor([0.5]), "labels": _FakeTensor([3])}],
        [{"boxes": _FakeTensor([[0, 0, 9, 9]]), "labels": _FakeTensor([3])}],
    )
    assert m.compute().per_class["3"]["tp"] == 1


def test_bad_batches_are_refused_without_changing_state():
    m = MeanAveragePrecision(protocol="voc")
    good = (
        [{"boxes": [[0, 0, 9, 9]], "scores": [0.5], "labels": [1]}],
        [{"boxes": [[0, 0, 9, 9]], "labels": [1]}],
    )
    m.update(*good)
    with pytest.raises(ValidationError, match=r"predictions\[1\]\['scores'\] has 2 values for 1 boxes"):
        m.update(
            [good[0][0], {"boxes": [[0, 0, 1, 1]], "scores": [0.1, 0.2], "labels": [1]}],
            [good[1][0], good[1][0]],
        )
    with pytest.raises(ValidationError, match="N×4"):
        m.update([{"boxes": [[0, 0, 1]], "scores": [0.1], "labels": [1]}], good[1])
    with pytest.raises(ValidationError, match="NaN"):
        m.update([{"boxes": [[0, 0, np.nan, 1]], "scores": [0.1], "labels": [1]}], good[1])
    with pytest.raises(ValidationError, match="integers"):
        m.update([{"boxes": [[0, 0, 1, 1]], "scores": [0.1], "labels": [1.5]}], good[1])
    with pytest.raises(ValidationError, match="no 'labels'"):
        m.update(good[0], [{"boxes": [[0, 0, 9, 9]]}])
    with pytest.raises(ValidationError, match="1 predictions for 2 targets"):
        m.update(good[0], good[1] * 2)
    assert m.n_images == 1 and m.compute().summary["map"] == 1.0
    with pytest.raises(ConfigError):
        MeanAveragePrecision(protocol="kitti")
    with pytest.raises(ConfigError):
        MeanAveragePrecision(box_format="yxyx")


COCO = Path(__file__).resolve().parent / "data" / "coco"


@pytest.mark.parametrize(
    "gt_name, res_name",
    [
        (
            "coco_val2014_100/instances_val2014_100.json",
            "coco_val2014_100/instances_val2014_fakebbox100_results.json",
        ),
        ("coco_fruits/fruit_val_coco_format.json", "coco_fruits/coco_instances_results.json"),
    ],
)
@pytest.mark.parametrize("compat", ["pycocotools", "fixed"])
def test_coco_api_equals_file_path(gt_name, res_name, compat):
    import json

    from deteval.detection.coco import evaluate_coco

    expected = evaluate_coco(COCO / gt_name, COCO / res_name, iou_type="bbox", compat=compat)
    gt = json.loads((COCO / gt_name).read_text())
    res = json.loads((COCO / res_name).read_text())
    names = {c["id"]: c["name"] for c in gt["categories"]}
    # pycocotools accumulates images in ascending id order: feed them in that order, 7 images per batch.
    image_ids = sorted(img["id"] for img in gt["images"])
    preds, targets = [], []
    for img in image_ids:
        anns = [a for a in gt["annotations"] if a["image_id"] == img]
        dets = [d for d in res if d["image_id"] == img]
        targets.append(
            {
                "boxes": np.array([a["bbox"] for a in anns], dtype=float).reshape(-1, 4),
                "labels": [a["category_id"] for a in anns],
                "iscrowd": [a.get("iscrowd", 0) for a in anns],
                "area": [a["area"] for a in anns],
            }
        )
        preds.append(
            {
                "boxes": np.array([d["bbox"] for d in dets], dtype=float).reshape(-1, 4),
                "scores": [d["score"] for d in dets],
                "labels": [d["category_id"] for d in dets],
            }
        )
    m = MeanAveragePrecision(protocol="coco", box_format="xywh", class_names=names, compat=compat)
    for i in range(0, len(preds), 7):
        m.update(preds[i : i + 7], targets[i : i + 7])
    got = m.compute()
    assert got.summary["stats"] == expected.stats.tolist()
    exp_rows = expected.to_result().per_class
    for name, row in got.per_class.items():
        assert row == exp_rows[name]


def test_coco_api_box_formats_agree():
    import json

    gt = json.loads((COCO / "coco_fruits/fruit_val_coco_format.json").read_text())
    res = json.loads((COCO / "coco_fruits/coco_instances_results.json").read_text())
    stats = {}
    for fmt in ("xywh", "xyxy", "cxcywh"):
        m = MeanAveragePrecision(protocol="coco", box_format=fmt)
        for img in sorted(i["id"] for i in gt["images"]):
            tb = np.array([a["bbox"] for a in gt["annotations"] if a["image_id"] == img], float).reshape(
                -1, 4
            )
            pb = np.array([d["bbox"] for d in res if d["image_id"] == img], float).reshape(-1, 4)
            m.update(
                [
                    {
                        "boxes": convert_boxes(pb, "xywh", fmt),
                        "scores": [d["score"] for d in res if d["image_id"] == img],
                        "labels": [d["category_id"] for d in res if d["image_id"] == img],
                    }
                ],
                [
                    {
                        "boxes": convert_boxes(tb, "xywh", fmt),
                        "labels": [a["category_id"] for a in gt["annotations"] if a["image_id"] == img],
                        "area": [a["area"] for a in gt["annotations"] if a["image_id"] == img],
                    }
                ],
            )
        stats[fmt] = m.compute().summary["stats"]
    # Published by the fixture's author (detectron2 log) and reproduced by pycocotools: AP 0.757732.
    assert stats["xywh"][0] == pytest.approx(0.757732, abs=5e-7)
    for fmt in ("xyxy", "cxcywh"):
        assert stats[fmt] == pytest.approx(stats["xywh"], abs=1e-12)


def test_docstring_example_runs():
    import doctest

    import deteval.api

    failures, tried = doctest.testmod(deteval.api)
    assert tried >= 3 and failures == 0
