"""``deteval explain`` across protocols: pycocotools' ``coco`` and the Pascal VOC profiles on the same data.

The input is a COCO ground truth and results pair (a YOLO dataset is converted to one first), or VOC
annotations and detections (:func:`cross_data_from_voc`: the COCO side reads them as ``x = x1 − 1,
w = x2 − x1 + 1``). From COCO data, the VOC side reads the same objects in VOC form: a COCO box ``[x, y, w, h]`` becomes the 1-based inclusive pixel box
``[x + 1, y + 1, x + w, y + h]`` (the inverse of the usual VOC → COCO conversion ``x = x1 − 1, w = x2 − x1 + 1``),
``iscrowd`` becomes ``difficult``, images and categories keep their ids. A box narrower or lower than one
pixel has no VOC form and is refused.

The two protocols are points in seven rule dimensions, switched one at a time in this fixed order:

1. ``matcher`` — ``coco`` (each detection, in rank order, takes the unmatched regular ground truth of
   highest IoU ≥ t, the last one on ties; a crowd only if no regular one qualifies; a detection on a crowd is
   ignored and the crowd stays free) or ``voc`` (the devkit: the ground truth of maximum IoU among *all* of
   its class in the image, taken or not, the first on ties; difficult → ignored, taken → FP).
2. ``crowd IoU`` — a crowd's IoU is intersection / detection area (``crowd``, pycocotools) or the ordinary
   IoU (``plain``, how the devkit treats a difficult box).
3. ``iou`` — pycocotools' ``bbIou`` on ``[x, y, w, h]`` (``xywh``) or the devkit's pixel-inclusive IoU with
   ``+1`` on the VOC boxes (``+1``).
4. ``comparison`` — a match needs IoU ≥ t (pycocotools, devkit) or > t (py-faster-rcnn).
5. ``cap`` — at most 100 detections per image and category (pycocotools' maxDets) or all (VOC).
6. ``ranking`` — ties in score: ``coco`` (images in id order, then file order: pycocotools' accumulate),
   ``stable`` (file order: the devkit) or ``quicksort`` (numpy's default sort: py-faster-rcnn).
7. ``ap`` — ``coco101`` (precision ``tp/(tp+fp+ε)``, envelope, sampled at 101 recall levels), ``voc2010``
   (the all-point area) or ``voc07`` (11 points).

Both columns are kept all the way: ``mAP50`` is the score at IoU 0.5 (the VOC number at the VOC end),
``mAP50-95`` the mean over the ten thresholds ``linspace(0.5, 0.95, 10)`` (pycocotools' AP at the COCO end;
at the VOC end the VOC mAP at each of the ten thresholds, averaged, which no VOC tool prints). The ends are
:func:`~deteval.detection.coco.evaluate_coco`'s ``stats[0]``/``stats[1]`` and
:func:`~deteval.run.voc.evaluate_voc`'s mAP; a ``residual`` step would show if the step-wise evaluator
ever disagreed with them (the tests check it never does). Not covered: pycocotools' area range ``all``
ignores objects over 1e10 px², which the VOC side keeps (such boxes would show as a residual).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from deteval.core.levels import COCO_IOU_THRESHOLDS, COCO_RECALL_LEVELS, VOC_DEVKIT_LEVELS
from deteval.core.sorting import lex_order
from deteval.detection.voc import VOCDetections, VOCGroundTruth, rank_positions
from deteval.errors import ConfigError, ValidationError, first_true
from deteval.explain.yolo import (
    Explanation,
    class_lists,
    coco_class_table,
    residual_steps,
    tied_detections,
    walk_step,
)
from deteval.io.coco import CocoGroundTruth, CocoResults, load_coco_gt, load_coco_results
from deteval.match.greedy import greedy_match_pairs
from deteval.match.iou import bb_iou, xyxy_ioa, xyxy_iou
from deteval.match.rotated import quad_iou_pairs
from deteval.run.coco import evaluate_coco
from deteval.run.voc import evaluate_voc_at

THRESHOLDS = COCO_IOU_THRESHOLDS
RECALL_LEVELS = COCO_RECALL_LEVELS


@dataclass(frozen=True)
class CrossRules:
    """One point of the rule space shared by COCO and VOC (module docstring)."""

    matcher: Literal["coco", "voc"]
    crowd_iou: Literal["crowd", "plain"]
    iou: Literal["xywh", "+1", "obb", "quad"]
    comparison: Literal[">=", ">"]
    cap: Literal["100/image+class", "none"]
    ranking: Literal["coco", "stable", "quicksort"]
    ap: Literal["coco101", "voc2010", "voc07"]


CROSS_PROFILE_RULES: dict[str, CrossRules] = {
    "coco": CrossRules("coco", "crowd", "xywh", ">=", "100/image+class", "coco", "coco101"),
    "voc07": CrossRules("voc", "plain", "+1", ">=", "none", "stable", "voc07"),
    "voc2012": CrossRules("voc", "plain", "+1", ">=", "none", "stable", "voc2010"),
    "py_faster_rcnn": CrossRules("voc", "plain", "+1", ">", "none", "quicksort", "voc07"),
}
ORDER = ("matcher", "crowd_iou", "iou", "comparison", "cap", "ranking", "ap")
_TEXT = {
    "matcher": "matcher",
    "crowd_iou": "IoU with a crowd/difficult box",
    "iou": "IoU pixel convention",
    "comparison": "IoU comparison with the threshold",
    "cap": "detections kept per image and class",
    "ranking": "ranking of tied scores",
    "ap": "AP integration",
}


@dataclass(frozen=True)
class CrossData:
    """One dataset in both forms: COCO ``[x, y, w, h]`` and VOC 1-based inclusive boxes (module docstring)."""

    n_classes: int
    g_img: np.ndarray
    g_cls: np.ndarray
    g_xywh: np.ndarray
    g_voc: np.ndarray
    g_crowd: np.ndarray
    d_img: np.ndarray
    d_cls: np.ndarray
    d_xywh: np.ndarray
    d_voc: np.ndarray
    d_score: np.ndarray
    coco_gt: CocoGroundTruth
    coco_res: CocoResults
    #: oriented boxes: per IoU rule (``obb``, ``quad``) the ground truths' and detections' quadrilateral rows
    #: (:mod:`deteval.tables.quads`) the rotated IoU reads
    quads: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def voc_tables(self) -> tuple[VOCGroundTruth, VOCDetections]:
        """The VOC form as :func:`evaluate_voc` reads it (images and classes named by their COCO ids)."""
        images = [str(i) for i in self.coco_gt.image_ids.tolist()]
        classes = [str(c) for c in self.coco_gt.cat_ids.tolist()]
        gt = VOCGroundTruth.from_arrays(
            self.g_img, self.g_cls, self.g_voc, self.g_crowd, images=images, classes=classes
        )
        dets = VOCDetections.from_arrays(
            self.d_img, self.d_cls, self.d_voc, self.d_score, images=images, classes=classes
        )
        return gt, dets


def _voc_box(xywh: np.ndarray, what: str, source: str) -> np.ndarray:
    x, y, w, h = xywh.T
    if (i := first_true((w < 1) | (h < 1))) >= 0:
        raise ValidationError(
            f"{what} box {xywh[i].tolist()} is under one pixel wide or high: it has no VOC 1-based inclusive "
            "form, so the VOC profiles cannot score it",
            file=source,
            record=i,
        )
    return np.stack([x + 1, y + 1, x + w, y + h], axis=1)


def cross_data(gt: Any, results: Any) -> CrossData:
    """Load a COCO ground truth and results (paths, dicts, lists or loaded tables) into both forms."""
    g = load_coco_gt(gt)
    r = load_coco_results(results, g, iou_type="bbox")
    g_voc, d_voc = _voc_box(g.bbox, "ground-truth", g.source), _voc_box(r.bbox, "result", r.source)
    return _both(g, r, g_voc, d_voc, np.asarray(g.iscrowd).astype(bool))


def _both(
    g: CocoGroundTruth, r: CocoResults, g_voc: np.ndarray, d_voc: np.ndarray, crowd: np.ndarray
) -> CrossData:
    return CrossData(
        n_classes=len(g.cat_ids),
        g_img=g.img,
        g_cls=g.cat,
        g_xywh=g.bbox,
        g_voc=g_voc,
        g_crowd=crowd,
        d_img=r.img,
        d_cls=r.cat,
        d_xywh=r.bbox,
        d_voc=d_voc,
        d_score=r.score,
        coco_gt=g,
        coco_res=r,
    )


def cross_data_from_voc(gt: VOCGroundTruth, dets: VOCDetections) -> CrossData:
    """VOC tables in both forms: the COCO side reads ``[x1 − 1, y1 − 1, x2 − x1 + 1, y2 − y1 + 1]``, image ids
    1..N in the image-set order, category ids 1..K in :func:`evaluate_voc`'s class order, ``difficult`` as
    ``iscrowd``; the VOC side keeps the boxes as read."""
    classes = list(gt.classes) + [c for c in dets.classes if c not in set(gt.classes)]
    cpos = {c: k for k, c in enumerate(classes)}
    ipos = {name: i for i, name in enumerate(gt.images)}
    d_lab = np.array([cpos[dets.classes[k]] for k in dets.label.tolist()], dtype=np.int64)
    d_img = np.array([ipos[dets.images[i]] for i in dets.image.tolist()], dtype=np.int64)

    def xywh(b: np.ndarray) -> list[float]:
        return [float(b[0] - 1), float(b[1] - 1), float(b[2] - b[0] + 1), float(b[3] - b[1] + 1)]

    anns = []
    for n in range(len(gt)):
        box = xywh(gt.boxes[n])
        anns.append({"id": n + 1, "image_id": int(gt.image[n]) + 1, "category_id": int(gt.label[n]) + 1,
                     "bbox": box, "area": box[2] * box[3], "iscrowd": int(gt.difficult[n])})  # fmt: skip
    coco = {
        "images": [{"id": i + 1, "file_name": name} for i, name in enumerate(gt.images)],
        "categories": [{"id": k + 1, "name": c} for k, c in enumerate(classes)],
        "annotations": anns,
    }
    results = [
        {"image_id": int(d_img[n]) + 1, "category_id": int(d_lab[n]) + 1, "bbox": xywh(dets.boxes[n]),
         "score": float(dets.scores[n])}
        for n in range(len(dets))
    ]  # fmt: skip
    g = load_coco_gt(coco)
    r = load_coco_results(results, g, iou_type="bbox")
    return _both(g, r, gt.boxes, dets.boxes, gt.difficult.astype(bool))


# ------------------------------------------------------------------------------------ step-wise evaluator
def _positions(data: CrossData, ranking: str) -> np.ndarray:
    """Each detection's rank within its class (0 = first) under the ranking rule."""
    sc, cls = data.d_score, data.d_cls
    if ranking != "coco":
        return rank_positions(sc, cls, ranking)  # type: ignore[arg-type]
    # pycocotools: each image's detections (stable by score within the image) in image order, then one
    # stable sort by score.
    perm = lex_order((-sc, data.d_img))
    pos = np.empty(len(sc), dtype=np.int64)
    pos[perm] = rank_positions(sc[perm], cls[perm], "stable")
    return pos


