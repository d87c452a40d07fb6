"""The LVIS result (:class:`LvisEvaluation`: lvis-api's arrays and ``results``) and the protocol's last step,
:func:`finish_lvis`: the merged match table accumulated with one unlimited maxDet and summarized as lvis-api
does, plus the pooled APs (Dave et al. 2021)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.detection.coco.evaluation import (
    FULL_ARRAYS_BYTES,
    check_arrays_bound,
    full_arrays_bytes,
    with_truth_only,
)
from deteval.detection.coco.summary import at_threshold, category_means, every_category
from deteval.detection.coco_accumulate import precision_recall
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError
from deteval.io.coco import CocoResults
from deteval.io.lvis import FREQUENCIES, LvisGroundTruth
from deteval.match.coco import MatchTable
from deteval.results import EvalResult, PRCurve

__all__ = [
    "FIXED_AP_DETS_PER_CAT",
    "IOU_TYPES",
    "POOLS",
    "LvisArrays",
    "LvisEvaluation",
    "check_cap",
    "finish_lvis",
    "lvis_arrays",
    "lvis_result_names",
    "pooled_arrays",
]

#: Dave et al.'s K for LVIS: detections kept per category over the whole dataset under Fixed AP.
FIXED_AP_DETS_PER_CAT = 10_000
IOU_TYPES = ("bbox", "segm", "boundary")
POOLS = ("all", *FREQUENCIES)


def lvis_result_names(max_dets: int | None = 300) -> tuple[str, ...]:
    """lvis-api's result keys in order; the recall keys carry ``params.max_dets`` (−1: no per-image limit)."""
    md = -1 if max_dets is None else max_dets
    ap = ("AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf")
    return (*ap, f"AR@{md}", f"ARs@{md}", f"ARm@{md}", f"ARl@{md}")


