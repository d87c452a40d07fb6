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

Pose (:func:`evaluate_ultralytics_pose`, ``PoseValidator``): the same ranking and matcher run a second time on
Ultralytics' float32 OKS (:func:`kpt_iou`; COCO's float64 OKS is in ``detection/coco_iou.py``) with its
sigmas (:func:`pose_sigmas`) and scale ``0.53 · box area`` (:func:`pose_area`); ``ultralytics-8.0`` divides
as 8.0.239 does (``UltralyticsRules.oks``). tests/test_yolo_pose.py checks them against Ultralytics' own code.
"""

from __future__ import annotations

import functools
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
from deteval.core.sorting import distinct, distinct_counts
from deteval.detection.coco_params import COCO_KPT_OKS_TENTHS
from deteval.errors import ConfigError
from deteval.tables.boxes import BoxTable

Matcher = Literal["unique", "greedy"]
#: The IoU of pairs: label rows ``gi[p]`` with detection rows ``di[p]``, one value per pair (element-wise)
PairIou = Callable[[np.ndarray, np.ndarray], np.ndarray]
Sentinel = Literal["one", "repeat_last"]
#: The OKS formulas of the pose validator: 8.0 divides three times (``d / (2σ)² / (area + eps) / 2``), 8.4
#: divides once by the product (``d / ((2σ)² · (area + eps) · 2)``); in float32 the two round differently.
OksForm = Literal["divided", "product"]

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
    #: How image sizes follow the EXIF orientation (:data:`deteval.io.yolo.ExifRule`; 8.4.174 and 8.4.175, in
    #: the 8.4.37 era, already read it as 8.4.176 does).
    exif: str = "swap-5-8"
    oks: OksForm = "product"
    #: Whose image check leaves corrupt images out (:data:`deteval.io.yolo_images.IMAGE_FORMATS`: 8.0.239's
    #: accepted formats, or 8.4.37's, which 8.4.176 and 8.4.190 keep).
    images: str = "8.4"


PROFILES: dict[str, UltralyticsRules] = {
    # (pose: 8.0.239's OKS; 8.4.36 computes it as the later eras: with_rules("ultralytics-8.0", oks="product"))
    "ultralytics-8.0": UltralyticsRules(
        "ultralytics-8.0",
        "unique",
        "one",
        versions="8.0 to 8.4.36, YOLOv5",
        exif="jpeg-6-8",
        oks="divided",
        images="8.0",
    ),
    "ultralytics-8.4.37": UltralyticsRules(
        "ultralytics-8.4.37", "unique", "repeat_last", versions="8.4.37 to 8.4.175", exif="jpeg-6-8"
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
    is the same (:func:`paired_box_iou` of every label with every detection).
    """
    return paired_box_iou(gt_xyxy[:, None, :], dt_xyxy[None, :, :], float32=float32)


