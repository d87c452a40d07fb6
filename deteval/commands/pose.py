"""``deteval crowdpose GT.json RESULTS.json``: CrowdPose's keypoint protocol (faster-coco-eval's
``keypoints_crowd`` numbers); ``deteval sigmas GT.json``: OKS sigmas estimated from data."""

from __future__ import annotations

import argparse
import json
from typing import Any

from deteval.commands.common import add_output_args, apply_preset, emit, wants_per_class, write_text
from deteval.commands.options import coco as coco_option
from deteval.detection.coco.params import COMPAT_MODES
from deteval.detection.coco_params import CocoParams
from deteval.detection.crowdpose import CROWDPOSE_KPT_OKS_SIGMAS
from deteval.detection.sigma_estimate import estimate_sigmas, pairs_from_repeats, pairs_from_results
from deteval.errors import ConfigError
from deteval.io.coco import load_coco_gt, load_coco_results, read_json
from deteval.report.progress import Progress, note
from deteval.run.crowdpose import evaluate_crowdpose


def run_crowdpose(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    keys = ("kpt_oks_sigmas", "kpt_oks_sigmas_per_category")
    apply_preset(args, parser, {}, {k: coco_option(k) for k in keys})  # (no presets: the values checked)
    given = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    options = {"kpt_oks_sigmas": CROWDPOSE_KPT_OKS_SIGMAS, **given}
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


def register(command: Any) -> None:
    p = command(
        "crowdpose",
        run_crowdpose,
        description="Evaluate keypoint results with CrowdPose's protocol: COCO's OKS AP/AR (maxDets 20) and AP "
        "of the easy (crowdIndex < 0.2), medium (< 0.8) and hard images, equal to faster-coco-eval's "
        "iouType='keypoints_crowd'. Every image record needs a crowdIndex.",
    )
    p.add_argument("gt", metavar="GT.json", help="CrowdPose (COCO-style) ground-truth JSON")
    p.add_argument("results", metavar="RESULTS.json", help="COCO keypoint results JSON")
    p.add_argument(
        "--kpt-oks-sigmas",
        metavar="LIST",
        help="per-keypoint OKS sigmas, comma-separated (default: CrowdPose's 14)",
    )
    p.add_argument(
        "--kpt-oks-sigmas-per-category",
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
    register_sigmas(command)


def run_sigmas(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    gt = load_coco_gt(args.gt, need_keypoints=True)
    if args.results:
        if args.group_key:
            raise ConfigError("--group-key is for repeated annotations; drop it with --results")
        res = load_coco_results(args.results, gt, iou_type="keypoints")
        est = estimate_sigmas(pairs_from_results(gt, res, args.max_distance), gt, "a model's errors")
    else:
        key = None
        if args.group_key:
            anns = read_json(args.gt).get("annotations", [])
            key = [a.get(args.group_key) if isinstance(a, dict) else None for a in anns]
        est = estimate_sigmas(pairs_from_repeats(gt, args.iou, key), gt, "repeated annotations")
    if args.format == "json":
        text = json.dumps(est.to_dict(), indent=2) + "\n"
    else:
        names = {r.get("id"): r.get("keypoints") for r in gt.category_records or () if isinstance(r, dict)}
        lines = [f"OKS sigmas from {est.method}: sigma_i = sqrt(mean of d_i^2 / s^2) (COCO's definition)"]
        for k, (cid, cname) in enumerate(zip(est.cat_ids, est.cat_names)):
            if not est.pairs[k]:
                continue
            lines.append(f"category {cid} ({cname}): {int(est.pairs[k])} pairs")
            kp_names = names.get(cid) or []
            for i, (sig, n) in enumerate(zip(est.sigmas[k], est.counts[k])):
                label = kp_names[i] if i < len(kp_names) and isinstance(kp_names[i], str) else f"keypoint {i}"
                lines.append(f"  {label:<24} sigma = {sig:.6f}   ({int(n)} pairs)")
        spec = est.spec()
        lines.append(
            f"--kpt-oks-sigmas-per-category '{spec}'"
            if spec
            else "no category has a sigma for every keypoint"
        )
        text = "\n".join(lines) + "\n"
    write_text(text, args.output)
    for w in est.warnings:
        note(f"deteval: warning: {w}")
    return 0


def register_sigmas(command: Any) -> None:
    p = command(
        "sigmas",
        run_sigmas,
        description="Estimate each category's OKS sigmas as COCO defines them, sigma_i^2 = E[d_i^2 / s^2] "
        "(d_i: distance between two keypoints of the same object, s^2: its area): from repeated annotations "
        "of the same objects in GT.json (pairs sharing --group-key, or whose boxes overlap with IoU >= --iou), "
        "or with --results from a model's detections matched to the ground truth. Prints a "
        "--kpt-oks-sigmas-per-category value. See docs/pose.md.",
    )
    p.add_argument("gt", metavar="GT.json", help="COCO keypoint ground truth")
    p.add_argument(
        "--results", metavar="RESULTS.json", help="keypoint results: estimate from the model's errors"
    )
    p.add_argument(
        "--iou",
        type=float,
        default=0.5,
        help="repeated annotations: box IoU that makes two boxes one object (0.5)",
    )
    p.add_argument(
        "--max-distance",
        type=float,
        default=0.5,
        help="--results: the largest root mean d^2/s^2 of a detection and the object it is paired with (0.5)",
    )
    p.add_argument(
        "--group-key", metavar="FIELD", help="annotation field naming the object (repeated annotations)"
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    p.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE instead of stdout")
