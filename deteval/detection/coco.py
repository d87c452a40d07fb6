"""COCO evaluation (bbox, segm, keypoints), identical to pycocotools' ``COCOeval`` and much faster.

>>> ev = evaluate_coco("instances_val.json", "detections.json")          # doctest: +SKIP
>>> ev.stats[0], ev.precision.shape                                       # doctest: +SKIP
(0.504..., (10, 101, 80, 4, 3))

The protocol (pycocotools, ``cocoeval.py``): per (image, category), detections sorted stably by descending
score and cut to ``maxDets[-1]``; greedy matching at each IoU threshold t starting from ``min(t, 1 − 1e−10)``,
regular ground truth before ignored (crowd, or outside the area range), the later ground truth winning an IoU
tie, crowds absorbing any number of detections (crowd IoU = intersection / detection area); per category,
area range and maxDet, precision ``tp/(tp+fp+np.spacing(1))`` made monotone and sampled at 101 recall levels
with ``searchsorted(side="left")``; AP = mean over thresholds, recall levels and categories with ground truth.

Compatibility profiles (``compat=``), side by side:

================================  =================================  ==================================
behaviour                         ``"pycocotools"`` (default)        ``"fixed"``
================================  =================================  ==================================
stat 0 (AP@[.5:.95], all)         at ``maxDets == 100`` literally     at ``maxDets[-1]``
                                  (−1 if 100 is not in maxDets)
stats 1–5, 8–11                   at ``maxDets[2]`` (−1 if absent)    at ``maxDets[-1]``
a user ``ignore`` flag            overwritten by ``iscrowd``         honoured (ignore = iscrowd or ignore)
keypoint stats                    at ``maxDets == 20`` literally      at ``maxDets[-1]``
================================  =================================  ==================================

Both profiles differ from pycocotools where it has bugs rather than conventions: a ground-truth annotation with
``id == 0`` is matched like any other (pycocotools stores a match as the gt id with 0 meaning "unmatched", so a
detection on that annotation becomes a false positive); an empty results list is valid (pycocotools crashes);
duplicate annotation ids are rejected (pycocotools silently keeps the last). Everything else is the same in
both profiles and equals pycocotools to the bit.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from os import PathLike
from typing import Any, TypeVar

import numpy as np

from deteval.collector import collector_paused
from deteval.core.sorting import sorted_unique
from deteval.detection import coco_match
from deteval.detection.coco_accumulate import accumulate, pycocotools_views
from deteval.detection.coco_iou import KeypointOks, bbox_iou_blocks, segm_iou_blocks
from deteval.detection.coco_match import MatchTable, match_groups
from deteval.detection.coco_params import CocoParams
from deteval.detection.coco_rles import dt_rles, gt_rles
from deteval.errors import ConfigError, DetevalError, InputFormatError, ValidationError
from deteval.io.arrays import numeric_array, rows_beyond_exact
from deteval.io.coco import (
    CHUNK_BYTES,
    CocoGroundTruth,
    CocoResults,
    RawTail,
    gt_head,
    load_coco_gt,
    load_coco_results,
    load_gt_with_head,
    results_part,
    results_tail,
    results_two_parts,
    results_with_tail,
    wide_scores,
)
from deteval.io.coco.keypoints_tail import keypoints_tail, keypoints_with_tail, read_keypoints
from deteval.io.coco.segm_tail import PendingMasks, segm_tail, segm_with_pending_tail, segm_with_tail
from deteval.results import EvalResult, PRCurve
from deteval.run.coco_reading import (
    KeypointsTail,
    TailBuffer,
    keypoints_split_byte,
    split_reading,
    tail_buffer,
)
from deteval.run.forked import Forked, can_fork, fork_call

__all__ = [
    "COMPAT_MODES",
    "CocoEvaluation",
    "CocoStream",
    "evaluate_coco",
    "evaluate_coco_arrays",
    "match_coco",
]

COMPAT_MODES = ("pycocotools", "fixed")

DET_STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
KPT_STAT_NAMES = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")


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
        return KPT_STAT_NAMES if self.params.iou_type == "keypoints" else DET_STAT_NAMES

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


# ------------------------------------------------------------------------------------------------ summary


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


# ------------------------------------------------------------------------------------------------ driver


def resolve_params(params: CocoParams | Any | None, iou_type: str | None) -> CocoParams:
    """``params`` as a :class:`CocoParams`: the defaults of ``iou_type`` for None, else converted from a
    pycocotools ``Params`` or a dict of options."""
    if params is None:
        return CocoParams.default(iou_type or "bbox")
    if not isinstance(params, CocoParams):
        if hasattr(params, "iouThrs"):
            params = CocoParams.from_pycocotools(params)
        elif isinstance(params, Mapping):
            params = CocoParams.from_options(**{"iou_type": iou_type or "bbox", **params})
        else:
            raise ConfigError(
                f"params must be a CocoParams, a pycocotools Params or a dict, not {type(params).__name__}"
            )
    if iou_type is not None and iou_type != params.iou_type:
        params = replace(params, iou_type=iou_type)
    params = replace(params).validated()
    if (np.diff(params.rec_thrs) < 0).any():
        raise ConfigError("rec_thrs must be in ascending order")
    return params


def id_selection(ids: np.ndarray, wanted: Sequence[Any] | None, what: str) -> np.ndarray:
    """Indices (into sorted ``ids``) of the evaluated ids; all by default. Wanted ids that ``ids`` lacks
    select nothing, as in pycocotools (:func:`unknown_id_notes` warns of them, or refuses them under
    ``compat="fixed"``)."""
    if wanted is None:
        return np.arange(ids.shape[0])
    w, known = _known(ids, wanted, what)
    return np.searchsorted(ids, w[known])


def _known(ids: np.ndarray, wanted: Sequence[Any], what: str) -> tuple[np.ndarray, np.ndarray]:
    """The distinct wanted ids (ascending) and which of them are in sorted ``ids``."""
    w = np.unique(np.asarray(list(wanted)))
    if (
        w.size
        and ids.size
        and w.dtype.kind != ids.dtype.kind
        and not (w.dtype.kind in "iu" and ids.dtype.kind in "iu")
    ):
        raise ConfigError(f"{what} ids have the wrong type")
    if not ids.size:
        return w, np.zeros(w.shape, bool)
    pos = np.minimum(np.searchsorted(ids, w), ids.shape[0] - 1)
    return w, ids[pos] == w


def unknown_id_notes(gt: CocoGroundTruth, params: CocoParams, compat: str) -> list[str]:
    """Warnings for ``img_ids`` / ``cat_ids`` that name ids the ground truth lacks.

    pycocotools evaluates them (an unknown category has no ground truth, so its precision is -1 and it is left
    out of every mean; an unknown image has nothing to match), so its numbers are those of the known ids alone:
    under ``compat="pycocotools"`` they are ignored with this warning. Under ``compat="fixed"`` they are
    refused (ConfigError), since a misspelt id is more likely than a deliberate one.
    """
    notes = []
    for what, ids, wanted in (
        ("image", gt.image_ids, params.img_ids),
        ("category", gt.cat_ids, params.cat_ids),
    ):
        if wanted is None:
            continue
        w, known = _known(ids, wanted, what)
        lost = w[~known].tolist()
        if not lost:
            continue
        if compat == "fixed":
            raise ConfigError(f"{what} id {lost[0]!r} is not in the ground truth")
        shown = ", ".join(repr(v) for v in lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        notes.append(
            f"{len(lost)} {what} id{'s' if len(lost) > 1 else ''} not in the ground truth ignored ({shown}): "
            "pycocotools evaluates them to nothing (compat='fixed' refuses them)"
        )
    return notes


#: Pairs whose OKS is computed at once (about 6 MB of temporaries with 17 keypoints; from 4k to 20k pairs
#: the time is the same, larger chunks are slower, being out of cache).
KEYPOINT_PAIR_CHUNK = 8_000


def match_coco(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    compat: str = "pycocotools",
    images: np.ndarray | None = None,
    categories: np.ndarray | None = None,
    ranked: bool = False,
) -> tuple[MatchTable, dict[str, int], list[str]]:
    """Run the matching stage on columnar inputs; returns the compact :class:`MatchTable` plus counts.

    ``images``: optional indices (into the evaluated images, ascending id) of one shard; tables of disjoint
    shards merged with :func:`~deteval.detection.coco_match.merge_tables` accumulate to the full result.
    ``categories``: optional indices (into the evaluated categories, ascending id) to match alone (with
    ``use_cats``); the other categories then have no detection and no ground truth in the table.
    ``ranked``: the rows in accumulation's order (:func:`~deteval.detection.coco_match.match_groups`).
    """
    if compat not in COMPAT_MODES:
        raise ConfigError(f"unknown compat {compat!r}: use one of {', '.join(COMPAT_MODES)}")
    warnings: list[str] = []
    img_sel = id_selection(gt.image_ids, params.img_ids, "image")
    cat_sel = id_selection(gt.cat_ids, params.cat_ids, "category")
    img_map = np.full(gt.image_ids.shape[0], -1, dtype=np.int64)
    img_map[img_sel] = np.arange(img_sel.shape[0])
    cat_map = np.full(gt.cat_ids.shape[0], -1, dtype=np.int64)
    cat_map[cat_sel] = np.arange(cat_sel.shape[0])
    n_img = int(img_sel.shape[0])
    n_cat_sel = int(cat_sel.shape[0])

    # every image (category) evaluated, the default: the indices are their own map, every record is in
    # (no copy, no mask of the results' rows: each category run of a half of a large set reads them all)
    all_img, all_cat = n_img == gt.image_ids.shape[0], n_cat_sel == gt.cat_ids.shape[0]
    g_img, d_img = (gt.img, res.img) if all_img else (img_map[gt.img], img_map[res.img])
    g_cat, d_cat = (gt.cat, res.cat) if all_cat else (cat_map[gt.cat], cat_map[res.cat])
    gmask: np.ndarray | None = None
    dmask: np.ndarray | None = None
    if not (all_img and all_cat):
        gmask, dmask = (g_img >= 0) & (g_cat >= 0), (d_img >= 0) & (d_cat >= 0)
        if dmask.sum() < len(res):
            warnings.append(
                f"{len(res) - int(dmask.sum())} detections outside the selected images/categories "
                f"were not evaluated"
            )
    if images is not None and n_img:
        in_shard = np.zeros(n_img, dtype=bool)
        in_shard[np.asarray(images, dtype=np.int64)] = True
        gmask = _and(gmask, in_shard[g_img if all_img else np.maximum(g_img, 0)])
        dmask = _and(dmask, in_shard[d_img if all_img else np.maximum(d_img, 0)])
    if categories is not None and n_cat_sel:
        in_part = np.zeros(n_cat_sel, dtype=bool)
        in_part[np.asarray(categories, dtype=np.int64)] = True
        gmask = _and(gmask, in_part[g_cat if all_cat else np.maximum(g_cat, 0)])
        dmask = _and(dmask, in_part[d_cat if all_cat else np.maximum(d_cat, 0)])
    gkeep = np.arange(len(gt)) if gmask is None else np.flatnonzero(gmask)
    dkeep = np.arange(len(res)) if dmask is None else np.flatnonzero(dmask)
    # every record kept (the usual case): views instead of copies of every column
    gsel = slice(None) if gkeep.shape[0] == len(gt) else gkeep
    dsel = slice(None) if dkeep.shape[0] == len(res) else dkeep
    g_img, g_cat, d_img, d_cat = g_img[gsel], g_cat[gsel], d_img[dsel], d_cat[dsel]
    g_pos = gkeep.astype(np.int64)
    d_pos = dkeep.astype(np.int64)
    if params.use_cats:
        n_cats = n_cat_sel
        g_order, d_order = g_pos, d_pos
    else:  # one group per image; pycocotools concatenates its lists category by category, in catIds order
        n_cats = 1
        listed = _listing_order(gt, params, cat_sel)
        g_order = listed[g_cat] * (len(gt) + 1) + g_pos
        d_order = listed[d_cat] * (len(res) + 1) + d_pos
        g_cat = np.zeros_like(g_cat)
        d_cat = np.zeros_like(d_cat)

    crowd = gt.iscrowd[gsel]
    ignore = crowd.copy() if compat == "pycocotools" else crowd | gt.ignore[gsel]
    if params.iou_type == "keypoints":
        ignore = ignore | (gt.num_keypoints[gsel] == 0)

    iou_type = params.iou_type
    if iou_type == "bbox":
        # (np.take: a quarter of the time of res.bbox[dkeep] for rows of 4)
        dbox = res.bbox if isinstance(dsel, slice) else np.take(res.bbox, dsel, axis=0)
        gbox = gt.bbox if isinstance(gsel, slice) else np.take(gt.bbox, gsel, axis=0)

        def iou_fn(
            di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
        ) -> np.ndarray:
            return bbox_iou_blocks(dbox, gbox, crowd, di, gi, bs, bnd, bng)
    elif iou_type == "keypoints":
        if res.keypoints is None or gt.keypoints is None:
            raise InputFormatError("keypoints evaluation needs keypoints in the ground truth and the results")
        sig = params.kpt_oks_sigmas
        if len(res) and res.keypoints.shape[1] != 3 * sig.shape[0]:
            raise ValidationError(
                f"results have {res.keypoints.shape[1] // 3} keypoints, sigmas {sig.shape[0]}",
                file=res.source,
            )
        if len(gt) and gt.keypoints.shape[1] != 3 * sig.shape[0]:
            raise ValidationError(
                f"ground truth has {gt.keypoints.shape[1] // 3} keypoints, sigmas {sig.shape[0]}",
                file=gt.source,
            )
        # (a half's detections: their x and y taken from the whole matrix, without a copy of their rows)
        d_rows = None if isinstance(dsel, slice) else dsel
        oks = KeypointOks(res.keypoints, gt.keypoints[gsel], gt.bbox[gsel], gt.area[gsel], sig, d_rows)
        # pairs certainly below the lowest threshold the matcher uses are never candidates: not computed
        lowest = float(np.minimum(params.iou_thrs, 1 - 1e-10).min())

        def iou_fn(
            di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
        ) -> np.ndarray:
            return oks(di, gi, below=lowest)

        if not params.use_cats and compat == "pycocotools":
            warnings.append(
                "keypoints with use_cats=False: pycocotools' computeOks ignores useCats and reads the ground "
                "truth of category -1, which is empty, so no detection is ever matched and AP is 0 where there "
                "is ground truth; reproduced here (compat='fixed' pools the categories instead)"
            )

            def iou_fn(
                di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
            ) -> np.ndarray:
                return np.full(di.shape[0], -np.inf)  # no pair is ever a candidate, at any threshold
    else:
        grles = gt_rles(gt, gkeep)
        drles = dt_rles(res, dkeep, gt)

        def iou_fn(
            di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
        ) -> np.ndarray:
            return segm_iou_blocks(drles, grles, crowd, di, gi, bs, bnd, bng)

    table = match_groups(
        n_imgs=n_img,
        n_cats=n_cats,
        iou_thrs=params.iou_thrs,
        area_rng=params.area_rng,
        max_det=params.max_dets[-1],
        d_img=d_img,
        d_cat=d_cat,
        d_score=res.score[dsel],
        d_order=d_order,
        d_area=res.area[dsel],
        g_img=g_img,
        g_cat=g_cat,
        g_order=g_order,
        g_area=gt.area[gsel],
        g_crowd=crowd,
        g_ignore=ignore,
        iou_fn=iou_fn,
        # OKS holds about half a dozen K-wide arrays per pair in flight (bbox IoU: a few numbers)
        pair_chunk=min(coco_match.PAIR_CHUNK, KEYPOINT_PAIR_CHUNK) if iou_type == "keypoints" else None,
        ranked=ranked,
    )
    counts = {
        "n_images": n_img,
        "n_categories": n_cat_sel,
        "n_gt": int(gkeep.shape[0]),
        "n_dt": int(dkeep.shape[0]),
        "n_dt_evaluated": len(table),
    }
    return table, counts, warnings


def _and(mask: np.ndarray | None, other: np.ndarray) -> np.ndarray:
    """``mask & other`` (in place), or ``other`` where there is no mask yet (every record in)."""
    if mask is None:
        return other
    mask &= other
    return mask


def _listing_order(gt: CocoGroundTruth, params: CocoParams, cat_sel: np.ndarray) -> np.ndarray:
    """Per selected category (index into ``cat_sel``), its position in pycocotools' pooled lists: with
    ``useCats=0`` pycocotools keeps ``params.catIds`` in the given order (it sorts them only with useCats) and
    lists ground truths and detections category by category in that order, which decides score and IoU ties."""
    if params.cat_ids is None:
        return np.arange(cat_sel.shape[0], dtype=np.int64)  # pycocotools' default: sorted(getCatIds())
    given = list(params.cat_ids)
    if len(given) != len(np.unique(np.asarray(given))):
        raise ConfigError(
            f"cat_ids {given} repeat an id: with use_cats=False pycocotools would list (and count) that "
            "category's objects and detections once per repetition"
        )
    known = np.isin(np.asarray(given), gt.cat_ids[cat_sel])  # unknown ids list nothing (unknown_id_notes)
    order = np.empty(cat_sel.shape[0], dtype=np.int64)
    order[np.searchsorted(gt.cat_ids[cat_sel], np.asarray(given)[known])] = np.arange(int(known.sum()))
    return order


#: Detections per matching shard: larger inputs are matched in shards of whole images (bounded memory).
SHARD_DETECTIONS = 400_000


def match_in_shards(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    compat: str,
    categories: np.ndarray | None = None,
    images: np.ndarray | None = None,
) -> tuple[MatchTable, dict[str, int], list[str]]:
    """:func:`match_coco` over shards of consecutive images holding about ``SHARD_DETECTIONS`` detections each,
    merged; identical to one call (groups never straddle images) with bounded temporary memory.
    ``categories``, ``images``: as in :func:`match_coco`. (A category half matches runs of its categories
    instead, each ranked and accumulated on its own: :func:`_half`.)"""
    from deteval.detection.coco_match import merge_tables

    if len(res) <= SHARD_DETECTIONS:
        return match_coco(gt, res, params, compat, images=images, categories=categories)
    n_img = int(id_selection(gt.image_ids, params.img_ids, "image").shape[0])
    img_map = np.full(gt.image_ids.shape[0], -1, dtype=np.int64)
    img_map[id_selection(gt.image_ids, params.img_ids, "image")] = np.arange(n_img)
    d_img = img_map[res.img]
    in_images = np.ones(n_img, dtype=bool)
    if images is not None and n_img:  # only these images' detections fill the shards
        in_images[:] = False
        in_images[np.asarray(images, dtype=np.int64)] = True
        d_img = np.where(in_images[np.maximum(d_img, 0)], d_img, -1)
    if categories is not None and params.use_cats:  # only these categories' detections fill the shards
        cat_sel = id_selection(gt.cat_ids, params.cat_ids, "category")
        in_part = np.zeros(gt.cat_ids.shape[0], dtype=bool)
        in_part[cat_sel[np.asarray(categories, dtype=np.int64)]] = True
        d_img = np.where(in_part[res.cat], d_img, -1)
    per_img = np.bincount(d_img[d_img >= 0], minlength=n_img)
    shard = np.cumsum(per_img) // SHARD_DETECTIONS  # non-decreasing shard number per image
    tables: list[MatchTable] = []
    counts: dict[str, int] | None = None
    warnings: list[str] = []
    for s in sorted_unique(shard[in_images]).tolist():
        t, c, w = match_coco(
            gt, res, params, compat, images=np.flatnonzero((shard == s) & in_images), categories=categories
        )
        tables.append(t)
        warnings = w
        counts = c if counts is None else _sum_counts(counts, c)
    if counts is None:  # no image selected, so no shard: the one-pass match gives the same (empty) table
        return match_coco(gt, res, params, compat, images=images, categories=categories)
    return merge_tables(tables), counts, warnings


def _category_shards(
    res: CocoResults, cat_sel: np.ndarray, gt: CocoGroundTruth, categories: np.ndarray
) -> list[np.ndarray] | None:
    """``categories`` (ascending indices into the evaluated ones) cut into runs holding at most
    ``SHARD_DETECTIONS`` detections each; None if one category alone holds more."""
    per_cat = _per_category(res, cat_sel, gt.cat_ids.shape[0])[categories]
    if per_cat.size and int(per_cat.max()) > SHARD_DETECTIONS:
        return None
    runs: list[np.ndarray] = []
    lo, total = 0, 0
    for k, n in enumerate(per_cat.tolist()):
        if total + n > SHARD_DETECTIONS and k > lo:
            runs.append(categories[lo:k])
            lo, total = k, 0
        total += n
    runs.append(categories[lo:])
    return runs


def _sum_counts(counts: dict[str, int], c: dict[str, int]) -> dict[str, int]:
    """The counts of two disjoint shards of one evaluation (the same images and categories selected)."""
    return {k: (v if k in ("n_images", "n_categories") else counts[k] + v) for k, v in c.items()}


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


@collector_paused  # (tens of thousands of records, no cycles: see deteval.collector)
def evaluate_coco(
    gt: Any,
    results: Any,
    *,
    iou_type: str | None = None,
    params: CocoParams | Any | None = None,
    compat: str = "pycocotools",
    on_error: str = "raise",
    client: Any = None,
    shards: int | None = None,
) -> CocoEvaluation:
    """Evaluate ``results`` against ``gt`` with the COCO protocol (see the module docstring).

    ``gt``: a path, a parsed dict, a pycocotools ``COCO`` or a :class:`CocoGroundTruth`; ``results``: a path,
    a list of dicts, an N×7 array, a pycocotools ``COCO`` (from ``loadRes``) or a :class:`CocoResults`.
    ``iou_type``: "bbox" (default), "segm" or "keypoints"; ``params``: a :class:`CocoParams`, a pycocotools
    ``Params`` or a dict of options; ``compat``: "pycocotools" (default) or "fixed". ``on_error="skip"``:
    bad result records and ground-truth annotations are left out, listed in the warnings and counted in
    ``skipped_records`` (see :func:`~deteval.io.coco.load_coco_results`); the summary always holds the count.
    ``results`` may also be several result files (a list of paths, e.g. one per training rank): read as
    their concatenation in the given order. ``client``: a ``dask.distributed`` Client; the images are then
    split into ``shards`` (default: one per worker thread) that workers load and match on their own, and
    only the match tables come back (:mod:`deteval.run.coco`): the result is bit-identical.
    """
    if compat not in COMPAT_MODES:
        raise ConfigError(f"unknown compat {compat!r}: use one of {', '.join(COMPAT_MODES)}")
    if client is not None or shards is not None:
        from deteval.run.coco import evaluate_coco_sharded

        return evaluate_coco_sharded(
            gt,
            results,
            client=client,
            shards=shards,
            iou_type=iou_type,
            params=params,
            compat=compat,
            on_error=on_error,
        )
    p = resolve_params(params, iou_type)
    g, r, pending = _read_inputs(gt, results, p, on_error, defer=True)
    # a segm tail's masks stay in the child's text, read from it by the matcher: no dict made per mask (nor
    # its pages copied by a process that has only to read them)
    r.lazy_masks = pending
    split = _match_accumulate_forked(g, r, p, compat)
    border = None
    if split is not None:
        table, arrays, counts, warnings, border = split
    else:
        table, counts, warnings = match_in_shards(g, r, p, compat)
        arrays = None
    if p.iou_type == "bbox":
        warnings += _past_border_warning(g, r) if border is None else border
    counts = {**counts, "skipped_records": g.skipped + r.skipped}
    return finish_evaluation(table, p, compat, g, counts, r.warnings + warnings, arrays)


def read_inputs(
    gt: Any, results: Any, p: CocoParams, on_error: str = "raise"
) -> tuple[CocoGroundTruth, CocoResults]:
    """The ground truth and the results of an evaluation (the arguments of :func:`evaluate_coco`), read on
    two cores where that pays (see below): the same columns, warnings and errors as one process gives."""
    g, r, _ = _read_inputs(gt, results, p, on_error)
    return g, r


def _read_inputs(
    gt: Any, results: Any, p: CocoParams, on_error: str, defer: bool = False
) -> tuple[CocoGroundTruth, CocoResults, PendingMasks | None]:
    """:func:`read_inputs`; ``defer``: the masks of a segm tail read by a child may be left to make
    (:class:`~deteval.io.coco_segm_tail.PendingMasks`, returned; None when every mask is made)."""
    pending = None
    share = _fork_reading(gt, results, p, on_error)
    try:
        if isinstance(share, _Share) and share.gt_bytes:
            g = load_gt_with_head(gt, (share.gt_bytes, share.gt))
        else:
            g = load_coco_gt(
                gt,
                keep_segmentation=p.iou_type == "segm",
                need_keypoints=p.iou_type == "keypoints",
                on_error=on_error,
            )
        if isinstance(share, _SegmShare) and defer:
            got = share.read_pending(results, g)
            r, pending = (None, None) if got is None else got
        else:
            r = None if share is None else share.read(results, g)
    finally:
        if share is not None:
            share.child.cancel()
    if share is None and p.iou_type in ("segm", "keypoints"):
        r = _results_forked(g, results, p, on_error)
    if (
        r is None
        and p.iou_type == "keypoints"
        and on_error == "raise"
        and isinstance(results, (str, PathLike))
    ):
        r = read_keypoints(results, g)  # (one process)
    if r is not None and isinstance(results, (str, PathLike)) and wide_scores(r, results):
        r, pending = None, None  # (read by load_coco_results, which reads such an integer as written)
    if r is None and is_path_list(results):
        from deteval.run.coco import load_results_files

        r = load_results_files(results, g, iou_type=p.iou_type, on_error=on_error)
    elif r is None:
        r = load_coco_results(results, g, iou_type=p.iou_type, on_error=on_error)
    return g, r, pending


# ------------------------------------------------------------------------------------------- two cores
# Large inputs use a second core through forked children (deteval.run.forked): one parses the tail
# of the results file while this process reads the ground truth and the head (keypoints: the child's columns
# checked against the ground truth once back, deteval.io.coco_keypoints; segm: the child's masks checked
# without the ground truth, their ids and sizes against it once back, deteval.io.coco_segm_tail); then one matches (and accumulates) half of the categories,
# or with one category half of the images, while this process does the other half. Categories and images are
# independent, and each half runs the one-process code, so the numbers are the same bits. A child that fails
# for any reason is ignored and its work done here (raising any error as one process would).

#: Results files from this size on are read on two cores (smaller ones take a few tens of ms); so is a ground
#: truth file from this size on that is larger than the results.
FORK_RESULTS_BYTES = 8 << 20
#: Evaluated detections from which matching and accumulation are split by categories over two processes.
FORK_DETECTIONS = 100_000
#: ... for segm (masks) and keypoints (OKS), which cost far more per detection.
FORK_MASKS = 5_000
FORK_KEYPOINTS = 20_000
#: segm and keypoints: the share of the results file this process reads (it also unpickles the child's part,
#: 0.05 s for the RLEs of 10 MB of segm results, and puts the columns together: 0.04 s for 60k keypoint rows)
HEAD_SHARE = 0.45
#: ... for segm, whose parts cost about the same to read on either side since their boxes are made only when
#: read and the child's part is unpickled with the collector paused (measured: this process's 45% in 0.115 s
#: CPU, the child's 55% in 0.12 s plus 0.02 s to pickle)
SEGM_HEAD_SHARE = 0.5
#: ... when the segm child starts before the ground truth is read (:func:`segm_split_byte`): this process then
#: reads this share of the results less half the ground truth's bytes. Balanced on wall time, not CPU: the child
#: runs on fresh memory (page faults) and its part comes through the pipe. bench_coco's segm set, wall from the
#: first fork to the second, median of 8 fresh processes each, interleaved (the tail's masks made after the
#: matching fork): 0.158 s at 0.38, 0.150 at 0.42, 0.154 at 0.46, 0.166 at 0.5, 0.170 at 0.54. Since this
#: process reads its head as the child reads the tail (coco_segm_tail._lean_head), CPU of the ground truth and
#: head against the child's tail, median of 6 (loaded machine): 0.136 / 0.138 s at 0.42, 0.130 / 0.132 at
#: 0.45, 0.141 / 0.122 at 0.48; the child then pickles its part (about 5 ms)
SEGM_EARLY_SHARE = 0.46


class _Share:
    """A forked child reading its share of a bbox evaluation's files (:func:`_read_share`): the first
    ``gt_bytes`` of the ground truth's annotations array, then the results from byte ``start``, their columns
    written into ``shared`` (:class:`~deteval.io.coco.TailBuffer`). Its value is fetched once, and each part
    handed out once (None: the child failed), so that no reference outlives its use (at the Objects365 scale
    the results' part is 70 MB)."""

    def __init__(self, child: Forked, gt_bytes: int, start: int, shared: TailBuffer | None = None) -> None:
        self.child, self.gt_bytes, self.start, self.shared = child, gt_bytes, start, shared
        self._parts: list[Any] | None = None

    def _take(self, i: int) -> Any:
        if self._parts is None:
            value = self.child.result()
            self._parts = [None, None] if value is None else list(value)
        part, self._parts[i] = self._parts[i], None
        return part

    def gt(self) -> tuple[list[dict[str, Any]], int] | None:
        return self._take(0)

    def results(self) -> RawTail | None:
        return self._take(1)

    def read(self, results: Any, g: CocoGroundTruth) -> CocoResults | None:
        """The results: the head read here, the tail from the child (None if it failed)."""
        return results_with_tail(results, g, self.start, self.results, self.shared)


class _SegmShare:
    """A forked child reading the tail of a large segm results file from byte ``start`` without the ground
    truth (:func:`~deteval.io.coco_segm_tail.segm_tail`), started before this process reads it."""

    def __init__(self, child: Forked, start: int) -> None:
        self.child, self.start = child, start

    def read(self, results: Any, g: CocoGroundTruth) -> CocoResults | None:
        """The results: the head read here, the tail from the child (None if it failed)."""
        return segm_with_tail(results, g, self.start, self.child.result)

    def read_pending(self, results: Any, g: CocoGroundTruth) -> tuple[CocoResults, PendingMasks] | None:
        """:meth:`read`, the tail's mask dicts left to make (:class:`~deteval.io.coco_segm_tail.PendingMasks`)."""
        return segm_with_pending_tail(results, g, self.start, self.child.result, True)  # (lean head)


class _KeypointsShare:
    """A forked child reading the tail of a keypoints results file from byte ``start`` into memory shared
    with this process (:mod:`deteval.io.coco_keypoints`); it reads no ground truth."""

    def __init__(self, child: KeypointsTail, start: int) -> None:
        self.child, self.start = child, start

    def read(self, results: Any, g: CocoGroundTruth) -> CocoResults | None:
        """The results: the head read here, the tail from the child (None if it failed)."""
        return keypoints_with_tail(results, g, self.start, self.child.result, self.child)


def _read_share(
    gt: Any, gt_bytes: int, results: Any, start: int, shared: TailBuffer | None = None
) -> tuple[tuple[list[dict[str, Any]], int] | None, RawTail | None]:
    """The child's share: the head of the ground truth's annotations (when ``gt_bytes``), the results' tail
    (its columns written into ``shared`` where they fit)."""
    head = gt_head(gt, gt_bytes) if gt_bytes else None
    return head, results_tail(results, start, shared)


def _fork_reading(
    gt: Any, results: Any, p: CocoParams, on_error: str
) -> _Share | _SegmShare | _KeypointsShare | None:
    """A forked child already reading its share of a large bbox evaluation (:func:`split_reading`) or the
    tail of a large segm (:func:`segm_split_byte`) or keypoints results file (:func:`keypoints_split_byte`)."""
    if on_error != "raise" or not isinstance(results, (str, PathLike)):
        return None
    try:
        size = os.stat(results).st_size
        gt_size = os.stat(gt).st_size if isinstance(gt, (str, PathLike)) else 0
    except OSError:
        return None
    if p.iou_type == "segm":
        segm_start = segm_split_byte(size, gt_size)
        if size < FORK_RESULTS_BYTES or segm_start >= size:
            return None
        segm_child = fork_call(segm_tail, results, segm_start)
        return None if segm_child is None else _SegmShare(segm_child, segm_start)
    if p.iou_type == "keypoints":
        if size < FORK_RESULTS_BYTES:
            return None
        kp_start = keypoints_split_byte(size, gt_size)
        # (a ground truth far larger than the results: the child would have nothing; no fork: no buffer)
        if kp_start >= size or not can_fork():
            return None
        shared = tail_buffer(results)
        kp_child = None if shared is None else fork_call(keypoints_tail, results, kp_start, shared)
        if kp_child is None or shared is None:
            return None
        return _KeypointsShare(KeypointsTail(kp_child, shared), kp_start)
    start, gt_bytes = split_reading(size, gt_size)
    if size < FORK_RESULTS_BYTES and (gt_bytes == 0 or gt_size < FORK_RESULTS_BYTES):
        return None
    # (mapped before the fork: shared with the child, the head's rows before the tail's; address space only,
    # which a system may refuse for a huge file: the columns then come through the pipe)
    try:
        buffer: TailBuffer | None = TailBuffer(size - start, start)
    except (OSError, ValueError, OverflowError):
        buffer = None
    child = fork_call(_read_share, gt, gt_bytes, results, start, buffer)
    return None if child is None else _Share(child, gt_bytes, start, buffer)


def segm_split_byte(results_bytes: int, gt_bytes: int) -> int:
    """The byte from which the child reads a segm results file (:class:`_SegmShare`): this process also reads
    the ground truth (``gt_bytes``, 0 in memory) and puts the child's part together with its own, so its
    share of the results is smaller (``SEGM_EARLY_SHARE``)."""
    return max(0, int(results_bytes * SEGM_EARLY_SHARE) - gt_bytes // 2)


def _results_forked(g: CocoGroundTruth, results: Any, p: CocoParams, on_error: str) -> CocoResults | None:
    """A large segm or keypoints results file read by this process (the head) and a forked child (the
    tail), once the ground truth is read (their parsing and checks need it); None where that does not apply
    or fails."""
    if on_error != "raise" or not isinstance(results, (str, PathLike)):
        return None
    try:
        size = os.stat(results).st_size
    except OSError:
        return None
    if size < FORK_RESULTS_BYTES:
        return None
    start = max(CHUNK_BYTES, int(size * (SEGM_HEAD_SHARE if p.iou_type == "segm" else HEAD_SHARE)))
    child = fork_call(results_part, results, g, p.iou_type, start, False)
    if child is None:
        return None
    try:
        return results_two_parts(results, g, p.iou_type, start, child.result)
    finally:
        child.cancel()


def _per_category(r: CocoResults, cat_sel: np.ndarray, n_cats: int) -> np.ndarray:
    """Detections of each evaluated category (``cat_sel``: their indices among the ``n_cats``)."""
    cat_map = np.full(n_cats, -1, dtype=np.int64)
    cat_map[cat_sel] = np.arange(cat_sel.shape[0])
    c = cat_map[r.cat]
    return np.bincount(c[c >= 0], minlength=cat_sel.shape[0])


#: The weight of a category's sum over images of its detections squared, against its detections, in the cost
#: that :func:`_category_halves` balances: an image's boxes of a category are matched all against all (IoU
#: matrix, greedy matching), so a category crowded in its images costs more per detection. Objects365-like set,
#: the two halves' matching and accumulation timed one after the other in one process (CPU s, 3 rounds):
#: detections alone 0.64/0.57, 0.62/0.56 (the largest category, 139k detections at 3 an image, on the first
#: side); weight 2: 0.64/0.71, 0.61/0.59, 0.62/0.64; weight 4: 0.63/0.64, 0.62/0.62, 0.61/0.59.
CROWDING_WEIGHT = 4.0


def _category_halves(r: CocoResults, cat_sel: np.ndarray, n_cats: int) -> tuple[np.ndarray, np.ndarray]:
    """Two sets of evaluated categories of about the same cost each (costliest first, to the lighter side):
    a category's detections, plus ``CROWDING_WEIGHT`` times the sum over its detections of its detections in
    the same image (counted in a table of the (image, category) keys hashed to its size: a collision only
    makes the balance rougher, never the numbers different)."""
    cat_map = np.full(n_cats, -1, dtype=np.int64)
    cat_map[cat_sel] = np.arange(cat_sel.shape[0])
    c = r.cat if cat_sel.shape[0] == n_cats else cat_map[r.cat]  # (every category: its own index)
    size = 1 << max(10, (len(c) // 2).bit_length())
    key = r.img * n_cats
    key += r.cat
    key &= size - 1
    crowd = np.bincount(key, minlength=size)[key]
    if cat_sel.shape[0] < n_cats:
        keep = c >= 0
        c, crowd = c[keep], crowd[keep]
    cost = np.bincount(c, minlength=cat_sel.shape[0]) + CROWDING_WEIGHT * np.bincount(
        c, weights=crowd, minlength=cat_sel.shape[0]
    )
    load = [0.0, 0.0]
    side = np.zeros(cat_sel.shape[0], dtype=np.int64)
    for k in np.argsort(-cost, kind="stable").tolist():
        s = int(load[1] < load[0])
        side[k] = s
        load[s] += float(cost[k])
    return np.flatnonzero(side == 0), np.flatnonzero(side == 1)


_Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]
_T = TypeVar("_T")


def _half(
    g: CocoGroundTruth,
    r: CocoResults,
    p: CocoParams,
    compat: str,
    part: np.ndarray,
    out: _Arrays | None = None,
) -> tuple[_Arrays, dict[str, int], list[str]]:
    """Match and accumulate the categories ``part`` alone; their precision, recall and scores columns
    (written into ``out`` when given: see :func:`~deteval.detection.coco_accumulate.accumulate`). A part
    with more than ``SHARD_DETECTIONS`` detections is matched in runs of consecutive categories
    (:func:`_category_shards`), each accumulated into its block of the columns as soon as it is matched: no
    merged table (its flags copied once more) and one run's table at a time."""
    runs: list[np.ndarray] | None = [part]
    if len(r) > SHARD_DETECTIONS:  # (a category larger than a shard: shards of images, a table not ranked)
        runs = (
            _category_shards(r, id_selection(g.cat_ids, p.cat_ids, "category"), g, part)
            if p.use_cats
            else None
        )
    if runs is None or len(runs) < 2:
        table, counts, warnings = (
            match_in_shards(g, r, p, compat, categories=part)
            if runs is None
            else match_coco(g, r, p, compat, categories=part, ranked=True)
        )
        return accumulate(_compact(table, part), p.rec_thrs, p.max_dets, out=out), counts, warnings
    if out is None:
        T, R, A, M = p.iou_thrs.shape[0], p.rec_thrs.shape[0], len(p.area_rng), len(p.max_dets)
        K = part.shape[0]
        out = (np.empty((A, M, T, K, R)), np.empty((A, M, T, K, R)), np.empty((A, M, T, K)))
    lo = 0
    summed: dict[str, int] = {}
    for run in runs:
        t, c, w = match_coco(g, r, p, compat, categories=run, ranked=True)
        hi = lo + run.shape[0]
        block = (out[0][:, :, :, lo:hi], out[1][:, :, :, lo:hi], out[2][:, :, :, lo:hi])
        accumulate(_compact(t, run), p.rec_thrs, p.max_dets, out=block)
        summed = _sum_counts(summed, c) if summed else c
        lo = hi
        del t
    return pycocotools_views(*out), summed, w


def _compact(table: MatchTable, part: np.ndarray) -> MatchTable:
    """``table`` of the categories ``part`` alone, renumbered in the same order (so the rows stay in group
    order), without its ground-truth columns."""
    index = np.zeros(table.n_cats, dtype=np.int64)
    index[part] = np.arange(part.shape[0])
    return replace(
        table,
        cat=index[table.cat],
        npig=table.npig[part],
        n_cats=int(part.shape[0]),
        gt_img=None,
        gt_cat=None,
        gt_counted=None,
    )


def _fork_detections(iou_type: str) -> int:
    """Evaluated detections from which matching is split over two processes (a mask or an OKS costs far more
    than a box)."""
    return {"bbox": FORK_DETECTIONS, "segm": FORK_MASKS}.get(iou_type, FORK_KEYPOINTS)


def _match_accumulate_forked(
    g: CocoGroundTruth, r: CocoResults, p: CocoParams, compat: str
) -> tuple[MatchTable | None, _Arrays | None, dict[str, int], list[str], list[str] | None] | None:
    """The matching (and, split by categories, the accumulation) done by two processes: a half of the
    categories each (their precision, recall and scores columns come back), or, with one category or
    ``use_cats=False``, a half of the images each (their match tables come back, merged for
    :func:`accumulate`). Returns (table or None, arrays or None, counts, warnings, the past-border warning
    when the child gave it, else None); None where that does not pay (small input) or fails."""
    if len(r) < _fork_detections(p.iou_type):
        return None
    if p.iou_type == "segm":  # imported once, before the fork, not by each half (3-5 ms each, measured)
        import pycocotools.mask  # noqa: F401
    cat_sel = id_selection(g.cat_ids, p.cat_ids, "category")
    if p.use_cats and cat_sel.shape[0] >= 2:
        split = _split_categories(g, r, p, compat, cat_sel)
        return None if split is None else (None, *split)
    by_images = _split_images(g, r, p, compat)
    return None if by_images is None else (*by_images, None)


def _split_categories(
    g: CocoGroundTruth,
    r: CocoResults,
    p: CocoParams,
    compat: str,
    cat_sel: np.ndarray,
) -> tuple[_Arrays, dict[str, int], list[str], list[str] | None] | None:
    if p.iou_type == "bbox":  # (shared arrays measured no faster for bbox 5k, and 11 MB more at the peak)
        mine, theirs = _category_halves(r, cat_sel, g.cat_ids.shape[0])
        return _split_categories_piped(g, r, p, compat, cat_sel, mine, theirs)
    mine, theirs = _category_runs(r, cat_sel, g.cat_ids.shape[0])
    out = _shared_arrays(p, cat_sel.shape[0])
    both = _both_halves(_half_into, (g, r, p, compat, out), mine, theirs)
    if both is None:
        return None
    (counts, warnings), (counts_t, _) = both
    return pycocotools_views(*out), _sum_counts(counts, counts_t), warnings, None


def _category_runs(r: CocoResults, cat_sel: np.ndarray, n_cats: int) -> tuple[np.ndarray, np.ndarray]:
    """The evaluated categories cut in two runs of consecutive ones with about as many detections each (each
    half then fills a block of its own of :func:`_shared_arrays`)."""
    per_cat = _per_category(r, cat_sel, n_cats)
    k = cat_sel.shape[0]
    cut = min(max(int(np.searchsorted(np.cumsum(per_cat), per_cat.sum() / 2)), 1), k - 1)
    return np.arange(0, cut, dtype=np.int64), np.arange(cut, k, dtype=np.int64)


def _split_categories_piped(
    g: CocoGroundTruth,
    r: CocoResults,
    p: CocoParams,
    compat: str,
    cat_sel: np.ndarray,
    mine: np.ndarray,
    theirs: np.ndarray,
) -> tuple[_Arrays, dict[str, int], list[str], list[str] | None] | None:
    """The halves' precision, recall and scores put together here, the child's sent through the pipe; each
    half also counts the boxes past the border in a half of the rows (:func:`_half_and_border`)."""
    both = _both_halves(_half_and_border, (g, r, p, compat), mine, theirs, _half_and_border_head)
    if both is None:
        return None
    ((pm, rm, sm), counts, warnings, (n_past, n)), ((pt, rt, st), counts_t, _, (n_past_t, n_t)) = both
    border = past_border_message(n_past + n_past_t, n + n_t)
    K = cat_sel.shape[0]
    precision = np.empty(pm.shape[:2] + (K,) + pm.shape[3:])
    scores = np.empty_like(precision)
    recall = np.empty(rm.shape[:1] + (K,) + rm.shape[2:])
    precision[:, :, mine], precision[:, :, theirs] = pm, pt
    scores[:, :, mine], scores[:, :, theirs] = sm, st
    recall[:, mine], recall[:, theirs] = rm, rt
    return (precision, recall, scores), _sum_counts(counts, counts_t), warnings, border


def _half_and_border(
    g: CocoGroundTruth, r: CocoResults, p: CocoParams, compat: str, part: np.ndarray, head: bool = False
) -> tuple[_Arrays, dict[str, int], list[str], tuple[int, int]]:
    """:func:`_half`, and the counts of :func:`past_border_counts` in the second half of the results' rows
    (``head``: the first half; the counts of the two add up). Each process counts half: the halves end
    together (bench_coco 20k, 4 runs: within 3 ms of each other), and the whole count (7-9 ms) in one of
    them kept the other waiting for it."""
    half = len(r) // 2
    rows = slice(0, half) if head else slice(half, None)
    return (*_half(g, r, p, compat, part), past_border_counts(g, r, rows))


def _half_and_border_head(
    g: CocoGroundTruth, r: CocoResults, p: CocoParams, compat: str, part: np.ndarray
) -> tuple[_Arrays, dict[str, int], list[str], tuple[int, int]]:
    """:func:`_half_and_border` of the first half of the rows (the forked child's)."""
    return _half_and_border(g, r, p, compat, part, head=True)


def _shared_arrays(p: CocoParams, n_cats: int) -> _Arrays:
    """precision and scores as (A, M, T, K, R) and recall as (A, M, T, K) for ``n_cats`` categories (the
    layout :func:`~deteval.detection.coco_accumulate.accumulate` fills), in memory shared with the forked
    child (anonymous, mapped before the fork): each half accumulates its run of categories straight into
    them (``out=``), so the child's numbers need no pickling, no pipe, no copy into place and no buffers of
    their own (8 MB each way at 80 categories); pycocotools' arrays are transposed views. segm only (bench_coco
    segm 1k, 7 interleaved runs: wall 0.431 / median 0.440 s against 0.446 / 0.477 s piped, peak RSS 119
    against 127 MB; bbox 5k: the same wall, 120 against 109 MB)."""
    T, R, A, M = p.iou_thrs.shape[0], p.rec_thrs.shape[0], len(p.area_rng), len(p.max_dets)
    n_p, n_r = n_cats * T * R * A * M, n_cats * T * A * M
    buf = mmap.mmap(-1, 8 * max(1, 2 * n_p + n_r))
    flat = np.frombuffer(buf, dtype=np.float64)
    return (
        flat[:n_p].reshape(A, M, T, n_cats, R),
        flat[n_p : 2 * n_p].reshape(A, M, T, n_cats, R),
        flat[2 * n_p : 2 * n_p + n_r].reshape(A, M, T, n_cats),
    )


def _half_into(
    g: CocoGroundTruth,
    r: CocoResults,
    p: CocoParams,
    compat: str,
    out: _Arrays,
    part: np.ndarray,
) -> tuple[dict[str, int], list[str]]:
    """:func:`_half` of the run of categories ``part``, accumulated into its block of ``out``
    (:func:`_shared_arrays`)."""
    k0, k1 = int(part[0]), int(part[-1]) + 1
    if not np.array_equal(part, np.arange(k0, k1)):
        raise ValueError("_half_into: the categories must be consecutive")
    block = (out[0][:, :, :, k0:k1], out[1][:, :, :, k0:k1], out[2][:, :, :, k0:k1])
    _, counts, warnings = _half(g, r, p, compat, part, block)
    return counts, warnings


def _both_halves(
    fn: Callable[..., _T],
    args: tuple,
    mine: np.ndarray,
    theirs: np.ndarray,
    child_fn: Callable[..., Any] | None = None,
) -> tuple[_T, Any] | None:
    """``fn(*args, mine)`` here and ``fn(*args, theirs)`` (or ``child_fn``) in a forked child at the same time;
    None if the child could not start or failed, or this half raised (the one-process path then raises it
    again)."""
    child = fork_call(fn if child_fn is None else child_fn, *args, theirs)
    if child is None:
        return None
    try:
        here = fn(*args, mine)
        got = child.result()
    except DetevalError:
        return None
    finally:
        child.cancel()
    return None if got is None else (here, got)


def _image_halves(g: CocoGroundTruth, r: CocoResults, p: CocoParams) -> tuple[np.ndarray, np.ndarray]:
    """The evaluated images (indices, ascending id) cut in two runs with about as many detections each."""
    img_sel = id_selection(g.image_ids, p.img_ids, "image")
    img_map = np.full(g.image_ids.shape[0], -1, dtype=np.int64)
    img_map[img_sel] = np.arange(img_sel.shape[0])
    d_img = img_map[r.img]
    per_img = np.bincount(d_img[d_img >= 0], minlength=img_sel.shape[0])
    cut = int(np.searchsorted(np.cumsum(per_img), per_img.sum() / 2))
    n = img_sel.shape[0]
    return np.arange(0, cut, dtype=np.int64), np.arange(cut, n, dtype=np.int64)


def _image_half(
    g: CocoGroundTruth, r: CocoResults, p: CocoParams, compat: str, part: np.ndarray
) -> tuple[MatchTable, dict[str, int], list[str]]:
    """Match the images ``part`` alone (their table merges with the other half's: groups never straddle
    images)."""
    return match_in_shards(g, r, p, compat, images=part)


def _split_images(
    g: CocoGroundTruth, r: CocoResults, p: CocoParams, compat: str
) -> tuple[MatchTable, None, dict[str, int], list[str]] | None:
    from deteval.detection.coco_match import merge_tables

    first, second = _image_halves(g, r, p)
    if not first.shape[0] or not second.shape[0]:
        return None
    both = _both_halves(_image_half, (g, r, p, compat), first, second)
    if both is None:
        return None
    (table, counts, warnings), (table_t, counts_t, _) = both
    # the first images' rows first, as the one-process shards are merged
    return merge_tables([table, table_t]), None, _sum_counts(counts, counts_t), warnings


#: A box "runs past the border" when its far edge is beyond the image by more than this share of its size.
BORDER_SLACK = 0.05
#: ... and the warning is given when at least this share of the boxes (on images of known size) do.
BORDER_SHARE = 0.1


def _past_border_warning(gt: CocoGroundTruth, res: CocoResults) -> list[str]:
    """Boxes given as ``[x1, y1, x2, y2]`` where COCO wants ``[x, y, w, h]`` run past the right or bottom
    border in large numbers (``x + x2 > width`` for every object in the right half): say so, with the count."""
    return past_border_message(*past_border_counts(gt, res))


def past_border_counts(gt: CocoGroundTruth, res: CocoResults, rows: slice | None = None) -> tuple[int, int]:
    """(boxes past the border, boxes on images of known size), of the results' ``rows`` (all by default):
    counts of disjoint shards add up."""
    if not len(res) or gt.image_hw.shape[0] == 0:
        return 0, 0
    h, w = gt.image_hw[:, 0], gt.image_hw[:, 1]
    known = (h > 0) & (w > 0)  # per image; the limits per image, read per box (no per-box copies)
    if not known.any():
        return 0, 0
    lim_w = np.where(known, w * (1 + BORDER_SLACK), np.inf)
    lim_h = np.where(known, h * (1 + BORDER_SLACK), np.inf)
    sel = slice(None) if rows is None else rows
    b, img = res.bbox[sel], res.img[sel]
    past = (b[:, 0] + b[:, 2] > lim_w[img]) | (b[:, 1] + b[:, 3] > lim_h[img])
    n = img.shape[0] if known.all() else int(np.count_nonzero(known[img]))
    return int(np.count_nonzero(past)), n


def past_border_message(n_past: int, n: int) -> list[str]:
    """The warning of :func:`_past_border_warning` from its counts (none below ``BORDER_SHARE``)."""
    if n_past == 0 or n_past < BORDER_SHARE * n:
        return []
    return [
        f"{n_past} of {n} result boxes run past their image's right or bottom border (x + w > width or "
        f"y + h > height, by more than {BORDER_SLACK:.0%}): are they [x1, y1, x2, y2] instead of COCO's "
        "[x, y, width, height]?"
    ]


def is_path_list(results: Any) -> bool:
    """Several result files: a non-empty list or tuple of paths (a list of dicts is one result list)."""
    return (
        isinstance(results, (list, tuple))
        and len(results) > 0
        and all(isinstance(x, (str, PathLike)) for x in results)
    )


def _xywh(boxes: np.ndarray, box_format: str) -> np.ndarray:
    if box_format == "xywh":
        return boxes
    if box_format == "xyxy":
        with np.errstate(over="ignore", invalid="ignore"):  # overflowing boxes are refused as non-finite
            return np.stack(
                [boxes[:, 0], boxes[:, 1], boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]], axis=1
            )
    raise ConfigError(f"unknown box_format {box_format!r}: use 'xyxy' or 'xywh'")


def _boxes_within_bound(rows: np.ndarray, given: Any, width: int, file: str, where: str) -> None:
    """Refuse a box with a coordinate beyond ±2**53 as the caller wrote it (``given``: an integer 2**53 + 1 is
    already 2**53 in the float64 ``rows``), as the file loaders do."""
    big = rows_beyond_exact(rows, lambda r: np.asarray(given).reshape(-1, width)[r].tolist())
    if big.size:
        k = int(big[0])
        raise ValidationError(
            f"box {np.asarray(given).reshape(-1, width)[k].tolist()} has a coordinate beyond \u00b12**53",
            file=file,
            record=f"{where}, box {k}",
        )


def _arrays_to_tables(
    preds: Sequence[Mapping[str, Any]],
    targets: Sequence[Mapping[str, Any]],
    box_format: str,
    class_names: Mapping[int, str] | None,
    first_image: int = 0,
) -> tuple[CocoGroundTruth, CocoResults]:
    """Per-image prediction/target arrays → columnar tables (categories = labels seen, image i → id i)."""
    if len(preds) != len(targets):
        raise InputFormatError(f"{len(preds)} prediction entries for {len(targets)} target entries")

    def column(
        items: Sequence[Mapping[str, Any]], key: str, what: str, width: int, dtype: Any, default: Any = None
    ) -> list[np.ndarray]:
        out = []
        for i, it in enumerate(items):
            value = it.get(key, default) if isinstance(it, Mapping) else None
            if value is None:
                raise InputFormatError(
                    f"missing {key!r}", file=f"<{what}>", record=f"image {first_image + i}"
                )
            try:
                arr = numeric_array(value, dtype, bools=key == "iscrowd")
                out.append(arr.reshape(-1, width) if width else arr.reshape(-1))
            except (TypeError, ValueError) as exc:
                held = f": it {exc}" if isinstance(exc, TypeError) else ""
                raise InputFormatError(
                    f"{key!r} must be numbers" + (f" of shape (n, {width})" if width else "") + held,
                    file=f"<{what}>",
                    record=f"image {first_image + i}",
                ) from None
            if key == "boxes":
                _boxes_within_bound(out[-1], value, width, f"<{what}>", f"image {first_image + i}")
        return out

    pb = column(preds, "boxes", "preds", 4, np.float64)
    ps = column(preds, "scores", "preds", 0, np.float64)
    pl = column(preds, "labels", "preds", 0, np.float64)
    tb = column(targets, "boxes", "targets", 4, np.float64)
    tl = column(targets, "labels", "targets", 0, np.float64)
    no_value: list[dict[str, Any]] = [{} for _ in targets]
    tc = column([t if t.get("iscrowd") is not None else n for t, n in zip(targets, no_value)], "iscrowd",
                "targets", 0, np.float64, default=())  # fmt: skip
    ta = column([t if t.get("area") is not None else n for t, n in zip(targets, no_value)], "area",
                "targets", 0, np.float64, default=())  # fmt: skip
    for i in range(len(targets)):
        if targets[i].get("iscrowd") is None:
            tc[i] = np.zeros(tl[i].shape[0])
        if targets[i].get("area") is None:
            with np.errstate(over="ignore", invalid="ignore"):  # bad boxes are refused below
                xywh = _xywh(tb[i], box_format)
                ta[i] = xywh[:, 2] * xywh[:, 3]
    for what, parts, name in (("preds", pl, "labels"), ("targets", tl, "labels"), ("targets", tc, "iscrowd")):
        for i, v in enumerate(parts):
            ok = (v == np.round(v)) & (np.abs(v) < 2.0**62) if name == "labels" else (v == 0) | (v == 1)
            if not ok.all():
                k = int(np.flatnonzero(~ok)[0])
                raise ValidationError(
                    f"{name} must be " + ("integers" if name == "labels" else "0 or 1") + f", got {v[k]!r}",
                    file=f"<{what}>",
                    record=f"image {first_image + i}, {name[:-1] if name == 'labels' else name} {k}",
                )
    pl = [v.astype(np.int64) for v in pl]
    tl = [v.astype(np.int64) for v in tl]
    for i in range(len(preds)):
        img = f"image {first_image + i}"
        if not (pb[i].shape[0] == ps[i].shape[0] == pl[i].shape[0]):
            raise InputFormatError("boxes, scores and labels differ in length", file="<preds>", record=img)
        if not (tb[i].shape[0] == tl[i].shape[0] == tc[i].shape[0] == ta[i].shape[0]):
            raise InputFormatError(
                "boxes, labels, iscrowd and area differ in length", file="<targets>", record=img
            )
    n_img = len(preds)
    d_img = np.repeat(np.arange(n_img), [b.shape[0] for b in pb])
    g_img = np.repeat(np.arange(n_img), [b.shape[0] for b in tb])

    def cat(parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
        return np.concatenate(parts) if parts else empty

    dbox = _xywh(cat(pb, np.zeros((0, 4))), box_format)
    gbox = _xywh(cat(tb, np.zeros((0, 4))), box_format)
    score, area = cat(ps, np.zeros(0)), cat(ta, np.zeros(0))
    dlab, glab = cat(pl, np.zeros(0, np.int64)), cat(tl, np.zeros(0, np.int64))
    crowd = cat(tc, np.zeros(0)) != 0
    checks = (
        ("preds", "box", dbox, d_img),
        ("targets", "box", gbox, g_img),
        ("preds", "score", score, d_img),
        ("targets", "area", area, g_img),
    )
    for what, name, arr, owner in checks:
        bad = ~np.isfinite(arr).all(axis=1) if arr.ndim == 2 else ~np.isfinite(arr)
        if name == "box":
            # beyond 2**53 areas overflow and IoUs become NaN (the same limit as the file loaders)
            bad |= (arr[:, 2] < 0) | (arr[:, 3] < 0) | (np.abs(arr) > 2.0**53).any(axis=1)
        elif name == "area":
            bad |= arr < 0
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            k = j - int(np.searchsorted(owner, owner[j]))
            raise ValidationError(
                f"{name} {arr[j].tolist()} is not finite, negative or beyond \u00b12**53",
                file=f"<{what}>",
                record=f"image {first_image + int(owner[j])}, {name} {k}",
            )
    cat_ids = np.unique(np.concatenate([glab, dlab]))
    names = [str(class_names.get(int(c), c)) if class_names else str(c) for c in cat_ids.tolist()]
    g = CocoGroundTruth(
        image_ids=np.arange(first_image, first_image + n_img),
        image_hw=np.full((n_img, 2), -1),
        cat_ids=cat_ids,
        cat_names=names,
        ann_id=np.arange(1, gbox.shape[0] + 1),
        img=g_img,
        cat=np.searchsorted(cat_ids, glab),
        bbox=gbox,
        area=area,
        iscrowd=crowd,
        ignore=np.zeros(gbox.shape[0], bool),
        num_keypoints=np.full(gbox.shape[0], -1),
        source="<targets>",
    )
    r = CocoResults(
        img=d_img,
        cat=np.searchsorted(cat_ids, dlab),
        score=score,
        bbox=dbox,
        area=dbox[:, 2] * dbox[:, 3],
        source="<preds>",
    )
    return g, r


def evaluate_coco_arrays(
    preds: Sequence[Mapping[str, Any]],
    targets: Sequence[Mapping[str, Any]],
    *,
    box_format: str = "xyxy",
    params: CocoParams | Any | None = None,
    compat: str = "pycocotools",
    class_names: Mapping[int, str] | None = None,
) -> CocoEvaluation:
    """COCO bbox evaluation from per-image arrays (the shape a training loop produces).

    ``preds[i]``: ``{"boxes": (n, 4), "scores": (n,), "labels": (n,)}``; ``targets[i]``: ``{"boxes": (g, 4),
    "labels": (g,), "iscrowd": (g,) optional, "area": (g,) optional (default: box area w·h)}``. Image i has
    id i; categories are the labels seen in targets or predictions. ``xyxy`` boxes are converted to COCO
    ``[x, y, w, h]`` as ``w = x2 − x1`` (so a result is identical to pycocotools fed the converted boxes).
    """
    g, r = _arrays_to_tables(preds, targets, box_format, class_names)
    p = resolve_params(params, "bbox")
    table, counts, warnings = match_in_shards(g, r, p, compat)
    return finish_evaluation(table, p, compat, g, counts, warnings)


class CocoStream:
    """Incremental COCO bbox evaluation for a training loop: ``update()`` per batch, ``compute()`` at the end.

    Each batch of images is matched at once into a compact :class:`MatchTable` (the Python objects of the
    batch can then be dropped); ``compute()`` merges the tables and accumulates. The result equals
    :func:`evaluate_coco_arrays` on all batches concatenated (images numbered in arrival order).
    """

    def __init__(
        self,
        *,
        params: CocoParams | Any | None = None,
        compat: str = "pycocotools",
        box_format: str = "xyxy",
        class_names: Mapping[int, str] | None = None,
    ) -> None:
        if compat not in COMPAT_MODES:
            raise ConfigError(f"unknown compat {compat!r}: use one of {', '.join(COMPAT_MODES)}")
        self.params = resolve_params(params, "bbox")
        if self.params.img_ids is not None or self.params.cat_ids is not None:
            raise ConfigError(
                "CocoStream evaluates every image and label it is given: leave img_ids/cat_ids unset"
            )
        self.compat, self.box_format, self.class_names = compat, box_format, class_names
        self._parts: list[tuple[MatchTable, np.ndarray, dict[str, int]]] = []
        self._image_ids: list[int] = []
        self.n_images = 0

    def update(
        self,
        preds: Sequence[Mapping[str, Any]],
        targets: Sequence[Mapping[str, Any]],
        image_ids: Sequence[int] | None = None,
    ) -> None:
        """Match one batch of images (per-image dicts as in :func:`evaluate_coco_arrays`).

        ``image_ids``: one integer id per image, given for every batch or for none. With them, ``compute()``
        accumulates images in ascending id (pycocotools' order, which decides score ties across images);
        without, in arrival order. A repeated id is refused.
        """
        if (image_ids is None) != (not self._image_ids) and self.n_images:
            raise ConfigError("image ids must be given for every batch or for none")
        if image_ids is not None:
            ids = [int(i) for i in image_ids]
            if len(ids) != len(preds):
                raise ConfigError(f"{len(ids)} image ids for {len(preds)} images")
            seen = set(self._image_ids)
            for i in ids:
                if i in seen:
                    raise ValidationError(f"image_id {i} is given twice (each image must be passed once)")
                seen.add(i)
        g, r = _arrays_to_tables(preds, targets, self.box_format, self.class_names, self.n_images)
        table, counts, _ = match_coco(g, r, self.params, self.compat)
        table.img = table.img + self.n_images
        self._parts.append((table, g.cat_ids, counts))
        if image_ids is not None:
            self._image_ids.extend(ids)
        self.n_images += len(preds)

    def compute(self) -> CocoEvaluation:
        """Merge the batches and accumulate: the full :class:`CocoEvaluation`."""
        from deteval.detection.coco_match import merge_tables

        labels = np.unique(np.concatenate([c for _, c, _ in self._parts] or [np.zeros(0, np.int64)]))
        A = len(self.params.area_rng)
        T = self.params.iou_thrs.shape[0]
        tables = []
        for table, cats, _ in self._parts:
            if not self.params.use_cats:  # one pooled category in every batch already
                tables.append(table)
                continue
            remap = np.searchsorted(labels, cats)
            npig = np.zeros((labels.shape[0], A), dtype=np.int64)
            npig[remap] = table.npig
            tables.append(
                MatchTable(
                    cat=remap[table.cat] if cats.size else table.cat,
                    img=table.img,
                    score=table.score,
                    rank=table.rank,
                    tp=table.tp,
                    ig=table.ig,
                    npig=npig,
                    n_cats=labels.shape[0],
                )
            )
        if not tables:
            k = 1 if not self.params.use_cats else 0
            tables = [
                MatchTable(
                    cat=np.zeros(0, np.int64),
                    img=np.zeros(0, np.int64),
                    score=np.zeros(0),
                    rank=np.zeros(0, np.int64),
                    tp=np.zeros((A, T, 0), bool),
                    ig=np.zeros((A, T, 0), bool),
                    npig=np.zeros((k, A), np.int64),
                    n_cats=k,
                )
            ]
        merged = merge_tables(tables)
        image_ids = np.arange(self.n_images)
        if self._image_ids:
            # accumulate() breaks score ties by image index: make that index the rank of the image id
            ids = np.asarray(self._image_ids, dtype=np.int64)
            rank = np.empty(ids.shape[0], dtype=np.int64)
            rank[np.argsort(ids, kind="stable")] = np.arange(ids.shape[0])
            merged.img = rank[merged.img]
            image_ids = np.sort(ids)
        names = [
            str(self.class_names.get(int(c), c)) if self.class_names else str(c) for c in labels.tolist()
        ]
        g = CocoGroundTruth(
            image_ids=image_ids,
            image_hw=np.zeros((0, 2)),
            cat_ids=labels,
            cat_names=names,
            ann_id=np.zeros(0, np.int64),
            img=np.zeros(0, np.int64),
            cat=np.zeros(0, np.int64),
            bbox=np.zeros((0, 4)),
            area=np.zeros(0),
            iscrowd=np.zeros(0, bool),
            ignore=np.zeros(0, bool),
            num_keypoints=np.zeros(0, np.int64),
        )
        counts = {k: sum(c[k] for _, _, c in self._parts) for k in ("n_gt", "n_dt", "n_dt_evaluated")}
        counts = {"n_images": self.n_images, "n_categories": int(labels.shape[0]), **counts}
        return finish_evaluation(merged, self.params, self.compat, g, counts, [])
