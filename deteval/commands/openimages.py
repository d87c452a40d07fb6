"""``deteval openimages BOXES.csv PREDICTIONS.csv``: the Open Images challenge metric (TF OD API rules)."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.commands.common import add_output_args, emit, wants_per_class
from deteval.detection.openimages import evaluate_openimages
from deteval.report.progress import Progress


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    with Progress(1, "deteval openimages") as bar:
        bar.stage("reading, matching and accumulating")
        ev = evaluate_openimages(
            args.boxes,
            args.predictions,
            labels=args.labels,
            hierarchy=args.hierarchy,
            class_names=args.class_names,
            expand_detections=args.expand_detections,
        )
    emit(ev.to_result(per_class=wants_per_class(args)), args)
    return 0


def register(command: Any) -> None:
    p = command(
        "openimages",
        run,
        description="Evaluate Open Images predictions as the TF Object Detection API's OID challenge "
        "evaluator does: mAP at IoU 0.5, group-of boxes matched by IoA, only verified classes scored in an "
        "image, ground truth expanded along the class hierarchy.",
    )
    p.add_argument(
        "boxes",
        metavar="BOXES.csv",
        help="ground-truth boxes (ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf)",
    )
    p.add_argument(
        "predictions", metavar="PREDICTIONS.csv", help="ImageID,LabelName,Score,XMin,XMax,YMin,YMax"
    )
    p.add_argument("--labels", metavar="LABELS.csv", help="image-level labels (ImageID,LabelName,Confidence)")
    p.add_argument("--hierarchy", metavar="HIERARCHY.json", help="class hierarchy: expand the ground truth")
    p.add_argument("--class-names", metavar="CLASSES.csv", help="class descriptions (LabelName,DisplayName)")
    p.add_argument(
        "--expand-detections",
        action="store_true",
        help="also repeat each prediction for its ancestor classes (the TF pipeline does not)",
    )
    p.add_argument("--per-class", action="store_true", help="add the per-class table")
    add_output_args(p)
