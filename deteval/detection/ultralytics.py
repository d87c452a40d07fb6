"""Ultralytics ``yolo val`` box metrics, era by era (the rules are in DESIGN.md; confirmed against the tool).

Three profiles differ in two rules:

===================== ==================================== ===========================================
profile               matcher                              end of the recall curve
===================== ==================================== ===========================================
``ultralytics-8.0``   ``unique``: all pairs with IoU ≥ t   ``[0, r…, 1]`` / ``[1, p…, 0]``
(8.0 … 8.4.36,        by IoU descending, one ``np.unique``
YOLOv5)               over detections, one over labels
``ultralytics-8.4.37`` ``unique``                           ``[0, r…, r_last, 1]`` / ``[1, p…, 0, 0]``
(8.4.37 … 8.4.175)
``ultralytics-8.4.176`` ``greedy``: detections in rank order ``[0, r…, r_last, 1]`` / ``[1, p…, 0, 0]``
(8.4.176 and later)   take the unclaimed label of highest
                      IoU (argmax: lowest index on ties)
===================== ==================================== ===========================================

Common to all: IoU ``inter / (area1 + area2 − inter + 1e-7)`` in float32; thresholds
``linspace(0.5, 0.95, 10)`` in float32; a pair is matchable only within its class; no crowd or ignore;
at most ``max_det`` = 300 detections per image (the highest-confidence ones; ties keep file order); all
detections of the split concatenated in image order and ranked by ``np.argsort(-conf)`` (numpy's default,
unstable sort, on float32 confidences, as Ultralytics does: exact ties rank as numpy leaves them); per class
with ≥ 1 label: recall ``tp / (n + 1e-16)``, precision ``tp / (tp + fp)``, precision envelope from the right,
AP = ``trapezoid(interp(linspace(0, 1, 101), mrec, mpre))`` (so at most 0.995). P and R are read at one
confidence for all classes: the argmax of the class-mean F1 curve on ``linspace(0, 1, 1000)`` after a box
filter of 10 % width.

Oriented boxes (``yolo val`` of an OBB model, ``OBBValidator``): the same matchers, ranking and AP, with
Ultralytics' ProbIoU (:func:`probiou`, float32) of ``(cx, cy, w, h, r)`` boxes instead of the box IoU.

A deliberate copy of kernels that have their home elsewhere, to reproduce Ultralytics' own arithmetic: the
float32 IoU with ``+ 1e-7`` in the union (:func:`box_iou`; the float64 kernels are in ``match/iou.py``), the
float32 ProbIoU of oriented boxes (:func:`probiou`; the polygon IoU is in ``match/rotated.py``), its two
matchers (:func:`match_image`; pycocotools' and the devkit's rules are in ``match/``), and the precision
envelope of the sentinel-padded curve integrated with ``np.trapezoid`` (``_ap``; the core's AP methods never
interpolate linearly). The grids and thresholds come from ``core/levels.py``. tests/test_yolo_ultralytics.py
checks the results against the values Ultralytics reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from deteval.core.levels import (
    COCO_IOU_THRESHOLDS,
    ULTRALYTICS_CONFIDENCES,
    ULTRALYTICS_IOU_THRESHOLDS,
    ULTRALYTICS_RECALL_POINTS,
)
from deteval.detection.box_table import BoxTable
from deteval.errors import ConfigError

Matcher = Literal["unique", "greedy"]
#: labels × detections IoU of label rows ``gi`` and detection rows ``di``
PairIou = Callable[[np.ndarray, np.ndarray], np.ndarray]
Sentinel = Literal["one", "repeat_last"]

IOU_THRESHOLDS_32 = ULTRALYTICS_IOU_THRESHOLDS  # == torch.linspace(0.5, 0.95, 10)
IOU_THRESHOLDS_64 = COCO_IOU_THRESHOLDS  # np.linspace(0.5, 0.95, 10), for explain's float64 steps
_EPS_IOU = 1e-7
_EPS = 1e-16


@dataclass(frozen=True)
class UltralyticsRules:
    """The rules one Ultralytics era applies; ``float32=False`` and ``max_det`` exist for ``explain``."""

    name: str
    matcher: Matcher
    sentinel: Sentinel
    float32: bool = True
    max_det: int = 300
    versions: str = ""


PROFILES: dict[str, UltralyticsRules] = {
    "ultralytics-8.0": UltralyticsRules("ultralytics-8.0", "unique", "one", versions="8.0 to 8.4.36, YOLOv5"),
    "ultralytics-8.4.37": UltralyticsRules(
        "ultralytics-8.4.37", "unique", "repeat_last", versions="8.4.37 to 8.4.175"
    ),
    "ultralytics-8.4.176": UltralyticsRules(
        "ultralytics-8.4.176", "greedy", "repeat_last", versions="8.4.176 and later"
    ),
}
ALIASES = {"ultralytics": "ultralytics-8.4.176"}


def get_rules(profile: str | UltralyticsRules) -> UltralyticsRules:
    """The rules of a profile name (``ultralytics`` is the newest era)."""
    if isinstance(profile, UltralyticsRules):
        return profile
    name = ALIASES.get(profile, profile)
    if name not in PROFILES:
        raise ConfigError(
            f"unknown Ultralytics profile {profile!r}; choose one of {', '.join([*PROFILES, *ALIASES])}"
        )
    return PROFILES[name]


def box_iou(gt_xyxy: np.ndarray, dt_xyxy: np.ndarray, *, float32: bool = True) -> np.ndarray:
    """IoU (labels × detections) = inter / (area_gt + area_dt − inter + 1e-7), in float32 like Ultralytics.

    The operations run in Ultralytics' order (((area1 + area2) − inter) + eps) so that every float32 rounding
    is the same.
    """
    dtype: Any = np.float32 if float32 else np.float64
    a, b = gt_xyxy.astype(dtype)[:, None, :], dt_xyxy.astype(dtype)[None, :, :]
    wh = np.maximum(np.minimum(a[..., 2:], b[..., 2:]) - np.maximum(a[..., :2], b[..., :2]), dtype(0))
    inter = wh[..., 0] * wh[..., 1]
    wa, wb = a[..., 2:] - a[..., :2], b[..., 2:] - b[..., :2]
    return inter / (wa[..., 0] * wa[..., 1] + wb[..., 0] * wb[..., 1] - inter + dtype(_EPS_IOU))


def _covariance(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ultralytics' ``_get_covariance_matrix`` (8.4's form) of float32 ``(cx, cy, w, h, r)`` rows: the Gaussian
    of a rectangle, ``a = w²/12``, ``b = h²/12``, rotated by r. (8.0.239 writes the off-diagonal term as
    ``a·cos·sin − b·sin·cos``; its expected numbers in the tests are the same.)"""
    a, bb, r = b[:, 2] ** 2 / 12, b[:, 3] ** 2 / 12, b[:, 4]
    cos, sin = np.cos(r), np.sin(r)
    cos2, sin2 = cos**2, sin**2
    return a * cos2 + bb * sin2, a * sin2 + bb * cos2, (a - bb) * cos * sin


