"""TIDE error decomposition (Bolya et al., "TIDE: A General Toolbox for Identifying Object Detection Errors",
ECCV 2020), exactly as tidecv 1.0.1 defines it.

Per image, detections are ranked by score (stable) and matched greedily: each takes the ground truth (GT) of
its own class with the highest IoU still free; a match needs IoU >= ``pos`` (foreground, 0.5). An unmatched
detection inside a crowd region of its class is ignored. Each unmatched (or ignored) detection gets the first
error that applies, in this order (``bg`` = background IoU, 0.1):

=======  ===================================================================================================
loc      bg <= max IoU with a GT of its class <= pos (that GT, matched or not)
cls      IoU >= pos with a GT of another class
dupe     IoU >= pos with an already matched GT of its class
bkg      IoU <= bg with every GT (or the image has no GT)
both     anything else (wrong class and bg < IoU < pos)
miss     a GT left unmatched that no cls / loc error could fix
=======  ===================================================================================================

dAP of an error type = AP after fixing only those errors (the oracle) minus the AP as evaluated, clamped at
0: a ``cls`` error becomes a true positive of the GT's class, a ``loc`` error a true positive, both only when
the GT was free and this detection is the highest-scored cls/loc error on that GT (the others are removed);
``dupe``, ``bkg`` and ``both`` detections are removed; a ``miss`` removes its GT from the positives.
Special errors (not clamped): ``fp`` = AP when every false positive is ranked below every true positive;
``fn`` = AP when the unmatched GTs are removed from the positives.

Two AP functions (``compat``): ``"protocol"`` (default; pycocotools' AP at IoU ``pos``, values 0–1) and
``"tide"`` (tidecv's ``APDataObject.get_ap`` and matching, in its percent units); docs/analysis.md tables
how they differ.

This module is named for tidecv and keeps, on purpose, the parts of tidecv's arithmetic that the shared homes
do not have: its first-maximum matching with a strict crowd test (``assign``), its precision curve (a list may
hold more true positives than ground truths) and its Python summation of the 101 samples (``_ap_tide``). The
``coco`` and ``voc`` rules match through :func:`deteval.match.greedy.greedy_match` and score through the core's
ranked lists. tests/test_analysis_tide.py checks the numbers against tidecv itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.analysis.options import COMPAT_MODES
from deteval.core.ap import interpolated_precision
from deteval.core.levels import COCO_RECALL_LEVELS, TIDECV_RECALL_LEVELS
from deteval.core.lists import COCO_EPS, presorted_lists
from deteval.detection.boxes import box_area, box_iou
from deteval.detection.voc import rank_positions
from deteval.errors import ValidationError
from deteval.match.greedy import greedy_match
from deteval.match.iou import bbox_iou_pairs
from deteval.match.rotated import quad_iou_matrix
from deteval.tables.quads import QUAD_COLUMNS

__all__ = [
    "AREA_RANGES",
    "COMPAT_MODES",
    "ERROR_TYPES",
    "PROTOCOLS",
    "Assignment",
    "ErrorAnalysis",
    "TideInput",
    "assign",
    "format_errors",
    "iou_matrix",
    "tide_errors",
]

ERROR_TYPES: tuple[str, ...] = ("cls", "loc", "both", "dupe", "bkg", "miss")
PROTOCOLS: tuple[str, ...] = ("coco", "voc2010", "voc07")
#: tidecv's ``qualifiers.AREA`` on the box area w*h: small <= 32², medium <= 96², large above.
AREA_RANGES: tuple[tuple[str, float, float], ...] = (
    ("small", -np.inf, 32.0**2),
    ("medium", 32.0**2, 96.0**2),
    ("large", 96.0**2, np.inf),
)
_CLS, _LOC, _BOTH, _DUPE, _BKG, _MISS = range(6)
_FP, _TP, _IGN = 0, 1, 2


@dataclass(frozen=True)
class TideInput:
    """Boxes for the analysis, columnar. ``*_img`` are image indices (images are processed in increasing
    index); ``gt_crowd`` marks regions that are not positives (COCO crowds, VOC difficult objects). Boxes are
    ``[x, y, w, h]`` (IoU as pycocotools) unless ``xyxy`` (IoU as the VOC devkit, ``plus_one`` for its +1
    pixels). ``tie_key``: the protocol's order among equal scores (default: image, then rank in the image).
    ``class_ids``: the categories to average over (default: every class seen). ``image_order``: the order
    in which tidecv walks the images (``compat="tide"`` only; default increasing index). ``quads``: oriented
    boxes, each a row of nine numbers (corners and area, :mod:`deteval.tables.quads`), whose IoU is the
    rotated one of :mod:`deteval.match.rotated` (the COCO-style OBB protocol's) and whose area is that row's."""

    gt_img: np.ndarray
    gt_cls: np.ndarray
    gt_box: np.ndarray
    gt_crowd: np.ndarray
    dt_img: np.ndarray
    dt_cls: np.ndarray
    dt_score: np.ndarray
    dt_box: np.ndarray
    class_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    xyxy: bool = False
    plus_one: bool = False
    tie_key: np.ndarray | None = None
    image_order: np.ndarray | None = None
    quads: bool = False

    def __post_init__(self) -> None:
        ng, nd = len(self.gt_img), len(self.dt_img)
        for name, arr, n in (
            ("gt_cls", self.gt_cls, ng),
            ("gt_crowd", self.gt_crowd, ng),
            ("dt_cls", self.dt_cls, nd),
            ("dt_score", self.dt_score, nd),
        ):
            if len(arr) != n:
                raise ValidationError(f"{name} has {len(arr)} entries, expected {n}")
        width = QUAD_COLUMNS if self.quads else 4
        for name, box, n in (("gt_box", self.gt_box, ng), ("dt_box", self.dt_box, nd)):
            if box.shape != (n, width):
                raise ValidationError(f"{name} must be {n}x{width}, got {box.shape}")
        if nd and not np.isfinite(self.dt_score).all():
            raise ValidationError("dt_score must be finite")


@dataclass
class ErrorAnalysis:
    """The decomposition: ``ap`` as evaluated, ``main`` dAP per error type, ``special`` (``fp``, ``fn``),
    ``counts`` of each error type, ``by_size`` main dAPs restricted to errors whose object (the GT if the
    error has one, else the detection) falls in each area range; ``scale`` 100 for tidecv's percent units."""

    ap: float
    main: dict[str, float]
    special: dict[str, float]
    counts: dict[str, int]
    by_size: dict[str, dict[str, float]]
    compat: str
    pos_threshold: float
    bg_threshold: float
    scale: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON form in AP units 0–1 (tidecv's percent values divided by 100)."""
        s = self.scale
        return {
            "compat": self.compat,
            "pos_threshold": self.pos_threshold,
            "bg_threshold": self.bg_threshold,
            "ap": self.ap / s,
            "main": {k: v / s for k, v in self.main.items()},
            "special": {k: v / s for k, v in self.special.items()},
            "counts": dict(self.counts),
            "by_size": {a: {k: v / s for k, v in d.items()} for a, d in self.by_size.items()},
        }


@dataclass
class Assignment:
    """The outcome of :func:`assign`, one row per kept detection."""

    # kept detections in push order (image order, then rank inside the image)
    cls: np.ndarray
    score: np.ndarray
    state: np.ndarray
    err: np.ndarray
    err_gt: np.ndarray  # the GT a cls/loc error would fix (-1 otherwise)
    best: np.ndarray  # this cls/loc error is the one that gets fixed
    area: np.ndarray  # the error's object area (GT's if it has one, else the detection's)
    err_key: np.ndarray  # position in tidecv's error list (-1: no error)
    tie: np.ndarray  # the protocol's order among equal scores
    det: np.ndarray  # index of the detection in the input
    match: np.ndarray  # the GT a true positive matched (input index; -1 otherwise)
    missed_cls: np.ndarray  # class of each miss error
    missed_area: np.ndarray
    fn_cls: np.ndarray  # class of every unmatched GT
    n_gt: dict[int, int]
    class_order: list[int]


def iou_matrix(dbox: np.ndarray, gbox: np.ndarray, crowd: bool, inp: TideInput) -> np.ndarray:
    """IoU of every detection box with every GT box in ``inp``'s convention (crowd: over the detection)."""
    if inp.quads:
        return quad_iou_matrix(dbox, gbox, np.full(len(gbox), crowd))
    if inp.xyxy:
        if crowd:
            raise ValidationError("crowd regions need [x, y, w, h] boxes")
        return box_iou(dbox, gbox, plus_one=inp.plus_one)
    nd, ng = len(dbox), len(gbox)
    di = np.repeat(np.arange(nd), ng)
    gi = np.tile(np.arange(ng), nd)
    flags = np.full(ng, crowd)
    return bbox_iou_pairs(dbox, gbox, flags, di, gi).reshape(nd, ng)


def _keep_top(
    idx: np.ndarray, score: np.ndarray, cls: np.ndarray, max_dets: int, per_class: bool
) -> np.ndarray:
    order = idx[np.argsort(-score[idx], kind="stable")]
    if not per_class:
        return order[:max_dets]
    return order[rank_positions(score[order], cls[order], "stable") < max_dets]


def _protocol_match(
    regular: np.ndarray, special: np.ndarray, pos: float, rule: str, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One image's detections (rows, in rank order) under the COCO or VOC devkit greedy rule at IoU ``pos``
    (:func:`deteval.match.greedy.greedy_match`); ``special`` holds the crowd (COCO) or difficult (VOC) boxes.
    Returns each detection's state, the ground truth (input index) a true positive took, and the columns of
    ``regular`` taken."""
    full = np.concatenate([regular, special], axis=1).T
    flags = np.r_[np.zeros(regular.shape[1], dtype=bool), np.ones(special.shape[1], dtype=bool)]
    out, m = greedy_match(full, flags, np.array([pos], dtype=np.float64), "voc" if rule == "voc" else "coco")
    state = np.where(out[0] == 1, _TP, np.where(out[0] == -1, _IGN, _FP))
    tp = m[0] >= 0
    match = np.full(regular.shape[0], -1, dtype=np.int64)
    match[tp] = g[m[0][tp]]
    return state, match, m[0][tp]


def assign(inp: TideInput, pos: float, bg: float, max_dets: int, rule: str) -> Assignment:
    """Match ``inp`` image by image and classify every unmatched detection (module docstring). ``rule``:
    ``"tide"`` (tidecv), ``"coco"`` (pycocotools at IoU ``pos``) or ``"voc"`` (VOCevaldet.m)."""
    tide = rule == "tide"
    gbox, dbox = inp.gt_box, inp.dt_box
    if inp.quads:
        garea, darea = gbox[:, QUAD_COLUMNS - 1], dbox[:, QUAD_COLUMNS - 1]
    elif inp.xyxy:
        garea, darea = box_area(gbox, plus_one=inp.plus_one), box_area(dbox, plus_one=inp.plus_one)
    else:
        garea, darea = gbox[:, 2] * gbox[:, 3], dbox[:, 2] * dbox[:, 3]
    n_img = int(max(inp.gt_img.max(initial=-1), inp.dt_img.max(initial=-1))) + 1
    if inp.image_order is not None:
        n_img = max(n_img, len(inp.image_order))
    g_by, d_by = _by_image(inp.gt_img, n_img), _by_image(inp.dt_img, n_img)
    rows = _Rows()
    walk = range(n_img) if not tide or inp.image_order is None else inp.image_order.tolist()
    for im in walk:
        gall = g_by[im]
        g = gall[~inp.gt_crowd[gall]]
        crowd = gall[inp.gt_crowd[gall]]
        for c in inp.gt_cls[g].tolist():
            rows.see(c)
            rows.n_gt[c] = rows.n_gt.get(c, 0) + 1
        d = _keep_top(d_by[im], inp.dt_score, inp.dt_cls, max_dets, per_class=not tide)
        used_g = np.zeros(len(g), dtype=bool)
        usable = np.zeros(len(g), dtype=bool)
        if len(d) == 0:
            for j in g.tolist():
                rows.fn_cls.append(int(inp.gt_cls[j]))
                rows.missed(int(inp.gt_cls[j]), float(garea[j]))
            continue
        dc, gc = inp.dt_cls[d], inp.gt_cls[g]
        iou = iou_matrix(dbox[d], gbox[g], False, inp)
        same = dc[:, None] == gc[None, :]
        cls_iou = iou * same
        state, match = _match_image(inp, d, g, crowd, iou, same, pos, rule, used_g)
        noncls_iou = iou * ~same
        used_cls = iou * same * used_g[None, :]
        for i in range(len(d)):
            p = int(d[i])
            if state[i] != _IGN:
                rows.see(int(dc[i]))
            err, tgt, area = -1, -1, float(darea[p])
            if state[i] != _TP:
                err, tgt = _error(iou[i], cls_iou[i], noncls_iou[i], used_cls[i], pos, bg)
                if tgt >= 0:
                    area = float(garea[g[tgt]])
                    if not used_g[tgt]:
                        usable[tgt] = True
                        rows.best_candidate(int(g[tgt]), float(inp.dt_score[p]))
                    tgt = int(g[tgt])
            tie = None if inp.tie_key is None else int(inp.tie_key[p])
            rows.detection(
                int(dc[i]), float(inp.dt_score[p]), int(state[i]), err, tgt, area, p, int(match[i]), tie
            )
        for j in np.flatnonzero(~used_g).tolist():
            rows.fn_cls.append(int(gc[j]))
            if not usable[j]:
                rows.missed(int(gc[j]), float(garea[g[j]]))
    return rows.assignment()


class _Rows:
    """The columns of :class:`Assignment` as :func:`assign` walks the images: one row per detection kept, the
    missed and unmatched ground truth, the classes in the order met, and the error keys (one per error, in
    walk order: a detection's error or a missed box)."""

    #: the per-detection fields of :class:`Assignment`, in row order
    _COLUMNS = ("cls", "score", "state", "err", "err_gt", "area", "err_key", "tie", "det", "match")

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []  # one per detection, in ``_COLUMNS`` order
        self.best_of: dict[int, tuple[float, int]] = {}  # GT -> (best score, row)
        self.missed_cls: list[int] = []
        self.missed_area: list[float] = []
        self.fn_cls: list[int] = []
        self.n_gt: dict[int, int] = {}
        self.order: list[int] = []
        self.seen: set[int] = set()
        self.key = 0

    def see(self, c: int) -> None:
        """Class ``c`` met (the order of first meeting is the class order)."""
        if c not in self.seen:
            self.seen.add(c)
            self.order.append(c)

    def missed(self, c: int, area: float) -> None:
        """A ground-truth box of class ``c`` no detection was near: a missed error of its own key."""
        self.missed_cls.append(c)
        self.missed_area.append(area)
        self.key += 1

    def best_candidate(self, gt: int, score: float) -> None:
        """The row about to be added is an unmatched detection aimed at box ``gt``: kept if the best so far."""
        prev = self.best_of.get(gt, (-1.0, -1))
        if prev[0] < score:
            self.best_of[gt] = (score, len(self.rows))

    def detection(
        self,
        c: int,
        score: float,
        state: int,
        err: int,
        gt: int,
        area: float,
        det: int,
        match: int,
        tie: int | None,
    ) -> None:
        """One detection's row; ``tie`` None: its row number (the walk order breaks ties)."""
        key = self.key if err >= 0 else -1
        self.rows.append(
            (c, score, state, err, gt, area, key, len(self.rows) if tie is None else tie, det, match)
        )
        self.key += err >= 0

    def assignment(self) -> Assignment:
        cols = dict(zip(self._COLUMNS, zip(*self.rows))) if self.rows else dict.fromkeys(self._COLUMNS, ())
        best = np.zeros(len(self.rows), dtype=bool)
        for _, idx in self.best_of.values():
            best[idx] = True
        columns = {
            k: np.asarray(cols[k], dtype=np.float64 if k in ("score", "area") else np.int64)
            for k in self._COLUMNS
        }
        return Assignment(
            **columns,
            best=best,
            missed_cls=np.asarray(self.missed_cls, dtype=np.int64),
            missed_area=np.asarray(self.missed_area, dtype=np.float64),
            fn_cls=np.asarray(self.fn_cls, dtype=np.int64),
            n_gt=self.n_gt,
            class_order=self.order,
        )


def _by_image(img: np.ndarray, n_img: int) -> list[np.ndarray]:
    """The rows of each image ``0 … n_img − 1``, in row order."""
    return np.split(np.argsort(img, kind="stable"), np.cumsum(np.bincount(img, minlength=n_img))[:-1])


def _match_image(
    inp: TideInput,
    d: np.ndarray,
    g: np.ndarray,
    crowd: np.ndarray,
    iou: np.ndarray,
    same: np.ndarray,
    pos: float,
    rule: str,
    used_g: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One image's detections ``d`` (in rank order) matched to its regular boxes ``g`` under ``rule``: each
    detection's state (TP, FP or ignored) and matched box (−1: none); ``used_g`` marks the boxes taken."""
    dbox, gbox, dc = inp.dt_box, inp.gt_box, inp.dt_cls[d]
    state = np.full(len(d), _FP)
    match = np.full(len(d), -1)
    if rule != "tide":
        same_crowd = dc[:, None] == inp.gt_cls[crowd][None, :]
        if rule == "voc":
            # VOCevaldet.m: the box of maximum IoU among all boxes of the class (taken, difficult or not;
            # the first wins a tie); difficult -> ignored, taken -> false positive
            regular = iou * same
            special = iou_matrix(dbox[d], gbox[crowd], False, inp) * same_crowd
        else:
            # pycocotools at IoU pos; −1 keeps another class's boxes out of reach even at pos = 0
            regular = np.where(same, iou, -1.0)
            special = (
                np.where(same_crowd, iou_matrix(dbox[d], gbox[crowd], True, inp), -1.0)
                if len(crowd)
                else np.zeros((len(d), 0))
            )
        state, match, taken = _protocol_match(regular, special, pos, rule, g)
        used_g[taken] = True
        return state, match
    if len(g):
        # tidecv: the first box of maximum IoU among the boxes of the class not yet taken
        buf = iou * same
        for i in range(len(d)):
            row = buf[i]
            j = int(np.argmax(row))
            if row[j] >= pos:
                state[i] = _TP
                used_g[j] = True
                match[i] = g[j]
                buf[:, j] = 0.0
    for r in crowd.tolist():
        ciou = iou_matrix(dbox[d], gbox[r : r + 1], True, inp)[:, 0]
        state[(state != _TP) & (ciou > pos) & (dc == inp.gt_cls[r])] = _IGN
    return state, match


def _error(
    iou: np.ndarray, cls_iou: np.ndarray, noncls_iou: np.ndarray, used_cls: np.ndarray, pos: float, bg: float
) -> tuple[int, int]:
    """A detection's error type (tidecv's order of tests) and the index of the box it is blamed on (−1:
    none), from its IoUs with the image's regular boxes: all, of its class, of other classes, of its class
    already taken."""
    if iou.shape[0] == 0:
        return _BKG, -1
    j = int(np.argmax(cls_iou))
    k = int(np.argmax(noncls_iou))
    if bg <= cls_iou[j] <= pos:
        return _LOC, j
    if noncls_iou[k] >= pos:
        return _CLS, k
    if used_cls.max() >= pos:
        return _DUPE, -1
    if iou.max() <= bg:
        return _BKG, -1
    return _BOTH, -1


def _ap_tide(tp: np.ndarray, n_gt: int) -> float:
    """tidecv's ``APDataObject.get_ap`` on a ranked list (× 100): precision ``ntrue/nall`` (no ε), the
    envelope sampled at x/100, summed in Python as tidecv does."""
    if n_gt == 0:
        return 0.0
    # tidecv's own curve, kept here on purpose: its matching can give a list more true positives than ground
    # truths (recall above 1), which the core's ranked lists refuse; the envelope sampling is the core's.
    ntrue = np.cumsum(tp)
    prec = ntrue / np.arange(1, len(tp) + 1)
    y = interpolated_precision(ntrue / n_gt, prec, TIDECV_RECALL_LEVELS).tolist()
    return sum(y) / len(y) * 100  # Python's left-to-right sum, as tidecv


class _Oracle:
    """Mean AP of the ranked lists tidecv's ``TIDERun.fix_errors`` builds for a set of fixed errors."""

    def __init__(
        self, a: Assignment, compat: str, class_ids: np.ndarray, rec_thrs: np.ndarray, err_gt_cls: np.ndarray
    ) -> None:
        self.a = a
        self.compat = compat  # "tide" or the protocol
        self.class_ids = class_ids
        self.rec_thrs = rec_thrs
        self.err_gt_cls = err_gt_cls
        self.n_err = int(a.err_key.max(initial=-1)) + 1

    def original(self) -> float:
        """AP as evaluated: every kept, non-ignored detection in push order."""
        a = self.a
        keep = a.state != _IGN
        push = np.flatnonzero(keep)
        o = np.lexsort((push if self.compat == "tide" else a.tie[keep], -a.score[keep]))
        cls, tp = a.cls[keep][o], (a.state[keep] == _TP)[o]
        if self.compat == "tide":
            return self._map_tide(cls, tp, dict(a.n_gt), list(a.class_order))
        return self._map_protocol(cls, tp, dict(a.n_gt))

    def fixed(
        self, fixed: np.ndarray, miss_fixed: np.ndarray, *, fp_transform: bool = False, fn: bool = False
    ) -> float:
        """AP with the errors flagged in ``fixed`` (per kept detection) and ``miss_fixed`` (per miss error)
        fixed: tidecv pushes the errors' points first (in error order), then the true positives."""
        a = self.a
        is_err = a.err >= 0
        tp_rows = a.state == _TP
        orig = is_err & ~fixed & (a.state == _FP)
        fix_tp = is_err & fixed & a.best & ((a.err == _CLS) | (a.err == _LOC))
        fix_cls = np.where(a.err == _CLS, self.err_gt_cls, a.cls)
        cls = np.concatenate([a.cls[orig], fix_cls[fix_tp], a.cls[tp_rows]])
        score = np.concatenate([a.score[orig], a.score[fix_tp], a.score[tp_rows]])
        n_o, n_f, n_t = int(orig.sum()), int(fix_tp.sum()), int(tp_rows.sum())
        tp = np.concatenate([np.zeros(n_o, bool), np.ones(n_f, bool), np.ones(n_t, bool)])
        if self.compat == "tide":
            key = np.concatenate([a.err_key[orig], a.err_key[fix_tp], self.n_err + np.flatnonzero(tp_rows)])
        else:  # pycocotools ranks ties by image, then by rank in the image: push order
            key = np.concatenate([a.tie[orig], a.tie[fix_tp], a.tie[tp_rows]])
        if fp_transform:
            score = np.where(tp, 1.0, 0.0)
        n_gt = dict(a.n_gt)
        for c in a.missed_cls[miss_fixed].tolist():
            n_gt[c] -= 1
        if fn:
            for c in a.fn_cls.tolist():
                n_gt[c] -= 1
        o = np.lexsort((key, -score))
        cls, tp, key = cls[o], tp[o], key[o]
        if self.compat == "tide":
            # tidecv's class order (it sums the class APs in it): first point among the errors, then the
            # classes with true positives, then the rest, each in the original order
            pos = {c: i for i, c in enumerate(a.class_order)}
            first: dict[int, float] = {}
            for c, k in zip(cls.tolist(), key.tolist()):
                r = float(k) if k < self.n_err else 1e12 + pos[c]
                first[c] = min(first.get(c, np.inf), r)
            classes = sorted(pos, key=lambda c: first.get(c, 2e12 + pos[c]))
            return self._map_tide(cls, tp, n_gt, classes)
        return self._map_protocol(cls, tp, n_gt)

    def _map_tide(self, cls: np.ndarray, tp: np.ndarray, n_gt: dict[int, int], classes: list[int]) -> float:
        aps = []
        for c in classes:
            m = cls == c
            if not m.any() and n_gt.get(c, 0) == 0:
                continue
            aps.append(_ap_tide(tp[m], n_gt.get(c, 0)))
        return sum(aps) / len(aps) if aps else 0.0

    def _map_protocol(self, cls: np.ndarray, tp: np.ndarray, n_gt: dict[int, int]) -> float:
        """The protocol's mAP over the classes of :attr:`class_ids` with ground truth, one ranked list each:
        pycocotools' (the mean of every class's interpolated precision at the recall levels) or VOCevaldet.m's
        (rec = tp/npos, prec = tp/(tp+fp), the mean of the classes' APs); −1 without such a class."""
        present = [c for c in self.class_ids.tolist() if n_gt.get(c, 0)]
        if not present:
            return -1.0
        hits = [tp[cls == c] for c in present]
        lists = presorted_lists([len(h) for h in hits], np.concatenate(hits), [n_gt[c] for c in present])
        if self.compat != "coco":
            return float(
                np.mean(lists.average_precision("voc07" if self.compat == "voc07" else "all_points"))
            )
        # (recall levels × classes, read level by level as pycocotools' precision array is)
        return float(np.mean(lists.interpolated_precision(self.rec_thrs, COCO_EPS).T.reshape(-1)))


def tide_errors(
    inp: TideInput,
    *,
    pos_threshold: float = 0.5,
    bg_threshold: float = 0.1,
    compat: str = "protocol",
    protocol: str = "coco",
    max_dets: int = 100,
    rec_thrs: Sequence[float] | np.ndarray | None = None,
) -> ErrorAnalysis:
    """The TIDE decomposition of ``inp`` (see the module docstring for every rule and the two ``compat``
    modes). ``rec_thrs``: the protocol's recall levels (default pycocotools' 101)."""
    if compat not in COMPAT_MODES:
        raise ValidationError(f"compat must be one of {COMPAT_MODES}, got {compat!r}")
    if not 0.0 <= bg_threshold <= pos_threshold <= 1.0:
        raise ValidationError(
            f"the background IoU {bg_threshold:g} must be from 0 to the foreground IoU {pos_threshold:g} (at "
            "most 1): bg_threshold <= pos_threshold, on the command line --errors-bg-iou <= --errors-fg-iou"
        )
    levels = COCO_RECALL_LEVELS if rec_thrs is None else np.asarray(rec_thrs, dtype=np.float64)
    if protocol not in PROTOCOLS:
        raise ValidationError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    mode = "tide" if compat == "tide" else protocol
    rule = "tide" if compat == "tide" else ("coco" if protocol == "coco" else "voc")
    a = assign(inp, pos_threshold, bg_threshold, max_dets, rule)
    class_ids = inp.class_ids if len(inp.class_ids) else np.unique(np.concatenate([inp.gt_cls, inp.dt_cls]))
    err_gt_cls = inp.gt_cls[np.maximum(a.err_gt, 0)] if len(inp.gt_cls) else np.zeros(len(a.err_gt), np.int64)
    oracle = _Oracle(a, mode, class_ids, levels, np.where(a.err_gt >= 0, err_gt_cls, -1))
    none = np.zeros(len(a.cls), dtype=bool)
    no_miss = np.zeros(len(a.missed_cls), dtype=bool)
    base = oracle.original()
    scale = 100.0 if compat == "tide" else 1.0

    def dap(code: int, det_sel: np.ndarray, miss_sel: np.ndarray) -> float:
        if code == _MISS:
            new = oracle.fixed(none, miss_sel)
        else:
            new = oracle.fixed((a.err == code) & det_sel, no_miss)
        return max(new - base, 0.0)

    every = np.ones(len(a.cls), dtype=bool)
    every_miss = np.ones(len(a.missed_cls), dtype=bool)
    main = {name: dap(code, every, every_miss) for code, name in enumerate(ERROR_TYPES)}
    special = {
        "fp": oracle.fixed(none, no_miss, fp_transform=True) - base,
        "fn": oracle.fixed(none, no_miss, fn=True) - base,
    }
    counts = {name: int((a.err == code).sum()) for code, name in enumerate(ERROR_TYPES)}
    counts["miss"] = len(a.missed_cls)
    by_size = {}
    for label, lo, hi in AREA_RANGES:
        sel = (a.area > lo) & (a.area <= hi)
        msel = (a.missed_area > lo) & (a.missed_area <= hi)
        by_size[label] = {name: dap(code, sel, msel) for code, name in enumerate(ERROR_TYPES)}
    return ErrorAnalysis(
        ap=base,
        main=main,
        special=special,
        counts=counts,
        by_size=by_size,
        compat=compat,
        pos_threshold=pos_threshold,
        bg_threshold=bg_threshold,
        scale=scale,
    )


def format_errors(e: ErrorAnalysis) -> list[str]:
    """The decomposition as text lines (dAP in AP points × 100, as TIDE prints them)."""
    d = e.to_dict()
    head = "".join(f"{n:>7}" for n in ERROR_TYPES)
    return [
        f"TIDE errors ({e.compat}, foreground IoU {e.pos_threshold:g}, background IoU {e.bg_threshold:g}); "
        f"AP {100 * d['ap']:.2f}",
        "  type " + head + "     fp     fn",
        "   dAP "
        + "".join(f"{100 * d['main'][n]:7.2f}" for n in ERROR_TYPES)
        + "".join(f"{100 * d['special'][n]:7.2f}" for n in ("fp", "fn")),
        " count " + "".join(f"{d['counts'][n]:7d}" for n in ERROR_TYPES),
    ]
