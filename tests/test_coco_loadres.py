"""Results whose records mix ``bbox``, ``segmentation`` and ``keypoints``: deteval against pycocotools' loadRes
+ COCOeval, live, for every evaluation type, given as a list of dicts and as the COCO object loadRes returns.

loadRes decides its branch from the first record (a non-empty ``bbox``, else a ``segmentation``, else
``keypoints``) and applies it to every record: it keeps each record's own ``bbox``, computes one from the mask
only where it is missing (segm branch) and takes ``area`` from the branch (box, mask or keypoint extent).
"""

from __future__ import annotations

import contextlib
import copy
import io
from pathlib import Path

import numpy as np
import pytest
from _coco_cases import assert_same_as_reference, run_pycocotools

from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError

H, W = 60, 80


def _poly(rng: np.random.Generator, cx: float, cy: float, r: float) -> list[float]:
    t = np.sort(rng.uniform(0, 2 * np.pi, 6))
    rad = r * rng.uniform(0.6, 1.0, 6)
    pts = np.empty(12)
    pts[0::2] = np.clip(cx + rad * np.cos(t), 0, W - 1)
    pts[1::2] = np.clip(cy + rad * np.sin(t), 0, H - 1)
    return [float(round(v, 1)) for v in pts]


def _rle(poly: list[float]) -> dict:
    from pycocotools import mask as mask_utils

    r = mask_utils.merge(mask_utils.frPyObjects([poly], H, W))
    return {"size": r["size"], "counts": r["counts"].decode()}


def _keypoints(rng: np.random.Generator, cx: float, cy: float, r: float, k: int) -> np.ndarray:
    return np.stack([cx + rng.uniform(-r, r, k), cy + rng.uniform(-r, r, k)], axis=1)


def mixed_case(seed: int) -> dict:
    """Ground truth with polygons, boxes and keypoints; results where each record carries a random subset
    of bbox / segmentation (compressed RLE) / keypoints, the boxes deliberately not the masks' boxes."""
    rng = np.random.default_rng(30_000 + seed)
    k = 5
    img_ids = list(range(1, int(rng.integers(2, 4)) + 1))
    cat_ids = [1, 2]
    p_box, p_seg, p_kp = (float(rng.choice([0.0, 0.5, 0.9, 1.0, 1.0])) for _ in range(3))
    anns, dets = [], []
    for img in img_ids:
        for _ in range(int(rng.integers(0, 5))):
            cx, cy, r = rng.uniform(10, W - 10), rng.uniform(10, H - 10), rng.uniform(3, 15)
            poly = _poly(rng, cx, cy, r)
            xs, ys = poly[0::2], poly[1::2]
            kp = _keypoints(rng, cx, cy, r, k)
            vis = rng.choice([0, 1, 2], k, p=[0.2, 0.3, 0.5])
            gkp = np.concatenate([np.round(kp), vis[:, None]], axis=1)
            gkp[vis == 0, :2] = 0
            cat = int(rng.choice(cat_ids))
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": img,
                    "category_id": cat,
                    "segmentation": [poly],
                    "bbox": [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)],
                    "area": float(round((max(xs) - min(xs)) * (max(ys) - min(ys)) * rng.uniform(0.3, 1), 2)),
                    "iscrowd": int(rng.random() < 0.1),
                    "num_keypoints": int((vis > 0).sum()),
                    "keypoints": [float(v) for v in gkp.reshape(-1)],
                }
            )
            for _ in range(int(rng.integers(0, 4))):
                jx, jy, jr = cx + rng.normal(0, 2), cy + rng.normal(0, 2), r * rng.uniform(0.7, 1.3)
                dets.append(
                    _det(rng, img, cat if rng.random() < 0.9 else 1, jx, jy, jr, k, p_box, p_seg, p_kp)
                )
        for _ in range(int(rng.integers(0, 3))):  # background
            dets.append(
                _det(rng, img, int(rng.choice(cat_ids)), *rng.uniform(10, 50, 2), 8.0, k, p_box, p_seg, p_kp)
            )
    if not dets:
        dets.append(_det(rng, 1, 1, 30.0, 30.0, 8.0, k, p_box, p_seg, p_kp))
    rng.shuffle(dets)
    if rng.random() < 0.2:
        dets[0]["bbox"] = []  # loadRes: not the bbox branch, and the record keeps its `[]`
    gt = {
        "images": [{"id": i, "height": H, "width": W} for i in img_ids],
        "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids],
        "annotations": anns,
    }
    return {"gt": gt, "dt": dets, "sigmas": np.linspace(0.3, 0.9, k) / 10}


