"""Benchmark deteval's LVIS evaluation against lvis-api 0.5.3 (and hotcoco's LVIS mode when installed).

    python scripts/bench_lvis.py                 # 1,000 images x 1,203 categories x 300 dets (~300k dets)
    python scripts/bench_lvis.py --images 5000
    python scripts/bench_lvis.py --full          # LVIS v1 val's shape: 19,809 images, ~6M detections
    python scripts/bench_lvis.py --skip lvis     # deteval (and hotcoco) only
    python scripts/bench_lvis.py --data DIR      # DIR's lvis_gt.json, lvis_dt.json (a set made before)
    python scripts/bench_lvis.py --data DIR --skip deteval hotcoco --cap-gb 15 --nice 10   # lvis-api alone

A seeded synthetic set of LVIS v1 val's shape is written to a temporary directory: 1,203 categories with
LVIS's r/c/f split (337/461/405) and a long-tailed frequency, ~12 ground truths per image, per image
``neg_category_ids`` and ``not_exhaustive_category_ids``, and 300 detections per image (jittered hits,
wrong classes, background). Each tool then runs in a fresh Python process (load, evaluate, summarize); the
script prints wall time, CPU time (user + sys, children included), peak RSS, the ratios and the largest
difference of the 13 results against lvis-api; a tool that fails (e.g. a MemoryError under ``--cap-gb``) is
reported with the time and memory it had used.
The default size keeps every process well under 4 GB; ``--full`` needs far more for lvis-api (its Python
dicts), and deteval stays bounded (matching in shards). Nothing is written to the tree.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N_CATS = 1203
FULL_IMAGES = 19_809


def generate(folder: Path, n_images: int, dets_per_image: int, seed: int = 0) -> tuple[Path, Path, int, int]:
    rng = np.random.default_rng(seed)
    freq = np.array(["r"] * 337 + ["c"] * 461 + ["f"] * 405)
    rng.shuffle(freq)
    weight = np.where(freq == "f", 30.0, np.where(freq == "c", 3.0, 0.3)) * rng.uniform(0.5, 1.5, N_CATS)
    weight /= weight.sum()
    cats = [{"id": i + 1, "name": f"cat_{i + 1}", "frequency": str(freq[i])} for i in range(N_CATS)]
    images, anns, dets_chunks = [], [], []
    n_dt = 0
    ann_id = 1
    for im in range(1, n_images + 1):
        n = int(rng.poisson(12.3))
        c = rng.choice(N_CATS, n, p=weight) + 1
        side = np.exp(rng.normal(3.6, 1.0, n)).clip(2, 500)
        w = (side * np.exp(rng.normal(0, 0.3, n))).clip(1, 630)
        h = (side * np.exp(rng.normal(0, 0.3, n))).clip(1, 470)
        x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
        present = np.unique(c)
        others = np.setdiff1d(np.arange(1, N_CATS + 1), present)
        neg = np.sort(rng.choice(others, min(len(others), int(rng.integers(5, 40))), replace=False))
        nel = present[rng.random(present.shape[0]) < 0.1]
        images.append(
            {
                "id": im,
                "height": 480,
                "width": 640,
                "neg_category_ids": neg.tolist(),
                "not_exhaustive_category_ids": nel.tolist(),
            }
        )
        for j in range(n):
            b = [round(float(x[j]), 2), round(float(y[j]), 2), round(float(w[j]), 2), round(float(h[j]), 2)]
            anns.append(
                {
                    "id": ann_id,
                    "image_id": im,
                    "category_id": int(c[j]),
                    "bbox": b,
                    "area": round(b[2] * b[3], 2),
                }
            )
            ann_id += 1
        # detections: two jittered hits per object (often the right class), the rest anywhere
        k_hit = min(2 * n, dets_per_image)
        src = np.repeat(np.arange(n), 2)[:k_hit]
        dc = (
            np.where(rng.random(k_hit) < 0.8, c[src], rng.choice(N_CATS, k_hit) + 1)
            if n
            else np.zeros(0, int)
        )
        dx = x[src] + rng.normal(0, 0.1, k_hit) * w[src]
        dy = y[src] + rng.normal(0, 0.1, k_hit) * h[src]
        dw = w[src] * np.exp(rng.normal(0, 0.15, k_hit))
        dh = h[src] * np.exp(rng.normal(0, 0.15, k_hit))
        k_bg = dets_per_image - k_hit
        pool = np.concatenate([present, neg, rng.choice(N_CATS, 20) + 1])
        bc = rng.choice(pool, k_bg)
        bw, bh = rng.uniform(5, 300, k_bg), rng.uniform(5, 300, k_bg)
        bx, by = rng.uniform(0, 640 - bw), rng.uniform(0, 480 - bh)
        score = np.round(np.r_[rng.uniform(0.3, 1.0, k_hit), rng.uniform(0.0, 0.7, k_bg)], 4)
        allc = np.r_[dc, bc].astype(int)
        box = np.round(np.stack([np.r_[dx, bx], np.r_[dy, by], np.r_[dw, bw], np.r_[dh, bh]], axis=1), 2)
        dets_chunks.append(
            ",".join(
                f'{{"image_id":{im},"category_id":{int(allc[t])},"bbox":[{box[t, 0]},{box[t, 1]},{box[t, 2]},'
                f'{box[t, 3]}],"score":{score[t]}}}'
                for t in range(allc.shape[0])
            )
        )
        n_dt += allc.shape[0]
    gt_path, dt_path = folder / "lvis_gt.json", folder / "lvis_dt.json"
    gt_path.write_text(json.dumps({"images": images, "categories": cats, "annotations": anns}))
    with open(dt_path, "w") as f:
        f.write("[")
        f.write(",".join(ch for ch in dets_chunks if ch))
        f.write("]")
    return gt_path, dt_path, len(anns), n_dt


CHILD = r"""
import contextlib, io, json, logging, resource, sys, time, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
t0 = time.perf_counter()
tool, gt, dt = sys.argv[1:4]
sink = io.StringIO()
if tool in ("deteval", "deteval@other"):
    sys.path.insert(0, sys.argv[4])
    from deteval.detection.lvis import evaluate_lvis
    results = evaluate_lvis(gt, dt).results
