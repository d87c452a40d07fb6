"""Each pycocotools rule and quirk as an explicit case, in both compat modes where they differ."""

import numpy as np
import pytest
from _coco_cases import run_pycocotools

from deteval.detection.coco import evaluate_coco, evaluate_coco_arrays
from deteval.detection.coco_iou import bbox_iou_pairs
from deteval.detection.coco_params import CocoParams, coco_iou_thresholds


def _gt(anns, n_img=1, cats=(1,)):
    base = {"area": None, "iscrowd": 0, "category_id": cats[0], "image_id": 1}
    out = []
    for i, a in enumerate(anns):
        rec = {**base, "id": i + 1, **a}
        if rec["area"] is None:
            rec["area"] = float(rec["bbox"][2] * rec["bbox"][3])
        out.append(rec)
    return {
        "images": [{"id": i + 1, "height": 500, "width": 500} for i in range(n_img)],
        "categories": [{"id": c, "name": f"c{c}"} for c in cats],
        "annotations": out,
    }


def _dt(*items):
    return [{"image_id": 1, "category_id": 1, **it} for it in items]


def _same_as_pycocotools(gt, dt, params=None, iou_type="bbox"):
    stats, precision, recall, scores = run_pycocotools(gt, dt, iou_type, params)
    p = CocoParams.from_options(iou_type, **(params or {}))
    ev = evaluate_coco(gt, dt, params=p)
    assert np.array_equal(ev.precision, precision) and np.array_equal(ev.recall, recall)
    assert np.array_equal(ev.scores, scores) and np.array_equal(ev.stats, stats)
    return ev


def test_stat0_uses_maxdets_100_literally():
    gt = _gt([{"bbox": [10, 10, 50, 50]}])
    dt = _dt({"bbox": [10, 10, 50, 50], "score": 0.9})
    params = {"max_dets": [1, 10, 50]}
    ev = _same_as_pycocotools(gt, dt, params)
    assert ev.stats[0] == -1.0 and ev.stats[1] > 0.99  # pycocotools: no maxDets=100 column -> -1
    fixed = evaluate_coco(gt, dt, params=CocoParams.from_options("bbox", **params), compat="fixed")
    assert fixed.stats[0] == pytest.approx(1.0, abs=1e-12) and fixed.stats[1] > 0.99
    assert "maxDets= 50" in fixed.lines[0] and "maxDets=100" in ev.lines[0]
    assert any("lacks 100" in w for w in ev.warnings) and not fixed.warnings


def test_user_ignore_flag_is_overwritten_by_iscrowd_in_pycocotools_mode():
    gt = _gt([{"bbox": [10, 10, 50, 50], "ignore": 1}, {"bbox": [200, 200, 50, 50]}])
    dt = _dt({"bbox": [10, 10, 50, 50], "score": 0.9})
    ev = _same_as_pycocotools(gt, dt)
    assert ev.recall[0, 0, 0, -1] == 0.5  # the "ignored" box still counts: 1 of 2 found
    fixed = evaluate_coco(gt, dt, compat="fixed")
    assert fixed.recall[0, 0, 0, -1] == 0.0  # honoured: the detection is ignored, 0 of 1 found
    assert fixed.precision[0, 0, 0, 0, -1] == 0.0


def test_ground_truth_id_zero_is_matched_in_both_modes():
    gt = _gt([{"bbox": [10, 10, 50, 50]}, {"bbox": [100, 100, 40, 40]}])
    gt["annotations"][0]["id"] = 0
    dt = _dt({"bbox": [10, 10, 50, 50], "score": 0.9}, {"bbox": [100, 100, 40, 40], "score": 0.8})
    stats, *_ = run_pycocotools(gt, dt)
    assert stats[8] == 0.5  # pycocotools: the match is stored as gt id 0 = "unmatched" -> one miss, one FP
    for compat in ("pycocotools", "fixed"):
        ev = evaluate_coco(gt, dt, compat=compat)
        assert ev.stats[8] == 1.0 and ev.stats[0] == pytest.approx(1.0, abs=1e-15)
        assert any("id 0" in w for w in ev.warnings)
    renumbered = {**gt, "annotations": [{**a, "id": 7} if a["id"] == 0 else a for a in gt["annotations"]]}
    assert np.array_equal(evaluate_coco(gt, dt).precision, run_pycocotools(renumbered, dt)[1])


