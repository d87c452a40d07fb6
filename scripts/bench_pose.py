"""Benchmark COCO keypoints with per-category OKS sigmas: deteval against vernier (``Keypoints(sigmas=...)``).

    python scripts/bench_pose.py                   # 5k images, 3 categories of 17 keypoints, each its sigmas
    python scripts/bench_pose.py --images 20000 --repeat 3

A seeded synthetic set (objects with visibility 0/1/2, crowds, detections near the objects and in the
background) is written to a temporary directory; each tool then runs in a fresh Python process (read the
JSON files, evaluate, summarize), several times interleaved, and the script prints the best wall time and the
best CPU time (user + system of the process and its children: a shared machine makes wall times noisy), the
ratios to vernier and whether the ten stats are identical. ``deteval-cli`` is ``deteval coco --iou-type
keypoints --format json``. Every tool runs from compiled bytecode, as installed (scripts/bench_coco.py).
vernier runs only when installed (not a dependency). Nothing is written to the tree.
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
sys.path.insert(0, str(ROOT / "scripts"))
import bench_coco  # noqa: E402  (its bytecode cache for the children)

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

_DETEVAL_CLI = """
import contextlib, io, json, sys
from deteval.cli import main
sink = io.StringIO()
with contextlib.redirect_stdout(sink):
    main(["coco", sys.argv[1], sys.argv[2], "--iou-type", "keypoints", "--format", "json"])
print(json.dumps(json.loads(sink.getvalue())["stats"]))
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


def run(code: str, args: list[str]) -> tuple[float, float, list[float]]:
    """(wall, CPU of the process and its children, stats) of one fresh process."""
    env = {**bench_coco.ENV, "PYTHONPATH": str(ROOT)}
    before = os.times()
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, check=True, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    tools = {"deteval": _DETEVAL, "deteval-cli": _DETEVAL_CLI}
    try:
        import vernier  # noqa: F401

        tools["vernier"] = _VERNIER
    except ImportError:
        print("vernier is not installed: deteval alone")
    with tempfile.TemporaryDirectory() as tmp:
        bench_coco.use_bytecode_cache(Path(tmp) / "pycache")
        bench_coco.warm_up(ROOT)
        paths = [str(p) for p in generate(Path(tmp), args.images)]
        best: dict[str, float] = {}
        cpu: dict[str, float] = {}
        stats: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for name, code in tools.items():
                t, c, s = run(code, paths)
                best[name] = min(best.get(name, t), t)
                cpu[name] = min(cpu.get(name, c), c)
                stats[name] = s
        ref = "vernier" if "vernier" in tools else "deteval"
        for name in tools:
            same = stats[name] == stats[ref]
            print(
                f"{name:>12}: wall {best[name]:6.2f} s  cpu {cpu[name]:6.2f} s  "
                f"({best[name] / best[ref]:.2f}x {ref} wall, {cpu[name] / cpu[ref]:.2f}x cpu)  "
                f"stats identical to {ref}'s: {same}"
            )


if __name__ == "__main__":
    main()
