"""``deteval voc`` with more than the numbers: statistics (``--ci``, ``--compare-to``), analyses, figures and
cluster runs (the command's options and its plain evaluation: :mod:`deteval.commands.voc_plain`, whose
``route`` sends the command here)."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from deteval.analysis.cli import AnalysisHooks, run_analyses
from deteval.analysis.images import draw_worst
from deteval.analysis.inputs import voc_confusion, voc_errors, voc_images, voc_matched
from deteval.analysis.options import analyses_requested
from deteval.commands.cluster import refuse_with_cluster
from deteval.commands.common import emit
from deteval.commands.stats_options import stats_options
from deteval.commands.voc_plain import load_detections, read_inputs, voc_params
from deteval.detection.voc import VOCParams
from deteval.io.guards import contained_path
from deteval.report.plots import write_plots_from_args
from deteval.report.progress import Progress
from deteval.run.client import dask_client
from deteval.run.voc import evaluate_voc
from deteval.stats.voc import VOCUnits

__all__ = ["run"]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``deteval voc`` with statistics, analyses, figures or a cluster."""
    params = voc_params(args, parser)
    classes = args.classes
    with Progress(3, "deteval voc") as bar:
        gt, dets = read_inputs(args, bar)
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
            load_detections(argparse.Namespace(**{**vars(args), "detections": o}), gt, classes)
            for o in others
        ),
    ]
    return VOCUnits(gt, systems, params, classes).add_statistics(others, **stats)
