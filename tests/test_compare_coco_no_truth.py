"""`deteval compare` leaves COCO's -1 ("no ground truth") out of every mean, count and plot (#11.7)."""

import json
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main
from deteval.detection.coco import evaluate_coco
from deteval.report.compare import compare_results

VAL = Path(__file__).resolve().parent / "data" / "coco" / "coco_val2014_100"
GT = VAL / "instances_val2014_100.json"


@pytest.fixture(scope="module")
def bbox_segm():
    bbox = evaluate_coco(GT, VAL / "instances_val2014_fakebbox100_results.json", iou_type="bbox")
    segm = evaluate_coco(GT, VAL / "instances_val2014_fakesegm100_results.json", iou_type="segm")
    return bbox, segm


@pytest.mark.slow
def test_val2014_bbox_against_segm(bbox_segm):
    bbox, segm = bbox_segm
    c = compare_results(bbox.to_result(), segm.to_result())
    # the 10 categories of the 80 without ground truth in these 100 images are -1 on both sides
    has_truth = (bbox.precision[0, 0, :, 0, -1] > -1).sum()
    assert has_truth == 70
    assert c.summary["classes"]["no_ground_truth"] == 10
    assert c.summary["classes"]["both"] == c.summary["classes"]["with_delta"] == 70
    assert len(c.per_class) == 70 and all(r["a"] >= 0 and r["b"] >= 0 for r in c.per_class.values())
    mean = c.summary["mean_over_common"]
    # the mean over the 70 classes is pycocotools' AP (stat 0), up to float summation order
    assert mean["a"] == pytest.approx(bbox.stats[0], abs=1e-12) and round(mean["a"], 4) == 0.5046
    assert mean["b"] == pytest.approx(segm.stats[0], abs=1e-12)
    assert any("10 class(es) left out of every mean, count and plot" in w for w in c.warnings)


def test_minus_one_on_one_side_is_an_empty_value_and_summary_fields_too(bbox_segm):
    a = bbox_segm[0].to_result()
    b = json.loads(a.to_json())
    name = next(n for n, r in b["per_class"].items() if r["ap"] > 0)
    b["per_class"][name]["ap"] = -1
    b["APs"] = -1
    from deteval.results import EvalResult

    c = compare_results(a, EvalResult.from_dict(b))
    assert c.per_class[name]["b"] is None and c.per_class[name]["delta"] is None
    assert c.summary["classes"]["with_delta"] == 69 and c.summary["classes"]["no_ground_truth"] == 10
    assert c.summary["fields"]["APs"] == {"a": a.summary["APs"], "b": None, "delta": None}


@pytest.mark.slow
def test_compare_command_and_its_plot_leave_them_out(bbox_segm, tmp_path, capsys):
    paths = []
    for ev, name in zip(bbox_segm, ("bbox", "segm")):
        p = tmp_path / f"{name}.json"
        p.write_text(ev.to_result().to_json())
        paths.append(str(p))
    assert main(["compare", *paths, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["per_class"]) == 70 and doc["classes"]["no_ground_truth"] == 10
    from deteval.report.plots import write_plots
    from deteval.results import EvalResult

    written = write_plots(EvalResult.from_dict(doc), tmp_path / "plots")
    assert written and np.isfinite([r["delta"] for r in doc["per_class"].values()]).all()
