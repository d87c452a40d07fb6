"""Benchmark an Objects365-sized COCO evaluation: one process, Dask workers, and the peers that finish.

    python scripts/bench_scale.py                     # scaled down: 8k images, 365 categories, ~120k detections
    python scripts/bench_scale.py --full              # 80k images x 365 categories x ~1.2M detections
    python scripts/bench_scale.py --images 20000 --workers 2 4 --skip pycocotools
    python scripts/bench_scale.py --full --repeat 5 --skip deteval-dask faster_coco_eval pycocotools

A seeded Objects365-like set (365 categories with a long-tailed frequency, ~13 objects and ~15 detections
per image, some crowds, near-miss and background detections, scores with ties) is written to a temporary
folder as COCO JSON. Each tool then runs in a fresh process: deteval in one process, deteval on a local Dask
cluster of N worker processes (``evaluate_coco(..., client=)``: workers read byte ranges of the results
file and match their image shard; the driver reads the ground truth; columns and match tables travel), and
hotcoco, ultrafast-pycocotools, faster-coco-eval and pycocotools where installed. Printed: wall time, peak memory of every process (for Dask: the driver and each
worker), and the largest difference of the 12 stats from deteval's one-process result (0: identical); then
each worker's peak next to the one-process peak, also counted above the process's start (a Dask worker
starts larger than a bare interpreter), which shows a worker's memory following its shard: each worker reads
only byte ranges of the results file and gets only its shard's ground truth from the driver.
Nothing is written to the tree.
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


def generate(folder: Path, n_images: int, seed: int = 0, lvis: bool = False) -> tuple[Path, Path, int, int]:
    """The seeded set; returns (gt path, results path, ground truths, detections). ``lvis``: also write the
    ground truth as LVIS (``lvis_gt.json``: every category a frequency, every image's lists of negative and
    not exhaustively annotated categories empty, no ``iscrowd``)."""
    rng = np.random.default_rng(seed)
    n_cats = 365
    cat_p = 1.0 / np.arange(1, n_cats + 1) ** 0.9  # long tail, as Objects365
    cat_p /= cat_p.sum()
    cat_ids = rng.permutation(np.arange(1, 1000))[:n_cats]
    img_ids = rng.permutation(np.arange(1, 10 * n_images))[:n_images]
    per_img = rng.poisson(13, n_images)
    n_gt = int(per_img.sum())
    g_img = np.repeat(img_ids, per_img)
    g_cat = cat_ids[rng.choice(n_cats, n_gt, p=cat_p)]
    gw = np.exp(rng.uniform(np.log(4), np.log(400), n_gt))
    gh = gw * np.exp(rng.normal(0, 0.4, n_gt))
    gx, gy = rng.uniform(0, 640 - np.minimum(gw, 600)), rng.uniform(0, 480 - np.minimum(gh, 460))
    crowd = rng.random(n_gt) < 0.01
    # detections: ~85% of objects found with jitter, plus background boxes
    found = rng.random(n_gt) < 0.85
    j = np.flatnonzero(found)
    jit = rng.normal(0, 0.08, (j.shape[0], 4))
    dx, dy = gx[j] + jit[:, 0] * gw[j], gy[j] + jit[:, 1] * gh[j]
    dw, dh = gw[j] * np.exp(jit[:, 2]), gh[j] * np.exp(jit[:, 3])
    d_cat = np.where(rng.random(j.shape[0]) < 0.9, g_cat[j], cat_ids[rng.choice(n_cats, j.shape[0], p=cat_p)])
    d_score = rng.beta(4, 2, j.shape[0])
    n_bg = int(0.15 * 13 * n_images) + (n_gt - j.shape[0])
    bw = np.exp(rng.uniform(np.log(4), np.log(300), n_bg))
    bh = bw * np.exp(rng.normal(0, 0.4, n_bg))
    X = np.r_[dx, rng.uniform(0, 600, n_bg)]
    Y = np.r_[dy, rng.uniform(0, 450, n_bg)]
    W, H = np.r_[dw, bw], np.r_[dh, bh]
    IMG = np.r_[g_img[j], img_ids[rng.integers(0, n_images, n_bg)]]
    CAT = np.r_[d_cat, cat_ids[rng.choice(n_cats, n_bg, p=cat_p)]]
    S = np.round(np.r_[d_score, rng.beta(1.2, 5, n_bg)], 4)  # rounded: score ties across images
    images = [{"id": int(i), "height": 480, "width": 640} for i in img_ids]
    cats = [{"id": int(c), "name": f"class{c}"} for c in sorted(cat_ids.tolist())]
    anns = [
        {"id": k + 1, "image_id": int(g_img[k]), "category_id": int(g_cat[k]),
         "bbox": [round(float(gx[k]), 2), round(float(gy[k]), 2), round(float(gw[k]), 2), round(float(gh[k]), 2)],
         "area": round(float(gw[k] * gh[k]), 2), "iscrowd": int(crowd[k])}
        for k in range(n_gt)
    ]  # fmt: skip
    gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    gt_path.write_text(json.dumps({"images": images, "annotations": anns, "categories": cats}))
    if lvis:
        for im in images:
            im.update(neg_category_ids=[], not_exhaustive_category_ids=[])
        for k, c in enumerate(cats):
            c["frequency"] = "rcf"[k % 3]
        for a in anns:
            del a["iscrowd"]
        (folder / "lvis_gt.json").write_text(
            json.dumps({"images": images, "annotations": anns, "categories": cats})
        )
    del anns
    perm = rng.permutation(X.shape[0])
    with dt_path.open("w") as fh:  # written in pieces: the list of dicts never exists at once
        fh.write("[")
        for s in range(0, perm.shape[0], 100_000):
            part = perm[s : s + 100_000]
            recs = [
                {"image_id": int(IMG[i]), "category_id": int(CAT[i]),
                 "bbox": [round(float(X[i]), 2), round(float(Y[i]), 2), round(float(W[i]), 2), round(float(H[i]), 2)],
                 "score": float(S[i])}
                for i in part
            ]  # fmt: skip
            fh.write(("," if s else "") + json.dumps(recs)[1:-1])
        fh.write("]")
    return gt_path, dt_path, n_gt, int(perm.shape[0])


CHILD = r"""
import contextlib, io, json, sys, time
t0 = time.perf_counter()
tool, gt, dt, root, workers = sys.argv[1:6]
tool = tool.removesuffix("@other")

