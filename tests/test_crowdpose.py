"""CrowdPose's protocol against faster-coco-eval's ``iouType="keypoints_crowd"`` run live."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from _pose_cases import random_pose_case

from deteval.detection.crowdpose import CROWDPOSE_KPT_OKS_SIGMAS, crowdpose_params
from deteval.detection.faster_coco_eval import FIRST_HIT, faster_coco_eval_precision
from deteval.errors import DetevalError, ValidationError
from deteval.run.crowdpose import evaluate_crowdpose

fce = pytest.importorskip("faster_coco_eval")


def _case(seed: int, k: int, drop_area: bool) -> dict:
    case = random_pose_case(seed, k, n_cats=1 + seed % 3, crowd_index=True)
    for rec in case["gt"]["categories"]:
        rec.pop("sigmas", None)  # (faster-coco-eval takes one list)
    if drop_area:
        for ann in case["gt"]["annotations"]:
            del ann["area"]
    return case


def _reference(gt_path, case: dict, sigmas, use_area: bool) -> np.ndarray:
    cg = fce.COCO(str(gt_path))
    cd = cg.loadRes(copy.deepcopy(case["dt"]))
    E = fce.COCOeval_faster(
        cg,
        cd,
        "keypoints_crowd",
        kpt_oks_sigmas=sigmas,
        use_area=use_area,
        print_function=lambda *a, **k: None,
    )
    E.evaluate()
    E.accumulate()
    E.summarize()
    return np.asarray(E.stats, dtype=np.float64)


@pytest.mark.fast_cases(seed=2)
@pytest.mark.parametrize("k", [1, 5, 14, 17, 68])
@pytest.mark.parametrize("seed", range(24))
def test_equals_faster_coco_eval_keypoints_crowd(tmp_path, k, seed):
    use_area = seed % 2 == 1
    case = _case(seed, k, drop_area=not use_area and seed % 4 == 0)
    sigmas = case["sigmas"][case["gt"]["categories"][0]["id"]]
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(case["gt"]))
    ref = _reference(gt_path, case, sigmas, use_area)
    ours = evaluate_crowdpose(gt_path, case["dt"], params=crowdpose_params(sigmas), use_area=use_area)
    assert np.array_equal(ours.stats, ref), (ours.stats, ref)


def test_crowdpose_sigmas_by_default_and_the_command(tmp_path):
    from deteval.cli import main

    case = _case(6, 14, drop_area=True)
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(case["gt"]))
    dt_path.write_text(json.dumps(case["dt"]))
    ref = _reference(gt_path, case, CROWDPOSE_KPT_OKS_SIGMAS.tolist(), False)
    assert ref[0] > 0.05
    out = tmp_path / "out.json"
    assert main(["crowdpose", str(gt_path), str(dt_path), "--format", "json", "-o", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["stats"] == ref.tolist()
    assert [got[f"n_images_{n}"] for n in ("easy", "medium", "hard")] == [
        sum(lo <= im["crowdIndex"] < hi for im in case["gt"]["images"])
        for lo, hi in ((0, 0.2), (0.2, 0.8), (0.8, 2))
    ]


def test_levels_and_their_edges():
    case = _case(2, 5, drop_area=False)
    images = case["gt"]["images"]
    for im, ci in zip(images, [0.0, 0.2, 0.19999, 0.8, 1.0, 0.5]):
        im["crowdIndex"] = ci
    ev = evaluate_crowdpose(
        case["gt"], case["dt"], params=crowdpose_params(case["sigmas"][case["gt"]["categories"][0]["id"]])
    )
    counts = [sum(ci < 0.2 for ci in [im["crowdIndex"] for im in images])]
    assert ev.level_images[0] == counts[0]
    assert sum(ev.level_images) == len(images)
    fixed = evaluate_crowdpose(
        case["gt"],
        case["dt"],
        params=crowdpose_params(case["sigmas"][case["gt"]["categories"][0]["id"]]),
        compat="fixed",
    )
    assert np.array_equal(fixed.stats[:6], ev.stats[:6])
    bad = copy.deepcopy(case["gt"])
    del bad["images"][1]["crowdIndex"]
    with pytest.raises(ValidationError, match=r"images\[1\].*crowdIndex"):
        evaluate_crowdpose(bad, case["dt"], params=crowdpose_params([0.1] * 5))


def test_faster_coco_eval_precision_only_changes_a_first_hit():
    p = np.array([FIRST_HIT, 1.0, 0.5, 2 / 3, 0.0, -1.0, np.nextafter(FIRST_HIT, 0)])
    q = faster_coco_eval_precision(p)
    assert q.tolist() == [1.0, 1.0, 0.5, 2 / 3, 0.0, -1.0, float(np.nextafter(FIRST_HIT, 0))]
    # no ratio of counts below 2000 but 1/1 with pycocotools' eps rounds to the first hit
    n = np.arange(2, 2000)
    for tp in (n - 1, n // 2):
        assert not (tp / (n + np.spacing(1)) == FIRST_HIT).any()


def test_a_bad_file_is_named(tmp_path):
    case = _case(3, 5, drop_area=True)
    del case["gt"]["annotations"][0]["num_keypoints"]
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(case["gt"]))
    with pytest.raises(DetevalError, match="num_keypoints") as exc:
        evaluate_crowdpose(gt_path, case["dt"], params=crowdpose_params([0.1] * 5))
    assert exc.value.file == str(gt_path) and exc.value.record == "annotations[0]"