def test_empty_results_are_valid():
    gt = _gt([{"bbox": [10, 10, 50, 50]}])
    ev = evaluate_coco(gt, [])
    assert ev.stats.tolist() == [0.0, 0.0, 0.0, -1.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0, -1.0]
    assert ev.recall[:, 0, 0, :].tolist() == [[0.0] * 3] * 10


def test_later_ground_truth_wins_an_iou_tie():
    # the first detection sits exactly between two boxes; the later one takes it, so the second detection
    # (on the first box) also matches: 2 TP. "First wins" would leave the second detection unmatched.
    gt = _gt([{"bbox": [20, 30, 40, 30]}, {"bbox": [30, 30, 40, 30]}])
    dt = _dt({"bbox": [25, 30, 40, 30], "score": 0.9}, {"bbox": [20, 30, 40, 30], "score": 0.8})
    ev = _same_as_pycocotools(gt, dt, {"iou_thrs": [0.5]})
    assert ev.recall[0, 0, 0, -1] == 1.0


def test_crowd_absorbs_many_detections_and_uses_detection_area():
    gt = _gt([{"bbox": [0, 0, 200, 200], "iscrowd": 1}, {"bbox": [300, 300, 50, 50]}])
    dt = _dt(
        *({"bbox": [10 + 20 * i, 10, 30, 30], "score": 0.9 - 0.1 * i} for i in range(5)),
        {"bbox": [300, 300, 50, 50], "score": 0.1},
    )
    ev = _same_as_pycocotools(gt, dt)
    # the five crowd hits are ignored, not false positives: precision 1 at the only true positive
    assert ev.precision[0, -1, 0, 0, -1] == pytest.approx(1.0, abs=1e-15)
    iou = bbox_iou_pairs(
        np.array([[10.0, 10, 30, 30]]),
        np.array([[0.0, 0, 200, 200]]),
        np.array([True]),
        np.array([0]),
        np.array([0]),
    )
    assert iou[0] == 1.0  # intersection / detection area


def test_regular_ground_truth_before_ignored():
    # the detection overlaps a crowd better than a regular box; pycocotools takes the regular one
    gt = _gt([{"bbox": [0, 0, 100, 100], "iscrowd": 1}, {"bbox": [0, 0, 60, 100]}])
    dt = _dt({"bbox": [0, 0, 80, 100], "score": 0.9})
    ev = _same_as_pycocotools(gt, dt, {"iou_thrs": [0.5, 0.75]})
    assert ev.recall[:, 0, 0, -1].tolist() == [1.0, 1.0]  # IoU 0.75 with the regular box: matched at both


def test_area_ranges_are_closed_on_the_area_field():
    # area exactly 32² belongs to both "small" and "medium"; the box itself is much larger
    gt = _gt([{"bbox": [0, 0, 100, 100], "area": 1024.0}])
    dt = _dt({"bbox": [0, 0, 100, 100], "score": 0.9})
    ev = _same_as_pycocotools(gt, dt)
    assert ev.stats[3] > 0.99 and ev.stats[4] > 0.99 and ev.stats[5] == -1.0


def test_precision_denominator_has_np_spacing():
    gt = _gt([{"bbox": [0, 0, 100, 100]}])
    dt = _dt({"bbox": [0, 0, 100, 100], "score": 0.9})
    ev = _same_as_pycocotools(gt, dt)
    assert ev.precision[0, 0, 0, 0, -1] == 1.0 / (1.0 + np.spacing(1)) < 1.0


def test_max_dets_is_per_image_and_category():
    gt = _gt([{"bbox": [0, 0, 50, 50]}, {"bbox": [100, 100, 50, 50], "category_id": 2}], cats=(1, 2))
    dt = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "score": 0.5},
        {"image_id": 1, "category_id": 2, "bbox": [100, 100, 50, 50], "score": 0.4},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 50, 50], "score": 0.9},
    ]
    ev = _same_as_pycocotools(gt, dt)
    assert ev.recall[0, :, 0, 0].tolist() == [1.0, 1.0]  # maxDets=1 keeps one detection per category


