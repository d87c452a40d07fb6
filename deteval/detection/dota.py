"""DOTA's oriented-box protocol as the DOTA devkit computes it (``dotadevkit``'s Task1 ``voc_eval``).

The rules are py-faster-rcnn's VOC rules (:mod:`deteval.detection.voc`, profile ``py_faster_rcnn``) with the
polygon IoU of the quadrilaterals (:mod:`deteval.match.rotated`) instead of the box IoU:

* per category, detections ranked by ``np.argsort(-confidence)`` over the category's Task1 file (numpy's
  default unstable sort: exact ties rank as numpy leaves them);
* each detection takes the ground truth of maximum polygon IoU among its image's objects of its category (the
  first wins a tie; the devkit first keeps the objects whose axis-aligned boxes overlap with its +1-pixel
  IoU, which leaves out only objects of polygon IoU 0); a match needs IoU **>** 0.5; on a difficult object
  the detection is ignored, on an object already taken it is a false positive;
* npos = the non-difficult objects; precision ``tp / max(tp + fp, eps)``; AP: the VOC07 11-point mean over
  ``np.arange(0, 1.1, 0.1)`` (the devkit's ``use_07_metric=True``), or VOCap's all-point area with
  ``metric="voc2010"``.

Differences, by design: mAP is the mean over the categories with non-difficult objects (the devkit's
``evaluate`` averages over DOTA's fixed category list, dividing by zero for a category without objects); a
row the devkit would skip or misread is an error (:mod:`deteval.io.dota`). ``difficult=False`` counts every
object (the devkit's DOTA 1.5 and 2.0, which read no difficult flag). The polygon IoU is exact for convex
quadrilaterals, which DOTA's are; the devkit's ``polyiou`` computes the same areas in another order (equal
to 1e-15 or so).

The steps are VOC's (:func:`prepare_dota` → :func:`deteval.detection.voc.parts` /
:func:`~deteval.detection.voc.match_part` / :func:`~deteval.detection.voc.merge` → :func:`finish_dota`);
:func:`deteval.run.dota.evaluate_dota` chains them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from deteval.detection import voc
from deteval.errors import ValidationError
from deteval.results import EvalResult
from deteval.tables.quads import polygon_quads
from deteval.tables.voc import VOCDetections, VOCGroundTruth

__all__ = ["DOTA_DEVKIT", "PROFILE", "finish_dota", "prepare_dota"]

PROFILE = "dota_devkit"

#: The devkit's rules as VOC parameters (strict ``>``, numpy's unstable sort, its 11 levels).
DOTA_DEVKIT = voc.VOCParams(iou_threshold=0.5, metric="voc07", profile="py_faster_rcnn", plus_one=False)


def _rows_of(table: VOCGroundTruth | VOCDetections, classes: Sequence[str]) -> np.ndarray:
    keep = np.isin(table.label, [k for k, c in enumerate(table.classes) if c in set(classes)])
    return np.flatnonzero(keep)


def prepare_dota(
    gt: VOCGroundTruth,
    dets: VOCDetections,
    det_corners: np.ndarray,
    *,
    iou_threshold: float = 0.5,
    metric: str = "voc07",
    difficult: bool = True,
    classes: Sequence[str] | None = None,
) -> voc.VOCEvaluation:
    """The VOC evaluation of ``dets`` against ``gt`` set up with the quadrilaterals and the rotated IoU.

    Parameters
    ----------
    gt
        The annotations (:func:`deteval.io.dota.load_dota_annotations`), corners in ``meta["corners"]``.
    dets, det_corners
        The detections and their ``(N, 8)`` corners (:func:`deteval.io.dota.load_dota_detections`).
    iou_threshold, metric
        A match needs IoU > ``iou_threshold``; ``"voc07"`` (the devkit's) or ``"voc2010"``.
    difficult
        Whether difficult objects are ignored (DOTA 1.0); False counts every object (DOTA 1.5, 2.0).
    classes
        The evaluated categories (default: every category of either side).

    Returns
    -------
    VOCEvaluation
        VOC's evaluation, its matcher input made of quadrilateral rows.
    """
    g_corners = gt.meta.get("corners")
    if g_corners is None or g_corners.shape != (len(gt), 8):
        raise ValidationError("the ground truth needs its (N, 8) corners in meta['corners']")
    d_corners = np.asarray(det_corners, dtype=np.float64).reshape(-1, 8)
    if d_corners.shape[0] != len(dets):
        raise ValidationError(f"{d_corners.shape[0]} corner rows for {len(dets)} detections")
    if not difficult:
        gt = replace(gt, difficult=np.zeros(len(gt), dtype=bool))
    if classes is not None:  # (rows of other categories out first: prepare then keeps every row, in order)
        g, d = _rows_of(gt, classes), _rows_of(dets, classes)
        gt = replace(
            gt, image=gt.image[g], label=gt.label[g], boxes=gt.boxes[g], difficult=gt.difficult[g], meta={}
        )
        dets = replace(
            dets, image=dets.image[d], label=dets.label[d], boxes=dets.boxes[d], scores=dets.scores[d]
        )
        g_corners, d_corners = g_corners[g], d_corners[d]
    params = replace(DOTA_DEVKIT, iou_threshold=float(iou_threshold), metric=metric)
    ev = voc.prepare(gt, dets, params, classes)
    whole = replace(
        ev.whole, det_boxes=polygon_quads(d_corners), gt_boxes=polygon_quads(g_corners), rotated=True
    )
    return replace(ev, whole=whole)


def finish_dota(evaluation: voc.VOCEvaluation, outcome: np.ndarray) -> EvalResult:
    """AP per category and mAP (:func:`deteval.detection.voc.finish`), the profile named ``dota_devkit``."""
    result = voc.finish(evaluation, outcome)
    result.protocol = "dota"
    result.summary = {**result.summary, "profile": PROFILE}
    result.summary.pop("plus_one", None)
    return result
