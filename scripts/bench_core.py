"""Benchmark the ranked-list core on a bootstrap: per-class AP over many image resamples.

    python scripts/bench_core.py                       # 20 classes, 2000 images, 20k detections, 200 resamples
    python scripts/bench_core.py --resamples 1000 --method voc07

A seeded VOC-like set of matched detections (class, image, score, outcome) and ground-truth counts per image
and class is resampled B times over images (multinomial counts). A resample is integer weights: a
detection counts as many times as its image was drawn, and n_pos is the weighted ground-truth count. Three
ways to get the B × C average precisions, each in a fresh process (wall time, peak RSS):

* ``sort_once``: the detections ranked once per class (``sort_lists``), that order tiled over the resamples,
  one ``presorted_lists`` of B × C lists with a weight column per resample (what the core is for);
* ``one_call``: one ``ranked_lists`` of B × C lists with weights (the generic builder sorts all B × N rows);
* ``per_list``: a Python loop of B × C ``rank`` + ``average_precision`` calls (one list at a time, as a
  protocol that loops over classes would);
* ``repeated``: the items repeated w times with ``np.repeat``, then one call without weights.

All four give the same numbers, bit for bit (the script checks). Nothing is written to the tree.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from bench_trec import peak_rss_mb  # the same measure of peak memory as the other benchmarks

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a clone without installing


def make_data(n_cls: int, n_img: int, n_det: int, n_res: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    gt = rng.poisson(0.6, (n_img, n_cls))  # ground-truth objects per image and class
    cls = rng.integers(0, n_cls, n_det)
    img = rng.integers(0, n_img, n_det)
    score = np.round(rng.random(n_det), 3)  # ties
    outcome = np.where(rng.random(n_det) < 0.45, 1, np.where(rng.random(n_det) < 0.05, -1, 0))
    # no more true positives per (image, class) than objects there
    order = np.lexsort((-score, img, cls))
    key = cls[order] * n_img + img[order]
    first = np.searchsorted(key, key, side="left")
    nth = np.arange(n_det) - first
    tp_ok = nth < gt[img[order], cls[order]]
    outcome[order[(outcome[order] == 1) & ~tp_ok]] = 0
    counts = rng.multinomial(n_img, np.full(n_img, 1.0 / n_img), size=n_res)  # (B, n_img) image draws
    return {"gt": gt, "cls": cls, "img": img, "score": score, "outcome": outcome, "counts": counts}


def run(way: str, data: dict[str, np.ndarray], method: str) -> np.ndarray:
    from deteval.core import average_precision, presorted_lists, rank, ranked_lists
    from deteval.core.lists import sort_lists

    gt, cls, img, score, outcome, counts = (
        data[k] for k in ("gt", "cls", "img", "score", "outcome", "counts")
    )
    n_res, n_cls = counts.shape[0], gt.shape[1]
    n_pos = (counts @ gt).reshape(-1)  # (B * C,) weighted ground truth per resample and class
    weights = counts[:, img]  # (B, N): a detection counts as often as its image was drawn
    if way == "per_list":
        out = np.empty(n_res * n_cls)
        rows = [np.flatnonzero(cls == c) for c in range(n_cls)]
        for b in range(n_res):
            for c in range(n_cls):
                r = rank(
                    score[rows[c]], outcome[rows[c]], int(n_pos[b * n_cls + c]), weights=weights[b, rows[c]]
                )
                out[b * n_cls + c] = average_precision(r, method)
        return out
    if way == "sort_once":
        order = sort_lists(cls, score.astype(np.float64))
        per_list = np.tile(np.bincount(cls, minlength=n_cls), n_res)
        o = outcome[order]
        lists = presorted_lists(
            per_list,
            np.tile(o == 1, n_res),
            n_pos,
            np.tile(o == -1, n_res),
            weights=weights[:, order].reshape(-1),
        )
        return lists.average_precision(method)
    list_id = (np.arange(n_res)[:, None] * n_cls + cls[None, :]).reshape(-1)
    tiled = (np.tile(score, n_res), np.tile(outcome, n_res))
    if way == "one_call":
        lists = ranked_lists(list_id, *tiled, n_pos, n_lists=n_res * n_cls, weights=weights.reshape(-1))
    else:
        w = weights.reshape(-1)
        lists = ranked_lists(
            np.repeat(list_id, w),
            np.repeat(tiled[0], w),
            np.repeat(tiled[1], w),
            n_pos,
            n_lists=n_res * n_cls,
        )
    return lists.average_precision(method)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--detections", type=int, default=20000)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument(
        "--method", default="all_points", choices=("voc07", "all_points", "coco101", "uninterpolated")
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    data = make_data(args.classes, args.images, args.detections, args.resamples)
    if args.worker:
        t0 = time.perf_counter()
        ap_values = run(args.worker, data, args.method)
        seconds = time.perf_counter() - t0
        print(json.dumps({"seconds": seconds, "rss": peak_rss_mb(), "ap": ap_values.tolist()}))
        return 0
    print(
        f"{args.resamples} resamples x {args.classes} classes ({args.images} images, {args.detections} "
        f"detections), AP method {args.method}"
    )
    res = {}
    for way in ("sort_once", "one_call", "per_list", "repeated"):
        cmd = [sys.executable, __file__, "--worker", way] + [
            f"--{k}={getattr(args, k)}" for k in ("classes", "images", "detections", "resamples", "method")
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(f"{way}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        res[way] = json.loads(out.stdout.strip().splitlines()[-1])
    base = res.get("sort_once")
    print(f"{'way':<10}{'seconds':>9}{'ratio':>8}{'peak RSS MB':>13}   identical APs")
    for way, r in res.items():
        ratio = r["seconds"] / base["seconds"] if base else float("nan")
        same = base is not None and r["ap"] == base["ap"]
        print(f"{way:<10}{r['seconds']:>9.3f}{ratio:>7.1f}x{r['rss']:>13.0f}   {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