def probiou(gt_xywhr: np.ndarray, dt_xywhr: np.ndarray) -> np.ndarray:
    """Ultralytics' ``batch_probiou`` (labels × detections) in float32, its operations in its order: the
    Bhattacharyya distance ``bd`` of the boxes' Gaussians (``t1 + t2 + t3``, each denominator ``+ 1e-7``),
    clamped to [1e-7, 100], and ``1 − √(1 − e^(−bd) + 1e-7)``. The OBB validator's IoU (``yolo val`` of an
    OBB model); ``(cx, cy, w, h, r)`` in pixels, r in radians.
    """
    f = np.float32
    g, d = np.asarray(gt_xywhr, dtype=f), np.asarray(dt_xywhr, dtype=f)
    eps = f(_EPS_IOU)
    x1, y1 = g[:, 0:1], g[:, 1:2]
    x2, y2 = d[None, :, 0], d[None, :, 1]
    a1, b1, c1 = (v[:, None] for v in _covariance(g))
    a2, b2, c2 = (v[None, :] for v in _covariance(d))
    t1 = (
        ((a1 + a2) * (y1 - y2) ** 2 + (b1 + b2) * (x1 - x2) ** 2)
        / ((a1 + a2) * (b1 + b2) - (c1 + c2) ** 2 + eps)
    ) * f(0.25)
    t2 = (((c1 + c2) * (x2 - x1) * (y1 - y2)) / ((a1 + a2) * (b1 + b2) - (c1 + c2) ** 2 + eps)) * f(0.5)
    root = np.sqrt(np.maximum(a1 * b1 - c1**2, f(0)) * np.maximum(a2 * b2 - c2**2, f(0)))
    with np.errstate(divide="ignore", invalid="ignore"):  # (degenerate boxes: as torch, NaN or inf, clamped)
        t3 = np.log(((a1 + a2) * (b1 + b2) - (c1 + c2) ** 2) / (f(4) * root + eps) + eps) * f(0.5)
    bd = np.clip(t1 + t2 + t3, eps, f(100.0))
    hd = np.sqrt(f(1.0) - np.exp(-bd) + eps)
    return f(1) - hd


