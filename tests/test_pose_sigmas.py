"""OKS sigmas per category (preset, command line, category record) against pycocotools run per category with
that category's sigmas and against vernier's per-category ``Keypoints(sigmas=...)`` run live."""

from __future__ import annotations

import contextlib
import copy
import io
import json

import numpy as np
import pytest
from _pose_cases import random_pose_case

from deteval.detection.coco_params import CocoParams
from deteval.detection.keypoint_sigmas import parse_sigmas_per_category
from deteval.errors import ConfigError, DetevalError, ValidationError
from deteval.run.coco import evaluate_coco

SKELETONS = (1, 5, 17, 68)


def _pycocotools_one_category(case: dict, cat_id: int, sigmas: list[float]) -> tuple[np.ndarray, np.ndarray]:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(case["gt"])
        cg.createIndex()
        cd = cg.loadRes(copy.deepcopy(case["dt"]))
        E = COCOeval(cg, cd, "keypoints")
        E.params.kpt_oks_sigmas = np.array(sigmas)
        E.params.catIds = [cat_id]
        E.evaluate()
        E.accumulate()
    return E.eval["precision"][:, :, 0], E.eval["recall"][:, 0]


def _last_by_option(case: dict) -> CocoParams:
    """The last category's sigmas through the option (the others' are in their records)."""
    last = case["gt"]["categories"][-1]["id"]
    return CocoParams.from_options("keypoints", kpt_oks_sigmas_per_category={last: case["sigmas"][last]})


@pytest.mark.fast_cases(seed=2)
@pytest.mark.parametrize("k", SKELETONS)
@pytest.mark.parametrize("seed", range(25))
def test_each_category_equals_pycocotools_with_its_sigmas(k, seed):
    case = random_pose_case(seed, k)
    ev = evaluate_coco(case["gt"], case["dt"], params=_last_by_option(case))
    for j, cid in enumerate(sorted(case["sigmas"])):
        precision, recall = _pycocotools_one_category(case, cid, case["sigmas"][cid])
        assert np.array_equal(ev.precision[:, :, j], precision), (k, seed, cid)
        assert np.array_equal(ev.recall[:, j], recall), (k, seed, cid)


@pytest.mark.fast_cases(seed=2)
@pytest.mark.parametrize("k", SKELETONS)
@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("parity", ["strict", "corrected"])
def test_stats_equal_vernier_per_category_sigmas(k, seed, parity):
    vernier = pytest.importorskip("vernier.instance")
    case = random_pose_case(seed, k)
    ev = evaluate_coco(case["gt"], case["dt"], params=_last_by_option(case))
    kp = vernier.Keypoints(sigmas={c: tuple(v) for c, v in case["sigmas"].items()})
    s = vernier.Evaluator(iou=kp, parity_mode=parity).evaluate(
        json.dumps(case["gt"]).encode(), json.dumps(case["dt"]).encode()
    )
    assert np.array_equal(ev.stats, np.asarray(s.stats, dtype=np.float64)), (k, seed)


def test_every_strategy_and_the_command_line_give_the_same_numbers(tmp_path, capsys):
    from deteval.cli import main

    case = random_pose_case(0, 5)
    last = case["gt"]["categories"][-1]["id"]
    p = _last_by_option(case)
    ref = evaluate_coco(case["gt"], case["dt"], params=p, strategy="one process")
    for kw in ({"shards": 2}, {"shards": 3}, {"strategy": "auto"}):
        ev = evaluate_coco(case["gt"], case["dt"], params=p, **kw)
        assert np.array_equal(ev.precision, ref.precision), kw
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(case["gt"]))
    dt_path.write_text(json.dumps(case["dt"]))
    spec = f"{last}:" + ",".join(map(str, case["sigmas"][last]))
    out = tmp_path / "out.json"
    code = main(
        ["coco", str(gt_path), str(dt_path), "--iou-type", "keypoints", "--kpt-oks-sigmas-per-category", spec,
         "--format", "json", "-o", str(out)]
    )  # fmt: skip
    assert code == 0
    got = json.loads(out.read_text())
    assert ref.stats[0] > 0.3
    assert got["stats"] == ref.stats.tolist()
    preset = tmp_path / "p.toml"
    lists = ", ".join(map(str, case["sigmas"][last]))
    preset.write_text(f'iou-type = "keypoints"\n[kpt-oks-sigmas-per-category]\n"{last}" = [{lists}]\n')
    out2 = tmp_path / "out2.json"
    assert (
        main(
            ["coco", str(gt_path), str(dt_path), "--config", str(preset), "--format", "json", "-o", str(out2)]
        )
        == 0
    )
    assert json.loads(out2.read_text())["stats"] == got["stats"]


