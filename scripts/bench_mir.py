"""Benchmark deteval.mir against mir_eval (run in the same process): pairwise, boundary detection, onsets.

Prints, per case, the time of each tool, the ratio and the peak memory (tracemalloc) of each. Writes
nothing. mir_eval's pairwise builds N×N agreement matrices, so it is measured up to a few thousand
frames; deteval alone is also timed on an hour at 100 frames per second (360 000 frames).

    python scripts/bench_mir.py
"""

from __future__ import annotations

import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from deteval.io.lab import build_segments
from deteval.mir import boundary_prf, onset_prf, pairwise_prf

try:
    import mir_eval
except ImportError:  # pragma: no cover
    mir_eval = None


def measure(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, float, Any]:
    """(best seconds, peak MiB, result)."""
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak, out


def segmentation(rng: np.random.Generator, duration: float, n: int, labels: str) -> tuple[np.ndarray, list]:
    cuts = np.sort(rng.uniform(0, duration, n - 1))
    edges = np.concatenate([[0.0], cuts, [duration]])
    return np.stack([edges[:-1], edges[1:]], 1), [labels[k] for k in rng.integers(0, len(labels), n)]


def row(name: str, ours: tuple, ref: tuple | None) -> None:
    if ref is None:
        print(f"{name:44s} deteval {ours[0] * 1e3:9.2f} ms {ours[1]:8.2f} MiB   (mir_eval: not run)")
        return
    print(
        f"{name:44s} deteval {ours[0] * 1e3:9.2f} ms {ours[1]:8.2f} MiB   mir_eval {ref[0] * 1e3:9.2f} ms "
        f"{ref[1]:8.2f} MiB   speed-up x{ref[0] / ours[0]:8.1f}"
    )


def main() -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    print("pairwise frame-label P/R/F")
    for duration, frame_size in ((180.0, 0.1), (300.0, 0.1), (300.0, 0.05)):
        ri, rl = segmentation(rng, duration, 12, "ABCD")
        ei, el = segmentation(rng, duration, 20, "abcde")
        ref, est = build_segments(ri[:, 0], ri[:, 1], rl), build_segments(ei[:, 0], ei[:, 1], el)
        ours = measure(partial(pairwise_prf, ref, est, frame_rate=1 / frame_size, grid="mir_eval"))
        theirs = None
        if mir_eval is not None:
            theirs = measure(
                partial(mir_eval.segment.pairwise, ri, rl, ei, el, frame_size=frame_size), repeat=1
            )
            assert (ours[2].precision, ours[2].recall, ours[2].f) == theirs[2]
        label = f"  {duration:.0f} s at {1 / frame_size:.0f} frames/s ({int(duration / frame_size)} frames)"
        row(label, ours, theirs)
    ri, rl = segmentation(rng, 3600.0, 60, "ABCDEFGH")
    ei, el = segmentation(rng, 3600.0, 90, "abcdefghij")
    ref, est = build_segments(ri[:, 0], ri[:, 1], rl), build_segments(ei[:, 0], ei[:, 1], el)
    row(
        "  3600 s at 100 frames/s (360000 frames)",
        measure(lambda: pairwise_prf(ref, est, frame_rate=100)),
        None,
    )

    print("boundary detection, one_to_one (mir_eval.segment.detection)")
    for n in (20, 200, 2000):
        duration = 10.0 * n
        ri, _ = segmentation(rng, duration, n, "A")
        ei, _ = segmentation(rng, duration, int(n * 1.3), "A")
        ref = build_segments(ri[:, 0], ri[:, 1], ["A"] * n)
        est = build_segments(ei[:, 0], ei[:, 1], ["A"] * len(ei))
        ours = measure(partial(boundary_prf, ref, est, 3.0, warn=False))
        theirs = None
        if mir_eval is not None:
            theirs = measure(partial(mir_eval.segment.detection, ri, ei, window=3.0))
            assert (ours[2].precision, ours[2].recall, ours[2].f) == theirs[2]
        row(f"  {n} reference segments, window 3 s", ours, theirs)

    print("onsets (mir_eval.onset.f_measure, window 0.05 s)")
    for n in (1000, 10000, 50000):
        ref_on = np.sort(rng.uniform(0, n / 4, n))
        est_on = np.sort(np.concatenate([ref_on + rng.normal(0, 0.03, n), rng.uniform(0, n / 4, n // 5)]))
        ours = measure(partial(onset_prf, ref_on, est_on))
        theirs = None
        if mir_eval is not None:
            theirs = measure(partial(mir_eval.onset.f_measure, ref_on, est_on), repeat=1)
            assert (ours[2].f, ours[2].precision, ours[2].recall) == theirs[2]
        row(f"  {n} reference onsets", ours, theirs)


if __name__ == "__main__":
    main()
