"""Pascal VOC detection evaluation, reproducing the official devkit (VOCevaldet.m, VOCap.m).

Data in, as the columnar tables of :mod:`deteval.tables.voc` (:class:`VOCGroundTruth`, :class:`VOCDetections`,
re-exported here), which the loaders in :mod:`deteval.io.voc` return and a training loop can build directly.

The protocol is a few public steps, and holds no scheduling: :func:`prepare` aligns names, keeps the
evaluated classes and validates and ranks the rows once (:func:`whole_part`); :func:`parts` cuts that table
into runs of whole images, :func:`match_part` matches one part, :func:`merge` puts the parts' outcomes back in
row order; :func:`finish` turns the outcomes into AP per class and mAP. Where the parts run (here, or on a
Dask client) is :mod:`deteval.run.voc`'s business, whose :func:`~deteval.run.voc.evaluate_voc` (also
``deteval.evaluate_voc``) chains the steps.

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
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deteval.core import PY_FASTER_RCNN_LEVELS, VOC_DEVKIT_LEVELS
from deteval.core.lists import RankedLists, ranked_lists, sort_lists
from deteval.core.ranking import TiePolicy
from deteval.detection.boxes import box_iou, paired_iou
from deteval.errors import ConfigError, ValidationError, first_true
from deteval.match.rotated import quad_iou_matrix, quad_iou_pairs
from deteval.results import EvalResult, PRCurve
from deteval.tables.arrays import MAX_COORD, as_boxes
from deteval.tables.voc import (
    VOCDetections,
    VOCGroundTruth,
    check_boxes,
    difficult_flags,
    float_column,
    index_column,
)

__all__ = [
    "MAX_COORD",
    "METRICS",
    "PAIR_CHUNK",
    "PROFILES",
    "PY_FASTER_RCNN_LEVELS",
    "VOC_CLASSES",
    "VOC_DEVKIT_LEVELS",
    "VOCDetections",
    "VOCEvaluation",
    "VOCGroundTruth",
    "VOCMatchPart",
    "VOCParams",
    "VocMatchTable",
    "align_names",
    "finish",
    "match_part",
    "match_part_at",
    "match_voc",
    "merge",
    "merge_voc_tables",
    "parts",
    "prepare",
    "rank_positions",
    "whole_part",
]

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
    rotated: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """For each detection ``rows[k]``: the maximum IoU over its candidate boxes ``gorder[start[k]:start[k] +
    cnt[k]]`` and the first box reaching it (the devkit's ``ov > ovmax`` keeps the first), computed over
    chunks of whole detections holding at most ``pair_chunk`` pairs (one detection at least). ``rotated``:
    quadrilateral rows and the rotated IoU (:func:`_pair_iou`)."""
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
            if rotated:
                iou = _no_overlap(quad_iou_matrix(db[rows[kk]], boxes))
            else:
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
        if rotated:
            iou = _no_overlap(quad_iou_pairs(db, gb, np.zeros(gb.shape[0], bool), pair_det, pair_gt))
        else:
            iou = paired_iou(db[pair_det], gb[pair_gt], plus_one=plus_one, no_overlap=-np.inf)
        b = np.maximum.reduceat(iou, first)
        is_best_idx = np.flatnonzero(iou == np.repeat(b, ck))
        seg = np.repeat(np.arange(hi - lo), ck)[is_best_idx]
        _, first_best = np.unique(seg, return_index=True)
        best[k] = b
        jmax[k] = pair_gt[is_best_idx[first_best]]
        lo = hi
    return best, jmax


def _no_overlap(iou: np.ndarray) -> np.ndarray:
    """Rotated IoUs with −inf where the boxes do not overlap, as the box kernels' ``no_overlap`` gives (so
    that a threshold of 0 never matches disjoint boxes)."""
    return np.where(iou > 0.0, iou, -np.inf)


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

    Parameters
    ----------
    det_image, det_boxes, det_scores
        Each detection's image index, ``xyxy`` box and score (N rows, in file order: the tie order).
    gt_image, gt_boxes, gt_difficult
        Each ground-truth box's image index, ``xyxy`` box and difficult flag (0/1 or booleans).
    det_label, gt_label
        Class indices (default: one class).
    iou_threshold, plus_one, strict
        A match needs IoU >= threshold (> with ``strict``); ``plus_one``: the devkit's pixel-inclusive IoU.
    ties
        The ranking's tie policy.
    pair_chunk
        At most this many (detection, box) IoUs at once (default :data:`PAIR_CHUNK`); the result does not
        depend on it.
    rank
        Each detection's position in its class's ranking, when the caller ranked a larger table of which
        these detections are a part (default: ranked here under ``ties``).

    Returns
    -------
    numpy.ndarray
        int8 outcome of every detection, in input order.

    >>> match_voc([0, 0, 0], [[1, 1, 10, 10]] * 3, [0.9, 0.8, 0.95], [0], [[1, 1, 10, 10]]).tolist()
    [0, 0, 1]
    """
    whole = whole_part(
        det_image, det_boxes, det_scores, gt_image, gt_boxes, gt_difficult,
        det_label=det_label, gt_label=gt_label, iou_threshold=iou_threshold, plus_one=plus_one,
        strict=strict, ties=ties, rank=rank,
    )  # fmt: skip
    return match_part(whole, pair_chunk).outcome