def _covariance(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ultralytics' ``_get_covariance_matrix`` (8.4's form) of float32 ``(cx, cy, w, h, r)`` rows: the Gaussian
    of a rectangle, ``a = w²/12``, ``b = h²/12``, rotated by r. (8.0.239 writes the off-diagonal term as
    ``a·cos·sin − b·sin·cos``; its expected numbers in the tests are the same.)"""
    a, bb, r = b[:, 2] ** 2 / 12, b[:, 3] ** 2 / 12, b[:, 4]
    cos, sin = np.cos(r), np.sin(r)
    cos2, sin2 = cos**2, sin**2
    return a * cos2 + bb * sin2, a * sin2 + bb * cos2, (a - bb) * cos * sin


def probiou(gt_xywhr: np.ndarray, dt_xywhr: np.ndarray) -> np.ndarray:
    """Ultralytics' ``batch_probiou`` of the pairs (``gt_xywhr[p]``, ``dt_xywhr[p]``), element-wise, in
    float32, its operations in its order: the Bhattacharyya distance ``bd`` of the boxes' Gaussians
    (``t1 + t2 + t3``, each denominator ``+ 1e-7``), clamped to [1e-7, 100], and ``1 − √(1 − e^(−bd) + 1e-7)``.
    The OBB validator's IoU (``yolo val`` of an OBB model, its labels × predictions matrix read pair by pair);
    ``(cx, cy, w, h, r)`` in pixels, r in radians.
    """
    f = np.float32
    g, d = np.asarray(gt_xywhr, dtype=f).reshape(-1, 5), np.asarray(dt_xywhr, dtype=f).reshape(-1, 5)
    eps = f(_EPS_IOU)
    x1, y1, x2, y2 = g[:, 0], g[:, 1], d[:, 0], d[:, 1]
    a1, b1, c1 = _covariance(g)
    a2, b2, c2 = _covariance(d)
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


def obb_pair_iou(gt_xywhr: np.ndarray, dt_xywhr: np.ndarray) -> PairIou:
    """The pair IoU of :func:`match_split` for oriented boxes: :func:`probiou` of the rows' ``(cx, cy, w, h,
    r)``, as the OBB validator's ``_process_batch``."""

    def pair_iou(gi: np.ndarray, di: np.ndarray) -> np.ndarray:
        return probiou(gt_xywhr[gi], dt_xywhr[di])

    return pair_iou


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


def envelope_curve(
    recall: np.ndarray, precision: np.ndarray, sentinel: Sentinel
) -> tuple[np.ndarray, np.ndarray]:
    """Ultralytics' ``compute_ap`` curve: recall and precision closed with the profile's sentinels, precision
    replaced by its envelope from the right (what the AP integrates and ``PR_curve.png`` draws)."""
    if sentinel == "one":
        mrec = np.concatenate(([0.0], recall, [1.0]))
        mpre = np.concatenate(([1.0], precision, [0.0]))
    else:
        last = recall[-1] if len(recall) else 1.0
        mrec = np.concatenate(([0.0], recall, [last], [1.0]))
        mpre = np.concatenate(([1.0], precision, [0.0], [0.0]))
    return mrec, np.flip(np.maximum.accumulate(np.flip(mpre)))


def _ap(recall: np.ndarray, precision: np.ndarray, sentinel: Sentinel) -> float:
    """101-point trapezoid AP of one PR curve with Ultralytics' sentinels and right-to-left envelope."""
    mrec, mpre = envelope_curve(recall, precision, sentinel)
    x = ULTRALYTICS_RECALL_POINTS
    return float(np.trapezoid(np.interp(x, mrec, mpre), x))