def match_image(
    iou: np.ndarray, gt_cls: np.ndarray, dt_cls: np.ndarray, thresholds: np.ndarray, matcher: Matcher
) -> np.ndarray:
    """Correct-at-threshold matrix (detections × thresholds) for one image.

    ``iou`` is labels × detections; detections are in rank (descending confidence) order. IoUs of pairs of
    different classes are set to 0 first, as Ultralytics does.
    """
    n_dt, n_t = iou.shape[1], thresholds.shape[0]
    correct = np.zeros((n_dt, n_t), dtype=bool)
    if iou.shape[0] == 0 or n_dt == 0:
        return correct
    iou = iou * (gt_cls[:, None] == dt_cls[None, :])
    if matcher == "greedy":
        claimed = np.zeros((iou.shape[0], n_t), dtype=bool)
        cols = np.arange(n_t)
        for j in np.flatnonzero((iou >= thresholds.min()).any(0)):
            free = np.where(claimed, 0, iou[:, j, None])
            best = free.argmax(0)
            correct[j] = free[best, cols] >= thresholds
            claimed[best, cols] |= correct[j]
        return correct
    for t, thr in enumerate(thresholds):
        pairs = np.stack(np.nonzero(iou >= thr), 1)
        if pairs.shape[0] > 1:
            # Highest IoU first; then each detection keeps its first pair, then each label its first
            # (np.unique returns first occurrences in index order, i.e. the lowest detection index).
            pairs = pairs[iou[pairs[:, 0], pairs[:, 1]].argsort()[::-1]]
            pairs = pairs[np.unique(pairs[:, 1], return_index=True)[1]]
            pairs = pairs[np.unique(pairs[:, 0], return_index=True)[1]]
        correct[pairs[:, 1], t] = True
    return correct


def _ap(recall: np.ndarray, precision: np.ndarray, sentinel: Sentinel) -> float:
    """101-point trapezoid AP of one PR curve with Ultralytics' sentinels and right-to-left envelope."""
    if sentinel == "one":
        mrec = np.concatenate(([0.0], recall, [1.0]))
        mpre = np.concatenate(([1.0], precision, [0.0]))
    else:
        last = recall[-1] if len(recall) else 1.0
        mrec = np.concatenate(([0.0], recall, [last], [1.0]))
        mpre = np.concatenate(([1.0], precision, [0.0], [0.0]))
    mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
    x = ULTRALYTICS_RECALL_POINTS
    return float(np.trapezoid(np.interp(x, mrec, mpre), x))


