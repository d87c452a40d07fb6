"""pycocotools' ``summarize``: the 12 summary numbers (10 for keypoints), their names, the slices they average
and the printed lines."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from deteval.detection.coco_params import CocoParams

__all__ = [
    "DET_STAT_NAMES",
    "KPT_STAT_NAMES",
    "SummarySpec",
    "at_threshold",
    "category_means",
    "every_category",
    "stat_maxdet",
    "stat_names",
    "summarize",
    "summarize_per_category",
    "summarize_value",
    "summary_specs",
]

DET_STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
KPT_STAT_NAMES = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")


def summarize_value(
    precision: np.ndarray,
    recall: np.ndarray,
    p: CocoParams,
    ap: bool,
    iou_thr: float | None,
    area: str,
    max_det: int | None,
    k: int | None = None,
) -> float:
    """pycocotools' ``_summarize``: ``np.mean(s[s > -1])`` over the selected slice, −1 if empty."""
    if max_det is None:
        return -1.0
    s, aind = at_threshold(precision, recall, p, ap, iou_thr, area)
    mind = [i for i, m in enumerate(p.max_dets) if m == max_det]
    if ap:
        s = s[:, :, :, aind, mind] if k is None else s[:, :, k : k + 1, aind, mind]
    else:
        s = s[:, :, aind, mind] if k is None else s[:, k : k + 1, aind, mind]
    sel = s[s > -1]
    return -1.0 if len(sel) == 0 else float(np.mean(sel))


def at_threshold(
    precision: np.ndarray, recall: np.ndarray, p: CocoParams, ap: bool, iou_thr: float | None, area: str
) -> tuple[np.ndarray, list[int]]:
    """``precision`` (``ap``) or ``recall`` at ``iou_thr`` (all thresholds for None), and the indices of the
    area ranges labelled ``area``, as pycocotools' and lvis-api's ``_summarize`` select them."""
    aind = [i for i, lbl in enumerate(p.area_lbl) if lbl == area]
    s = precision if ap else recall
    if iou_thr is not None:
        s = s[np.where(iou_thr == p.iou_thrs)[0]]
    return s, aind


#: Categories averaged at once by :func:`summarize_per_category` (bounds its copy of the selected slices).
CATEGORY_BLOCK = 256


def summarize_per_category(
    precision: np.ndarray,
    recall: np.ndarray,
    p: CocoParams,
    ap: bool,
    iou_thr: float | None,
    area: str,
    max_det: int | None,
) -> np.ndarray:
    """(K,) :func:`summarize_value` of every category at once (:func:`category_means` of the same slice):
    ``np.mean(s[s > -1])`` over each category's values, −1 where it selects nothing; bit-identical to
    :func:`summarize_value` with ``k`` for each category."""
    if max_det is None:
        return np.full(precision.shape[2], -1.0)
    s, aind = at_threshold(precision, recall, p, ap, iou_thr, area)
    mind = [i for i, m in enumerate(p.max_dets) if m == max_det]
    axis = 2 if ap else 1
    return category_means(
        lambda k0, k1: s[:, :, k0:k1, aind, mind] if ap else s[:, k0:k1, aind, mind], axis, s.shape[axis]
    )


def category_means(select: Callable[[int, int], np.ndarray], axis: int, n_cats: int) -> np.ndarray:
    """(K,) ``np.mean(v[v > -1])`` of each category's values, −1 where none is > −1. ``select(k0, k1)``: the
    selected slice of categories k0..k1 (category axis ``axis``), as pycocotools' ``_summarize`` indexes
    one category's.

    Bit-identical to the mean of each category's own selection: a category's values are laid out
    contiguously in the order its own selection has (the category axis moved first), and summed by one
    reduction along that row, which is numpy's pairwise sum of a 1-D array. A row whose values are partly
    −1 is averaged on its own. Categories are taken :data:`CATEGORY_BLOCK` at a time (a bounded copy)."""
    out = np.full(n_cats, -1.0)
    for k0 in range(0, n_cats, CATEGORY_BLOCK):
        k1 = min(n_cats, k0 + CATEGORY_BLOCK)
        rows = np.ascontiguousarray(np.moveaxis(select(k0, k1), axis, 0)).reshape(k1 - k0, -1)
        if rows.shape[1] == 0:
            continue
        keep = rows > -1
        n = keep.sum(axis=1)
        full = n == rows.shape[1]
        out[k0:k1][full] = np.add.reduce(rows[full], axis=1) / rows.shape[1]
        for i in np.flatnonzero(~full & (n > 0)).tolist():
            out[k0 + i] = float(np.mean(rows[i][keep[i]]))
    return out


