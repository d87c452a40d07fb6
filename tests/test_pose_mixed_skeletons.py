"""Keypoints of categories with skeletons of different sizes in one file (1, 5, 17 and 68 keypoints): each
category's numbers are pycocotools' run on that category alone with its own sigmas, and the stats are
vernier's per-category ``Keypoints(sigmas=...)`` run live."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from _pose_cases import random_pose_case
from test_pose_sigmas import _last_by_option, _pycocotools_one_category

from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError, ValidationError
from deteval.run.coco import evaluate_coco

SKELETONS = (1, 5, 17, 68)


def _case(seed: int) -> dict:
    return random_pose_case(seed, 0, n_cats=int(2 + seed % 3), mixed=SKELETONS)


def test_the_cases_mix_skeletons():
    sizes = [{len(v) for v in _case(s)["sigmas"].values()} for s in range(60)]
    assert all(len(x) >= 2 for x in sizes)
    assert set().union(*sizes) == set(SKELETONS)


@pytest.mark.fast_cases(seed=3)
@pytest.mark.parametrize("seed", range(150))
def test_each_category_equals_pycocotools_with_its_sigmas(seed):
    case = _case(seed)
    ev = evaluate_coco(case["gt"], case["dt"], params=_last_by_option(case))
    for j, cid in enumerate(sorted(case["sigmas"])):
        precision, recall = _pycocotools_one_category(case, cid, case["sigmas"][cid])
        assert np.array_equal(ev.precision[:, :, j], precision), (seed, cid)
        assert np.array_equal(ev.recall[:, j], recall), (seed, cid)


@pytest.mark.fast_cases(seed=3)
@pytest.mark.parametrize("seed", range(150))
@pytest.mark.parametrize("parity", ["strict", "corrected"])
def test_stats_equal_vernier(seed, parity):
    vernier = pytest.importorskip("vernier.instance")
    case = _case(seed)
    ev = evaluate_coco(case["gt"], case["dt"], params=_last_by_option(case))
    kp = vernier.Keypoints(sigmas={c: tuple(v) for c, v in case["sigmas"].items()})
    s = vernier.Evaluator(iou=kp, parity_mode=parity).evaluate(
        json.dumps(case["gt"]).encode(), json.dumps(case["dt"]).encode()
    )
    assert np.array_equal(ev.stats, np.asarray(s.stats, dtype=np.float64)), seed


@pytest.mark.fast_cases(seed=3)
@pytest.mark.parametrize("seed", range(4))
def test_every_strategy_and_the_command_line_give_the_same_numbers(tmp_path, seed):
    from deteval.cli import main

    case = _case(seed)
    for rec in case["gt"]["categories"]:
        rec["sigmas"] = case["sigmas"][rec["id"]]
    ref = evaluate_coco(case["gt"], case["dt"], iou_type="keypoints", strategy="one process")
    assert ref.stats[0] > 0.01  # (detections are found)
    for kw in ({"shards": 2}, {"shards": 3}, {"strategy": "auto"}):
        ev = evaluate_coco(case["gt"], case["dt"], iou_type="keypoints", **kw)
        assert np.array_equal(ev.precision, ref.precision), kw
        assert np.array_equal(ev.stats, ref.stats), kw
    gt_path, dt_path, out = tmp_path / "gt.json", tmp_path / "dt.json", tmp_path / "out.json"
    gt_path.write_text(json.dumps(case["gt"]))
    dt_path.write_text(json.dumps(case["dt"]))
    args = ["coco", str(gt_path), str(dt_path), "--iou-type", "keypoints", "--format", "json", "-o", str(out)]
    assert main(args) == 0
    assert json.loads(out.read_text())["stats"] == ref.stats.tolist()


def _two_sizes() -> dict:
    case = _case(1)
    for rec in case["gt"]["categories"]:
        rec["sigmas"] = case["sigmas"][rec["id"]]
    return case


def test_a_record_of_another_length_than_its_category_is_refused_naming_it():
    case = _two_sizes()
    gt = copy.deepcopy(case["gt"])
    ann = gt["annotations"][3]
    k = len(case["sigmas"][ann["category_id"]])
    ann["keypoints"] = ann["keypoints"][:-3] if k > 1 else ann["keypoints"] * 2
    with pytest.raises(ValidationError) as e:
        evaluate_coco(gt, case["dt"], iou_type="keypoints")
    assert e.value.record == "annotations[3]"
    assert f"keypoints of category {ann['category_id']}" in str(e.value)
    assert f"3·K = {3 * k} numbers" in str(e.value) and f"got {len(ann['keypoints'])}" in str(e.value)
    dt = copy.deepcopy(case["dt"])
    k = len(case["sigmas"][dt[5]["category_id"]])
    dt[5]["keypoints"] = dt[5]["keypoints"] + [1.0, 2.0, 0.5]
    with pytest.raises(ValidationError) as e:
        evaluate_coco(case["gt"], dt, iou_type="keypoints")
    assert e.value.record == 5
    assert f"3·K = {3 * k} numbers" in str(e.value) and f"got {3 * k + 3}" in str(e.value)


def test_the_name_list_fixes_the_count_and_a_global_list_must_fit_every_category():
    case = _two_sizes()
    gt = copy.deepcopy(case["gt"])
    gt["categories"][0]["keypoints"].append("extra")
    with pytest.raises(ValidationError, match="from its record's keypoint names"):
        evaluate_coco(gt, case["dt"], iou_type="keypoints")
    gt = copy.deepcopy(case["gt"])
    for rec in gt["categories"]:
        rec.pop("sigmas")
    with pytest.raises(ValidationError, match="but kpt_oks_sigmas has 17"):
        evaluate_coco(gt, case["dt"], iou_type="keypoints")
    with pytest.raises(ConfigError, match="need use_cats"):
        evaluate_coco(gt, case["dt"], params=CocoParams.from_options("keypoints", use_cats=False))


def test_a_mixed_file_with_a_missing_count_is_refused_clearly():
    case = _two_sizes()
    gt = copy.deepcopy(case["gt"])
    gt["annotations"][0]["keypoints"] = []
    with pytest.raises(Exception) as e:
        evaluate_coco(gt, case["dt"], iou_type="keypoints")
    assert "3K numbers" in str(e.value) and e.value.record == "annotations[0]"


@pytest.mark.fast_cases(seed=3)
@pytest.mark.parametrize("seed", range(30))
def test_crowdpose_each_category_equals_faster_coco_eval_with_its_sigmas(tmp_path, seed):
    """CrowdPose's protocol on a file of several skeleton sizes: each category's precision over all images
    (the area range CrowdPose reports) is faster-coco-eval's ``keypoints_crowd`` run on that category alone."""
    fce = pytest.importorskip("faster_coco_eval")
    from deteval.run.crowdpose import evaluate_crowdpose

    case = random_pose_case(seed, 0, n_cats=2 + seed % 3, crowd_index=True, mixed=SKELETONS)
    for rec in case["gt"]["categories"]:
        rec["sigmas"] = case["sigmas"][rec["id"]]
    use_area = seed % 2 == 1
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(case["gt"]))
    ours = evaluate_crowdpose(gt_path, case["dt"], use_area=use_area)
    for j, cid in enumerate(sorted(case["sigmas"])):
        cg = fce.COCO(str(gt_path))
        E = fce.COCOeval_faster(
            cg,
            cg.loadRes(copy.deepcopy(case["dt"])),
            "keypoints_crowd",
            kpt_oks_sigmas=case["sigmas"][cid],
            use_area=use_area,
            print_function=lambda *a, **k: None,
        )
        E.params.catIds = [cid]
        E.evaluate()
        E.accumulate()
        ref = np.asarray(E.eval["precision"])[:, :, 0, 0]
        assert np.array_equal(ours.overall.precision[:, :, j, 0], ref), (seed, cid)


def test_sigma_estimates_refuse_several_skeleton_sizes(tmp_path):
    from deteval.cli import main

    case = _two_sizes()
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(case["gt"]))
    assert main(["sigmas", str(gt_path)]) == 2
