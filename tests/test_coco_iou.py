"""Pairwise IoU and OKS against pycocotools' own functions, compared bit for bit."""

import contextlib
import copy
import io

import numpy as np
from _coco_cases import random_keypoints_case
from pycocotools import mask as mask_utils

from deteval.detection.coco_iou import bbox_iou_pairs, numpy_pairwise_sum_rows, oks_pairs
from deteval.detection.coco_params import COCO_KPT_OKS_SIGMAS


def test_bbox_iou_is_bit_identical_to_pycocotools_bbiou():
    rng = np.random.default_rng(0)
    for trial in range(20):
        m, n = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        scale = 10.0 ** rng.integers(-2, 4)
        d = np.abs(rng.normal(0, 1, (m, 4))) * scale
        g = np.abs(rng.normal(0, 1, (n, 4))) * scale
        if trial % 3 == 0:  # shared coordinates: exact touching edges and duplicates
            d = np.round(d)
            g = np.round(g)
            g[: min(m, n) // 2] = d[: min(m, n) // 2]
        crowd = rng.random(n) < 0.3
        ref = np.asarray(mask_utils.iou(d.tolist(), g.tolist(), crowd.astype(int).tolist()))
        di, gi = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
        ours = bbox_iou_pairs(d, g, crowd, di.ravel(), gi.ravel()).reshape(m, n)
        assert np.array_equal(ours, ref)


def test_pairwise_sum_emulates_numpy_sum():
    rng = np.random.default_rng(1)
    for n in list(range(1, 40)) + [127, 128, 129, 300]:
        a = rng.random((20, n)) * 10.0 ** rng.integers(-8, 8, (20, n))
        ref = np.array([np.sum(row.copy()) for row in a])
        assert np.array_equal(numpy_pairwise_sum_rows(a), ref)


def test_oks_is_bit_identical_to_compute_oks():
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    checked = 0
    for seed in range(40):
        case = random_keypoints_case(seed)
        with contextlib.redirect_stdout(io.StringIO()):
            cg = COCO()
            cg.dataset = copy.deepcopy(case["gt"])
            cg.createIndex()
            cd = cg.loadRes(copy.deepcopy(case["dt"]))
            E = COCOeval(cg, cd, "keypoints")
            E.evaluate()
        for (img, cat), ref in E.ious.items():
            if len(ref) == 0:
                continue
            gts = E._gts[img, cat]
            dts = sorted(E._dts[img, cat], key=lambda d: -d["score"])  # stable, as computeOks
            gkp = np.array([g["keypoints"] for g in gts], dtype=float)
            dkp = np.array([d["keypoints"] for d in dts], dtype=float)
            gbox = np.array([g["bbox"] for g in gts], dtype=float)
            garea = np.array([g["area"] for g in gts], dtype=float)
            di, gi = np.meshgrid(np.arange(len(dts)), np.arange(len(gts)), indexing="ij")
            ours = oks_pairs(dkp, gkp, gbox, garea, COCO_KPT_OKS_SIGMAS, di.ravel(), gi.ravel())
            assert np.array_equal(ours.reshape(len(dts), len(gts)), np.asarray(ref)), seed
            checked += ref.size
    assert checked > 500