def _det(rng, img, cat, cx, cy, r, k, p_box, p_seg, p_kp) -> dict:
    det: dict = {"image_id": img, "category_id": cat, "score": float(round(rng.random(), 2))}
    if rng.random() < p_box:
        x, y = rng.uniform(0, W - 20), rng.uniform(0, H - 20)
        det["bbox"] = [float(round(v, 1)) for v in (x, y, *rng.uniform(2, 20, 2))]
    if rng.random() < p_seg:
        det["segmentation"] = _rle(_poly(rng, cx, cy, r))
    if rng.random() < p_kp:
        det["keypoints"] = [
            float(round(v, 2)) for v in np.c_[_keypoints(rng, cx, cy, r, k), rng.random(k)].ravel()
        ]
    if len(det) == 3:  # a result with nothing to score: give it a box
        det["bbox"] = [float(round(cx, 1)), float(round(cy, 1)), 10.0, 10.0]
    return det


def _pycocotools_objects(case: dict):
    from pycocotools.coco import COCO

    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(case["gt"])
        cg.createIndex()
        return cg, cg.loadRes(copy.deepcopy(case["dt"]))


def _params(case: dict, iou_type: str) -> dict | None:
    return {"kpt_oks_sigmas": case["sigmas"]} if iou_type == "keypoints" else None


def _run_reference(case: dict, iou_type: str):
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        try:
            cg, cd = _pycocotools_objects(case)
            E = COCOeval(cg, cd, iou_type)
            if iou_type == "keypoints":
                E.params.kpt_oks_sigmas = case["sigmas"]
            E.evaluate()
            E.accumulate()
            E.summarize()
        except Exception as exc:  # the reference's own crash on inputs it cannot read
            return exc
    return np.asarray(E.stats), E.eval["precision"], E.eval["recall"], E.eval["scores"]


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_mixed_result_records_match_pycocotools_loadres(block):
    ran = {"bbox": 0, "segm": 0, "keypoints": 0}
    for seed in range(block * 40, block * 40 + 40):
        case = mixed_case(seed)
        for iou_type in ("bbox", "segm", "keypoints"):
            what = f"seed {seed} {iou_type}"
            ref = _run_reference(case, iou_type)
            params = _params(case, iou_type)
            if isinstance(ref, Exception):
                # pycocotools cannot evaluate it (a record lacks what its branch or the evaluation reads):
                # a clear error here too, never a number.
                with pytest.raises(DetevalError):
                    evaluate_coco(case["gt"], case["dt"], iou_type=iou_type, params=params)
                continue
            if iou_type == "keypoints" and any("keypoints" not in d for d in case["dt"]):
                # pycocotools reads a detection's keypoints only where its image and category have ground
                # truth; deteval asks for them on every record rather than score a detection it cannot read.
                with pytest.raises(DetevalError, match="missing field 'keypoints'"):
                    evaluate_coco(case["gt"], case["dt"], iou_type=iou_type, params=params)
                continue
            ran[iou_type] += 1
            ev = evaluate_coco(case["gt"], case["dt"], iou_type=iou_type, params=params)
            assert_same_as_reference(ev, ref, what)
            # The objects pycocotools built (loadRes has added bbox, area, ids; numpy values inside).
            cg, cd = _pycocotools_objects(case)
            assert_same_as_reference(
                evaluate_coco(cg, cd, iou_type=iou_type, params=params), ref, what + " (COCO objects)"
            )
    assert min(ran.values()) >= 5, ran  # every evaluation type really compared, not only errors


