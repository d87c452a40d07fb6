"""Per category, the true positives, detections and positives of pycocotools' matching at one IoU: the counts
of the precision and recall that ``deteval yolo`` adds to the profiles that define none (coco, supervision),
read from the evaluation where it holds them, else matched again at that threshold.

A module of its own (the rest of :mod:`deteval.analysis.inputs` builds the analyses' inputs): the plain
``deteval yolo`` run needs these counts and none of the analyses.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from deteval.detection.coco.evaluation import CocoEvaluation
from deteval.detection.coco.match import match_coco
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError
from deteval.io.coco import CocoGroundTruth, CocoResults

__all__ = ["coco_match_counts", "coco_match_counts_of"]


def coco_match_counts(
    gt: CocoGroundTruth, results: CocoResults, *, params: CocoParams | None = None, iou: float = 0.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per category (index into ``gt.cat_ids``): true positives, detections and positives of pycocotools'
    ``evaluateImg`` at IoU ``iou``, area range "all", the top ``max_dets[-1]`` detections per image and
    category, ignored detections (crowd-matched) and ignored ground truth left out: the counts of
    :func:`~deteval.analysis.inputs.coco_matched`, from the evaluation's vectorized matcher (:func:`~deteval.detection.coco.match.
    match_coco`) at that one threshold, without the rows."""
    p = params if params is not None else CocoParams.from_options("bbox")
    if p.iou_type != "bbox":
        raise ConfigError("precision and recall counts support --iou-type bbox only")
    one = replace(
        p,
        iou_thrs=np.array([iou], dtype=np.float64),
        area_rng=p.area_rng[:1],
        area_lbl=p.area_lbl[:1],
        max_dets=(int(p.max_dets[-1]),),
    )
    table, _, _ = match_coco(gt, results, one)
    keep = ~table.ig[0, 0]
    k = len(gt.cat_ids)
    tp = np.bincount(table.cat[keep & table.tp[0, 0]], minlength=k)[:k]
    n_det = np.bincount(table.cat[keep], minlength=k)[:k]
    return tp, n_det, table.npig[:k, 0]


def coco_match_counts_of(
    ev: CocoEvaluation, gt: CocoGroundTruth, results: CocoResults, *, iou: float = 0.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`coco_match_counts` of ``gt`` and ``results`` read from their evaluation ``ev`` (bbox, default
    areas and maxDets) instead of a second matching, where no box is ignored (no crowd or ignore flag, every
    ground-truth and detection area inside area range "all"): true positives = pycocotools' recall at IoU
    ``iou`` (``ev``'s first threshold), area "all", the last maxDets, times the positives (an integer ratio,
    rounded back exactly); detections = per image and category at most ``max_dets[-1]``. None where that
    reading does not hold (then :func:`coco_match_counts` matches again)."""
    p = ev.params
    if (
        p.iou_type != "bbox"
        or not p.use_cats
        or ev.cat_index is not None
        or not len(p.iou_thrs)
        or float(p.iou_thrs[0]) != iou
        or p.area_lbl[0] != "all"
        or bool(gt.iscrowd.any() or gt.ignore.any())
    ):
        return None
    lo, hi = (float(v) for v in p.area_rng[0])
    for area in (gt.area, results.area):
        if len(area) and not (float(area.min()) >= lo and float(area.max()) <= hi):
            return None  # (NaN included)
    k = len(gt.cat_ids)
    n_gt = np.bincount(gt.cat, minlength=k)[:k].astype(np.int64)
    pairs, per_pair = np.unique(results.img * k + results.cat, return_counts=True)
    kept = np.minimum(per_pair, int(p.max_dets[-1]))
    n_det = np.bincount(pairs % k, weights=kept, minlength=k)[:k].astype(np.int64)
    recall = ev.recall[0, :, 0, -1]
    tp = np.where(n_gt > 0, np.rint(np.maximum(recall, 0.0) * n_gt), 0).astype(np.int64)
    return tp, n_det, n_gt
