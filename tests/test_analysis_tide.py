"""TIDE error decomposition: equal to tidecv 1.0.1 run live (fixtures and random cases), the protocol mode's
base AP equal to the COCO and VOC evaluations, hand-checked oracle fixes, the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from _tide_cases import coco_files, one_image, random_case, run_tidecv, voc_tables

from deteval.analysis.inputs import coco_errors, voc_errors
from deteval.analysis.tide import tide_errors
from deteval.cli import main
from deteval.detection.coco import evaluate_coco
from deteval.detection.voc import VOCParams
from deteval.errors import ConfigError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.run.voc import evaluate_voc

# (found, not imported: tidecv draws in its import, which every worker would pay at collection)
pytestmark = pytest.mark.skipif(find_spec("tidecv") is None, reason="needs tidecv")

DATA = Path(__file__).resolve().parent / "data" / "coco"
FIXTURES = [
    (
        "coco_val2014_100/instances_val2014_100.json",
        "coco_val2014_100/instances_val2014_fakebbox100_results.json",
    ),
    ("coco_fruits/fruit_val_coco_format.json", "coco_fruits/coco_instances_results.json"),
]
VOC_SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "voc"


def _ours(e):
    return {"ap": e.ap, "main": e.main, "special": e.special, "by_size": e.by_size, "counts": e.counts}


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(60))
def test_tide_compat_equals_tidecv_on_random_cases(seed):
    inp = random_case(seed, crowd=seed % 3 != 0)
    if len(inp.dt_img) == 0 or not (~inp.gt_crowd).any():
        pytest.skip("tidecv needs detections and a positive")
    order = np.random.default_rng(seed).permutation(6) if seed % 2 else None
    inp = replace(inp, image_order=order)
    ref = run_tidecv(inp, 6, image_order=order)
    assert _ours(tide_errors(inp, compat="tide")) == ref  # bit for bit, percent units as tidecv


@pytest.mark.slow
@pytest.mark.parametrize("pos,bg", [(0.5, 0.1), (0.75, 0.3), (0.3, 0.0)])
def test_tide_compat_other_thresholds(pos, bg):
    for seed in range(100, 110):
        inp = random_case(seed)
        if len(inp.dt_img) == 0 or not (~inp.gt_crowd).any():
            continue
        ours = tide_errors(inp, compat="tide", pos_threshold=pos, bg_threshold=bg)
        assert _ours(ours) == run_tidecv(inp, 6, pos=pos, bg=bg)


@pytest.mark.parametrize("gt_file,res_file", FIXTURES)
def test_tide_compat_equals_tidecv_on_coco_fixtures(gt_file, res_file, tmp_path):
    from tidecv import TIDE, datasets

    gt = load_coco_gt(DATA / gt_file)
    res = load_coco_results(DATA / res_file, gt)
    ours = coco_errors(gt, res, compat="tide")
    # tidecv's COCO loader reads every annotation's segmentation (for its mask mode) and fails without one:
    # the harness adds the box as a polygon where it is missing (bbox mode never reads it).
    doc = json.loads((DATA / gt_file).read_text())
    for a in doc["annotations"]:
        x, y, w, h = a["bbox"]
        a.setdefault("segmentation", [[x, y, x + w, y, x + w, y + h, x, y + h]])
    patched = tmp_path / "gt.json"
    patched.write_text(json.dumps(doc))
    tide = TIDE()
    run = tide.evaluate(datasets.COCO(str(patched)), datasets.COCOResult(str(DATA / res_file)), mode="bbox")
    main_ref = next(iter(tide.get_main_errors().values()))
    special_ref = next(iter(tide.get_special_errors().values()))
    assert ours.ap == run.ap
    names = {"Cls": "cls", "Loc": "loc", "Both": "both", "Dupe": "dupe", "Bkg": "bkg", "Miss": "miss"}
    assert ours.main == {names[k]: v for k, v in main_ref.items()}
    assert ours.special == {"fp": special_ref["FalsePos"], "fn": special_ref["FalseNeg"]}
    assert ours.ap > 0 and sum(ours.counts.values()) > 0


@pytest.mark.parametrize("seed", range(25))
def test_protocol_mode_base_ap_is_cocoeval_ap50(seed):
    inp = random_case(seed + 200)
    if len(inp.dt_img) == 0:
        pytest.skip("no detections")
    gt_d, res_d = coco_files(inp, 6)
    gt = load_coco_gt(gt_d)
    res = load_coco_results(res_d, gt)
    ev = evaluate_coco(gt, res)
    ours = coco_errors(gt, res)
    assert ours.ap == ev.stats[1]  # AP at IoU 0.5, all areas, maxDets 100, the same double
    assert all(v >= 0 for v in ours.main.values())


@pytest.mark.parametrize("metric", ["voc2010", "voc07"])
@pytest.mark.parametrize("seed", range(15))
def test_protocol_mode_base_ap_is_voc_map(seed, metric):
    inp = random_case(seed + 300)
    gt, dets = voc_tables(inp)
    params = VOCParams(metric=metric)
    result = evaluate_voc(gt, dets, params=params)
    classes = list(result.per_class)
    ours = voc_errors(gt, dets, classes, params=params)
    if result.summary["map"] is None:
        assert ours.ap == -1.0
    else:
        assert ours.ap == result.summary["map"]


def test_hand_checked_oracle_fixes():
    # GT0 (class 0) found with the wrong class at 0.9, then found right at 0.5; GT1 (class 0) boxed badly
    # (IoU 0.25) at 0.8; a background box at 0.7; GT2 (class 1, 100x100) missed entirely.
    inp = one_image(
        [[0, 0, 10, 10], [50, 50, 10, 10], [200, 200, 100, 100]],
        [0, 0, 1],
        [[0, 0, 10, 10], [50, 50, 5, 5], [120, 120, 10, 10], [0, 0, 10, 10]],
        [1, 0, 0, 0],
        [0.9, 0.8, 0.7, 0.5],
    )
    e = tide_errors(inp)
    assert e.counts == {"cls": 1, "loc": 1, "both": 0, "dupe": 0, "bkg": 1, "miss": 1}
    # class 0: ranking FP(loc) FP(bkg) TP over 2 GT -> P 1/3 at R 1/2; class 1: FP(cls) over 1 GT -> 0.
    q0 = np.zeros(101)
    q0[:51] = 1 / (3 + np.spacing(1))
    assert e.ap == np.mean(np.concatenate([q0, np.zeros(101)]))
    # Fixing loc: class 0 ranks TP (0.8), FP (0.7), TP (0.5): P 1 up to R 1/2, then 2/3.
    q_loc = np.where(np.arange(101) <= 50, 1 / (1 + np.spacing(1)), 2 / (3 + np.spacing(1)))
    assert e.main["loc"] == pytest.approx(np.mean(np.concatenate([q_loc, np.zeros(101)])) - e.ap, abs=1e-15)
    # Fixing cls: GT0 is already matched, so the cls detection is only removed; class 1 still 0.
    assert e.main["cls"] == 0.0
    # Fixing miss: class 1 has no GT left and is dropped from the mean.
    assert e.main["miss"] == pytest.approx(q0.mean() - e.ap, abs=1e-15)
    assert e.by_size["large"]["miss"] == e.main["miss"]
    assert e.by_size["small"]["miss"] == 0.0
    assert e.main["bkg"] > 0 and e.main["dupe"] == 0.0 and e.main["both"] == 0.0


@pytest.mark.slow
def test_json_units_and_cli(capsys, tmp_path):
    gt_file, res_file = FIXTURES[0]
    code = main(["coco", str(DATA / gt_file), str(DATA / res_file), "--errors", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    e = doc["errors"]
    assert set(e["main"]) == {"cls", "loc", "both", "dupe", "bkg", "miss"}
    assert set(e["special"]) == {"fp", "fn"}
    assert e["ap"] == doc["stats"][1]
    main(
        [
            "coco",
            str(DATA / gt_file),
            str(DATA / res_file),
            "--errors",
            "--errors-compat",
            "tide",
            "--format",
            "json",
        ]
    )
    t = json.loads(capsys.readouterr().out)["errors"]
    gt = load_coco_gt(DATA / gt_file)
    ref = coco_errors(gt, load_coco_results(DATA / res_file, gt), compat="tide")
    assert t["main"] == {k: v / 100 for k, v in ref.main.items()}
    code = main(["coco", str(DATA / gt_file), str(DATA / res_file), "--errors"])
    out = capsys.readouterr().out
    assert code == 0 and "TIDE errors (protocol" in out and " dAP " in out


def test_voc_cli(capsys):
    args = [
        "voc",
        "--annotations", str(VOC_SAMPLE / "Annotations"),
        "--image-set", str(VOC_SAMPLE / "ImageSets" / "Main" / "test.txt"),
        "--detections", str(VOC_SAMPLE / "results" / "comp4_det_test_{cls}.txt"),
        "--format", "json", "--errors",
    ]  # fmt: skip
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"]["ap"] == doc["map"]
    assert doc["errors"]["compat"] == "protocol"
    assert main([*args, "--errors-compat", "tide"]) == 0
    assert json.loads(capsys.readouterr().out)["errors"]["compat"] == "tide"


def test_segm_is_refused():
    gt = load_coco_gt(DATA / FIXTURES[0][0])
    res = load_coco_results(DATA / FIXTURES[0][1], gt)
    from deteval.detection.coco_params import CocoParams

    with pytest.raises(ConfigError, match="bbox only"):
        coco_errors(gt, res, params=CocoParams.from_options("segm"))


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--errors", "--errors-bg-iou", "0.7"], "--errors-bg-iou <= --errors-fg-iou"),
        (["--confusion", "--iou", "0"], "iou must be in (0, 1]"),
        (["--calibration", "--calibration-bins", "0"], "--calibration-bins must be a whole number from 1"),
    ],
)
def test_bad_analysis_options_exit_2(extra, message, capsys):
    gt_file, res_file = FIXTURES[1]
    assert main(["coco", str(DATA / gt_file), str(DATA / res_file), *extra]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("seed", range(8))
def test_voc_tide_compat_equals_tidecv_on_the_coco_format_conversion(seed):
    from deteval.analysis.inputs import tide_input_from_voc

    inp = random_case(seed + 900)
    gt, dets = voc_tables(inp)
    classes = ["a", "b", "c"]
    converted = tide_input_from_voc(gt, dets, classes, VOCParams(), xywh=True)
    if len(converted.dt_img) == 0 or not (~converted.gt_crowd).any():
        pytest.skip("tidecv needs detections and a positive")
    ours = voc_errors(gt, dets, classes, compat="tide")
    assert _ours(ours) == run_tidecv(converted, 6)
    # the conversion: [x1, y1, x2 - x1 + 1, y2 - y1 + 1], difficult objects as crowd regions
    assert converted.gt_box[:, 2].tolist() == (gt.boxes[:, 2] - gt.boxes[:, 0] + 1).tolist()
    assert converted.gt_crowd.tolist() == gt.difficult.tolist()
