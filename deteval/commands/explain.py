"""``deteval explain``: the difference between two profiles' mAP, walked one rule at a time
(:mod:`deteval.explain`): YOLO/COCO profiles of a YOLO dataset (detect and oriented boxes), two VOC profiles,
or coco with a VOC profile on a COCO pair, a YOLO dataset or VOC data."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

from deteval.commands.common import warn_on_stderr, write_text
from deteval.commands.yolo_plain import read_split, task_of
from deteval.detection.dota import PROFILE as DOTA_DEVKIT
from deteval.detection.ultralytics import get_rules
from deteval.errors import ConfigError, DetevalWarning
from deteval.explain import explain, explain_obb
from deteval.explain.cross import cross_data, cross_data_from_voc, explain_cross
from deteval.explain.voc import VOC_PROFILE_RULES, explain_voc
from deteval.io.voc import discover_detection_classes, load_voc_annotations, load_voc_detections
from deteval.io.yolo import YoloDataset, load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco
from deteval.io.yolo_images import image_check
from deteval.io.yolo_obb import load_yolo_obb
from deteval.results import EvalResult
from deteval.run.yolo import PROFILE_NAMES, is_ultralytics


def _voc_tables(args: argparse.Namespace) -> tuple[Any, Any]:
    gt = load_voc_annotations(args.data, args.image_set)
    classes = sorted(
        {gt.classes[i] for i in set(gt.label.tolist())} | set(discover_detection_classes(args.predictions))
    )
    return gt, load_voc_detections(args.predictions, gt.images, classes=classes)


def _explain_cross(args: argparse.Namespace) -> Any:
    """coco vs a VOC profile on a COCO pair (DATA .json, PREDICTIONS .json), a YOLO dataset or VOC data."""
    if Path(args.data).is_dir():
        data = cross_data_from_voc(*_voc_tables(args))
    elif args.image_set:
        raise ConfigError("--image-set is for a VOC Annotations folder", file=str(args.data))
    elif str(args.data).lower().endswith((".yaml", ".yml")):
        ds = load_yolo_dataset(args.data, args.split)
        preds = load_yolo_predictions(args.predictions, ds)
        data = cross_data(dataset_to_coco(ds), predictions_to_coco(ds, preds))
    elif str(args.data).lower().endswith(".json"):
        data = cross_data(args.data, args.predictions)
    else:
        raise ConfigError(
            "coco vs a VOC profile needs DATA as a COCO ground-truth .json (with PREDICTIONS a COCO results "
            ".json), a YOLO data.yaml or a VOC Annotations folder",
            file=str(args.data),
        )
    return explain_cross(data, args.from_profile, args.to_profile)


def _explain_task(args: argparse.Namespace) -> str:
    """``--task``, else obb where a profile is dota_devkit, else what the data.yaml implies (pose refused)."""
    devkit = DOTA_DEVKIT in (args.from_profile, args.to_profile)
    task = args.task or ("obb" if devkit else task_of(args.data))
    if task == "pose":
        raise ConfigError(
            "explain walks the detect and obb profiles, not pose (this data.yaml has kpt_shape)",
            file=str(args.data),
        )
    if devkit and task != "obb":
        raise ConfigError("the dota_devkit profile scores oriented boxes: give --task obb")
    return task


def image_era(args: argparse.Namespace) -> str | None:
    """The Ultralytics image check (an era of :data:`~deteval.io.yolo_images.IMAGE_FORMATS`) explain reads the
    split with, once for both ends: the Ultralytics end's (Ultralytics leaves a corrupt image out in every task,
    as duplicate labels; the other end then sees the same split); two Ultralytics ends of different eras: the
    newest's, checked by :func:`same_images` to leave out the same images as the other's. None: no
    Ultralytics end, no check."""
    eras = sorted({get_rules(p).images for p in (args.from_profile, args.to_profile) if is_ultralytics(p)})
    return eras[-1] if eras else None


def same_images(args: argparse.Namespace, ds: YoloDataset, era: str | None) -> None:
    """Refuse a walk between two Ultralytics eras whose image checks leave different images of ``ds`` (read with
    ``era``'s check) out: each end would score another split (a ConfigError naming the first such image)."""
    others = {get_rules(p).images for p in (args.from_profile, args.to_profile) if is_ultralytics(p)} - {era}
    for other in sorted(others):
        for f, kept in [*((f, True) for f in ds.files), *((str(p), False) for p in ds.dropped_images)]:
            if (image_check(f, other)[1] is None) != kept:
                raise ConfigError(
                    f"the image check of {args.from_profile} and {args.to_profile} differ on this image (its "
                    "format): explain walks between two profiles of one split; score each with deteval yolo",
                    file=f,
                )


def _explain_obb(args: argparse.Namespace, drop: bool) -> int:
    era = image_era(args)
    with warnings.catch_warnings():  # (what the readers tolerate is in ds.warnings, printed below)
        warnings.simplefilter("ignore", DetevalWarning)
        ds, preds, _, _ = load_yolo_obb(
            args.data, args.predictions, args.split, duplicates="drop" if drop else "error", check_images=era
        )
    same_images(args, ds, era)
    return _write(explain_obb(ds, preds, args.from_profile, args.to_profile), args, ds.warnings)


def _write(e: Any, args: argparse.Namespace, read_warnings: list[str] | None = None) -> int:
    """Write the walk ``e`` in ``--format`` to ``--output``, and what the readers tolerated through the common
    channel."""
    write_text(e.to_json() if args.format == "json" else e.to_text(), args.output)
    if read_warnings is not None:
        warn_on_stderr(EvalResult("yolo", warnings=list(read_warnings)))
    return 0


def run_explain(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    voc = [p in VOC_PROFILE_RULES for p in (args.from_profile, args.to_profile)]
    if any(voc) and args.task == "obb":
        raise ConfigError(
            "--task obb walks between coco, dota_devkit and the Ultralytics profiles; the VOC profiles score "
            "axis-aligned boxes"
        )
    if any(voc) and not all(voc) and "coco" in (args.from_profile, args.to_profile):
        return _write(_explain_cross(args), args)
    if any(voc):
        if not all(voc):
            raise ConfigError(
                "explain compares two VOC profiles, two YOLO/COCO profiles or coco with a VOC profile, "
                "not one of each"
            )
        gt, dets = _voc_tables(args)
        return _write(explain_voc(gt, dets, args.from_profile, args.to_profile), args)
    if args.image_set:
        raise ConfigError("--image-set is for the VOC profiles (voc07, voc2012, py_faster_rcnn)")
    either = is_ultralytics(args.from_profile) or is_ultralytics(args.to_profile)
    if _explain_task(args) == "obb":
        return _explain_obb(args, either)
    # (explain reads the split once for both ends: duplicates and corrupt images left out if either is
    # Ultralytics, as that end's yolo val leaves them out)
    era = image_era(args)
    ends = [p for p in (args.from_profile, args.to_profile) if is_ultralytics(p)]
    reader = next((p for p in ends if get_rules(p).images == era), "coco")  # (its duplicates and image rules)
    ds, preds = read_split(args.data, args.predictions, args.split, reader, None)
    same_images(args, ds, era)
    return _write(explain(ds, preds, args.from_profile, args.to_profile), args, ds.warnings)


def register(command: Any) -> None:
    e = command(
        "explain",
        run_explain,
        description="Score a YOLO dataset's predictions under --from and --to, and walk from one to the other "
        "changing one rule at a time (matcher, end sentinel, AP integration and ranking, float32, detection "
        "cap), printing each step's change in mAP50-95 and mAP50 and how many cases triggered it. The steps add "
        "up to the difference. Also between two VOC profiles, between coco and a VOC profile on a COCO "
        "pair or a YOLO dataset, and (--task obb) between the oriented-box profiles coco, dota_devkit and "
        "ultralytics* of a YOLO-OBB dataset. See docs/yolo.md, docs/obb.md and docs/explain.md.",
    )
    e.add_argument(
        "data",
        metavar="DATA",
        help="the dataset's data.yaml (VOC: the Annotations folder; coco vs a VOC profile: also a COCO "
        "ground-truth .json)",
    )
    e.add_argument(
        "predictions",
        metavar="PREDICTIONS",
        help="folder of txt files or a JSON file (VOC: a comp4 pattern with {cls})",
    )
    names = (*PROFILE_NAMES, *VOC_PROFILE_RULES)
    e.add_argument("--from", dest="from_profile", choices=names, required=True, help="profile A")
    e.add_argument("--to", dest="to_profile", choices=names, required=True, help="profile B")
    e.add_argument(
        "--task",
        choices=("detect", "obb"),
        help="obb: a YOLO-OBB dataset, walked between coco, dota_devkit and the Ultralytics profiles "
        "(default: obb where a profile is dota_devkit, else detect)",
    )
    e.add_argument("--image-set", metavar="FILE", help="VOC only: the image-set list (default: every XML)")
    e.add_argument("--split", default="val", help="train, val (default) or test")
    e.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    e.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE instead of stdout")
