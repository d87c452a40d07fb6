"""pycocotools' ``summarize``: the 12 summary numbers (10 for keypoints), their names, the slices they average
and the printed lines."""

from __future__ import annotations

import numpy as np

from deteval.detection.coco_params import CocoParams

__all__ = [
    "DET_STAT_NAMES",
    "KPT_STAT_NAMES",
    "SummarySpec",
    "stat_maxdet",
    "stat_names",
    "summarize",
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
    aind = [i for i, lbl in enumerate(p.area_lbl) if lbl == area]
    mind = [i for i, m in enumerate(p.max_dets) if m == max_det]
    if ap:
        s = precision
        if iou_thr is not None:
            s = s[np.where(iou_thr == p.iou_thrs)[0]]
        s = s[:, :, :, aind, mind] if k is None else s[:, :, k : k + 1, aind, mind]
    else:
        s = recall
        if iou_thr is not None:
            s = s[np.where(iou_thr == p.iou_thrs)[0]]
        s = s[:, :, aind, mind] if k is None else s[:, k : k + 1, aind, mind]
    sel = s[s > -1]
    return -1.0 if len(sel) == 0 else float(np.mean(sel))


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
        return [
            (True, None, "all", md),
            (True, 0.5, "all", md),
            (True, 0.75, "all", md),
            (True, None, "medium", md),
            (True, None, "large", md),
            (False, None, "all", md),
            (False, 0.5, "all", md),
            (False, 0.75, "all", md),
            (False, None, "medium", md),
            (False, None, "large", md),
        ]
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
    precision: np.ndarray, recall: np.ndarray, p: CocoParams, compat: str
) -> tuple[np.ndarray, list[str]]:
    """The 12 (10 for keypoints) summary numbers and pycocotools' printed lines."""
    fmt = " {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}"
    lines: list[str] = []
    stats = []
    for ap, iou_thr, area, max_det in summary_specs(p, compat):
        value = summarize_value(precision, recall, p, ap, iou_thr, area, max_det)
        title = "Average Precision" if ap else "Average Recall"
        kind = "(AP)" if ap else "(AR)"
        iou = f"{p.iou_thrs[0]:0.2f}:{p.iou_thrs[-1]:0.2f}" if iou_thr is None else f"{iou_thr:0.2f}"
        lines.append(fmt.format(title, kind, iou, area, -1 if max_det is None else max_det, value))
        stats.append(value)
    return np.array(stats, dtype=np.float64), lines
