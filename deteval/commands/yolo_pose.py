"""``deteval yolo DATA.yaml PREDICTIONS --task pose`` (called by :mod:`deteval.commands.yolo`): box and pose
metrics of a pose dataset as ``yolo val`` prints them."""

from __future__ import annotations

import argparse
import warnings

from deteval.analysis.options import analyses_requested
from deteval.commands.common import warn_on_stderr, write_text
from deteval.commands.stats_options import stats_options
from deteval.errors import ConfigError, DetevalWarning
from deteval.report.yolo_pose_table import POSE_FORMATS, render_yolo_pose
from deteval.run.yolo_pose import evaluate_yolo_pose_files

__all__ = ["run_yolo_pose"]


def run_yolo_pose(args: argparse.Namespace) -> int:
    """``deteval yolo DATA.yaml PREDICTIONS --task pose``: box and pose metrics as ``yolo val`` prints them."""
    if args.iou_type != "bbox":
        raise ConfigError("--iou-type is for the detect task; pose scores boxes and keypoints")
    unsupported = [
        flag
        for flag, given in (
            ("--conf", getattr(args, "conf", None) is not None),
            ("--ci / --compare-to", stats_options(args) is not None),
            ("the analysis options", analyses_requested(args)),
            (f"--format {args.format}", (args.format or "table") not in POSE_FORMATS),
        )
        if given
    ]
    if unsupported:
        raise ConfigError(f"{', '.join(unsupported)}: not available with --task pose (box and pose mAP only)")
    with warnings.catch_warnings():  # (what the readers tolerate is in result.warnings, printed below)
        warnings.simplefilter("ignore", DetevalWarning)
        result = evaluate_yolo_pose_files(
            args.data, args.predictions, split=args.split, profile=args.profile or "ultralytics"
        )
    write_text(render_yolo_pose(result, args.format or "table"), args.output)
    warn_on_stderr(result)
    return 0