def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

if __name__ == "__main__":
    sys.path.insert(0, root)
    import importlib
    try:  # (a checkout from before deteval.distributed became deteval.run, with --other)
        importlib.import_module("deteval.run.client")
        RUN = "deteval.run"
    except ImportError:
        RUN = "deteval.distributed"
    dask_client = importlib.import_module(RUN + ".client").dask_client
    worker_mb, idle_mb = [], []
    if tool in ("deteval-lvis", "deteval-lvis-dask"):
        from deteval.detection.lvis import evaluate_lvis
        idle_mb = [peak_mb()]
        with dask_client(int(workers) if tool.endswith("dask") else None) as client:
            if client is not None:
                client.run(lambda: __import__(RUN + ".lvis"))
                idle_mb = sorted(client.run(peak_mb).values())
            stats = list(evaluate_lvis(gt, dt, client=client).results.values())
            if client is not None:
                worker_mb = sorted(client.run(peak_mb).values())
    elif tool == "deteval":
        from deteval.detection.coco import evaluate_coco
        idle_mb = [peak_mb()]  # the interpreter with deteval imported, before reading anything
        stats = evaluate_coco(gt, dt).stats.tolist()
    elif tool == "deteval-dask":
        from deteval.detection.coco import evaluate_coco
        with dask_client(int(workers)) as client:
            client.run(lambda: __import__(RUN + ".coco"))
            idle_mb = sorted(client.run(peak_mb).values())  # each worker before the evaluation
            t1 = time.perf_counter()
            stats = evaluate_coco(gt, dt, client=client).stats.tolist()
            sys.stderr.write(f"evaluation on the running cluster: {time.perf_counter() - t1:.2f} s\n")
            worker_mb = sorted(client.run(peak_mb).values())
    else:
        mod = {"pycocotools": "pycocotools", "hotcoco": "hotcoco", "faster_coco_eval": "faster_coco_eval",
               "ultrafast-pycocotools": "ultrafast_pycocotools"}[tool]
        if tool == "pycocotools":
            from pycocotools.coco import COCO
            from pycocotools.cocoeval import COCOeval
        elif tool == "faster_coco_eval":
            from faster_coco_eval import COCO
            from faster_coco_eval import COCOeval_faster as COCOeval
        else:
            m = __import__(mod)
            COCO, COCOeval = m.COCO, m.COCOeval
        with contextlib.redirect_stdout(io.StringIO()):
            g = COCO(gt)
            d = g.loadRes(dt)
            E = COCOeval(g, d, "bbox")
            E.evaluate(); E.accumulate(); E.summarize()
        stats = [float(s) for s in E.stats]
    print(json.dumps({"stats": stats, "inner": time.perf_counter() - t0, "rss_mb": peak_mb(),
                      "worker_mb": worker_mb, "idle_mb": idle_mb}))