def _kept(data: CrossData, pos: np.ndarray, cap: str) -> np.ndarray:
    """Boolean mask of the detections within pycocotools' 100 per image and category (or all)."""
    if cap == "none":
        return np.ones(len(pos), dtype=bool)
    # each detection's rank in its (image, category) list, ordered by ``pos`` (ties in file order)
    return rank_positions(-pos, data.d_img * data.n_classes + data.d_cls, "stable") < 100


def _pair_iou(data: CrossData, gi: np.ndarray, di: np.ndarray, rules: CrossRules) -> np.ndarray:
    """IoU of each pair (ground truth ``gi[p]``, detection ``di[p]``) under the IoU and crowd-IoU rules, the
    element-wise form of the matrices :func:`greedy_match` reads (the same operations on the same doubles)."""
    if rules.iou in ("obb", "quad"):  # (oriented boxes: the rotated IoU, crowd flags per ground-truth row)
        gq, dq = data.quads[rules.iou]
        flags = data.g_crowd if rules.crowd_iou == "crowd" else np.zeros(len(gq), dtype=bool)
        return quad_iou_pairs(dq, gq, flags, di, gi)
    crowd = data.g_crowd[gi] if rules.crowd_iou == "crowd" else np.zeros(len(gi), dtype=bool)
    if rules.iou == "xywh":
        return bb_iou(data.d_xywh[di], data.g_xywh[gi], crowd)
    g, d = data.g_voc[gi], data.d_voc[di]
    iou = xyxy_iou(g, d, 1.0)
    if crowd.any():
        # a crowd region: intersection over the detection's (+1 pixel) area
        iou = np.where(crowd, xyxy_ioa(g, d, 1.0), iou)
    return iou


