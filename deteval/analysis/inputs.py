"""Boxes for the error analysis from the COCO and VOC loaders' tables (:class:`~deteval.analysis.tide.TideInput`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from deteval.analysis.confusion import Confusion, confusion_matrix
from deteval.analysis.images import ImageDiagnostics, image_diagnostics
from deteval.analysis.match_counts import coco_match_counts, coco_match_counts_of
from deteval.analysis.ranked import Matched, matched
from deteval.analysis.tide import ErrorAnalysis, TideInput, tide_errors
from deteval.detection.coco import stat_maxdet
from deteval.detection.coco_params import CocoParams
from deteval.detection.voc import VOCDetections, VOCGroundTruth, VOCParams
from deteval.errors import ConfigError
from deteval.io.coco import CocoGroundTruth, CocoResults

__all__ = [
    "coco_confusion",
    "coco_errors",
    "coco_images",
    "coco_match_counts",
    "coco_match_counts_of",
    "coco_matched",
    "tide_input_coco",
    "tide_input_from_voc",
    "tide_input_voc",
    "voc_confusion",
    "voc_errors",
    "voc_images",
    "voc_matched",
]


def coco_confusion(
    gt: CocoGroundTruth,
    results: CocoResults,
    *,
    params: CocoParams | None = None,
    iou: float = 0.5,
    score_threshold: float = 0.25,
) -> Confusion:
    """The confusion matrix (:mod:`deteval.analysis.confusion`) of COCO bbox results, pycocotools' matching
    at ``iou`` on the top ``max_dets[-1]`` detections per image and category."""
    p = params if params is not None else CocoParams.from_options("bbox")
    return confusion_matrix(
        _coco_input(gt, results, p, "the confusion matrix supports"),
        list(gt.cat_names),
        iou=iou,
        score_threshold=score_threshold,
        rule="coco",
        max_dets=int(p.max_dets[-1]),
    )


def voc_confusion(
    gt: VOCGroundTruth,
    dets: VOCDetections,
    classes: Sequence[str],
    *,
    params: VOCParams | None = None,
    score_threshold: float = 0.25,
) -> Confusion:
    """The confusion matrix of VOC detections over ``classes``: the devkit's matching at
    ``params.iou_threshold``, difficult objects neither counted nor missed."""
    p, inp = _voc_input(gt, dets, classes, params, "the confusion matrix follows")
    return confusion_matrix(
        inp,
        list(classes),
        iou=float(p.iou_threshold),
        score_threshold=score_threshold,
        rule="voc",
        max_dets=2**62,
    )


def tide_input_from_voc(
    gt: VOCGroundTruth, dets: VOCDetections, classes: Sequence[str], p: VOCParams, *, xywh: bool
) -> TideInput:
    """:func:`tide_input_voc` on loaded VOC tables (``p.plus_one`` for the +1 widths)."""
    return tide_input_voc(
        gt.image,
        [gt.classes[i] for i in gt.label.tolist()],
        gt.boxes,
        gt.difficult,
        dets.image,
        [dets.classes[i] for i in dets.label.tolist()],
        dets.boxes,
        dets.scores,
        classes,
        plus_one=p.plus_one,
        xywh=xywh,
    )


def coco_errors(
    gt: CocoGroundTruth,
    results: CocoResults,
    *,
    params: CocoParams | None = None,
    compat: str = "protocol",
    pos_threshold: float = 0.5,
    bg_threshold: float = 0.1,
    summary_compat: str = "pycocotools",
) -> ErrorAnalysis:
    """TIDE errors of COCO bbox results (:func:`deteval.analysis.tide.tide_errors`); the protocol AP uses
    ``params``' recall levels and the maxDets at which the summary reads AP50 under ``summary_compat``
    (pycocotools' rule: ``maxDets[2]``; "fixed": the last), so that it is the AP50 the same run prints
    (pycocotools' AP at ``pos_threshold``); the last maxDets where the summary has none."""
    p = params if params is not None else CocoParams.from_options("bbox")
    inp = _coco_input(gt, results, p, "the error analysis supports")
    if inp.quads and compat == "tide":
        raise ConfigError(
            "--errors-compat tide is tidecv's arithmetic, which scores axis-aligned boxes only: use "
            "--errors-compat protocol for oriented boxes"
        )
    if not p.use_cats:
        raise ConfigError("the error analysis needs use_cats=true (errors are defined per class)")
    at = stat_maxdet(p, summary_compat, "last")
    max_dets = 100 if compat == "tide" else int(p.max_dets[-1] if at is None else at)
    return tide_errors(
        inp,
        pos_threshold=pos_threshold,
        bg_threshold=bg_threshold,
        compat=compat,
        protocol="coco",
        max_dets=max_dets,
        rec_thrs=p.rec_thrs,
    )


def voc_errors(
    gt: VOCGroundTruth,
    dets: VOCDetections,
    classes: Sequence[str],
    *,
    params: VOCParams | None = None,
    compat: str = "protocol",
    pos_threshold: float | None = None,
    bg_threshold: float = 0.1,
) -> ErrorAnalysis:
    """TIDE errors of VOC detections over ``classes``. Protocol mode: the devkit's matching (maximum IoU
    over all boxes of the class, difficult -> ignored, taken -> duplicate) and its AP (``params.metric``);
    ``pos_threshold`` defaults to ``params.iou_threshold``. ``compat="tide"``: tidecv on the COCO-format
    conversion (``xywh`` with the +1 width, difficult objects as crowd regions)."""
    p, inp = _voc_input(gt, dets, classes, params, "the error analysis follows", xywh=compat == "tide")
    pos = float(p.iou_threshold) if pos_threshold is None else pos_threshold
    protocol = "voc07" if p.metric == "voc07" else "voc2010"
    return tide_errors(
        inp,
        pos_threshold=pos,
        bg_threshold=bg_threshold,
        compat=compat,
        protocol=protocol,
        max_dets=100 if compat == "tide" else 2**62,
    )


def _voc_input(
    gt: VOCGroundTruth,
    dets: VOCDetections,
    classes: Sequence[str],
    params: VOCParams | None,
    what: str,
    xywh: bool = False,
) -> tuple[VOCParams, TideInput]:
    """The parameters (default ``VOCParams()``) and the analyses' input of a VOC evaluation; a profile other
    than the devkit's is refused naming the analysis."""
    p = params if params is not None else VOCParams()
    if p.profile != "voc_devkit":
        raise ConfigError(f"{what} the voc_devkit profile only")
    return p, tide_input_from_voc(gt, dets, classes, p, xywh=xywh)


def _coco_input(gt: CocoGroundTruth, results: CocoResults, p: CocoParams, what: str) -> TideInput:
    """The analyses' input of a bbox or an obb evaluation (the kernel its protocol matches with); other IoU
    types are refused naming the analysis."""
    if p.iou_type not in ("bbox", "obb"):
        raise ConfigError(f"{what} --iou-type bbox only, or obb (oriented boxes); not {p.iou_type}")
    return tide_input_coco(gt, results, quads=p.iou_type == "obb")


def tide_input_coco(gt: CocoGroundTruth, results: CocoResults, *, quads: bool = False) -> TideInput:
    """COCO bbox ground truth and results: categories by index into ``gt.cat_ids``, images in ascending id
    (pycocotools' order) or, for ``compat="tide"``, the file's ``images`` list (tidecv's order),
    ``iscrowd`` as the crowd flag (pycocotools' ``ignore``). ``quads``: the oriented boxes of an ``obb``
    evaluation (the tables' ``obb`` quadrilateral columns, :mod:`deteval.io.coco_obb`), matched with the
    rotated IoU the protocol uses."""
    if results.kind not in ("bbox", "loaded") or not np.isfinite(results.bbox).all():
        raise ConfigError("the error analysis needs bbox results (segm and keypoints are not supported)")
    if quads and (gt.obb is None or results.obb is None):
        raise ConfigError("the analyses of oriented boxes need an 'obb' on every annotation and result")
    return TideInput(
        gt_img=gt.img.astype(np.int64),
        gt_cls=gt.cat.astype(np.int64),
        gt_box=(gt.obb if quads else gt.bbox).astype(np.float64),  # type: ignore[union-attr]
        gt_crowd=gt.iscrowd.astype(bool),
        dt_img=results.img.astype(np.int64),
        dt_cls=results.cat.astype(np.int64),
        dt_score=results.score.astype(np.float64),
        dt_box=(results.obb if quads else results.bbox).astype(np.float64),  # type: ignore[union-attr]
        class_ids=np.arange(len(gt.cat_ids), dtype=np.int64),
        image_order=gt.image_file_order,
        quads=quads,
    )


def tide_input_voc(
    gt_image: np.ndarray,
    gt_label: Sequence[str],
    gt_boxes: np.ndarray,
    gt_difficult: np.ndarray,
    det_image: np.ndarray,
    det_label: Sequence[str],
    det_boxes: np.ndarray,
    det_scores: np.ndarray,
    classes: Sequence[str],
    *,
    plus_one: bool = True,
    xywh: bool = False,
) -> TideInput:
    """VOC boxes (``xyxy``) of the ``classes`` evaluated (others left out); difficult objects are the regions
    that are not positives. ``xywh``: convert to ``[x1, y1, x2 - x1 + 1, y2 - y1 + 1]`` (``+ 1`` only with
    ``plus_one``), the COCO-format VOC files tidecv reads. The tie order is the detection input order (the
    devkit's stable sort)."""
    index = {c: i for i, c in enumerate(classes)}
    gl = np.array([index.get(c, -1) for c in gt_label], dtype=np.int64)
    dl = np.array([index.get(c, -1) for c in det_label], dtype=np.int64)
    gk, dk = gl >= 0, dl >= 0
    one = 1.0 if plus_one else 0.0

    def conv(b: np.ndarray) -> np.ndarray:
        b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
        if not xywh:
            return b
        return np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0] + one, b[:, 3] - b[:, 1] + one], axis=1)

    return TideInput(
        gt_img=np.asarray(gt_image, dtype=np.int64)[gk],
        gt_cls=gl[gk],
        gt_box=conv(gt_boxes)[gk],
        gt_crowd=np.asarray(gt_difficult, dtype=bool)[gk],
        dt_img=np.asarray(det_image, dtype=np.int64)[dk],
        dt_cls=dl[dk],
        dt_score=np.asarray(det_scores, dtype=np.float64)[dk],
        dt_box=conv(det_boxes)[dk],
        class_ids=np.arange(len(classes), dtype=np.int64),
        xyxy=not xywh,
        plus_one=plus_one,
        tie_key=np.arange(int(dk.sum()), dtype=np.int64),
    )


