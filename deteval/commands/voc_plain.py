"""``deteval voc``: Pascal VOC AP per class and mAP from annotation XML and detection result files.

Classes scored by default: every class with a ground-truth object plus every class with a detection file
matching the ``{cls}`` pattern, sorted by name (the 20 VOC classes sort into the devkit's order). A class with
detections but no ground truth is reported (``ap`` null, not averaged) with a warning; a ground-truth class
without a detection file is scored with 0 detections, with a warning. ``--classes`` restricts the set.

The statistics, analyses, figures and cluster runs are run by :mod:`deteval.commands.voc`, which the
dispatcher (:mod:`deteval.cli`) loads only when :func:`route` says the options ask for one of them: the plain
evaluation loads no analysis, statistics or plotting module.
"""

from __future__ import annotations

import argparse
import difflib
from typing import Any

from deteval.analysis.options import add_analysis_args
from deteval.commands import options as opt
from deteval.commands.cluster import add_cluster_args
from deteval.commands.common import add_output_args, apply_preset, emit, more_than_numbers
from deteval.commands.options import Checker
from deteval.commands.stats_options import add_stats_args
from deteval.detection.voc import METRICS, PROFILES, VOCParams
from deteval.errors import ConfigError
from deteval.io.voc import discover_detection_classes, load_voc_annotations, load_voc_detections
from deteval.report import FORMATS
from deteval.report.plots import add_plot_args
from deteval.report.progress import Progress
from deteval.run.voc import evaluate_voc
from deteval.tables.voc import VOCDetections, VOCGroundTruth

__all__ = ["DEFAULTS", "OPTIONS", "load_detections", "read_inputs", "register", "route", "run", "voc_params"]

DEFAULTS: dict[str, Any] = {
    "metric": "voc2010",
    "iou": 0.5,
    "profile": "voc_devkit",
    "plus_one": True,
    "layout": "comp4",
    "unknown_images": "error",
    "on_error": "raise",
}


OPTIONS: dict[str, Checker] = {
    "metric": opt.choice(METRICS),
    "iou": opt.number(0.0, 1.0, "the IoU threshold"),
    "profile": opt.choice(PROFILES),
    "plus_one": opt.boolean,
    "layout": opt.choice(("comp4", "single")),
    "unknown_images": opt.choice(("error", "warn")),
    "on_error": opt.choice(("raise", "skip")),
    "classes": opt.names,
    "format": opt.choice(FORMATS),
}


def route(args: argparse.Namespace) -> str | None:
    """``"voc"`` (:mod:`deteval.commands.voc` runs the command) when the options ask for more than the numbers:
    statistics (``--ci``, ``--compare-to``), an analysis, figures (``--plots``), a cluster or shards; None:
    :func:`run` evaluates here."""
    return "voc" if more_than_numbers(args) else None


def voc_params(args: argparse.Namespace, parser: argparse.ArgumentParser) -> VOCParams:
    """The options of ``args`` checked and completed from ``--config`` and the defaults (in place), and the
    evaluation parameters they give."""
    apply_preset(args, parser, DEFAULTS, OPTIONS)
    return VOCParams(
        iou_threshold=float(args.iou), metric=args.metric, profile=args.profile, plus_one=args.plus_one
    )


def read_inputs(args: argparse.Namespace, bar: Progress) -> tuple[VOCGroundTruth, VOCDetections]:
    """The annotations and the detections the options name, ``--classes`` checked against both."""
    classes = args.classes
    bar.stage("reading annotations")
    gt = load_voc_annotations(args.annotations, args.image_set, on_error=args.on_error)
    bar.stage("reading detections")
    if classes is not None and args.layout == "comp4":
        _check_classes(classes, _classes_in(gt) | set(discover_detection_classes(args.detections)))
    dets = load_detections(args, gt, classes)
    if classes is not None and args.layout != "comp4":
        _check_classes(classes, _classes_in(gt) | _classes_in(dets))
    return gt, dets


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """The plain evaluation (:func:`route` gave None): per-class AP and mAP, in any --format."""
    params = voc_params(args, parser)
    with Progress(3, "deteval voc") as bar:
        gt, dets = read_inputs(args, bar)
        bar.stage("matching and AP")
        result = evaluate_voc(gt, dets, params=params, classes=args.classes)
    emit(result, args)
    return 0


