"""Detections that decide alone (every candidate their own, or a crowd) are matched outside the greedy steps
(issue 15: nearly every detection of an Objects365-like set): checked against pycocotools on sparse seeded
cases where such detections are the rule, next to contested ones, crowds shared by several detections,
ground truths ignored by area range, and detections with two candidates of their own."""

import numpy as np
from _coco_cases import run_pycocotools

import deteval.match.coco as coco_match
from deteval.detection.coco import evaluate_coco
from deteval.detection.coco_params import CocoParams


def _sparse_case(seed: int) -> tuple[dict, list[dict], dict]:
    rng = np.random.default_rng(seed)
    cat_ids = list(range(1, 31))
    img_ids = list(range(1, 9))
    anns: list[dict] = []
    dets: list[dict] = []

    def add_gt(img: int, cat: int, box: list[float], crowd: int = 0) -> None:
        area = box[2] * box[3] * float(rng.uniform(0.4, 1.0))
        anns.append(
            {
                "id": len(anns) + 1,
                "image_id": img,
                "category_id": cat,
                "bbox": box,
                "area": area,
                "iscrowd": crowd,
            }
        )

    def add_dt(img: int, cat: int, box: list[float]) -> None:
        jitter = rng.normal(0, float(rng.choice([0.02, 0.15, 0.3])), 4) * [box[2], box[3], box[2], box[3]]
        b = [round(float(v), 2) for v in np.abs(np.asarray(box) + jitter)]
        dets.append({"image_id": img, "category_id": cat, "bbox": b, "score": round(float(rng.random()), 2)})

    for img in img_ids:
        for cat in rng.choice(cat_ids, 12, replace=False).tolist():
            w, h = (float(v) for v in np.exp(rng.uniform(np.log(3), np.log(150), 2)).round(1))
            box = [float(rng.uniform(0, 200)), float(rng.uniform(0, 200)), w, h]
            kind = rng.random()
            add_gt(img, cat, box, crowd=int(kind < 0.08))
            if kind < 0.08:  # a crowd: several detections may take it
                for _ in range(int(rng.integers(1, 4))):
                    add_dt(img, cat, box)
            elif kind < 0.2:  # a duplicate: two detections contest one ground truth
                add_dt(img, cat, box)
                add_dt(img, cat, box)
            elif kind < 0.3:  # two ground truths close together, one detection between them
                add_gt(img, cat, [box[0] + 0.1 * w, box[1], w, h])
                add_dt(img, cat, box)
            elif kind < 0.35:  # ... and a second detection: both contest both
                add_gt(img, cat, [box[0] + 0.1 * w, box[1], w, h])
                add_dt(img, cat, box)
                add_dt(img, cat, box)
            elif rng.random() < 0.9:  # the rule: one detection near its own ground truth
                add_dt(img, cat, box)
        for _ in range(int(rng.integers(0, 4))):  # background
            b = [float(v) for v in rng.uniform(1, 150, 4).round(1)]
            dets.append({"image_id": img, "category_id": int(rng.choice(cat_ids)), "bbox": b, "score": 0.3})
    gt = {
        "images": [{"id": i, "height": 400, "width": 400} for i in img_ids],
        "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids],
        "annotations": anns,
    }
    params: dict = {}
    if seed % 3 == 1:
        params = {"area_rng": [(0.0, 1e10), (0.0, 500.0), (500.0, 4000.0)], "area_lbl": ["all", "s", "m"]}
    if seed % 3 == 2:
        params = {"max_dets": [1, 2, 100], "iou_thrs": np.array([0.1, 0.5, 0.75, 0.9])}
    return gt, dets, params


def test_detections_deciding_alone_match_pycocotools(monkeypatch):
    seen, stars = [], []
    real, real_stars = coco_match._decide_alone, coco_match._decide_stars

    def spy(pd, *args):
        out = real(pd, *args)
        seen.append((pd.shape[0], out[0].shape[0], int((out[3] == -1).sum())))
        return out

    def spy_stars(q, *args):
        stars.append(q.shape[0])
        return real_stars(q, *args)

    monkeypatch.setattr(coco_match, "_decide_alone", spy)
    monkeypatch.setattr(coco_match, "_decide_stars", spy_stars)
    for seed in range(12):
        gt, dets, params = _sparse_case(seed)
        ev = evaluate_coco(gt, dets, params=CocoParams.from_options("bbox", **params))
        given, left, _ = seen[-1]
        assert given - left > given / 2, seed  # most decided before the greedy steps
        stats, precision, recall, scores = run_pycocotools(gt, dets, "bbox", params)
        assert np.array_equal(ev.precision, precision), seed
        assert np.array_equal(ev.recall, recall), seed
        assert np.array_equal(ev.scores, scores), seed
        assert np.array_equal(ev.stats, stats), seed
    # every kind met: several candidates of their own (one step), stars, contested pairs (the greedy steps)
    assert sum(a for _, _, a in seen) > 10 and sum(stars) > 10
    assert sum(left - a for _, left, a in seen) > 10
