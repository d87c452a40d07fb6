"""Benchmark COCO keypoints with per-category OKS sigmas: deteval against vernier (``Keypoints(sigmas=...)``).

    python scripts/bench_pose.py                   # 5k images, 3 categories of 17 keypoints, each its sigmas
    python scripts/bench_pose.py --images 20000 --repeat 3

A seeded synthetic set (objects with visibility 0/1/2, crowds, detections near the objects and in the
background) is written to a temporary directory; each tool then runs in a fresh Python process (read the
JSON files, evaluate, summarize), several times interleaved, and the script prints the best wall time, the
ratio to deteval and whether the ten stats are identical. vernier runs only when installed (not a
dependency). Nothing is written to the tree.
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
K = 17


def generate(folder: Path, n_images: int, seed: int = 0) -> tuple[Path, Path, Path]:
    """Ground truth (3 categories, each record with its ``sigmas``), results, and the sigmas as JSON."""
    rng = np.random.default_rng(seed)
    cats = [1, 2, 3]
    sigmas = {c: [round(float(s), 4) for s in rng.uniform(0.02, 0.11, K)] for c in cats}
    anns, dets = [], []
    for img in range(1, n_images + 1):
        for _ in range(int(rng.integers(0, 8))):
            c = int(rng.choice(cats))
            x, y = rng.uniform(0, 500, 2)
            w, h = rng.uniform(10, 200, 2)
            kx, ky = x + rng.uniform(0, w, K), y + rng.uniform(0, h, K)
            v = rng.choice([0, 1, 2], K, p=[0.3, 0.2, 0.5])
            kp = np.stack([np.round(kx), np.round(ky), v], 1)
            kp[v == 0, :2] = 0
            anns.append({"id": len(anns) + 1, "image_id": img, "category_id": c, "iscrowd": int(rng.random() < 0.03),
                         "bbox": [round(float(t), 2) for t in (x, y, w, h)], "area": round(float(w * h * 0.6), 2),
                         "num_keypoints": int((v > 0).sum()), "keypoints": [int(t) for t in kp.reshape(-1)]})  # fmt: skip
            for _ in range(int(rng.integers(0, 3))):
                s = rng.uniform(0, 0.1) * max(w, h)
                dk = np.stack([kx + rng.normal(0, s, K), ky + rng.normal(0, s, K), rng.random(K)], 1)
                dets.append(_det(img, c, dk, rng))
        for _ in range(int(rng.integers(0, 3))):
            dk = np.stack([rng.uniform(0, 600, K), rng.uniform(0, 600, K), rng.random(K)], 1)
            dets.append(_det(img, int(rng.choice(cats)), dk, rng))
    gt = {
        "images": [{"id": i, "width": 700, "height": 700} for i in range(1, n_images + 1)],
        "categories": [{"id": c, "name": f"c{c}", "sigmas": sigmas[c]} for c in cats],
        "annotations": anns,
    }
    paths = folder / "gt.json", folder / "dt.json", folder / "sigmas.json"
    paths[0].write_text(json.dumps(gt))
    paths[1].write_text(json.dumps(dets))
    paths[2].write_text(json.dumps({str(c): s for c, s in sigmas.items()}))
    return paths


def _det(img: int, c: int, dk: np.ndarray, rng: np.random.Generator) -> dict:
    x0, y0 = float(dk[:, 0].min()), float(dk[:, 1].min())
    return {"image_id": img, "category_id": c, "score": round(float(rng.random()), 4),
            "keypoints": [round(float(t), 2) for t in dk.reshape(-1)],
            "bbox": [x0, y0, float(dk[:, 0].max()) - x0, float(dk[:, 1].max()) - y0]}  # fmt: skip


_DETEVAL = """
import json, sys
from deteval.run.coco import evaluate_coco
ev = evaluate_coco(sys.argv[1], sys.argv[2], iou_type="keypoints")  # (the sigmas are in the category records)
print(json.dumps(ev.stats.tolist()))
"""

_VERNIER = """
import json, sys
from pathlib import Path
from vernier.instance import Evaluator, Keypoints
sig = {int(k): tuple(v) for k, v in json.loads(Path(sys.argv[3]).read_text()).items()}
s = Evaluator(iou=Keypoints(sigmas=sig), parity_mode="strict").evaluate(
    Path(sys.argv[1]).read_bytes(), Path(sys.argv[2]).read_bytes())
print(json.dumps([float(v) for v in s.stats]))
"""


def run(code: str, args: list[str]) -> tuple[float, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, check=True, capture_output=True, text=True
    )
    return time.perf_counter() - t0, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    tools = {"deteval": _DETEVAL}
    try:
        import vernier  # noqa: F401

        tools["vernier"] = _VERNIER
    except ImportError:
        print("vernier is not installed: deteval alone")
    with tempfile.TemporaryDirectory() as tmp:
        paths = [str(p) for p in generate(Path(tmp), args.images)]
        best: dict[str, float] = {}
        stats: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for name, code in tools.items():
                t, s = run(code, paths)
                best[name] = min(best.get(name, t), t)
                stats[name] = s
        for name in tools:
            same = stats[name] == stats["deteval"]
            print(
                f"{name:>8}: {best[name]:7.2f} s  ({best[name] / best['deteval']:.2f}x deteval)  stats identical: {same}"
            )


if __name__ == "__main__":
    main()
