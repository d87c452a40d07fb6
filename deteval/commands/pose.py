"""``deteval crowdpose GT.json RESULTS.json``: CrowdPose's keypoint protocol (faster-coco-eval's
``keypoints_crowd`` numbers)."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.commands.common import add_output_args, emit, wants_per_class
from deteval.commands.options import coco as coco_option
from deteval.commands.options import run_checker
from deteval.detection.coco.params import COMPAT_MODES
from deteval.detection.coco_params import CocoParams
from deteval.detection.crowdpose import CROWDPOSE_KPT_OKS_SIGMAS
from deteval.report.progress import Progress
from deteval.run.crowdpose import evaluate_crowdpose


def run_crowdpose(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    options: dict[str, Any] = {"kpt_oks_sigmas": CROWDPOSE_KPT_OKS_SIGMAS}
    for key, flag in (
        ("kpt_oks_sigmas", "--kpt-oks-sigmas"),
        ("kpt_oks_sigmas_per_category", "--kpt-oks-sigmas-per-category"),
    ):
        value = getattr(args, key)
        if value is not None:
            options[key] = run_checker(coco_option(key), value, cli=True, flag=flag)
    params = CocoParams.from_options("keypoints", **options)
    with Progress(1, "deteval crowdpose") as bar:
        bar.stage("reading, matching and accumulating (all images, then each crowd level)")
        ev = evaluate_crowdpose(
            args.gt,
            args.results,
            params=params,
            use_area=args.use_area,
            compat=args.compat,
            on_error=args.on_error,
        )
    emit(ev.to_result(per_class=wants_per_class(args)), args)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "crowdpose",
        help="CrowdPose keypoints: AP by crowd level (faster-coco-eval's keypoints_crowd numbers)",
        description="Evaluate keypoint results with CrowdPose's protocol: COCO's OKS AP/AR (maxDets 20) and AP "
        "of the easy (crowdIndex < 0.2), medium (< 0.8) and hard images, equal to faster-coco-eval's "
        "iouType='keypoints_crowd'. Every image record needs a crowdIndex.",
    )
    p.add_argument("gt", metavar="GT.json", help="CrowdPose (COCO-style) ground-truth JSON")
    p.add_argument("results", metavar="RESULTS.json", help="COCO keypoint results JSON")
    p.add_argument(
        "--kpt-oks-sigmas",
        default=None,
        metavar="LIST",
        help="per-keypoint OKS sigmas, comma-separated (default: CrowdPose's 14)",
    )
    p.add_argument(
        "--kpt-oks-sigmas-per-category",
        default=None,
        metavar="SPEC",
        help="OKS sigmas of some categories, 'ID:s1,s2,...;ID:...' (as for deteval coco)",
    )
    p.add_argument(
        "--use-area",
        action="store_true",
        help="OKS scale from the annotations' area (faster-coco-eval's default) instead of 0.53 x box area "
        "(the CrowdPose tool's; its files have no area)",
    )
    p.add_argument(
        "--compat",
        choices=COMPAT_MODES,
        default="pycocotools",
        help="pycocotools (default): CrowdPose's rounded crowd-level AP over every cell; fixed: COCO's mean",
    )
    p.add_argument("--per-class", action="store_true", help="add the per-category table")
    p.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default="raise",
        help="raise (default): stop at the first bad record; skip: leave out bad records, listed in warnings",
    )
    add_output_args(p, curves=False)
    p.set_defaults(func=run_crowdpose, _parser=p)
