"""``deteval yolo DATA.yaml PREDICTIONS`` with statistics, analyses, figures or another task (oriented boxes,
poses): a YOLO dataset scored as Ultralytics, pycocotools or supervision would (the command's options and its
plain evaluation: :mod:`deteval.commands.yolo_plain`); and ``deteval convert`` between YOLO and COCO."""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.cli import AnalysisHooks, run_analyses
from deteval.analysis.inputs import coco_confusion
from deteval.analysis.options import analyses_requested
from deteval.analysis.yolo_inputs import yolo_confusion
from deteval.commands.coco import coco_hooks, coco_statistics
from deteval.commands.common import write_text
from deteval.commands.stats_options import stats_options
from deteval.commands.yolo_plain import (
    check_conf,
    emit_yolo,
    own_precision_recall,
    read_split,
    task_of,
)
from deteval.commands.yolo_pose import run_yolo_pose
from deteval.detection.coco_params import CocoParams
from deteval.detection.dota import PROFILE as DOTA_DEVKIT
from deteval.detection.ultralytics import evaluate_ultralytics, get_rules
from deteval.errors import ConfigError, DetevalWarning
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.io.yolo import (
    YoloDataset,
    for_exif_rule,
    load_yolo_dataset,
    load_yolo_predictions,
)
from deteval.io.yolo_coco import (
    coco_to_yolo,
    dataset_to_coco,
    image_ids,
    place_images,
    predictions_to_coco,
)
from deteval.io.yolo_obb import load_obb_predictions, load_yolo_obb
from deteval.report.progress import note
from deteval.report.stats_table import STATS_KEYS
from deteval.report.yolo_plots import YoloCurves, write_yolo_val_plots
from deteval.report.yolo_table import yolo_lines
from deteval.results import EvalResult
from deteval.run.yolo import (
    YoloResult,
    canonical_profile,
    coco_inputs,
    coco_results,
    confidence_floor,
    evaluate_yolo,
    is_ultralytics,
    probiou_pairs,
    split_reading,
)
from deteval.stats.ultralytics import UltralyticsUnits
from deteval.tables.boxes import BoxTable


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    args.task = args.task or task_of(args.data)
    if args.task == "pose":
        return run_yolo_pose(args)
    profile = args.profile or "ultralytics"
    check_conf(args)
    stats = stats_options(args)
    if stats is not None and canonical_profile(profile) == "supervision":
        raise ConfigError(
            "--ci and --compare-to resample images under --profile coco (pycocotools' numbers) or an "
            "Ultralytics profile, not supervision (its float32 port of pycocotools is not resampled)"
        )
    if args.task != "detect":
        return _run_task(args, profile, stats)
    ds, preds = read_split(args.data, args.predictions, args.split, profile, args.conf)
    result = evaluate_yolo(ds, preds, profile, iou_type=args.iou_type)
    others = [confidence_floor(load_yolo_predictions(o, ds), args.conf) for o in args.compare_to or ()]
    return _finish(args, result, ds, preds, others, profile, stats, task="detect")


def _run_task(args: argparse.Namespace, profile: str, stats: dict[str, Any] | None) -> int:
    """``--task obb``: oriented boxes (:mod:`deteval.io.yolo_obb`) under ``profile``, with the statistics
    (coco: pycocotools' resampling with the polygon IoU; Ultralytics eras: theirs with ProbIoU), the analyses
    (coco: pycocotools' matching with the polygon IoU, the worst images drawn as polygons) and ``--plots``."""
    if args.task != "obb":
        raise ConfigError(f"--task {args.task} is not scored by deteval yolo")
    name = canonical_profile(profile)
    wanted = analyses_requested(args)
    if args.iou_type != "bbox":
        raise ConfigError(
            f"--iou-type {args.iou_type} is for --task detect; --task obb scores oriented boxes"
        )
    if wanted and name != "coco":
        raise ConfigError(
            f"the analyses of oriented boxes (--errors, --confusion, --operating-points, --calibration, "
            f"--worst-images, --images, --html) are pycocotools' matching with the polygon IoU: give --profile "
            f"coco ({profile} defines none)"
        )
    if stats is not None and name == DOTA_DEVKIT:
        raise ConfigError(
            "--ci and --compare-to resample oriented boxes under --profile coco or an Ultralytics profile, not "
            "dota_devkit"
        )
    with warnings.catch_warnings():  # (what the readers tolerate is in ds.warnings, printed below)
        warnings.simplefilter("ignore", DetevalWarning)
        ds, preds, _, _ = load_yolo_obb(args.data, args.predictions, args.split, **split_reading(profile))
        others = [load_obb_predictions(o, ds)[0] for o in args.compare_to or ()]
    preds = confidence_floor(preds, args.conf)
    others = [confidence_floor(o, args.conf) for o in others]
    result = evaluate_yolo(ds, preds, profile, iou_type="obb")
    return _finish(args, result, ds, preds, others, profile, stats, task="obb")


