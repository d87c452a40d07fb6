"""Open Images detection (OID challenge metric) as the TF Object Detection API computes it.

>>> ev = evaluate_openimages("boxes.csv", "preds.csv", labels="imagelabels.csv",
...                          hierarchy="hierarchy.json")                              # doctest: +SKIP
>>> ev.map, ev.per_class()["/m/01g317"]["ap"]                                       # doctest: +SKIP

The rules (hierarchy expansion, image-level labels, matching with group-of boxes, AP) are those of the TF OD
API's ``OpenImagesChallengeEvaluator`` (group-of weight 1, IoU 0.5), numbered in docs/openimages.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.core.lists import presorted_lists
from deteval.errors import ConfigError, ValidationError, first_true
from deteval.io.openimages import Hierarchy, OidTable, load_class_names, load_hierarchy, read_oid_csv
from deteval.match.iou import iou_ioa_yxyx
from deteval.results import EvalResult

__all__ = ["OpenImagesEvaluation", "evaluate_openimages"]

IOU_THRESHOLD = 0.5
#: per_image_evaluation's NMS step with iou 1.0: scores must exceed this, at most this many per class.
SCORE_FLOOR = -10.0
MAX_PER_CLASS_IMAGE = 10_000


@dataclass
class OpenImagesEvaluation:
    """The OID challenge result: ``map`` and per class ``ap`` (NaN without ground truth), ``n_gt``."""

    map: float
    classes: list[str]
    names: list[str]
    ap: np.ndarray
    n_gt: np.ndarray
    n_tp: np.ndarray
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def per_class(self) -> dict[str, dict[str, Any]]:
        """Per class with ground truth: name, ap, n_gt (a group-of box counts 1), n_tp."""
        out: dict[str, dict[str, Any]] = {}
        for c, label in enumerate(self.classes):
            if self.n_gt[c] > 0:
                out[label] = {
                    "name": self.names[c],
                    "ap": float(self.ap[c]),
                    "n_gt": int(self.n_gt[c]),
                    "n_tp": int(self.n_tp[c]),
                }
        return out

    def to_result(self, *, per_class: bool = True) -> EvalResult:
        """An :class:`EvalResult` (protocol "openimages"); ``mAP`` as the TF metric ``Precision/mAP@0.5IOU``."""
        lines = [f"OpenImagesDetectionChallenge_Precision/mAP@0.5IOU: {self.map:.6f}"]
        return EvalResult(
            protocol="openimages",
            summary={"mAP": float(self.map), "iou_threshold": IOU_THRESHOLD, **self.counts},
            per_class=self.per_class() if per_class else {},
            warnings=list(self.warnings),
            lines=lines,
        )

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_result().to_dict(), indent=indent)


def _boxes_table(source: Any) -> OidTable:
    t = read_oid_csv(
        source,
        ("ImageID", "LabelName", "XMin", "XMax", "YMin", "YMax", "IsGroupOf"),
        ("XMin", "XMax", "YMin", "YMax", "IsGroupOf"),
        "ground-truth boxes",
        unit=("XMin", "XMax", "YMin", "YMax"),
    )
    v = t.values
    bad = (v["XMin"] > v["XMax"]) | (v["YMin"] > v["YMax"])
    flag = (v["IsGroupOf"] != 0) & (v["IsGroupOf"] != 1)
    for mask, why in ((bad, "XMin > XMax or YMin > YMax"), (flag, "IsGroupOf must be 0 or 1")):
        if (i := first_true(mask)) >= 0:
            raise ValidationError(why, file=t.source, record=f"line {t.line[i]}")
    return t


def _expand(
    labels: np.ndarray, table: dict[str, list[str]], what: str, file: str
) -> tuple[np.ndarray, np.ndarray]:
    """Each row followed by one copy per label in ``table[label]``: (source row, new label) arrays."""
    rows: list[int] = []
    out: list[str] = []
    for i, lab in enumerate(labels.tolist()):
        extra = table.get(lab)
        if extra is None:
            raise ValidationError(f"{what} label {lab!r} is not in the hierarchy", file=file)
        rows.append(i)
        out.append(lab)
        rows.extend([i] * len(extra))
        out.extend(extra)
    return np.asarray(rows, dtype=np.int64), np.asarray(out, dtype=object)


def _argsort_desc(scores: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per segment, ``np.argsort(segment)[::-1]`` (numpy's default kind) as positions into ``scores``.

    A segment without equal scores has one descending order, found for all segments at once; a segment with
    ties is sorted by numpy itself, so equal scores land exactly where the reference's call puts them."""
    n = scores.shape[0]
    seg = np.repeat(np.arange(starts.shape[0]), ends - starts)
    # descending score; ties: later first (a guess, fixed below)
    order = np.lexsort((-np.arange(n), -scores, seg))
    s = scores[order]
    tie = np.zeros(starts.shape[0], dtype=bool)
    if n > 1:
        same = (s[1:] == s[:-1]) & (seg[order][1:] == seg[order][:-1])
        tie[seg[order][1:][same]] = True
    for k in np.flatnonzero(tie).tolist():
        a, b = int(starts[k]), int(ends[k])
        order[a:b] = a + np.argsort(scores[a:b])[::-1]
    return order