def every_category(values: np.ndarray, cat_index: np.ndarray | None, n_cats: int) -> list[float]:
    """Per-category ``values`` of the arrays' categories (``cat_index``: their positions, None: all) as a
    list over all ``n_cats`` categories, −1 (pycocotools' "undefined") for the others."""
    if cat_index is None:
        return values.tolist()
    out = np.full(n_cats, -1.0)
    out[cat_index] = values
    return out.tolist()


def stat_maxdet(p: CocoParams, compat: str, which: str) -> int | None:
    """The maxDets value a summary stat uses. ``which``: 'ap' (stat 0), 'last' (stats 1-5, 8-11), '0', '1'."""
    md = p.max_dets
    if compat == "fixed":
        if which in ("ap", "last"):
            return md[-1]
        return md[min(int(which), len(md) - 1)]
    if p.iou_type == "keypoints":
        return 20
    if which == "ap":
        return 100
    idx = 2 if which == "last" else int(which)
    return md[idx] if idx < len(md) else None


#: One summary number: (AP (True) or AR, IoU threshold (None: all), area label, maxDets value (None: −1)).
SummarySpec = tuple[bool, float | None, str, int | None]


def summary_specs(p: CocoParams, compat: str) -> list[SummarySpec]:
    """The slices the 12 (10 for keypoints) summary numbers average, in pycocotools' order."""
    last = stat_maxdet(p, compat, "last")
    if p.iou_type == "keypoints":
        md = stat_maxdet(p, compat, "ap")
        slices = ((None, "all"), (0.5, "all"), (0.75, "all"), (None, "medium"), (None, "large"))
        return [(ap, iou_thr, area, md) for ap in (True, False) for iou_thr, area in slices]
    return [
        (True, None, "all", stat_maxdet(p, compat, "ap")),
        (True, 0.5, "all", last),
        (True, 0.75, "all", last),
        (True, None, "small", last),
        (True, None, "medium", last),
        (True, None, "large", last),
        (False, None, "all", stat_maxdet(p, compat, "0")),
        (False, None, "all", stat_maxdet(p, compat, "1")),
        (False, None, "all", last),
        (False, None, "small", last),
        (False, None, "medium", last),
        (False, None, "large", last),
    ]


def stat_names(p: CocoParams, compat: str) -> tuple[str, ...]:
    """The names of the summary numbers: :data:`DET_STAT_NAMES` (:data:`KPT_STAT_NAMES` for keypoints), with
    the three recall-at-maxDets stats named by the maxDets value they read (``AR1``, ``AR10``, ``AR100`` by
    default; ``AR2`` for ``max_dets=(1, 2, 3)`` under ``compat="fixed"``). A stat that reads no maxDets (−1,
    pycocotools with fewer than three) keeps its default name."""
    if p.iou_type == "keypoints":
        return KPT_STAT_NAMES
    names = list(DET_STAT_NAMES)
    for i, (_, _, _, max_det) in enumerate(summary_specs(p, compat)[6:9], start=6):
        if max_det is not None:
            names[i] = f"AR{max_det}"
    return tuple(names)


def summarize(
    precision: np.ndarray | None,
    recall: np.ndarray | None,
    p: CocoParams,
    compat: str,
    values: dict[SummarySpec, float] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """The 12 (10 for keypoints) summary numbers and pycocotools' printed lines; ``values``: each number
    already computed, by its :func:`summary_specs` entry (then the arrays are not read and may be None)."""
    fmt = " {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}"
    lines: list[str] = []
    stats = []
    for spec in summary_specs(p, compat):
        ap, iou_thr, area, max_det = spec
        if values is not None:
            value = values[spec]
        else:
            assert precision is not None and recall is not None
            value = summarize_value(precision, recall, p, ap, iou_thr, area, max_det)
        title, kind = ("Average Precision", "(AP)") if ap else ("Average Recall", "(AR)")
        iou = f"{p.iou_thrs[0]:0.2f}:{p.iou_thrs[-1]:0.2f}" if iou_thr is None else f"{iou_thr:0.2f}"
        lines.append(fmt.format(title, kind, iou, area, -1 if max_det is None else max_det, value))
        stats.append(value)
    return np.array(stats, dtype=np.float64), lines
