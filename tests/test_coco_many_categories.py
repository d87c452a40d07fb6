"""Many declared categories: per-class rows computed for every category at once (bit-identical to averaging
each category's slice), only when asked for, and arrays laid out only for the categories with ground truth
when arrays for every declared category would be large (pycocotools' numbers unchanged)."""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import replace

import numpy as np
import pytest
from _coco_cases import random_case, run_pycocotools
from _lvis_cases import random_lvis_case

import deteval.detection.coco.evaluation as evaluation
import deteval.detection.lvis.evaluation as lvis_evaluation
import deteval.run.coco_two_cores as two_cores
from deteval.cli import main
from deteval.detection.coco import evaluate_coco, summarize_value
from deteval.detection.coco.summary import summarize_per_category
from deteval.detection.coco_params import CocoParams
from deteval.detection.lvis import evaluate_lvis


def _random_arrays(rng: np.random.Generator, p: CocoParams, K: int) -> tuple[np.ndarray, np.ndarray]:
    """precision (T, R, K, A, M) and recall (T, K, A, M) as accumulation leaves them: each (category, area,
    maxDet) block either −1 throughout or values in [0, 1]; a few blocks with −1 in places."""
    T, R, A, M = p.iou_thrs.shape[0], p.rec_thrs.shape[0], len(p.area_rng), len(p.max_dets)
    prec = rng.random((T, R, K, A, M))
    rec = rng.random((T, K, A, M))
    blank = rng.random((K, A, M)) < 0.3
    prec[:, :, blank] = -1.0
    rec[:, blank] = -1.0
    holes = rng.random(prec.shape) < 0.01  # partly −1 (not from accumulation: the slow path's rows)
    prec[holes] = -1.0
    return prec, rec


