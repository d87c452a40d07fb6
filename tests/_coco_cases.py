"""Seeded random COCO cases and a pycocotools runner shared by the COCO tests."""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np


def random_case(seed: int) -> dict:
    """A small random COCO problem exercising the protocol's corners."""
    rng = np.random.default_rng(seed)
    n_img = int(rng.integers(1, 6))
    n_cat = int(rng.integers(1, 4))
    cat_ids = sorted(rng.choice(np.arange(0, 20), n_cat, replace=False).tolist())
    img_ids = sorted(rng.choice(np.arange(1, 1000), n_img, replace=False).tolist())
    images = [{"id": i, "height": 200, "width": 200} for i in img_ids]
    rng.shuffle(images)
    p_crowd = float(rng.choice([0.0, 0.1, 0.3]))
    integer = rng.random() < 0.3
    anns = []
    ann_ids = rng.choice(np.arange(1, 5000), 400, replace=False).tolist()
    if rng.random() < 0.3:
        ann_ids[-1] = 0  # pycocotools stores matches as gt ids, 0 meaning "unmatched"

    def box():
        kind = rng.random()
        if kind < 0.15:
            w, h = rng.uniform(0.5, 6, 2)  # tiny
        elif kind < 0.3:
            w, h = rng.uniform(100, 200, 2)  # huge
        else:
            w, h = rng.uniform(5, 80, 2)
        x, y = rng.uniform(0, 150, 2)
        b = [x, y, w, h]
        return [float(round(v)) for v in b] if integer else [float(round(v, 2)) for v in b]

    for img in img_ids:
        if rng.random() < 0.15:
            continue  # image without ground truth
        for _ in range(int(rng.integers(0, 7))):
            b = box()
            crowd = int(rng.random() < p_crowd)
            area = b[2] * b[3] * float(rng.uniform(0.5, 1.0)) if rng.random() < 0.7 else float(b[2] * b[3])
            anns.append({"id": int(ann_ids.pop()), "image_id": img, "category_id": int(rng.choice(cat_ids)),
                         "bbox": b, "area": area, "iscrowd": crowd})
            if rng.random() < 0.1:  # an exact duplicate box: an IoU tie between two ground truths
                anns.append({**anns[-1], "id": int(ann_ids.pop())})
    tie_dets = []
    if rng.random() < 0.4:  # a detection exactly between two ground truths (an IoU tie), then one on the first
        img, cat = int(rng.choice(img_ids)), int(rng.choice(cat_ids))
        x, y, w, h, d = 20.0, 30.0, 40.0, 30.0, 10.0
        for bx in ([x, y, w, h], [x + d, y, w, h]):
            anns.append({"id": int(ann_ids.pop()), "image_id": img, "category_id": cat, "bbox": bx,
                         "area": w * h, "iscrowd": 0})
        tie_dets = [{"image_id": img, "category_id": cat, "bbox": [x + d / 2, y, w, h], "score": 0.95},
                    {"image_id": img, "category_id": cat, "bbox": [x, y, w, h], "score": 0.9}]
    rng.shuffle(anns)
    dets = list(tie_dets)
    score_round = int(rng.choice([1, 2, 6]))  # coarse scores give many ties
    for a in anns:
        for _ in range(int(rng.integers(0, 4))):
            b = [v + float(rng.normal(0, 0.1 * max(a["bbox"][2], a["bbox"][3]))) for v in a["bbox"]]
            b[2], b[3] = abs(b[2]), abs(b[3])
            if rng.random() < 0.2:
                b = list(a["bbox"])  # a perfect hit
            cat = a["category_id"] if rng.random() < 0.85 else int(rng.choice(cat_ids))
            dets.append({"image_id": a["image_id"], "category_id": cat, "bbox": [float(round(v, 2)) for v in b],
                         "score": float(round(rng.random(), score_round))})
    for img in img_ids:
        if rng.random() < 0.2:
            continue  # image without detections beyond the matched ones
        for _ in range(int(rng.integers(0, 12))):
            dets.append({"image_id": img, "category_id": int(rng.choice(cat_ids)), "bbox": box(),
                         "score": float(round(rng.random(), score_round))})
    rng.shuffle(dets)
    if not dets:
        dets.append({"image_id": img_ids[0], "category_id": cat_ids[0], "bbox": box(), "score": 0.5})
    gt = {"images": images, "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids], "annotations": anns}

    params: dict = {}
    if rng.random() < 0.5:
        params["max_dets"] = sorted(int(v) for v in rng.choice(np.arange(1, 12), 3, replace=False))
    if rng.random() < 0.4:
        thr = np.sort(rng.choice(np.round(np.arange(0.05, 1.0001, 0.05), 2), int(rng.integers(1, 6)), replace=False))
        if rng.random() < 0.5:
            thr = np.unique(np.r_[thr, 0.5, 0.75])
        params["iou_thrs"] = thr
    if rng.random() < 0.3:
        lo = float(rng.uniform(0, 500))
        params["area_rng"] = [(0.0, 1e10), (lo, lo + float(rng.uniform(10, 3000))), (0, 400.0)]
        params["area_lbl"] = ["all", "small", "custom"]
    if rng.random() < 0.1:
        params["use_cats"] = False
    return {"gt": gt, "dt": dets, "params": params}


def run_pycocotools(gt: dict, dt: list, iou_type: str = "bbox", params: dict | None = None):
    """(stats, precision, recall, scores) from pycocotools, prints silenced."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    params = params or {}
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        cd = cg.loadRes(copy.deepcopy(dt))
        E = COCOeval(cg, cd, iou_type)
        if "max_dets" in params:
            E.params.maxDets = list(params["max_dets"])
        if "iou_thrs" in params:
            E.params.iouThrs = np.asarray(params["iou_thrs"], dtype=np.float64)
        if "area_rng" in params:
            E.params.areaRng = [list(a) for a in params["area_rng"]]
            E.params.areaRngLbl = list(params["area_lbl"])
        if "use_cats" in params:
            E.params.useCats = int(params["use_cats"])
        E.evaluate()
        E.accumulate()
        E.summarize()
    return np.asarray(E.stats), E.eval["precision"], E.eval["recall"], E.eval["scores"]