def test_category_without_ground_truth_is_minus_one():
    gt = _gt([{"bbox": [0, 0, 50, 50]}], cats=(1, 2))
    dt = [{"image_id": 1, "category_id": 2, "bbox": [0, 0, 50, 50], "score": 0.9}]
    ev = _same_as_pycocotools(gt, dt)
    assert (ev.precision[:, :, 1] == -1).all() and (ev.recall[:, 1] == -1).all()
    assert ev.per_class()["c2"]["ap"] == -1.0


def test_thresholds_are_linspace_not_arange():
    thr = coco_iou_thresholds()
    assert np.array_equal(thr, np.linspace(0.5, 0.95, 10))
    assert not np.array_equal(thr, np.arange(0.5, 0.951, 0.05))  # arange puts some thresholds one ulp off


def test_searchsorted_left_and_start_below_one():
    # an IoU of exactly 1 still matches at threshold 1.0 because the start is min(t, 1 - 1e-10)
    gt = _gt([{"bbox": [0, 0, 64, 64]}])
    dt = _dt({"bbox": [0, 0, 64, 64], "score": 0.9})
    ev = _same_as_pycocotools(gt, dt, {"iou_thrs": [1.0]})
    assert ev.recall[0, 0, 0, -1] == 1.0


def test_columnar_entry_point_equals_json_entry_point():
    gt = _gt([{"bbox": [10, 10, 50, 40]}, {"bbox": [100, 100, 30, 30], "iscrowd": 1}])
    dt = _dt(
        {"bbox": [12, 10, 50, 40], "score": 0.8},
        {"bbox": [105, 100, 10, 10], "score": 0.7},
        {"bbox": [300, 300, 10, 10], "score": 0.9},
    )
    ev = evaluate_coco(gt, dt)

    def xyxy(b):
        return [b[0], b[1], b[0] + b[2], b[1] + b[3]]

    preds = [
        {
            "boxes": np.array([d["bbox"] for d in dt], float),
            "scores": np.array([d["score"] for d in dt]),
            "labels": np.array([1, 1, 1]),
        }
    ]
    targets = [
        {
            "boxes": np.array([a["bbox"] for a in gt["annotations"]], float),
            "labels": np.array([1, 1]),
            "iscrowd": np.array([0, 1]),
            "area": np.array([a["area"] for a in gt["annotations"]]),
        }
    ]
    ev2 = evaluate_coco_arrays(preds, targets, box_format="xywh")
    assert np.array_equal(ev.precision, ev2.precision) and np.array_equal(ev.stats, ev2.stats)
    preds[0]["boxes"] = np.array([xyxy(d["bbox"]) for d in dt], float)
    targets[0]["boxes"] = np.array([xyxy(a["bbox"]) for a in gt["annotations"]], float)
    ev3 = evaluate_coco_arrays(preds, targets)
    np.testing.assert_allclose(ev3.stats, ev.stats, atol=1e-12)


@pytest.mark.slow
def test_image_shards_merge_to_the_full_result():
    from _coco_cases import random_case

    from deteval.detection.coco import match_coco
    from deteval.detection.coco_accumulate import accumulate
    from deteval.detection.coco_match import merge_tables
    from deteval.io.coco import load_coco_gt, load_coco_results

    for seed in range(30):
        case = random_case(seed)
        p = CocoParams.from_options("bbox", **case["params"])
        full = evaluate_coco(case["gt"], case["dt"], params=p)
        g = load_coco_gt(case["gt"])
        r = load_coco_results(case["dt"], g)
        n = full.counts["n_images"]
        rng = np.random.default_rng(seed)
        shard_of = rng.integers(0, 3, n)
        tables = [match_coco(g, r, p, images=np.flatnonzero(shard_of == s))[0] for s in range(3)]
        precision, recall, scores = accumulate(merge_tables(tables), p.rec_thrs, p.max_dets)
        assert np.array_equal(precision, full.precision) and np.array_equal(recall, full.recall), seed
        assert np.array_equal(scores, full.scores), seed


