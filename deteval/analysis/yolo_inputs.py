"""The analyses' inputs of a YOLO split under a ``deteval yolo`` profile: the confusion matrix, ``yolo val``'s
own under an Ultralytics profile (kept apart from :mod:`deteval.analysis.inputs` so that the COCO and VOC
commands do not import the YOLO readers and Ultralytics' rules)."""

from __future__ import annotations

import numpy as np

from deteval.analysis.confusion import Confusion
from deteval.analysis.inputs import coco_confusion
from deteval.detection.ultralytics import get_rules
from deteval.detection.ultralytics_confusion import (
    IOU_THRESHOLD,
    confusion_conf,
    confusion_rule,
    ultralytics_confusion_matrix,
)
from deteval.io.yolo import YoloDataset, for_exif_rule
from deteval.run.yolo import coco_inputs, is_ultralytics
from deteval.tables.boxes import BoxTable

__all__ = ["yolo_confusion"]


def yolo_confusion(
    ds: YoloDataset,
    preds: BoxTable,
    profile: str,
    *,
    val_conf: float | None = None,
    iou: float | None = None,
    score_threshold: float | None = None,
) -> Confusion:
    """The confusion matrix of a YOLO split's predictions under a ``deteval yolo`` profile.

    Under an Ultralytics profile, ``yolo val``'s own (``ConfusionMatrix`` of the profile's era,
    :mod:`deteval.detection.ultralytics_confusion`), given its ``--conf`` ``val_conf``: IoU above ``iou``
    (default 0.45), confidence above ``score_threshold`` (default: what that era takes from ``--conf``), image
    sizes read as that era reads them; transposed to deteval's rows-true layout. Under ``coco`` and
    ``supervision``, deteval's on pycocotools' matching (:func:`coco_confusion`; IoU 0.5 and score 0.25 by
    default).
    """
    if not is_ultralytics(profile):
        gt, res = coco_inputs(ds, preds)
        return coco_confusion(
            gt,
            res,
            iou=0.5 if iou is None else iou,
            score_threshold=0.25 if score_threshold is None else score_threshold,
        )
    rule = confusion_rule(profile)
    ds, preds = for_exif_rule(ds, preds, get_rules(profile).exif)
    thr = IOU_THRESHOLD if iou is None else float(iou)
    conf = confusion_conf(rule, val_conf) if score_threshold is None else float(score_threshold)
    m = ultralytics_confusion_matrix(
        ds.labels, preds, len(ds.names), rule, val_conf=val_conf, conf=conf, iou=thr
    )
    return Confusion(
        labels=[*ds.names, "background"],
        matrix=m.T.astype(np.int64),
        iou=thr,
        score_threshold=conf,
        ignored=0,
        rule=f"Ultralytics {rule.versions} ConfusionMatrix",
    )
