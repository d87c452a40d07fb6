"""``deteval explain`` for the YOLO profiles: why two evaluators give two numbers, one rule at a time.

Every YOLO profile is a point in six rule dimensions. Walking from profile A to profile B, the dimensions
are switched one at a time in this fixed order, each step re-scoring the same data with one more rule of B:

0. ``exif`` — how image sizes follow the EXIF orientation (:data:`deteval.io.yolo.ExifRule`: Ultralytics ≤
   8.4.173 ``jpeg-6-8``, later versions, COCO and supervision ``swap-5-8``); the step is shown only when some
   image is sized differently by the two rules.
1. ``matcher`` — ``unique`` (Ultralytics ≤ 8.4.175: all pairs ≥ t by IoU, one ``np.unique`` per side),
   ``greedy`` (Ultralytics ≥ 8.4.176: detections in rank order take the best unclaimed label, lowest index on
   IoU ties), ``coco`` (COCOeval: the same greedy walk, the last ground truth winning IoU ties).
2. ``sentinel`` — the end of Ultralytics' recall curve: ``[…, 1]`` (≤ 8.4.36) or ``[…, r_last, 1]``. COCO
   and supervision count as ``[…, r_last, 1]``: their precision is 0 beyond the last recall too, so the walk
   from Ultralytics ≤ 8.4.36 to COCO shows this rule as its own step.
3. ``ap`` — the integration and ranking: ``ultralytics`` (``np.argsort(-conf)``, precision envelope,
   trapezoid over ``np.interp`` at 101 recalls), ``coco`` (stable ranking in image order, precision
   ``tp/(tp+fp+eps)``, envelope, 101 recall thresholds sampled with ``searchsorted``), ``supervision`` (the
   COCO table kept in float32 and averaged per IoU threshold first).
4. ``float32`` — IoU, thresholds and scores in float32 with Ultralytics' ``+1e-7`` (True) or pycocotools'
   float64 IoU on ``[x, y, w, h]`` (False). For oriented boxes (``iou_type="obb"``) this is the IoU kernel:
   Ultralytics' float32 ProbIoU (True) or the COCO-style protocol's polygon IoU in float64 (False)
   (:func:`obb_kernel`).
5. ``cap`` — at most 300 detections per image (Ultralytics) or 100 per image and class (COCO maxDets).

Then the class set (both sides score only the classes with at least one label; predicted classes without a
label are counted, they change nothing) and crowd regions (a YOLO dataset has none) are reported with
their counts. The steps' deltas are differences of consecutive scores, so they add up to B − A (to the last
float64 rounding; the test checks 1e-12). A ``residual`` step would appear if deteval's own profile
evaluator and this step-wise evaluator ever disagreed at an end; the tests check that it never appears.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from deteval.core.levels import COCO_RECALL_LEVELS
from deteval.core.lists import COCO_EPS, RankedLists, presorted_lists
from deteval.core.sorting import lex_order
from deteval.detection.boxes import convert_boxes
from deteval.detection.supervision_profile import masked_mean
from deteval.detection.ultralytics import (
    IOU_THRESHOLDS_32,
    IOU_THRESHOLDS_64,
    ap_per_class,
    match_image,
    match_pairs,
    pair_index,
    paired_box_iou,
    pairs_at_least,
    probiou,
)
from deteval.detection.ultralytics import PROFILES as ULTRA
from deteval.errors import ConfigError
from deteval.io.yolo import YoloDataset, for_exif_rule
from deteval.io.yolo_obb import obb_corners
from deteval.match.greedy import greedy_match_pairs
from deteval.match.iou import bb_iou
from deteval.match.rotated import quad_iou_pairs
from deteval.run.yolo import canonical_profile, evaluate_yolo
from deteval.tables.boxes import BoxTable
from deteval.tables.quads import corners_obb, obb_quads

#: The IoU of (label, detection) pairs given by their row indices, under the ``float32`` rule (True: the
#: Ultralytics kernel, False: the COCO one); None: the box IoUs of the detect task.
PairKernel = Callable[[np.ndarray, np.ndarray, bool], np.ndarray]


@dataclass(frozen=True)
class Rules:
    """One point of the rule space (see the module docstring)."""

    matcher: Literal["unique", "greedy", "coco"]
    sentinel: Literal["one", "repeat_last"]
    ap: Literal["ultralytics", "coco", "supervision"]
    float32: bool
    cap: Literal["300/image", "100/image+class"]
    exif: str = "swap-5-8"  # (deteval.io.yolo.ExifRule: how image sizes follow the EXIF orientation)


PROFILE_RULES: dict[str, Rules] = {
    "ultralytics-8.0": Rules(
        "unique", "one", "ultralytics", True, "300/image", ULTRA["ultralytics-8.0"].exif
    ),
    "ultralytics-8.4.37": Rules(
        "unique", "repeat_last", "ultralytics", True, "300/image", ULTRA["ultralytics-8.4.37"].exif
    ),
    "ultralytics-8.4.176": Rules(
        "greedy", "repeat_last", "ultralytics", True, "300/image", ULTRA["ultralytics-8.4.176"].exif
    ),
    "coco": Rules("coco", "repeat_last", "coco", False, "100/image+class"),
    "supervision": Rules("coco", "repeat_last", "supervision", False, "100/image+class"),
}
ORDER = ("exif", "matcher", "sentinel", "ap", "float32", "cap")
_RULE_TEXT = {
    "exif": "image sizes under the EXIF orientation (Ultralytics' exif_size)",
    "matcher": "matcher",
    "sentinel": "end sentinel of the recall curve",
    "ap": "AP integration and ranking",
    "float32": "float32 IoU, thresholds and scores",
    "cap": "detections kept per image",
}
#: The ``float32`` rule of an oriented-box walk: which IoU kernel.
_OBB_KERNEL_TEXT = {True: "ProbIoU (float32)", False: "polygon IoU (float64)"}


# ------------------------------------------------------------------------------------ step-wise evaluator
@dataclass
class _Matched:
    img: np.ndarray
    cls: np.ndarray
    conf: np.ndarray
    tp: np.ndarray
    capped: int
    near: int


def _kept(dt: BoxTable, rules: Rules) -> tuple[np.ndarray, int]:
    """Indices of the detections kept, in (image, descending score, file order) order; and how many cut.

    The order within an image uses the scores as read (float64), as the Ultralytics profiles'
    ``match_split`` does; float32 scores only enter the ranking across images.
    """
    conf = dt.conf
    if rules.cap == "300/image":
        order = lex_order((-conf, dt.img))
        key, limit = dt.img[order], 300
    else:
        order = lex_order((-conf, dt.cls, dt.img))
        key, limit = dt.img[order] * (int(dt.cls.max(initial=0)) + 1) + dt.cls[order], 100
    starts = np.r_[0, np.flatnonzero(np.diff(key)) + 1] if len(key) else np.zeros(0, dtype=np.int64)
    rank = np.arange(len(key)) - np.repeat(starts, np.diff(np.r_[starts, len(key)]))
    keep = order[rank < limit]
    keep = keep[lex_order((-conf[keep], dt.img[keep]))]
    return keep, int(len(order) - len(keep))


def _match_all(gt: BoxTable, dt: BoxTable, rules: Rules, kernel: PairKernel | None = None) -> _Matched:
    """The step's matcher on every image at once: the pairs of one image and class (their IoU under the
    step's IoU rule, element-wise), the Ultralytics matchers as columns, COCOeval's walk with
    :func:`greedy_match_pairs` (images as blocks); images where IoU ties decide Ultralytics' ``unique``
    matcher go through :func:`match_image` as one image."""
    keep, capped = _kept(dt, rules)
    thr = IOU_THRESHOLDS_32 if rules.float32 else IOU_THRESHOLDS_64
    g_order = np.argsort(gt.img, kind="stable")
    det, label = pair_index(gt, dt, g_order, keep)

    def pair_iou(gi: np.ndarray, di: np.ndarray) -> np.ndarray:
        """The step's IoU of the pairs (label ``gi[p]``, detection ``di[p]``), element-wise."""
        if kernel is not None:
            return kernel(gi, di, rules.float32)
        if rules.float32:
            return paired_box_iou(gt.xyxy[gi], dt.xyxy[di])
        return _coco_pair_iou(gt.xyxy[gi], dt.xyxy[di])

    iou = pair_iou(label, keep[det])
    near = int((np.abs(iou.astype(np.float64)[:, None] - IOU_THRESHOLDS_64) < 1e-6).sum())
    pairs = pairs_at_least(det, label, iou, thr.min(), dt.img[keep[det]])
    if rules.matcher == "coco":  # (a YOLO dataset has no crowd regions)
        outcome = greedy_match_pairs(
            pairs.det, pairs.label, pairs.iou, dt.img[keep], np.zeros(len(gt), dtype=bool), thr, "coco"
        )
        tp = (outcome == 1).T
    else:
        tp = match_pairs(pairs, len(keep), len(gt), thr, rules.matcher)
        if rules.matcher == "unique":
            for i in np.unique(pairs.image[pairs.tied]).tolist():
                gi, rows = g_order[gt.img[g_order] == i], np.flatnonzero(dt.img[keep] == i)
                di = keep[rows]
                # (labels × detections, from the pairs' IoU: the same operations as the matrix's)
                m = pair_iou(np.repeat(gi, len(di)), np.tile(di, len(gi))).reshape(len(gi), len(di))
                tp[rows] = match_image(m, gt.cls[gi], dt.cls[di], thr, "unique")
    conf = dt.conf[keep].astype(np.float32) if rules.float32 else dt.conf[keep]
    return _Matched(dt.img[keep], dt.cls[keep], conf, tp, capped, near)


