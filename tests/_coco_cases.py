"""Seeded random COCO cases and a pycocotools runner shared by the COCO tests."""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np


def random_case(seed: int, min_cats: int = 1) -> dict:
    """A small random COCO problem exercising the protocol's corners (``min_cats`` to 3 categories)."""
    rng = np.random.default_rng(seed)
    n_img = int(rng.integers(1, 6))
    n_cat = int(rng.integers(min_cats, 4))
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
            anns.append(
                {
                    "id": int(ann_ids.pop()),
                    "image_id": img,
                    "category_id": int(rng.choice(cat_ids)),
                    "bbox": b,
                    "area": area,
                    "iscrowd": crowd,
                }
            )
            if rng.random() < 0.1:  # an exact duplicate box: an IoU tie between two ground truths
                anns.append({**anns[-1], "id": int(ann_ids.pop())})
    tie_dets = []
    if (
        rng.random() < 0.4
    ):  # a detection exactly between two ground truths (an IoU tie), then one on the first
        img, cat = int(rng.choice(img_ids)), int(rng.choice(cat_ids))
        x, y, w, h, d = 20.0, 30.0, 40.0, 30.0, 10.0
        for bx in ([x, y, w, h], [x + d, y, w, h]):
            anns.append(
                {
                    "id": int(ann_ids.pop()),
                    "image_id": img,
                    "category_id": cat,
                    "bbox": bx,
                    "area": w * h,
                    "iscrowd": 0,
                }
            )
        tie_dets = [
            {"image_id": img, "category_id": cat, "bbox": [x + d / 2, y, w, h], "score": 0.95},
            {"image_id": img, "category_id": cat, "bbox": [x, y, w, h], "score": 0.9},
        ]
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
            dets.append(
                {
                    "image_id": a["image_id"],
                    "category_id": cat,
                    "bbox": [float(round(v, 2)) for v in b],
                    "score": float(round(rng.random(), score_round)),
                }
            )
    for img in img_ids:
        if rng.random() < 0.2:
            continue  # image without detections beyond the matched ones
        for _ in range(int(rng.integers(0, 12))):
            dets.append(
                {
                    "image_id": img,
                    "category_id": int(rng.choice(cat_ids)),
                    "bbox": box(),
                    "score": float(round(rng.random(), score_round)),
                }
            )
    rng.shuffle(dets)
    if not dets:
        dets.append({"image_id": img_ids[0], "category_id": cat_ids[0], "bbox": box(), "score": 0.5})
    gt = {"images": images, "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids], "annotations": anns}

    params: dict = {}
    if rng.random() < 0.5:
        params["max_dets"] = sorted(int(v) for v in rng.choice(np.arange(1, 12), 3, replace=False))
    if rng.random() < 0.4:
        thr = np.sort(
            rng.choice(np.round(np.arange(0.05, 1.0001, 0.05), 2), int(rng.integers(1, 6)), replace=False)
        )
        if rng.random() < 0.5:
            thr = np.unique(np.r_[thr, 0.5, 0.75])
        params["iou_thrs"] = thr
    if rng.random() < 0.15:  # custom recall levels, some outside [0, 1]
        params["rec_thrs"] = np.sort(
            np.r_[np.round(rng.uniform(-0.05, 1.05, int(rng.integers(1, 30))), 3), 0.0]
        )
    if rng.random() < 0.3:
        lo = float(rng.uniform(0, 500))
        params["area_rng"] = [(0.0, 1e10), (lo, lo + float(rng.uniform(10, 3000))), (0, 400.0)]
        params["area_lbl"] = ["all", "small", "custom"]
    if rng.random() < 0.1:
        params["use_cats"] = False
    if rng.random() < 0.1 and n_img > 1:
        params["img_ids"] = sorted(int(i) for i in rng.choice(img_ids, n_img - 1, replace=False))
    if rng.random() < 0.1 and n_cat > 1:
        params["cat_ids"] = [int(c) for c in rng.choice(cat_ids, n_cat - 1, replace=False)]  # given order
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
        if "rec_thrs" in params:
            E.params.recThrs = np.asarray(params["rec_thrs"], dtype=np.float64)
        if "area_rng" in params:
            E.params.areaRng = [list(a) for a in params["area_rng"]]
            E.params.areaRngLbl = list(params["area_lbl"])
        if "use_cats" in params:
            E.params.useCats = int(params["use_cats"])
        if "img_ids" in params:
            E.params.imgIds = list(params["img_ids"])
        if "cat_ids" in params:
            E.params.catIds = list(params["cat_ids"])
        E.evaluate()
        E.accumulate()
        E.summarize()
    return np.asarray(E.stats), E.eval["precision"], E.eval["recall"], E.eval["scores"]


def _poly(rng, cx, cy, r, n=8):
    t = np.sort(rng.uniform(0, 2 * np.pi, n))
    rad = r * rng.uniform(0.6, 1.0, n)
    pts = np.empty(2 * n)
    pts[0::2] = np.clip(cx + rad * np.cos(t), 0, 99)
    pts[1::2] = np.clip(cy + rad * np.sin(t), 0, 79)
    return [float(round(v, 2)) for v in pts]


def _uncompressed_rle(mask: np.ndarray) -> dict:
    flat = mask.flatten(order="F").astype(np.uint8)
    counts, cur, run = [], 0, 0
    for v in flat:
        if v == cur:
            run += 1
        else:
            counts.append(run)
            cur, run = v, 1
    counts.append(run)
    return {"counts": counts, "size": list(mask.shape)}


def mask_annotation(
    rng: np.random.Generator,
    ann_id: int,
    img: int,
    cat_ids: list,
    radius: float = 25.0,
    crowd_rate: float = 0.15,
) -> tuple[dict, tuple[float, float, float]]:
    """A ground-truth object of an 80x100 image: a polygon of radius below ``radius`` around a random centre
    or, at ``crowd_rate``, an uncompressed-RLE crowd there, with its mask's area and box; and (centre x,
    centre y, radius), for detections near it."""
    from pycocotools import mask as mask_utils

    h, w = 80, 100
    cx, cy, r = rng.uniform(10, 90), rng.uniform(10, 70), rng.uniform(2, radius)
    cat = int(rng.choice(cat_ids))
    if rng.random() < crowd_rate:
        m = np.zeros((h, w), dtype=np.uint8, order="F")
        m[int(cy) - 8 : int(cy) + 8, int(cx) - 10 : int(cx) + 10] = 1
        seg, crowd = _uncompressed_rle(m), 1
        rle = mask_utils.frPyObjects(seg, h, w)
    else:
        seg, crowd = [_poly(rng, cx, cy, r)], 0
        rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    area = float(mask_utils.area(rle))
    bbox = [float(v) for v in mask_utils.toBbox(rle)]
    ann = {
        "id": ann_id,
        "image_id": img,
        "category_id": cat,
        "segmentation": seg,
        "area": area,
        "bbox": bbox,
        "iscrowd": crowd,
    }
    return ann, (cx, cy, r)


def random_segm_case(seed: int) -> dict:
    """Polygons and uncompressed-RLE crowds as ground truth, compressed RLE results (some with a bbox)."""
    from pycocotools import mask as mask_utils

    rng = np.random.default_rng(10_000 + seed)
    h, w = 80, 100
    img_ids = list(range(1, int(rng.integers(2, 4)) + 1))
    cat_ids = [1, 2]
    anns, dets = [], []
    with_bbox = rng.random() < 0.3
    for img in img_ids:
        for _ in range(int(rng.integers(0, 5))):
            ann, (cx, cy, r) = mask_annotation(rng, len(anns) + 1, img, cat_ids)
            cat = ann["category_id"]
            anns.append(ann)
            for _ in range(int(rng.integers(0, 4))):
                dseg = [_poly(rng, cx + rng.normal(0, 2), cy + rng.normal(0, 2), r * rng.uniform(0.7, 1.3))]
                drle = mask_utils.merge(mask_utils.frPyObjects(dseg, h, w))
                det = {
                    "image_id": img,
                    "category_id": cat if rng.random() < 0.9 else int(rng.choice(cat_ids)),
                    "segmentation": {"size": drle["size"], "counts": drle["counts"].decode()},
                    "score": float(round(rng.random(), 2)),
                }
                if with_bbox:
                    det["bbox"] = [float(v) for v in mask_utils.toBbox(drle)]
                dets.append(det)
    if not dets:
        drle = mask_utils.merge(mask_utils.frPyObjects([_poly(rng, 50, 40, 10)], h, w))
        dets.append(
            {
                "image_id": 1,
                "category_id": 1,
                "score": 0.5,
                "segmentation": {"size": drle["size"], "counts": drle["counts"].decode()},
                **({"bbox": [float(v) for v in mask_utils.toBbox(drle)]} if with_bbox else {}),
            }
        )
    rng.shuffle(dets)
    gt = {
        "images": [{"id": i, "height": h, "width": w} for i in img_ids],
        "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids],
        "annotations": anns,
    }
    return {"gt": gt, "dt": dets}


def segm_case_without_boxes(seed: int) -> dict:
    """The first :func:`random_segm_case` from ``seed`` on whose results give no ``bbox`` (loadRes then makes
    them from the masks)."""
    for s in range(seed, seed + 50):
        case = random_segm_case(s)
        if "bbox" not in case["dt"][0]:
            return case
    raise AssertionError("no case without boxes")


def random_keypoints_case(seed: int) -> dict:
    """People with 17 keypoints (random visibility, some with none, some crowds) and keypoint detections."""
    rng = np.random.default_rng(20_000 + seed)
    img_ids = list(range(1, int(rng.integers(2, 4)) + 1))
    anns, dets = [], []
    with_bbox = rng.random() < 0.3
    for img in img_ids:
        for _ in range(int(rng.integers(0, 6))):
            x, y = rng.uniform(0, 300, 2)
            bw, bh = rng.uniform(5, 150, 2)
            kx, ky = x + rng.uniform(0, bw, 17), y + rng.uniform(0, bh, 17)
            v = rng.choice([0, 1, 2], 17, p=[0.3, 0.2, 0.5]) if rng.random() > 0.15 else np.zeros(17, int)
            kp = np.stack([np.round(kx), np.round(ky), v], axis=1)
            kp[v == 0, :2] = 0
            crowd = int(rng.random() < 0.1)
            area = float(round(bw * bh * rng.uniform(0.4, 0.9), 3))
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": img,
                    "category_id": 1,
                    "iscrowd": crowd,
                    "bbox": [
                        float(round(x, 2)),
                        float(round(y, 2)),
                        float(round(bw, 2)),
                        float(round(bh, 2)),
                    ],
                    "area": area,
                    "num_keypoints": int((v > 0).sum()),
                    "keypoints": [int(t) for t in kp.reshape(-1)],
                }
            )
            for _ in range(int(rng.integers(0, 4))):
                s = rng.uniform(0, 0.15) * max(bw, bh)
                dk = np.stack([kx + rng.normal(0, s, 17), ky + rng.normal(0, s, 17), rng.random(17)], axis=1)
                det = {
                    "image_id": img,
                    "category_id": 1,
                    "keypoints": [float(t) for t in dk.reshape(-1)],
                    "score": float(round(rng.random(), 2)),
                }
                if with_bbox:
                    det["bbox"] = [float(x), float(y), float(bw), float(bh)]
                dets.append(det)
        for _ in range(int(rng.integers(0, 3))):  # background detections
            dk = np.stack([rng.uniform(0, 400, 17), rng.uniform(0, 400, 17), rng.random(17)], axis=1)
            det = {
                "image_id": img,
                "category_id": 1,
                "keypoints": [float(t) for t in dk.reshape(-1)],
                "score": float(round(rng.random(), 2)),
            }
            if with_bbox:
                det["bbox"] = [10.0, 10.0, 50.0, 50.0]
            dets.append(det)
    if not dets:
        dets.append(
            {
                "image_id": 1,
                "category_id": 1,
                "keypoints": [1.0] * 51,
                "score": 0.5,
                **({"bbox": [10.0, 10.0, 50.0, 50.0]} if with_bbox else {}),
            }
        )
    rng.shuffle(dets)
    gt = {
        "images": [{"id": i, "height": 400, "width": 400} for i in img_ids],
        "categories": [{"id": 1, "name": "person"}],
        "annotations": anns,
    }
    return {"gt": gt, "dt": dets}


def assert_same_as_reference(ev, ref, what: str) -> None:
    """Every array of a deteval ``CocoEvaluation`` equals pycocotools' ``(stats, precision, recall, scores)``."""
    stats, precision, recall, scores = ref
    assert np.array_equal(ev.precision, precision), f"{what}: precision differs"
    assert np.array_equal(ev.recall, recall), f"{what}: recall differs"
    assert np.array_equal(ev.scores, scores), f"{what}: scores differ"
    assert np.array_equal(ev.stats, stats), f"{what}: stats differ"