def coco_matched(
    gt: CocoGroundTruth, results: CocoResults, *, params: CocoParams | None = None, iou: float = 0.5
) -> Matched:
    """COCO bbox detections matched as pycocotools does at ``iou`` (top ``max_dets[-1]`` per image and
    category; crowd-matched detections left out)."""
    p = params if params is not None else CocoParams.from_options("bbox")
    inp = _coco_input(gt, results, p, "operating points and calibration support")
    return matched(inp, list(gt.cat_names), iou=iou, rule="coco", max_dets=int(p.max_dets[-1]))


def voc_matched(
    gt: VOCGroundTruth, dets: VOCDetections, classes: Sequence[str], *, params: VOCParams | None = None
) -> Matched:
    """VOC detections over ``classes`` matched as the devkit does at ``params.iou_threshold``."""
    p, inp = _voc_input(gt, dets, classes, params, "operating points and calibration follow")
    return matched(inp, list(classes), iou=float(p.iou_threshold), rule="voc", max_dets=2**62)


def coco_images(
    gt: CocoGroundTruth, results: CocoResults, *, params: CocoParams | None = None, iou: float = 0.5
) -> tuple[ImageDiagnostics, TideInput]:
    """Per-image diagnostics (:mod:`deteval.analysis.images`) of COCO bbox results, pycocotools' matching
    and AP at ``iou``; images named by their id."""
    p = params if params is not None else CocoParams.from_options("bbox")
    inp = _coco_input(gt, results, p, "per-image diagnostics support")
    names = [str(i) for i in gt.image_ids.tolist()]
    diag = image_diagnostics(
        inp, names, iou=iou, rule="coco", protocol="coco", max_dets=int(p.max_dets[-1]), rec_thrs=p.rec_thrs
    )
    return diag, inp


def voc_images(
    gt: VOCGroundTruth, dets: VOCDetections, classes: Sequence[str], *, params: VOCParams | None = None
) -> tuple[ImageDiagnostics, TideInput]:
    """Per-image diagnostics of VOC detections: the devkit's matching and AP at ``params.iou_threshold``."""
    p, inp = _voc_input(gt, dets, classes, params, "per-image diagnostics follow")
    protocol = "voc07" if p.metric == "voc07" else "voc2010"
    diag = image_diagnostics(
        inp, list(gt.images), iou=float(p.iou_threshold), rule="voc", protocol=protocol, max_dets=2**62
    )
    return diag, inp