# --------------------------------------------------------------------------------------------------------
# Parts of whole images: cut, match, merge


@dataclass(frozen=True)
class VOCMatchPart:
    """The matcher's inputs for a run of whole images, validated (:func:`whole_part`).

    ``rows`` is each detection's row in the whole detection table and ``rank`` its position in its class's
    ranking over the whole table, so that a part decides which of several claimants takes a box exactly as
    the whole table does (an unstable sort depends on the whole class). Then each detection's image, box and
    class; the ground truth of the same images; and the matching rule (threshold, +1 pixel, strict ``>``).
    """

    rows: np.ndarray
    det_image: np.ndarray
    det_boxes: np.ndarray
    det_label: np.ndarray
    rank: np.ndarray
    gt_image: np.ndarray
    gt_boxes: np.ndarray
    gt_difficult: np.ndarray
    gt_label: np.ndarray
    iou_threshold: float = 0.5
    plus_one: bool = True
    strict: bool = False
    #: boxes are quadrilateral rows (:mod:`deteval.tables.quads`) and the IoU is the rotated one
    #: (:mod:`deteval.match.rotated`, the DOTA devkit's polygon IoU); ``plus_one`` does not apply
    rotated: bool = False

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    @property
    def n_images(self) -> int:
        """The largest image index + 1 (0 without any box)."""
        return int(max(self.det_image.max(initial=-1), self.gt_image.max(initial=-1))) + 1


def whole_part(
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
    rank: ArrayLike | None = None,
) -> VOCMatchPart:
    """The whole table as one part: :func:`match_voc`'s inputs validated (shapes, numbers, finite in-bound
    non-inverted boxes, finite scores, non-negative integer indices: what every path to the matcher, one
    process or sharded, checks alike; a :class:`ValidationError` names the record) and each detection ranked
    once in its class under ``ties`` (or by the given ``rank``).

    Parameters
    ----------
    det_image, det_boxes, det_scores, gt_image, gt_boxes, gt_difficult, det_label, gt_label
        The columns of :func:`match_voc`.
    iou_threshold, plus_one, strict, ties
        The matching rule and the tie policy of the ranking.
    rank
        Each detection's position in its class's ranking, if already known.

    Returns
    -------
    VOCMatchPart
        Every detection and box, ``rows`` 0 … N−1.
    """
    db = as_boxes(det_boxes, "detection boxes")
    gb = as_boxes(gt_boxes, "ground-truth boxes")
    m, n = db.shape[0], gb.shape[0]
    di = index_column(det_image, m, "detection image")
    gi = index_column(gt_image, n, "ground-truth image")
    sc = float_column(det_scores, "detection scores").reshape(-1)
    if sc.shape[0] != m:
        raise ValidationError(f"{sc.shape[0]} scores for {m} detection boxes")
    if (i := first_true(~np.isfinite(sc))) >= 0:
        raise ValidationError("detection scores must be finite", record=i)
    dl = np.zeros(m, dtype=np.int64) if det_label is None else index_column(det_label, m, "detection label")
    gl = np.zeros(n, dtype=np.int64) if gt_label is None else index_column(gt_label, n, "ground-truth label")
    diff = np.zeros(n, dtype=bool) if gt_difficult is None else difficult_flags(gt_difficult)
    if diff.shape[0] != n:
        raise ValidationError(f"{diff.shape[0]} difficult flags for {n} ground-truth boxes")
    # Non-finite or overflowing coordinates would give NaN IoUs, which no threshold test can handle.
    check_boxes(db, "detection", det_boxes)
    check_boxes(gb, "ground-truth", gt_boxes)

    for arr, what in ((di, "detection image"), (gi, "ground-truth image"), (dl, "detection label"),
                      (gl, "ground-truth label")):  # fmt: skip
        if arr.size and arr.min() < 0:
            raise ValidationError(f"{what} indices must be non-negative", record=int(np.argmin(arr)))
    pos = rank_positions(sc, dl, ties) if rank is None else np.asarray(rank, dtype=np.int64)
    rows = np.arange(di.shape[0], dtype=np.int64)
    return VOCMatchPart(rows, di, db, dl, pos, gi, gb, diff, gl, iou_threshold, plus_one, strict)