def _finish(
    args: argparse.Namespace,
    result: YoloResult,
    ds: YoloDataset,
    preds: BoxTable,
    others: list[BoxTable],
    profile: str,
    stats: dict[str, Any] | None,
    *,
    task: str,
) -> int:
    """Add to ``result`` (``preds`` scored under ``profile``) the statistics over images with the ``others``
    (``--compare-to``: an Ultralytics profile's own resampling, oriented boxes with ProbIoU; else
    pycocotools'), the P and R of the profiles that define none, the analyses and ``--plots``; write it."""
    obb = task == "obb"
    iou_type = "obb" if obb else args.iou_type
    wanted = analyses_requested(args)
    own_pr = not obb and "precision" not in result.summary and iou_type == "bbox"
    ultra = is_ultralytics(profile)
    if stats is not None and ultra:
        rule = get_rules(profile).exif  # (image sizes as that Ultralytics version reads them)
        sized = [for_exif_rule(ds, p, rule) for p in (preds, *others)]
        units = UltralyticsUnits(
            sized[0][0].labels,
            [p for _, p in sized],
            ds.n_images,
            ds.names,
            profile,
            ious=[probiou_pairs(d, p) for d, p in sized] if obb else None,
        )
        units.add_statistics(result, list(args.compare_to or ()), **stats)
    if (stats is not None and not ultra) or wanted:  # the COCO-protocol inputs the analyses read
        gt, res = coco_inputs(ds, preds, iou_type, all_sizes=wanted)
        params = CocoParams.from_options(iou_type)
    if own_pr:
        own_precision_recall(result, ds, preds)
    if stats is not None and not ultra:
        systems = [res, *(coco_results(ds, o, gt, iou_type) for o in others)]
        names = list(args.compare_to or ())
        _, with_stats = coco_statistics(gt, systems, names, params, "pycocotools", stats, True)
        adopt_statistics(result, with_stats)
    result.lines = yolo_lines(result)
    if wanted:
        run_analyses(args, result, _hooks(args, ds, preds, gt, res, params, profile))
    if args.plots:
        write_yolo_plots(ds, preds, profile, args, task=task)
    emit_yolo(result, args)
    return 0


def _hooks(
    args: argparse.Namespace,
    ds: YoloDataset,
    preds: BoxTable,
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    profile: str,
) -> AnalysisHooks:
    """The analyses on the split's COCO-protocol inputs, the worst images drawn on the dataset's pictures;
    under an Ultralytics profile the confusion matrix is ``yolo val``'s (:func:`yolo_confusion`)."""
    by_id = dict(zip(image_ids(ds), ds.images))
    hooks = coco_hooks(
        gt,
        res,
        params,
        compat="pycocotools",
        iou=0.5 if args.iou is None else args.iou,
        title=f"deteval yolo: {Path(args.predictions).name} ({profile})",
        per_class=None,
        pictures=lambda: [str(by_id[i]) for i in gt.image_ids.tolist()],
    )
    if is_ultralytics(profile):  # yolo val's own matrix, of the profile's era
        hooks.confusion = lambda _: yolo_confusion(
            ds, preds, profile, val_conf=args.conf, iou=args.iou, score_threshold=args.score_threshold
        )
    return hooks


def write_yolo_plots(
    ds: YoloDataset, preds: BoxTable, profile: str, args: argparse.Namespace, *, task: str = "detect"
) -> None:
    """``--plots DIR``: the figures ``yolo val`` writes (:mod:`deteval.report.yolo_plots`), from the profile's
    Ultralytics era (the newest under coco, supervision and dota_devkit, which define no confidence curves),
    and the confusion matrix of :func:`yolo_confusion` (``yolo val``'s under an Ultralytics profile;
    ``task="obb"``: the era's ProbIoU for the curves, the polygon IoU of the COCO-style protocol for the
    matrix at ``--iou`` and ``--score-threshold``)."""
    era = profile if is_ultralytics(profile) else "ultralytics"
    ds, preds = for_exif_rule(ds, preds, get_rules(era).exif)  # (image sizes as that version reads them)
    iou = probiou_pairs(ds, preds) if task == "obb" else None
    m = evaluate_ultralytics(ds.labels, preds, ds.n_images, era, iou=iou)
    x = m.extra
    curves = YoloCurves(
        [ds.names[int(c)] for c in m.classes],
        m.ap[:, 0] if len(m.ap) else np.zeros(0),
        x["p_curve"],
        x["r_curve"],
        x["f1_curve"],
        x["pr_plot"],
    )
    if task == "obb":
        gt, res = coco_inputs(ds, preds, "obb")
        confusion = coco_confusion(
            gt,
            res,
            params=CocoParams.from_options("obb"),
            iou=0.5 if args.iou is None else args.iou,
            score_threshold=0.25 if args.score_threshold is None else args.score_threshold,
        )
    else:
        confusion = yolo_confusion(
            ds, preds, profile, val_conf=args.conf, iou=args.iou, score_threshold=args.score_threshold
        )
    paths = write_yolo_val_plots(args.plots, curves, confusion)
    note(f"deteval: wrote {len(paths)} plot(s) to {args.plots}: {', '.join(p.name for p in paths)}")


