"""Benchmark deteval's COCO evaluation against pycocotools and faster-coco-eval, end to end.

    python scripts/bench_coco.py              # 5k images, 80 categories, ~37k gts, ~305k detections
    python scripts/bench_coco.py --images 20000
    python scripts/bench_coco.py --scaling    # 5k, 10k and 20k images, deteval only (time growth)

A seeded synthetic COCO-scale set is written to a temporary directory (ground truth with polygons, crowds and
a COCO-like small/medium/large mix; detections with duplicates, wrong classes and background hits). Each tool
then runs in a fresh Python process (load JSON, evaluate, summarize), and the script prints wall time, peak
RSS, the ratios and the largest difference of the 12 stats against pycocotools. Nothing is written to the tree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
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


CHILD = r"""
import contextlib, io, json, resource, sys, time
t0 = time.perf_counter()
tool, gt, dt = sys.argv[1:4]
sink = io.StringIO()
if tool == "deteval":
    sys.path.insert(0, sys.argv[4])
    from deteval.detection.coco import evaluate_coco
    stats = evaluate_coco(gt, dt).stats.tolist()
else:
    if tool == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    else:
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as COCOeval
    with contextlib.redirect_stdout(sink):
        g = COCO(gt)
        d = g.loadRes(dt)
        E = COCOeval(g, d, "bbox")
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
print(json.dumps({"stats": stats, "inner": time.perf_counter() - t0, "rss_mb": rss}))
"""


def run_tool(tool: str, gt: Path, dt: Path) -> dict | None:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, tool, str(gt), str(dt), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        print(f"{tool}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall"] = wall
    return res


def available(module: str) -> bool:
    return (
        subprocess.run(
            [sys.executable, "-c", f"import {module}"], capture_output=True, check=False
        ).returncode
        == 0
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scaling", action="store_true", help="deteval at 5k, 10k, 20k images (time growth)")
    ap.add_argument("--skip", nargs="*", default=[], help="tools to skip (pycocotools, faster_coco_eval)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="deteval_bench_") as tmp:
        if args.scaling:
            rows = []
            for n in (5000, 10000, 20000):
                gt, dt, n_gt, n_dt = generate(Path(tmp), n, args.seed)
                r = run_tool("deteval", gt, dt)
                rows.append((n, n_gt, n_dt, r["wall"], r["rss_mb"]))
                print(
                    f"{n:>6} images {n_gt:>7} gts {n_dt:>8} dets: deteval {r['wall']:.2f} s, "
                    f"{r['rss_mb']:.0f} MB, {r['wall'] / n * 1000:.3f} ms/image"
                )
            return 0
        t0 = time.perf_counter()
        gt, dt, n_gt, n_dt = generate(Path(tmp), args.images, args.seed)
        print(
            f"synthetic set: {args.images} images, 80 categories, {n_gt} ground truths, {n_dt} detections "
            f"(generated in {time.perf_counter() - t0:.1f} s; {os.cpu_count()} CPUs)"
        )
        results = {}
        for tool, module in (
            ("deteval", "numpy"),
            ("pycocotools", "pycocotools"),
            ("faster_coco_eval", "faster_coco_eval"),
        ):
            if tool in args.skip or not available(module):
                continue
            r = run_tool(tool, gt, dt)
            if r is not None:
                results[tool] = r
        ref = results.get("pycocotools")
        print(f"{'tool':<18}{'wall s':>9}{'in-process s':>14}{'peak RSS MB':>13}{'max |Δstat|':>14}")
        for tool, r in results.items():
            diff = max(abs(a - b) for a, b in zip(r["stats"], ref["stats"])) if ref else float("nan")
            print(f"{tool:<18}{r['wall']:>9.2f}{r['inner']:>14.2f}{r['rss_mb']:>13.0f}{diff:>14.3g}")
        d = results.get("deteval")
        if d:
            for tool in ("pycocotools", "faster_coco_eval"):
                if tool in results:
                    print(
                        f"deteval vs {tool}: {results[tool]['wall'] / d['wall']:.1f}x faster end to end, "
                        f"{results[tool]['rss_mb'] / d['rss_mb']:.1f}x less peak memory"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