def test_option_wins_over_record_which_wins_over_the_global_list():
    case = random_pose_case(9, 5)
    cats = case["gt"]["categories"]
    first = cats[0]["id"]
    other = [0.05] * 5
    a = evaluate_coco(case["gt"], case["dt"], params=_last_by_option(case))
    # the option on a category with a record: the option's sigmas count
    p = CocoParams.from_options(
        "keypoints",
        kpt_oks_sigmas_per_category={cats[-1]["id"]: case["sigmas"][cats[-1]["id"]], first: other},
    )
    b = evaluate_coco(case["gt"], case["dt"], params=p)
    gt2 = copy.deepcopy(case["gt"])
    gt2["categories"][0]["sigmas"] = other
    c = evaluate_coco(gt2, case["dt"], params=_last_by_option(case))
    assert np.array_equal(b.precision, c.precision)
    assert not np.array_equal(a.precision[:, :, 0], b.precision[:, :, 0]) or np.all(a.precision[:, :, 0] < 0)
    # without per-category sigmas anywhere, the global list of 5 counts for all
    gt3 = copy.deepcopy(case["gt"])
    for rec in gt3["categories"]:
        rec.pop("sigmas", None)
    d = evaluate_coco(gt3, case["dt"], params=CocoParams.from_options("keypoints", kpt_oks_sigmas=other))
    e = evaluate_coco(
        gt3,
        case["dt"],
        params=CocoParams.from_options(
            "keypoints", kpt_oks_sigmas_per_category={r["id"]: other for r in gt3["categories"]}
        ),
    )
    assert np.array_equal(d.precision, e.precision)


def test_the_command_line_form_and_its_errors():
    got = parse_sigmas_per_category("1:0.1,0.2; 7 :0.3,0.4;cat:1")
    assert list(got) == [1, 7, "cat"]
    assert got[7].tolist() == [0.3, 0.4]
    assert parse_sigmas_per_category({"3": [0.5]})[3].tolist() == [0.5]
    for bad in ("1:0.1;1:0.2", "1:0.1;", "1 0.1", "1:0,0.1", "1:x", "1:nan", ":0.1", ""):
        with pytest.raises(ConfigError):
            parse_sigmas_per_category(bad)
    with pytest.raises(ConfigError):
        parse_sigmas_per_category({True: [0.1]})


def test_bad_sigmas_name_the_file_and_category():
    case = random_pose_case(1, 5)
    gt = copy.deepcopy(case["gt"])
    gt["categories"][0]["sigmas"] = [0.1, -0.2, 0.1, 0.1, 0.1]
    with pytest.raises(ValidationError, match="category id"):
        evaluate_coco(gt, case["dt"], params=_last_by_option(case))
    gt["categories"][0]["sigmas"] = [0.1] * 4
    with pytest.raises(ValidationError, match="has 5 keypoints but the sigmas of category"):
        evaluate_coco(gt, case["dt"], params=_last_by_option(case))
    with pytest.raises(DetevalError, match="not in the ground truth"):
        evaluate_coco(
            case["gt"],
            case["dt"],
            params=CocoParams.from_options("keypoints", kpt_oks_sigmas_per_category={999: [0.1] * 5}),
        )
    # the last category has no sigmas of its own and COCO's 17 do not fit 5 keypoints
    with pytest.raises(ValidationError, match="kpt_oks_sigmas has 17"):
        evaluate_coco(case["gt"], case["dt"], iou_type="keypoints")


def test_two_cores_read_the_category_sigmas_too(tmp_path, monkeypatch):
    import deteval.run.coco_two_cores as two_cores
    import deteval.run.forked as forked

    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)  # (the machine may be busy)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    for name in ("FORK_RESULTS_BYTES", "FORK_DETECTIONS", "FORK_MASKS", "FORK_KEYPOINTS"):
        monkeypatch.setattr(two_cores, name, 0)
    forks = []
    real = two_cores.fork_call

    def counting(fn, *args):
        child = real(fn, *args)
        forks.append(child is not None)
        return child

    monkeypatch.setattr(two_cores, "fork_call", counting)
    case = random_pose_case(0, 17, n_cats=4)
    for rec in case["gt"]["categories"]:
        rec["sigmas"] = case["sigmas"][rec["id"]]
    (tmp_path / "gt.json").write_text(json.dumps(case["gt"]))
    (tmp_path / "dt.json").write_text(json.dumps(case["dt"]))
    monkeypatch.setenv(forked.ENV_PROCESSES, "1")
    one = evaluate_coco(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), iou_type="keypoints")
    monkeypatch.setenv(forked.ENV_PROCESSES, "")
    two = evaluate_coco(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), iou_type="keypoints")
    assert any(forks)
    assert np.array_equal(one.precision, two.precision) and one.stats[0] > 0
    for j, cid in enumerate(sorted(case["sigmas"])):
        precision, _ = _pycocotools_one_category(case, cid, case["sigmas"][cid])
        assert np.array_equal(two.precision[:, :, j], precision)