"""

MODULES = {
    "deteval": "numpy",
    "deteval-dask": "distributed",
    "deteval-lvis": "numpy",
    "deteval-lvis-dask": "distributed",
    "hotcoco": "hotcoco",
    "ultrafast-pycocotools": "ultrafast_pycocotools",
    "faster_coco_eval": "faster_coco_eval",
    "pycocotools": "pycocotools",
}


def run_tool(tool: str, gt: Path, dt: Path, workers: int, folder: Path, root: Path = ROOT) -> dict | None:
    script = folder / "child.py"  # a file, not -c: Dask's worker processes re-import the main module
    script.write_text(CHILD)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(script), tool, str(gt), str(dt), str(root), str(workers)],
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
    res["note"] = " ".join(line for line in out.stderr.splitlines() if line.startswith("evaluation on"))
    return res


def available(module: str) -> bool:
    cmd = [sys.executable, "-c", f"import {module}"]
    return subprocess.run(cmd, capture_output=True, check=False).returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=8000)
    ap.add_argument("--full", action="store_true", help="80k images (Objects365 val size, ~1.2M detections)")
    ap.add_argument("--workers", type=int, nargs="+", default=[2], help="Dask worker processes (each a run)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip", nargs="*", default=[], help="tools to skip, e.g. pycocotools")
    ap.add_argument(
        "--lvis", action="store_true", help="also LVIS (the set as LVIS ground truth), one process and Dask"
    )
    ap.add_argument(
        "--repeat", type=int, default=1, help="fresh runs per tool, interleaved (the fastest is shown)"
    )
    ap.add_argument(
        "--other",
        type=Path,
        metavar="PATH",
        help="also run every deteval tool from this checkout (e.g. /work/wt/prev) as '<tool>@other', interleaved",
    )
    args = ap.parse_args()
    n_images = 80_000 if args.full else args.images
    with tempfile.TemporaryDirectory(prefix="deteval_scale_") as tmp:
        t0 = time.perf_counter()
        gt, dt, n_gt, n_dt = generate(Path(tmp), n_images, args.seed, args.lvis)
        print(
            f"Objects365-like set: {n_images} images, 365 categories, {n_gt} ground truths, {n_dt} detections "
            f"({dt.stat().st_size / 2**20:.0f} MB results; generated in {time.perf_counter() - t0:.1f} s; "
            f"{os.cpu_count()} CPUs)"
        )
        runs = [("deteval", 0)] + [("deteval-dask", w) for w in args.workers]
        runs += [(t, 0) for t in ("hotcoco", "ultrafast-pycocotools", "faster_coco_eval", "pycocotools")]
        if args.lvis:
            runs += [("deteval-lvis", 0)] + [("deteval-lvis-dask", w) for w in args.workers]
        results: dict = {}
        runs = [(t, w) for t, w in runs if t not in args.skip and available(MODULES[t])]
        if args.other:
            runs += [(f"{t}@other", w) for t, w in runs if t.startswith("deteval")]
        for _ in range(max(1, args.repeat)):  # rounds over every tool: a slow spell hits them all alike
            for tool, workers in runs:
                gt_file = Path(tmp) / "lvis_gt.json" if "lvis" in tool else gt
                root = args.other if tool.endswith("@other") else ROOT
                r = run_tool(tool, gt_file, dt, workers, Path(tmp), root)
                name = tool if not workers else f"{tool} ({workers} workers)"
                if r is not None and (name not in results or r["wall"] < results[name]["wall"]):
                    results[name] = r
        print(f"{'tool':<28}{'wall s':>9}{'peak MB':>9}  {'worker peaks MB':<20}{'max |Δstat|':>12}")
        for name, r in results.items():
            base = results.get("deteval-lvis" if "lvis" in name else "deteval")
            diff = max(abs(a - b) for a, b in zip(r["stats"], base["stats"])) if base else float("nan")
            peaks = ", ".join(f"{m:.0f}" for m in r["worker_mb"]) or "-"
            print(f"{name:<28}{r['wall']:>9.2f}{r['rss_mb']:>9.0f}  {peaks:<20}{diff:>12.3g}")
            if r["note"]:
                print(f"{'':<28}({r['note']})")
        for family in ("deteval", "deteval-lvis"):
            base = results.get(family)
            if base is None:
                continue
            mine = {k: v for k, v in results.items() if k != family and ("lvis" in k) == ("lvis" in family)}
            for name, r in mine.items():
                print(f"{name}: {r['wall'] / base['wall']:.2f}x {family}'s one-process wall time")
            # memory follows the shard: a worker's peak above its idle start, against one process's
            one = base["rss_mb"] - base["idle_mb"][0]
            print(f"{family}, one process: peak {base['rss_mb']:.0f} MB, {one:.0f} MB above its start")
            for name, r in mine.items():
                if r["worker_mb"]:
                    above = [p - i for p, i in zip(r["worker_mb"], r["idle_mb"])]
                    print(
                        f"{name}: worker peaks {', '.join(f'{m:.0f}' for m in r['worker_mb'])} MB "
                        f"({max(r['worker_mb']) / base['rss_mb']:.2f}x one process), "
                        f"{', '.join(f'{m:.0f}' for m in above)} MB above their start "
                        f"({max(above) / one:.2f}x one process's)"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
