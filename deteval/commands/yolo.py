"""``deteval yolo DATA.yaml PREDICTIONS``: a YOLO dataset scored as Ultralytics, pycocotools or supervision
would; and ``deteval convert`` between YOLO and COCO."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from deteval.commands.common import write_text
from deteval.commands.yolo_pose import run_yolo_pose
from deteval.errors import ConfigError, DetevalWarning
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions, read_data_yaml
from deteval.report.progress import note
from deteval.report.warning_cap import shown_warnings
from deteval.report.yolo_table import YOLO_FORMATS, render_yolo
from deteval.run.yolo import PROFILE_NAMES, evaluate_yolo_files, is_ultralytics

VOC_EXPLAIN_PROFILES = ("voc07", "voc2012", "py_faster_rcnn")  # deteval.explain.voc.VOC_PROFILE_RULES
TASKS = ("detect", "obb", "pose")


def task_of(data_yaml: str) -> str:
    """The task a data.yaml implies, as Ultralytics infers it: pose where it has ``kpt_shape``."""
    if not str(data_yaml).lower().endswith((".yaml", ".yml")) or not Path(data_yaml).is_file():
        return "detect"  # (the loader names what is wrong with it)
    return "pose" if read_data_yaml(data_yaml, {"kpt_shape"}).get("kpt_shape") is not None else "detect"


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if (args.task or task_of(args.data)) == "pose":
        return run_yolo_pose(args)
    with warnings.catch_warnings():  # (what the readers tolerate is in result.warnings, printed below)
        warnings.simplefilter("ignore", DetevalWarning)
        result = evaluate_yolo_files(
            args.data,
            args.predictions,
            split=args.split,
            profile=args.profile or "ultralytics",
            iou_type=args.iou_type,
        )
    write_text(render_yolo(result, args.format or "table"), args.output)
    sys.stdout.flush()
    for w in shown_warnings(result.warnings):  # the channel of every other command's warnings
        note(f"deteval: warning: {w}")
    return 0


def _voc_tables(args: argparse.Namespace) -> tuple[Any, Any]:
    from deteval.io.voc import discover_detection_classes, load_voc_annotations, load_voc_detections

    gt = load_voc_annotations(args.data, args.image_set)
    classes = sorted(
        {gt.classes[i] for i in set(gt.label.tolist())} | set(discover_detection_classes(args.predictions))
    )
    return gt, load_voc_detections(args.predictions, gt.images, classes=classes)


def _explain_voc(args: argparse.Namespace) -> Any:
    from deteval.explain.voc import explain_voc

    gt, dets = _voc_tables(args)
    return explain_voc(gt, dets, args.from_profile, args.to_profile)


def _explain_cross(args: argparse.Namespace) -> Any:
    """coco vs a VOC profile on a COCO pair (DATA .json, PREDICTIONS .json), a YOLO dataset or VOC data."""
    from deteval.explain.cross import cross_data, cross_data_from_voc, explain_cross

    if Path(args.data).is_dir():
        gt, dets = _voc_tables(args)
        return explain_cross(cross_data_from_voc(gt, dets), args.from_profile, args.to_profile)
    if args.image_set:
        raise ConfigError("--image-set is for a VOC Annotations folder", file=str(args.data))
    if str(args.data).lower().endswith((".yaml", ".yml")):
        from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco

        ds = load_yolo_dataset(args.data, args.split)
        preds = load_yolo_predictions(args.predictions, ds)
        return explain_cross(
            cross_data(dataset_to_coco(ds), predictions_to_coco(ds, preds)),
            args.from_profile,
            args.to_profile,
        )
    if not str(args.data).lower().endswith(".json"):
        raise ConfigError(
            "coco vs a VOC profile needs DATA as a COCO ground-truth .json (with PREDICTIONS a COCO results "
            ".json), a YOLO data.yaml or a VOC Annotations folder",
            file=str(args.data),
        )
    return explain_cross(cross_data(args.data, args.predictions), args.from_profile, args.to_profile)


def run_explain(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from deteval.explain import explain
    from deteval.explain.voc import VOC_PROFILE_RULES

    voc = [p in VOC_PROFILE_RULES for p in (args.from_profile, args.to_profile)]
    if any(voc) and not all(voc) and "coco" in (args.from_profile, args.to_profile):
        e = _explain_cross(args)
        write_text(e.to_json() if args.format == "json" else e.to_text(), args.output)
        return 0
    if any(voc):
        if not all(voc):
            raise ConfigError(
                "explain compares two VOC profiles, two YOLO/COCO profiles or coco with a VOC profile, "
                "not one of each"
            )
        e = _explain_voc(args)
        write_text(e.to_json() if args.format == "json" else e.to_text(), args.output)
        return 0
    if args.image_set:
        raise ConfigError("--image-set is for the VOC profiles (voc07, voc2012, py_faster_rcnn)")
    either = is_ultralytics(args.from_profile) or is_ultralytics(args.to_profile)
    ds = load_yolo_dataset(args.data, args.split, duplicates="drop" if either else "error")
    preds = load_yolo_predictions(args.predictions, ds)
    e = explain(ds, preds, args.from_profile, args.to_profile)
    write_text(e.to_json() if args.format == "json" else e.to_text(), args.output)
    return 0


def run_convert(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    src = Path(args.source)
    if src.suffix.lower() in (".yaml", ".yml"):
        from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco

        ds = load_yolo_dataset(src, args.split)
        write_text(json.dumps(dataset_to_coco(ds)) + "\n", args.output)
        if args.predictions:
            if not args.predictions_out:
                raise ConfigError("--predictions needs --predictions-out FILE.json")
            preds = load_yolo_predictions(args.predictions, ds)
            write_text(json.dumps(predictions_to_coco(ds, preds)) + "\n", args.predictions_out)
        return 0
    if src.suffix.lower() == ".json":
        from deteval.io.yolo_coco import coco_to_yolo

        if not args.output:
            raise ConfigError("COCO → YOLO needs -o OUT_DIR (labels/ and data.yaml are written there)")
        print(coco_to_yolo(src, args.output))
        return 0
    raise ConfigError("SOURCE must be a data.yaml (YOLO → COCO) or a COCO .json (COCO → YOLO)", file=str(src))


def register(sub: Any) -> None:
    p = sub.add_parser(
        "yolo",
        help="score a YOLO dataset's predictions as yolo val, pycocotools or supervision would",
        description="Score PREDICTIONS (a folder of `yolo predict save_txt save_conf` files, or a JSON list: "
        "yolo val's predictions.json or COCO results) against one split of a YOLO dataset, under a profile: "
        "coco (pycocotools), supervision, ultralytics-8.0, ultralytics-8.4.37, ultralytics-8.4.176 "
        "(ultralytics = the newest). See docs/yolo.md.",
    )
    p.add_argument("data", metavar="DATA.yaml", help="the dataset's data.yaml")
    p.add_argument("predictions", metavar="PREDICTIONS", help="folder of txt files, or a JSON file")
    p.add_argument("--split", default="val", help="train, val (default) or test")
    p.add_argument(
        "--task",
        choices=TASKS,
        default=None,
        help="detect, obb or pose (default: pose if the data.yaml has kpt_shape, else detect)",
    )
    p.add_argument("--profile", choices=PROFILE_NAMES, default=None, help="default: ultralytics (the newest)")
    p.add_argument(
        "--iou-type",
        choices=("bbox", "segm"),
        default="bbox",
        help="segm: mask AP of polygon labels and predictions (coco profile only)",
    )
    p.add_argument("--format", choices=YOLO_FORMATS, default=None, help="output format (default: table)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE instead of stdout")
    p.set_defaults(func=run, _parser=p)

    e = sub.add_parser(
        "explain",
        help="attribute the difference between two profiles' mAP rule by rule",
        description="Score a YOLO dataset's predictions under --from and --to, and walk from one to the other "
        "changing one rule at a time (matcher, end sentinel, AP integration and ranking, float32, detection "
        "cap), printing each step's change in mAP50-95 and mAP50 and how many cases triggered it. The steps add "
        "up to the difference. Also between two VOC profiles, and between coco and a VOC profile on a COCO "
        "pair or a YOLO dataset. See docs/yolo.md and docs/explain.md.",
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
    names = (*PROFILE_NAMES, *VOC_EXPLAIN_PROFILES)
    e.add_argument("--from", dest="from_profile", choices=names, required=True, help="profile A")
    e.add_argument("--to", dest="to_profile", choices=names, required=True, help="profile B")
    e.add_argument("--image-set", metavar="FILE", help="VOC only: the image-set list (default: every XML)")
    e.add_argument("--split", default="val", help="train, val (default) or test")
    e.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    e.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE instead of stdout")
    e.set_defaults(func=run_explain, _parser=e)

    c = sub.add_parser(
        "convert",
        help="convert a YOLO dataset to COCO JSON, or COCO JSON to YOLO labels",
        description="SOURCE data.yaml: write the split as COCO ground truth (and --predictions as COCO "
        "results). SOURCE .json (COCO): write labels/<stem>.txt and data.yaml into -o OUT_DIR.",
    )
    c.add_argument("source", metavar="SOURCE", help="data.yaml or a COCO ground-truth .json")
    c.add_argument("--split", default="val", help="the YOLO split to convert (default: val)")
    c.add_argument("--predictions", metavar="PRED", help="YOLO predictions to convert as well")
    c.add_argument("--predictions-out", metavar="FILE", help="where the COCO results go")
    c.add_argument("--output", "-o", metavar="OUT", help="COCO .json (default: stdout) or the YOLO folder")
    c.set_defaults(func=run_convert, _parser=c)
