"""Benchmark `deteval coco --plots` on the 80-category val2014 demo: plotting time next to the evaluation.

    python scripts/bench_plots.py             # the demo (100 images, 80 categories), 3 runs each
    python scripts/bench_plots.py --classes 1000 --runs 1   # a synthetic 1,000-class result, figures only

Each run is a fresh Python process (imports included, as a user's command line pays them): the evaluation
alone (`deteval coco ... --quiet`) and the same with `--plots DIR`. The script prints the median wall time
of each, the time the figures add, their ratio and the peak RSS of each process. The issue's bar: all
figures for the demo within a few seconds (+3 s). Figures go to a temporary folder; nothing is written to
the tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAL = ROOT / "tests" / "data" / "coco" / "coco_val2014_100"
GT = VAL / "instances_val2014_100.json"
RES = VAL / "instances_val2014_fakebbox100_results.json"

_CHILD = r"""
import resource, sys, time
t = time.perf_counter()
from deteval.cli import main
code = main(sys.argv[1:])
wall = time.perf_counter() - t
usage = resource.getrusage(resource.RUSAGE_SELF)
print(f"@@ {code} {wall:.6f} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime:.6f}", file=sys.stderr)
"""


def run(args: list[str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MB, CPU seconds) of one fresh `deteval` process. CPU time is the steadier
    number on a busy machine."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, cwd=ROOT, env=os.environ
    )
    wall = time.perf_counter() - t
    line = next(x for x in out.stderr.splitlines() if x.startswith("@@ "))
    code, _, peak_kb, cpu = line.split()[1:]
    if code != "0":
        raise SystemExit(f"deteval failed: {out.stderr}")
    return wall, int(peak_kb) / 1024, float(cpu)


def synthetic_result(folder: Path, n_classes: int) -> Path:
    """A saved VOC-style result with ``n_classes`` PR curves (for `deteval report --plots`)."""
    import numpy as np

    rng = np.random.default_rng(0)
    per_class, curves = {}, {}
    for k in range(n_classes):
        n = int(rng.integers(20, 400))
        tp = rng.random(n) < rng.uniform(0.2, 0.9)
        ctp = np.cumsum(tp)
        npos = max(int(ctp[-1]) + int(rng.integers(0, 20)), 1)
        rec, prec = ctp / npos, ctp / np.arange(1, n + 1)
        name = f"class {k:04d}"
        per_class[name] = {"ap": float(np.mean(np.maximum.accumulate(prec[::-1])[::-1]) * rec[-1])}
        curves[name] = {"recall": rec.tolist(), "precision": prec.tolist()}
    doc = {"protocol": "voc", "metric": "voc2010", "iou_threshold": 0.5, "map": 0.5}
    doc |= {"per_class": per_class, "warnings": [], "curves": curves}
    path = folder / "synthetic.json"
    path.write_text(json.dumps(doc))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--classes", type=int, default=None, help="a synthetic result with this many classes")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if opts.classes:
            saved = synthetic_result(folder, opts.classes)
            base = ["report", str(saved), "--quiet"]
            what = f"synthetic result, {opts.classes} classes (deteval report)"
        else:
            base = ["coco", str(GT), str(RES), "--quiet"]
            what = "val2014 demo, 80 categories (deteval coco)"
        plain = [run(base) for _ in range(opts.runs)]
        plotted = [run([*base, "--plots", str(folder / f"plots{i}")]) for i in range(opts.runs)]
        files = sorted(p.name for p in (folder / "plots0").iterdir())
    t0, t1 = (statistics.median(r[0] for r in runs) for runs in (plain, plotted))
    c0, c1 = (statistics.median(r[2] for r in runs) for runs in (plain, plotted))
    print(what)
    print(f"{'':28}{'median wall':>12}{'median CPU':>12}{'peak RSS':>10}")
    for label, runs, t, c in (("without --plots", plain, t0, c0), ("with --plots", plotted, t1, c1)):
        print(f"{label:28}{t:>11.2f}s{c:>11.2f}s{max(r[1] for r in runs):>8.0f}MB")
    print(f"figures add {t1 - t0:.2f}s wall, {c1 - c0:.2f}s CPU ({t1 / t0:.1f}x the evaluation's wall time)")
    print(f"{len(files)} files: {', '.join(files)}")


if __name__ == "__main__":
    main()
