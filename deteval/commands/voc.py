"""``deteval voc``: Pascal VOC AP per class and mAP from annotation XML and detection result files.

Classes scored by default: every class with a ground-truth object plus every class with a detection file
matching the ``{cls}`` pattern, sorted by name (the 20 VOC classes sort into the devkit's order). A class with
detections but no ground truth is reported (``ap`` null, not averaged) with a warning; a ground-truth class
without a detection file is scored with 0 detections, with a warning. ``--classes`` restricts the set.
"""

from __future__ import annotations

import argparse
import difflib
from typing import Any

import numpy as np

from deteval.analysis.cli import AnalysisHooks, run_analyses
from deteval.analysis.images import draw_worst
from deteval.analysis.inputs import voc_confusion, voc_errors, voc_images, voc_matched
from deteval.analysis.options import add_analysis_args, analyses_requested
from deteval.commands import options as opt
from deteval.commands.cluster import add_cluster_args, refuse_with_cluster
from deteval.commands.common import add_output_args, apply_preset, emit
from deteval.commands.options import Checker
from deteval.commands.stats_options import add_stats_args, stats_options
from deteval.detection.voc import METRICS, PROFILES, VOCParams
from deteval.errors import ConfigError
from deteval.io.guards import contained_path
from deteval.io.voc import discover_detection_classes, load_voc_annotations, load_voc_detections
from deteval.report import FORMATS
from deteval.report.plots import add_plot_args, write_plots_from_args
from deteval.report.progress import Progress
from deteval.run.client import dask_client
from deteval.run.voc import evaluate_voc
from deteval.stats.voc import VOCUnits

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


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    apply_preset(args, parser, DEFAULTS, OPTIONS)
    iou = float(args.iou)
    params = VOCParams(iou_threshold=iou, metric=args.metric, profile=args.profile, plus_one=args.plus_one)
    classes = args.classes
    with Progress(3, "deteval voc") as bar:
        bar.stage("reading annotations")
        gt = load_voc_annotations(args.annotations, args.image_set, on_error=args.on_error)
        bar.stage("reading detections")
        if classes is not None and args.layout == "comp4":
            _check_classes(classes, {gt.classes[i] for i in set(gt.label.tolist())}, args.detections)
        dets = _load_detections(args, gt, classes)
        if classes is not None and args.layout != "comp4":
            _check_classes(classes, {gt.classes[i] for i in set(gt.label.tolist())}, None, dets)
        bar.stage("matching and AP")
        stats = stats_options(args)
        refuse_with_cluster(args, stats is not None, analyses_requested(args))
        if stats is None:
            with dask_client(args.workers, args.scheduler) as client:
                result = evaluate_voc(
                    gt, dets, params=params, classes=classes, client=client, shards=args.shards
                )
        else:
            result = _with_statistics(args, gt, dets, params, classes, stats)
    names = list(result.per_class)

    def draw(diag: Any, inp: Any, out: str, top: int) -> Any:
        meta = gt.image_meta
        sizes = np.c_[meta["width"], meta["height"]] if "width" in meta and "height" in meta else None
        pics: list[str | None] | None = None
        if args.image_root:
            pics = [str(contained_path(args.image_root, f"{name}.jpg")) for name in gt.images]
        return draw_worst(diag, inp, names, out, top, sizes=sizes, pictures=pics, to_xyxy=lambda b: b)

    hooks = AnalysisHooks(
        errors=lambda compat, fg, bg: voc_errors(
            gt, dets, names, params=params, compat=compat, pos_threshold=fg, bg_threshold=bg
        ),
        confusion=lambda thr: voc_confusion(gt, dets, names, params=params, score_threshold=thr),
        matched=lambda: voc_matched(gt, dets, names, params=params),
        images=lambda: voc_images(gt, dets, names, params=params),
        draw=draw,
        title=f"deteval voc: {args.detections}",
    )
    run_analyses(args, result, hooks)
    emit(result, args)
    write_plots_from_args(result, args)
    return 0


def _with_statistics(
    args: argparse.Namespace, gt: Any, dets: Any, params: VOCParams, classes: Any, stats: dict[str, Any]
) -> Any:
    """Intervals and comparisons (deteval.stats): every other detections pattern is matched once."""
    others = list(args.compare_to or ())
    systems = [
        dets,
        *(
            _load_detections(argparse.Namespace(**{**vars(args), "detections": o}), gt, classes)
            for o in others
        ),
    ]
    return VOCUnits(gt, systems, params, classes).add_statistics(others, **stats)


def _check_classes(wanted: list[str], gt_classes: set[str], pattern: str | None, dets: Any = None) -> None:
    """A ``--classes`` name that neither the annotations nor the detections know is a typo, not a class
    with AP 0: refuse it, listing the known names and the closest match."""
    known = set(gt_classes)
    known |= set(discover_detection_classes(pattern)) if pattern is not None else set()
    if dets is not None:
        known |= {dets.classes[i] for i in set(dets.label.tolist())}
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


def _load_detections(args: argparse.Namespace, gt: Any, classes: list[str] | None) -> Any:
    if args.layout == "comp4":
        det_classes = classes
        if det_classes is None:
            found = {gt.classes[i] for i in set(gt.label.tolist())} | set(
                discover_detection_classes(args.detections)
            )
            det_classes = sorted(found)
    else:
        det_classes = classes
    return load_voc_detections(
        args.detections,
        gt.images,
        classes=det_classes,
        layout=args.layout,
        unknown_images=args.unknown_images,
        on_error=args.on_error,
    )


def register(sub: Any) -> None:
    p = sub.add_parser(
        "voc",
        help="Pascal VOC mAP (VOC07 11-point or VOC2010+ all-point), as the official devkit computes it",
        description=__doc__.replace("``", "'"),  # no reStructuredText markup in --help
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
    p.set_defaults(func=run, _parser=p)