@dataclass
class LvisEvaluation:
    """The LVIS result: lvis-api's ``eval["precision"][T, R, K, A]`` and ``eval["recall"][T, K, A]``, the
    ``results`` dict (lvis-api's keys and values), per-category rows, and the pooled arrays when asked for.

    ``cat_index``: None (the arrays hold every category), or, when arrays for every category would take more
    than :data:`~deteval.detection.coco.evaluation.FULL_ARRAYS_BYTES`, the positions in ``cat_ids`` of the
    categories the arrays hold: those with non-ignored ground truth; every other category is lvis-api's −1
    throughout (its per-class row too) and left out of every mean, so no number changes."""

    params: CocoParams
    max_dets: int | None
    dets_per_cat: int | None
    precision: np.ndarray
    recall: np.ndarray
    results: dict[str, float]
    cat_ids: list[Any]
    cat_names: list[str]
    frequency: list[str]
    lines: list[str]
    pooled_precision: np.ndarray | None = None
    pooled_recall: np.ndarray | None = None
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    cat_index: np.ndarray | None = None

    @property
    def array_categories(self) -> np.ndarray:
        """The positions in ``cat_ids`` of the arrays' category axis (all K unless ``cat_index`` is set)."""
        return np.arange(len(self.cat_ids)) if self.cat_index is None else self.cat_index

    def per_class(self) -> dict[str, dict[str, Any]]:
        """Per category: frequency, ap, ap50, ap75, aps/apm/apl and ar (lvis-api's means on that category's
        slice; −1 where it has no non-ignored ground truth)."""
        md = -1 if self.max_dets is None else self.max_dets
        out: dict[str, dict[str, Any]] = {}
        columns = {
            "ap": self._means(True, None, "all"),
            "ap50": self._means(True, 0.5, "all"),
            "ap75": self._means(True, 0.75, "all"),
            **{
                key: self._means(True, None, lbl)
                for lbl, key in (("small", "aps"), ("medium", "apm"), ("large", "apl"))
            },
            f"ar@{md}": self._means(False, None, "all"),
        }
        values = {key: every_category(col, self.cat_index, len(self.cat_ids)) for key, col in columns.items()}
        for k, name in enumerate(self.cat_names):
            row: dict[str, Any] = {"frequency": self.frequency[k], **{c: v[k] for c, v in values.items()}}
            key = name
            while key in out:
                key = f"{key} (id {self.cat_ids[k]})"
            out[key] = row
        return out

    def _means(self, ap: bool, iou_thr: float | None, area: str) -> np.ndarray:
        """(K,) lvis-api's ``_summarize`` of each category's slice, all at once (:func:`category_means`)."""
        s, aidx = at_threshold(self.precision, self.recall, self.params, ap, iou_thr, area)
        axis = 2 if ap else 1
        # one area range: a plain index (a view, the same elements in the same order), not a copy
        a: int | list[int] = aidx[0] if len(aidx) == 1 else aidx
        return category_means(lambda k0, k1: s[:, :, k0:k1, a] if ap else s[:, k0:k1, a], axis, s.shape[axis])

    def to_result(self, *, per_class: bool = True) -> EvalResult:
        """An :class:`EvalResult` (protocol "lvis"): lvis-api's result keys at the top level."""
        summary: dict[str, Any] = {
            "iou_type": self.params.iou_type,
            **{k: float(v) for k, v in self.results.items()},
            "max_dets": -1 if self.max_dets is None else self.max_dets,
            "dets_per_cat": -1 if self.dets_per_cat is None else self.dets_per_cat,
            **self.counts,
        }
        curves: dict[str, PRCurve] = {}
        t50 = np.flatnonzero(self.params.iou_thrs == 0.5)
        if t50.size:
            for k, pos in enumerate(self.array_categories.tolist()):
                name = self.cat_names[pos]
                prec = self.precision[t50[0], :, k, 0]
                if (prec > -1).all():
                    curves[name] = PRCurve(recall=self.params.rec_thrs.copy(), precision=prec.copy())
        return EvalResult(
            protocol="lvis",
            summary=summary,
            per_class=self.per_class() if per_class else {},
            curves=curves,
            warnings=list(self.warnings),
            lines=list(self.lines),
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_result().to_dict()

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


def _summarize(
    precision: np.ndarray,
    recall: np.ndarray,
    p: CocoParams,
    ap: bool,
    iou_thr: float | None,
    area: str,
    cats: list[int] | None = None,
) -> float:
    """lvis-api's ``_summarize``: ``np.mean(s[s > -1])`` over the slice (−1 if empty); the same fancy indexing,
    so the same element order and the same sum."""
    s, aidx = at_threshold(precision, recall, p, ap, iou_thr, area)
    if ap:
        s = s[:, :, cats, aidx] if cats is not None else s[:, :, :, aidx]
    else:
        s = s[:, cats, aidx] if cats is not None else s[:, :, aidx]
    sel = s[s > -1]
    return -1.0 if len(sel) == 0 else float(np.mean(sel))


def _lines(results: dict[str, float], p: CocoParams, max_dets: int | None) -> list[str]:
    """lvis-api's ``print_results`` lines."""
    fmt = " {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} catIds={:>3s}] = {:0.3f}"
    md = -1 if max_dets is None else max_dets
    out = []
    for key, value in results.items():
        ap = "AP" in key
        if key.startswith("AP-pooled-"):
            iou = f"{p.iou_thrs[0]:0.2f}:{p.iou_thrs[-1]:0.2f}"
            out.append(fmt.format("Average Precision", "(AP)", iou, "all", md, key[10:], value))
            continue
        if len(key) > 2 and key[2].isdigit():
            iou = f"{float(key[2:]) / 100:0.2f}"
        else:
            iou = f"{p.iou_thrs[0]:0.2f}:{p.iou_thrs[-1]:0.2f}"
        group = key[2] if len(key) > 2 and key[2] in FREQUENCIES else "all"
        area = key[2] if len(key) > 2 and key[2] in "sml" else "all"
        title, kind = ("Average Precision", "(AP)") if ap else ("Average Recall", "(AR)")
        out.append(fmt.format(title, kind, iou, area, md, group, value))
    return out


def check_cap(value: int | None, what: str) -> int | None:
    """``max_dets`` or ``dets_per_cat`` as lvis-api reads it: None (no limit) for None or a negative value."""
    if value is None or value < 0:
        return None  # lvis-api: max_dets < 0 means no limit
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"{what} must be an integer, got {value!r}")
    return int(value)


def pooled_arrays(table: MatchTable, frequency: np.ndarray, p: CocoParams) -> tuple[np.ndarray, np.ndarray]:
    """Pooled accumulation (Dave et al.'s AP^pool): per pool one ranked list of all its categories'
    detections, ties in image, then category, then in-group order (as the authors' ``LVISPooledEval``
    concatenates them before its stable sort); area range "all" only."""
    a_all = list(p.area_lbl).index("all")
    K = table.n_cats
    big = int(table.rank.max()) + 1 if len(table) else 1
    rank = table.cat.astype(np.int64) * big + table.rank  # category order, then rank, inside an image
    prec, rec = [], []
    for pool_of_cat, n_pools in ((np.zeros(K, dtype=np.int64), 1), (frequency.astype(np.int64), 3)):
        npig = np.zeros((n_pools, 1), dtype=np.int64)
        np.add.at(npig[:, 0], pool_of_cat, table.npig[:, a_all])
        pooled = MatchTable(
            cat=pool_of_cat[table.cat],
            img=table.img,
            score=table.score,
            rank=rank,
            tp=table.tp[a_all : a_all + 1],
            ig=table.ig[a_all : a_all + 1],
            npig=npig,
            n_cats=n_pools,
        )
        pr, rc = precision_recall(pooled, p.rec_thrs, (int(rank.max()) + 1 if len(table) else 1,))
        prec.append(pr[..., 0])
        rec.append(rc[..., 0])
    return np.concatenate(prec, axis=2), np.concatenate(rec, axis=1)


