"""Cost of bootstrap intervals on the COCO benchmark case, against one evaluation (issue 16, item 4).

    python scripts/bench_bootstrap.py                   # 5k images (scripts/bench_coco.py's set), 1000 resamples
    python scripts/bench_bootstrap.py --resamples 20    # time 20 resamples, extrapolate to 1000
    python scripts/bench_bootstrap.py --images 1000
    python scripts/bench_bootstrap.py --resamples 10 --randomization   # also the randomization test

Each side runs in a fresh Python process on the same files: (1) ``evaluate_coco`` once (load, match,
accumulate, summarize); (2) ``CocoUnits`` (load, match once, one unweighted accumulation that keeps the sort and the outcome columns
every resample reuses) and a percentile bootstrap of the 12 stats and
every category's AP with B resamples, each resample one weighted accumulation. The script prints both wall
times, peak RSS, the measured time per resample and the ratio of 1,000 resamples to one evaluation (the
target of issue 16 is <= 10x). Nothing is written to the tree.
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
sys.path.insert(0, str(ROOT / "scripts"))

from bench_coco import generate  # noqa: E402  (the one generator of the COCO benchmark case)

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[4])
mode, gt, dt, b = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[5])
t0 = time.perf_counter()
if mode == "evaluate":
    from deteval.detection.coco import evaluate_coco
    evaluate_coco(gt, dt)
    t_match = t_boot = 0.0
elif mode == "bootstrap":
    from deteval.stats.bootstrap import bootstrap
    from deteval.stats.coco import CocoUnits
    import numpy as np
    units = CocoUnits(gt, [dt])
    metric = units.metric(0)
    metric(np.ones((1, units.n_units), dtype=np.int64))  # one-time: the sort and outcome columns it keeps
    t_match = time.perf_counter() - t0
    t1 = time.perf_counter()
    bootstrap(metric, units.n_units, n_resamples=b, seed=0)
    t_boot = time.perf_counter() - t1
else:  # randomization against a second system: dt with every score perturbed
    import numpy as np
    from deteval.stats.coco import CocoUnits
    from deteval.stats.tests import randomization_test
    rows = json.load(open(dt))
    rng = np.random.default_rng(1)
    other = [dict(r, score=float(r["score"]) * float(u)) for r, u in zip(rows, rng.uniform(0.8, 1.2, len(rows)))]
    units = CocoUnits(gt, [dt, other])
    mix = units.mix(0, 1)
    ones = np.ones((1, units.n_units), dtype=np.int64)
    mix(ones, 0 * ones)  # one-time: the sort and outcome columns it keeps
    t_match = time.perf_counter() - t0
    t1 = time.perf_counter()
    randomization_test(mix, units.n_units, n_rounds=b, seed=0)
    t_boot = time.perf_counter() - t1
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"inner": time.perf_counter() - t0, "match": t_match, "boot": t_boot, "rss_mb": rss}))
"""


def run(mode: str, gt: Path, dt: Path, b: int) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(gt), str(dt), str(ROOT), str(b)],
        capture_output=True,
        text=True,
        check=True,
    )
    res: dict = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall"] = time.perf_counter() - t0
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--resamples", type=int, default=1000, help="resamples to time (the ratio is for 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--randomization", action="store_true", help="also time the randomization test")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="deteval_bench_boot_") as tmp:
        gt, dt, n_gt, n_dt = generate(Path(tmp), args.images, args.seed)
        print(f"synthetic set: {args.images} images, 80 categories, {n_gt} ground truths, {n_dt} detections")
        one = run("evaluate", gt, dt, 0)
        boot = run("bootstrap", gt, dt, args.resamples)
        per = boot["boot"] / args.resamples
        print(f"one evaluation:        {one['wall']:8.2f} s wall, {one['rss_mb']:6.0f} MB peak")
        print(
            f"bootstrap ({args.resamples} resamples): {boot['wall']:8.2f} s wall (load, match, first accumulation "
            f"{boot['match']:.2f} s, resamples {boot['boot']:.2f} s), {boot['rss_mb']:6.0f} MB peak"
        )
        total_1000 = boot["match"] + 1000 * per
        print(f"per resample: {per:.3f} s; 1000 resamples ~ {total_1000:.1f} s")
        print(f"ratio (1000 resamples / one evaluation): {total_1000 / one['wall']:.1f}x (target <= 10x)")
        if args.randomization:
            rnd = run("randomization", gt, dt, args.resamples)
            per_r = rnd["boot"] / args.resamples
            total_r = rnd["match"] + 1000 * per_r
            print(
                f"randomization ({args.resamples} rounds, two systems): {rnd['wall']:.2f} s wall, "
                f"{per_r:.3f} s per round, {rnd['rss_mb']:.0f} MB peak; 1000 rounds ~ {total_r:.1f} s = "
                f"{total_r / one['wall']:.1f}x one evaluation"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
