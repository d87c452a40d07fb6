"""Per-image diagnostics: an image's AP loss equals the COCO / VOC evaluation rerun without its false
positives and missed objects; counts; the drawings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _tide_cases import coco_files, random_case, voc_tables

from deteval.analysis.inputs import coco_images, voc_images
from deteval.cli import main
from deteval.detection.coco import evaluate_coco
from deteval.detection.voc import VOCDetections, VOCGroundTruth
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.run.voc import evaluate_voc

VOC_SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "voc"


@pytest.mark.parametrize("seed", range(8))
def test_coco_image_loss_is_the_rerun_gain(seed):
    inp = random_case(seed + 700, crowd=False)
    if len(inp.dt_img) == 0:
        pytest.skip("no detections")
    gt_d, res_d = coco_files(inp, 6)
    gt = load_coco_gt(gt_d)
    res = load_coco_results(res_d, gt)
    diag, _ = coco_images(gt, res)
    base = evaluate_coco(gt, res).stats[1]
    a = diag.assignment
    assert sum(r["gt"] for r in diag.rows) <= len(gt_d["annotations"])
    for row in diag.rows:
        i = row["index"]
        fp_dets = set(a.det[(a.state == 0) & (res.img[a.det] == i)].tolist())
        missed = {int(g) for g in np.flatnonzero(gt.img == i)} - set(a.match.tolist())
        assert row["fp"] == len(fp_dets) and row["missed"] == len(missed)
        gt2 = dict(gt_d, annotations=[x for k, x in enumerate(gt_d["annotations"]) if k not in missed])
        res2 = [x for k, x in enumerate(res_d) if k not in fp_dets]
        g2 = load_coco_gt(gt2)
        again = evaluate_coco(g2, load_coco_results(res2, g2)).stats[1] if res2 else 0.0
        assert row["ap_loss"] == pytest.approx(again - base, abs=1e-12)
    shares = [r["share"] for r in diag.rows]
    assert shares == [] or sum(shares) == pytest.approx(1.0) or max(shares) == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_voc_image_loss_is_the_rerun_gain(seed):
    inp = random_case(seed + 800)
    gt, dets = voc_tables(inp)
    result = evaluate_voc(gt, dets)
    classes = list(result.per_class)
    diag, _ = voc_images(gt, dets, classes)
    a = diag.assignment
    if result.summary["map"] is None:
        return
    for row in diag.rows[:3]:
        i = row["index"]
        fp = set(a.det[(a.state == 0) & (dets.image[a.det] == i)].tolist())
        missed = {int(g) for g in np.flatnonzero((gt.image == i) & ~gt.difficult)} - set(a.match.tolist())
        kg = np.array([k not in missed for k in range(len(gt))], dtype=bool)
        kd = np.array([k not in fp for k in range(len(dets))], dtype=bool)
        g2 = VOCGroundTruth.from_arrays(
            gt.image[kg], gt.label[kg], gt.boxes[kg], gt.difficult[kg], images=6, classes=list(gt.classes)
        )
        d2 = VOCDetections.from_arrays(
            dets.image[kd],
            dets.label[kd],
            dets.boxes[kd],
            dets.scores[kd],
            images=6,
            classes=list(dets.classes),
        )
        again = evaluate_voc(g2, d2, classes=classes).summary["map"]
        if again is None:
            continue
        assert row["ap_loss"] == pytest.approx(again - result.summary["map"], abs=1e-12)


def test_cli_draws_pictures(tmp_path, capsys):
    out = tmp_path / "worst"
    args = [
        "voc",
        "--annotations", str(VOC_SAMPLE / "Annotations"),
        "--image-set", str(VOC_SAMPLE / "ImageSets" / "Main" / "test.txt"),
        "--detections", str(VOC_SAMPLE / "results" / "comp4_det_test_{cls}.txt"),
        "--format", "json", "--images", str(out), "--worst-images", "3",
    ]  # fmt: skip
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)["images"]
    assert 0 < len(doc["worst"]) <= 3
    from PIL import Image

    for row in doc["worst"]:
        im = Image.open(row["picture"])
        assert im.size[0] > 16 and im.size[1] > 16
        # the drawing has red (false positive) or orange (missed) pixels where errors are
        px = np.asarray(im.convert("RGB")).reshape(-1, 3)
        red = ((px[:, 0] > 200) & (px[:, 1] < 160) & (px[:, 2] < 60)).any()
        assert red == (row["fp"] + row["missed"] > 0)
