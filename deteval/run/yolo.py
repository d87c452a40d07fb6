"""Score a YOLO dataset split under one profile: ``coco``, ``supervision`` or an Ultralytics era.

* ``coco``: pycocotools' COCOeval (deteval's exact port) on the dataset converted to COCO (no crowds, area
  = box area in pixels, maxDets 1/10/100), bit for bit.
* ``supervision``: supervision ≥ 0.26 ``MeanAveragePrecision`` (see :mod:`.supervision_profile`).
* ``ultralytics-8.0``, ``ultralytics-8.4.37``, ``ultralytics-8.4.176`` (``ultralytics`` = the newest):
  ``yolo val``'s box metrics (see :mod:`.ultralytics`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.detection.box_table import BoxTable
from deteval.detection.supervision_profile import supervision_from_coco
from deteval.detection.ultralytics import ALIASES, PROFILES, evaluate_ultralytics, get_rules
from deteval.errors import ConfigError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.yolo import YoloDataset, for_exif_rule, load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco
from deteval.run.coco import evaluate_coco

PROFILE_NAMES = ("coco", "supervision", *PROFILES, *ALIASES)


def canonical_profile(name: str) -> str:
    """The profile a name denotes (``ultralytics`` → the newest era); unknown names are a ConfigError."""
    if name not in PROFILE_NAMES:
        raise ConfigError(f"unknown profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}")
    return ALIASES.get(name, name)


def is_ultralytics(profile: str) -> bool:
    return canonical_profile(profile).startswith("ultralytics")


@dataclass
class YoloResult:
    """One profile's numbers: ``summary`` (mAP50-95, mAP50, mAP75, and precision/recall where defined),
    ``per_class`` rows (``class``, ``images``, ``instances``, ``AP50``, ``AP50-95``, ...), ``stats`` (coco)."""

    profile: str
    summary: dict[str, float]
    per_class: list[dict[str, Any]]
    stats: list[float] | None = None
    warnings: list[str] = field(default_factory=list)
    n_images: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"profile": self.profile, "summary": self.summary, "per_class": self.per_class}
        if self.stats is not None:
            out["stats"] = self.stats
        if self.warnings:
            out["warnings"] = self.warnings
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent) + "\n"


def _counts(ds: YoloDataset, c: int) -> tuple[int, int]:
    mine = ds.labels.cls == c
    return len(np.unique(ds.labels.img[mine])), int(mine.sum())


def coco_evaluation(ds: YoloDataset, preds: BoxTable, iou_type: str = "bbox") -> Any:
    """deteval's COCOeval on the converted dataset and predictions (a :class:`CocoEvaluation`)."""
    segm = iou_type == "segm"
    gt = load_coco_gt(dataset_to_coco(ds, all_sizes=segm, segm=segm), keep_segmentation=segm)
    res = load_coco_results(predictions_to_coco(ds, preds, segm=segm), gt, iou_type=iou_type)
    return evaluate_coco(gt, res, iou_type=iou_type)


def evaluate_yolo(
    ds: YoloDataset, preds: BoxTable, profile: str = "ultralytics", *, iou_type: str = "bbox"
) -> YoloResult:
    """Score ``preds`` against the split ``ds`` under ``profile`` (see the module docstring).

    ``iou_type="segm"`` (``coco`` only): mask AP of polygon labels and polygon predictions, pycocotools'
    ``segm`` with the polygons rasterized at each image's size.
    """
    name = canonical_profile(profile)
    if iou_type not in ("bbox", "segm"):
        raise ConfigError(f"unknown iou_type {iou_type!r}; choose bbox or segm")
    if iou_type == "segm" and name != "coco":
        raise ConfigError(
            f"mask AP is scored under the coco profile only ({profile} is a box metric: Ultralytics' mask "
            "mAP needs the model's prototype masks, which files do not hold)"
        )
    if name.startswith("ultralytics"):
        ds, preds = for_exif_rule(ds, preds, get_rules(name).exif)
        m = evaluate_ultralytics(ds.labels, preds, ds.n_images, name)
        rows = []
        for k, c in enumerate(m.classes):
            images, instances = _counts(ds, int(c))
            rows.append(
                {
                    "class": ds.names[int(c)],
                    "images": images,
                    "instances": instances,
                    "P": float(m.p[k]),
                    "R": float(m.r[k]),
                    "AP50": float(m.ap[k, 0]),
                    "AP75": float(m.ap[k, 5]),
                    "AP50-95": float(m.ap[k].mean()),
                }
            )
        summary = {
            "mAP50-95": m.map,
            "mAP50": m.map50,
            "mAP75": m.map75,
            "precision": m.precision,
            "recall": m.recall,
        }
        return YoloResult(profile, summary, rows, warnings=list(ds.warnings), n_images=ds.n_images)
    ev = coco_evaluation(ds, preds, iou_type)
    rows = []
    if name == "coco":
        per = ev.per_class()
        for c, cname in enumerate(ds.names):
            r = per.get(cname)
            if r is None or r["ap"] < 0:
                continue
            images, instances = _counts(ds, c)
            rows.append(
                {
                    "class": cname,
                    "images": images,
                    "instances": instances,
                    "AP50": r["ap50"],
                    "AP75": r["ap75"],
                    "AP50-95": r["ap"],
                }
            )
        s = [float(v) for v in ev.stats]
        summary = {"mAP50-95": s[0], "mAP50": s[1], "mAP75": s[2]}
        return YoloResult(profile, summary, rows, stats=s, warnings=list(ds.warnings), n_images=ds.n_images)
    sv = supervision_from_coco(ev)
    for k, c in enumerate(range(len(ds.names))):
        ap = sv.ap_per_class[k]
        if ap[0] < 0:
            continue
        images, instances = _counts(ds, c)
        valid = ap[ap > -1]
        rows.append(
            {
                "class": ds.names[c],
                "images": images,
                "instances": instances,
                "AP50": float(ap[0]),
                "AP75": float(ap[5]),
                "AP50-95": float(valid.mean()),
            }
        )
    summary = {"mAP50-95": sv.map50_95, "mAP50": sv.map50, "mAP75": sv.map75}
    return YoloResult(profile, summary, rows, warnings=list(ds.warnings), n_images=ds.n_images)


def evaluate_yolo_files(
    data_yaml: str | os.PathLike[str],
    predictions: str | os.PathLike[str],
    *,
    split: str = "val",
    profile: str = "ultralytics",
    iou_type: str = "bbox",
) -> YoloResult:
    """One call from files: ``deteval yolo DATA.yaml PREDICTIONS --split S --profile P`` in Python.

    Exact duplicate label rows are dropped (with a warning) under the Ultralytics profiles, as Ultralytics
    does, and are an error under the others.

    >>> r = evaluate_yolo_files("data_samples/yolo/data.yaml", "data_samples/yolo/predictions/labels")
    >>> round(r.summary["mAP50-95"], 4), r.per_class[0]["class"]
    (0.3578, 'person')
    """
    ds = load_yolo_dataset(data_yaml, split, duplicates="drop" if is_ultralytics(profile) else "error")
    return evaluate_yolo(ds, load_yolo_predictions(predictions, ds), profile, iou_type=iou_type)
