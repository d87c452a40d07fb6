"""``deteval yolo DATA.yaml PREDICTIONS``: the command's options and its plain evaluation (the numbers of one
profile, in any --format).

The statistics, analyses, figures and the other tasks (oriented boxes, poses) are run by
:mod:`deteval.commands.yolo`, which the dispatcher (:mod:`deteval.cli`) loads only when :func:`route` says the
options ask for one of them: the plain evaluation loads no analysis, statistics or plotting module.
"""

from __future__ import annotations

import argparse
import math
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.match_counts import coco_match_counts, coco_match_counts_of
from deteval.analysis.options import add_analysis_args
from deteval.commands.common import add_output_args, more_than_numbers, warn_on_stderr, write_text
from deteval.commands.stats_options import add_stats_args
from deteval.errors import ConfigError, DetevalWarning
from deteval.io.yolo_coco import coco_tables
from deteval.io.yolo_yaml import read_data_yaml
from deteval.report.yolo_table import YOLO_FORMATS, render_yolo, yolo_lines
from deteval.run.yolo import (
    PROFILE_NAMES,
    TASKS,
    YoloResult,
    confidence_floor,
    evaluate_yolo,
    load_split_and_predictions,
)

__all__ = ["read_split", "register", "route", "run", "task_of"]


def task_of(data_yaml: str) -> str:
    """The task a data.yaml implies, as Ultralytics infers it: pose where it has ``kpt_shape``."""
    if not str(data_yaml).lower().endswith((".yaml", ".yml")) or not Path(data_yaml).is_file():
        return "detect"  # (the loader names what is wrong with it)
    return "pose" if read_data_yaml(data_yaml, {"kpt_shape"}).get("kpt_shape") is not None else "detect"


def route(args: argparse.Namespace) -> str | None:
    """``"yolo"`` (:mod:`deteval.commands.yolo` runs the command) when the options ask for more than one
    profile's numbers of boxes: another task (``--task obb``, ``--task pose`` or a data.yaml with
    ``kpt_shape``), statistics (``--ci``, ``--compare-to``), an analysis or figures (``--plots``); None:
    :func:`run` evaluates here."""
    args.task = args.task or task_of(args.data)
    return "yolo" if args.task != "detect" or more_than_numbers(args) else None


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The plain evaluation (:func:`route` gave None): the split and its predictions read
    (:func:`read_split`), scored under the profile, with the P and R of the profiles that define none."""
    profile = args.profile or "ultralytics"
    check_conf(args)
    ds, preds = read_split(args.data, args.predictions, args.split, profile, args.conf)
    result = evaluate_yolo(ds, preds, profile, iou_type=args.iou_type)
    if "precision" not in result.summary and args.iou_type == "bbox":
        own_precision_recall(result, ds, preds)
    result.lines = yolo_lines(result)
    emit_yolo(result, args)
    return 0


def check_conf(args: argparse.Namespace) -> None:
    """``--conf`` is a finite confidence (or not given)."""
    if args.conf is not None and not math.isfinite(args.conf):
        raise ConfigError(f"--conf must be a finite confidence, got {args.conf}")


def own_precision_recall(result: YoloResult, ds: Any, preds: Any) -> None:
    """Per class ``P`` = TP / predictions and ``R`` = TP / labels at IoU 0.5 (pycocotools' matching, 100
    predictions per image and class) over every prediction kept (above ``--conf``), and their class means as
    ``precision`` and ``recall``: the P and R of the profiles that define none (coco, supervision). The counts
    are the evaluation's own (its COCO run), else those of the tables made from the arrays, matched again."""
    run = result.coco_run
    counts = None if run is None else coco_match_counts_of(*run, iou=0.5)
    if counts is None or run is None:
        g, r = coco_tables(ds, preds)
        counts = coco_match_counts(g, r, iou=0.5)
    else:
        g = run[1]
    tp, n_det, n_gt = counts
    ps, rs = [], []
    for c, name in enumerate(g.cat_names):
        row = result.per_class.get(name)
        if row is None:
            continue
        row["P"] = float(tp[c] / n_det[c]) if n_det[c] else 0.0
        row["R"] = float(tp[c] / n_gt[c]) if n_gt[c] else 0.0
        ps.append(row["P"])
        rs.append(row["R"])
    result.summary["precision"] = float(np.mean(ps)) if ps else 0.0
    result.summary["recall"] = float(np.mean(rs)) if rs else 0.0