def evaluate_openimages(
    boxes: Any,
    predictions: Any,
    *,
    labels: Any = None,
    hierarchy: Any = None,
    class_names: Any = None,
    expand_detections: bool = False,
) -> OpenImagesEvaluation:
    """Evaluate ``predictions`` against Open Images ground truth (module docstring: the rules).

    AP per class is the all-point area under the interpolated precision envelope of the class's ranked
    entries (the TF OD API's ``compute_average_precision``), the mAP the mean over the classes with ground
    truth.

    Parameters
    ----------
    boxes : path or list of dict
        The ground-truth boxes CSV (``ImageID, LabelName, XMin, XMax, YMin, YMax, IsGroupOf``), or its rows.
    predictions : path or list of dict
        The predictions CSV (``ImageID, LabelName, Score, XMin, XMax, YMin, YMax``), or its rows. A
        prediction of an unknown class is an error.
    labels : path or list of dict, optional
        The image-level labels CSV (``ImageID, LabelName, Confidence``): which (image, class) pairs are
        evaluated.
    hierarchy : path or dict, optional
        The class hierarchy JSON; turns on the expansion of boxes and labels to ancestors.
    class_names : path or list of (label, name), optional
        The class descriptions, whose order is the class order (it decides the last bits of the mean);
        default: the hierarchy's depth-first order, else the sorted labels.
    expand_detections : bool
        Expand the predictions to their ancestors too (the challenge's optional step).

    Returns
    -------
    OpenImagesEvaluation
        The mAP, AP and counts per class, and the warnings.
    """
    gtb = _boxes_table(boxes)
    lab = _labels_table(labels) if labels is not None else None
    det = read_oid_csv(
        predictions,
        ("ImageID", "LabelName", "Score", "XMin", "XMax", "YMin", "YMax"),
        ("Score", "XMin", "XMax", "YMin", "YMax"),
        "predictions",
    )
    h: Hierarchy | None = load_hierarchy(hierarchy) if hierarchy is not None else None
    gt = _ground_truth(gtb, lab, h, class_names)
    C = len(gt.classes)
    warnings: list[str] = []

    # detections (optionally expanded), discarded where the evaluator never looks
    d_row = np.arange(len(det))
    d_label = det.label
    if h is not None and expand_detections:
        d_row, d_label = _expand(det.label, h.ancestors, "prediction", det.source)
    d_cls = _class_ids(gt.cindex, d_label, det.source, "prediction")
    d_ii = np.fromiter(
        (gt.imap.get(x, -1) for x in det.image[d_row].tolist()), dtype=np.int64, count=d_row.shape[0]
    )
    unseen = int((d_ii < 0).sum())
    if unseen:
        warnings.append(
            f"{unseen} predictions are for images without ground truth or image-level labels: never read, as in "
            "the TF OD API (it iterates over the ground truth's images)"
        )
    d_key = d_ii * C + d_cls
    dv = {k: det.values[k][d_row] for k in ("Score", "XMin", "XMax", "YMin", "YMax")}
    keep = (d_ii >= 0) & np.isin(d_key, gt.evaluatable)
    keep &= (dv["YMin"] < dv["YMax"]) & (dv["XMin"] < dv["XMax"])
    keep &= dv["Score"] > SCORE_FLOOR
    di = _ranked_in_groups(np.flatnonzero(keep), d_key, dv["Score"])
    counts = {
        "n_images": gt.n_images,
        "n_classes": C,
        "n_gt_boxes": int(gt.box.shape[0]),
        "n_predictions": len(det),
        "n_predictions_evaluated": int(di.shape[0]),
    }

    d_box = np.stack([dv[k][di] for k in ("YMin", "XMin", "YMax", "XMax")], axis=1)
    d_grp = d_key[di]
    tp, in_group = _match(d_grp, d_box, gt.ii * C + gt.cls, gt.box, gt.group)
    e_cls, e_score, e_tp = _entries(d_grp, dv["Score"][di], tp, in_group, gt.group, gt.ii, gt.cls, C)
    n_gt = np.bincount(gt.cls, minlength=C).astype(np.float64)  # group-of weight 1: a group counts once
    ap, n_tp = _class_ap(e_cls, e_score, e_tp, n_gt)
    with np.errstate(all="ignore"):
        mean = float(np.nanmean(ap)) if (~np.isnan(ap)).any() else float("nan")
    return OpenImagesEvaluation(
        map=mean,
        classes=gt.classes,
        names=gt.names,
        ap=ap,
        n_gt=n_gt.astype(np.int64),
        n_tp=n_tp,
        counts=counts,
        warnings=warnings,
    )