def box_filter(y: np.ndarray, fraction: float) -> np.ndarray:
    """Ultralytics' ``smooth``: a moving average of odd width ``round(len·fraction·2)//2 + 1``, edges padded
    with the end values."""
    width = round(len(y) * fraction * 2) // 2 + 1
    pad = np.ones(width // 2)
    padded = np.concatenate((pad * y[0], y, pad * y[-1]), 0)
    return np.convolve(padded, np.ones(width) / width, mode="valid")


@dataclass
class UltralyticsMetrics:
    """Per class (classes with ≥ 1 label, ascending id): ``ap`` (K × 10), ``p``, ``r``, ``n_labels``;
    the means ``precision``, ``recall``, ``map50``, ``map75``, ``map`` (mAP50-95) as ``yolo val`` reports.
    ``extra``: ``p_curve``, ``r_curve``, ``f1_curve`` (K × 1000, against the confidence grid) and
    ``pr_curves`` (per class: rank-order recall, precision and confidence at IoU 0.5), ``pr_plot`` (K × 1000:
    the precision envelope at IoU 0.5 on the recall grid ``linspace(0, 1, 1000)``)."""

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
    ranked = RankedMatches.of(tp, conf, pred_cls, target_cls)
    return ranked.metrics(ranked.class_curves(np.arange(len(ranked.classes)), sentinel))


@dataclass
class ClassCurves:
    """Per class of a subset ``ks`` (indices into :attr:`RankedMatches.classes`): ``ap`` (len(ks) × T),
    ``p_curve``, ``r_curve`` and ``pr_plot`` (len(ks) × 1000) and ``pr_curves`` (rank-order recall, precision
    and confidence at IoU 0.5), as :func:`ap_per_class` computes them class by class."""

    ks: np.ndarray
    ap: np.ndarray
    p_curve: np.ndarray
    r_curve: np.ndarray
    pr_plot: np.ndarray
    pr_curves: list[tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass
class RankedMatches:
    """The correct matrix, confidences and classes of every detection ranked by ``np.argsort(-conf)``
    (Ultralytics' ranking), and the classes with labels (ascending) with their label counts: what
    :func:`ap_per_class` integrates, one class at a time (classes are independent once ranked)."""

    tp: np.ndarray
    conf: np.ndarray
    pred_cls: np.ndarray
    classes: np.ndarray
    n_labels: np.ndarray

    @classmethod
    def of(
        cls, tp: np.ndarray, conf: np.ndarray, pred_cls: np.ndarray, target_cls: np.ndarray
    ) -> RankedMatches:
        order = np.argsort(-conf)
        classes, n_labels = distinct_counts(target_cls)
        return cls(tp[order], conf[order], pred_cls[order], classes, n_labels)

    @functools.cached_property
    def by_class(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The detections grouped by class, in rank order within each (a stable sort of the ranked classes
        keeps the order a mask ``pred_cls == c`` keeps), and where each class of :attr:`classes` starts and
        ends in that order."""
        order = np.argsort(self.pred_cls, kind="stable")
        ranked = self.pred_cls[order]
        return (
            order,
            np.searchsorted(ranked, self.classes),
            np.searchsorted(ranked, self.classes, side="right"),
        )

    def detections_per_class(self) -> np.ndarray:
        """How many detections each class of :attr:`classes` has (its share of :meth:`class_curves`' work)."""
        _, starts, ends = self.by_class
        return ends - starts

    def class_curves(self, ks: np.ndarray, sentinel: Sentinel) -> ClassCurves:
        """The curves and APs of the classes ``ks`` (indices into :attr:`classes`)."""
        tp, conf = self.tp, self.conf
        x = ULTRALYTICS_CONFIDENCES
        ap = np.zeros((len(ks), tp.shape[1]))
        p_curve, r_curve = np.zeros((len(ks), 1000)), np.zeros((len(ks), 1000))
        empty = np.zeros(0)
        pr_curves = [(empty, empty, empty)] * len(ks)  # rank-order recall, precision, conf at IoU 0.5
        pr_plot = np.zeros((len(ks), 1000))  # the envelope at IoU 0.5 on the recall grid x (PR_curve.png)
        order, starts, ends = self.by_class
        for j, k in enumerate(ks.tolist()):
            mine = order[starts[k] : ends[k]]
            if not len(mine):
                continue
            tpc = tp[mine].cumsum(0)
            if tp.dtype == bool:  # (tpc + fpc, fpc = (1 − tp).cumsum, is the rank 1, 2, …: exact integers)
                seen = np.arange(1, len(mine) + 1, dtype=tpc.dtype)[:, None]
            else:
                seen = tpc + (1 - tp[mine]).cumsum(0)
            recall = tpc / (self.n_labels[k] + _EPS)
            precision = tpc / seen
            r_curve[j] = np.interp(-x, -conf[mine], recall[:, 0], left=0)
            p_curve[j] = np.interp(-x, -conf[mine], precision[:, 0], left=1)
            pr_curves[j] = (recall[:, 0], precision[:, 0], conf[mine].astype(np.float64))
            pr_plot[j] = np.interp(x, *envelope_curve(recall[:, 0], precision[:, 0], sentinel))
            for t in range(tp.shape[1]):
                ap[j, t] = _ap(recall[:, t], precision[:, t], sentinel)
        return ClassCurves(np.asarray(ks), ap, p_curve, r_curve, pr_plot, pr_curves)

    def metrics(self, *parts: ClassCurves) -> UltralyticsMetrics:
        """The metrics of the classes' curves (``parts`` together hold every class once): P and R at the
        argmax of the box-filtered class-mean F1."""
        ks = np.concatenate([c.ks for c in parts]).astype(np.int64)
        at = np.empty(len(ks), dtype=np.int64)
        at[ks] = np.arange(len(ks))

        def joined(name: str) -> np.ndarray:
            return np.concatenate([getattr(c, name) for c in parts])[at]

        ap, p_curve, r_curve, pr_plot = (joined(n) for n in ("ap", "p_curve", "r_curve", "pr_plot"))
        curves = [curve for c in parts for curve in c.pr_curves]
        pr_curves = [curves[i] for i in at.tolist()]
        f1 = 2 * p_curve * r_curve / (p_curve + r_curve + _EPS)
        best = box_filter(f1.mean(0), 0.1).argmax() if len(self.classes) else 0
        out = UltralyticsMetrics(self.classes, ap, p_curve[:, best], r_curve[:, best], self.n_labels)
        # the curves yolo val plots: P, R and F1 against the confidence grid, and each class's PR curve
        out.extra.update(p_curve=p_curve, r_curve=r_curve, f1_curve=f1, pr_curves=pr_curves, pr_plot=pr_plot)
        return out


@dataclass
class MatchedSet:
    """The concatenated matcher output of a split, plus the counts ``explain`` reports."""

    tp: np.ndarray
    conf: np.ndarray
    pred_cls: np.ndarray
    target_cls: np.ndarray
    capped: int = 0
    pred_img: np.ndarray | None = None  # each detection's image (for resampling images)
    target_img: np.ndarray | None = None  # each label's image
    kept: np.ndarray | None = None  # each detection's row in the detections table


def match_split(
    gt: BoxTable, dt: BoxTable, n_images: int, rules: UltralyticsRules, iou: PairIou | None = None
) -> MatchedSet:
    """Cap, rank within image, match every image and concatenate in image order (``yolo val``'s loop), all
    images at once: :func:`same_class_pairs` holds every pair that can match, the matchers run on it as
    columns (:func:`_unique_matches`, :func:`_greedy_matches`) and give what :func:`match_image` gives image
    by image. ``iou``: the pairs' IoU (default: :func:`box_iou`'s of their boxes; oriented boxes:
    :func:`obb_pair_iou`)."""
    thresholds = IOU_THRESHOLDS_32 if rules.float32 else IOU_THRESHOLDS_64
    g_order = np.argsort(gt.img, kind="stable")
    # Within an image: descending confidence, file order on ties (the NMS output order Ultralytics sees).
    d_order = np.lexsort((-dt.conf, dt.img))
    d_img = dt.img[d_order]
    rank = np.arange(len(d_order)) - np.searchsorted(d_img, d_img)
    capped = int((rank >= rules.max_det).sum())
    kept = d_order[rank < rules.max_det]
    pairs = same_class_pairs(gt, dt, g_order, kept, rules.float32, iou)
    tp = match_pairs(pairs, len(kept), len(gt), thresholds, rules.matcher)
    if rules.matcher == "unique":
        redo = distinct(pairs.image[pairs.tied])
        if len(redo):  # IoU ties decide which label a detection keeps: Ultralytics' own sort, per image
            g_start = np.searchsorted(gt.img[g_order], redo)
            g_end = np.searchsorted(gt.img[g_order], redo, side="right")
            k_img = dt.img[kept]
            for i, lo, hi in zip(redo.tolist(), g_start.tolist(), g_end.tolist()):
                gi, rows = g_order[lo:hi], np.flatnonzero(k_img == i)
                di = kept[rows]
                if iou is None:
                    m = box_iou(gt.xyxy[gi], dt.xyxy[di], float32=rules.float32)
                else:  # (labels × detections, from the pairs' IoU)
                    m = iou(np.repeat(gi, len(di)), np.tile(di, len(gi))).reshape(len(gi), len(di))
                tp[rows] = match_image(m, gt.cls[gi], dt.cls[di], thresholds, rules.matcher)
    conf = dt.conf[kept].astype(np.float32 if rules.float32 else np.float64)
    return MatchedSet(tp, conf, dt.cls[kept], gt.cls[g_order], capped, dt.img[kept], gt.img[g_order], kept)


@dataclass
class Pairs:
    """The (label, detection) pairs of one image and one class whose IoU reaches the lowest threshold, sorted
    by detection (its position in the kept, image-then-rank order) then label (its index in ``g_order``):
    ``det``, ``label`` (a row of the label table), ``iou``, ``image``; ``tied`` marks the pairs of a
    detection whose best IoU is shared by two labels."""

    det: np.ndarray
    label: np.ndarray
    iou: np.ndarray
    tied: np.ndarray
    image: np.ndarray


def same_class_pairs(
    gt: BoxTable,
    dt: BoxTable,
    g_order: np.ndarray,
    kept: np.ndarray,
    float32: bool = True,
    pair_iou: PairIou | None = None,
) -> Pairs:
    """Every (label, detection) pair of one image and one class with IoU ≥ 0.5 (:func:`box_iou`'s float
    arithmetic, pair by pair, or ``pair_iou``'s), as :class:`Pairs`. Pairs of two classes never match
    (Ultralytics zeroes their IoU) and neither do IoUs below every threshold."""
    det, label = pair_index(gt, dt, g_order, kept)
    if pair_iou is None:
        dtype = np.float32 if float32 else np.float64  # (the tables cast once, then the pairs' rows taken)
        iou = paired_box_iou(
            np.asarray(gt.xyxy, dtype=dtype)[label],
            np.asarray(dt.xyxy, dtype=dtype)[kept[det]],
            float32=float32,
        )
    else:
        iou = pair_iou(label, kept[det])
    low = (IOU_THRESHOLDS_32 if float32 else IOU_THRESHOLDS_64).min()
    return pairs_at_least(det, label, iou, low, dt.img[kept[det]])


def pair_index(
    gt: BoxTable, dt: BoxTable, g_order: np.ndarray, kept: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(detection, label) of every pair of one image and one class: detections by their position in ``kept``
    (ascending), and for each its labels in ``g_order`` order."""
    n_cls = int(max(gt.cls.max(initial=0), dt.cls.max(initial=0))) + 1
    g_key = gt.img[g_order] * n_cls + gt.cls[g_order]
    by_key = np.argsort(g_key, kind="stable")  # (within a key: label order)
    g_sorted = g_key[by_key]
    d_key = dt.img[kept] * n_cls + dt.cls[kept]
    lo = np.searchsorted(g_sorted, d_key)
    count = np.searchsorted(g_sorted, d_key, side="right") - lo
    det = np.repeat(np.arange(len(kept)), count)
    offset = np.arange(len(det)) - np.repeat(np.cumsum(count) - count, count)
    return det, g_order[by_key[np.repeat(lo, count) + offset]]


def paired_box_iou(gt_xyxy: np.ndarray, dt_xyxy: np.ndarray, *, float32: bool = True) -> np.ndarray:
    """:func:`box_iou` of the pairs (``gt_xyxy[p]``, ``dt_xyxy[p]``; boxes in the last axis, the others
    broadcast): the same operations element-wise."""
    dtype: Any = np.float32 if float32 else np.float64
    a, b = np.asarray(gt_xyxy, dtype=dtype), np.asarray(dt_xyxy, dtype=dtype)
    wh = np.maximum(np.minimum(a[..., 2:], b[..., 2:]) - np.maximum(a[..., :2], b[..., :2]), dtype(0))
    inter = wh[..., 0] * wh[..., 1]
    wa, wb = a[..., 2:] - a[..., :2], b[..., 2:] - b[..., :2]
    return inter / (wa[..., 0] * wa[..., 1] + wb[..., 0] * wb[..., 1] - inter + dtype(_EPS_IOU))


def pairs_at_least(
    det: np.ndarray, label: np.ndarray, iou: np.ndarray, low: float, image: np.ndarray
) -> Pairs:
    """The pairs with ``iou ≥ low`` as :class:`Pairs` (their ties marked)."""
    keep = iou >= low
    det, label, iou, image = det[keep], label[keep], iou[keep], image[keep]
    tied = np.zeros(len(det), dtype=bool)
    if len(det):
        starts = np.flatnonzero(np.diff(det, prepend=-1))
        sizes = np.diff(np.append(starts, len(det)))
        at_best = iou == np.repeat(np.maximum.reduceat(iou, starts), sizes)
        tied = np.repeat(np.add.reduceat(at_best.astype(np.int64), starts) > 1, sizes)
    return Pairs(det, label, iou, tied, image)


def match_pairs(pairs: Pairs, n_dt: int, n_gt: int, thresholds: np.ndarray, matcher: Matcher) -> np.ndarray:
    """Correct-at-threshold matrix (detections × thresholds) of every image's pairs under an Ultralytics
    matcher; for ``unique``, the rows of detections in an image with ``pairs.tied`` are left to
    :func:`match_image` (the caller's)."""
    if matcher == "greedy":
        return _greedy_matches(pairs, n_dt, n_gt, thresholds)
    return _unique_matches(pairs, n_dt, thresholds)


def _first_best(pairs: Pairs, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per detection with pairs (ascending): its index, the largest of ``values`` (pairs × columns) over its
    pairs and the first pair holding it (lowest label index on ties, as ``argmax``)."""
    starts = np.flatnonzero(np.diff(pairs.det, prepend=-1))
    sizes = np.diff(np.append(starts, len(pairs.det)))
    best = np.maximum.reduceat(values, starts, axis=0)
    position = np.where(
        values == np.repeat(best, sizes, axis=0), np.arange(len(values))[:, None], len(values)
    )
    return pairs.det[starts], best, np.minimum.reduceat(position, starts, axis=0)


def _unique_matches(pairs: Pairs, n_dt: int, thresholds: np.ndarray) -> np.ndarray:
    """The ``unique`` matcher of every image at once: each detection keeps its best label (a tie between
    labels is left to the caller: ``pairs.tied``), and each label its first (highest-ranked) detection among
    those keeping it, threshold by threshold."""
    correct = np.zeros((n_dt, len(thresholds)), dtype=bool)
    if not len(pairs.det):
        return correct
    dets, best, first = _first_best(pairs, pairs.iou[:, None])
    label = pairs.label[first[:, 0]]
    candidate = best[:, 0][:, None] >= thresholds  # (dets × thresholds)
    order = np.lexsort((dets, label))  # by label, then rank
    label, dets, candidate = label[order], dets[order], candidate[order]
    group = np.flatnonzero(np.diff(label, prepend=-1))
    counts = np.cumsum(candidate, axis=0)
    before: np.ndarray = np.repeat(
        counts[group] - candidate[group], np.diff(np.append(group, len(label))), axis=0
    )
    correct[dets] = candidate & (counts - before == 1)
    return correct


def _greedy_matches(pairs: Pairs, n_dt: int, n_gt: int, thresholds: np.ndarray) -> np.ndarray:
    """The ``greedy`` matcher (8.4.176) of every image at once: step ``s`` takes each image's ``s``-th
    detection (in rank order) among those with a pair, which claims per threshold its unclaimed label of
    highest IoU (lowest label index on ties) if that IoU reaches the threshold."""
    correct = np.zeros((n_dt, len(thresholds)), dtype=bool)
    if not len(pairs.det):
        return correct
    claimed = np.zeros((n_gt, len(thresholds)), dtype=bool)
    starts = np.flatnonzero(np.diff(pairs.det, prepend=-1))
    sizes = np.diff(np.append(starts, len(pairs.det)))
    image = pairs.image[starts]  # (ascending: detections are in image-then-rank order)
    step = np.arange(len(starts)) - np.searchsorted(image, image)
    # the pairs grouped by step, in their order within a step (a stable sort): step s is one slice
    pair_step = np.repeat(step, sizes)
    by_step = np.argsort(pair_step, kind="stable")
    bounds = np.searchsorted(pair_step[by_step], np.arange(int(step.max()) + 2))
    for s in range(int(step.max()) + 1):
        seg = by_step[bounds[s] : bounds[s + 1]]
        label = pairs.label[seg]
        sub = Pairs(pairs.det[seg], label, pairs.iou[seg], pairs.tied[:0], pairs.image[:0])
        free = np.where(claimed[label], 0, sub.iou[:, None])
        d, best, first = _first_best(sub, free)
        ok = best >= thresholds
        correct[d] = ok
        cols = np.broadcast_to(np.arange(len(thresholds)), ok.shape)
        claimed[label[first][ok], cols[ok]] = True
    return correct


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
    return with_counts(ap_per_class(m.tp, m.conf, m.pred_cls, m.target_cls, rules.sentinel), m, gt)


def with_counts(out: UltralyticsMetrics, m: MatchedSet, gt: BoxTable) -> UltralyticsMetrics:
    """``out`` (the metrics of the matches ``m`` of the labels ``gt``) with the counts ``yolo val`` prints:
    ``extra["capped"]`` (detections past ``max_det``) and ``extra["images_per_class"]``."""
    out.extra["capped"] = m.capped
    out.extra["images_per_class"] = np.array(
        [len(distinct(gt.img[gt.cls == c])) for c in out.classes], dtype=np.int64
    )
    return out


def with_rules(profile: str | UltralyticsRules, **changes: Any) -> UltralyticsRules:
    """A copy of a profile's rules with some changed (``explain`` walks from one era to another this way)."""
    return replace(get_rules(profile), **changes)


# ------------------------------------------------------------------------------------------------------ pose
#: Ultralytics' scale of a label's box area in OKS (xtcocotools' CrowdPose constant).
POSE_AREA_FACTOR = 0.53
#: Pairs whose OKS is computed at once (their keypoints gathered: memory stays bounded on large splits).
_OKS_BLOCK = 1 << 15


def pose_sigmas(kpt_shape: tuple[int, int], oks: OksForm, dataset_sigmas: Any = None) -> np.ndarray:
    """The float32 sigmas ``PoseValidator`` uses: the data.yaml's ``kpt_oks_sigmas`` where given (read by recent
    8.4 versions), else COCO's 17 for ``kpt_shape == [17, 3]`` (only that shape: ``[17, 2]`` gets the uniform
    ones), else ``1 / K`` for each of the K keypoints. COCO's are ``OKS_SIGMA``: 8.0 divides the float64 tenths
    by 10 (then torch rounds them to float32), 8.4 divides float32 tenths by 10 in float32."""
    n_kpt = int(kpt_shape[0])
    if dataset_sigmas is not None:
        return np.asarray(dataset_sigmas, dtype=np.float32).reshape(-1)
    if tuple(kpt_shape) == (17, 3):
        if oks == "divided":
            return (np.array(COCO_KPT_OKS_TENTHS) / 10.0).astype(np.float32)
        return np.array(COCO_KPT_OKS_TENTHS, dtype=np.float32) / np.float32(10.0)
    return (np.ones(n_kpt) / n_kpt).astype(np.float32)


def pose_area(gt_xyxy: np.ndarray) -> np.ndarray:
    """``xyxy2xywh(bboxes)[:, 2:].prod(1) * 0.53`` in float32: each label's OKS scale."""
    b = gt_xyxy.astype(np.float32).reshape(-1, 4)
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) * np.float32(POSE_AREA_FACTOR)


def kpt_iou(
    gt_kpts: np.ndarray, dt_kpts: np.ndarray, area: np.ndarray, sigma: np.ndarray, oks: OksForm
) -> np.ndarray:
    """Ultralytics' ``kpt_iou`` of the pairs (``gt_kpts[p]`` with scale ``area[p]``, ``dt_kpts[p]``) in
    float32: ``Σ_k exp(−e_k) · [v_k ≠ 0] / (Σ_k [v_k ≠ 0] + 1e-7)`` over the label's keypoints, ``e_k = d_k² /
    (2σ_k)² / (area + 1e-7) / 2`` (grouped as ``oks`` says): each value what Ultralytics' labels × detections
    matrix holds for the pair.

    A copy of COCO's OKS (:class:`deteval.detection.coco_iou.KeypointOks`, float64, the mean over the visible
    keypoints, a box distance where none is) kept for Ultralytics' arithmetic: float32, the ``1e-7`` in the
    area and in the count (a label without visible keypoints has OKS 0), its scale ``0.53 · box area``. Each
    float32 operation is torch's; the sum over keypoints and ``exp`` are numpy's, which may differ from
    torch's in the last bit (this matters only for an OKS within a float32 ulp of a threshold).
    """
    g = gt_kpts.astype(np.float32)
    d = dt_kpts.astype(np.float32)
    dist = (g[..., 0] - d[..., 0]) ** 2 + (g[..., 1] - d[..., 1]) ** 2
    mask = g[..., 2] != 0
    eps = np.float32(_EPS_IOU)
    two_sigma_sq = (2 * sigma.astype(np.float32)) ** 2
    scale = area.astype(np.float32)[:, None] + eps
    if oks == "divided":
        e = dist / two_sigma_sq / scale / np.float32(2)
    else:
        e = dist / (two_sigma_sq * scale * np.float32(2))
    total = (np.exp(-e) * mask).sum(-1, dtype=np.float32)
    return total / (mask.sum(-1).astype(np.float32) + eps)


def evaluate_ultralytics_pose(
    gt: BoxTable,
    gt_kpts: np.ndarray,
    dt: BoxTable,
    dt_kpts: np.ndarray,
    n_images: int,
    profile: str | UltralyticsRules = "ultralytics",
    sigma: np.ndarray | None = None,
) -> tuple[UltralyticsMetrics, UltralyticsMetrics]:
    """``yolo val``'s box and pose metrics (``Box(P R mAP50 mAP50-95) Pose(P R mAP50 mAP50-95)``) of a pose
    model's detections: the same ranking and matcher, once on box IoU, once on :func:`kpt_iou` (labels
    ``gt_kpts`` N × K × 3 with visibility, detections ``dt_kpts`` M × K × 2 or 3, pixels; ``sigma``: K float32
    sigmas, default :func:`pose_sigmas` of a ``[K, 3]`` skeleton)."""
    rules = get_rules(profile)
    if sigma is None:
        sigma = pose_sigmas((gt_kpts.shape[1], 3), rules.oks)
    area = pose_area(gt.xyxy)

    def pair_oks(gi: np.ndarray, di: np.ndarray) -> np.ndarray:
        out = np.empty(len(gi), dtype=np.float32)
        for lo in range(0, len(gi), _OKS_BLOCK):  # (a block of pairs at a time: K keypoints each)
            b = slice(lo, lo + _OKS_BLOCK)
            out[b] = kpt_iou(gt_kpts[gi[b]], dt_kpts[di[b]], area[gi[b]], sigma, rules.oks)
        return out

    m = match_split(gt, dt, n_images, rules)
    tp_pose = match_split(gt, dt, n_images, rules, pair_oks).tp  # (the same detections kept, in one order)
    box = ap_per_class(m.tp, m.conf, m.pred_cls, m.target_cls, rules.sentinel)
    pose = ap_per_class(tp_pose, m.conf, m.pred_cls, m.target_cls, rules.sentinel)
    for out in (box, pose):
        out.extra["capped"] = m.capped
    return box, pose
