"""``deteval coco GT.json RESULTS.json``: the COCO protocol (bbox, segm, keypoints), identical to pycocotools."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deteval.analysis.cli import AnalysisHooks, add_analysis_args, analyses_requested, run_analyses
from deteval.analysis.images import draw_worst
from deteval.analysis.inputs import coco_confusion, coco_errors, coco_images, coco_matched
from deteval.commands import options as opt
from deteval.commands.cluster import add_cluster_args, cluster_requested, refuse_with_cluster
from deteval.commands.common import add_boundary_args, add_output_args, apply_preset, emit, wants_per_class
from deteval.commands.options import Checker
from deteval.commands.stats_options import add_stats_args, stats_options
from deteval.detection.coco import COMPAT_MODES
from deteval.detection.coco_params import FIELDS, IOU_TYPES, MASK_TYPES, CocoParams, results_kind
from deteval.io.coco import load_coco_gt, load_coco_results, read_json
from deteval.io.coco_obb import load_obb_results
from deteval.io.guards import contained_path
from deteval.match.boundary import BOUNDARY_PROFILES
from deteval.report import FORMATS
from deteval.report.plots import add_plot_args, write_plots_from_args
from deteval.report.progress import Progress, bar_shown
from deteval.run.client import dask_client
from deteval.run.coco import evaluate_coco, load_results_files, obb_inputs

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


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    apply_preset(
        args,
        parser,
        {"iou_type": "bbox", "compat": "pycocotools", "per_class": False, "on_error": "raise"},
        OPTIONS,
    )
    options: dict[str, Any] = {
        k: getattr(args, k) for k in _PARAM_OPTIONS if getattr(args, k, None) is not None
    }
    params = CocoParams.from_options(args.iou_type, **options)
    sources = list(args.results)
    stats = stats_options(args)
    refuse_with_cluster(args, stats is not None, analyses_requested(args))
    if cluster_requested(args) or args.shards is not None:
        # the workers read the result files in byte ranges; this process reads the ground truth, and only
        # match tables come back to it
        with dask_client(args.workers, args.scheduler) as client, Progress(1, "deteval coco") as bar:
            bar.stage("matching on image shards and accumulating")
            ev = evaluate_coco(
                args.gt, sources, params=params, compat=args.compat, on_error=args.on_error,
                client=client, shards=args.shards,
            )  # fmt: skip
        return _report(ev, args)
    if stats is None and not analyses_requested(args) and not bar_shown():
        # only the numbers asked for, no bar to draw the stages on: the runner reads the files itself, as
        # evaluate_coco(path, path) does (ground truth and results on two cores where that pays)
        ev = evaluate_coco(
            args.gt, sources[0] if len(sources) == 1 else sources,
            params=params, compat=args.compat, on_error=args.on_error,
        )  # fmt: skip
        return _report(ev, args)
    with Progress(3, "deteval coco") as bar:
        bar.stage("reading ground truth")
        gt_source, read = args.gt, sources
        if params.iou_type == "obb":  # oriented boxes: their own reader (deteval.io.coco_obb), into tables
            gt_source, obb_results = obb_inputs(args.gt, sources, args.on_error)
            read = [obb_results]
        gt = load_coco_gt(
            gt_source,
            keep_segmentation=params.iou_type in MASK_TYPES,
            need_keypoints=params.iou_type == "keypoints",
            on_error=args.on_error,
        )
        bar.stage("reading results")
        if len(read) == 1:
            results = load_coco_results(
                read[0], gt, iou_type=results_kind(params.iou_type), on_error=args.on_error
            )
        else:
            results = load_results_files(
                read, gt, iou_type=results_kind(params.iou_type), on_error=args.on_error
            )
        bar.stage("matching and accumulating")
        if stats is None:
            ev = evaluate_coco(gt, results, params=params, compat=args.compat, on_error=args.on_error)
    if stats is not None:
        ev, result = _with_statistics(args, gt, results, params, stats, wants_per_class(args))
    else:
        result = ev.to_result(per_class=wants_per_class(args))
    hooks = coco_hooks(
        gt,
        results,
        params,
        compat=args.compat,
        iou=0.5 if args.iou is None else args.iou,
        title=f"deteval coco: {', '.join(Path(s).name for s in sources)}",
        per_class=lambda: ev.to_result(per_class=True).per_class,
        pictures=lambda: _pictures(args, gt),
    )
    run_analyses(args, result, hooks)
    return _report(ev, args, result)


def coco_hooks(
    gt: Any,
    results: Any,
    params: CocoParams,
    *,
    compat: str,
    iou: float,
    title: str,
    per_class: Callable[[], dict[str, dict]] | None,
    pictures: Callable[[], list[str | None] | None],
) -> AnalysisHooks:
    """How the analyses (:mod:`deteval.analysis.cli`) are computed on a COCO ground truth and results:
    pycocotools' matching at ``iou`` (errors at their own IoUs), worst images drawn on ``pictures()`` (one
    path or None per image, ascending id; None: a grey canvas)."""

    def draw(diag: Any, inp: Any, out: str, top: int) -> Any:
        sizes = gt.image_hw[:, ::-1] if (gt.image_hw >= 0).all() else None
        return draw_worst(diag, inp, gt.cat_names, out, top, sizes=sizes, pictures=pictures())

    return AnalysisHooks(
        errors=lambda errors_compat, fg, bg: coco_errors(
            gt,
            results,
            params=params,
            compat=errors_compat,
            pos_threshold=0.5 if fg is None else fg,
            bg_threshold=bg,
            summary_compat=compat,
        ),
        confusion=lambda thr: coco_confusion(gt, results, params=params, iou=iou, score_threshold=thr),
        matched=lambda: coco_matched(gt, results, params=params, iou=iou),
        images=lambda: coco_images(gt, results, params=params, iou=iou),
        draw=draw,
        title=title,
        per_class=per_class,
    )


def _report(ev: Any, args: argparse.Namespace, result: Any = None) -> int:
    if result is None:
        result = ev.to_result(per_class=wants_per_class(args))
    emit(result, args)
    if not getattr(args, "plots", None):
        return 0  # the per-class rows and curves the figures need are built only when figures are asked for
    write_plots_from_args(
        ev.to_result(per_class=True),
        args,
        coco_arrays={
            "precision": ev.precision,
            "iou_thrs": ev.params.iou_thrs,
            "rec_thrs": ev.params.rec_thrs,
            "names": [ev.cat_names[k] for k in ev.array_categories.tolist()],
        },
    )
    return 0


def _pictures(args: argparse.Namespace, gt: Any) -> list[str | None] | None:
    """``--image-root``/``file_name`` per image (ascending id): the ground-truth file is read once more, only
    when pictures are asked for (the loader keeps no file names)."""
    if not args.image_root:
        return None
    doc = read_json(args.gt)
    by_id = {im.get("id"): im.get("file_name") for im in doc.get("images", []) if isinstance(im, dict)}
    names = [by_id.get(i) for i in gt.image_ids.tolist()]
    return [str(contained_path(args.image_root, n, args.gt)) if isinstance(n, str) else None for n in names]


def _with_statistics(
    args: argparse.Namespace, gt: Any, results: Any, params: Any, stats: dict[str, Any], per_class: bool
) -> tuple[Any, Any]:
    """Intervals and comparisons over images (deteval.stats); each --compare-to file is matched once."""
    others = list(args.compare_to or ())
    systems = [
        results,
        *(
            load_obb_results(o, gt)
            if params.iou_type == "obb"
            else load_coco_results(o, gt, iou_type=results_kind(params.iou_type), on_error=args.on_error)
            for o in others
        ),
    ]
    return coco_statistics(gt, systems, others, params, args.compat, stats, per_class)


def coco_statistics(
    gt: Any,
    systems: list[Any],
    others: list[str],
    params: Any,
    compat: str,
    stats: dict[str, Any],
    per_class: bool,
) -> tuple[Any, Any]:
    """The first system's evaluation and its result with intervals over images and comparisons with the
    other ``systems`` (named ``others``), as :meth:`deteval.stats.coco.CocoUnits.add_statistics` gives."""
    from deteval.stats.coco import CocoUnits  # (only with statistics: the plain evaluation skips its import)

    units = CocoUnits(gt, systems, params=params, compat=compat)
    result = units.add_statistics(others, **stats)
    if not per_class:
        result.per_class = {}
    return units.evaluations[0], result


def _bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {value!r}")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "coco",
        help="COCO detection / segmentation / keypoints evaluation (pycocotools numbers, much faster)",
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
    p.set_defaults(func=run, _parser=p)
