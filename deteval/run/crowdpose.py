"""CrowdPose evaluation (:mod:`deteval.detection.crowdpose`): the ground truth and results read once, then COCO's
evaluation of all images and of each crowd level's images, each run as :func:`deteval.run.coco.evaluate_coco`
runs it."""

from __future__ import annotations

from dataclasses import replace
from os import PathLike
from typing import Any

from deteval.detection.coco.params import check_compat, resolve_params
from deteval.detection.coco_params import CocoParams
from deteval.detection.crowdpose import CrowdPoseEvaluation, box_scale, crowd_levels, crowdpose_params
from deteval.errors import DetevalError
from deteval.io.coco import CocoGroundTruth, load_coco_gt, load_coco_results, read_json
from deteval.run.coco import evaluate_coco

__all__ = ["evaluate_crowdpose"]

#: How the loader names a ground truth given as a parsed dict.
_IN_MEMORY = "<in-memory ground truth>"


def evaluate_crowdpose(
    gt: Any,
    results: Any,
    *,
    params: CocoParams | Any | None = None,
    use_area: bool = False,
    compat: str = "pycocotools",
    on_error: str = "raise",
    strategy: str = "auto",
) -> CrowdPoseEvaluation:
    """Evaluate keypoint ``results`` against ``gt`` with CrowdPose's protocol, equal to faster-coco-eval's
    ``COCOeval_faster(..., iouType="keypoints_crowd", kpt_oks_sigmas=..., use_area=...)``.

    Parameters
    ----------
    gt
        A path, a parsed dict or a :class:`~deteval.io.coco.CocoGroundTruth`; every image record holds a
        ``crowdIndex``. Annotations may lack ``area`` unless ``use_area``.
    results
        Keypoint results (a path, a list of dicts or a :class:`~deteval.io.coco.CocoResults`).
    params
        COCO keypoint parameters (default: :func:`~deteval.detection.crowdpose.crowdpose_params`, CrowdPose's
        14 sigmas); per-category sigmas apply as in COCO keypoints.
    use_area
        False (default, the CrowdPose tool): OKS scale ``0.53 · box area``; True: the annotation's ``area``.
    compat
        "pycocotools" (CrowdPose's numbers) or "fixed" (crowd levels summarised as COCO's AP is).
    on_error, strategy
        As for :func:`~deteval.run.coco.evaluate_coco`.

    Returns
    -------
    CrowdPoseEvaluation
        The nine numbers, the evaluation of all images, and each crowd level's image count.
    """
    check_compat(compat)
    p = crowdpose_params() if params is None else resolve_params(params, "keypoints")
    g = _ground_truth(gt, use_area, on_error)
    if not use_area:
        g = box_scale(g)
    r = load_coco_results(results, g, iou_type="keypoints", on_error=on_error)
    overall = evaluate_coco(g, r, params=p, compat=compat, on_error=on_error, strategy=strategy)
    levels = crowd_levels(g)
    evals = [
        evaluate_coco(g, r, params=replace(p, img_ids=ids), compat=compat, strategy=strategy) if ids else None
        for ids in levels
    ]
    return CrowdPoseEvaluation.of(overall, evals, [len(ids) for ids in levels], use_area)


def _ground_truth(gt: Any, use_area: bool, on_error: str) -> CocoGroundTruth:
    """The ground truth with keypoints; without ``use_area``, annotations without ``area`` are read as if it
    were 0 (the box scale replaces every area)."""
    if isinstance(gt, CocoGroundTruth) or use_area:
        return load_coco_gt(gt, need_keypoints=True, on_error=on_error)
    doc = read_json(gt) if isinstance(gt, (str, PathLike)) else gt
    anns = doc.get("annotations") if isinstance(doc, dict) else None
    if isinstance(anns, list) and any(isinstance(a, dict) and "area" not in a for a in anns):
        filled = [{**a, "area": 0} if isinstance(a, dict) and "area" not in a else a for a in anns]
        doc = {**doc, "annotations": filled}
    if not isinstance(gt, (str, PathLike)):
        return load_coco_gt(doc, need_keypoints=True, on_error=on_error)
    try:
        g = load_coco_gt(doc, need_keypoints=True, on_error=on_error)
    except DetevalError as exc:  # (read from the parsed file: its errors name the file)
        raise type(exc)(exc.reason, file=str(gt), record=exc.record) from None
    return replace(g, source=str(gt), warnings=[w.replace(_IN_MEMORY, str(gt)) for w in g.warnings])
