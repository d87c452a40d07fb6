"""``deteval explain --task obb``: the oriented-box profiles of a YOLO-OBB split, one rule at a time.

Three protocols score oriented boxes (``deteval yolo --task obb --profile …``):

* the Ultralytics eras (``ultralytics-8.0``, ``ultralytics-8.4.37``, ``ultralytics-8.4.176``): the OBB
  validator, float32 ProbIoU, its matchers and AP;
* ``coco``: COCOeval with the rotated polygon IoU (each quadrilateral read as
  :func:`~deteval.tables.quads.corners_obb` reads it, area ``w·h``), 101-point AP;
* ``dota_devkit``: the DOTA devkit's Task1 AP (polygon IoU of the corners as given, **>** t, its VOC07
  11-point AP, numpy's unstable ranking; :mod:`deteval.detection.dota`).

``coco`` sits between the two others, so a walk between an Ultralytics era and ``dota_devkit`` goes through
it: from the era to ``coco`` the rule dimensions of :mod:`deteval.explain.yolo` (EXIF sizes, matcher, end
sentinel, AP integration and ranking, the IoU kernel — ProbIoU in float32 or the polygon IoU — and the
detection cap), then from ``coco`` to the devkit those of :mod:`deteval.explain.cross` (matcher, the IoU
kernel — ``obb``: the polygon of the ``(cx, cy, w, h, angle)`` box with area ``w·h``, ``quad``: the
quadrilateral as written, its shoelace area —, the comparison with the threshold, the cap, the ranking of
tied scores, the AP integration). Each step re-scores the same data with one more rule of the target, so
the steps add up to the difference of the two ends, which are the numbers ``deteval yolo --task obb
--profile X`` prints (a ``residual`` step would show any disagreement; the tests check that none appears).
At the ``dota_devkit`` end, ``mAP50`` is the devkit's number and ``mAP50-95`` its rule averaged over COCO's
ten thresholds.
"""

from __future__ import annotations

import numpy as np

from deteval.detection.dota import PROFILE as DOTA_DEVKIT
from deteval.errors import ConfigError
from deteval.explain.cross import CrossData, CrossRules, explain_cross
from deteval.explain.yolo import Explanation, explain
from deteval.io.yolo import YoloDataset
from deteval.io.yolo_obb import obb_corners
from deteval.run.yolo import canonical_profile, coco_inputs, evaluate_yolo
from deteval.tables.boxes import BoxTable
from deteval.tables.quads import corners_obb, obb_quads, polygon_quads

__all__ = ["OBB_CROSS_RULES", "explain_obb", "obb_cross_data"]

#: ``coco`` and ``dota_devkit`` as points of :mod:`deteval.explain.cross`'s rule space (no crowd or difficult
#: objects in a YOLO split: the crowd rule is the same at both ends).
OBB_CROSS_RULES: dict[str, CrossRules] = {
    "coco": CrossRules("coco", "crowd", "obb", ">=", "100/image+class", "coco", "coco101"),
    DOTA_DEVKIT: CrossRules("voc", "crowd", "quad", ">", "none", "quicksort", "voc07"),
}


def obb_cross_data(ds: YoloDataset, preds: BoxTable) -> CrossData:
    """A YOLO-OBB split in :mod:`deteval.explain.cross`'s form: rows in the dataset's order (the order both
    protocols break score ties by), images and classes by index, no crowd regions, the quadrilaterals of both
    IoU rules (``obb`` and ``quad``); the axis-aligned columns hold the corners' extents (no rule reads them)."""
    gc, dc = obb_corners(ds.labels, ds, "labels"), obb_corners(preds, ds, "predictions")
    gt, res = coco_inputs(ds, preds)
    g_ext = ds.labels.xyxy if len(ds.labels) else np.zeros((0, 4))
    d_ext = preds.xyxy if len(preds) else np.zeros((0, 4))
    return CrossData(
        n_classes=len(ds.names),
        g_img=ds.labels.img.astype(np.int64),
        g_cls=ds.labels.cls.astype(np.int64),
        g_xywh=g_ext,
        g_voc=g_ext,
        g_crowd=np.zeros(len(ds.labels), dtype=bool),
        d_img=preds.img.astype(np.int64),
        d_cls=preds.cls.astype(np.int64),
        d_xywh=d_ext,
        d_voc=d_ext,
        d_score=preds.conf.astype(np.float64),
        coco_gt=gt,
        coco_res=res,
        quads={
            "obb": (obb_quads(corners_obb(gc)), obb_quads(corners_obb(dc))),
            "quad": (polygon_quads(gc), polygon_quads(dc)),
        },
    )


def explain_obb(ds: YoloDataset, preds: BoxTable, profile_from: str, profile_to: str) -> Explanation:
    """Attribute the difference between two oriented-box profiles' mAP50-95 and mAP50 rule by rule (module
    docstring): a YOLO-OBB split ``ds`` and its predictions (:func:`deteval.io.yolo_obb.load_yolo_obb`)."""
    names = [canonical_profile(p) for p in (profile_from, profile_to)]
    if "supervision" in names:
        raise ConfigError(
            "explain walks between coco, dota_devkit and the Ultralytics profiles for oriented boxes, "
            "not supervision"
        )
    if DOTA_DEVKIT not in names:
        return explain(ds, preds, profile_from, profile_to, iou_type="obb")
    data = obb_cross_data(ds, preds)

    def ends(profile: str) -> tuple[float | None, float | None]:
        s = evaluate_yolo(ds, preds, profile, iou_type="obb").summary
        return tuple(None if s[k] < 0 else float(s[k]) for k in ("mAP50-95", "mAP50"))  # type: ignore[return-value]

    def cross(a: str, b: str) -> Explanation:
        return explain_cross(data, a, b, rules=OBB_CROSS_RULES, ends=ends)

    a, b = names
    if "coco" in names or a == b:
        e = cross(a, b)
    elif a == DOTA_DEVKIT:  # the devkit → coco → an Ultralytics era
        first, second = cross(a, "coco"), explain(ds, preds, "coco", profile_to, iou_type="obb")
        e = Explanation(first.start, second.end, first.steps + second.steps)
    else:  # an Ultralytics era → coco → the devkit
        first, second = explain(ds, preds, profile_from, "coco", iou_type="obb"), cross("coco", b)
        e = Explanation(first.start, second.end, first.steps + second.steps)
    e.start["profile"], e.end["profile"] = profile_from, profile_to
    for step in e.steps:  # (the cross walk's IoU rule, named for oriented boxes)
        for key, text in _KERNEL_TEXT.items():
            step["rule"] = step["rule"].replace(key, text)
    return e


_KERNEL_TEXT = {
    "IoU pixel convention: obb → quad": "IoU kernel: obb polygon (area w·h) → quad as written",
    "IoU pixel convention: quad → obb": "IoU kernel: quad as written → obb polygon (area w·h)",
}