def _coco_pair_iou(g: np.ndarray, d: np.ndarray) -> np.ndarray:
    """pycocotools' bbIou of the pairs (``g[p]``, ``d[p]``), element-wise, on the ``[x, y, w, h]`` boxes the COCO
    conversion writes (a YOLO dataset has no crowd regions)."""
    no_crowd = np.zeros(len(g), dtype=bool)
    return bb_iou(convert_boxes(d, "xyxy", "xywh"), convert_boxes(g, "xyxy", "xywh"), no_crowd)


def _coco_table(m: _Matched, gt: BoxTable, n_classes: int) -> np.ndarray:
    """COCOeval's precision table [T, R, K] (−1 for classes without labels)."""
    # by class, then descending score, ties in image order (a stable sort of each class's detections)
    order = np.lexsort((-m.conf, m.cls))
    npos = np.bincount(np.asarray(gt.cls, dtype=np.int64), minlength=n_classes)[:n_classes]
    return coco_class_table(m.tp[order].T, m.cls[order], npos, COCO_RECALL_LEVELS)


def coco_class_table(
    outcomes: np.ndarray, cls: np.ndarray, npos: np.ndarray, levels: np.ndarray
) -> np.ndarray:
    """pycocotools' accumulate for every class at once: the [T, R, K] precision table (−1 for the classes
    without objects, ``npos == 0``), each class's precision ``tp/(tp+fp+ε)`` enveloped and sampled at the
    recall ``levels`` (the core's ranked lists, one per threshold and class).

    ``outcomes`` is (T, n) for detections grouped by class (``cls``, ascending) and ranked within it: True or
    1 a true positive, False or 0 a false positive, −1 ignored; ``npos`` each of the K classes' object count."""
    n_t = outcomes.shape[0]
    table = -np.ones((n_t, len(levels), len(npos)))
    classes = np.flatnonzero(npos > 0)
    if not classes.size:
        return table
    precision = class_lists(outcomes, cls, npos).interpolated_precision(levels, COCO_EPS)
    table[:, :, classes] = precision.reshape(n_t, len(classes), -1).transpose(0, 2, 1)
    return table