def test_json_export_with_arrays():
    import json

    gt = _gt([{"bbox": [10, 10, 50, 50]}])
    ev = evaluate_coco(gt, _dt({"bbox": [10, 10, 50, 50], "score": 0.9}))
    doc = json.loads(ev.to_json(arrays=True))
    assert np.array_equal(np.array(doc["precision"]), ev.precision)
    assert doc["stats"] == ev.stats.tolist() and doc["AP"] == ev.stats[0]
    assert doc["per_class"]["c1"]["ar100"] == 1.0


def _batches(seed):
    from _coco_cases import random_case

    case = random_case(seed)
    ids = sorted(im["id"] for im in case["gt"]["images"])
    preds, targets = [], []
    for i in ids:
        dts = [d for d in case["dt"] if d["image_id"] == i]
        gts = [a for a in case["gt"]["annotations"] if a["image_id"] == i]
        preds.append(
            {
                "boxes": np.array([d["bbox"] for d in dts], float).reshape(-1, 4),
                "scores": [d["score"] for d in dts],
                "labels": [d["category_id"] for d in dts],
            }
        )
        targets.append(
            {
                "boxes": np.array([a["bbox"] for a in gts], float).reshape(-1, 4),
                "labels": [a["category_id"] for a in gts],
                "iscrowd": [a["iscrowd"] for a in gts],
                "area": [a["area"] for a in gts],
            }
        )
    return case, preds, targets


@pytest.mark.slow
@pytest.mark.parametrize("use_cats", [True, False])
def test_stream_in_batches_equals_the_whole_evaluation(use_cats):
    from deteval.detection.coco import CocoStream

    for seed in range(25):
        case, preds, targets = _batches(seed)
        params = {k: v for k, v in case["params"].items() if k not in ("img_ids", "cat_ids", "use_cats")}
        p = CocoParams.from_options("bbox", use_cats=use_cats, **params)
        whole = evaluate_coco_arrays(preds, targets, box_format="xywh", params=p)
        stream = CocoStream(params=p, box_format="xywh")
        for s in range(0, len(preds), 2):
            stream.update(preds[s : s + 2], targets[s : s + 2])
        ev = stream.compute()
        assert np.array_equal(ev.precision[:, :, : whole.precision.shape[2]], whole.precision), seed
        assert np.array_equal(ev.recall, whole.recall) and np.array_equal(ev.stats, whole.stats), seed
        # and the same as pycocotools on the JSON form, whose categories may include unused ones
        ref = evaluate_coco(case["gt"], case["dt"], params=p)
        if use_cats:
            assert np.array_equal(ev.stats, ref.stats), seed


def test_arrays_entry_point_errors_name_image_and_box():
    from deteval.errors import InputFormatError, ValidationError

    preds = [
        {"boxes": [[0, 0, 5, 5]], "scores": [0.5], "labels": [1]},
        {"boxes": [[0, 0, 5, 5], [1, 1, 0, 2]], "scores": [0.5, 0.4], "labels": [1, 1]},
    ]
    targets = [{"boxes": [[0, 0, 5, 5]], "labels": [1]}, {"boxes": [], "labels": []}]
    with pytest.raises(ValidationError) as info:
        evaluate_coco_arrays(preds, targets)
    assert "image 1, box 1" in str(info.value)
    with pytest.raises(InputFormatError) as info:
        evaluate_coco_arrays(preds, [{"boxes": [[0, 0, 5, 5]]}, targets[1]])
    assert "image 0" in str(info.value) and "'labels'" in str(info.value)


@pytest.mark.slow
def test_automatic_matching_shards_do_not_change_anything(monkeypatch):
    from _coco_cases import random_case

    import deteval.detection.coco.parts as coco_mod

    for seed in range(40, 60):
        case = random_case(seed)
        p = CocoParams.from_options("bbox", **case["params"])
        whole = evaluate_coco(case["gt"], case["dt"], params=p)
        monkeypatch.setattr(coco_mod, "SHARD_DETECTIONS", 7)
        sharded = evaluate_coco(case["gt"], case["dt"], params=p)
        monkeypatch.undo()
        assert np.array_equal(whole.precision, sharded.precision) and np.array_equal(
            whole.scores, sharded.scores
        )
        assert np.array_equal(whole.recall, sharded.recall) and whole.counts == sharded.counts
