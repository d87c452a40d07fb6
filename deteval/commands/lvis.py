"""``deteval lvis GT.json RESULTS.json``: LVIS federated evaluation (lvis-api 0.5.3's numbers), Fixed AP and
pooled AP."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.commands.cluster import add_cluster_args, sharding_requested
from deteval.commands.common import (
    add_boundary_args,
    add_output_args,
    apply_preset,
    boundary_options,
    emit,
    wants_per_class,
)
from deteval.commands.options import Checker, max_dets_or_unlimited, whole
from deteval.detection.lvis import IOU_TYPES
from deteval.report.progress import Progress
from deteval.run.client import dask_client
from deteval.run.lvis import evaluate_lvis

#: lvis has no presets: its numeric options are checked (strict syntax, bounds) as the others' are.
OPTIONS: dict[str, Checker] = {
    "max_dets": max_dets_or_unlimited,
    "dets_per_cat": whole(1, 10**9, "detections per category"),
}


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    apply_preset(args, parser, {}, OPTIONS)
    stage = (
        "reading, matching on image shards and accumulating"
        if sharding_requested(args)
        else "reading, matching and accumulating"
    )
    with dask_client(args.workers, args.scheduler) as client, Progress(1, "deteval lvis") as bar:
        bar.stage(stage)
        ev = evaluate_lvis(
            args.gt,
            args.results[0] if len(args.results) == 1 else list(args.results),
            iou_type=args.iou_type,
            **boundary_options(args),
            max_dets=args.max_dets,
            dets_per_cat=args.dets_per_cat,
            fixed_ap=args.fixed_ap,
            pooled=args.pooled,
            on_error=args.on_error,
            client=client,
            shards=args.shards,
        )
    emit(ev.to_result(per_class=wants_per_class(args)), args)
    return 0


def register(command: Any) -> None:
    p = command(
        "lvis",
        run,
        description="Evaluate COCO-format results against LVIS ground truth. The results equal lvis-api "
        "0.5.3's LVISEval (AP, AP50, AP75, APs/m/l, APr/c/f, AR@300, ARs/m/l@300); --fixed-ap and --pooled "
        "follow Dave et al. 2021.",
    )
    p.add_argument("gt", metavar="GT.json", help="LVIS ground-truth JSON")
    p.add_argument(
        "results",
        metavar="RESULTS.json",
        nargs="+",
        help="results JSON (a list of COCO-style detections); several files (e.g. one per training rank) are "
        "read as their concatenation, in the order given",
    )
    p.add_argument(
        "--iou-type",
        choices=IOU_TYPES,
        default="bbox",
        help="bbox (default), segm or boundary (Boundary IoU)",
    )
    add_boundary_args(p)
    p.add_argument(
        "--max-dets",
        type=int,
        default=300,
        metavar="N",
        help="detections kept per image, over all categories (lvis-api: 300; -1: no limit)",
    )
    p.add_argument(
        "--dets-per-cat",
        type=int,
        metavar="K",
        help="detections kept per category over the whole dataset (default: no limit)",
    )
    p.add_argument(
        "--fixed-ap",
        action="store_true",
        help="Fixed AP (Dave et al. 2021): no per-image limit, the top 10,000 detections per category",
    )
    p.add_argument(
        "--pooled",
        action="store_true",
        help="add pooled AP (AP-pooled-all/r/c/f): one ranked list per pool of categories",
    )
    p.add_argument("--per-class", action="store_true", help="add the per-category table")
    p.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default="raise",
        help="raise (default): stop at the first bad record; skip: leave out bad records, listed in warnings",
    )
    add_cluster_args(p)
    add_output_args(p)
