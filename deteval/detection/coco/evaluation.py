"""The result of a COCO evaluation (:class:`CocoEvaluation`: pycocotools' ``eval`` arrays and summary) and
the protocol's last step, :func:`finish_evaluation`: a merged match table accumulated and summarized."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.detection.coco.params import id_selection, unknown_id_notes
from deteval.detection.coco.summary import (
    stat_maxdet,
    stat_names,
    summarize,
    summarize_value,
)
from deteval.detection.coco_accumulate import accumulate
from deteval.detection.coco_match import MatchTable
from deteval.detection.coco_params import CocoParams
from deteval.io.coco import CocoGroundTruth
from deteval.results import EvalResult, PRCurve

__all__ = ["CocoEvaluation", "finish_evaluation"]


@dataclass
class CocoEvaluation:
    """The full COCO result: pycocotools' ``eval`` arrays plus the summary.

    * ``precision[T, R, K, A, M]``, ``recall[T, K, A, M]``, ``scores[T, R, K, A, M]``: as ``COCOeval.eval``
      (−1 where a category has no ground truth in an area range).
    * ``stats``: the 12 summary numbers (10 for keypoints), ``lines``: pycocotools' printed summary.
    * ``cat_ids`` / ``cat_names``: the K categories (sorted by id), ``params``: the parameters used.
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

    @property
    def stat_names(self) -> tuple[str, ...]:
        return stat_names(self.params, self.compat)

    def _mean(self, ap: bool, k: int | None, iou_thr: float | None, area: str, max_det: int | None) -> float:
        return summarize_value(self.precision, self.recall, self.params, ap, iou_thr, area, max_det, k)

    def per_class(self) -> dict[str, dict[str, float]]:
        """Per category: ap, ap50, ap75, aps/apm/apl and ar (−1 where undefined), as pycocotools would average
        a single category's slice of ``precision`` / ``recall``."""
        p = self.params
        md_ap = stat_maxdet(p, self.compat, "ap")
        md = stat_maxdet(p, self.compat, "last")
        out: dict[str, dict[str, float]] = {}
        if not p.use_cats:
            return out
        kp = p.iou_type == "keypoints"
        for k, name in enumerate(self.cat_names):
            row = {
                "ap": self._mean(True, k, None, "all", md_ap),
                "ap50": self._mean(True, k, 0.5, "all", md),
                "ap75": self._mean(True, k, 0.75, "all", md),
            }
            for lbl, key in (("small", "aps"), ("medium", "apm"), ("large", "apl")):
                if not (kp and lbl == "small"):
                    row[key] = self._mean(True, k, None, lbl, md)
            row[f"ar{md}" if md is not None else "ar"] = self._mean(False, k, None, "all", md)
            key = name
            while key in out:  # two categories with one name: keep both rows
                key = f"{key} (id {self.cat_ids[k]})"
            out[key] = row
        return out

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
        if p.use_cats and t50.size and "all" in p.area_lbl:
            a = p.area_lbl.index("all")
            for k, name in enumerate(self.cat_names):
                prec = self.precision[t50[0], :, k, a, -1]
                if (prec > -1).all():
                    curves[name] = PRCurve(
                        recall=p.rec_thrs.copy(),
                        precision=prec.copy(),
                        scores=self.scores[t50[0], :, k, a, -1].copy(),
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
            out["precision"] = self.precision.tolist()
            out["recall"] = self.recall.tolist()
            out["scores"] = self.scores.tolist()
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
    if arrays is None:
        if table is None:
            raise ValueError("finish_evaluation needs a table or accumulated arrays")
        arrays = accumulate(table, params.rec_thrs, params.max_dets)
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
    return CocoEvaluation(
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
    )
