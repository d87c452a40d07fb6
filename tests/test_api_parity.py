"""What a torchmetrics user meets after changing one import: forward/__call__, .to(device), .plot(),
extended_summary=True (pycocotools' precision/recall/scores and IoU matrices), warnings through
warnings.warn, a box_format hint showing the user's own box, tensors back when tensors went in."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_api_torchmetrics import TM_KEYS, _per_image, _run, _val2014

from deteval import MeanAveragePrecision
from deteval.errors import ValidationError


def _numbers(r):
    return [r[k] for k in TM_KEYS]


def test_forward_returns_the_batch_alone_and_accumulates():
    gt, res = _val2014()
    preds, targets = _per_image(gt, res)
    m = MeanAveragePrecision(box_format="xywh")
    first = m(preds[:30], targets[:30])  # __call__ is forward
    second = m.forward(preds[30:], targets[30:])
    assert _numbers(first) == _numbers(_run(preds[:30], targets[:30], box_format="xywh"))
    assert _numbers(second) == _numbers(_run(preds[30:], targets[30:], box_format="xywh"))
    assert m.n_images == len(preds) and _numbers(m.compute()) == _numbers(
        _run(preds, targets, box_format="xywh")
    )


def test_warnings_reach_warnings_warn():
    m = MeanAveragePrecision()
    with pytest.warns(UserWarning, match=r"compute\(\) was called before update\(\)"):
        m.compute()
    gt, res = _val2014()
    with pytest.warns(UserWarning, match=r"deteval: maxDets \[1, 10, 50\] lacks 100"):
        r = _run(*_per_image(gt, res), box_format="xywh", max_detection_thresholds=[1, 10, 50])
    assert r["map"] == -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default maxDets: nothing to warn about
        _run(*_per_image(gt, res), box_format="xywh")


@pytest.mark.parametrize(
    ("box_format", "box", "message"),
    [
        (
            "xyxy",
            [10, 20, 5, 5],
            r"\[10, 20, 5, 5\] is not a box in box_format='xyxy'.*pass box_format='xywh'",
        ),
        (
            "xywh",
            [10, 20, -5, 5],
            r"\[10, 20, -5, 5\] is not a box in box_format='xywh'.*pass box_format='xyxy'",
        ),
    ],
)
def test_a_box_in_another_format_is_shown_as_given_with_a_hint(box_format, box, message):
    m = MeanAveragePrecision(box_format=box_format)
    ok = {"boxes": [[0, 0, 9, 9]], "labels": [1]}
    with pytest.raises(ValidationError, match=r"predictions\[0\]\['boxes'\]\[1\] = " + message):
        m.update([{"boxes": [[0, 0, 9, 9], box], "scores": [0.9, 0.8], "labels": [1, 1]}], [ok])


def test_extended_summary_is_pycocotools_eval_and_ious():
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt, res = _val2014()
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        E = COCOeval(cg, cg.loadRes(copy.deepcopy(res)), "bbox")
        E.evaluate()
        E.accumulate()
    r = _run(*_per_image(gt, res), box_format="xywh", extended_summary=True)
    # the metric knows the labels it saw (76); pycocotools the file's 80 categories
    k = np.searchsorted(E.params.catIds, r["classes"])
    assert np.array_equal(np.asarray(E.params.catIds)[k], r["classes"])
    assert np.array_equal(r["precision"], E.eval["precision"][:, :, k])
    assert np.array_equal(r["scores"], E.eval["scores"][:, :, k])
    assert np.array_equal(r["recall"], E.eval["recall"][:, k])
    ious = {k: v for k, v in E.ious.items() if k[1] in E.params.catIds}
    nonempty = {k: np.asarray(v) for k, v in ious.items() if len(v)}
    assert {k for k, v in r["ious"].items() if v.size} == set(nonempty)
    for k, v in nonempty.items():
        assert np.array_equal(r["ious"][k], v), k


def test_to_and_plot():
    m = MeanAveragePrecision(protocol="coco")
    assert m.to("cpu") is m and m.device == "cpu"
    m.update(
        [{"boxes": [[0, 0, 9, 9]], "scores": [0.9], "labels": [1]}],
        [{"boxes": [[0, 0, 9, 9]], "labels": [1]}],
    )
    fig, ax = m.plot()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "map  1.0000" and len(labels) == len(TM_KEYS) and fig.axes == [ax]


def test_tensors_back_when_tensors_went_in():
    torch = pytest.importorskip("torch")
    box, target = [[0.0, 0, 9, 9]], {"boxes": [[0.0, 0, 9, 9]], "labels": [1]}
    plain = MeanAveragePrecision(class_metrics=True)
    expected = plain([{"boxes": box, "scores": [0.9], "labels": [1]}], [target])
    m = MeanAveragePrecision(class_metrics=True)
    pred = {"boxes": torch.tensor(box), "scores": torch.tensor([0.9]), "labels": torch.tensor([1])}
    r = m.to("cpu")([pred], [{k: torch.tensor(v) for k, v in target.items()}])
    assert isinstance(r["map"], torch.Tensor) and r["map"].dtype == torch.float64
    assert r["map"].item() == expected["map"] and r["mar_100"].item() == expected["mar_100"]
    assert r["classes"].tolist() == [1] and r["map_per_class"].tolist() == expected["map_per_class"].tolist()
    assert r.summary["AP"] == expected["map"]  # the EvalResult side keeps plain numbers


TORCHMETRICS = Path(__file__).resolve().parent / "data" / "torchmetrics" / "random_boxes.json"


def test_where_torchmetrics_1_9_differs_and_why():
    """scripts/torchmetrics_expected.py ran torchmetrics 1.9.0 (torch 2.13.0) on random boxes: with its
    defaults, map_large differs from pycocotools' (and deteval's) in the 4th decimal, because its recall
    thresholds are torch.linspace(0, 1, 101) in float32 (0.07 is 0.07000000029802322: a recall of exactly
    7/100 falls below that level); given the doubles, or deteval given its float32 thresholds, the numbers
    agree to torchmetrics' float32 results."""
    doc = json.loads(TORCHMETRICS.read_text())
    assert doc["versions"]["torchmetrics"] == "1.9.0"
    keys = [k for k in doc["torchmetrics"] if not k.endswith("_per_class")]

    def run(**kw):
        m = MeanAveragePrecision(**kw)
        m.update(doc["preds"], doc["targets"])
        r = m.compute()
        return {k: float(np.float32(r[k])) for k in keys}

    ours = run()
    tm = doc["torchmetrics"]
    assert [k for k in keys if ours[k] != tm[k]] == ["map_large"]
    assert 1e-4 < ours["map_large"] - tm["map_large"] < 1e-3
    assert ours == {k: doc["torchmetrics_double_thresholds"][k] for k in keys}
    thresholds = doc["default_thresholds"]
    assert thresholds["rec_thresholds"][7] == float(np.float32(0.07)) != 0.07
    as_torchmetrics = run(
        iou_thresholds=thresholds["iou_thresholds"], rec_thresholds=thresholds["rec_thresholds"]
    )
    assert as_torchmetrics == {k: tm[k] for k in keys}
