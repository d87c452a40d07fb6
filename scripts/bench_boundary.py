"""Benchmark deteval's Boundary IoU evaluation (``--iou-type boundary``) against the other tools' boundary modes.

    python scripts/bench_boundary.py                      # COCO-shaped masks, 500 images, dilation ratio 0.02
    python scripts/bench_boundary.py --images 1000 --repeat 3
    python scripts/bench_boundary.py --data synthetic --skip ultrafast

Peers, each run only when installed (none is a dependency of deteval): vernier (Rust; boundary-iou-api's
numbers, which it states bit-exact), faster-coco-eval (C++) and ultrafast-pycocotools (its own rounding of the
erosion depth: compared with deteval's ``ultrafast`` profile). The sets are those of
``scripts/bench_coco.py`` (``--data coco-shaped``: real COCO images' sizes and outlines, an RLE mask per
detection; ``synthetic``: drawn ellipses), written to a temporary directory. Each tool runs in a fresh Python
process (load the JSON, evaluate, summarize); the script prints wall time, CPU time, peak RSS, the ratio of
each time to deteval's and the largest difference of the 12 stats against the deteval run of the tool's
profile. Nothing is written to the tree.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_coco import ENV, available, generate_coco_shaped, generate_segm, use_bytecode_cache, warm_up

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import contextlib, io, json, resource, sys, time
t0 = time.perf_counter()
tool, gt, dt, ratio, root = sys.argv[1:6]
ratio = float(ratio)
sink = io.StringIO()
if tool.startswith("deteval"):
    sys.path.insert(0, root)
    profile = "ultrafast" if tool.endswith("@ultrafast") else "boundary-iou-api"
    if tool.startswith("deteval-cli"):
        from deteval.cli import main
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
            main(["coco", gt, dt, "--iou-type", "boundary", "--dilation-ratio", repr(ratio),
                  "--boundary-profile", profile, "--format", "json"])
        stats = json.loads(sink.getvalue())["stats"]
    else:
        from deteval.detection.coco import evaluate_coco
        params = {"dilation_ratio": ratio, "boundary_profile": profile}
        stats = evaluate_coco(gt, dt, iou_type="boundary", params=params).stats.tolist()
else:
    with contextlib.redirect_stdout(sink):
        if tool == "faster_coco_eval":
            from faster_coco_eval import COCO, COCOeval_faster
            g = COCO(gt); d = g.loadRes(dt)
            E = COCOeval_faster(g, d, "boundary", boundary_dilation_ratio=ratio)
        elif tool == "ultrafast":
            from ultrafast_pycocotools import COCO, COCOeval
            g = COCO(gt); d = g.loadRes(dt)
            E = COCOeval(g, d, "boundary", boundary_dilation_ratio=ratio)
        else:
            from pycocotools.coco import COCO
            from vernier import COCOeval
            g = COCO(gt); d = g.loadRes(dt)
            for a in d.dataset["annotations"]:  # (vernier wants lists; loadRes leaves arrays)
                a["bbox"] = [float(v) for v in a["bbox"]]
            E = COCOeval(g, d, "boundary", dilation_ratio=ratio)
        E.evaluate(); E.accumulate(); E.summarize()
    stats = [float(s) for s in E.stats]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
try:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            rss = int(line.split()[1]) / 1024
except OSError:
    pass
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"stats": stats, "inner": time.perf_counter() - t0, "rss_mb": rss, "child_mb": child}))
"""

#: (tool, module it needs, the deteval run whose stats it should equal)
TOOLS = (
    ("deteval", "numpy", "deteval"),
    ("deteval-cli", "numpy", "deteval"),
    ("deteval@ultrafast", "numpy", "deteval@ultrafast"),
    ("vernier", "vernier", "deteval"),
    ("faster_coco_eval", "faster_coco_eval", "deteval"),
    ("ultrafast", "ultrafast_pycocotools", "deteval@ultrafast"),
)
PEERS = ("vernier", "faster_coco_eval", "ultrafast")


def run_tool(tool: str, gt: Path, dt: Path, ratio: float) -> dict | None:
    """One fresh process: wall time, CPU time of the child, peak RSS and the stats."""
    before = os.times()
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, tool, str(gt), str(dt), repr(ratio), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        env=ENV,
    )
    wall = time.perf_counter() - t0
    after = os.times()
    if out.returncode != 0:
        print(f"{tool}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall"] = wall
    res["cpu"] = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=500)
    ap.add_argument("--data", choices=["coco-shaped", "synthetic"], default="coco-shaped")
    ap.add_argument("--ratio", type=float, default=0.02, help="dilation ratio (default 0.02)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool, interleaved; the fastest is kept")
    ap.add_argument(
        "--skip", nargs="*", default=[], help="tools to skip (vernier, faster_coco_eval, ultrafast)"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="deteval_bench_boundary_") as tmp:
        use_bytecode_cache(Path(tmp) / "pycache")
        warm_up(ROOT)
        make = partial(generate_coco_shaped, masks=True) if args.data == "coco-shaped" else generate_segm
        t0 = time.perf_counter()
        gt, dt, n_gt, n_dt = make(Path(tmp), args.images, args.seed)
        tools = [(t, ref) for t, module, ref in TOOLS if t not in args.skip and available(module)]
        print(
            f"{args.data}: {args.images} images, {n_gt} ground truths, {n_dt} mask detections "
            f"(generated in {time.perf_counter() - t0:.1f} s); dilation ratio {args.ratio}; "
            f"tools: {', '.join(t for t, _ in tools)} ({os.cpu_count()} CPUs)"
        )
        runs: dict[str, list[dict]] = {t: [] for t, _ in tools}
        for _ in range(args.repeat):
            for tool, _ in tools:
                r = run_tool(tool, gt, dt, args.ratio)
                if r is not None:
                    runs[tool].append(r)
        best = {t: min(rs, key=lambda r: r["wall"]) for t, rs in runs.items() if rs}
        d = best.get("deteval")
        print(
            f"{'tool':<20}{'wall s':>8}{'cpu s':>8}{'in-proc s':>11}{'peak RSS MB':>13}{'wall/deteval':>14}{'max |Δstat|':>13}"
        )
        for tool, ref in tools:
            if tool not in best:
                continue
            r, want = best[tool], best.get(ref)
            diff = max(abs(a - b) for a, b in zip(r["stats"], want["stats"])) if want else float("nan")
            ratio = r["wall"] / d["wall"] if d else float("nan")
            print(
                f"{tool:<20}{r['wall']:>8.2f}{r['cpu']:>8.2f}{r['inner']:>11.2f}{r['rss_mb']:>13.0f}"
                f"{ratio:>14.2f}{diff:>13.3g}   (vs {ref})"
            )
        peers = [t for t in PEERS if t in best]
        if d and peers:
            fastest = min(peers, key=lambda t: best[t]["wall"])
            f = best[fastest]
            for how in ("deteval", "deteval-cli"):
                if how in best:
                    m = best[how]
                    print(
                        f"{how} / fastest peer ({fastest}): wall {m['wall'] / f['wall']:.2f}x, "
                        f"cpu {m['cpu'] / f['cpu']:.2f}x, peak RSS {m['rss_mb'] / f['rss_mb']:.2f}x"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
