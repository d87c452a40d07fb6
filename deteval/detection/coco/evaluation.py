"""The result of a COCO evaluation (:class:`CocoEvaluation`: pycocotools' ``eval`` arrays and summary) and
the protocol's last step, :func:`finish_evaluation`: a merged match table accumulated and summarized."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.detection.coco.params import id_selection, selected_positions, unknown_id_notes
from deteval.detection.coco.slices import ArraySlices, selection
from deteval.detection.coco.summary import (
    SummarySpec,
    every_category,
    stat_maxdet,
    stat_names,
    summarize,
    summarize_per_category,
    summarize_value,
    summary_specs,
)
from deteval.detection.coco_accumulate import accumulate
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError
from deteval.io.coco import CocoGroundTruth
from deteval.match.coco import MatchTable
from deteval.results import EvalResult, PRCurve

__all__ = [
    "FULL_ARRAYS_BYTES",
    "MAX_ARRAYS_BYTES",
    "CocoEvaluation",
    "SlicedCocoEvaluation",
    "check_arrays_bound",
    "finish_evaluation",
    "full_arrays_bytes",
    "slice_value",
    "sliced_stats",
    "with_truth_only",
]

#: Above this size of the arrays for every evaluated category (precision, scores and recall; 256 MiB, about
#: 1,300 categories with the default parameters), the arrays hold only the categories with non-ignored ground
#: truth (:attr:`CocoEvaluation.cat_index`): memory follows the ground truth, not the declared categories.
FULL_ARRAYS_BYTES = 1 << 28

#: The most bytes of whole arrays laid out for the categories with non-ignored ground truth (1 GiB: about
#: 5,500 categories with the default COCO parameters): pycocotools' layout is T×R×K×A×M however few boxes each
#: category has. Above it, reading a :class:`SlicedCocoEvaluation`'s arrays (its numbers need none) and an
#: LVIS evaluation are refused (:func:`check_arrays_bound`) rather than run out of memory.
MAX_ARRAYS_BYTES = 1 << 30


@dataclass
class CocoEvaluation:
    """The full COCO result: pycocotools' ``eval`` arrays plus the summary.

    * ``precision[T, R, K, A, M]``, ``recall[T, K, A, M]``, ``scores[T, R, K, A, M]``: as ``COCOeval.eval``
      (−1 where a category has no ground truth in an area range).
    * ``stats``: the 12 summary numbers (10 for keypoints), ``lines``: pycocotools' printed summary.
    * ``cat_ids`` / ``cat_names``: the K categories (sorted by id), ``params``: the parameters used.
    * ``cat_index``: None (the arrays hold every category), or, when arrays for every category would take
      more than :data:`FULL_ARRAYS_BYTES`, the positions in ``cat_ids`` of the categories the arrays hold:
      those with non-ignored ground truth. Every other category is pycocotools' −1 throughout (its per-class
      row too) and left out of every mean, so no number changes; :meth:`full_arrays` lays out all K.
    """

    params: CocoParams
    compat: str
    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    stats: np.ndarray
    lines: list[str]
    cat_ids: list[Any]
    cat_names: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    cat_index: np.ndarray | None = None
    slices: ArraySlices | None = field(default=None, repr=False, compare=False)

    @property
    def array_categories(self) -> np.ndarray:
        """The positions in ``cat_ids`` of the arrays' category axis (all K unless ``cat_index`` is set)."""
        return np.arange(len(self.cat_ids)) if self.cat_index is None else self.cat_index

    def full_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``precision``, ``recall``, ``scores`` with every one of the K categories (−1 for those
        ``cat_index`` leaves out): ``COCOeval.eval``'s arrays."""
        if self.cat_index is None:
            return self.precision, self.recall, self.scores
        K = len(self.cat_ids)
        out = []
        for arr, axis in ((self.precision, 2), (self.recall, 1), (self.scores, 2)):
            shape = list(arr.shape)
            shape[axis] = K
            full = np.full(shape, -1.0)
            index: list[Any] = [slice(None)] * len(shape)
            index[axis] = self.cat_index
            full[tuple(index)] = arr
            out.append(full)
        return out[0], out[1], out[2]

    @property
    def stat_names(self) -> tuple[str, ...]:
        return stat_names(self.params, self.compat)

    def per_class(self) -> dict[str, dict[str, float]]:
        """Per category: ap, ap50, ap75, aps/apm/apl and ar (−1 where undefined), as pycocotools would average
        a single category's slice of ``precision`` / ``recall`` (each number computed for every category at
        once: :func:`~deteval.detection.coco.summary.summarize_per_category`)."""
        p = self.params
        md_ap = stat_maxdet(p, self.compat, "ap")
        md = stat_maxdet(p, self.compat, "last")
        out: dict[str, dict[str, float]] = {}
        if not p.use_cats:
            return out
        kp = p.iou_type == "keypoints"
        specs: dict[str, SummarySpec] = {
            "ap": (True, None, "all", md_ap),
            "ap50": (True, 0.5, "all", md),
            "ap75": (True, 0.75, "all", md),
        }
        for lbl, key in (("small", "aps"), ("medium", "apm"), ("large", "apl")):
            if not (kp and lbl == "small"):
                specs[key] = (True, None, lbl, md)
        specs[f"ar{md}" if md is not None else "ar"] = (False, None, "all", md)
        columns: dict[str, np.ndarray] = {}
        for key in self._in_slice_order(specs):  # (many categories: each slice laid out once)
            columns[key] = self._means(*specs[key])
        values = {key: every_category(columns[key], self.cat_index, len(self.cat_ids)) for key in specs}
        for k, name in enumerate(self.cat_names):
            key = name
            while key in out:  # two categories with one name: keep both rows
                key = f"{key} (id {self.cat_ids[k]})"
            out[key] = {col: vals[k] for col, vals in values.items()}
        return out

    def _in_slice_order(self, specs: dict[str, SummarySpec]) -> list[str]:
        """The keys of ``specs`` with those reading one slice together, the slice :attr:`slices` holds
        first (the order does not change a number)."""
        if self.slices is None:
            return list(specs)
        held = self.slices.held

        def order(key: str) -> tuple[bool, tuple[list[int], list[int]]]:
            sel = selection(self.params, specs[key][2], specs[key][3])
            return (sel != held, sel)

        return sorted(specs, key=order)

    def _means(self, ap: bool, iou_thr: float | None, area: str, max_det: int | None) -> np.ndarray:
        aind, mind = selection(self.params, area, max_det)
        if self.slices is None:
            return summarize_per_category(
                self.precision, self.recall, self.params, ap, iou_thr, area, max_det
            )
        if not aind or not mind:
            return np.full(self.slices.table.n_cats, -1.0)
        precision, recall, _ = self.slices.arrays(aind, mind)
        return summarize_per_category(
            precision, recall, self.slices.sub_params(aind, mind), ap, iou_thr, area, max_det
        )

    def summary_value(self, ap: bool, iou_thr: float | None, area: str, max_det: int | None) -> float:
        """pycocotools' ``_summarize`` of one slice (:func:`~deteval.detection.coco.summary.summarize_value`),
        from the whole arrays or, for a :class:`SlicedCocoEvaluation`, from that slice alone."""
        if self.slices is None:
            return summarize_value(self.precision, self.recall, self.params, ap, iou_thr, area, max_det)
        return slice_value(self.slices, (ap, iou_thr, area, max_det))

    def slice_at(self, a: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """``precision[:, :, :, a, m]`` (T, R, K) and ``recall[:, :, a, m]`` (T, K): area range ``a``, maxDets
        ``m`` (indices), over the arrays' categories."""
        if self.slices is None:
            return self.precision[:, :, :, a, m], self.recall[:, :, a, m]
        precision, recall, _ = self.slices.arrays([a], [m])
        return precision[:, :, :, 0, 0], recall[:, :, 0, 0]

    def _curve_arrays(self, a: int, m: int) -> tuple[np.ndarray, np.ndarray, int, int]:
        """``precision`` and ``scores`` holding area range ``a`` and maxDets ``m``, and their indices there."""
        if self.slices is None:
            return self.precision, self.scores, a, m
        precision, _, scores = self.slices.arrays([a], [m], scores=True)
        assert scores is not None
        return precision, scores, 0, 0

    def to_result(self, *, per_class: bool = True) -> EvalResult:
        """An :class:`EvalResult` (protocol "coco") with the stats, per-class rows and the summary lines."""
        p = self.params
        summary: dict[str, Any] = {
            "iou_type": p.iou_type,
            "compat": self.compat,
            "stats": [float(s) for s in self.stats],
            **{n: float(s) for n, s in zip(self.stat_names, self.stats)},
            **self.counts,
            "params": p.to_dict(),
        }
        curves: dict[str, PRCurve] = {}
        t50 = np.flatnonzero(p.iou_thrs == 0.5)
        # the curve of the per-class ap50: at its maxDets (pycocotools reads maxDets[2] when there are more
        # than three), else at the last
        md = stat_maxdet(p, self.compat, "last")
        m = p.max_dets.index(md) if md in p.max_dets else len(p.max_dets) - 1
        if p.use_cats and t50.size and "all" in p.area_lbl:
            precision, scores, a, m = self._curve_arrays(p.area_lbl.index("all"), m)
            for k, pos in enumerate(self.array_categories.tolist()):
                name = self.cat_names[pos]
                prec = precision[t50[0], :, k, a, m]
                if (prec > -1).all():
                    curves[name] = PRCurve(
                        recall=p.rec_thrs.copy(),
                        precision=prec.copy(),
                        scores=scores[t50[0], :, k, a, m].copy(),
                    )
        return EvalResult(
            protocol="coco",
            summary=summary,
            per_class=self.per_class() if per_class else {},
            curves=curves,
            warnings=list(self.warnings),
            lines=list(self.lines),
        )

    def to_dict(self, *, arrays: bool = False) -> dict[str, Any]:
        """JSON-ready dict; ``arrays=True`` adds ``precision``, ``recall`` and ``scores`` as nested lists."""
        out = self.to_result().to_dict()
        if arrays:
            precision, recall, scores = self.full_arrays()
            out["precision"] = precision.tolist()
            out["recall"] = recall.tolist()
            out["scores"] = scores.tolist()
        return out

    def to_json(self, *, arrays: bool = False, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(arrays=arrays), indent=indent)


def finish_evaluation(
    table: MatchTable | None,
    params: CocoParams,
    compat: str,
    gt: CocoGroundTruth,
    counts: dict[str, int],
    warnings: list[str],
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> CocoEvaluation:
    """Accumulate ``table`` (or take ``arrays``: precision, recall, scores already accumulated), summarize."""
    cat_index = None
    slices = None
    if arrays is None:
        if table is None:
            raise ValueError("finish_evaluation needs a table or accumulated arrays")
        if params.use_cats and full_arrays_bytes(params, table.n_cats) > FULL_ARRAYS_BYTES:
            table, cat_index = with_truth_only(table)
            if full_arrays_bytes(params, table.n_cats) > FULL_ARRAYS_BYTES:
                slices = ArraySlices(table, params)  # (one area range and maxDets at a time)
                slices.check()
        if slices is None:
            arrays = accumulate(table, params.rec_thrs, params.max_dets)
    if slices is not None:
        precision = recall = scores = LAZY
        stats, lines = summarize(None, None, params, compat, sliced_stats(slices, compat))
    else:
        assert arrays is not None
        precision, recall, scores = arrays
        stats, lines = summarize(precision, recall, params, compat)
    cat_sel = id_selection(gt.cat_ids, params.cat_ids, "category")
    warnings = unknown_id_notes(gt, params, compat) + warnings
    repeated = sorted({m for m in params.max_dets if params.max_dets.count(m) > 1})
    if repeated:
        warnings.append(
            f"maxDets {list(params.max_dets)} lists {', '.join(map(str, repeated))} twice: as in pycocotools, "
            "each listing is evaluated (the same numbers)"
        )
    if compat == "pycocotools" and len(params.max_dets) < 3 and params.iou_type != "keypoints":
        warnings.append(
            "fewer than 3 maxDets: pycocotools would crash; the stats that need maxDets[2] are -1"
        )
    literal = 20 if params.iou_type == "keypoints" else 100
    if compat == "pycocotools" and literal not in params.max_dets:
        warnings.append(
            f"maxDets {list(params.max_dets)} lacks {literal}: as in pycocotools, the stats read at maxDets={literal} "
            "are -1 (--compat fixed, Python compat='fixed', reads them at maxDets[-1])"
        )
    if np.count_nonzero(gt.ann_id == 0):
        warnings.append(
            "a ground-truth annotation has id 0: deteval matches it normally; pycocotools would count "
            "its matches as unmatched (false positives), so its numbers differ here"
        )
    return (CocoEvaluation if slices is None else SlicedCocoEvaluation)(
        params=params,
        compat=compat,
        precision=precision,
        recall=recall,
        scores=scores,
        stats=stats,
        lines=lines,
        cat_ids=gt.cat_ids[cat_sel].tolist() if params.use_cats else [-1],
        cat_names=[gt.cat_names[i] for i in cat_sel.tolist()] if params.use_cats else ["all"],
        counts=counts,
        warnings=warnings + gt.warnings,
        cat_index=cat_index,
        slices=slices,
    )


#: The arrays of a :class:`SlicedCocoEvaluation` before they are first read.
LAZY = np.empty(0)


class SlicedCocoEvaluation(CocoEvaluation):
    """A :class:`CocoEvaluation` of so many categories with ground truth that ``precision``, ``scores`` and
    ``recall`` for all of them would take more than :data:`FULL_ARRAYS_BYTES`: its numbers (stats, per-class
    rows, curves) are computed from :attr:`slices`, one area range and maxDets at a time (the same numbers:
    :mod:`deteval.detection.coco.slices`), and the whole arrays are laid out when first read, if they fit in
    :data:`MAX_ARRAYS_BYTES` (else :class:`~deteval.errors.ConfigError`)."""

    def _whole(self, i: int, name: str) -> np.ndarray:
        given = self.__dict__[f"_{name}"]
        if given is not LAZY:
            return given
        if "_whole_arrays" not in self.__dict__:
            assert self.slices is not None
            check_arrays_bound(self.params, self.slices.table.n_cats)
            self.__dict__["_whole_arrays"] = accumulate(
                self.slices.table, self.params.rec_thrs, self.params.max_dets
            )
        return self.__dict__["_whole_arrays"][i]

    @property  # (the dataclass field, laid out when first read)
    def precision(self) -> np.ndarray:
        return self._whole(0, "precision")

    @precision.setter
    def precision(self, value: np.ndarray) -> None:
        self.__dict__["_precision"] = value

    @property
    def recall(self) -> np.ndarray:
        return self._whole(1, "recall")

    @recall.setter
    def recall(self, value: np.ndarray) -> None:
        self.__dict__["_recall"] = value

    @property
    def scores(self) -> np.ndarray:
        return self._whole(2, "scores")

    @scores.setter
    def scores(self, value: np.ndarray) -> None:
        self.__dict__["_scores"] = value

    def __repr__(self) -> str:  # (the dataclass repr would lay out the arrays)
        return f"SlicedCocoEvaluation(stats={self.stats!r}, categories={len(self.cat_ids)})"


def sliced_stats(slices: ArraySlices, compat: str) -> dict[SummarySpec, float]:
    """Each summary number of :func:`summary_specs` from the slice it reads, the numbers reading one slice
    computed one after the other (the slice is laid out once)."""
    p = slices.params
    specs = summary_specs(p, compat)
    # the slice of the per-class AP50 curves last, with its scores: to_result() reads it next
    curve = None
    if "all" in p.area_lbl:
        md = stat_maxdet(p, compat, "last")
        curve = (
            [p.area_lbl.index("all")],
            [p.max_dets.index(md) if md in p.max_dets else len(p.max_dets) - 1],
        )

    def order(spec: SummarySpec) -> tuple[bool, tuple[list[int], list[int]]]:
        sel = selection(p, spec[2], spec[3])
        return (sel == curve, sel)

    return {spec: slice_value(slices, spec, curve) for spec in sorted(set(specs), key=order)}


def slice_value(
    slices: ArraySlices, spec: SummarySpec, with_scores: tuple[list[int], list[int]] | None = None
) -> float:
    """pycocotools' ``_summarize`` of ``spec`` from the one slice it reads (laid out with its scores when it
    is ``with_scores``), −1 where it selects nothing."""
    ap, iou_thr, area, max_det = spec
    aind, mind = selection(slices.params, area, max_det)
    if not aind or not mind:
        return -1.0
    precision, recall, _ = slices.arrays(aind, mind, scores=(aind, mind) == with_scores)
    return summarize_value(precision, recall, slices.sub_params(aind, mind), ap, iou_thr, area, max_det)


def full_arrays_bytes(params: CocoParams, n_cats: int, n_max_dets: int | None = None) -> int:
    """Bytes of ``precision``, ``scores`` (T×R×K×A×M float64 each) and ``recall`` (T×K×A×M) for ``n_cats``
    categories (M: ``n_max_dets``, by default ``len(params.max_dets)``)."""
    M = len(params.max_dets) if n_max_dets is None else n_max_dets
    per_cat = params.iou_thrs.shape[0] * len(params.area_rng) * M
    return 8 * n_cats * per_cat * (2 * params.rec_thrs.shape[0] + 1)


def check_arrays_bound(params: CocoParams, n_cats: int, n_max_dets: int | None = None) -> None:
    """Refuse (:class:`~deteval.errors.ConfigError`) an evaluation whose arrays for ``n_cats`` categories
    (:func:`full_arrays_bytes`) would take more than :data:`MAX_ARRAYS_BYTES`."""
    need = full_arrays_bytes(params, n_cats, n_max_dets)
    if need > MAX_ARRAYS_BYTES:
        raise ConfigError(
            f"{n_cats:,} categories with ground truth need {need / 2**30:.1f} GiB of pycocotools' arrays "
            f"(precision, scores and recall over thresholds x recall levels x categories x area ranges x "
            f"maxDets), above the bound of {MAX_ARRAYS_BYTES / 2**30:.0f} GiB: evaluate the categories in "
            "parts (cat_ids), or with fewer IoU thresholds, recall levels, area ranges or maxDets"
        )


def with_truth_only(table: MatchTable) -> tuple[MatchTable, np.ndarray]:
    """``table`` restricted to the categories with non-ignored ground truth in some area range, renumbered
    in the same order, and their indices. The others' lists are never scored (pycocotools leaves −1 for a
    category without non-ignored ground truth), and each category's lists are ranked on their own, so the
    numbers of the categories kept do not change."""
    keep = np.flatnonzero((table.npig > 0).any(axis=1))
    new_index = selected_positions(keep, table.n_cats)
    rows = np.flatnonzero(new_index[table.cat] >= 0)
    gt_cols: dict[str, Any] = {}
    if table.gt_img is not None and table.gt_cat is not None and table.gt_counted is not None:
        g = np.flatnonzero(new_index[table.gt_cat] >= 0)
        gt_cols = {
            "gt_img": table.gt_img[g],
            "gt_cat": new_index[table.gt_cat[g]],
            "gt_counted": table.gt_counted[:, g],
        }
    kept = MatchTable(
        cat=new_index[table.cat[rows]],
        img=table.img[rows],
        score=table.score[rows],
        rank=table.rank[rows],
        tp=table.tp[:, :, rows],
        ig=table.ig[:, :, rows],
        npig=table.npig[keep],
        n_cats=int(keep.shape[0]),
        ranked=table.ranked,
        **gt_cols,
    )
    return kept, keep
