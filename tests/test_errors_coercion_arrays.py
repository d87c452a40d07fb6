"""In-memory arrays (``MeanAveragePrecision.update``, ``evaluate_coco_arrays``): numpy's ``asarray(...,
dtype=float)`` would read ``"12.5"`` as 12.5 and ``True`` as 1.0; deteval refuses strings, complex numbers,
``None`` and booleans where numbers are expected, and accepts booleans where a flag or a mask is."""

from __future__ import annotations

import numpy as np
import pytest

from deteval import MeanAveragePrecision
from deteval.detection.coco import evaluate_coco_arrays
from deteval.errors import DetevalError
from deteval.tables.arrays import numeric_array

PRED = {"boxes": [[0.0, 0.0, 10.0, 10.0], [20.0, 20.0, 30.0, 32.0]], "scores": [0.5, 0.25], "labels": [1, 1]}
TARGET = {"boxes": [[0.0, 0.0, 10.0, 10.0], [20.0, 20.0, 30.0, 30.0]], "labels": [1, 1]}

BAD = [
    ("pred", "scores", ["0.5", "0.25"], "holds strings"),
    ("pred", "scores", [True, 0.25], "holds booleans"),
    ("pred", "scores", np.array([True, False]), "holds booleans"),
    ("pred", "scores", [0.5 + 0j, 0.25], "complex128"),
    ("pred", "boxes", [[0, 0, "10", "10"], [20, 20, 30, 32]], "holds strings"),
    ("pred", "boxes", [[0, True, 10, 10], [20, 20, 30, 32]], "holds booleans"),
    ("pred", "labels", ["1", "1"], "holds strings"),
    ("pred", "labels", [None, 1], "non-numbers"),
    ("target", "labels", [True, True], "holds booleans"),
    ("target", "boxes", [[0, 0, 10, 10], [20, 20, 30, "nan"]], "holds strings"),
]


def _batch(side: str, key: str, value: object) -> tuple[dict, dict]:
    pred, target = dict(PRED), dict(TARGET)
    (pred if side == "pred" else target)[key] = value
    return pred, target


@pytest.mark.parametrize(("side", "key", "value", "words"), BAD, ids=lambda v: repr(v)[:30])
def test_metric_refuses_what_numpy_would_coerce(side, key, value, words):
    pred, target = _batch(side, key, value)
    with pytest.raises(DetevalError, match=words) as err:
        MeanAveragePrecision().update([pred], [target])
    assert f"['{key}']" in str(err.value)


@pytest.mark.parametrize(("side", "key", "value", "words"), BAD, ids=lambda v: repr(v)[:30])
def test_arrays_refuse_what_numpy_would_coerce(side, key, value, words):
    pred, target = _batch(side, key, value)
    with pytest.raises(DetevalError, match=words) as err:
        evaluate_coco_arrays([pred], [target])
    assert err.value.record == "image 0" and repr(key) in err.value.reason


@pytest.mark.parametrize("flag", [[False, True], np.array([False, True]), [0, 1]], ids=repr)
def test_booleans_are_flags(flag):
    """iscrowd as booleans is a flag: the same result as 0/1."""
    pred, target = _batch("target", "iscrowd", flag)
    ref = evaluate_coco_arrays([PRED], [dict(TARGET, iscrowd=[0, 1])]).stats
    assert np.array_equal(evaluate_coco_arrays([pred], [target]).stats, ref)
    m = MeanAveragePrecision()
    m.update([pred], [target])
    m2 = MeanAveragePrecision()
    m2.update([PRED], [dict(TARGET, iscrowd=[0, 1])])
    assert m.compute()["map"] == m2.compute()["map"]


def test_numeric_array_keeps_numbers():
    assert numeric_array([[0, 1, 0, 1]]).tolist() == [[0.0, 1.0, 0.0, 1.0]]
    assert numeric_array(np.array([1, 2], dtype=np.uint8)).dtype == np.float64
    assert numeric_array([True, False], bools=True).tolist() == [1.0, 0.0]
    with pytest.raises(TypeError, match="beyond 64 bits"):
        numeric_array([2**70, 1])


VOC_BOXES = [[0, 0, 10, 10], [5, 5, 20, 20]]


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"difficult": ["0", "1"]}, "difficult holds strings"),  # astype(bool) read "0" as difficult
        ({"difficult": [2, 0]}, "difficult must be 0/1 or true/false, got 2"),
        ({"image": [True, False]}, "image holds booleans"),
        ({"label": ["0", "0"]}, "label holds strings"),
        ({"boxes": [[0, 0, "10", 10], [5, 5, 20, 20]]}, "boxes holds strings"),
    ],
)
def test_voc_tables_refuse_what_numpy_would_coerce(kw, words):
    from deteval.detection.voc import VOCGroundTruth

    args = {"image": [0, 1], "label": [0, 0], "boxes": VOC_BOXES, **kw}
    with pytest.raises(DetevalError, match=words):
        VOCGroundTruth.from_arrays(**args)


def test_voc_flags_and_scores():
    from deteval.detection.voc import VOCDetections, VOCGroundTruth

    g = VOCGroundTruth.from_arrays([0, 1], [0, 0], VOC_BOXES, [True, False])
    assert g.difficult.tolist() == [True, False]
    assert VOCGroundTruth.from_arrays([0, 1], [0, 0], VOC_BOXES, [1, 0]).difficult.tolist() == [True, False]
    for scores in (["0.5", "0.2"], [True, 0.5]):
        with pytest.raises(DetevalError, match="scores holds"):
            VOCDetections.from_arrays([0, 1], [0, 0], VOC_BOXES, scores)