def class_lists(outcomes: np.ndarray, cls: np.ndarray, npos: np.ndarray) -> RankedLists:
    """One ranked list per (threshold, class with objects: ``npos > 0``), threshold-major, from the outcomes
    of :func:`coco_class_table` (detections grouped by class and ranked within it; the other classes' are left
    out)."""
    classes = np.flatnonzero(npos > 0)
    cls = np.asarray(cls, dtype=np.int64)
    mine = np.isin(cls, classes)
    counts = np.bincount(cls[mine], minlength=len(npos))[classes]
    flat = np.asarray(outcomes)[:, mine].reshape(-1)
    ignored = None if flat.dtype == np.bool_ else flat == -1
    n_t = outcomes.shape[0]
    return presorted_lists(np.tile(counts, n_t), flat == 1, np.tile(npos[classes], n_t), ignored)


def coco_precision_at_levels(outcomes: np.ndarray, npos: int, levels: np.ndarray) -> np.ndarray:
    """pycocotools' accumulate for one category's ranked detections at every IoU threshold: (T, R) precision
    (:func:`coco_class_table` of one class; −1 throughout where ``npos`` is 0, as pycocotools leaves it).

    ``outcomes`` is (T, n): True or 1 a true positive, False or 0 a false positive, −1 ignored."""
    one = np.zeros(np.shape(outcomes)[1], dtype=np.int64)
    return coco_class_table(outcomes, one, np.array([npos], dtype=np.int64), levels)[:, :, 0]


