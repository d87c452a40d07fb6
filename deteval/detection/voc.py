"""Pascal VOC detection evaluation, reproducing the official devkit (VOCevaldet.m, VOCap.m).

Data in, as columnar tables (arrays of length N, never lists of dicts):

* :class:`VOCGroundTruth`: image index, class index, box ``x1, y1, x2, y2`` (the file's pixel convention,
  1-based inclusive in VOC), ``difficult``; plus the image and class names the indices refer to.
* :class:`VOCDetections`: image index, class index, box, score. Row order is the tie order: for equal
  scores the devkit's stable sort keeps file order, so keep rows in file order.

The loaders in :mod:`deteval.io.voc` build these tables; a training loop can build them directly
(``VOCGroundTruth.from_arrays`` / ``VOCDetections.from_arrays``) and call :func:`evaluate_voc`.

Matching rules (``profile="voc_devkit"``, the default):

1. Detections of a class are sorted by descending score with a *stable* sort (ties keep file order). The
   sort is global over the class (all images); since a ground-truth box can only be taken by a detection of
   its own image, matching each image's detections in that global order is equivalent.
2. Each detection takes the ground truth of maximum IoU (+1 pixel-inclusive) among *all* ground-truth
   boxes of its class in its image, taken or not, difficult or not; the first one wins an exact tie.
3. IoU >= threshold: a difficult box makes the detection *ignored* (-1, neither TP nor FP); otherwise TP (1)
   if that box is not taken yet, else FP (0, duplicate). Below the threshold (or no overlap at all): FP.
4. npos = number of non-difficult ground-truth boxes of the class. Recall = tp/npos, precision = tp/(tp+fp)
   over the non-ignored detections (the devkit's ignored rows add 0 to both sums, so removing them is
   exactly equivalent; its NaN precision at a leading ignored row is skipped by ``max``).
5. VOC07 AP: sum over the recall levels t of max{precision : recall >= t} / 11 (0 if no rank reaches t).
   The devkit loops ``for t=0:0.1:1``; a MATLAB (and Octave) for-loop variable is ``a + k*d``, not an
   element of a materialised ``0:0.1:1`` array, so t = k*0.1 and the levels 0.3, 0.6, 0.7 are
   0.30000000000000004, 0.6000000000000001, 0.7000000000000001, one ulp above the decimals. A recall of
   exactly 3/10, 6/10 or 7/10 (e.g. 288 TP of 480 objects) therefore does *not* reach that level;
   :data:`VOC_DEVKIT_LEVELS` holds these eleven doubles (equal to ``np.arange(0, 1.1, 0.1)``).
   VOC2010+ AP (``metric="voc2010"``): VOCap's all-point area under the monotone envelope.

Deliberate differences from the devkit, where it has no sensible answer:

* a class whose every detection hits a difficult box (npos > 0) gets AP 0; the devkit's VOC07 loop takes
  ``max`` over an all-NaN precision and returns NaN;
* a class without non-difficult ground truth (npos = 0) is reported with ``ap = None`` and left out of the
  mAP; the devkit divides by npos = 0;
* inverted boxes (x2 < x1 or y2 < y1) are rejected at input; the devkit accepts them and never matches them.

Because the chosen ground truth (rule 2) does not depend on what is already taken, rule 3 reduces to: a
detection is TP iff it is the highest-ranked detection whose best box is that (non-difficult) box. This
makes the whole matcher vectorised: one IoU per (detection, box of its class in its image) pair, a
segmented arg-max, and a first-occurrence pass.

``profile="py_faster_rcnn"`` reproduces py-faster-rcnn's ``voc_eval.py``, used by many papers: IoU must be
*strictly* greater than the threshold, the sort is numpy's default unstable ``np.argsort(-confidence)``
(platform and numpy-version dependent among ties, exactly as in that port), the VOC07 levels are
``np.arange(0, 1.1, 0.1)`` (the same eleven doubles as the devkit's loop) and precision is ``tp / max(tp + fp, eps)`` (equal
to tp/(tp+fp) once ignored rows are removed). Its IoU also uses the +1 convention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from deteval.core import PY_FASTER_RCNN_LEVELS, VOC_DEVKIT_LEVELS
from deteval.core.lists import ranked_lists, sort_lists
from deteval.core.ranking import TiePolicy
from deteval.detection.boxes import as_boxes, box_iou, paired_iou
from deteval.errors import ConfigError, ValidationError
from deteval.io.arrays import EXACT_BOUND, numeric_array, rows_beyond_exact
from deteval.results import EvalResult, PRCurve

Metric = Literal["voc07", "voc2010"]
Profile = Literal["voc_devkit", "py_faster_rcnn"]
METRICS: tuple[str, ...] = ("voc07", "voc2010")
PROFILES: tuple[str, ...] = ("voc_devkit", "py_faster_rcnn")

#: The 20 Pascal VOC classes in the devkit's order (alphabetical).
VOC_CLASSES: tuple[str, ...] = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train",
    "tvmonitor",
)  # fmt: skip


@dataclass(frozen=True)
class VOCParams:
    """The protocol as data: what a preset in ``configs/`` fills in."""

    iou_threshold: float = 0.5
    metric: str = "voc2010"
    profile: str = "voc_devkit"
    plus_one: bool = True
    recall_levels: tuple[float, ...] | None = None  # None: the profile's VOC07 levels

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ConfigError(f"unknown VOC metric {self.metric!r}; choose one of {', '.join(METRICS)}")
        if self.profile not in PROFILES:
            raise ConfigError(f"unknown VOC profile {self.profile!r}; choose one of {', '.join(PROFILES)}")
        t = self.iou_threshold
        if not isinstance(t, (int, float)) or not (0.0 <= float(t) <= 1.0):
            raise ConfigError(f"IoU threshold must be a number in [0, 1], got {t!r}")

    @property
    def strict(self) -> bool:
        """py-faster-rcnn accepts a match only for IoU > threshold; the devkit for IoU >= threshold."""
        return self.profile == "py_faster_rcnn"

    @property
    def ties(self) -> TiePolicy:
        return "quicksort" if self.profile == "py_faster_rcnn" else "stable"

    @property
    def levels(self) -> np.ndarray:
        if self.recall_levels is not None:
            return np.asarray(self.recall_levels, dtype=np.float64)
        return PY_FASTER_RCNN_LEVELS if self.profile == "py_faster_rcnn" else VOC_DEVKIT_LEVELS


def _numbers(values: ArrayLike, what: str, *, bools: bool = False) -> np.ndarray:
    """A float64 array; strings (and booleans unless ``bools``) are refused, not read as numbers."""
    try:
        return numeric_array(values, np.float64, bools=bools)
    except TypeError as exc:
        raise ValidationError(f"{what} {exc}") from None


def _difficult(values: ArrayLike) -> np.ndarray:
    """Difficult flags as booleans: 0/1 or true/false only (``astype(bool)`` would read 2, 0.5 and the string
    "0" as difficult)."""
    flags = _numbers(values, "difficult", bools=True).reshape(-1)
    if not np.isin(flags, (0.0, 1.0)).all():
        i = int(np.flatnonzero(~np.isin(flags, (0.0, 1.0)))[0])
        raise ValidationError(f"difficult must be 0/1 or true/false, got {flags[i].item():g}", record=i)
    return flags != 0


def _int_array(values: ArrayLike, n: int, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf":  # (a string or boolean index would be read as a number)
        _numbers(values, what)
        arr = arr.astype(np.float64)
    if arr.size == 0:
        arr = arr.reshape(0)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValidationError(f"{what} must be 1-D of length {n}, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        as_int = arr.astype(np.int64)
        if not np.array_equal(as_int, arr):
            raise ValidationError(f"{what} must hold integer indices")
        arr = as_int
    return arr.astype(np.int64, copy=False)


#: The largest coordinate magnitude accepted (2**53): beyond it a float64 no longer holds whole pixels (the
#: devkit's +1 is lost) and products of coordinates could overflow, turning IoUs into inf/inf = NaN.
MAX_COORD: float = float(EXACT_BOUND)


def _given_row(given: ArrayLike, i: int) -> list[Any]:
    """Row ``i`` of the boxes as the caller gave them (an integer beyond 2**53 not yet rounded)."""
    if isinstance(given, (list, tuple)):
        return list(given[i])
    return list(np.asarray(given)[i].tolist())


def _check_boxes(boxes: np.ndarray, what: str, given: ArrayLike) -> None:
    """Finite, within ±2**53 as given (``given``: the input ``boxes`` was read from), x2 >= x1, y2 >= y1."""
    bad = ~np.isfinite(boxes).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"{what} box {boxes[i].tolist()} has a non-finite coordinate", record=i)
    big = rows_beyond_exact(boxes, lambda i: _given_row(given, i))
    if big.size:
        i = int(big[0])
        raise ValidationError(f"{what} box {_given_row(given, i)} has a coordinate beyond ±2**53", record=i)
    inverted = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
    if inverted.any():
        i = int(np.flatnonzero(inverted)[0])
        raise ValidationError(f"{what} box {boxes[i].tolist()} has x2 < x1 or y2 < y1", record=i)


def _check_index(idx: np.ndarray, n: int, what: str) -> None:
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"{what} index {int(idx[i])} is outside 0..{n - 1}", record=i)


@dataclass(frozen=True)
class VOCGroundTruth:
    """Ground-truth boxes as columns. ``image[i]`` indexes ``images``, ``label[i]`` indexes ``classes``.

    ``meta`` holds optional per-object columns (``truncated``, ``occluded``: int8 with -1 for missing;
    ``pose``: str array) and ``image_meta`` per-image ones (``width``, ``height``, ``depth``, ``filename``,
    ``source``): kept for reports, not used by the metric. ``skipped`` lists the bad objects the loader
    left out under ``on_error="skip"`` (``"<file>: object N (name): reason"``).
    """

    images: tuple[str, ...]
    classes: tuple[str, ...]
    image: np.ndarray
    label: np.ndarray
    boxes: np.ndarray
    difficult: np.ndarray
    meta: dict[str, np.ndarray] = field(default_factory=dict)
    image_meta: dict[str, np.ndarray] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.image.shape[0])

    @classmethod
    def from_arrays(
        cls,
        image: ArrayLike,
        label: ArrayLike,
        boxes: ArrayLike,
        difficult: ArrayLike | None = None,
        *,
        images: Sequence[str] | int | None = None,
        classes: Sequence[str] | int | None = None,
    ) -> VOCGroundTruth:
        """Validate and wrap columns. ``images`` / ``classes`` are the names (or counts, named "0", "1",
        ...); by default, as many as the largest index + 1. Boxes are ``xyxy`` with x2 >= x1, y2 >= y1."""
        b, img, lab, img_names, cls_names = _indexed_boxes(
            image, label, boxes, images, classes, "ground-truth"
        )
        n = b.shape[0]
        diff = np.zeros(n, dtype=bool) if difficult is None else _difficult(difficult)
        if diff.shape[0] != n:
            raise ValidationError(f"difficult must have length {n}, got {diff.shape[0]}")
        return cls(img_names, cls_names, img, lab, b, diff)


@dataclass(frozen=True)
class VOCDetections:
    """Detections as columns, in file order (the tie order). ``image`` indexes ``images``, ``label``
    indexes ``classes``; ``warnings`` carries what the loader tolerated (e.g. unknown image ids dropped),
    ``skipped`` the bad records left out under ``on_error="skip"`` (``"<file>: line N: reason"``) and
    ``dropped_unknown_images`` how many detections named an image outside the image set."""

    images: tuple[str, ...]
    classes: tuple[str, ...]
    image: np.ndarray
    label: np.ndarray
    boxes: np.ndarray
    scores: np.ndarray
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    dropped_unknown_images: int = 0

    def __len__(self) -> int:
        return int(self.image.shape[0])

    @classmethod
    def from_arrays(
        cls,
        image: ArrayLike,
        label: ArrayLike,
        boxes: ArrayLike,
        scores: ArrayLike,
        *,
        images: Sequence[str] | int | None = None,
        classes: Sequence[str] | int | None = None,
    ) -> VOCDetections:
        """Validate and wrap columns (finite scores and boxes, x2 >= x1, y2 >= y1, indices in range)."""
        b, img, lab, img_names, cls_names = _indexed_boxes(image, label, boxes, images, classes, "detection")
        n = b.shape[0]
        sc = _numbers(scores, "scores").reshape(-1)
        if sc.shape[0] != n:
            raise ValidationError(f"scores must have length {n}, got {sc.shape[0]}")
        bad = ~np.isfinite(sc)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValidationError(f"detection score {sc[i]!r} is not finite", record=i)
        return cls(img_names, cls_names, img, lab, b, sc)


def _indexed_boxes(
    image: ArrayLike,
    label: ArrayLike,
    boxes: ArrayLike,
    images: Sequence[str] | int | None,
    classes: Sequence[str] | int | None,
    what: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...], tuple[str, ...]]:
    """The validation both tables share: N×4 boxes, integer image and label columns in range of their
    names, finite boxes with x2 >= x1 and y2 >= y1."""
    b = as_boxes(boxes, f"{what} boxes")
    n = b.shape[0]
    img = _int_array(image, n, f"{what} image")
    lab = _int_array(label, n, f"{what} label")
    img_names = _names(images, img)
    cls_names = _names(classes, lab)
    _check_index(img, len(img_names), f"{what} image")
    _check_index(lab, len(cls_names), f"{what} label")
    _check_boxes(b, what, boxes)
    return b, img, lab, img_names, cls_names


def _names(names: Sequence[str] | int | None, idx: np.ndarray) -> tuple[str, ...]:
    if names is None:
        names = int(idx.max()) + 1 if idx.size else 0
    if isinstance(names, (int, np.integer)):
        return tuple(str(i) for i in range(int(names)))
    out = tuple(str(s) for s in names)
    if len(set(out)) != len(out):
        raise ValidationError("names must be unique")
    return out


# --------------------------------------------------------------------------------------------------------
# The matcher


def rank_positions(scores: np.ndarray, label: np.ndarray, ties: TiePolicy) -> np.ndarray:
    """Position of every detection in its class's ranking (0 = highest score), from the core's sort."""
    pos = np.empty(scores.shape[0], dtype=np.int64)
    order = sort_lists(label, scores, ties=ties)
    start = np.searchsorted(label[order], label[order], side="left")
    pos[order] = np.arange(order.shape[0]) - start
    return pos


#: Upper bound on the (detection, box) pairs whose IoU is computed at once: about 200 bytes each, so a few
#: hundred MB however crowded one image is (the pairs of 10k detections × 10k boxes would need 13 GB at once).
PAIR_CHUNK = 1_000_000


def _best_boxes(
    db: np.ndarray,
    gb: np.ndarray,
    gorder: np.ndarray,
    rows: np.ndarray,
    start: np.ndarray,
    cnt: np.ndarray,
    plus_one: bool,
    pair_chunk: int,
) -> tuple[np.ndarray, np.ndarray]:
    """For each detection ``rows[k]``: the maximum IoU over its candidate boxes ``gorder[start[k]:start[k] +
    cnt[k]]`` and the first box reaching it (the devkit's ``ov > ovmax`` keeps the first), computed over
    chunks of whole detections holding at most ``pair_chunk`` pairs (one detection at least)."""
    best = np.empty(rows.shape[0], dtype=np.float64)
    jmax = np.empty(rows.shape[0], dtype=np.int64)
    # Detections facing many boxes: one IoU matrix per (class, image) block of rows (broadcast, no gathered
    # copies of the boxes); the others: flat lists of pairs over many small blocks at once.
    big = cnt >= _BROADCAST_BOXES
    kb = np.flatnonzero(big)
    kb = kb[np.argsort(start[kb], kind="stable")]
    bounds = np.flatnonzero(np.r_[True, start[kb][1:] != start[kb][:-1], True]).tolist() if kb.size else []
    for a, e in pairwise(bounds):
        k = kb[a:e]
        s, c = int(start[k[0]]), int(cnt[k[0]])
        cols = gorder[s : s + c]
        boxes = gb[cols]
        step = max(1, pair_chunk // c)
        for i in range(0, k.shape[0], step):
            kk = k[i : i + step]
            iou = box_iou(db[rows[kk]], boxes, plus_one=plus_one, no_overlap=-np.inf)
            j = np.argmax(iou, axis=1)  # the first maximum, as the devkit's `ov > ovmax`
            best[kk] = iou[np.arange(kk.shape[0]), j]
            jmax[kk] = cols[j]
    small = np.flatnonzero(~big)
    ends = np.cumsum(cnt[small])
    lo = 0
    while lo < small.shape[0]:
        base = int(ends[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(ends, base + pair_chunk, side="right")), lo + 1)
        k = small[lo:hi]
        ck = cnt[k]
        pair_det = np.repeat(rows[k], ck)
        first = np.cumsum(ck) - ck  # offset of each detection's first pair
        within = np.arange(pair_det.shape[0]) - np.repeat(first, ck)
        pair_gt = gorder[np.repeat(start[k], ck) + within]
        iou = paired_iou(db[pair_det], gb[pair_gt], plus_one=plus_one, no_overlap=-np.inf)
        b = np.maximum.reduceat(iou, first)
        is_best_idx = np.flatnonzero(iou == np.repeat(b, ck))
        seg = np.repeat(np.arange(hi - lo), ck)[is_best_idx]
        _, first_best = np.unique(seg, return_index=True)
        best[k] = b
        jmax[k] = pair_gt[is_best_idx[first_best]]
        lo = hi
    return best, jmax


def match_inputs(
    det_image: ArrayLike,
    det_boxes: ArrayLike,
    det_scores: ArrayLike,
    gt_image: ArrayLike,
    gt_boxes: ArrayLike,
    gt_difficult: ArrayLike | None,
    det_label: ArrayLike | None,
    gt_label: ArrayLike | None,
) -> tuple[np.ndarray, ...]:
    """:func:`match_voc`'s inputs validated (shapes, numbers, finite in-bound non-inverted boxes, finite
    scores, non-negative integer indices) as ``(det boxes, scores, image, label, gt boxes, image, label,
    difficult)`` arrays, or a :class:`ValidationError` naming the record: what every path to the matcher
    (one process or sharded, :mod:`deteval.run.voc`) checks alike."""
    db = as_boxes(det_boxes, "detection boxes")
    gb = as_boxes(gt_boxes, "ground-truth boxes")
    m, n = db.shape[0], gb.shape[0]
    di = _int_array(det_image, m, "detection image")
    gi = _int_array(gt_image, n, "ground-truth image")
    sc = _numbers(det_scores, "detection scores").reshape(-1)
    if sc.shape[0] != m:
        raise ValidationError(f"{sc.shape[0]} scores for {m} detection boxes")
    if not np.isfinite(sc).all():
        raise ValidationError(
            "detection scores must be finite", record=int(np.flatnonzero(~np.isfinite(sc))[0])
        )
    dl = np.zeros(m, dtype=np.int64) if det_label is None else _int_array(det_label, m, "detection label")
    gl = np.zeros(n, dtype=np.int64) if gt_label is None else _int_array(gt_label, n, "ground-truth label")
    diff = np.zeros(n, dtype=bool) if gt_difficult is None else _difficult(gt_difficult)
    if diff.shape[0] != n:
        raise ValidationError(f"{diff.shape[0]} difficult flags for {n} ground-truth boxes")
    # Non-finite or overflowing coordinates would give NaN IoUs, which no threshold test can handle.
    _check_boxes(db, "detection", det_boxes)
    _check_boxes(gb, "ground-truth", gt_boxes)

    for arr, what in ((di, "detection image"), (gi, "ground-truth image"), (dl, "detection label"),
                      (gl, "ground-truth label")):  # fmt: skip
        if arr.size and arr.min() < 0:
            raise ValidationError(f"{what} indices must be non-negative", record=int(np.argmin(arr)))
    return db, sc, di, dl, gb, gi, gl, diff


#: From this many candidate boxes on, a detection's IoUs are computed as rows of a broadcast matrix.
_BROADCAST_BOXES = 64


def match_voc(
    det_image: ArrayLike,
    det_boxes: ArrayLike,
    det_scores: ArrayLike,
    gt_image: ArrayLike,
    gt_boxes: ArrayLike,
    gt_difficult: ArrayLike | None = None,
    *,
    det_label: ArrayLike | None = None,
    gt_label: ArrayLike | None = None,
    iou_threshold: float = 0.5,
    plus_one: bool = True,
    strict: bool = False,
    ties: TiePolicy = "stable",
    pair_chunk: int | None = None,
    rank: ArrayLike | None = None,
) -> np.ndarray:
    """VOC greedy matching; returns the outcome of every detection, in input order: 1 TP, 0 FP, -1 ignored.

    Follows VOCevaldet.m (see the module docstring): each detection takes the box of maximum IoU among all
    boxes of its class in its image (first wins a tie); IoU >= threshold (> with ``strict``, as
    py-faster-rcnn) on a difficult box → ignored; on a box already taken by a higher-ranked detection of
    the class → FP; otherwise TP. Ranks come from descending score under ``ties`` ("stable": row order among
    equal scores; "quicksort": ``np.argsort(-scores)`` per class). Without labels everything is one class.
    ``pair_chunk``: at most this many (detection, box) IoUs at once (default :data:`PAIR_CHUNK`); the result
    does not depend on it. ``rank``: each detection's position in its class's ranking, when the caller
    ranked a larger table of which these detections are a shard (default: ranked here under ``ties``).

    >>> match_voc([0, 0, 0], [[1, 1, 10, 10]] * 3, [0.9, 0.8, 0.95], [0], [[1, 1, 10, 10]]).tolist()
    [0, 0, 1]
    """
    pair_chunk = PAIR_CHUNK if pair_chunk is None else int(pair_chunk)
    if pair_chunk < 1:
        raise ConfigError(f"pair_chunk must be at least 1, got {pair_chunk}")
    db, sc, di, dl, gb, gi, gl, diff = match_inputs(
        det_image, det_boxes, det_scores, gt_image, gt_boxes, gt_difficult, det_label, gt_label
    )
    m, n = db.shape[0], gb.shape[0]

    outcome = np.zeros(m, dtype=np.int8)
    if m == 0 or n == 0:
        return outcome

    # One integer key per (class, image); ground truth sorted by key (stable: keeps the box order that
    # decides IoU ties), each detection's candidate boxes are then one contiguous slice.
    n_img = int(max(di.max(), gi.max())) + 1
    gkey = gl * n_img + gi
    dkey = dl * n_img + di
    gorder = np.argsort(gkey, kind="stable")
    gkey_sorted = gkey[gorder]
    start = np.searchsorted(gkey_sorted, dkey, side="left")
    count = np.searchsorted(gkey_sorted, dkey, side="right") - start

    rows = np.flatnonzero(count > 0)
    if rows.size:
        best, jmax = _best_boxes(db, gb, gorder, rows, start[rows], count[rows], plus_one, pair_chunk)
        hit = best > iou_threshold if strict else best >= iou_threshold
        det_hit = rows[hit]
        gt_hit = jmax[hit]
        is_diff = diff[gt_hit]
        outcome[det_hit[is_diff]] = -1
        cand = det_hit[~is_diff]
        cand_gt = gt_hit[~is_diff]
        if cand.size:
            pos = rank_positions(sc, dl, ties) if rank is None else np.asarray(rank, dtype=np.int64)
            # The highest-ranked claimant of each box takes it; the others are duplicates (FP).
            o = np.lexsort((pos[cand], cand_gt))
            g_sorted = cand_gt[o]
            lead = np.ones(o.shape[0], dtype=bool)
            lead[1:] = g_sorted[1:] != g_sorted[:-1]
            outcome[cand[o[lead]]] = 1
    return outcome


# --------------------------------------------------------------------------------------------------------
# The protocol


def align_names(names_from: tuple[str, ...], names_to: tuple[str, ...], what: str) -> np.ndarray | None:
    """Index map from one name list to another (None if identical); unknown names raise."""
    if names_from == names_to:
        return None
    pos = {name: i for i, name in enumerate(names_to)}
    missing = [n for n in names_from if n not in pos]
    if missing:
        raise ValidationError(
            f"{len(missing)} detection {what}(s) not in the ground truth, e.g. {missing[0]!r}"
        )
    return np.array([pos[n] for n in names_from], dtype=np.int64)


def evaluate_voc(
    gt: VOCGroundTruth,
    dets: VOCDetections,
    *,
    iou_threshold: float = 0.5,
    metric: str = "voc2010",
    profile: str = "voc_devkit",
    plus_one: bool = True,
    classes: Sequence[str] | None = None,
    recall_levels: ArrayLike | None = None,
    params: VOCParams | None = None,
    client: Any = None,
    shards: int | None = None,
) -> EvalResult:
    """Pascal VOC AP per class and mAP, as the devkit (or ``profile="py_faster_rcnn"``) computes them.

    ``metric``: ``"voc07"`` (11-point, VOCevaldet.m with ``VOCopts.year == 2007``) or ``"voc2010"``
    (all-point, VOCap.m). mAP is the mean AP over the classes with npos > 0; classes without non-difficult
    ground truth are reported with ``ap = None`` and left out of the mean (with a warning).

    ``classes`` picks the evaluated classes, in that order (default: every class named by ``gt.classes``,
    then those only ``dets.classes`` names; the loaders sort names, so the 20 VOC classes come in the
    devkit's order). A class without non-difficult ground truth is reported, not averaged. Detections
    refer to images by name: ``dets.images`` is mapped onto ``gt.images`` and an unknown one raises.
    Returns an :class:`EvalResult` (protocol ``"voc"``) with a PR curve per class in ``curves``.
    ``client`` (a ``dask.distributed`` Client) and/or ``shards``: the matching runs on image shards, each
    worker sent only its images' boxes and returning only their outcomes
    (:func:`deteval.run.voc.match_voc_sharded`); the result is bit-identical.
    """
    if params is None:
        params = VOCParams(
            iou_threshold=float(iou_threshold),
            metric=metric,
            profile=profile,
            plus_one=bool(plus_one),
            recall_levels=None if recall_levels is None else tuple(np.asarray(recall_levels, float).tolist()),
        )
    # Common class list: the ground truth's, then any class only the detections name.
    all_classes = list(gt.classes) + [c for c in dets.classes if c not in set(gt.classes)]
    class_pos = {c: i for i, c in enumerate(all_classes)}
    det_label = dets.label
    dmap = align_names(dets.classes, tuple(all_classes), "class")
    if dmap is not None:
        det_label = dmap[det_label] if det_label.size else det_label
    det_image = dets.image
    imap = align_names(dets.images, gt.images, "image")
    if imap is not None:
        det_image = imap[det_image] if det_image.size else det_image

    if classes is None:
        selected = list(all_classes)
    else:
        selected = list(dict.fromkeys(str(c) for c in classes))
    for c in selected:
        if c not in class_pos:
            class_pos[c] = len(all_classes)
            all_classes.append(c)

    warnings = list(dets.warnings)
    sel_idx = np.array([class_pos[c] for c in selected], dtype=np.int64)
    g_keep = np.isin(gt.label, sel_idx)
    d_keep = np.isin(det_label, sel_idx)

    match = match_voc
    if client is not None or shards is not None:
        from deteval.run.voc import match_voc_sharded

        match = partial(match_voc_sharded, client=client, shards=shards)
    outcome_all = match(
        det_image[d_keep],
        dets.boxes[d_keep],
        dets.scores[d_keep],
        gt.image[g_keep],
        gt.boxes[g_keep],
        gt.difficult[g_keep],
        det_label=det_label[d_keep],
        gt_label=gt.label[g_keep],
        iou_threshold=params.iou_threshold,
        plus_one=params.plus_one,
        strict=params.strict,
        ties=params.ties,
    )
    d_lab = det_label[d_keep]
    d_sc = dets.scores[d_keep]
    g_lab = gt.label[g_keep]
    g_diff = gt.difficult[g_keep]

    # one ranked list per selected class, ranked once under the profile's tie policy
    list_of = np.full(len(all_classes), -1, dtype=np.int64)
    list_of[sel_idx] = np.arange(sel_idx.shape[0])
    d_list = list_of[d_lab] if d_lab.size else d_lab
    npos = np.bincount(list_of[g_lab[~g_diff]], minlength=len(selected))
    n_diff = np.bincount(list_of[g_lab[g_diff]], minlength=len(selected))
    lists = ranked_lists(
        d_list, d_sc, outcome_all, npos.astype(np.int64), n_lists=len(selected), ties=params.ties
    )
    if params.metric == "voc07":
        ap_all = lists.average_precision("voc07", levels=params.levels)
    else:
        ap_all = lists.average_precision("all_points")
    rec_all, prec_all = lists.recall(), lists.precision()
    score_all = lists.scores[lists.ranked_items] if lists.scores is not None else None

    per_class: dict[str, dict[str, Any]] = {}
    curves: dict[str, PRCurve] = {}
    aps: list[float] = []
    no_gt: list[str] = []
    for i, c in enumerate(selected):
        n_pos = int(lists.n_pos[i])
        ap: float | None = None
        if n_pos > 0:
            ap = float(ap_all[i])
            aps.append(ap)
        else:
            no_gt.append(c)
        tp = int(lists.n_hits[i])
        n_ranked = int(lists.n_ranked[i])
        per_class[c] = {
            "ap": ap,
            "npos": n_pos,
            "ndet": int(lists.count[i]),
            "tp": tp,
            "fp": n_ranked - tp,
            "ignored": int(lists.count[i]) - n_ranked,
            "difficult": int(n_diff[i]),
        }
        sl = slice(int(lists.rank_start[i]), int(lists.rank_start[i]) + n_ranked)
        curves[c] = PRCurve(
            recall=rec_all[sl], precision=prec_all[sl], scores=None if score_all is None else score_all[sl]
        )

    if no_gt:
        warnings.append(
            f"{len(no_gt)} class(es) without non-difficult ground truth, reported but not averaged: "
            + ", ".join(f"{c} ({per_class[c]['ndet']} detections)" for c in no_gt)
        )
    other = int(np.count_nonzero(~g_keep))
    if other:
        names = sorted({gt.classes[i] for i in np.unique(gt.label[~g_keep]).tolist()})
        warnings.append(f"{other} ground-truth object(s) of classes not evaluated: {', '.join(names)}")
    other_d = int(np.count_nonzero(~d_keep))
    if other_d:
        warnings.append(f"{other_d} detection(s) of classes not evaluated were left out")

    skipped = list(gt.skipped) + list(dets.skipped)
    warnings.extend(f"skipped bad record: {s}" for s in skipped)
    summary = {
        "metric": params.metric,
        "iou_threshold": float(params.iou_threshold),
        "map": float(np.mean(aps)) if aps else None,
        "profile": params.profile,
        "plus_one": params.plus_one,
        "n_images": len(gt.images),
        "n_classes": len(selected),
        "n_classes_averaged": len(aps),
        # What was tolerated, as numbers (the warnings say which records): bad records skipped on request
        # (on_error="skip"), detections for images outside the image set (unknown_images="warn").
        "skipped_records": len(skipped),
        "dropped_detections": int(dets.dropped_unknown_images),
    }
    if not aps:
        warnings.append("no class has non-difficult ground truth: mAP is undefined (null)")
    return EvalResult(protocol="voc", summary=summary, per_class=per_class, curves=curves, warnings=warnings)