def _box_filter(y: np.ndarray, fraction: float) -> np.ndarray:
    """Moving average of odd width ``round(len·fraction·2)//2 + 1``, edges padded with the end values."""
    width = round(len(y) * fraction * 2) // 2 + 1
    pad = np.ones(width // 2)
    padded = np.concatenate((pad * y[0], y, pad * y[-1]), 0)
    return np.convolve(padded, np.ones(width) / width, mode="valid")


@dataclass
class UltralyticsMetrics:
    """Per class (classes with ≥ 1 label, ascending id): ``ap`` (K × 10), ``p``, ``r``, ``n_labels``;
    the means ``precision``, ``recall``, ``map50``, ``map75``, ``map`` (mAP50-95) as ``yolo val`` reports."""

    classes: np.ndarray
    ap: np.ndarray
    p: np.ndarray
    r: np.ndarray
    n_labels: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        return float(self.p.mean()) if len(self.p) else 0.0

    @property
    def recall(self) -> float:
        return float(self.r.mean()) if len(self.r) else 0.0

    @property
    def map50(self) -> float:
        return float(self.ap[:, 0].mean()) if len(self.ap) else 0.0

    @property
    def map75(self) -> float:
        return float(self.ap[:, 5].mean()) if len(self.ap) else 0.0

    @property
    def map(self) -> float:
        return float(self.ap.mean()) if len(self.ap) else 0.0


def ap_per_class(
    tp: np.ndarray, conf: np.ndarray, pred_cls: np.ndarray, target_cls: np.ndarray, sentinel: Sentinel
) -> UltralyticsMetrics:
    """AP per class and P/R at the max-mean-F1 confidence, from the concatenated correct matrix.

    ``conf`` is float32 (Ultralytics' dtype) and ranked with numpy's default sort, so that the order of
    detections, tied scores included, is Ultralytics' own.
    """
    order = np.argsort(-conf)
    tp, conf, pred_cls = tp[order], conf[order], pred_cls[order]
    classes, n_labels = np.unique(target_cls, return_counts=True)
    x = ULTRALYTICS_CONFIDENCES
    ap = np.zeros((len(classes), tp.shape[1]))
    p_curve, r_curve = np.zeros((len(classes), 1000)), np.zeros((len(classes), 1000))
    for k, c in enumerate(classes):
        mine = pred_cls == c
        if not mine.any():
            continue
        tpc = tp[mine].cumsum(0)
        fpc = (1 - tp[mine]).cumsum(0)
        recall = tpc / (n_labels[k] + _EPS)
        precision = tpc / (tpc + fpc)
        r_curve[k] = np.interp(-x, -conf[mine], recall[:, 0], left=0)
        p_curve[k] = np.interp(-x, -conf[mine], precision[:, 0], left=1)
        for t in range(tp.shape[1]):
            ap[k, t] = _ap(recall[:, t], precision[:, t], sentinel)
    f1 = 2 * p_curve * r_curve / (p_curve + r_curve + _EPS)
    best = _box_filter(f1.mean(0), 0.1).argmax() if len(classes) else 0
    return UltralyticsMetrics(classes, ap, p_curve[:, best], r_curve[:, best], n_labels)


@dataclass
class MatchedSet:
    """The concatenated matcher output of a split, plus the counts ``explain`` reports."""

    tp: np.ndarray
    conf: np.ndarray
    pred_cls: np.ndarray
    target_cls: np.ndarray
    capped: int = 0


def match_split(
    gt: BoxTable, dt: BoxTable, n_images: int, rules: UltralyticsRules, iou: PairIou | None = None
) -> MatchedSet:
    """Cap, rank within image, match image by image and concatenate in image order (``yolo val``'s loop).

    ``iou(gi, di)``: the labels × detections IoU of label rows ``gi`` and detection rows ``di`` (default:
    :func:`box_iou` of their boxes; oriented boxes: :func:`probiou`)."""
    thresholds = IOU_THRESHOLDS_32 if rules.float32 else IOU_THRESHOLDS_64
    g_order = np.argsort(gt.img, kind="stable")
    # Within an image: descending confidence, file order on ties (the NMS output order Ultralytics sees).
    d_order = np.lexsort((-dt.conf, dt.img))
    g_start = np.searchsorted(gt.img[g_order], np.arange(n_images + 1))
    d_start = np.searchsorted(dt.img[d_order], np.arange(n_images + 1))
    tps, keep = [], []
    capped = 0
    for i in range(n_images):
        gi = g_order[g_start[i] : g_start[i + 1]]
        di = d_order[d_start[i] : d_start[i + 1]]
        if len(di) > rules.max_det:
            capped += len(di) - rules.max_det
            di = di[: rules.max_det]
        m = box_iou(gt.xyxy[gi], dt.xyxy[di], float32=rules.float32) if iou is None else iou(gi, di)
        tps.append(match_image(m, gt.cls[gi], dt.cls[di], thresholds, rules.matcher))
        keep.append(di)
    kept = np.concatenate(keep) if keep else np.zeros(0, dtype=np.int64)
    tp = np.concatenate(tps) if tps else np.zeros((0, 10), dtype=bool)
    conf = dt.conf[kept].astype(np.float32 if rules.float32 else np.float64)
    return MatchedSet(tp, conf, dt.cls[kept], gt.cls[g_order], capped)


def evaluate_ultralytics(
    gt: BoxTable,
    dt: BoxTable,
    n_images: int,
    profile: str | UltralyticsRules = "ultralytics",
    *,
    iou: PairIou | None = None,
) -> UltralyticsMetrics:
    """``yolo val``'s box metrics of detections ``dt`` against labels ``gt`` (pixel xyxy) under a profile;
    ``iou`` as in :func:`match_split` (:func:`obb_pair_iou` for an OBB model's metrics)."""
    rules = get_rules(profile)
    m = match_split(gt, dt, n_images, rules, iou)
    out = ap_per_class(m.tp, m.conf, m.pred_cls, m.target_cls, rules.sentinel)
    out.extra["capped"] = m.capped
    out.extra["images_per_class"] = np.array(
        [len(np.unique(gt.img[gt.cls == c])) for c in out.classes], dtype=np.int64
    )
    return out


def obb_pair_iou(gt_xywhr: np.ndarray, dt_xywhr: np.ndarray) -> PairIou:
    """The ``iou(gi, di)`` of :func:`match_split` for oriented boxes: :func:`probiou` of the rows'
    ``(cx, cy, w, h, r)``, as the OBB validator's ``_process_batch``."""

    def pair_iou(gi: np.ndarray, di: np.ndarray) -> np.ndarray:
        return probiou(gt_xywhr[gi], dt_xywhr[di])

    return pair_iou


def with_rules(profile: str | UltralyticsRules, **changes: Any) -> UltralyticsRules:
    """A copy of a profile's rules with some changed (``explain`` walks from one era to another this way)."""
    return replace(get_rules(profile), **changes)
