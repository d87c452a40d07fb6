"""Ultralytics' detection confusion matrix (``ultralytics.utils.metrics.ConfusionMatrix``), era by era, as
``yolo val`` fills it and draws it (``confusion_matrix.png``, ``confusion_matrix_normalized.png``).

The matrix is ``(nc + 1) × (nc + 1)``, indexed ``[predicted, true]``, the background last (its row: labels
no detection claimed, "FN"; its column: detections that claimed no label, "FP"). Image by image, of the
detections ``yolo val``'s NMS keeps (``conf > --conf``, at most 300, in descending confidence):

1. those with ``conf > c`` take part, ``c`` the era's confidence (below);
2. the class-agnostic float32 IoU (labels × detections, :func:`~deteval.detection.ultralytics.box_iou`)
   pairs them where it is ``> 0.45`` (strictly; both in float32);
3. matching: ``unique`` (up to 8.4.183): the pairs sorted by IoU descending (numpy's default sort), the first
   of each detection kept (``np.unique``), sorted again, the first of each label kept; ``greedy`` (8.4.184
   and later): the detections with a pair, by descending confidence (stable), each claiming the label of
   highest IoU (``argmax``) if above 0.45, whose row is then zeroed;
4. each label adds 1 at ``[class of its detection, its class]`` if matched, else at ``[background, its
   class]``; each detection left adds 1 at ``[its class, background]``.

The eras (each checked against the version's own code, tests/test_yolo_confusion_ultralytics.py):

============ ================= ==================================================================
rule         versions          differences
============ ================= ==================================================================
``8.0.239``  8.0 … 8.3.29      ``c = 0.25`` when ``--conf`` is unset or 0.001, else ``--conf``;
                               images without labels are not counted at all (the validator calls
                               ``process_batch`` only for images with labels); a detection left is
                               counted only in an image where some pair is above 0.45
``8.3.30``   8.3.30 … 8.3.54   ``c`` as above; every image counted; a detection left only in an
                               image where some pair is above 0.45 (or without labels)
``8.3.55``   8.3.55 … 8.4.102  ``c`` as above; every detection left counted
``8.4.103``  8.4.103 … 8.4.183 ``c = --conf`` (0.001 when unset)
``8.4.184``  8.4.184 and later ``c = --conf``; the ``greedy`` matching
============ ================= ==================================================================

``confusion_matrix_normalized.png`` divides each column by its sum plus 1e-9 (each true class sums to 1);
both figures leave cells below 0.005 blank and, from 100 classes on, show every other class or fewer
(:func:`plot_array`).

A deliberate copy of a confusion-matrix rule whose home is ``analysis/confusion.py`` (deteval's own, on the
protocol's matching): this one reproduces Ultralytics' arithmetic, float32 IoU and numpy sorts included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from deteval.detection.ultralytics import box_iou
from deteval.errors import ConfigError
from deteval.tables.boxes import BoxTable

__all__ = [
    "CONFUSION_RULES",
    "PROFILE_CONFUSION",
    "ConfusionRule",
    "confusion_conf",
    "confusion_rule",
    "plot_array",
    "plot_keep",
    "ultralytics_confusion_matrix",
]

#: ``ConfusionMatrix.process_batch``'s IoU threshold, as ``DetectionValidator`` leaves it
IOU_THRESHOLD = 0.45
#: The confidence older eras put in place of the validator's default ``--conf``
DEFAULT_CONF = 0.25
#: ``yolo val``'s ``--conf`` when unset (``BaseValidator``)
VAL_CONF = 0.001
MAX_DET = 300


@dataclass(frozen=True)
class ConfusionRule:
    """How one Ultralytics era fills the confusion matrix (module docstring)."""

    name: str
    versions: str
    matcher: Literal["unique", "greedy"]
    #: ``--conf`` unset (or 0.001) becomes 0.25
    default_conf: bool
    #: only images with labels are counted (the validator's call)
    labelled_only: bool = False
    #: in an image with labels, the detections left are counted only if some pair is above the IoU threshold
    left_needs_pair: bool = False


CONFUSION_RULES: dict[str, ConfusionRule] = {
    r.name: r
    for r in (
        ConfusionRule("8.0.239", "8.0 to 8.3.29", "unique", True, labelled_only=True, left_needs_pair=True),
        ConfusionRule("8.3.30", "8.3.30 to 8.3.54", "unique", default_conf=True, left_needs_pair=True),
        ConfusionRule("8.3.55", "8.3.55 to 8.4.102", "unique", default_conf=True),
        ConfusionRule("8.4.103", "8.4.103 to 8.4.183", "unique", default_conf=False),
        ConfusionRule("8.4.184", "8.4.184 and later", "greedy", default_conf=False),
    )
}
#: The rule of each Ultralytics profile: that of the version it is named for (``ultralytics``: the newest)
PROFILE_CONFUSION = {
    "ultralytics-8.0": "8.0.239",
    "ultralytics-8.4.37": "8.3.55",
    "ultralytics-8.4.176": "8.4.103",
    "ultralytics": "8.4.184",
}


def confusion_rule(profile: str) -> ConfusionRule:
    """The confusion-matrix rule of an Ultralytics profile name, or of a rule name (``8.4.184``)."""
    name = PROFILE_CONFUSION.get(profile, profile)
    if name not in CONFUSION_RULES:
        raise ConfigError(
            f"no Ultralytics confusion matrix for {profile!r}; choose one of {', '.join(PROFILE_CONFUSION)}"
        )
    return CONFUSION_RULES[name]


def confusion_conf(rule: ConfusionRule, val_conf: float | None) -> float:
    """The confidence ``c`` a detection must exceed to enter the matrix, given ``yolo val --conf``
    (None: unset, the validator's 0.001): 0.25 for an unset or 0.001 ``--conf`` in the eras that substitute
    it, else ``--conf``."""
    conf = VAL_CONF if val_conf is None else float(val_conf)
    return DEFAULT_CONF if rule.default_conf and conf == VAL_CONF else conf


def ultralytics_confusion_matrix(
    gt: BoxTable,
    dt: BoxTable,
    n_classes: int,
    rule: ConfusionRule | str,
    *,
    val_conf: float | None = None,
    conf: float | None = None,
    iou: float = IOU_THRESHOLD,
) -> np.ndarray:
    """Ultralytics' confusion matrix (``[predicted, true]``, background last, float64 counts) of detections
    ``dt`` against labels ``gt`` (pixel xyxy, classes ``0 … n_classes − 1``) under an era's rule.

    ``val_conf``: ``yolo val --conf`` (None: unset): detections at or below it are dropped as its NMS drops
    them, and it sets the matrix's confidence (:func:`confusion_conf`) unless ``conf`` gives that directly.
    ``iou``: the matching threshold (``process_batch``'s ``iou_thres``).
    """
    rule = confusion_rule(rule) if isinstance(rule, str) else rule
    c = np.float32(confusion_conf(rule, val_conf) if conf is None else conf)
    floor = np.float32(VAL_CONF if val_conf is None else val_conf)
    thr = np.float32(iou)
    nc = n_classes
    m = np.zeros((nc + 1, nc + 1))
    conf32 = dt.conf.astype(np.float32)
    # NMS's output: conf > --conf, the 300 highest per image, descending confidence (file order on ties)
    d = np.flatnonzero(conf32 > floor)
    d = d[np.lexsort((-dt.conf[d], dt.img[d]))]
    d_img = dt.img[d]
    rank = np.arange(len(d)) - np.searchsorted(d_img, d_img)
    d = d[rank < MAX_DET]
    d = d[conf32[d] > c]  # the matrix's own cut
    d_img = dt.img[d]
    g = np.argsort(gt.img, kind="stable")
    g_img = gt.img[g]
    labelled = np.isin(d_img, g_img)
    if not rule.labelled_only:  # detections in images without labels: background
        np.add.at(m[:, nc], dt.cls[d[~labelled]], 1)
    with_dets = np.isin(g_img, d_img)
    np.add.at(m[nc], gt.cls[g[~with_dets]], 1)  # labels of images without detections: background
    both = np.unique(d_img[labelled])
    g_lo, g_hi = np.searchsorted(g_img, both), np.searchsorted(g_img, both, side="right")
    d_lo, d_hi = np.searchsorted(d_img, both), np.searchsorted(d_img, both, side="right")
    for a, b, p, q in zip(g_lo.tolist(), g_hi.tolist(), d_lo.tolist(), d_hi.tolist()):
        gi, di = g[a:b], d[p:q]
        gc, dc = gt.cls[gi], dt.cls[di]
        ious = box_iou(gt.xyxy[gi], dt.xyxy[di])
        if rule.matcher == "greedy":
            match = _greedy(ious, conf32[di], thr)
        else:
            match = _unique(ious, thr)
        hit = match >= 0
        np.add.at(m, (dc[match[hit]], gc[hit]), 1)
        np.add.at(m[nc], gc[~hit], 1)
        if rule.left_needs_pair and not hit.any():
            continue  # (up to 8.3.54 the detections left count only after some pair above the threshold)
        left = np.ones(len(di), dtype=bool)
        left[match[hit]] = False
        np.add.at(m[:, nc], dc[left], 1)
    return m


def _unique(iou: np.ndarray, thr: np.float32) -> np.ndarray:
    """Each label's detection (−1: none) by ``process_batch``'s ``np.unique`` matching, its arrays as it
    builds them (float32 rows ``[label, detection, IoU]``, numpy's default sort), so that IoU ties resolve
    as there."""
    gi, di = np.nonzero(iou > thr)
    match = np.full(iou.shape[0], -1)
    if not len(gi):
        return match
    matches = np.concatenate([np.stack([gi, di], 1).astype(np.float32), iou[gi, di][:, None]], 1)
    if len(gi) > 1:
        matches = matches[matches[:, 2].argsort()[::-1]]
        matches = matches[np.unique(matches[:, 1], return_index=True)[1]]
        matches = matches[matches[:, 2].argsort()[::-1]]
        matches = matches[np.unique(matches[:, 0], return_index=True)[1]]
    m0, m1 = matches[:, 0].astype(int), matches[:, 1].astype(int)
    match[m0] = m1
    return match


def _greedy(iou: np.ndarray, conf: np.ndarray, thr: np.float32) -> np.ndarray:
    """Each label's detection (−1: none) by 8.4.184's walk: the detections with a pair above ``thr``, by
    descending confidence (stable), each taking its label of highest IoU (first on ties) if above ``thr``."""
    iou = iou.copy()
    match = np.full(iou.shape[0], -1)
    candidates = np.flatnonzero((iou > thr).any(0))
    for j in candidates[np.argsort(-conf[candidates], kind="stable")].tolist():
        i = int(iou[:, j].argmax())
        if iou[i, j] > thr:
            match[i] = j
            iou[i] = 0
    return match


def plot_array(matrix: np.ndarray, normalize: bool) -> np.ndarray:
    """What ``ConfusionMatrix.plot`` draws: the matrix, with ``normalize`` each column divided by its sum
    plus 1e-9, and every cell below 0.005 NaN (left blank); then the rows and columns :func:`plot_keep`
    keeps."""
    array = matrix / ((matrix.sum(0).reshape(1, -1) + 1e-9) if normalize else 1)
    array[array < 0.005] = np.nan
    keep = plot_keep(matrix.shape[0] - 1)
    return array[np.ix_(keep, keep)]


def plot_keep(n_classes: int) -> np.ndarray:
    """The rows (and columns) of the matrix ``ConfusionMatrix.plot`` draws: every one below 100 classes, from
    100 on every ``max(2, n_classes // 60)``-th class and the background (8.3.x and later; 8.0.239 drew
    every class)."""
    if n_classes < 100:
        return np.arange(n_classes + 1)
    return np.r_[0 : n_classes : max(2, n_classes // 60), n_classes]