def score(
    gt: BoxTable, dt: BoxTable, n_classes: int, rules: Rules, kernel: PairKernel | None = None
) -> tuple[float, float, _Matched, Any]:
    """(mAP50-95, mAP50) of one point of the rule space, with the matcher output and the AP table;
    ``kernel``: the pairs' IoU of another geometry (:func:`obb_kernel`)."""
    m = _match_all(gt, dt, rules, kernel)
    if rules.ap == "ultralytics":
        u = ap_per_class(m.tp, m.conf, m.cls, gt.cls, rules.sentinel)
        full = np.full((n_classes, 10), np.nan)
        full[u.classes] = u.ap
        return u.map, u.map50, m, full
    table = _coco_table(m, gt, n_classes)
    if rules.ap == "coco":
        s, s50 = table[table > -1], table[0][table[0] > -1]
        return (float(np.mean(s)) if s.size else -1.0), (float(np.mean(s50)) if s50.size else -1.0), m, table
    t32 = table.astype(np.float32)
    scores = masked_mean(t32, t32 != -1, (1, 2))
    valid = scores[scores > -1]
    return (float(valid.mean()) if len(valid) else -1.0), float(scores[0]), m, t32


# ------------------------------------------------------------------------------------------------ explain
@dataclass
class Explanation:
    """``from``/``to`` (profile, mAP50-95, mAP50) and the steps between them."""

    start: dict[str, Any]
    end: dict[str, Any]
    steps: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.start, "to": self.end, "steps": self.steps}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent) + "\n"

    def to_text(self) -> str:
        a, b = self.start, self.end

        def num(v: float | None, sign: str = "") -> str:
            return f"{'—':>12}" if v is None else f"{v:{sign}12.5f}"

        out = [
            f"{'':62}{'mAP50-95':>12}{'mAP50':>12}",
            f"{'from ' + a['profile']:62}{num(a['mAP50-95'])}{num(a['mAP50'])}",
        ]
        for s in self.steps:
            d = s["delta"]
            out.append(
                f"  {s['rule']:60}{num(d['mAP50-95'], '+')}{num(d['mAP50'], '+')}   {s['count']} {s['what']}"
            )
        out.append(f"{'to ' + b['profile']:62}{num(b['mAP50-95'])}{num(b['mAP50'])}")
        return "\n".join(out) + "\n"


def _class_ap(scored: tuple) -> np.ndarray:
    """Per class and IoU threshold, the AP a scored point holds (classes × 10; NaN where undefined)."""
    table = np.asarray(scored[3], dtype=np.float64)
    if table.ndim == 3:  # COCO's [T, R, K]
        ap = table.mean(axis=1).T
        return np.where(ap < 0, np.nan, ap)
    return table


def tied_detections(cls: np.ndarray, score: np.ndarray) -> int:
    """Detections whose (class, score) another detection also has: the ranks a sort may permute."""
    if len(score) == 0:
        return 0
    # (class, score) pairs sorted once as float64 values; a run of equal neighbours is a group of ties (equal
    # as values: −0.0 ties with 0.0, a NaN with nothing)
    c = np.asarray(cls).astype(np.float64)
    s = np.asarray(score).astype(np.float64)
    order = np.lexsort((s, c))
    same = (c[order][1:] == c[order][:-1]) & (s[order][1:] == s[order][:-1])
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] = same
    tied[:-1] |= same
    return int(tied.sum())


