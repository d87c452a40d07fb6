"""Match tables of image shards merge exactly: any partition of the images, matched shard by shard and merged,
gives the single-process table array for array and the same evaluation bit for bit (COCO bbox, segm,
keypoints; VOC)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _coco_cases import random_case, random_keypoints_case, random_segm_case

from deteval.detection.coco import evaluate_coco, finish_evaluation, match_coco, resolve_params
from deteval.detection.match_table import VocMatchTable, merge_coco_tables, merge_voc_tables
from deteval.errors import ValidationError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.run.coco import evaluate_coco_sharded

CASES = {"bbox": random_case, "segm": random_segm_case, "keypoints": random_keypoints_case}


def _same_eval(a, b) -> None:
    for name in ("precision", "recall", "scores", "stats"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.lines == b.lines
    assert a.counts == b.counts
    assert a.warnings == b.warnings


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("iou_type", sorted(CASES))
@pytest.mark.parametrize("seed", range(12))
def test_any_partition_merges_to_the_single_process_table(iou_type: str, seed: int) -> None:
    case = CASES[iou_type](seed)
    params = resolve_params(case.get("params"), iou_type)
    g = load_coco_gt(copy.deepcopy(case["gt"]), keep_segmentation=iou_type == "segm",
                     need_keypoints=iou_type == "keypoints")  # fmt: skip
    r = load_coco_results(copy.deepcopy(case["dt"]), g, iou_type=iou_type)
    whole, counts, warnings = match_coco(g, r, params)
    rng = np.random.default_rng(seed)
    n_img = counts["n_images"]
    n_shards = int(rng.integers(1, 8))
    owner = rng.integers(0, n_shards, n_img)  # any partition, not only runs of consecutive images
    parts = [
        match_coco(g, r, params, images=np.flatnonzero(owner == s))[0] for s in rng.permutation(n_shards)
    ]
    merged = merge_coco_tables(parts)
    for name in ("cat", "img", "score", "rank", "tp", "ig", "npig"):
        a, b = getattr(merged, name), getattr(whole, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    _same_eval(finish_evaluation(merged, params, "pycocotools", g, counts, list(warnings)),
               finish_evaluation(whole, params, "pycocotools", g, counts, list(warnings)))  # fmt: skip


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("iou_type", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 9])  # 0, 3: img_ids; 4: use_cats=False; 9: cat_ids
@pytest.mark.parametrize("shards", [1, 2, 7])
def test_sharded_driver_equals_one_process(iou_type: str, seed: int, shards: int) -> None:
    case = CASES[iou_type](seed)
    kw = {"iou_type": iou_type, "params": case.get("params")}
    one = evaluate_coco(copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"]), **kw)
    sharded = evaluate_coco_sharded(copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"]), shards=shards, **kw)
    _same_eval(sharded, one)


def test_several_result_files_are_their_concatenation(tmp_path) -> None:
    import json

    case = random_case(3)
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(case["gt"]))
    dt = case["dt"]
    files = []
    for i, part in enumerate((dt[: len(dt) // 3], dt[len(dt) // 3 :])):
        files.append(tmp_path / f"rank{i}.json")
        files[-1].write_text(json.dumps(part))
    one = evaluate_coco(str(gt_path), dt, params=case.get("params"))
    _same_eval(evaluate_coco(str(gt_path), [str(f) for f in files], params=case.get("params")), one)
    _same_eval(evaluate_coco(str(gt_path), files, shards=3, params=case.get("params")), one)


def test_voc_tables_merge_in_row_order_and_refuse_overlap() -> None:
    t1 = VocMatchTable(row=np.array([2, 0]), outcome=np.array([1, -1], np.int8))
    t2 = VocMatchTable(row=np.array([1, 3]), outcome=np.array([0, 1], np.int8))
    assert merge_voc_tables([t2, t1], 4).tolist() == [-1, 0, 1, 1]
    with pytest.raises(ValidationError, match="row 2 is in 2 match tables"):
        merge_voc_tables([t1, t2, VocMatchTable(row=np.array([2]), outcome=np.array([1], np.int8))], 4)
    with pytest.raises(ValidationError, match="row 3 is in 0"):
        merge_voc_tables([t1, VocMatchTable(row=np.array([1]), outcome=np.array([0], np.int8))], 4)


def random_voc(seed: int):
    """Small VOC problems with score ties across images, duplicate boxes and difficult objects."""
    from deteval.detection.voc import VOCDetections, VOCGroundTruth

    rng = np.random.default_rng(seed)
    n_img, n_cls = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    n_gt, n_dt = int(rng.integers(0, 30)), int(rng.integers(0, 60))
    xy = rng.integers(0, 40, (n_gt, 2))
    gt_boxes = np.c_[xy, xy + rng.integers(0, 20, (n_gt, 2))]
    gt = VOCGroundTruth.from_arrays(rng.integers(0, n_img, n_gt), rng.integers(0, n_cls, n_gt), gt_boxes,
                                    rng.random(n_gt) < 0.2, images=n_img, classes=n_cls)  # fmt: skip
    xy = rng.integers(0, 40, (n_dt, 2))
    dt_boxes = np.c_[xy, xy + rng.integers(0, 20, (n_dt, 2))]
    if n_gt and n_dt:  # detections on a ground-truth box, some of them twice with one score
        on = rng.random(n_dt) < 0.5
        dt_boxes[on] = gt_boxes[rng.integers(0, n_gt, int(on.sum()))]
    scores = rng.choice([0.1, 0.5, 0.9, 0.95], n_dt)
    dets = VOCDetections.from_arrays(rng.integers(0, n_img, n_dt), rng.integers(0, n_cls, n_dt), dt_boxes,
                                     scores, images=n_img, classes=n_cls)  # fmt: skip
    return gt, dets


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("profile", ["voc_devkit", "py_faster_rcnn"])
@pytest.mark.parametrize("seed", range(25))
def test_voc_shards_equal_one_process(profile: str, seed: int) -> None:
    from deteval.run.voc import evaluate_voc

    gt, dets = random_voc(seed)
    metric = "voc07" if seed % 2 else "voc2010"
    one = evaluate_voc(gt, dets, profile=profile, metric=metric)
    for shards in (1, 2, 7):
        part = evaluate_voc(gt, dets, profile=profile, metric=metric, shards=shards)
        assert part.to_dict() == one.to_dict()
        for c in one.curves:
            assert np.array_equal(part.curves[c].precision, one.curves[c].precision)


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(6))
def test_a_shard_is_matched_in_bounded_pieces(monkeypatch, seed: int) -> None:
    import deteval.detection.coco.parts as coco_parts

    monkeypatch.setattr(coco_parts, "SHARD_DETECTIONS", 3)  # several pieces per shard
    case = random_case(seed)
    one = evaluate_coco(copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"]), params=case["params"])
    for shards in (1, 2):
        got = evaluate_coco_sharded(copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"]), shards=shards,
                                    params=case["params"])  # fmt: skip
        _same_eval(got, one)
