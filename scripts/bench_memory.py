"""Peak memory of deteval's matchers on dense inputs, next to a plain one-detection-at-a-time loop.

    python scripts/bench_memory.py                    # every case at its default size
    python scripts/bench_memory.py --case coco_group --scale 2.5   # one COCO group of 50k x 50k

Cases (seeded synthetic data, built inside each process):

* ``voc_dense``: one VOC image with 10k objects and 10k detections of one class (all 10^8 pairs are
  same-image, same-class: unchunked, deteval needed 13 GB);
* ``voc_sku``: SKU-110K-like, 1000 images x 150 objects x 300 detections (unchunked: 6 GB);
* ``coco_group``: one COCO (image, category) group of 20k ground truths x 20k detections with maxDets
  ``[1, 10, 20000]`` (``--scale 2.5``: the 50k x 50k of issue 12, which ended in a MemoryError at 19 GB).

Each implementation runs in a fresh Python process; the peak resident memory is that process's
``ru_maxrss`` (so it includes the interpreter, numpy and the input arrays: the "baseline" row is a process
that only imports deteval and builds the input). The plain loop is the reference rule written as a loop over detections, each
against the vector of its image's boxes, so its memory is O(input). The script prints peak memory, wall time,
the ratios, and whether both found the same true positives. Nothing is written to the tree.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CASES = ("voc_dense", "voc_sku", "coco_group")
IMPLS = ("baseline", "deteval", "loop")


def _boxes(rng: np.random.Generator, n: int, extent: float) -> np.ndarray:
    """n xyxy boxes of side 20..60 in an extent x extent image."""
    wh = rng.uniform(20, 60, (n, 2))
    xy = rng.uniform(0, extent - 60, (n, 2))
    return np.hstack([xy, xy + wh])


def _detections(rng: np.random.Generator, gt: np.ndarray, n: int, extent: float) -> np.ndarray:
    """Two thirds jittered copies of ground-truth boxes (hits and duplicates), one third background."""
    k = (2 * n) // 3
    src = gt[rng.integers(0, gt.shape[0], k)]
    hit = src + rng.normal(0, 4, src.shape)
    hit[:, 2:] = np.maximum(hit[:, 2:], hit[:, :2])
    return np.vstack([hit, _boxes(rng, n - k, extent)])


def voc_data(case: str, scale: float) -> tuple:
    rng = np.random.default_rng(0)
    if case == "voc_dense":
        n_img, n_gt, n_dt, extent = 1, int(10_000 * scale), int(10_000 * scale), 6000.0
    else:
        n_img, n_gt, n_dt, extent = int(1000 * scale), 150, 300, 1500.0
    g_img, g_box, d_img, d_box = [], [], [], []
    for i in range(n_img):
        g = _boxes(rng, n_gt, extent)
        g_img.append(np.full(n_gt, i))
        g_box.append(g)
        d_img.append(np.full(n_dt, i))
        d_box.append(_detections(rng, g, n_dt, extent))
    gi, gb, di, db = (np.concatenate(v) for v in (g_img, g_box, d_img, d_box))
    diff = rng.random(gi.shape[0]) < 0.05
    score = np.round(rng.random(di.shape[0]), 3)  # ties
    return gi, gb, diff, di, db, score


def voc_deteval(data: tuple) -> list[int]:
    from deteval.detection.voc import VOCDetections, VOCGroundTruth
    from deteval.run.voc import evaluate_voc

    gi, gb, diff, di, db, score = data
    n = int(max(gi.max(), di.max())) + 1
    gt = VOCGroundTruth.from_arrays(gi, np.zeros_like(gi), gb, diff, images=n, classes=1)
    dt = VOCDetections.from_arrays(di, np.zeros_like(di), db, score, images=n, classes=1)
    row = evaluate_voc(gt, dt).per_class["0"]
    return [int(row["tp"]), int(row["fp"])]


def voc_loop(data: tuple) -> list[int]:
    """VOCevaldet.m as a loop: detections by descending score (stable), each against its image's boxes."""
    gi, gb, diff, di, db, score = data
    order = np.argsort(-score, kind="stable")
    by_img = {int(i): np.flatnonzero(gi == i) for i in np.unique(gi)}
    taken = np.zeros(gi.shape[0], dtype=bool)
    tp = fp = 0
    for d in order.tolist():
        idx = by_img.get(int(di[d]))
        if idx is None:
            fp += 1
            continue
        b, g = db[d], gb[idx]
        iw = np.minimum(b[2], g[:, 2]) - np.maximum(b[0], g[:, 0]) + 1
        ih = np.minimum(b[3], g[:, 3]) - np.maximum(b[1], g[:, 1]) + 1
        inter = iw * ih
        union = (
            (b[2] - b[0] + 1) * (b[3] - b[1] + 1) + (g[:, 2] - g[:, 0] + 1) * (g[:, 3] - g[:, 1] + 1) - inter
        )
        ov = np.where((iw > 0) & (ih > 0), inter / union, -np.inf)
        j = int(np.argmax(ov))
        if ov[j] >= 0.5:
            if diff[idx[j]]:
                continue
            if not taken[idx[j]]:
                taken[idx[j]] = True
                tp += 1
            else:
                fp += 1
        else:
            fp += 1
    return [tp, fp]