def _count(rule: str, before: tuple, after: tuple) -> tuple[int, str]:
    mb, ma = before[2], after[2]
    if rule == "cap":
        return max(mb.capped, ma.capped), "detections beyond the cap"
    if rule in ("sentinel", "ap"):
        a, b = _class_ap(before), _class_ap(after)
        changed = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        what = "AP values (class × IoU threshold) changed"
        if rule == "ap":
            what += f"; {tied_detections(ma.cls, ma.conf)} detections share their class and score with another (ranking ties)"
        return int(changed.sum()), what
    same = len(mb.tp) == len(ma.tp) and np.array_equal(mb.img, ma.img) and np.array_equal(mb.cls, ma.cls)
    changed = int((mb.tp != ma.tp).any(1).sum()) if same else -1
    if rule == "float32":
        return (
            changed,
            f"detections matched differently ({max(mb.near, ma.near)} IoUs within 1e-6 of a threshold)",
        )
    return changed, "detections matched differently"


def _walkable(iou_type: str) -> str:
    if iou_type == "obb":
        return "coco and the Ultralytics profiles here (dota_devkit: deteval.explain.obb.explain_obb)"
    return "the YOLO profiles (coco, supervision, ultralytics*) and the VOC ones"


def _resized(a: YoloDataset, b: YoloDataset, preds: BoxTable) -> int:
    """Images with labels or predictions whose size differs between two EXIF rules (their sizes are read)."""
    used = np.unique(np.concatenate([a.labels.img, preds.img]))
    return int(sum(a.image_size(int(i)) != b.image_size(int(i)) for i in used))


def obb_kernel(ds: YoloDataset, preds: BoxTable) -> PairKernel:
    """The oriented-box IoU of (label, detection) pairs of a YOLO-OBB split, each quadrilateral read as
    :func:`~deteval.tables.quads.corners_obb` reads it: Ultralytics' :func:`probiou` of the ``(cx, cy, w, h,
    r)`` boxes (the ``float32`` rule, the OBB validator's) or the rotated polygon IoU of
    :func:`~deteval.match.rotated.quad_iou_pairs` on their corners (the COCO-style OBB protocol's, no crowds),
    the values each profile's own evaluator computes for the same pairs."""
    g = corners_obb(obb_corners(ds.labels, ds, "labels"))
    d = corners_obb(obb_corners(preds, ds, "predictions"))
    gq, dq = obb_quads(g), obb_quads(d)
    no_crowd = np.zeros(len(gq), dtype=bool)

    def pair_iou(gi: np.ndarray, di: np.ndarray, float32: bool) -> np.ndarray:
        return probiou(g[gi], d[di]) if float32 else quad_iou_pairs(dq, gq, no_crowd, di, gi)

    return pair_iou