def emit_yolo(result: YoloResult, args: argparse.Namespace) -> None:
    """Write ``result`` in ``--format`` (the table without the per-class rows unless ``--per-class``) to
    ``--output``, and its warnings through the common channel."""
    fmt = args.format or "table"
    shown = result if fmt != "table" or args.per_class else replace(result, per_class={})
    write_text(render_yolo(shown, fmt, include_curves=args.curves), args.output)
    warn_on_stderr(result)


def read_split(
    data: str, predictions: str, split: str, profile: str, conf: float | None, check_images: bool = True
) -> tuple[Any, Any]:
    """The split (under the Ultralytics profiles, duplicate labels and corrupt images left out as Ultralytics
    leaves them out; else an error) and its predictions above ``conf``; what the readers tolerate goes to
    ``ds.warnings`` (printed through the common channel, never as a raw Python warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetevalWarning)
        ds, preds = load_split_and_predictions(data, predictions, split, profile, check_images=check_images)
    return ds, confidence_floor(preds, conf)


def register(command: Any) -> None:
    p = command(
        "yolo",
        run,
        description="Score PREDICTIONS (a folder of `yolo predict save_txt save_conf` files, or a JSON list: "
        "yolo val's predictions.json or COCO results) against one split of a YOLO dataset, under a profile: "
        "coco (pycocotools), supervision, ultralytics-8.0, ultralytics-8.4.37, ultralytics-8.4.176 "
        "(ultralytics = the newest); with --task obb also dota_devkit (the DOTA devkit's Task1 AP). See "
        "docs/yolo.md and docs/obb.md.",
    )
    p.add_argument("data", metavar="DATA.yaml", help="the dataset's data.yaml")
    p.add_argument("predictions", metavar="PREDICTIONS", help="folder of txt files, or a JSON file")
    p.add_argument("--split", default="val", help="train, val (default) or test")
    p.add_argument(
        "--task",
        choices=TASKS,
        help="detect, obb (oriented boxes, rows cls x1 y1 … x4 y4; coco, dota_devkit or ultralytics profiles) or pose "
        "(default: pose if the data.yaml has kpt_shape, else detect)",
    )
    p.add_argument("--profile", choices=PROFILE_NAMES, default=None, help="default: ultralytics (the newest)")
    p.add_argument(
        "--iou-type",
        choices=("bbox", "segm"),
        default="bbox",
        help="segm: mask AP of polygon labels and predictions (coco profile only)",
    )
    p.add_argument(
        "--conf",
        type=float,
        metavar="C",
        help="confidence floor: only predictions scored above C count (as yolo val's --conf; it changes P, R "
        "and the confusion matrix; default: every prediction in the files)",
    )
    p.add_argument("--per-class", action="store_true", help="the common per-class table after yolo val's")
    p.add_argument(
        "--plots",
        metavar="DIR",
        help="write the figures yolo val writes to DIR: confusion_matrix.png, confusion_matrix_normalized.png, "
        "BoxPR_curve.png, BoxF1_curve.png, BoxP_curve.png, BoxR_curve.png",
    )
    add_output_args(p, YOLO_FORMATS)
    add_analysis_args(p, fg_default="0.5", add_iou=True)
    add_stats_args(p, "another predictions folder or JSON of the same split (coco and Ultralytics profiles)")
    p.set_defaults(_route=route)