def parts(whole: VOCMatchPart, ranges: Sequence[tuple[int, int]]) -> list[VOCMatchPart]:
    """``whole`` cut into one part per image range ``[lo, hi)``: the detections and boxes of those images.

    Matching never looks across images, so parts of disjoint ranges covering every image match to the whole
    table's outcomes (:func:`merge`). A range holding every image gives ``whole`` itself (no copy).
    """
    out = []
    n_images = whole.n_images
    for lo, hi in ranges:
        if lo <= 0 and hi >= n_images:
            out.append(whole)
            continue
        d = np.flatnonzero((whole.det_image >= lo) & (whole.det_image < hi))
        g = np.flatnonzero((whole.gt_image >= lo) & (whole.gt_image < hi))
        cut = {k: getattr(whole, k)[d] for k in _DET_COLUMNS} | {k: getattr(whole, k)[g] for k in _GT_COLUMNS}
        out.append(replace(whole, **cut))
    return out


#: The columns of :class:`VOCMatchPart` with a row per detection, and those with a row per box.
_DET_COLUMNS = ("rows", "det_image", "det_boxes", "det_label", "rank")
_GT_COLUMNS = ("gt_image", "gt_boxes", "gt_difficult", "gt_label")


@dataclass
class VocMatchTable:
    """VOC matching outcome of one part: ``row`` (the detection's row in the full detection table) and
    ``outcome`` (int8: 1 true positive, 0 false positive, −1 ignored on a difficult box). The devkit ranks a
    class's detections by score with ties in *file* order, so the table carries each detection's row."""

    row: np.ndarray
    outcome: np.ndarray

    def __len__(self) -> int:
        return int(self.row.shape[0])


def merge_voc_tables(tables: Sequence[VocMatchTable], n_rows: int) -> np.ndarray:
    """The outcome of every one of ``n_rows`` detections, in row order, from the parts' tables.

    Every row must come from exactly one part (the parts hold disjoint images and cover all of them).
    """
    outcome = np.zeros(n_rows, dtype=np.int8)
    seen = np.zeros(n_rows, dtype=np.int64)
    for t in tables:
        row = np.asarray(t.row, dtype=np.int64)
        if row.size and (row.min() < 0 or row.max() >= n_rows):
            raise ValidationError(f"a match table names detection row {int(row.max())} of {n_rows}")
        outcome[row] = t.outcome
        np.add.at(seen, row, 1)
    if n_rows and (i := first_true(seen != 1)) >= 0:
        raise ValidationError(f"detection row {i} is in {int(seen[i])} match tables, not exactly one")
    return outcome


def match_part(part: VOCMatchPart, pair_chunk: int | None = None) -> VocMatchTable:
    """VOCevaldet.m's matching of one part (:func:`match_voc`'s rules, the ranking given by ``part.rank``).

    Returns
    -------
    VocMatchTable
        The outcome (1 TP, 0 FP, −1 ignored) of each of the part's detection rows.
    """
    return match_part_at(part, [part.iou_threshold], pair_chunk)[0]


def merge(tables: Sequence[VocMatchTable], n_rows: int) -> np.ndarray:
    """The outcome of every one of ``n_rows`` detections, in row order, from the parts' tables
    (:func:`merge_voc_tables`); one table of every row in order is already that outcome."""
    if len(tables) == 1 and np.array_equal(tables[0].row, np.arange(n_rows)):
        return tables[0].outcome
    return merge_voc_tables(tables, n_rows)


def match_part_at(
    part: VOCMatchPart, thresholds: Sequence[float], pair_chunk: int | None = None
) -> list[VocMatchTable]:
    """:func:`match_part` at each of several IoU thresholds (``part.iou_threshold`` is not read): the best box
    of each detection (rule 2) does not depend on the threshold, so it is found once.

    Returns
    -------
    list[VocMatchTable]
        One table per threshold, each equal to ``match_part(replace(part, iou_threshold=t))``.
    """
    chunk = PAIR_CHUNK if pair_chunk is None else int(pair_chunk)
    if chunk < 1:
        raise ConfigError(f"pair_chunk must be at least 1, got {chunk}")
    found = _best_of(part, chunk)
    return [VocMatchTable(row=part.rows, outcome=_claims(part, found, float(t))) for t in thresholds]