@pytest.mark.fast_cases(seed=3)
@pytest.mark.parametrize("seed", range(30))
def test_per_category_means_equal_each_category_slice(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = CocoParams.default("bbox")
    if seed % 3 == 1:  # an area label and a maxDets listed twice: several (area, maxDet) pairs per row (the
        # labels are refused as options: set here on the arrays' parameters only)
        p = replace(p, area_rng=((0, 1e10), (0, 1024), (0, 1e10)), area_lbl=("all", "small", "all"))
        p = replace(p, max_dets=(1, 100, 100))
    if seed % 3 == 2:
        p = replace(p, iou_thrs=np.sort(rng.choice(np.arange(0.5, 0.96, 0.05), 4, replace=False)))
    K = 300 if seed % 5 == 0 else int(rng.integers(1, 40))  # 300: more than one block of categories
    prec, rec = _random_arrays(rng, p, K)
    combos = list(
        itertools.product((True, False), (None, 0.5, 0.75), ("all", "small", "medium"), (None, 1, 100))
    )
    if K > 40:
        combos = [combos[i] for i in rng.choice(len(combos), 6, replace=False)]
    for ap, iou_thr, area, max_det in combos:
        try:
            want = [summarize_value(prec, rec, p, ap, iou_thr, area, max_det, k) for k in range(K)]
        except IndexError:  # a label absent and a maxDet listed twice: both refuse the selection
            with pytest.raises(IndexError):
                summarize_per_category(prec, rec, p, ap, iou_thr, area, max_det)
            continue
        got = summarize_per_category(prec, rec, p, ap, iou_thr, area, max_det)
        assert got.tolist() == want, (ap, iou_thr, area, max_det)


def _with_absent_categories(seed: int) -> tuple[dict, list, dict]:
    """A random case whose ground truth declares 40 more categories: without annotations, with crowd
    annotations only, or with detections only."""
    case = random_case(seed)
    gt, dt = copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"])
    extra = list(range(100, 140))
    gt["categories"] += [{"id": c, "name": f"x{c}"} for c in extra]
    img = gt["images"][0]["id"]
    next_id = 10_000
    for c in extra[:5]:  # crowd only: no non-ignored ground truth
        gt["annotations"].append(
            {
                "id": next_id,
                "image_id": img,
                "category_id": c,
                "bbox": [1, 1, 50, 50],
                "area": 2500,
                "iscrowd": 1,
            }
        )
        next_id += 1
    for c in extra[5:15]:  # detections only
        dt.append({"image_id": img, "category_id": c, "bbox": [2, 2, 40, 40], "score": 0.7})
    params = {k: v for k, v in case["params"].items() if k != "cat_ids"}
    return gt, dt, params


@pytest.mark.fast_cases(seed=2)
@pytest.mark.parametrize("seed", range(25))
def test_arrays_for_categories_with_truth_only(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the bound at 0 every evaluation keeps arrays for the categories with ground truth only; laid out
    for every category they equal those of the evaluation with every category's arrays (pycocotools'), and
    so do the stats, the per-class rows (−1 for a category left out) and the curves."""
    gt, dt, params = _with_absent_categories(seed)
    p = CocoParams.from_options("bbox", **params)
    whole = evaluate_coco(gt, dt, params=p)
    if all(a["id"] != 0 for a in gt["annotations"]):  # (pycocotools' quirk with id 0: tested elsewhere)
        reference = run_pycocotools(gt, dt, "bbox", params)
        assert all(
            np.array_equal(got, want) for got, want in zip(reference, (whole.stats, *whole.full_arrays()))
        )
    monkeypatch.setattr(evaluation, "FULL_ARRAYS_BYTES", 0)
    monkeypatch.setattr(two_cores, "FULL_ARRAYS_BYTES", 0)
    ev = evaluate_coco(gt, dt, params=p)
    assert np.array_equal(ev.stats, whole.stats) and ev.lines == whole.lines
    for got, want in zip(ev.full_arrays(), (whole.precision, whole.recall, whole.scores)):
        assert np.array_equal(got, want)
    assert ev.per_class() == whole.per_class()
    if seed == 0:  # (the nested lists of every array: a third of a second)
        assert ev.to_dict(arrays=True) == whole.to_dict(arrays=True)
    assert ev.to_result().curves.keys() == whole.to_result().curves.keys()
    if p.use_cats:
        assert ev.cat_index is not None and ev.precision.shape[2] == ev.cat_index.shape[0] < len(ev.cat_ids)
        for name in (f"x{c}" for c in range(100, 140)):
            assert set(ev.per_class()[name].values()) == {-1.0}


def _declared(tmp_path, n_cats: int) -> tuple[str, str]:
    """A ground truth declaring ``n_cats`` categories of which 3 have annotations, and its results."""
    cats = [{"id": i + 1, "name": f"c{i + 1}"} for i in range(n_cats)]
    anns = [
        {
            "id": j + 1,
            "image_id": 1,
            "category_id": c,
            "bbox": [10 * j, 5, 30, 40],
            "area": 1200,
            "iscrowd": 0,
        }
        for j, c in enumerate((1, 2, n_cats))
    ]
    dets = [
        {"image_id": 1, "category_id": c, "bbox": [10 * j + 1, 5, 30, 40], "score": 0.9 - 0.1 * j}
        for j, c in enumerate((1, 2, n_cats, 7))
    ]
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(
        json.dumps(
            {"images": [{"id": 1, "width": 640, "height": 480}], "annotations": anns, "categories": cats}
        )
    )
    dt_path.write_text(json.dumps(dets))
    return str(gt_path), str(dt_path)


def test_many_declared_categories_keep_arrays_of_those_with_truth(tmp_path) -> None:
    """5,000 declared categories with maxDets [100]: every category's arrays would take 312 MiB; those of the
    3 with ground truth are laid out, the other 4,997 are pycocotools' −1."""
    gt, dt = _declared(tmp_path, 5000)
    p = CocoParams.from_options("bbox", max_dets=[100])
    assert evaluation.full_arrays_bytes(p, 5000) > evaluation.FULL_ARRAYS_BYTES
    ev = evaluate_coco(gt, dt, params=p)
    assert ev.cat_index is not None and ev.cat_index.tolist() == [0, 1, 4999]
    assert ev.precision.shape == (10, 101, 3, 4, 1) and ev.recall.shape == (10, 3, 4, 1)
    rows = ev.per_class()
    assert len(rows) == 5000 and set(rows["c7"].values()) == {-1.0} and rows["c1"]["ap"] > 0
    small = {c: rows[c] for c in ("c1", "c2", "c5000")}
    doc = json.loads(open(gt).read())
    doc["categories"] = [c for c in doc["categories"] if c["id"] in (1, 2, 5000)]
    few = evaluate_coco(doc, [d for d in json.loads(open(dt).read()) if d["category_id"] != 7], params=p)
    assert np.array_equal(few.stats, ev.stats) and few.per_class() == small


def test_cli_computes_per_class_rows_only_when_asked(tmp_path, monkeypatch, capsys) -> None:
    gt, dt = _declared(tmp_path, 20)
    calls = []
    original = evaluation.CocoEvaluation.per_class

    def counted(self):
        calls.append(1)
        return original(self)

    monkeypatch.setattr(evaluation.CocoEvaluation, "per_class", counted)
    assert main(["coco", gt, dt]) == 0
    assert "maxDets=100 ] = " in capsys.readouterr().out and calls == []
    assert main(["coco", gt, dt, "--per-class"]) == 0
    assert "c20" in capsys.readouterr().out and calls == [1]


@pytest.mark.fast_cases(seed=2)
@pytest.mark.parametrize("seed", range(20))
def test_lvis_arrays_for_categories_with_truth_only(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """LVIS likewise: with the bound at 0 the arrays hold the categories with ground truth only, and every
    result (lvis-api's keys, pooled APs), per-class row and curve equals the evaluation with all arrays."""
    case = random_lvis_case(seed)
    gt = copy.deepcopy(case["gt"])
    gt["categories"] += [{"id": 100 + i, "name": f"x{i}", "frequency": "rcf"[i % 3]} for i in range(12)]
    whole = evaluate_lvis(gt, case["dt"], pooled=True)
    monkeypatch.setattr(lvis_evaluation, "FULL_ARRAYS_BYTES", 0)
    ev = evaluate_lvis(gt, case["dt"], pooled=True)
    assert ev.cat_index is not None and ev.precision.shape[2] == ev.cat_index.shape[0] < len(ev.cat_ids)
    assert ev.results == whole.results and ev.lines == whole.lines
    assert ev.per_class() == whole.per_class()
    assert ev.to_result().curves.keys() == whole.to_result().curves.keys()
    assert np.array_equal(whole.precision[:, :, ev.cat_index], ev.precision)
    assert np.array_equal(whole.recall[:, ev.cat_index], ev.recall)
    left_out = np.setdiff1d(np.arange(len(ev.cat_ids)), ev.cat_index)
    assert (whole.precision[:, :, left_out] == -1).all() and (whole.recall[:, left_out] == -1).all()
    # each row is the mean of that category's own slice (lvis-api's _summarize with catIds=[k])
    lbl = list(whole.params.area_lbl)
    for k, (name, row) in enumerate(whole.per_class().items()):
        slices = {
            "ap": whole.precision[:, :, k, lbl.index("all")],
            "ap50": whole.precision[whole.params.iou_thrs == 0.5][:, :, k, lbl.index("all")],
            "aps": whole.precision[:, :, k, lbl.index("small")],
            "apl": whole.precision[:, :, k, lbl.index("large")],
            "ar@300": whole.recall[:, k, lbl.index("all")],
        }
        for key, s in slices.items():
            assert row[key] == (float(np.mean(s[s > -1])) if (s > -1).any() else -1.0), (name, key)
