"""Benchmark deteval's TIDE decomposition (--errors-compat tide) against tidecv 1.0.1, end to end.

    python scripts/bench_tide.py                # 1k images, 80 categories, ~7k gts, ~61k detections
    python scripts/bench_tide.py --images 5000

The seeded synthetic COCO set of bench_coco.py is written to a temporary directory; each tool runs in a fresh
Python process (load JSON, decompose), and the script prints wall time, peak RSS, the ratios and the largest
difference of the AP and the eight dAPs against tidecv (0 means bit for bit). Nothing is written to the tree.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_coco import generate  # noqa: E402

CHILD = r"""
import contextlib, io, json, sys, time
t0 = time.perf_counter()
tool, gt, dt = sys.argv[1:4]
if tool == "deteval":
    sys.path.insert(0, sys.argv[4])
    from deteval.analysis.inputs import coco_errors
    from deteval.io.coco import load_coco_gt, load_coco_results
    g = load_coco_gt(gt)
    e = coco_errors(g, load_coco_results(dt, g), compat="tide")
    values = [e.ap, *e.main.values(), e.special["fp"], e.special["fn"]]
else:
    from tidecv import TIDE, datasets
    with contextlib.redirect_stdout(io.StringIO()):
        t = TIDE()
        run = t.evaluate(datasets.COCO(gt), datasets.COCOResult(dt), mode=TIDE.BOX)
        main = next(iter(t.get_main_errors().values()))
        special = next(iter(t.get_special_errors().values()))
    values = [run.ap, *(main[k] for k in ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")),
              special["FalsePos"], special["FalseNeg"]]
rss = 0.0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        rss = int(line.split()[1]) / 1024
print(json.dumps({"values": [float(v) for v in values], "inner": time.perf_counter() - t0, "rss_mb": rss}))
"""


def run_tool(tool: str, gt: Path, dt: Path) -> dict | None:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, tool, str(gt), str(dt), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        print(f"{tool}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall"] = time.perf_counter() - t0
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        gt, dt, n_gt, n_dt = generate(Path(tmp), args.images)
        print(f"{args.images} images, {n_gt} ground truths, {n_dt} detections")
        res = {tool: run_tool(tool, gt, dt) for tool in ("deteval", "tidecv")}
    ours, ref = res["deteval"], res["tidecv"]
    for tool, r in res.items():
        if r:
            print(f"{tool:8s} wall {r['wall']:7.2f} s   peak RSS {r['rss_mb']:7.0f} MB")
    if ours and ref:
        print(
            f"tidecv / deteval: time {ref['wall'] / ours['wall']:.1f}x, memory {ref['rss_mb'] / ours['rss_mb']:.1f}x"
        )
        diff = max(abs(a - b) for a, b in zip(ours["values"], ref["values"]))
        print(f"largest difference of AP and the 8 dAPs (tidecv's percent units): {diff:.3g}")


if __name__ == "__main__":
    main()
