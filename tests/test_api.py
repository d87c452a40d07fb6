"""MeanAveragePrecision: the training-loop API gives the file-based path's numbers on the same data."""

from pathlib import Path

import numpy as np
import pytest

from deteval.api import MeanAveragePrecision, to_numpy
from deteval.detection.boxes import convert_boxes
from deteval.detection.voc import evaluate_voc
from deteval.errors import ConfigError, ValidationError
from deteval.io.voc import load_voc_annotations, load_voc_detections

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
    return [(preds[i : i + batch_size], targets[i : i + batch_size]) for i in range(0, len(preds), batch_size)], names


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
    good = ([{"boxes": [[0, 0, 9, 9]], "scores": [0.5], "labels": [1]}], [{"boxes": [[0, 0, 9, 9]], "labels": [1]}])
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