@dataclass
class _GroundTruth:
    """The ground truth as the evaluation reads it: boxes (expanded) in file order with their image index,
    class index and group-of flag; the classes; the images; the evaluatable (image, class) keys."""

    box: np.ndarray  # [N, 4] YMin, XMin, YMax, XMax
    group: np.ndarray
    ii: np.ndarray
    cls: np.ndarray
    classes: list[str]
    names: list[str]
    cindex: dict[str, int]
    imap: dict[Any, int]
    n_images: int
    evaluatable: np.ndarray  # image index * classes + class index, sorted


def _ground_truth(gtb: OidTable, lab: OidTable | None, h: Hierarchy | None, class_names: Any) -> _GroundTruth:
    """The boxes and image-level labels expanded with the hierarchy; images are every ImageID with a box or a
    label, in sorted order (pandas' groupby)."""
    g_row = np.arange(len(gtb))
    g_label = gtb.label
    if h is not None:
        g_row, g_label = _expand(gtb.label, h.ancestors, "box", gtb.source)
    g_img = gtb.image[g_row]
    g_box = np.stack([gtb.values[k][g_row] for k in ("YMin", "XMin", "YMax", "XMax")], axis=1)
    g_group = gtb.values["IsGroupOf"][g_row] != 0
    l_img, l_label = _image_labels(lab, h)
    classes, names = _classes(class_names, h, g_label, l_label)
    cindex = {c: i for i, c in enumerate(classes)}
    g_cls = _class_ids(cindex, g_label, gtb.source, "box")
    l_cls = _class_ids(cindex, l_label, lab.source if lab is not None else "", "image-level")
    images = sorted(set(g_img.tolist()) | set(l_img.tolist()))
    imap = {im: i for i, im in enumerate(images)}
    g_ii = np.fromiter((imap[x] for x in g_img.tolist()), dtype=np.int64, count=g_img.shape[0])
    l_ii = np.fromiter((imap[x] for x in l_img.tolist()), dtype=np.int64, count=l_img.shape[0])
    C = len(classes)
    evaluatable = np.unique(np.concatenate([g_ii * C + g_cls, l_ii * C + l_cls]))
    return _GroundTruth(g_box, g_group, g_ii, g_cls, classes, names, cindex, imap, len(images), evaluatable)