def test_segm_branch_keeps_each_records_bbox_and_fills_only_missing_ones():
    """First record has a mask and no box: the segm branch. A later record's own box is kept for bbox
    evaluation (not recomputed from its mask); area is the mask's for every record."""
    from pycocotools import mask as mask_utils

    poly = [10.0, 10.0, 40.0, 10.0, 40.0, 40.0, 10.0, 40.0]
    gt = {
        "images": [{"id": 1, "height": H, "width": W}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "segmentation": [poly], "area": 900.0,
             "bbox": [10.0, 10.0, 30.0, 30.0], "iscrowd": 0},
            {"id": 2, "image_id": 1, "category_id": 1, "segmentation": [[50, 10, 70, 10, 70, 30, 50, 30]],
             "area": 400.0, "bbox": [50.0, 10.0, 20.0, 20.0], "iscrowd": 0},
        ],
    }  # fmt: skip
    rle = _rle(poly)
    dt = [
        {"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": rle},
        # its mask covers the first object, its box the second one: bbox evaluation must use the box
        {
            "image_id": 1,
            "category_id": 1,
            "score": 0.8,
            "segmentation": rle,
            "bbox": [50.0, 10.0, 20.0, 20.0],
        },
    ]
    ref = run_pycocotools(gt, dt, "bbox")
    ev = evaluate_coco(gt, dt, iou_type="bbox")
    assert np.array_equal(ev.precision, ref[1]) and np.array_equal(ev.stats, ref[0])
    assert ev.stats[1] == pytest.approx(1.0, abs=1e-12)  # both objects found at IoU 0.5
    # A pycocotools result object after loadRes for segm (its toBbox boxes are numpy arrays) evaluates too.
    cg, cd = _pycocotools_objects({"gt": gt, "dt": dt})
    assert isinstance(cd.anns[1]["bbox"], np.ndarray) and int(cd.anns[1]["area"]) == int(mask_utils.area(rle))
    for iou_type in ("bbox", "segm"):
        ev = evaluate_coco(cg, cd, iou_type=iou_type)
        assert np.array_equal(ev.stats, run_pycocotools(gt, dt, iou_type)[0])


FIXTURES = Path(__file__).parent / "data" / "coco"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("gt_file", "dt_file", "iou_type", "ap"),
    [
        ("coco_val2014_100/instances_val2014_100.json", "coco_val2014_100/instances_val2014_fakebbox100_results.json",
         "bbox", 0.5045806987249628),
        ("coco_val2014_100/instances_val2014_100.json", "coco_val2014_100/instances_val2014_fakesegm100_results.json",
         "segm", 0.3195452758576433),
        ("coco_keypoints/gt_dataset.json", "coco_keypoints/dt_dataset.json", "keypoints", 0.5048844884488449),
    ],
)  # fmt: skip
def test_pycocotools_objects_as_users_build_them(gt_file, dt_file, iou_type, ap):
    """``evaluate_coco(COCO(gt), gt.loadRes(results), iou_type=...)`` (segm used to stop with a numpy
    broadcast error: loadRes leaves numpy boxes on the records) gives pycocotools' arrays."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(FIXTURES / gt_file))
        dt = gt.loadRes(str(FIXTURES / dt_file))
    ev = evaluate_coco(gt, dt, iou_type=iou_type)
    assert ev.stats[0] == pytest.approx(ap, abs=1e-12)
    with contextlib.redirect_stdout(io.StringIO()):
        E = COCOeval(gt, dt, iou_type)
        E.evaluate()
        E.accumulate()
        E.summarize()
    ref = (np.asarray(E.stats), E.eval["precision"], E.eval["recall"], E.eval["scores"])
    assert_same_as_reference(ev, ref, iou_type)
    # after COCOeval has rewritten the masks as RLE in place, the same objects still give the same numbers
    assert_same_as_reference(evaluate_coco(gt, dt, iou_type=iou_type), ref, iou_type + " after COCOeval")