@dataclass(frozen=True)
class _BestBoxes:
    """Each detection with a candidate box (``rows``): its best IoU and that box (rule 2), and the order of
    the detections by (box, rank), in which the first claimant of each box leads (rule 3)."""

    rows: np.ndarray
    best: np.ndarray
    jmax: np.ndarray
    claim_order: np.ndarray


def _best_of(part: VOCMatchPart, pair_chunk: int) -> _BestBoxes:
    """Rule 2 for each of the part's detections: the threshold-free half of the matcher."""
    db, di, dl = part.det_boxes, part.det_image, part.det_label
    gb, gi, gl = part.gt_boxes, part.gt_image, part.gt_label
    m, n = db.shape[0], gb.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if m == 0 or n == 0:
        return _BestBoxes(empty, np.zeros(0), empty, empty)

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
    if not rows.size:
        return _BestBoxes(rows, np.zeros(0), empty, empty)
    best, jmax = _best_boxes(
        db, gb, gorder, rows, start[rows], count[rows], part.plus_one, pair_chunk, part.rotated
    )
    return _BestBoxes(rows, best, jmax, np.lexsort((part.rank[rows], jmax)))


def _claims(part: VOCMatchPart, found: _BestBoxes, threshold: float) -> np.ndarray:
    """Rules 1 and 3 at one threshold: ignored on a difficult best box, TP for the highest-ranked claimant
    of a regular one, FP otherwise."""
    outcome = np.zeros(part.det_boxes.shape[0], dtype=np.int8)
    if not found.rows.size:
        return outcome
    hit = found.best > threshold if part.strict else found.best >= threshold
    is_diff = part.gt_difficult[found.jmax]
    outcome[found.rows[hit & is_diff]] = -1
    # The highest-ranked claimant of each box takes it; the others are duplicates (FP). Claimants in
    # (box, rank) order, those at this threshold kept: the first of each box leads.
    o = found.claim_order[(hit & ~is_diff)[found.claim_order]]
    if o.size:
        g_sorted = found.jmax[o]
        lead = np.ones(o.shape[0], dtype=bool)
        lead[1:] = g_sorted[1:] != g_sorted[:-1]
        outcome[found.rows[o[lead]]] = 1
    return outcome


# --------------------------------------------------------------------------------------------------------
# The protocol: prepare → (parts → match_part → merge) → finish


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


@dataclass(frozen=True)
class VOCEvaluation:
    """One VOC evaluation set up by :func:`prepare`: what the matcher needs (``whole``) and what
    :func:`finish` needs (each kept detection's ranked list and score, positives per list, messages)."""

    params: VOCParams
    selected: tuple[str, ...]
    whole: VOCMatchPart
    det_list: np.ndarray
    det_scores: np.ndarray
    npos: np.ndarray
    n_difficult: np.ndarray
    warnings: tuple[str, ...]
    left_out: tuple[str, ...]
    n_images: int
    skipped_records: int
    dropped_detections: int


def prepare(
    gt: VOCGroundTruth, dets: VOCDetections, params: VOCParams, classes: Sequence[str] | None = None
) -> VOCEvaluation:
    """Align the detections' image and class names on the ground truth's, keep the evaluated classes and
    validate and rank the kept rows (:func:`whole_part`).

    Parameters
    ----------
    gt, dets
        The tables. Detections refer to images by name: ``dets.images`` is mapped onto ``gt.images`` and an
        unknown one raises.
    params
        The protocol.
    classes
        The evaluated classes, in that order (default: every class named by ``gt.classes``, then those only
        ``dets.classes`` names).

    Returns
    -------
    VOCEvaluation
        The input of the matching steps (``whole``) and of :func:`finish`.
    """
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

    selected = list(all_classes) if classes is None else list(dict.fromkeys(str(c) for c in classes))
    for c in selected:
        if c not in class_pos:
            class_pos[c] = len(all_classes)
            all_classes.append(c)

    sel_idx = np.array([class_pos[c] for c in selected], dtype=np.int64)
    g_keep = np.isin(gt.label, sel_idx)
    d_keep = np.isin(det_label, sel_idx)
    whole = whole_part(
        det_image[d_keep], dets.boxes[d_keep], dets.scores[d_keep],
        gt.image[g_keep], gt.boxes[g_keep], gt.difficult[g_keep],
        det_label=det_label[d_keep], gt_label=gt.label[g_keep], iou_threshold=params.iou_threshold,
        plus_one=params.plus_one, strict=params.strict, ties=params.ties,
    )  # fmt: skip

    # one ranked list per selected class
    list_of = np.full(len(all_classes), -1, dtype=np.int64)
    list_of[sel_idx] = np.arange(sel_idx.shape[0])
    return VOCEvaluation(
        params=params,
        selected=tuple(selected),
        whole=whole,
        det_list=list_of[whole.det_label] if len(whole) else whole.det_label,
        det_scores=dets.scores[d_keep],
        npos=np.bincount(list_of[whole.gt_label[~whole.gt_difficult]], minlength=len(selected)),
        n_difficult=np.bincount(list_of[whole.gt_label[whole.gt_difficult]], minlength=len(selected)),
        warnings=tuple(dets.warnings),
        left_out=tuple(_left_out(gt, dets, g_keep, d_keep)),
        n_images=len(gt.images),
        skipped_records=len(gt.skipped) + len(dets.skipped),
        dropped_detections=int(dets.dropped_unknown_images),
    )


