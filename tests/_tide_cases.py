"""Random and fixture cases for the TIDE tests, and the bridge that runs tidecv 1.0.1 on them live."""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.analysis.tide import ERROR_TYPES, TideInput
from deteval.detection.voc import VOCDetections, VOCGroundTruth

_TIDE_NAMES = {"Cls": "cls", "Loc": "loc", "Both": "both", "Dupe": "dupe", "Bkg": "bkg", "Miss": "miss"}


def random_case(seed: int, n_img: int = 6, n_cls: int = 3, crowd: bool = True) -> TideInput:
    """Boxes jittered around ground truth so every error type occurs: right and wrong classes, poor boxes,
    duplicates, background boxes, crowds; scores distinct or tied (rounded) at random."""
    rng = np.random.default_rng(seed)
    gi, gc, gb, gcr, di, dc, db = [], [], [], [], [], [], []
    for im in range(n_img):
        for _ in range(int(rng.integers(0, 6))):
            x, y = rng.uniform(0, 200, 2)
            w, h = rng.uniform(5, 140, 2)
            gi.append(im)
            gc.append(int(rng.integers(n_cls)))
            gb.append([x, y, w, h])
            gcr.append(bool(crowd and rng.random() < 0.1))
            for _ in range(int(rng.integers(0, 4))):
                jit = rng.normal(0, rng.choice([0.05, 0.3, 0.8]), 4) * [w, h, w, h]
                di.append(im)
                dc.append(gc[-1] if rng.random() < 0.7 else int(rng.integers(n_cls)))
                db.append([x + jit[0], y + jit[1], max(w + jit[2], 1.0), max(h + jit[3], 1.0)])
        for _ in range(int(rng.integers(0, 4))):
            di.append(im)
            dc.append(int(rng.integers(n_cls)))
            db.append([*rng.uniform(0, 250, 2), *rng.uniform(3, 60, 2)])
    nd = len(di)
    scores = rng.random(nd)
    if rng.random() < 0.5:
        scores = np.round(scores, 1)  # ties
    return TideInput(
        gt_img=np.asarray(gi, dtype=np.int64),
        gt_cls=np.asarray(gc, dtype=np.int64),
        gt_box=np.asarray(gb, dtype=np.float64).reshape(-1, 4),
        gt_crowd=np.asarray(gcr, dtype=bool),
        dt_img=np.asarray(di, dtype=np.int64),
        dt_cls=np.asarray(dc, dtype=np.int64),
        dt_score=scores.astype(np.float64),
        dt_box=np.asarray(db, dtype=np.float64).reshape(-1, 4),
    )


def run_tidecv(
    inp: TideInput, n_img: int, pos: float = 0.5, bg: float = 0.1, image_order: Any = None
) -> dict[str, Any]:
    """tidecv 1.0.1 on the same boxes (images registered in ``image_order``, default index order)."""
    from tidecv import TIDE, Data
    from tidecv.errors.qualifiers import AREA

    gt = Data("gt")
    pr = Data("pred")
    for im in range(n_img) if image_order is None else [int(i) for i in image_order]:
        gt.add_image(im, f"img{im}")
    for i in range(len(inp.gt_img)):
        box = inp.gt_box[i].tolist()
        if inp.gt_crowd[i]:
            gt.add_ignore_region(int(inp.gt_img[i]), int(inp.gt_cls[i]), box)
        else:
            gt.add_ground_truth(int(inp.gt_img[i]), int(inp.gt_cls[i]), box)
    for i in range(len(inp.dt_img)):
        pr.add_detection(
            int(inp.dt_img[i]), int(inp.dt_cls[i]), float(inp.dt_score[i]), inp.dt_box[i].tolist()
        )
    tide = TIDE(pos_threshold=pos, background_threshold=bg)
    run = tide.evaluate(gt, pr, mode=TIDE.BOX)
    main = {_TIDE_NAMES[k]: v for k, v in tide.get_main_errors()["pred"].items()}
    special = tide.get_special_errors()["pred"]
    by_size = {}
    for q in AREA:
        d = run.fix_main_errors(qual=q)
        by_size[q.name.lower()] = {_TIDE_NAMES[e.short_name]: v for e, v in d.items()}
    counts = {_TIDE_NAMES[e.short_name]: len(v) for e, v in run.error_dict.items()}
    return {
        "ap": run.ap,
        "main": main,
        "special": {"fp": special["FalsePos"], "fn": special["FalseNeg"]},
        "by_size": by_size,
        "counts": {k: counts[k] for k in ERROR_TYPES},
    }


def coco_files(inp: TideInput, n_img: int) -> tuple[dict, list]:
    gt = {
        "images": [{"id": i + 1, "width": 400, "height": 400} for i in range(n_img)],
        "categories": [{"id": c + 1, "name": f"c{c}"} for c in range(3)],
        "annotations": [
            {
                "id": k + 1,
                "image_id": int(inp.gt_img[k]) + 1,
                "category_id": int(inp.gt_cls[k]) + 1,
                "bbox": inp.gt_box[k].tolist(),
                "area": float(inp.gt_box[k, 2] * inp.gt_box[k, 3]),
                "iscrowd": int(inp.gt_crowd[k]),
            }
            for k in range(len(inp.gt_img))
        ],
    }
    res = [
        {
            "image_id": int(inp.dt_img[k]) + 1,
            "category_id": int(inp.dt_cls[k]) + 1,
            "bbox": inp.dt_box[k].tolist(),
            "score": float(inp.dt_score[k]),
        }
        for k in range(len(inp.dt_img))
    ]
    return gt, res


def voc_tables(inp: TideInput) -> tuple[VOCGroundTruth, VOCDetections]:
    def xyxy(b: np.ndarray) -> np.ndarray:
        return np.stack([b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]], axis=1).round()

    names = ["a", "b", "c"]
    gt = VOCGroundTruth.from_arrays(
        inp.gt_img, inp.gt_cls, xyxy(inp.gt_box), inp.gt_crowd, images=6, classes=names
    )
    dets = VOCDetections.from_arrays(
        inp.dt_img, inp.dt_cls, xyxy(inp.dt_box), inp.dt_score, images=6, classes=names
    )
    return gt, dets


def one_image(gt_boxes, gt_cls, dt_boxes, dt_cls, scores, crowd=None):
    n = len(gt_boxes)
    return TideInput(
        gt_img=np.zeros(n, dtype=np.int64),
        gt_cls=np.asarray(gt_cls, dtype=np.int64),
        gt_box=np.asarray(gt_boxes, dtype=np.float64).reshape(-1, 4),
        gt_crowd=np.zeros(n, bool) if crowd is None else np.asarray(crowd, bool),
        dt_img=np.zeros(len(dt_boxes), dtype=np.int64),
        dt_cls=np.asarray(dt_cls, dtype=np.int64),
        dt_score=np.asarray(scores, dtype=np.float64),
        dt_box=np.asarray(dt_boxes, dtype=np.float64).reshape(-1, 4),
        class_ids=np.arange(2, dtype=np.int64),
    )
