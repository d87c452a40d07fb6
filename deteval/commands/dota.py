"""``deteval dota``: DOTA Task1 (oriented boxes) AP per category and mAP, as the DOTA devkit computes them."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.commands.common import add_output_args, emit
from deteval.detection.voc import METRICS
from deteval.io.dota import load_dota_annotations, load_dota_detections
from deteval.run.dota import PROTOCOLS, evaluate_dota


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    gt = load_dota_annotations(args.annotations, args.image_set)
    dets, corners = load_dota_detections(args.detections)
    result = evaluate_dota(
        gt, dets, corners, iou_threshold=args.iou, metric=args.metric, difficult=not args.no_difficult,
        classes=args.classes, shards=args.shards, protocol=args.protocol,
    )  # fmt: skip
    emit(result, args)
    return 0


def register(command: Any) -> None:
    p = command(
        "dota",
        run,
        description="Score DETECTIONS (a folder of Task1_<category>.txt: image score x1 y1 … x4 y4) against "
        "ANNOTATIONS (a labelTxt folder: x1 y1 … x4 y4 category difficult per row) with the DOTA devkit's "
        "rules: polygon IoU > 0.5, difficult objects ignored, VOC07 11-point AP. See docs/obb.md.",
    )
    p.add_argument("annotations", metavar="ANNOTATIONS", help="the labelTxt folder (<image>.txt files)")
    p.add_argument("detections", metavar="DETECTIONS", help="the folder of Task1_<category>.txt files")
    p.add_argument("--image-set", metavar="FILE", help="the images to score, one name a line (default: all)")
    p.add_argument("--iou", type=float, default=0.5, help="a match needs IoU > this (default 0.5)")
    p.add_argument(
        "--metric", choices=METRICS, default="voc07", help="voc07 (default, the devkit's) or voc2010"
    )
    p.add_argument(
        "--no-difficult",
        action="store_true",
        help="count difficult objects as any other (the devkit's DOTA 1.5 and 2.0)",
    )
    p.add_argument("--classes", nargs="+", metavar="NAME", help="only these categories")
    p.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=PROTOCOLS[0],
        help="dota_devkit (default) or coco: COCO-style AP with the rotated IoU, difficult objects as crowds",
    )
    p.add_argument("--shards", type=int, default=None, help="match in this many parts of whole images")
    add_output_args(p)