def adopt_statistics(result: EvalResult, with_stats: EvalResult) -> None:
    """Move the intervals and comparisons that :mod:`deteval.stats` attached to the COCO-protocol result
    ``with_stats`` into the YOLO ``result``: the summary fields (keyed by pycocotools' stat names) and each
    class's AP interval."""
    for key in STATS_KEYS:
        if key in with_stats.summary:
            result.summary[key] = with_stats.summary[key]
    for name, row in result.per_class.items():
        other = with_stats.per_class.get(name)
        if other is not None and "ci" in other:
            row["ci"] = other["ci"]


def run_convert(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    src = Path(args.source)
    if src.suffix.lower() in (".yaml", ".yml"):
        ds = load_yolo_dataset(src, args.split)
        write_text(json.dumps(dataset_to_coco(ds)) + "\n", args.output)
        if args.predictions:
            if not args.predictions_out:
                raise ConfigError("--predictions needs --predictions-out FILE.json")
            preds = load_yolo_predictions(args.predictions, ds)
            write_text(json.dumps(predictions_to_coco(ds, preds)) + "\n", args.predictions_out)
        return 0
    if src.suffix.lower() == ".json":
        if not args.output:
            raise ConfigError("COCO → YOLO needs -o OUT_DIR (labels/ and data.yaml are written there)")
        print(coco_to_yolo(src, args.output))
        _place_images(src, args)
        return 0
    raise ConfigError("SOURCE must be a data.yaml (YOLO → COCO) or a COCO .json (COCO → YOLO)", file=str(src))


def _place_images(src: Path, args: argparse.Namespace) -> None:
    """Link (or copy) the pictures into OUT_DIR/images, and say where the missing ones must go."""
    if args.no_images:
        note(f"deteval: no images placed: put them in {Path(args.output) / 'images'} under their file names")
        return
    placed, missing = place_images(src, args.output, args.image_root, copy=args.copy_images)
    if placed:
        how = "copied" if args.copy_images else "linked"
        note(f"deteval: {how} {placed} image(s) into {Path(args.output) / 'images'}")
    if missing:
        root = args.image_root or src.parent
        note(
            f"deteval: warning: {len(missing)} image(s) not found under {root} (e.g. {missing[0]}): deteval yolo "
            f"needs each in {Path(args.output) / 'images'} under its file name ({missing[0].name}); pass "
            "--image-root FOLDER (the folder file_name is relative to) or put them there"
        )


def register(command: Any) -> None:
    c = command(
        "convert",
        run_convert,
        description="SOURCE data.yaml: write the split as COCO ground truth (and --predictions as COCO "
        "results). SOURCE .json (COCO): write labels/<stem>.txt and data.yaml into -o OUT_DIR.",
    )
    c.add_argument("source", metavar="SOURCE", help="data.yaml or a COCO ground-truth .json")
    c.add_argument("--split", default="val", help="the YOLO split to convert (default: val)")
    c.add_argument("--predictions", metavar="PRED", help="YOLO predictions to convert as well")
    c.add_argument("--predictions-out", metavar="FILE", help="where the COCO results go")
    c.add_argument("--output", "-o", metavar="OUT", help="COCO .json (default: stdout) or the YOLO folder")
    c.add_argument(
        "--image-root",
        metavar="DIR",
        help="COCO → YOLO: the folder the images' file_name is relative to (default: the .json's folder)",
    )
    c.add_argument(
        "--copy-images",
        action="store_true",
        help="COCO → YOLO: copy the images into OUT/images (default: symbolic links)",
    )
    c.add_argument("--no-images", action="store_true", help="COCO → YOLO: leave OUT/images to you")