def _left_out(gt: VOCGroundTruth, dets: VOCDetections, g_keep: np.ndarray, d_keep: np.ndarray) -> list[str]:
    """The warnings for what the evaluation leaves out: objects and detections of classes not evaluated, and
    the bad records the loaders skipped."""
    warnings = []
    other = int(np.count_nonzero(~g_keep))
    if other:
        names = sorted({gt.classes[i] for i in np.unique(gt.label[~g_keep]).tolist()})
        warnings.append(f"{other} ground-truth object(s) of classes not evaluated: {', '.join(names)}")
    other_d = int(np.count_nonzero(~d_keep))
    if other_d:
        warnings.append(f"{other_d} detection(s) of classes not evaluated were left out")
    warnings.extend(f"skipped bad record: {s}" for s in (*gt.skipped, *dets.skipped))
    return warnings


def finish(evaluation: VOCEvaluation, outcome: np.ndarray) -> EvalResult:
    """AP per class and mAP from the outcome of every kept detection (in row order, :func:`merge`).

    One ranked list per selected class, ranked once under the profile's tie policy; AP is VOCap.m's
    all-point area (``voc2010``) or the 11-point mean over the profile's levels (``voc07``). mAP is the mean
    over the classes with npos > 0; the others are reported with ``ap = None``.

    Returns
    -------
    EvalResult
        Protocol ``"voc"``: the summary, a row per class (``ap``, ``npos``, ``ndet``, ``tp``, ``fp``,
        ``ignored``, ``difficult``), a PR curve per class, and the warnings.
    """
    ev, params = evaluation, evaluation.params
    selected = ev.selected
    lists = ranked_lists(
        ev.det_list, ev.det_scores, outcome, ev.npos.astype(np.int64), n_lists=len(selected), ties=params.ties
    )
    if params.metric == "voc07":
        ap_all = lists.average_precision("voc07", levels=params.levels)
    else:
        ap_all = lists.average_precision("all_points")
    per_class, curves, aps, no_gt = _class_rows(ev, lists, ap_all)

    warnings = list(ev.warnings)
    if no_gt:
        warnings.append(
            f"{len(no_gt)} class(es) without non-difficult ground truth, reported but not averaged: "
            + ", ".join(f"{c} ({per_class[c]['ndet']} detections)" for c in no_gt)
        )
    warnings.extend(ev.left_out)
    summary = {
        "metric": params.metric,
        "iou_threshold": float(params.iou_threshold),
        "map": float(np.mean(aps)) if aps else None,
        "profile": params.profile,
        "plus_one": params.plus_one,
        "n_images": ev.n_images,
        "n_classes": len(selected),
        "n_classes_averaged": len(aps),
        # What was tolerated, as numbers (the warnings say which records): bad records skipped on request
        # (on_error="skip"), detections for images outside the image set (unknown_images="warn").
        "skipped_records": ev.skipped_records,
        "dropped_detections": ev.dropped_detections,
    }
    if not aps:
        warnings.append("no class has non-difficult ground truth: mAP is undefined (null)")
    return EvalResult(protocol="voc", summary=summary, per_class=per_class, curves=curves, warnings=warnings)


def _class_rows(
    ev: VOCEvaluation, lists: RankedLists, ap_all: np.ndarray
) -> tuple[dict[str, dict[str, Any]], dict[str, PRCurve], list[float], list[str]]:
    """Each selected class's row (AP, counts) and PR curve; the APs averaged into mAP, and the classes left
    out of it (no non-difficult ground truth)."""
    selected = ev.selected
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
            "difficult": int(ev.n_difficult[i]),
        }
        sl = slice(int(lists.rank_start[i]), int(lists.rank_start[i]) + n_ranked)
        curves[c] = PRCurve(
            recall=rec_all[sl], precision=prec_all[sl], scores=None if score_all is None else score_all[sl]
        )
    return per_class, curves, aps, no_gt
