"""``deteval coco`` with more than the numbers: statistics (``--ci``, ``--compare-to``), analyses, figures,
sharded runs and the progress bar (the command's options and its plain evaluation:
:mod:`deteval.commands.coco_plain`, whose ``route`` sends the command here)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deteval.analysis.cli import AnalysisHooks, run_analyses
from deteval.analysis.images import draw_worst
from deteval.analysis.inputs import coco_confusion, coco_errors, coco_images, coco_matched
from deteval.analysis.options import analyses_requested
from deteval.commands.cluster import refuse_with_cluster, sharding_requested
from deteval.commands.coco_plain import coco_params
from deteval.commands.common import emit, wants_per_class
from deteval.commands.stats_options import stats_options
from deteval.detection.coco_params import MASK_TYPES, CocoParams, results_kind
from deteval.io.coco import load_coco_gt, load_coco_results, read_json
from deteval.io.coco_obb import load_obb_results
from deteval.io.guards import contained_path
from deteval.report.plots import write_plots_from_args
from deteval.report.progress import Progress
from deteval.run.client import dask_client
from deteval.run.coco import evaluate_coco, load_results_files, obb_inputs
from deteval.stats.coco import CocoUnits

__all__ = ["coco_hooks", "coco_statistics", "run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``deteval coco`` with statistics, analyses, figures, a cluster or a progress bar."""
    params = coco_params(args, parser)
    sources = list(args.results)
    stats = stats_options(args)
    refuse_with_cluster(args, stats is not None, analyses_requested(args))
    if sharding_requested(args):
        # the workers read the result files in byte ranges; this process reads the ground truth, and only
        # match tables come back to it
        with dask_client(args.workers, args.scheduler) as client, Progress(1, "deteval coco") as bar:
            bar.stage("matching on image shards and accumulating")
            ev = evaluate_coco(
                args.gt, sources, params=params, compat=args.compat, on_error=args.on_error,
                client=client, shards=args.shards,
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
    args: argparse.Namespace,
    gt: Any,
    results: Any,
    params: CocoParams,
    stats: dict[str, Any],
    per_class: bool,
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
    units = CocoUnits(gt, systems, params=params, compat=compat)
    result = units.add_statistics(others, **stats)
    if not per_class:
        result.per_class = {}
    return units.evaluations[0], result
