"""Confusion matrix: the layout and sums the issue states, the diagonal equal to the true positives of
pycocotools (run live) and of the VOC evaluation, hand-checked cross-class cases, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _tide_cases import coco_files, one_image, random_case, voc_tables

from deteval.analysis.confusion import confusion_matrix
from deteval.analysis.inputs import coco_confusion, tide_input_coco, voc_confusion
from deteval.cli import main
from deteval.detection.voc import VOCParams
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.run.voc import evaluate_voc

DATA = Path(__file__).resolve().parent / "data" / "coco"
VOC_SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "voc"


def _pycocotools_tp(gt_d, res_d, iou, thr):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    coco = COCO()
    coco.dataset = json.loads(json.dumps(gt_d))
    coco.createIndex()
    dt = coco.loadRes(json.loads(json.dumps(res_d)))
    ev = COCOeval(coco, dt, "bbox")
    ev.params.iouThrs = np.array([iou])
    ev.evaluate()
    tp = np.zeros(len(coco.getCatIds()), dtype=np.int64)
    for e in ev.evalImgs:
        if e is None or e["aRng"] != [0, 1e10]:
            continue
        k = ev.params.catIds.index(e["category_id"])
        hit = (e["dtMatches"][0] > 0) & ~e["dtIgnore"][0] & (np.asarray(e["dtScores"]) >= thr)
        tp[k] += int(hit.sum())
    return tp


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("iou,thr", [(0.5, 0.25), (0.75, 0.0)])
def test_coco_sums_and_diagonal_against_pycocotools(seed, iou, thr, capsys):
    inp = random_case(seed + 400)
    if len(inp.dt_img) == 0:
        pytest.skip("pycocotools' loadRes cannot take an empty list")
    gt_d, res_d = coco_files(inp, 6)
    gt = load_coco_gt(gt_d)
    res = load_coco_results(res_d, gt)
    c = coco_confusion(gt, res, iou=iou, score_threshold=thr)
    capsys.readouterr()
    m = c.matrix
    k = len(gt.cat_ids)
    assert c.labels == [*gt.cat_names, "background"]
    assert m.shape == (k + 1, k + 1) and m[k, k] == 0
    # each class row sums to its non-crowd GT count
    assert m[:k].sum(axis=1).tolist() == np.bincount(gt.cat[~gt.iscrowd.astype(bool)], minlength=k).tolist()
    # every detection above the threshold is in exactly one cell of the columns, or ignored
    assert m[:, :k].sum() + c.ignored == int((res.score >= thr).sum())
    assert np.diag(m)[:k].tolist() == _pycocotools_tp(gt_d, res_d, iou, thr).tolist()


def test_hand_checked_cross_class_cells():
    # GT0 (class 0) is claimed by a class-1 box at 0.9 and by a correct class-0 box at 0.4: the correct one
    # is the true positive, the class-1 box has nothing left -> background. GT1 (class 1) is hit only by a
    # class-0 box -> confusion cell (1, 0). GT2 (class 0) missed. A box at 0.1 is below the threshold.
    inp = one_image(
        [[0, 0, 10, 10], [50, 50, 10, 10], [100, 100, 10, 10]],
        [0, 1, 0],
        [[0, 0, 10, 10], [0, 0, 10, 10], [50, 50, 10, 10], [100, 100, 10, 10]],
        [1, 0, 0, 0],
        [0.9, 0.4, 0.8, 0.1],
    )
    c = confusion_matrix(inp, ["a", "b"], iou=0.5, score_threshold=0.25)
    assert c.matrix.tolist() == [[1, 0, 1], [1, 0, 0], [0, 1, 0]]
    assert c.to_dict()["labels"] == ["a", "b", "background"]


@pytest.mark.parametrize("seed", range(10))
def test_voc_diagonal_is_devkit_tp(seed):
    inp = random_case(seed + 500)
    gt, dets = voc_tables(inp)
    params = VOCParams()
    result = evaluate_voc(gt, dets, params=params)
    classes = list(result.per_class)
    c = voc_confusion(gt, dets, classes, params=params, score_threshold=0.0)
    n = len(classes)
    assert np.diag(c.matrix)[:n].tolist() == [result.per_class[k]["tp"] for k in classes]
    assert c.ignored == sum(result.per_class[k]["ignored"] for k in classes)
    assert c.matrix[:n].sum(axis=1).tolist() == [result.per_class[k]["npos"] for k in classes]
    fp = [result.per_class[k]["fp"] for k in classes]
    assert (c.matrix[:, :n].sum(axis=0) - np.diag(c.matrix)[:n]).tolist() == fp


def test_cli_json_and_text(capsys):
    d = DATA / "coco_fruits"
    args = [
        "coco",
        str(d / "fruit_val_coco_format.json"),
        str(d / "coco_instances_results.json"),
        "--confusion",
    ]
    assert main([*args, "--format", "json", "--iou", "0.6", "--score-threshold", "0.5"]) == 0
    doc = json.loads(capsys.readouterr().out)["confusion"]
    gt = load_coco_gt(d / "fruit_val_coco_format.json")
    res = load_coco_results(d / "coco_instances_results.json", gt)
    ref = confusion_matrix(tide_input_coco(gt, res), list(gt.cat_names), iou=0.6, score_threshold=0.5)
    assert doc["matrix"] == ref.matrix.tolist() and doc["labels"][-1] == "background"
    assert doc["iou"] == 0.6 and doc["score_threshold"] == 0.5
    assert main(args) == 0
    assert "Confusion (IoU 0.5, score >= 0.25" in capsys.readouterr().out
    voc = [
        "voc",
        "--annotations", str(VOC_SAMPLE / "Annotations"),
        "--image-set", str(VOC_SAMPLE / "ImageSets" / "Main" / "test.txt"),
        "--detections", str(VOC_SAMPLE / "results" / "comp4_det_test_{cls}.txt"),
        "--format", "json", "--confusion", "--iou", "0.7", "--score-threshold", "0",
    ]  # fmt: skip
    assert main(voc) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["confusion"]["iou"] == 0.7
    conf = doc["confusion"]
    assert [sum(r) for r in conf["matrix"][:-1]] == [doc["per_class"][c]["npos"] for c in conf["labels"][:-1]]
    assert [conf["matrix"][i][i] for i in range(len(conf["labels"]) - 1)] == [
        doc["per_class"][c]["tp"] for c in conf["labels"][:-1]
    ]
