"""Score a YOLO pose split as ``yolo val`` does: box and pose (OKS) P, R, mAP50, mAP50-95 under an Ultralytics
profile (:func:`deteval.detection.ultralytics.evaluate_ultralytics_pose`), or as pycocotools does (``coco``:
:func:`coco_pose`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from deteval.detection.ultralytics import evaluate_ultralytics_pose, get_rules, pose_sigmas
from deteval.errors import ConfigError
from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco
from deteval.io.yolo_pose import PoseDataset, load_pose_dataset, load_pose_predictions
from deteval.run.coco import evaluate_coco
from deteval.run.yolo import (
    YoloResult,
    canonical_profile,
    is_ultralytics,
    split_reading,
    ultralytics_summary,
    yolo_result,
)
from deteval.tables.boxes import BoxTable

__all__ = ["coco_pose", "evaluate_yolo_pose", "evaluate_yolo_pose_files"]

#: The profiles whose versions read the data.yaml's ``kpt_oks_sigmas`` (8.4.175 and later; 8.4.37 to 8.4.174
#: share the 8.4.37 profile's box rules but not all of them read the sigmas).
_READS_DATASET_SIGMAS = ("ultralytics-8.4.176",)


def evaluate_yolo_pose(
    pds: PoseDataset, preds: BoxTable, pred_kpts: np.ndarray, profile: str = "ultralytics"
) -> YoloResult:
    """Box and pose metrics of ``preds`` (with their keypoints) against the pose split ``pds``.

    The summary holds the box numbers under the detect names (``mAP50-95``, ``mAP50``, ``mAP75``,
    ``precision``, ``recall``) and the pose numbers under the same names prefixed ``pose ``; each class row
    likewise. The sigmas are :func:`~deteval.detection.ultralytics.pose_sigmas`: the data.yaml's
    ``kpt_oks_sigmas`` under the ``ultralytics-8.4.176`` profile (the versions that read them), else COCO's 17
    for ``kpt_shape [17, 3]``, else ``1 / K``."""
    name = canonical_profile(profile)
    if name == "coco":
        return coco_pose(pds, preds, pred_kpts)
    if not is_ultralytics(name):
        raise ConfigError(f"pose is scored under the Ultralytics profiles and coco, not {profile!r}")
    rules = get_rules(name)
    warnings = list(pds.ds.warnings)
    dataset_sigmas = pds.sigmas if name in _READS_DATASET_SIGMAS else None
    if pds.sigmas is not None and dataset_sigmas is None:
        warnings.append(
            f"kpt_oks_sigmas in the data.yaml are not read under {name} (those versions ignore them)"
        )
    sigma = pose_sigmas(pds.kpt_shape, rules.oks, dataset_sigmas)
    ds = pds.ds
    box, pose = evaluate_ultralytics_pose(
        ds.labels, pds.keypoints, preds, pred_kpts, ds.n_images, rules, sigma
    )
    rows: list[tuple[int, dict[str, Any]]] = []
    for k, c in enumerate(box.classes):
        row: dict[str, Any] = {}
        for m, prefix in ((box, ""), (pose, "pose ")):
            row.update(
                {
                    f"{prefix}P": float(m.p[k]),
                    f"{prefix}R": float(m.r[k]),
                    f"{prefix}AP50": float(m.ap[k, 0]),
                    f"{prefix}AP75": float(m.ap[k, 5]),
                    f"{prefix}AP50-95": float(m.ap[k].mean()),
                }
            )
        rows.append((int(c), row))
    summary = {**ultralytics_summary(box), **ultralytics_summary(pose, "pose ")}
    return yolo_result(ds, profile, "pose", summary, rows, {}, warnings=warnings, counts_first=True)


def evaluate_yolo_pose_files(
    data_yaml: str | os.PathLike[str],
    predictions: str | os.PathLike[str],
    *,
    split: str = "val",
    profile: str = "ultralytics",
) -> YoloResult:
    """``deteval yolo DATA.yaml PREDICTIONS --task pose`` in Python (exact duplicate label rows and corrupt
    images, with their labels and predictions, left out with a warning under the Ultralytics profiles, as
    Ultralytics does; a duplicate is an error under ``coco``)."""
    pds = load_pose_dataset(data_yaml, split, **split_reading(profile))
    preds, kpts = load_pose_predictions(predictions, pds)
    return evaluate_yolo_pose(pds, preds, kpts, profile)


def coco_pose(pds: PoseDataset, preds: BoxTable, pred_kpts: np.ndarray) -> YoloResult:
    """The ``coco`` profile of a pose split: pycocotools' bbox and keypoints evaluations (deteval's exact port)
    of the split converted to COCO (:func:`~deteval.io.yolo_coco.dataset_to_coco`: area = box area in pixels,
    no crowds; keypoints ``x y v`` in pixels, ``num_keypoints`` the labelled ones) and of the predictions with
    their keypoints (``x y score``). The OKS sigmas: the data.yaml's ``kpt_oks_sigmas``, else COCO's 17 for 17
    keypoints; another skeleton without them is refused (pycocotools has sigmas for COCO's person only)."""
    ds = pds.ds
    k = pds.kpt_shape[0]
    if pds.sigmas is None and k != 17:
        raise ConfigError(
            f"the coco profile needs OKS sigmas for {k} keypoints: give kpt_oks_sigmas in the data.yaml "
            "(deteval sigmas estimates them)",
            file=str(ds.yaml_path),
        )
    gt = dataset_to_coco(ds)
    kp = pds.keypoints
    for n, ann in enumerate(gt["annotations"]):  # (one annotation per label row, in order)
        ann["keypoints"] = kp[n].reshape(-1).tolist()
        ann["num_keypoints"] = int((kp[n, :, 2] > 0).sum())
    res = predictions_to_coco(ds, preds)
    for n, rec in enumerate(res):  # (one record per prediction row, in order)
        rec["keypoints"] = pred_kpts[n].reshape(-1).tolist()
    params = {"kpt_oks_sigmas": pds.sigmas} if pds.sigmas is not None else {}
    box = evaluate_coco(gt, res, iou_type="bbox")
    pose = evaluate_coco(gt, res, iou_type="keypoints", params=params or None)
    box_rows, pose_rows = box.per_class(), pose.per_class()
    rows: list[tuple[int, dict[str, Any]]] = []
    for c, cname in enumerate(ds.names):
        b, p = box_rows.get(cname), pose_rows.get(cname)
        if b is None or b["ap"] < 0:
            continue
        row: dict[str, Any] = {"AP50": b["ap50"], "AP75": b["ap75"], "AP50-95": b["ap"]}
        if p is not None:
            row.update({"pose AP50": p["ap50"], "pose AP75": p["ap75"], "pose AP50-95": p["ap"]})
        rows.append((c, row))
    summary = {
        f"{prefix}{name}": float(ev.stats[k])
        for prefix, ev in (("", box), ("pose ", pose))
        for k, name in enumerate(("mAP50-95", "mAP50", "mAP75"))
    }
    return yolo_result(ds, "coco", "pose", summary, rows, {}, counts_first=True)