def _class_ids(cindex: dict[str, int], labels: np.ndarray, file: str, what: str) -> np.ndarray:
    """The class index of each label; a label that is not one of the classes is an error."""
    out = np.fromiter((cindex.get(x, -1) for x in labels.tolist()), dtype=np.int64, count=labels.shape[0])
    if (i := first_true(out < 0)) >= 0:
        raise ValidationError(f"{what} label {labels[i]!r} is not one of the classes", file=file)
    return out


def _ranked_in_groups(di: np.ndarray, d_key: np.ndarray, score: np.ndarray) -> np.ndarray:
    """The kept detections ``di`` (file order) in the reference's order: a stable sort by (image, class)
    group, then np.argsort of the scores descending inside each group, cut at ``MAX_PER_CLASS_IMAGE``."""
    grp = d_key[di]
    di = di[np.argsort(grp, kind="stable")]
    grp = d_key[di]
    starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]]) if di.size else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], di.shape[0]].astype(np.int64)
    di = di[_argsort_desc(score[di], starts, ends)]
    rank = np.arange(di.shape[0]) - np.repeat(starts, ends - starts)
    return di[rank < MAX_PER_CLASS_IMAGE]


def _class_ap(
    e_cls: np.ndarray, e_score: np.ndarray, e_tp: np.ndarray, n_gt: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """AP (NaN for a class without ground truth) and true positives per class of the entries, ranked as the
    challenge ranks them: per class, ``np.argsort(scores)[::-1]`` (unstable; reversed, so ties in reverse)."""
    C = n_gt.shape[0]
    cs = np.searchsorted(e_cls, np.arange(C + 1))
    rank = np.concatenate(
        [np.zeros(0, dtype=np.int64)]
        + [cs[c] + np.argsort(e_score[cs[c] : cs[c + 1]])[::-1] for c in range(C)]
    )
    hit = e_tp[rank] > 0
    lists = presorted_lists(np.diff(cs), hit, n_gt.astype(np.int64))
    ap = np.where(n_gt > 0, lists.average_precision("all_points"), np.nan)
    n_tp = np.where(n_gt > 0, lists.n_hits, 0).astype(np.int64)
    return ap, n_tp


def _labels_table(labels: Any) -> Any:
    """The image-level labels read, their Confidence checked (0 or 1)."""
    lab = read_oid_csv(labels, ("ImageID", "LabelName", "Confidence"), ("Confidence",), "image-level labels")
    conf = lab.values["Confidence"]
    if (i := first_true((conf != 0) & (conf != 1))) >= 0:
        raise ValidationError("Confidence must be 0 or 1", file=lab.source, record=f"line {lab.line[i]}")
    return lab


def _image_labels(lab: Any, h: Hierarchy | None) -> tuple[np.ndarray, np.ndarray]:
    """The image-level labels' images and labels, expanded with the hierarchy (positives to their ancestors,
    negatives to their descendants, as the challenge's expansion script)."""
    if lab is None:
        return np.zeros(0, dtype=object), np.zeros(0, dtype=object)
    if h is None:
        return lab.image, lab.label
    pos = lab.values["Confidence"] == 1
    r1, lab1 = _expand(lab.label[pos], h.ancestors, "image-level", lab.source)
    r0, lab0 = _expand(lab.label[~pos], h.descendants, "image-level", lab.source)
    return np.concatenate([lab.image[pos][r1], lab.image[~pos][r0]]), np.concatenate([lab1, lab0])


def _classes(
    class_names: Any, h: Hierarchy | None, g_label: np.ndarray, l_label: np.ndarray
) -> tuple[list[str], list[str]]:
    """The class labels in class order and their display names: the class descriptions' order, else the
    hierarchy's depth-first order, else the sorted labels."""
    if class_names is not None:
        pairs = (
            [(str(a), str(b)) for a, b in class_names]
            if isinstance(class_names, (list, tuple))
            else load_class_names(class_names)
        )
        classes, names = [p[0] for p in pairs], [p[1] for p in pairs]
        if len(set(classes)) != len(classes):
            raise ConfigError("the class descriptions repeat a label", file=str(class_names))
        return classes, names
    classes = list(h.order) if h is not None else sorted(set(g_label.tolist()) | set(l_label.tolist()))
    return classes, list(classes)


def _entries(
    d_grp: np.ndarray,
    d_score: np.ndarray,
    tp: np.ndarray,
    in_group: np.ndarray,
    g_group: np.ndarray,
    g_ii: np.ndarray,
    g_cls: np.ndarray,
    C: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranked entries (class, score, 1 TP / 0 FP), sorted by class in the reference's concatenation
    order: image, then the detections not absorbed by a group-of box (in rank order), then one entry per
    group-of box with the highest score among its detections (dropped if <= 0), in file order."""
    gi_all = np.flatnonzero(g_group)
    best = np.full(g_group.shape[0], -np.inf)
    hit = in_group >= 0
    np.maximum.at(best, in_group[hit], d_score[hit])
    g_entry = gi_all[np.isfinite(best[gi_all]) & (best[gi_all] > 0)]
    valid = ~hit
    e_img = np.concatenate([d_grp[valid] // C, g_ii[g_entry]])
    e_cls = np.concatenate([d_grp[valid] % C, g_cls[g_entry]])
    e_kind = np.concatenate([np.zeros(int(valid.sum()), np.int64), np.ones(g_entry.shape[0], np.int64)])
    # rank order for detections, file order for groups
    e_pos = np.concatenate([np.flatnonzero(valid), g_entry])
    e_score = np.concatenate([d_score[valid], best[g_entry]])
    e_tp = np.concatenate([tp[valid].astype(np.float64), np.ones(g_entry.shape[0])])
    o = np.lexsort((e_pos, e_kind, e_img, e_cls))
    return e_cls[o], e_score[o], e_tp[o]


def _first_best(pd: np.ndarray, pg_pos: np.ndarray, val: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per detection, ``np.argmax`` over its pairs (the first maximum in box order): (box, value), −1 if none."""
    box = np.full(n, -1, dtype=np.int64)
    v = np.full(n, -np.inf)
    if pd.size:
        o = np.lexsort((pg_pos, -val, pd))
        first = np.r_[True, pd[o][1:] != pd[o][:-1]]
        box[pd[o][first]] = pg_pos[o][first]
        v[pd[o][first]] = val[o][first]
    return box, v


def _match(
    d_grp: np.ndarray, d_box: np.ndarray, g_grp: np.ndarray, g_box: np.ndarray, g_group: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Both matching stages for all groups at once: (true positive flags, group-of box taken or −1).

    ``d_grp`` is sorted by group with detections in rank order; boxes keep file order inside a group."""
    n = d_grp.shape[0]
    tp = np.zeros(n, dtype=bool)
    in_group = np.full(n, -1, dtype=np.int64)
    if n == 0 or g_grp.size == 0:
        return tp, in_group
    g_order = np.argsort(g_grp, kind="stable")
    for stage_group in (False, True):
        gsel = g_order[g_group[g_order] == stage_group]
        gk = g_grp[gsel]
        lo = np.searchsorted(gk, d_grp, side="left")
        hi = np.searchsorted(gk, d_grp, side="right")
        cnt = hi - lo
        pd = np.repeat(np.arange(n), cnt)
        off = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        pg = gsel[np.repeat(lo, cnt) + off]
        iou, ioa = iou_ioa_yxyx(d_box[pd], g_box[pg])
        if not stage_group:
            box, v = _first_best(pd, off, iou, n)
            ok = (box >= 0) & (v >= IOU_THRESHOLD)
            # a box goes to the first detection (in rank order) that chose it; later ones are false positives
            cand = np.flatnonzero(ok)
            gid = gsel[lo[cand] + box[cand]]
            _, first = np.unique(gid, return_index=True)
            tp[cand[first]] = True
        else:
            box, v = _first_best(pd, off, ioa, n)
            ok = (box >= 0) & (v >= IOU_THRESHOLD) & ~tp
            in_group[ok] = gsel[lo[ok] + box[ok]]
    return tp, in_group
