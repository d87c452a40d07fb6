"""Benchmark deteval's COCO-style oriented-box evaluation (``--iou-type obb``) against hotcoco's OBB mode.

    python scripts/bench_obb.py                   # 2k images, ~7 boxes each, 80 categories
    python scripts/bench_obb.py --images 5000 --repeat 3
    python scripts/bench_obb.py --repeat 5 --other /work/main   # also the checkout at /work/main, interleaved

Each tool runs in a fresh Python process (load the JSON, evaluate, summarize), through the same child as
scripts/bench_coco.py (``--iou-type obb`` there): the script prints wall time, CPU time, peak RSS, the ratio
to deteval and the largest difference of the 12 stats from deteval's; ``deteval-cli`` is ``deteval coco
--iou-type obb --format json`` in the same kind of process. Peers, each only when installed:
hotcoco (Rust). vernier 0.5 has no oriented-box mode and pycocotools, faster-coco-eval and
ultrafast-pycocotools none either; they are listed as such. A seeded synthetic set is written to a temporary
directory: boxes at any angle (a tenth at ±90°), a COCO-like size mix, some crowds; detections near the
objects, duplicates, wrong classes and background boxes. Nothing is written to the tree.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_coco  # (its fresh-process child, bytecode cache and timing)


def generate(folder: Path, n_images: int, seed: int = 0) -> tuple[Path, Path, int, int]:
    """Ground truth and results with an ``obb`` each (hotcoco's form), in ``folder``."""
    rng = np.random.default_rng(seed)
    n_cats = 80
    n_per = rng.poisson(7.3, n_images)
    n_gt = int(n_per.sum())
    g_img = np.repeat(np.arange(1, n_images + 1), n_per)
    g_cat = rng.integers(1, n_cats + 1, n_gt)
    side = np.where(rng.random(n_gt) < 0.4, rng.uniform(4, 32, n_gt), rng.uniform(32, 300, n_gt))
    aspect = np.exp(rng.normal(0, 0.6, n_gt))
    w, h = side * np.sqrt(aspect), side / np.sqrt(aspect)
    angle = np.where(
        rng.random(n_gt) < 0.1, rng.choice([np.pi / 2, -np.pi / 2], n_gt), rng.uniform(-np.pi, np.pi, n_gt)
    )
    g = np.c_[rng.uniform(0, 1000, (n_gt, 2)), w, h, angle]
    crowd = rng.random(n_gt) < 0.01
    anns = [
        {"id": k + 1, "image_id": int(g_img[k]), "category_id": int(g_cat[k]), "obb": g[k].tolist(),
         "area": float(g[k, 2] * g[k, 3]), "iscrowd": int(crowd[k])}
        for k in range(n_gt)
    ]  # fmt: skip
    hits = rng.random(n_gt) < 0.8
    reps = np.where(hits, rng.choice([1, 1, 1, 2], n_gt), 0)
    src = np.repeat(np.arange(n_gt), reps)
    d = (
        g[src]
        + np.c_[
            rng.normal(0, 0.1, (src.size, 2)) * g[src, 2:4],
            rng.normal(0, 0.1, (src.size, 2)) * g[src, 2:4],
            rng.normal(0, 0.15, src.size),
        ]
    )
    d[:, 2:4] = np.abs(d[:, 2:4])
    d_cat = np.where(rng.random(src.size) < 0.9, g_cat[src], rng.integers(1, n_cats + 1, src.size))
    n_bg = n_images * 3
    bg = np.c_[
        rng.uniform(0, 1000, (n_bg, 2)), rng.uniform(5, 150, (n_bg, 2)), rng.uniform(-np.pi, np.pi, n_bg)
    ]
    boxes = np.concatenate([d, bg])
    imgs = np.concatenate([g_img[src], rng.integers(1, n_images + 1, n_bg)])
    cats = np.concatenate([d_cat, rng.integers(1, n_cats + 1, n_bg)])
    scores = rng.random(boxes.shape[0])
    results = [
        {
            "image_id": int(imgs[k]),
            "category_id": int(cats[k]),
            "obb": boxes[k].tolist(),
            "score": float(scores[k]),
        }
        for k in range(boxes.shape[0])
    ]
    gt = {
        "images": [{"id": i, "width": 1000, "height": 1000} for i in range(1, n_images + 1)],
        "categories": [{"id": c, "name": str(c)} for c in range(1, n_cats + 1)],
        "annotations": anns,
    }
    gt_path, dt_path = folder / "gt_obb.json", folder / "dt_obb.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    return gt_path, dt_path, n_gt, len(results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs per tool, interleaved; the best wall and CPU are kept"
    )
    ap.add_argument(
        "--other",
        type=Path,
        default=None,
        help="also run the deteval of this checkout (e.g. /work/main) as 'deteval@other' and "
        "'deteval-cli@other', interleaved",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench_coco.use_bytecode_cache(folder / "pycache")
        bench_coco.warm_up(bench_coco.ROOT)
        if args.other:
            bench_coco.warm_up(args.other)
        gt, dt, n_gt, n_dt = generate(folder, args.images)
        print(f"obb: {args.images} images, {n_gt} objects, {n_dt} detections")
        tools = ["deteval", "deteval-cli"] + (["hotcoco"] if bench_coco.available("hotcoco") else [])
        if args.other:
            tools[2:2] = ["deteval@other", "deteval-cli@other"]
        for absent in ("vernier", "pycocotools", "faster_coco_eval", "ultrafast_pycocotools"):
            print(f"  {absent}: no oriented-box mode")
        best: dict[str, dict] = {}
        for _ in range(args.repeat):
            for tool in tools:
                root = args.other if tool.endswith("@other") else bench_coco.ROOT
                res = bench_coco.run_tool(tool, gt, dt, "obb", root)
                if res is None:
                    continue
                if tool not in best:
                    best[tool] = res
                else:  # (each of wall and CPU its best: a shared machine's bursts hit one run or the other)
                    best[tool]["wall"] = min(best[tool]["wall"], res["wall"])
                    best[tool]["cpu"] = min(best[tool]["cpu"], res["cpu"])
        ref = best.get("deteval")
        for tool, res in best.items():
            ratio = res["wall"] / ref["wall"] if ref else float("nan")
            diff = float(np.max(np.abs(np.subtract(res["stats"], ref["stats"])))) if ref else float("nan")
            print(
                f"  {tool:17s} wall {res['wall']:7.2f} s  cpu {res['cpu']:7.2f} s  peak {res['rss_mb']:7.0f} MB"
                f"  ({res['child_mb']:.0f} MB child)  {ratio:5.2f}x deteval  max |Δstats| {diff:.1e}"
            )
        peer = best.get("hotcoco")
        for how in ("deteval", "deteval-cli", "deteval@other", "deteval-cli@other"):
            if peer and how in best:
                print(
                    f"  {how} / hotcoco: wall {best[how]['wall'] / peer['wall']:.2f}x, "
                    f"cpu {best[how]['cpu'] / peer['cpu']:.2f}x"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
