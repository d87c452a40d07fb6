"""Seeded random federated LVIS cases and an lvis-api 0.5.3 runner shared by the LVIS tests."""

from __future__ import annotations

import contextlib
import copy
import io
import logging

import numpy as np


def lvis_api():
    """lvis-api's classes; 0.5.3 predates numpy 1.24 (it calls ``np.float``)."""
    if not hasattr(np, "float"):
        np.float = float  # type: ignore[attr-defined]
    from lvis import LVIS, LVISEval, LVISResults

    logging.getLogger("lvis").setLevel(logging.ERROR)
    return LVIS, LVISResults, LVISEval


def random_lvis_case(seed: int, *, segm: bool = False) -> dict:
    """A small federated problem: present, negative and not-exhaustive categories per image, detections of
    every kind of category, zero areas, ignore flags, coarse scores (ties), crowded images (the cap)."""
    rng = np.random.default_rng(seed)
    n_img = int(rng.integers(1, 7))
    n_cat = int(rng.integers(1, 8))
    cat_ids = sorted(rng.choice(np.arange(1, 40), n_cat, replace=False).tolist())
    img_ids = sorted(rng.choice(np.arange(1, 1000), n_img, replace=False).tolist())
    cats = [{"id": c, "name": f"c{c}", "frequency": str(rng.choice(["r", "c", "f"]))} for c in cat_ids]
    rng.shuffle(cats)
    integer = rng.random() < 0.3
    ann_ids = rng.choice(np.arange(1, 5000), 600, replace=False).tolist()
    p_ignore = float(rng.choice([0.0, 0.0, 0.15]))

    def box():
        kind = rng.random()
        if kind < 0.15:
            w, h = rng.uniform(0.5, 6, 2)
        elif kind < 0.3:
            w, h = rng.uniform(100, 190, 2)
        else:
            w, h = rng.uniform(5, 80, 2)
        x, y = rng.uniform(0, 100, 2)
        b = [x, y, w, h]
        return [float(round(v)) for v in b] if integer else [float(round(v, 2)) for v in b]

    images, anns = [], []
    for img in img_ids:
        present = set()
        if rng.random() > 0.15:
            for _ in range(int(rng.integers(0, 7))):
                b = box()
                c = int(rng.choice(cat_ids))
                present.add(c)
                area = b[2] * b[3] * float(rng.uniform(0.5, 1.0)) if rng.random() < 0.7 else b[2] * b[3]
                if rng.random() < 0.05:
                    area = 0.0  # lvis-api drops it (get_ann_ids keeps 0 < area < inf)
                a = {"id": int(ann_ids.pop()), "image_id": img, "category_id": c, "bbox": b, "area": area}
                if p_ignore and rng.random() < p_ignore:
                    a["ignore"] = 1
                if segm:
                    x, y, w, h = b
                    a["segmentation"] = [[x, y, x + w, y, x + w * 0.8, y + h, x, y + h * 0.9]]
                anns.append(a)
                if rng.random() < 0.1:  # duplicate box: an IoU tie between two ground truths
                    anns.append({**a, "id": int(ann_ids.pop())})
        absent = [c for c in cat_ids if c not in present]
        neg = sorted(int(c) for c in rng.choice(absent, int(rng.integers(0, len(absent) + 1)), replace=False))
        pres = sorted(present)
        nel = (
            sorted(int(c) for c in rng.choice(pres, int(rng.integers(0, len(pres) + 1)), replace=False))
            if pres
            else []
        )
        images.append(
            {
                "id": img,
                "height": 200,
                "width": 200,
                "neg_category_ids": neg,
                "not_exhaustive_category_ids": nel,
            }
        )
    rng.shuffle(images)
    rng.shuffle(anns)
    dets = []
    score_round = int(rng.choice([1, 2, 6]))
    for a in anns:
        for _ in range(int(rng.integers(0, 4))):
            b = [v + float(rng.normal(0, 0.1 * max(a["bbox"][2], a["bbox"][3]))) for v in a["bbox"]]
            b[2], b[3] = abs(b[2]), abs(b[3])
            if rng.random() < 0.2:
                b = list(a["bbox"])
            cat = a["category_id"] if rng.random() < 0.8 else int(rng.choice(cat_ids))
            dets.append(
                {
                    "image_id": a["image_id"],
                    "category_id": cat,
                    "bbox": [float(round(v, 2)) for v in b],
                    "score": float(round(rng.random(), score_round)),
                }
            )
    for img in img_ids:
        for _ in range(int(rng.integers(0, 14))):
            dets.append(
                {
                    "image_id": img,
                    "category_id": int(rng.choice(cat_ids)),
                    "bbox": box(),
                    "score": float(round(rng.random(), score_round)),
                }
            )
    for d in dets:
        if rng.random() < 0.03:
            d["bbox"][2] = 0.0  # zero area: lvis-api drops the detection
    rng.shuffle(dets)
    if not dets:
        dets.append({"image_id": img_ids[0], "category_id": cat_ids[0], "bbox": box(), "score": 0.5})
    if segm:
        from pycocotools import mask as mask_utils

        for d in dets:
            x, y, w, h = d["bbox"]
            poly = [[x, y, x + w, y, x + w, y + h * 0.85, x + w * 0.1, y + h]]
            rle = mask_utils.merge(mask_utils.frPyObjects(poly, 200, 200))
            rle["counts"] = rle["counts"].decode("ascii")
            d["segmentation"] = rle
        kind = rng.random()
        if kind < 0.6:  # LVISResults' segm branch (its first record has no bbox): area = mask area
            for i, d in enumerate(dets):
                if i == 0 or kind < 0.3 or rng.random() < 0.5:
                    del d["bbox"]
    gt = {"images": images, "categories": cats, "annotations": anns}
    max_dets = int(rng.choice([300, 300, 5, 10, 20]))
    return {"gt": gt, "dt": dets, "max_dets": max_dets}


def _gt_object(gt: dict):
    LVIS, _, _ = lvis_api()
    obj = LVIS.__new__(LVIS)
    obj.logger = logging.getLogger("lvis")
    obj.dataset = copy.deepcopy(gt)
    obj._create_index()
    return obj


def run_lvis_api(gt: dict, dt: list, iou_type: str = "bbox", max_dets: int = 300, pooled: bool = False):
    """(results, precision, recall) from lvis-api on deep copies (it writes into its inputs)."""
    _, LVISResults, LVISEval = lvis_api()
    g = _gt_object(gt)
    with contextlib.redirect_stdout(io.StringIO()):
        d = LVISResults(g, copy.deepcopy(dt), max_dets=max_dets)
        E = LVISEval(g, d, iou_type)
        E.params.max_dets = max_dets  # only names the recall keys (AR@300); set as the cap, as users do
        E.run()
    return dict(E.results), E.eval["precision"], E.eval["recall"]