elif tool == "lvis":
    import numpy as np
    np.float = float  # lvis-api 0.5.3 predates numpy 1.24
    from lvis import LVISEval
    with contextlib.redirect_stdout(sink):
        E = LVISEval(gt, dt, "bbox")
        E.run()
    results = {k: float(v) for k, v in E.results.items()}
else:
    import hotcoco
    with contextlib.redirect_stdout(sink):
        g = hotcoco.LVIS(gt)
        E = hotcoco.LVISEval(g, hotcoco.LVISResults(g, dt), "bbox")
        E.run()
    results = {k: float(v) for k, v in E.get_results().items()}
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
try:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            rss = int(line.split()[1]) / 1024
except OSError:
    pass
print(json.dumps({"results": results, "inner": time.perf_counter() - t0, "rss_mb": rss}))
"""


def run_tool(
    tool: str, gt: Path, dt: Path, root: Path = ROOT, cap_gb: float | None = None, nice: int = 0
) -> dict | None:
    """Run ``tool`` in a fresh process; wall time, CPU time (user + sys, its reaped children included) and peak
    RSS come from the kernel (``wait4``), so a process that fails (a MemoryError under ``cap_gb``, the
    address-space limit) still reports how long it ran and how much memory it held."""

    def limits() -> None:
        if nice:
            os.nice(nice)
        if cap_gb is not None:
            cap = int(cap_gb * 1e9)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, tool, str(gt), str(dt), str(root)],
            stdout=out_f,
            stderr=err_f,
            preexec_fn=limits if (cap_gb is not None or nice) else None,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        err_f.seek(0)
        stdout, stderr = out_f.read().decode(errors="replace"), err_f.read().decode(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    rss = usage.ru_maxrss / 1024  # (KiB on Linux)
    if proc.returncode != 0:
        print(
            f"{tool}: failed (exit {proc.returncode}) after {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS "
            f"{rss:.0f} MB\n{stderr[-2000:]}",
            file=sys.stderr,
        )
        return None
    res = json.loads(stdout.strip().splitlines()[-1])
    res.update(wall=wall, cpu=cpu)
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
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--full", action="store_true", help=f"LVIS v1 val's {FULL_IMAGES} images")
    ap.add_argument("--dets-per-image", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip", nargs="*", default=[], help="tools to skip (lvis, hotcoco)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool, interleaved (the fastest is shown)")
    ap.add_argument(
        "--other", type=Path, metavar="PATH", help="also run the deteval of this checkout as 'deteval@other'"
    )
    ap.add_argument(
        "--cap-gb",
        type=float,
        metavar="GB",
        help="address-space limit of each tool's process (lvis-api at full size may need more than the machine)",
    )
    ap.add_argument("--nice", type=int, default=0, help="niceness of each tool's process")
    ap.add_argument(
        "--data",
        type=Path,
        metavar="DIR",
        help="time DIR's lvis_gt.json and lvis_dt.json instead of a new set",
    )
    args = ap.parse_args()
    n_images = FULL_IMAGES if args.full else args.images
    with tempfile.TemporaryDirectory(prefix="deteval_bench_lvis_") as tmp:
        t0 = time.perf_counter()
        if args.data:
            gt, dt = args.data / "lvis_gt.json", args.data / "lvis_dt.json"
            print(f"LVIS set of {args.data} ({os.cpu_count()} CPUs)")
        else:
            gt, dt, n_gt, n_dt = generate(Path(tmp), n_images, args.dets_per_image, args.seed)
            print(
                f"synthetic LVIS set: {n_images} images, {N_CATS} categories, {n_gt} ground truths, "
                f"{n_dt} detections (generated in {time.perf_counter() - t0:.1f} s; {os.cpu_count()} CPUs)"
            )
        results: dict[str, dict] = {}
        walls: dict[str, list[float]] = {}
        tools = [("deteval", "numpy")] + ([("deteval@other", "numpy")] if args.other else [])
        tools = [(t, m) for t, m in tools + [("lvis", "lvis"), ("hotcoco", "hotcoco")] if t not in args.skip]
        tools = [(t, m) for t, m in tools if available(m)]
        for _ in range(max(1, args.repeat)):  # rounds over every tool: a slow spell hits them all alike
            for tool, _module in tools:
                r = run_tool(
                    tool, gt, dt, args.other if tool == "deteval@other" else ROOT, args.cap_gb, args.nice
                )
                if r is not None:
                    walls.setdefault(tool, []).append(r["wall"])
                    if tool not in results or r["wall"] < results[tool]["wall"]:
                        results[tool] = r
        ref = results.get("lvis")
        print(
            f"{'tool':<10}{'wall s':>9}{'CPU s':>9}{'in-process s':>14}{'peak RSS MB':>13}{'max |Δresult|':>16}"
        )
        for tool, r in results.items():
            if ref:
                common = [k for k in ref["results"] if k in r["results"]]
                diff = (
                    max(abs(r["results"][k] - ref["results"][k]) for k in common) if common else float("nan")
                )
            else:
                diff = float("nan")
            print(
                f"{tool:<10}{r['wall']:>9.2f}{r['cpu']:>9.2f}{r['inner']:>14.2f}{r['rss_mb']:>13.0f}{diff:>16.3g}"
            )
        for tool, w in walls.items():
            print(f"{tool}: median wall {float(np.median(w)):.2f} s over {len(w)} runs")
        d = results.get("deteval")
        if d and "hotcoco" in results:
            h = results["hotcoco"]["results"]
            common = [k for k in d["results"] if k in h]
            if common:
                print(
                    f"deteval vs hotcoco: max |Δresult| {max(abs(d['results'][k] - h[k]) for k in common):.3g}"
                )
        if d:
            for tool in ("lvis", "hotcoco"):
                if tool in results:
                    print(
                        f"deteval vs {tool}: {results[tool]['wall'] / d['wall']:.1f}x faster end to end, "
                        f"{results[tool]['cpu'] / d['cpu']:.1f}x less CPU time, "
                        f"{results[tool]['rss_mb'] / d['rss_mb']:.1f}x less peak memory"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
