"""Benchmark deteval's COCO evaluation against the other evaluators, end to end, bbox, segm and keypoints.

    python scripts/bench_coco.py              # bbox 5k images, segm 1k, keypoints 5k; COCO-shaped and synthetic
    python scripts/bench_coco.py --data coco-shaped --types bbox segm      # the sets shaped like COCO val2017
    python scripts/bench_coco.py --types bbox --images 20000
    python scripts/bench_coco.py --skip pycocotools faster_coco_eval    # deteval vs the native tools only
    python scripts/bench_coco.py --repeat 3   # each tool 3 times, interleaved; best wall and its CPU time
    python scripts/bench_coco.py --scaling    # 5k, 10k and 20k images, deteval only (time growth)

Peers, each run only when installed: pycocotools, faster-coco-eval, hotcoco (Rust) and ultrafast-pycocotools
(C++); none is a dependency of deteval. A seeded synthetic COCO-scale set is written to a temporary directory
(ground truth with polygons, crowds and a COCO-like small/medium/large mix; detections with duplicates, wrong
classes and background hits; for segm an RLE mask per detection on the first ``--segm-images`` images (the
COCO-shaped segm set twice: each detection with detectron2's float32 box next to its mask, as detectron2 and
mmdetection write segm results, then the same results without boxes; the synthetic segm set has no boxes); for
keypoints one ``person`` category with 17 keypoints). Each tool then runs in a fresh Python process (load
JSON, evaluate, summarize), and the script prints wall time, CPU time, peak RSS, the ratios to deteval and
the largest difference of the 12 (keypoints: 10) stats against the reference (pycocotools when it ran, else
deteval). Every tool runs from compiled bytecode, as installed packages do (cached in the temporary directory,
even where PYTHONDONTWRITEBYTECODE is set). Nothing is written to the tree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def generate(folder: Path, n_images: int, seed: int = 0) -> tuple[Path, Path, int, int]:
    rng = np.random.default_rng(seed)
    n_cats = 80
    cat_ids = np.arange(1, 91)[np.sort(rng.choice(90, n_cats, replace=False))]
    images = [
        {"id": int(i), "height": 480, "width": 640, "file_name": f"{i:012d}.jpg"}
        for i in rng.choice(np.arange(1, 10 * n_images), n_images, replace=False)
    ]
    img_ids = np.array([im["id"] for im in images])
    n_per = rng.poisson(7.3, n_images)
    n_gt = int(n_per.sum())
    g_img = np.repeat(img_ids, n_per)
    cat_p = rng.dirichlet(np.full(n_cats, 0.6))
    g_cat = cat_ids[rng.choice(n_cats, n_gt, p=cat_p)]
    # COCO-like size mix: ~41% small (< 32²), ~34% medium, ~25% large
    u = rng.random(n_gt)
    side = np.where(
        u < 0.41,
        rng.uniform(4, 32, n_gt),
        np.where(u < 0.75, rng.uniform(32, 96, n_gt), rng.uniform(96, 400, n_gt)),
    )
    aspect = np.exp(rng.normal(0, 0.5, n_gt))
    w = np.clip(side * np.sqrt(aspect), 1, 630)
    h = np.clip(side / np.sqrt(aspect), 1, 470)
    x = rng.uniform(0, 640 - w)
    y = rng.uniform(0, 480 - h)
    crowd = rng.random(n_gt) < 0.01
    area = w * h * rng.uniform(0.55, 0.9, n_gt)
    anns = []
    t = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    for i in range(n_gt):
        cx, cy = x[i] + w[i] / 2, y[i] + h[i] / 2
        poly = np.empty(32)
        poly[0::2] = np.round(cx + w[i] / 2 * np.cos(t), 2)
        poly[1::2] = np.round(cy + h[i] / 2 * np.sin(t), 2)
        anns.append(
            {
                "id": i + 1,
                "image_id": int(g_img[i]),
                "category_id": int(g_cat[i]),
                "bbox": [
                    round(float(x[i]), 2),
                    round(float(y[i]), 2),
                    round(float(w[i]), 2),
                    round(float(h[i]), 2),
                ],
                "area": round(float(area[i]), 4),
                "iscrowd": int(crowd[i]),
                "segmentation": [poly.tolist()],
            }
        )
    gt = {
        "info": {"description": "deteval synthetic"},
        "images": images,
        "categories": [{"id": int(c), "name": f"class_{c}", "supercategory": "thing"} for c in cat_ids],
        "annotations": anns,
    }
    # detections: ~3 per gt (duplicates, jittered, some wrong class) + background hits -> ~61 per image
    k = rng.poisson(3.0, n_gt)
    src = np.repeat(np.arange(n_gt), k)
    n_hit = src.shape[0]
    jit = rng.normal(0, 0.12, (n_hit, 4)) * np.stack([w[src], h[src], w[src], h[src]], axis=1)
    dx, dy = x[src] + jit[:, 0], y[src] + jit[:, 1]
    dw, dh = np.abs(w[src] + jit[:, 2]) + 0.5, np.abs(h[src] + jit[:, 3]) + 0.5
    d_cat = np.where(rng.random(n_hit) < 0.1, cat_ids[rng.integers(0, n_cats, n_hit)], g_cat[src])
    d_img = g_img[src]
    d_score = np.clip(rng.beta(4, 2, n_hit), 0, 1)
    n_bg = max(0, 61 * n_images - n_hit)
    b_img = img_ids[rng.integers(0, n_images, n_bg)]
    bside = rng.uniform(4, 300, n_bg)
    bw, bh = bside * rng.uniform(0.5, 1.5, n_bg), bside * rng.uniform(0.5, 1.5, n_bg)
    bx, by = rng.uniform(0, 600, n_bg), rng.uniform(0, 450, n_bg)
    b_cat = cat_ids[rng.choice(n_cats, n_bg, p=cat_p)]
    b_score = rng.beta(1.2, 5, n_bg)
    X = np.r_[dx, bx]
    Y = np.r_[dy, by]
    W = np.r_[dw, bw]
    H = np.r_[dh, bh]
    IMG = np.r_[d_img, b_img]
    CAT = np.r_[d_cat, b_cat]
    S = np.round(np.r_[d_score, b_score], 5)
    perm = rng.permutation(X.shape[0])
    dets = [
        {
            "image_id": int(IMG[i]),
            "category_id": int(CAT[i]),
            "bbox": [
                round(float(X[i]), 2),
                round(float(Y[i]), 2),
                round(float(W[i]), 2),
                round(float(H[i]), 2),
            ],
            "score": float(S[i]),
        }
        for i in perm
    ]
    gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(dets))
    return gt_path, dt_path, n_gt, len(dets)


def generate_segm(folder: Path, n_images: int, seed: int = 0) -> tuple[Path, Path, int, int]:
    """The bbox set restricted to its first ``n_images`` images, each detection with an RLE mask (an ellipse
    inside its box, compressed as pycocotools writes it) instead of a box."""
    from pycocotools import mask as mask_utils

    gt_path, dt_path, _, _ = generate(folder, n_images, seed)
    gt = json.loads(gt_path.read_text())
    dets = json.loads(dt_path.read_text())
    t = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    out = []
    for d in dets:
        x, y, w, h = d["bbox"]
        poly = np.empty(24)
        poly[0::2] = x + w / 2 + w / 2 * np.cos(t)
        poly[1::2] = y + h / 2 + h / 2 * np.sin(t)
        rle = mask_utils.merge(mask_utils.frPyObjects([poly.tolist()], 480, 640))
        out.append(
            {
                "image_id": d["image_id"],
                "category_id": d["category_id"],
                "segmentation": {"size": [480, 640], "counts": rle["counts"].decode("ascii")},
                "score": d["score"],
            }
        )
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(out))
    return gt_path, dt_path, len(gt["annotations"]), len(out)


def generate_keypoints(folder: Path, n_images: int, seed: int = 0) -> tuple[Path, Path, int, int]:
    """One ``person`` category, ~2.5 people per image with 17 keypoints (some unlabeled), ~4 detections per
    person (jittered keypoints) plus background detections."""
    rng = np.random.default_rng(seed + 1)
    images = [
        {"id": int(i) + 1, "height": 480, "width": 640, "file_name": f"{i:012d}.jpg"} for i in range(n_images)
    ]
    n_per = rng.poisson(2.5, n_images)
    n_gt = int(n_per.sum())
    g_img = np.repeat(np.arange(1, n_images + 1), n_per)
    w = rng.uniform(10, 300, n_gt)
    h = w * rng.uniform(1.2, 2.5, n_gt)
    h = np.minimum(h, 470)
    x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
    kx = x[:, None] + rng.random((n_gt, 17)) * w[:, None]
    ky = y[:, None] + rng.random((n_gt, 17)) * h[:, None]
    vis = np.where(rng.random((n_gt, 17)) < 0.25, 0, 2)
    crowd = rng.random(n_gt) < 0.01
    anns = []
    for i in range(n_gt):
        kp = np.stack([np.round(kx[i]), np.round(ky[i]), vis[i]], axis=1) * (vis[i] > 0)[:, None]
        anns.append(
            {
                "id": i + 1,
                "image_id": int(g_img[i]),
                "category_id": 1,
                "bbox": [round(float(v), 2) for v in (x[i], y[i], w[i], h[i])],
                "area": round(float(w[i] * h[i] * 0.6), 4),
                "iscrowd": int(crowd[i]),
                "num_keypoints": int((vis[i] > 0).sum()),
                "keypoints": [int(v) for v in kp.ravel()],
            }
        )
    names = [f"kp{j}" for j in range(17)]
    gt = {
        "images": images,
        "categories": [
            {"id": 1, "name": "person", "supercategory": "person", "keypoints": names, "skeleton": []}
        ],
        "annotations": anns,
    }
    k = rng.poisson(4.0, n_gt)
    src = np.repeat(np.arange(n_gt), k)
    n_hit = src.shape[0]
    dkx = kx[src] + rng.normal(0, 0.05, (n_hit, 17)) * w[src, None]
    dky = ky[src] + rng.normal(0, 0.05, (n_hit, 17)) * h[src, None]
    d_img = g_img[src]
    n_bg = max(0, 12 * n_images - n_hit)
    bx, by = rng.uniform(0, 640, (n_bg, 17)), rng.uniform(0, 480, (n_bg, 17))
    DX, DY = np.r_[dkx, bx], np.r_[dky, by]
    IMG = np.r_[d_img, rng.integers(1, n_images + 1, n_bg)]
    S = np.round(np.r_[rng.beta(4, 2, n_hit), rng.beta(1.2, 5, n_bg)], 5)
    dets = []
    for i in rng.permutation(DX.shape[0]):
        kp = np.stack([np.round(DX[i], 2), np.round(DY[i], 2), np.ones(17)], axis=1)
        dets.append(
            {
                "image_id": int(IMG[i]),
                "category_id": 1,
                "keypoints": kp.ravel().tolist(),
                "score": float(S[i]),
            }
        )
    gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(dets))
    return gt_path, dt_path, n_gt, len(dets)


#: Instances per category of COCO val2017's instances file (category id: count), rounded to the nearest
#: ten below 1,000; the shape (person about 30% of all objects, then car, chair, book, bottle, a long tail
#: down to toaster and hair drier) is what matters here, not the last digit.
VAL2017_INSTANCES = {
    1: 11000, 2: 320, 3: 1930, 4: 370, 5: 140, 6: 280, 7: 190, 8: 410, 9: 430, 10: 630, 11: 100, 13: 80,
    14: 60, 15: 410, 16: 440, 17: 200, 18: 220, 19: 270, 20: 360, 21: 380, 22: 260, 23: 70, 24: 270,
    25: 230, 27: 370, 28: 410, 31: 540, 32: 250, 33: 300, 34: 120, 35: 240, 36: 70, 37: 260, 38: 340,
    39: 150, 40: 150, 41: 180, 42: 270, 43: 230, 44: 1030, 46: 340, 47: 900, 48: 220, 49: 330, 50: 250,
    51: 630, 52: 380, 53: 240, 54: 180, 55: 290, 56: 320, 57: 370, 58: 130, 59: 290, 60: 340, 61: 320,
    62: 1790, 63: 260, 64: 340, 65: 160, 67: 700, 70: 180, 72: 290, 73: 230, 74: 110, 75: 280, 76: 150,
    77: 260, 78: 60, 79: 140, 80: 10, 81: 230, 82: 130, 84: 1160, 85: 270, 86: 280, 87: 40, 88: 190,
    89: 10, 90: 60,
}  # fmt: skip

#: The real COCO images the COCO-shaped sets are drawn from (val2014, the cocoapi demo's 100 images)
REAL_COCO = ROOT / "tests" / "data" / "coco" / "coco_val2014_100" / "instances_val2014_100.json"


def generate_coco_shaped(
    folder: Path, n_images: int, seed: int = 0, masks: bool = False
) -> tuple[Path, Path, int, int]:
    """A set shaped like COCO val2017, built from real COCO images rather than drawn shapes.

    Each image is a real val2014 image of the cocoapi demo (``REAL_COCO``), drawn with replacement: its size
    (640x480, 640x427, 480x640, ...), its objects' boxes, polygon outlines (1-3 polygons of tens of points),
    areas, crowd regions as uncompressed RLE and its crowding (1% of the images hold 40+ objects) are kept,
    each object shifted by a few pixels so that no two copies coincide. Person stays person; every other
    object gets a category drawn from val2017's instance counts (``VAL2017_INSTANCES``), so that the long
    tail over 80 categories is COCO's. Detections are those of a decent detector: per object 0-3 jittered
    boxes (the right class mostly), background boxes, at most 100 per image by score, boxes clipped to the
    image, scores with 5 decimals and boxes with 2, as detectors write them. ``masks``: each detection carries a
    compressed RLE of its object's outline moved with its box (the background ones an ellipse) and, as detectron2's
    ``instances_to_coco_json`` writes them, the box head's box: clipped to the image and converted from xyxy to xywh in
    float32, written through ``tolist()`` (keys in detectron2's order: image_id, category_id, bbox, score,
    segmentation; mmdetection's ``results2json`` writes such a box too). :func:`without_boxes` writes the same results
    without them.
    """
    from pycocotools import mask as mask_utils

    rng = np.random.default_rng(seed)
    real = json.loads(REAL_COCO.read_text())
    by_img: dict[int, list[dict]] = {}
    for a in real["annotations"]:
        by_img.setdefault(a["image_id"], []).append(a)
    templates = [im for im in real["images"] if im["id"] in by_img]
    cat_ids = np.array(sorted(VAL2017_INSTANCES))
    other = cat_ids[cat_ids != 1]
    p_other = np.array([VAL2017_INSTANCES[int(c)] for c in other], dtype=np.float64)
    p_other /= p_other.sum()
    images, anns, dets = [], [], []
    for n in range(n_images):
        tpl = templates[int(rng.integers(0, len(templates)))]
        img_id, H, W = 100_000 + 7 * n, int(tpl["height"]), int(tpl["width"])
        images.append({"id": img_id, "height": H, "width": W, "file_name": f"{img_id:012d}.jpg"})
        img_dets = []
        objs = by_img[tpl["id"]]
        shift = rng.normal(0, 3, (len(objs), 2))
        drawn = rng.choice(other, len(objs), p=p_other)
        n_hits = rng.choice(4, len(objs), p=[0.12, 0.58, 0.2, 0.1])
        for j, a in enumerate(objs):
            x, y, w, h = a["bbox"]
            dx = float(np.clip(shift[j, 0], -x, W - x - w))
            dy = float(np.clip(shift[j, 1], -y, H - y - h))
            cat = 1 if a["category_id"] == 1 else int(drawn[j])
            seg = a["segmentation"]
            if isinstance(seg, list):
                seg = [[round(v + (dx if k % 2 == 0 else dy), 2) for k, v in enumerate(poly)] for poly in seg]
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": img_id,
                    "category_id": cat,
                    "bbox": [round(x + dx, 2), round(y + dy, 2), w, h],
                    "area": a["area"],
                    "iscrowd": a["iscrowd"],
                    "segmentation": seg,
                }
            )
            if a["iscrowd"]:
                continue
            for _ in range(int(n_hits[j])):
                jx, jy, jw, jh = rng.normal(0, 0.08, 4) * [w, h, w, h]
                box = [x + dx + jx, y + dy + jy, max(w + jw, 1.0), max(h + jh, 1.0)]
                c = cat if rng.random() < 0.9 else int(rng.choice(cat_ids))
                outline = seg if isinstance(seg, list) else None
                img_dets.append((box, c, float(rng.beta(4, 2)), outline, (jx, jy)))
        for _ in range(int(rng.poisson(40))):
            side = rng.uniform(4, 0.6 * min(W, H))
            bw, bh = side * rng.uniform(0.5, 1.5), side * rng.uniform(0.5, 1.5)
            box = [rng.uniform(0, W - 2), rng.uniform(0, H - 2), bw, bh]
            img_dets.append((box, int(rng.choice(cat_ids)), float(rng.beta(1.2, 5)), None, (0.0, 0.0)))
        img_dets.sort(key=lambda d: -d[2])
        for box, c, score, outline, (jx, jy) in img_dets[:100]:
            rec: dict = {"image_id": img_id, "category_id": c, "score": round(score, 5)}
            if not masks:
                # detectors clip their boxes to the image, as torchvision's and Ultralytics' post-processing do
                x1, y1 = min(max(box[0], 0.0), W - 1.0), min(max(box[1], 0.0), H - 1.0)
                x2, y2 = min(box[0] + box[2], float(W)), min(box[1] + box[3], float(H))
                rec["bbox"] = [round(float(v), 2) for v in (x1, y1, max(x2 - x1, 1.0), max(y2 - y1, 1.0))]
            else:
                # detectron2: Boxes.clip to the image, then BoxMode.convert XYXY_ABS -> XYWH_ABS, all in float32
                xyxy = np.array([box[0], box[1], box[0] + box[2], box[1] + box[3]], dtype=np.float32)
                xyxy[0::2] = np.clip(xyxy[0::2], 0, W)
                xyxy[1::2] = np.clip(xyxy[1::2], 0, H)
                xyxy[2:] -= xyxy[:2]
                rec = {"image_id": img_id, "category_id": c, "bbox": xyxy.tolist(), "score": round(score, 5)}
                if outline is None:
                    t = np.linspace(0, 2 * np.pi, 12, endpoint=False)
                    ell = np.empty(24)
                    ell[0::2] = box[0] + box[2] / 2 * (1 + np.cos(t))
                    ell[1::2] = box[1] + box[3] / 2 * (1 + np.sin(t))
                    outline = [ell.tolist()]
                else:
                    outline = [
                        [v + (jx if k % 2 == 0 else jy) for k, v in enumerate(poly)] for poly in outline
                    ]
                rle = mask_utils.merge(mask_utils.frPyObjects(outline, H, W))
                rec["segmentation"] = {"size": [H, W], "counts": rle["counts"].decode("ascii")}
            dets.append(rec)
    order = rng.permutation(len(dets))
    gt = {
        "info": {"description": "deteval benchmark: COCO-shaped, from real val2014 images"},
        "images": images,
        "categories": [{"id": int(c), "name": f"class_{c}", "supercategory": "thing"} for c in cat_ids],
        "annotations": anns,
    }
    gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps([dets[i] for i in order]))
    return gt_path, dt_path, len(anns), len(dets)


def without_boxes(dt_path: Path) -> Path:
    """The results of ``dt_path`` without their ``bbox`` (segm results as pycocotools' own examples and the
    synthetic generator write them: loadRes' segm branch, every box and area taken from the mask), written next
    to it."""
    out = dt_path.with_name(dt_path.stem + "_nobox.json")
    records = json.loads(dt_path.read_text())
    out.write_text(json.dumps([{k: v for k, v in r.items() if k != "bbox"} for r in records]))
    return out


CHILD = r"""
import contextlib, io, json, resource, sys, time
t0 = time.perf_counter()
tool, gt, dt, iou_type = sys.argv[1:5]
sink = io.StringIO()
if tool.startswith("deteval-cli"):
    sys.path.insert(0, sys.argv[5])
    from deteval.cli import main
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
        main(["coco", gt, dt, "--iou-type", iou_type, "--format", "json"])
    stats = json.loads(sink.getvalue())["stats"]
elif tool.startswith("deteval"):
    sys.path.insert(0, sys.argv[5])
    from deteval.detection.coco import evaluate_coco
    stats = evaluate_coco(gt, dt, iou_type=iou_type).stats.tolist()
else:
    if tool == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    elif tool == "faster_coco_eval":
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as COCOeval
    elif tool == "hotcoco":
        from hotcoco import COCO, COCOeval
    else:
        from ultrafast_pycocotools import COCO, COCOeval
    with contextlib.redirect_stdout(sink):
        g = COCO(gt)
        d = g.loadRes(dt)
        E = COCOeval(g, d, iou_type)
        E.evaluate(); E.accumulate(); E.summarize()
    stats = [float(s) for s in E.stats]
# VmHWM belongs to this address space; ru_maxrss would carry over the parent's peak across fork + exec
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
try:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            rss = int(line.split()[1]) / 1024
except OSError:
    pass
# the largest forked child's peak (deteval's second core; the native tools fork none); deteval's children
# whose value was read exit on their own: waited for first, so that they count
if tool.startswith("deteval"):
    try:
        from deteval.run import forked
    except ImportError:  # (a checkout from before deteval.distributed became deteval.run, with --other)
        from deteval.distributed import forked
    forked._reap_exited(True)
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"stats": stats, "inner": time.perf_counter() - t0, "rss_mb": rss, "child_mb": child}))
"""


#: The children's environment: every tool runs from compiled bytecode, as an installed package does (pip
#: compiles it at install). PYTHONDONTWRITEBYTECODE, set on some machines, would make an editable checkout
#: compile its modules at every start; the children write their bytecode to a temporary cache instead (never
#: into the tree), warmed by :func:`warm_up` before anything is timed.
ENV = dict(os.environ)


def use_bytecode_cache(folder: Path) -> None:
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    ENV["PYTHONPYCACHEPREFIX"] = str(folder)


def warm_up(root: Path) -> None:
    """Import deteval's evaluation modules once (from ``root``), so that their bytecode is cached."""
    code = f"import sys; sys.path.insert(0, {str(root)!r}); import deteval.detection.coco, deteval.cli"
    subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, check=False)