#: lvis-api's ``eval["precision"][T, R, K, A]``, ``eval["recall"][T, K, A]`` and the positions in ``cat_ids`` of
#: their category axis (None: every category), as :func:`lvis_arrays` makes them
LvisArrays = tuple[np.ndarray, np.ndarray, "np.ndarray | None"]


def lvis_arrays(table: MatchTable, p: CocoParams) -> LvisArrays:
    """The merged match ``table`` accumulated as lvis-api does (one maxDet, above every rank: no per-image
    limit): precision[T, R, K, A], recall[T, K, A] and the categories they hold. Every category when their
    arrays fit in :data:`~deteval.detection.coco.evaluation.FULL_ARRAYS_BYTES`, else
    only those with non-ignored ground truth (every other one is −1 throughout; each category is ranked on its
    own, so the numbers of those kept are the same)."""
    big = int(table.rank.max()) + 1 if len(table) else 1
    cat_index = None
    if full_arrays_bytes(p, table.n_cats, n_max_dets=1) > FULL_ARRAYS_BYTES:
        table, cat_index = with_truth_only(table)
    check_arrays_bound(p, table.n_cats, n_max_dets=1)
    precision, recall = precision_recall(table, p.rec_thrs, (big,))
    return precision[..., 0], recall[..., 0], cat_index


def finish_lvis(
    lg: LvisGroundTruth,
    r: CocoResults,
    gsel: np.ndarray,
    table: MatchTable | None,
    p: CocoParams,
    max_dets: int | None,
    dets_per_cat: int | None,
    pooled: bool,
    counts: dict[str, int],
    warnings: list[str],
    arrays: LvisArrays | None = None,
) -> LvisEvaluation:
    """Accumulate the merged ``table`` (:func:`lvis_arrays`), summarize as lvis-api's ``results``, add the
    pooled APs when asked for; ``gsel``: the evaluated ground truths of ``lg``, ``r``: the results read.
    ``arrays``: :func:`lvis_arrays` of the table made elsewhere (e.g. by halves of the categories); ``table``
    may then be None unless ``pooled``."""
    g = lg.coco
    if arrays is None:
        if table is None:
            raise ValueError("finish_lvis: a table or its arrays")
        arrays = lvis_arrays(table, p)
    precision, recall, cat_index = arrays
    frequency = lg.frequency if cat_index is None else lg.frequency[cat_index]

    groups = [np.flatnonzero(frequency == i).tolist() for i in range(len(FREQUENCIES))]
    names = lvis_result_names(max_dets)
    res: dict[str, float] = {}
    res[names[0]] = _summarize(precision, recall, p, True, None, "all")
    res[names[1]] = _summarize(precision, recall, p, True, 0.5, "all")
    res[names[2]] = _summarize(precision, recall, p, True, 0.75, "all")
    for name, area in zip(names[3:6], ("small", "medium", "large")):
        res[name] = _summarize(precision, recall, p, True, None, area)
    for name, grp in zip(names[6:9], groups):
        res[name] = _summarize(precision, recall, p, True, None, "all", grp)
    for name, area in zip(names[9:], ("all", "small", "medium", "large")):
        res[name] = _summarize(precision, recall, p, False, None, area)
    pooled_precision = pooled_recall = None
    if pooled:
        if table is None:
            raise ValueError("finish_lvis: the pooled APs need the table")
        pooled_precision, pooled_recall = pooled_arrays(table, lg.frequency, p)
        for i, pool in enumerate(POOLS):
            s = pooled_precision[:, :, i]
            sel = s[s > -1]
            res[f"AP-pooled-{pool}"] = -1.0 if len(sel) == 0 else float(np.mean(sel))
    if np.count_nonzero(g.ann_id[gsel] == 0):
        warnings.append(
            "a ground-truth annotation has id 0: deteval matches it normally; lvis-api would count its matches "
            "as unmatched (false positives), so its numbers differ here"
        )
    if len(r) == 0:
        warnings.append("no detections: lvis-api would crash on an empty results list")
    return LvisEvaluation(
        params=p,
        max_dets=max_dets,
        dets_per_cat=dets_per_cat,
        precision=precision,
        recall=recall,
        results=res,
        cat_ids=g.cat_ids.tolist(),
        cat_names=list(g.cat_names),
        frequency=[FREQUENCIES[i] for i in lg.frequency.tolist()],
        lines=_lines(res, p, max_dets),
        pooled_precision=pooled_precision,
        pooled_recall=pooled_recall,
        counts=counts,
        warnings=lg.warnings + g.warnings + r.warnings + warnings,
        cat_index=cat_index,
    )