def _classes_in(table: VOCGroundTruth | VOCDetections) -> set[str]:
    """The names of the classes with a row in ``table``."""
    return {table.classes[i] for i in set(table.label.tolist())}


def _check_classes(wanted: list[str], known: set[str]) -> None:
    """A ``--classes`` name that neither the annotations nor the detections know (not in ``known``) is a typo,
    not a class with AP 0: refuse it, listing the known names and the closest match."""
    unknown = [c for c in wanted if c not in known]
    if not unknown:
        return
    hints = []
    for c in unknown:
        close = difflib.get_close_matches(c, sorted(known), n=1)
        hints.append(f"{c!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ConfigError(
        f"--classes names {', '.join(hints)}, found in no annotation and no detection file; "
        f"known classes: {', '.join(sorted(known)) or '(none)'}"
    )


def load_detections(args: argparse.Namespace, gt: Any, classes: list[str] | None) -> Any:
    """The detections of ``args.detections`` (``--layout``), for the classes asked or else those of the
    annotations and the comp4 files found."""
    det_classes = classes
    if classes is None and args.layout == "comp4":
        det_classes = sorted(_classes_in(gt) | set(discover_detection_classes(args.detections)))
    return load_voc_detections(
        args.detections,
        gt.images,
        classes=det_classes,
        layout=args.layout,
        unknown_images=args.unknown_images,
        on_error=args.on_error,
    )


def register(command: Any) -> None:
    p = command(
        "voc",
        run,
        # (the command's own paragraphs, without the module's note on routing and its reStructuredText markup)
        description="\n\n".join((__doc__ or "").split("\n\n")[:2]).replace("``", "'"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--annotations", required=True, metavar="DIR", help="folder of VOC annotation XML files")
    p.add_argument(
        "--image-set", metavar="FILE", help="image-set list (ImageSets/Main/<split>.txt); default: every XML"
    )
    p.add_argument(
        "--detections",
        required=True,
        metavar="PATTERN",
        help="comp4 result files with {cls}, e.g. 'results/comp4_det_test_{cls}.txt' (or one file with "
        "--layout single)",
    )
    p.add_argument(
        "--layout",
        choices=("comp4", "single"),
        default=None,
        help="comp4: one file per class (default); single: '<id> <class> <score> x1 y1 x2 y2'",
    )
    p.add_argument(
        "--metric", choices=METRICS, default=None, help="voc07 (11-point) or voc2010 (all-point, default)"
    )
    p.add_argument("--iou", default=None, metavar="T", help="IoU threshold (default 0.5)")
    p.add_argument("--classes", default=None, metavar="A,B,...", help="comma-separated classes to score")
    p.add_argument(
        "--profile",
        choices=PROFILES,
        default=None,
        help="voc_devkit (default) or py_faster_rcnn (that port's quirks)",
    )
    p.add_argument(
        "--no-plus-one",
        dest="plus_one",
        action="store_const",
        const=False,
        default=None,
        help="IoU without the +1 pixel-inclusive convention",
    )
    p.add_argument(
        "--unknown-images",
        choices=("error", "warn"),
        default=None,
        help="detections for images outside the image set: error (default, as the devkit) or "
        "warn (dropped and counted)",
    )
    p.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default=None,
        help="a bad detection line or annotation object: raise (default: exit 2 naming file and record) "
        "or skip (left out, each listed in the warnings, counted in skipped_records)",
    )
    p.add_argument(
        "--config", metavar="PRESET", help="preset name (voc07, voc2012, py_faster_rcnn) or TOML file"
    )
    add_cluster_args(p)
    add_output_args(p)
    add_plot_args(p)
    add_analysis_args(p, fg_default="--iou", add_iou=False)
    add_stats_args(p, "another detections pattern")
    p.set_defaults(_route=route)