def explain(
    ds: YoloDataset, preds: BoxTable, profile_from: str, profile_to: str, *, iou_type: str = "bbox"
) -> Explanation:
    """Attribute the difference between two profiles' mAP50-95 and mAP50 rule by rule (module docstring).

    ``iou_type="obb"``: a YOLO-OBB split (:mod:`deteval.io.yolo_obb`); the ``float32`` rule is then the IoU
    kernel, Ultralytics' float32 ProbIoU against the COCO-style protocol's polygon IoU (:func:`obb_kernel`).
    """
    a_name, b_name = canonical_profile(profile_from), canonical_profile(profile_to)
    for name, given in ((a_name, profile_from), (b_name, profile_to)):
        if name not in PROFILE_RULES or (iou_type == "obb" and name == "supervision"):
            raise ConfigError(f"explain walks between {_walkable(iou_type)}, not {given}")
    ra, rb = PROFILE_RULES[a_name], PROFILE_RULES[b_name]
    k = len(ds.names)
    # The labels and predictions in pixels under each EXIF rule of the walk.
    tables = {r.exif: for_exif_rule(ds, preds, r.exif) for r in (ra, rb)}
    kernels: dict[str, PairKernel | None] = {
        e: obb_kernel(*t) if iou_type == "obb" else None for e, t in tables.items()
    }
    text = dict(_RULE_TEXT, float32="IoU kernel") if iou_type == "obb" else _RULE_TEXT

    def shown(dim: str, value: Any) -> Any:
        return _OBB_KERNEL_TEXT[value] if iou_type == "obb" and dim == "float32" else value

    res_a = evaluate_yolo(ds, preds, a_name, iou_type=iou_type)
    res_b = evaluate_yolo(ds, preds, b_name, iou_type=iou_type)
    steps = []
    cur = ra
    prev = score(tables[cur.exif][0].labels, tables[cur.exif][1], k, cur, kernels[cur.exif])
    first = (prev[0], prev[1])
    gt = tables[rb.exif][0].labels
    for dim in ORDER:
        want = getattr(rb, dim)
        if getattr(cur, dim) == want:
            continue
        nxt_rules = replace(cur, **{dim: want})
        if dim == "exif":
            count, what = _resized(tables[cur.exif][0], tables[want][0], preds), "images sized differently"
            if not count:  # (no image has an orientation the two rules read differently: no step)
                cur = nxt_rules
                continue
        t = tables[nxt_rules.exif]
        nxt = score(t[0].labels, t[1], k, nxt_rules, kernels[nxt_rules.exif])
        if dim != "exif":
            count, what = _count(dim, prev, nxt)
        rule = f"{text[dim]}: {shown(dim, getattr(cur, dim))} → {shown(dim, want)}"
        steps.append(walk_step(rule, nxt[0] - prev[0], nxt[1] - prev[1], count, what))
        cur, prev = nxt_rules, nxt
    steps += _bookkeeping_steps(ds, preds, gt)
    start, end = _end(profile_from, res_a), _end(profile_to, res_b)
    steps += residual_steps(first, (prev[0], prev[1]), start, end)
    return Explanation(start, end, steps)


def walk_step(
    rule: str, delta_95: float | None, delta_50: float | None, count: int, what: str
) -> dict[str, Any]:
    """One step of a walk: the rule changed, its effect on mAP50-95 and mAP50 (None where a number is not
    defined), and what it touched."""
    return {"rule": rule, "delta": {"mAP50-95": delta_95, "mAP50": delta_50}, "count": count, "what": what}


def _end(profile: str, res: Any) -> dict[str, Any]:
    """An end of the walk: the profile as given and its own evaluation's two numbers."""
    return {"profile": profile, "mAP50-95": res.summary["mAP50-95"], "mAP50": res.summary["mAP50"]}


def _bookkeeping_steps(ds: YoloDataset, preds: BoxTable, gt: BoxTable) -> list[dict[str, Any]]:
    """The steps that change no number but say what both ends leave out: classes only in the predictions,
    and exact duplicate labels (dropped on both sides, as Ultralytics drops them)."""
    only_pred = sorted(set(preds.cls.tolist()) - set(gt.cls.tolist()))
    steps = [
        walk_step(
            "class set: classes with ≥ 1 label on both sides",
            0.0,
            0.0,
            len(only_pred),
            "classes only in the predictions (left out by both)",
        )
    ]
    if ds.duplicates_dropped:
        steps.append(
            walk_step(
                "duplicate labels: dropped on both sides (Ultralytics' rule; pycocotools would keep them)",
                0.0,
                0.0,
                ds.duplicates_dropped,
                "exact duplicate label rows dropped",
            )
        )
    return steps


def residual_steps(
    first: tuple[float | None, float | None],
    last: tuple[float | None, float | None],
    start: dict[str, Any],
    end: dict[str, Any],
    whose: str = "profile",
    what: str = "(a deteval bug if ever non-zero)",
) -> list[dict[str, Any]]:
    """A residual step where the step-wise evaluator's (mAP50-95, mAP50) at the ends, ``first`` and ``last``,
    differ from the ``whose`` (profile or protocol) own evaluations ``start`` and ``end`` (none while the two
    agree, as they must); a delta is None where one of its numbers is."""
    a, b = (start["mAP50-95"], start["mAP50"]), (end["mAP50-95"], end["mAP50"])
    if (first, last) == (a, b):
        return []
    d95, d50 = (None if None in (x, y, f, z) else (y - z) + (f - x) for x, y, f, z in zip(a, b, first, last))
    rule = f"residual: the step-wise evaluator differs from a {whose}'s own at an end"
    return [walk_step(rule, d95, d50, 0, what)]