@dataclass
class _Point:
    map5095: float | None
    map50: float | None
    outcome: np.ndarray  # thresholds × detections (−2: cut by the cap)
    ap: np.ndarray  # thresholds × classes (NaN where undefined)


def _memo(memo: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """``memo[key]``, made once: the walk's points share their ranking, cap, pairs, IoUs and matches."""
    if key not in memo:
        memo[key] = make()
    return memo[key]


def _pairs(data: CrossData, pos: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, ...]:
    """The kept detections in (image and class, rank) order and every (detection, ground truth) pair of one
    image and class: detections block by block in rank order, ground truths in their block's order, as
    :func:`greedy_match_pairs` walks them. Returns (kept, d_order, dk, pair_det, pair_gt)."""
    g_key = data.g_img * data.n_classes + data.g_cls
    d_key = data.d_img * data.n_classes + data.d_cls
    g_order = np.argsort(g_key, kind="stable")
    kept = np.flatnonzero(keep)
    d_order = kept[lex_order((pos[kept], d_key[kept]))]
    gk, dk = g_key[g_order], d_key[d_order]
    lo = np.searchsorted(gk, dk)
    count = np.searchsorted(gk, dk, side="right") - lo
    pair_det = np.repeat(np.arange(len(d_order)), count)
    pair_gt = g_order[np.repeat(lo - (np.cumsum(count) - count), count) + np.arange(len(pair_det))]
    return kept, d_order, dk, pair_det, pair_gt


def _matched(
    data: CrossData, rules: CrossRules, memo: dict[Any, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank positions, kept detections, outcome thresholds × detections with −2 for those cut by the cap)
    under every rule but the AP integration."""
    pos = _memo(memo, ("pos", rules.ranking), lambda: _positions(data, rules.ranking))
    keep = _memo(memo, ("keep", rules.ranking, rules.cap), lambda: _kept(data, pos, rules.cap))
    kept, d_order, dk, pair_det, pair_gt = _memo(
        memo, ("pairs", rules.ranking, rules.cap), lambda: _pairs(data, pos, keep)
    )
    iou = _memo(
        memo,
        ("iou", rules.ranking, rules.cap, rules.iou, rules.crowd_iou),
        lambda: _pair_iou(data, pair_gt, d_order[pair_det], rules),
    )
    near = iou >= THRESHOLDS.min()
    outcome = np.full((len(THRESHOLDS), len(pos)), -2, dtype=np.int8)
    outcome[:, d_order] = greedy_match_pairs(
        pair_det[near], pair_gt[near], iou[near], dk, data.g_crowd, THRESHOLDS, rules.matcher,
        rules.comparison == ">",
    )  # fmt: skip
    return pos, kept, outcome


def _score(data: CrossData, rules: CrossRules, memo: dict[Any, Any] | None = None) -> _Point:
    """One point of the rule space scored; ``memo`` shares the work of points with rules in common."""
    shared: dict[Any, Any] = {} if memo is None else memo
    pos, kept, outcome = _memo(
        shared, ("match", replace(rules, ap="coco101")), lambda: _matched(data, rules, shared)
    )
    npos = np.bincount(data.g_cls[~data.g_crowd], minlength=data.n_classes)
    # the kept detections grouped by class, ranked within it
    order = kept[lex_order((pos[kept], data.d_cls[kept]))]
    ranked, cls = outcome[:, order], data.d_cls[order]
    if rules.ap == "coco101":
        return _coco_ap(outcome, ranked, cls, npos)
    aps = np.full((len(THRESHOLDS), data.n_classes), np.nan)
    classes = np.flatnonzero(npos > 0)
    if not classes.size:
        return _Point(None, None, outcome, aps)
    lists = class_lists(ranked, cls, npos)
    if rules.ap == "voc07":
        ap = lists.average_precision("voc07", levels=VOC_DEVKIT_LEVELS)
    else:
        ap = lists.average_precision("all_points")
    aps[:, classes] = ap.reshape(len(THRESHOLDS), len(classes))
    maps = [float(np.mean(aps[t, classes])) for t in range(len(THRESHOLDS))]
    return _Point(float(np.mean(maps)), maps[0], outcome, aps)


def _coco_ap(outcome: np.ndarray, ranked: np.ndarray, cls: np.ndarray, npos: np.ndarray) -> _Point:
    """pycocotools' accumulate on the precision table [T, R, K] (−1 for classes without regular objects) of
    the ``ranked`` outcomes of classes ``cls``, and its summary: −1 where no class has one (pycocotools'
    "undefined", as ``deteval coco`` prints it)."""
    table = coco_class_table(ranked, cls, npos, RECALL_LEVELS)
    s, s50 = table[table > -1], table[0][table[0] > -1]
    ap = table.mean(axis=1)
    ap = np.where(ap < 0, np.nan, ap)
    if not s.size:
        return _Point(-1.0, -1.0, outcome, ap)
    return _Point(float(np.mean(s)), float(np.mean(s50)), outcome, ap)


# ------------------------------------------------------------------------------------------------ explain
def _ends(data: CrossData, profile: str) -> tuple[float | None, float | None]:
    """(mAP50-95, mAP50) from the protocol's own evaluator."""
    if profile == "coco":
        stats = evaluate_coco(data.coco_gt, data.coco_res).stats
        return float(stats[0]), float(stats[1])
    gt, dets = data.voc_tables()
    metric = "voc2010" if profile == "voc2012" else "voc07"
    prof = "py_faster_rcnn" if profile == "py_faster_rcnn" else "voc_devkit"
    maps = [
        r.summary["map"] for r in evaluate_voc_at(gt, dets, THRESHOLDS.tolist(), metric=metric, profile=prof)
    ]
    if maps[0] is None:
        return None, None
    return float(np.mean(maps)), maps[0]


def _count(dim: str, data: CrossData, before: _Point, after: _Point) -> tuple[int, str]:
    if dim == "cap":
        cut = int(((before.outcome[0] == -2) | (after.outcome[0] == -2)).sum())
        return cut, "detections beyond the cap"
    if dim in ("ranking", "ap"):
        same = (before.ap == after.ap) | (np.isnan(before.ap) & np.isnan(after.ap))
        what = "AP values (class × IoU threshold) changed"
        if dim == "ranking":
            what += f"; {tied_detections(data.d_cls, data.d_score)} detections share their class and score with another"
        return int((~same).sum()), what
    changed = int((before.outcome != after.outcome).any(axis=0).sum())
    if dim == "crowd_iou":
        return changed, f"detections matched differently ({int(data.g_crowd.sum())} crowd/difficult boxes)"
    return changed, "detections matched differently"


def explain_cross(
    data: CrossData,
    profile_from: str,
    profile_to: str,
    *,
    rules: Mapping[str, CrossRules] = CROSS_PROFILE_RULES,
    ends: Callable[[str], tuple[float | None, float | None]] | None = None,
) -> Explanation:
    """Attribute the difference between ``coco`` and a VOC profile (or two of them) rule by rule.

    ``rules`` and ``ends`` name another pair of protocols in the same rule space and give their own
    evaluators' (mAP50-95, mAP50) (the oriented-box walk, :mod:`deteval.explain.obb`); by default the
    profiles of :data:`CROSS_PROFILE_RULES`, scored by pycocotools' and the VOC devkit's evaluators."""
    for p in (profile_from, profile_to):
        if p not in rules:
            raise ConfigError(f"unknown profile {p!r}; choose one of {', '.join(rules)}")
    ra, rb = rules[profile_from], rules[profile_to]
    end_of = ends if ends is not None else (lambda p: _ends(data, p))
    a, b = end_of(profile_from), end_of(profile_to)
    cur = ra
    memo: dict[Any, Any] = {}
    prev = _score(data, cur, memo)
    first = prev
    steps: list[dict[str, Any]] = []
    for dim in ORDER:
        want = getattr(rb, dim)
        if getattr(cur, dim) == want:
            continue
        nxt_rules = replace(cur, **{dim: want})
        nxt = _score(data, nxt_rules, memo)
        count, what = _count(dim, data, prev, nxt)
        rule = f"{_TEXT[dim]}: {getattr(cur, dim)} → {want}"
        steps.append(
            walk_step(rule, _diff(nxt.map5095, prev.map5095), _diff(nxt.map50, prev.map50), count, what)
        )
        cur, prev = nxt_rules, nxt
    start = {"profile": profile_from, "mAP50-95": a[0], "mAP50": a[1]}
    end = {"profile": profile_to, "mAP50-95": b[0], "mAP50": b[1]}
    steps += residual_steps(
        (first.map5095, first.map50),
        (prev.map5095, prev.map50),
        start,
        end,
        "protocol",
        "(a deteval bug, or an object over pycocotools' 1e10 px² area range)",
    )
    return Explanation(start, end, steps)


def _diff(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else x - y