def coco_data(scale: float) -> tuple:
    rng = np.random.default_rng(1)
    n = int(20_000 * scale)
    extent = 40.0 * np.sqrt(n)  # about one object per 40x40 cell, as in dense retail images
    g = _boxes(rng, n, extent)
    d = _detections(rng, g, n, extent)
    score = rng.random(n)
    return g, d, score, float(extent)


THRS = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True)


def coco_deteval(data: tuple) -> list[int]:
    from deteval.detection.coco import evaluate_coco
    from deteval.detection.coco_params import CocoParams

    g, d, score, extent = data
    n = g.shape[0]
    gt = {
        "images": [{"id": 1, "height": int(extent), "width": int(extent)}],
        "categories": [{"id": 1, "name": "item"}],
        "annotations": [
            {"id": k + 1, "image_id": 1, "category_id": 1, "bbox": [x0, y0, x1 - x0, y1 - y0],
             "area": (x1 - x0) * (y1 - y0), "iscrowd": 0}
            for k, (x0, y0, x1, y1) in enumerate(g.tolist())
        ],
    }  # fmt: skip
    res = [
        {"image_id": 1, "category_id": 1, "bbox": [x0, y0, x1 - x0, y1 - y0], "score": s}
        for (x0, y0, x1, y1), s in zip(d.tolist(), score.tolist())
    ]
    params = CocoParams.from_options("bbox", max_dets=[1, 10, n])
    ev = evaluate_coco(gt, res, params=params)
    # true positives per IoU threshold at area "all", maxDets n: recall at the last point of each curve
    return [round(float(ev.recall[t, 0, 0, -1]) * n) for t in range(THRS.shape[0])]


def coco_loop(data: tuple) -> list[int]:
    """pycocotools' greedy rule as a loop over detections, each against the vector of ground truths, all
    thresholds at once (no crowds, no ignored boxes: the best available box of IoU >= t, the later on a tie)."""
    g, d, score, _ = data
    gx, gy, gw, gh = g[:, 0], g[:, 1], g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]
    thr = np.minimum(THRS, 1 - 1e-10)[:, None]
    taken = np.zeros((THRS.shape[0], g.shape[0]), dtype=bool)
    rows = np.arange(THRS.shape[0])
    rev = g.shape[0] - 1
    for k in np.argsort(-score, kind="mergesort").tolist():
        dx, dy, dw, dh = d[k, 0], d[k, 1], d[k, 2] - d[k, 0], d[k, 3] - d[k, 1]
        w = np.minimum(dw + dx, gw + gx) - np.maximum(dx, gx)
        h = np.minimum(dh + dy, gh + gy) - np.maximum(dy, gy)
        inter = w * h
        iou = np.where((w > 0) & (h > 0), inter / ((dw * dh + gw * gh) - inter), 0.0)
        vals = np.where(~taken & (iou[None, :] >= thr), iou[None, :], -1.0)
        j = rev - np.argmax(vals[:, ::-1], axis=1)  # the last maximum: a later box wins a tie
        ok = vals[rows, j] >= 0
        taken[rows[ok], j[ok]] = True
    return taken.sum(axis=1).tolist()


def child(case: str, impl: str, scale: float) -> None:
    t0 = time.perf_counter()
    data = coco_data(scale) if case == "coco_group" else voc_data(case, scale)
    out: list[int] = []
    if impl == "baseline":  # the input and deteval's imports, nothing evaluated
        import deteval.detection.coco
        import deteval.detection.voc  # noqa: F401
    else:
        fn = {"coco_group": (coco_deteval, coco_loop), "voc_dense": (voc_deteval, voc_loop),
              "voc_sku": (voc_deteval, voc_loop)}[case][impl == "loop"]  # fmt: skip
        out = fn(data)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    print(json.dumps({"peak_mb": peak_mb, "seconds": time.perf_counter() - t0, "tp": out}))


def run(case: str, impl: str, scale: float) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", case, impl, "--scale", str(scale)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", choices=CASES, action="append", help="run only this case (repeatable)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the case's size (objects or images)")
    ap.add_argument(
        "--skip-loop", action="store_true", help="do not run the plain loop (slow at large scales)"
    )
    ap.add_argument("--child", nargs=2, metavar=("CASE", "IMPL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.scale)
        return
    print(f"{'case':<11} {'impl':<9} {'peak MB':>9} {'x baseline':>10} {'seconds':>8}  same TPs as the loop")
    for case in args.case or CASES:
        rows = {
            impl: run(case, impl, args.scale) for impl in IMPLS if not (args.skip_loop and impl == "loop")
        }
        base = rows["baseline"].get("peak_mb", float("nan"))
        for impl, r in rows.items():
            if "error" in r:
                print(f"{case:<11} {impl:<9} failed: {r['error']}")
                continue
            same = "" if impl != "deteval" or "loop" not in rows else str(r["tp"] == rows["loop"].get("tp"))
            print(
                f"{case:<11} {impl:<9} {r['peak_mb']:>9.0f} {r['peak_mb'] / base:>10.2f} {r['seconds']:>8.1f}  {same}"
            )


if __name__ == "__main__":
    main()