def run_tool(tool: str, gt: Path, dt: Path, iou_type: str = "bbox", root: Path = ROOT) -> dict | None:
    """One fresh process; wall time, CPU time (user + system of the child: shared machines make wall noisy),
    peak RSS and the stats."""
    before = os.times()
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, tool, str(gt), str(dt), iou_type, str(root)],
        capture_output=True,
        text=True,
        check=False,
        env=ENV,
    )
    wall = time.perf_counter() - t0
    after = os.times()
    if out.returncode != 0:
        print(f"{tool} ({iou_type}): failed\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall"] = wall
    res["cpu"] = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return res


def available(module: str) -> bool:
    return (
        subprocess.run(
            [sys.executable, "-c", f"import {module}"], capture_output=True, check=False, env=ENV
        ).returncode
        == 0
    )


TOOLS = (
    ("deteval", "numpy"),
    ("deteval-cli", "numpy"),
    ("hotcoco", "hotcoco"),
    ("ultrafast", "ultrafast_pycocotools"),
    ("faster_coco_eval", "faster_coco_eval"),
    ("pycocotools", "pycocotools"),
)
NATIVE = ("hotcoco", "ultrafast")


def bench_type(
    iou_type: str,
    gt: Path,
    dt: Path,
    tools: list[str],
    repeat: int,
    other: Path | None = None,
    label: str = "",
) -> None:
    """Run every tool ``repeat`` times, interleaved (a burst of load on the shared machine hits all tools
    alike); keep each tool's fastest run. ``label`` names the case in the ratio lines (default: ``iou_type``)."""
    label = label or iou_type
    runs: dict[str, list[dict]] = {t: [] for t in tools}
    for _ in range(repeat):
        for tool in tools:
            root = other if tool.endswith("@other") and other else ROOT
            r = run_tool(tool, gt, dt, iou_type, root)
            if r is not None:
                runs[tool].append(r)
    results = {t: min(rs, key=lambda r: r["wall"]) for t, rs in runs.items() if rs}
    ref_name = "pycocotools" if "pycocotools" in results else "deteval"
    ref = results.get(ref_name)
    print(
        f"{'tool':<18}{'wall s':>8}{'cpu s':>8}{'in-proc s':>11}{'peak RSS MB':>13}{'child MB':>10}{'wall/deteval':>14}"
        f"{'max |Δstat| vs ' + ref_name:>30}"
    )
    d = results.get("deteval")
    for tool, r in results.items():
        diff = max(abs(a - b) for a, b in zip(r["stats"], ref["stats"])) if ref else float("nan")
        ratio = r["wall"] / d["wall"] if d else float("nan")
        print(
            f"{tool:<18}{r['wall']:>8.2f}{r['cpu']:>8.2f}{r['inner']:>11.2f}{r['rss_mb']:>13.0f}"
            f"{r.get('child_mb', 0):>10.0f}{ratio:>14.2f}"
            f"{diff:>30.3g}"
        )
    native = [results[t] for t in NATIVE if t in results]
    for how in ("deteval", "deteval@other", "deteval-cli", "deteval-cli@other"):
        mine = results.get(how)
        if not (mine and native):
            continue
        best = min(native, key=lambda r: r["wall"])
        name = next(t for t in NATIVE if results.get(t) is best)
        print(
            f"{label}: {how} / fastest native ({name}): wall {mine['wall'] / best['wall']:.2f}x, "
            f"cpu {mine['cpu'] / best['cpu']:.2f}x, peak RSS {mine['rss_mb'] / best['rss_mb']:.2f}x "
            f"({how} {mine['rss_mb']:.0f} MB, its largest forked child {mine.get('child_mb', 0):.0f} MB, "
            f"sum {mine['rss_mb'] + mine.get('child_mb', 0):.0f} MB; a child's RSS counts the pages it shares)"
        )
    if d:
        for tool in ("pycocotools", "faster_coco_eval"):
            if tool in results:
                print(
                    f"{label}: deteval vs {tool}: {results[tool]['wall'] / d['wall']:.1f}x faster end to end, "
                    f"{results[tool]['rss_mb'] / d['rss_mb']:.1f}x less peak memory"
                )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=5000, help="images of the bbox and keypoints sets")
    ap.add_argument("--segm-images", type=int, default=1000, help="images of the segm set")
    ap.add_argument("--types", nargs="*", default=["bbox", "segm", "keypoints"])
    ap.add_argument(
        "--data",
        nargs="*",
        default=["coco-shaped", "synthetic"],
        choices=["coco-shaped", "synthetic"],
        help="coco-shaped: drawn from real COCO images with val2017's category mix; synthetic: drawn shapes",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool (interleaved; the fastest is shown)")
    ap.add_argument("--scaling", action="store_true", help="deteval at 5k, 10k, 20k images (time growth)")
    ap.add_argument(
        "--skip",
        nargs="*",
        default=[],
        help="tools to skip (hotcoco, ultrafast, pycocotools, faster_coco_eval)",
    )
    ap.add_argument(
        "--other",
        type=Path,
        help="also run the deteval of this checkout (e.g. /work/main) as 'deteval@other' and 'deteval-cli@other', interleaved",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="deteval_bench_") as tmp:
        use_bytecode_cache(Path(tmp) / "pycache")
        warm_up(ROOT)
        if args.other:
            warm_up(args.other)
        if args.scaling:
            for n in (5000, 10000, 20000):
                gt, dt, n_gt, n_dt = generate(Path(tmp), n, args.seed)
                r = run_tool("deteval", gt, dt)
                if r is None:
                    return 1
                print(
                    f"{n:>6} images {n_gt:>7} gts {n_dt:>8} dets: deteval {r['wall']:.2f} s "
                    f"(cpu {r['cpu']:.2f} s), {r['rss_mb']:.0f} MB (largest child {r.get('child_mb', 0):.0f} MB), "
                    f"{r['wall'] / n * 1000:.3f} ms/image"
                )
            return 0
        tools = [t for t, module in TOOLS if t not in args.skip and available(module)]
        if args.other:
            tools.insert(1, "deteval@other")
            if "deteval-cli" in tools:
                tools.insert(tools.index("deteval-cli") + 1, "deteval-cli@other")
        makers = {
            ("synthetic", "bbox"): (generate, args.images),
            ("synthetic", "segm"): (generate_segm, args.segm_images),
            ("synthetic", "keypoints"): (generate_keypoints, args.images),
            ("coco-shaped", "bbox"): (generate_coco_shaped, args.images),
            ("coco-shaped", "segm"): (partial(generate_coco_shaped, masks=True), args.segm_images),
        }
        print(f"tools: {', '.join(tools)} ({os.cpu_count()} CPUs)")
        for data in args.data:
            for iou_type in args.types:
                if (data, iou_type) not in makers:
                    print(f"\n{data} {iou_type}: no such set (keypoints: synthetic only)")
                    continue
                make, n = makers[data, iou_type]
                t0 = time.perf_counter()
                gt, dt, n_gt, n_dt = make(Path(tmp), n, args.seed)
                made = time.perf_counter() - t0
                # (the COCO-shaped segm results carry detectron2's boxes; the same without them is a second case)
                cases = [("", dt)]
                if (data, iou_type) == ("coco-shaped", "segm"):
                    cases = [(" with detectron2-style boxes", dt), (" without boxes", without_boxes(dt))]
                for what, path in cases:
                    print(
                        f"\n{data} {iou_type}{what}: {n} images, {n_gt} ground truths, {n_dt} detections "
                        f"(generated in {made:.1f} s)"
                    )
                    bench_type(iou_type, gt, path, tools, args.repeat, args.other, f"{data} {iou_type}{what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
