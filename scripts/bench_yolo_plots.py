"""Time ``deteval yolo --plots``' six figures (yolo val's) for a split of many classes (80 by default).

Draws the figures from synthetic curves and a synthetic confusion matrix (the drawing is what is timed, not the
evaluation) into a temporary folder and prints the wall and CPU time of each repeat (CPU time is the steadier
figure on a shared machine). Run on an idle machine:
``python scripts/bench_yolo_plots.py [--classes 80] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from deteval.analysis.confusion import Confusion
from deteval.report.yolo_plots import YoloCurves, write_yolo_val_plots


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--classes", type=int, default=80)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    k = args.classes
    x = np.linspace(0, 1, 1000)
    p = np.clip(x[None, :] + rng.uniform(0, 0.3, (k, 1)), 0, 1)
    r = np.clip(1 - x[None, :] ** rng.uniform(0.5, 2, (k, 1)), 0, 1)
    f1 = 2 * p * r / (p + r + 1e-16)
    curves = YoloCurves([f"class_{i}" for i in range(k)], rng.uniform(0, 1, k), p, r, f1, 1 - x[None, :] * r)
    matrix = rng.integers(0, 20, (k + 1, k + 1))
    confusion = Confusion([*curves.names, "background"], matrix, 0.5, 0.25, 0)
    write_yolo_val_plots(tempfile.mkdtemp(), curves, confusion)  # warm-up: matplotlib's imports and fonts
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as out:
            t, c = time.perf_counter(), time.process_time()
            write_yolo_val_plots(out, curves, confusion)
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            print(f"{k} classes: six figures in {wall:.2f} s wall, {cpu:.2f} s CPU (target: 2 s)")


if __name__ == "__main__":
    main()
