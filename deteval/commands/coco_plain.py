"""``deteval coco GT.json RESULTS.json``: the COCO protocol (bbox, segm, keypoints, boundary, obb), identical to
pycocotools: the command's options and its plain evaluation (the numbers, in any --format).

The analyses, statistics, figures, sharded runs and the progress bar are run by :mod:`deteval.commands.coco`,
which the dispatcher (:mod:`deteval.cli`) loads only when :func:`route` says the options ask for one of them:
the plain evaluation loads no analysis, statistics or plotting module.
"""

from __future__ import annotations

import argparse
from typing import Any

from deteval.analysis.options import add_analysis_args
from deteval.commands import options as opt
from deteval.commands.cluster import add_cluster_args
from deteval.commands.common import (
    add_boundary_args,
    add_output_args,
    apply_preset,
    emit,
    more_than_numbers,
    wants_per_class,
)
from deteval.commands.options import Checker
from deteval.commands.stats_options import add_stats_args
from deteval.detection.coco import COMPAT_MODES
from deteval.detection.coco_params import FIELDS, IOU_TYPES, CocoParams
from deteval.match.boundary import BOUNDARY_PROFILES
from deteval.report import FORMATS
from deteval.report.plots import add_plot_args
from deteval.report.progress import bar_shown
from deteval.run.coco import evaluate_coco

__all__ = ["OPTIONS", "coco_params", "register", "route", "run"]

_PARAM_OPTIONS = (*FIELDS, "dilation_ratio", "boundary_profile")


OPTIONS: dict[str, Checker] = {
    "iou_type": opt.choice(IOU_TYPES),
    "compat": opt.choice(COMPAT_MODES),
    "per_class": opt.boolean,
    "on_error": opt.choice(("raise", "skip")),
    "format": opt.choice(FORMATS),
    **{key: opt.coco(key) for key in _PARAM_OPTIONS},
    "boundary_profile": opt.choice(tuple(BOUNDARY_PROFILES)),
}


def coco_params(args: argparse.Namespace, parser: argparse.ArgumentParser) -> CocoParams:
    """The options of ``args`` checked and completed from ``--config`` and the defaults (in place), and the
    evaluation parameters they give."""
    apply_preset(
        args,
        parser,
        {"iou_type": "bbox", "compat": "pycocotools", "per_class": False, "on_error": "raise"},
        OPTIONS,
    )
    options: dict[str, Any] = {
        k: getattr(args, k) for k in _PARAM_OPTIONS if getattr(args, k, None) is not None
    }
    return CocoParams.from_options(args.iou_type, **options)


def route(args: argparse.Namespace) -> str | None:
    """``"coco"`` (:mod:`deteval.commands.coco` runs the command) when the options ask for more than the
    numbers: statistics (``--ci``, ``--compare-to``), an analysis, figures (``--plots``), a cluster or shards,
    or a progress bar is drawn; None: :func:`run` evaluates here."""
    return "coco" if more_than_numbers(args) or bar_shown() else None


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The plain evaluation (:func:`route` gave None): the runner reads the files itself, as
    ``evaluate_coco(path, path)`` does (ground truth and results on two cores where that pays)."""
    params = coco_params(args, parser)
    sources = list(args.results)
    ev = evaluate_coco(
        args.gt, sources[0] if len(sources) == 1 else sources,
        params=params, compat=args.compat, on_error=args.on_error,
    )  # fmt: skip
    emit(ev.to_result(per_class=wants_per_class(args)), args)
    return 0


def _bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {value!r}")


def register(command: Any) -> None:
    p = command(
        "coco",
        run,
        description="Evaluate COCO results against COCO ground truth. The 12 numbers (10 for keypoints) are "
        "identical to pycocotools' COCOeval; --compat fixed corrects its documented quirks.",
    )
    p.add_argument("gt", metavar="GT.json", help="COCO ground-truth JSON")
    p.add_argument(
        "results",
        metavar="RESULTS.json",
        nargs="+",
        help="COCO results JSON (a list of detections); several files (e.g. one per training rank) are read "
        "as their concatenation",
    )
    p.add_argument(
        "--iou-type",
        choices=IOU_TYPES,
        default=None,
        help="bbox (default), segm, keypoints, boundary (Boundary IoU, Cheng et al. 2021: min(mask IoU, "
        "boundary IoU); crowds keep the mask IoU) or obb (oriented boxes: an 'obb' [cx, cy, w, h, radians] "
        "per record)",
    )
    add_boundary_args(p)
    p.add_argument(
        "--config",
        metavar="PRESET",
        help="a preset name (coco, coco_fixed, coco_keypoints, coco_boundary, coco_obb) or TOML file",
    )
    p.add_argument(
        "--compat",
        choices=COMPAT_MODES,
        default=None,
        help="pycocotools (default): reproduce its quirks; fixed: correct them",
    )
    p.add_argument("--per-class", action="store_true", default=None, help="add the per-category table")
    p.add_argument(
        "--iou-thrs",
        default=None,
        metavar="SPEC",
        help="IoU thresholds: 'linspace(0.5, 0.95, 10)', '0.5:0.95:10' or '0.5,0.75'",
    )
    p.add_argument("--rec-thrs", default=None, metavar="SPEC", help="recall levels (default 0:1:101)")
    p.add_argument("--max-dets", default=None, metavar="LIST", help="detections per image, e.g. '1,10,100'")
    p.add_argument("--area-rng", default=None, metavar="RANGES", help="area ranges 'lo,hi;lo,hi;...'")
    p.add_argument("--area-lbl", default=None, metavar="LABELS", help="area range labels 'all,small,...'")
    p.add_argument(
        "--use-cats",
        type=_bool,
        default=None,
        metavar="BOOL",
        help="false: pool all categories (class-agnostic)",
    )
    p.add_argument(
        "--kpt-oks-sigmas",
        default=None,
        metavar="LIST",
        help="per-keypoint OKS sigmas, comma-separated (default: COCO's 17)",
    )
    p.add_argument(
        "--kpt-oks-sigmas-per-category",
        default=None,
        metavar="SPEC",
        help="OKS sigmas of some categories, 'ID:s1,s2,...;ID:s1,s2,...' (before a category record's "
        "'sigmas' and --kpt-oks-sigmas)",
    )
    p.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default=None,
        help="raise (default): stop at the first bad record; skip: leave out bad result records and "
        "ground-truth annotations (also results for unknown images or categories), each listed in the "
        "warnings and counted in skipped_records",
    )
    add_cluster_args(p)
    add_output_args(p)
    add_plot_args(p)
    add_analysis_args(p, fg_default="0.5", add_iou=True)
    add_stats_args(p, "another results JSON")
    p.set_defaults(_route=route)
