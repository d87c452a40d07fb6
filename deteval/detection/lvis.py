"""LVIS evaluation (federated), identical to lvis-api 0.5.3's ``LVISResults`` + ``LVISEval``; Fixed AP and
pooled AP (Dave et al. 2021).

>>> ev = evaluate_lvis("lvis_v1_val.json", "detections.json", iou_type="segm")     # doctest: +SKIP
>>> ev.results["AP"], ev.results["APr"], ev.results["AR@300"]                        # doctest: +SKIP

The rules, read from lvis-api 0.5.3 (``lvis/results.py``, ``lvis/eval.py``):

* **Per-image cap** (``LVISResults(max_dets=300)``): each image keeps its 300 highest-scoring detections over
  *all* categories (a stable sort: ties keep file order), before anything else is filtered.
* **Zero areas are dropped**: ``get_ann_ids`` keeps annotations and detections with ``0 < area < inf`` only, so
  a ground truth of area 0 does not exist for the evaluation, and neither does a detection with ``w*h == 0``.
* **Federated**: in an image, a category is evaluated only if it has ground truth there or is listed in the
  image's ``neg_category_ids``; detections of other categories are discarded.
* **Matching** per (image, category) as in pycocotools but with no crowd (``iscrowd`` is never read; every
  ground truth absorbs at most one detection); a ground truth is ignored if its ``ignore`` flag is set or its
  area is outside the range; an unmatched detection is ignored if its area is outside the range *or* its
  category is in the image's ``not_exhaustive_category_ids``.
* **Accumulation** as pycocotools with one unlimited maxDet (no per-(image, category) cut): ``precision[T, R,
  K, A]``, ``recall[T, K, A]``; −1 where a category has no non-ignored ground truth.
* **Summary** (``LVISEval.results``): AP, AP50, AP75, APs, APm, APl, APr, APc, APf (means over the categories
  of frequency r, c, f), AR@300, ARs@300, ARm@300, ARl@300 — each ``np.mean`` of the entries > −1.

Where deteval differs from lvis-api (bugs, not conventions): a ground-truth annotation with ``id == 0`` is
matched (lvis-api stores a match as the gt id, 0 meaning unmatched, so that detection counts as a false
positive); an empty results list is valid (lvis-api crashes). Both are reported in ``warnings``.

**Fixed AP** (Dave, Dollár, Ramanan, Kirillov, Girshick, "Evaluating Large-Vocabulary Object Detectors: The
Devil is in the Details", arXiv:2102.01066, 2021, Sec. 3): no limit per image; instead each category keeps its
K = 10,000 highest-scoring detections over the whole dataset (before the federated filter), then LVIS AP as
above (``evaluate_lvis(..., fixed_ap=True)``; the authors' ``evaluate_ap_fixed.py`` runs lvis-api with
``max_dets=-1``, so the recall keys read ``AR@-1``). **Pooled AP** (same paper, ``AP^pool``): matching per
category as above, but precision and recall are accumulated over all detections of a pool of categories at
once (all, r, c, f; area range "all"), so scores must be comparable across categories; results
``AP-pooled-all``, ``AP-pooled-r``, … (``pooled=True``; the paper's setting is ``fixed_ap=True, pooled=True``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np

from deteval.detection.coco import is_path_list
from deteval.detection.coco_accumulate import accumulate
from deteval.detection.coco_iou import bbox_iou_pairs, segm_iou_blocks
from deteval.detection.coco_match import IouFn, MatchTable, match_groups, merge_tables
from deteval.detection.coco_params import CocoParams
from deteval.detection.coco_rles import dt_rles, gt_rles
from deteval.errors import ConfigError
from deteval.io.coco import CocoGroundTruth, CocoResults, load_coco_results, loadres_branch, read_json
from deteval.io.lvis import FREQUENCIES, LvisGroundTruth, load_lvis_gt
from deteval.results import EvalResult, PRCurve

__all__ = ["FIXED_AP_DETS_PER_CAT", "LvisEvaluation", "evaluate_lvis", "lvis_result_names"]

#: Dave et al.'s K for LVIS: detections kept per category over the whole dataset under Fixed AP.
FIXED_AP_DETS_PER_CAT = 10_000
#: Detections per matching shard (shards are whole images; bounded memory, same result).
SHARD_DETECTIONS = 400_000
IOU_TYPES = ("bbox", "segm")
POOLS = ("all", *FREQUENCIES)


def lvis_result_names(max_dets: int | None = 300) -> tuple[str, ...]:
    """lvis-api's result keys in order; the recall keys carry ``params.max_dets`` (−1: no per-image limit)."""
    md = -1 if max_dets is None else max_dets
    ap = ("AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf")
    return (*ap, f"AR@{md}", f"ARs@{md}", f"ARm@{md}", f"ARl@{md}")


@dataclass
class LvisEvaluation:
    """The LVIS result: lvis-api's ``eval["precision"][T, R, K, A]`` and ``eval["recall"][T, K, A]``, the
    ``results`` dict (lvis-api's keys and values), per-category rows, and the pooled arrays when asked for."""

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

    def per_class(self) -> dict[str, dict[str, Any]]:
        """Per category: frequency, ap, ap50, ap75, aps/apm/apl and ar (lvis-api's means on that category's
        slice; −1 where it has no non-ignored ground truth)."""
        p = self.params
        md = -1 if self.max_dets is None else self.max_dets
        out: dict[str, dict[str, Any]] = {}
        for k, name in enumerate(self.cat_names):
            one = [k]
            row: dict[str, Any] = {"frequency": self.frequency[k]}
            row["ap"] = _summarize(self.precision, self.recall, p, True, None, "all", one)
            row["ap50"] = _summarize(self.precision, self.recall, p, True, 0.5, "all", one)
            row["ap75"] = _summarize(self.precision, self.recall, p, True, 0.75, "all", one)
            for lbl, key in (("small", "aps"), ("medium", "apm"), ("large", "apl")):
                row[key] = _summarize(self.precision, self.recall, p, True, None, lbl, one)
            row[f"ar@{md}"] = _summarize(self.precision, self.recall, p, False, None, "all", one)
            key = name
            while key in out:
                key = f"{key} (id {self.cat_ids[k]})"
            out[key] = row
        return out

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
            for k, name in enumerate(self.cat_names):
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
    aidx = [i for i, lbl in enumerate(p.area_lbl) if lbl == area]
    s = precision if ap else recall
    if iou_thr is not None:
        s = s[np.where(iou_thr == p.iou_thrs)[0]]
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


def _rank_within(key: np.ndarray, score: np.ndarray, tie: np.ndarray | None = None) -> np.ndarray:
    """Rank of each item inside its ``key`` group by descending score, ties by ascending ``tie`` (the list
    order: Python's stable ``sorted(..., key=score, reverse=True)``); None: input order (lexsort is stable)."""
    n = key.shape[0]
    order = np.lexsort((-score, key) if tie is None else (tie, -score, key))
    ks = key[order]
    start = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]]) if n else np.zeros(0, np.int64)
    pos_in = np.arange(n) - np.repeat(start, np.diff(np.r_[start, n]))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = pos_in
    return rank


def _check_cap(value: int | None, what: str) -> int | None:
    if value is None or value < 0:
        return None  # lvis-api: max_dets < 0 means no limit
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"{what} must be an integer, got {value!r}")
    return int(value)


def lvis_caps(
    r: CocoResults, K: int, max_dets: int | None, dets_per_cat: int | None
) -> tuple[np.ndarray, np.ndarray, int]:
    """The detections that survive the caps, their list order (for score ties) and the index of the record
    that comes first in lvis-api's capped list (LVISResults picks its loadRes-like branch from that one)."""
    n = len(r)
    keep = np.ones(n, dtype=bool)
    pos = np.arange(n)
    first_rec = 0
    if dets_per_cat is not None:  # Fixed AP: top K per category over the dataset, before everything else
        rank = _rank_within(r.cat, r.score)
        keep &= rank < dets_per_cat
        # the kept list runs category by category (in order of first appearance), each by descending score:
        # that order breaks score ties at the per-image cap below
        cats, first = np.unique(r.cat, return_index=True)
        cat_rank = np.empty(K, dtype=np.int64)
        cat_rank[cats] = np.argsort(np.argsort(first, kind="stable"), kind="stable")
        pos = cat_rank[r.cat] * (n + 1) + rank
        if n:
            first_rec = int(np.flatnonzero((r.cat == r.cat[0]) & (rank == 0))[0])
    if max_dets is not None:  # LVISResults.limit_dets_per_image, over all categories of the image
        idx = np.flatnonzero(keep)
        img_rank = _rank_within(r.img[idx], r.score[idx], None if dets_per_cat is None else pos[idx])
        keep[idx[img_rank >= max_dets]] = False
        if n:
            same = r.img[idx] == r.img[first_rec]
            if same.sum() > max_dets:  # that image's list was sorted by score
                first_rec = int(idx[same & (img_rank == 0)][0])
    return keep, pos, first_rec


def lvis_selection(
    lg: LvisGroundTruth, r: CocoResults, max_dets: int | None, dets_per_cat: int | None
) -> tuple[np.ndarray, np.ndarray, dict[str, int], list[str]]:
    """Indices of the evaluated ground truths and detections, after lvis-api's caps and filters."""
    g = lg.coco
    K = int(g.cat_ids.shape[0])
    keep, _, _ = lvis_caps(r, K, max_dets, dets_per_cat)
    n_capped = int(keep.sum())
    warnings = []
    with np.errstate(invalid="ignore"):
        g_pos = (g.area > 0) & (g.area < np.inf)
        d_pos = (r.area > 0) & (r.area < np.inf)
    if not g_pos.all():
        warnings.append(
            f"{int((~g_pos).sum())} ground-truth annotations have area 0: left out, as lvis-api's get_ann_ids "
            "keeps 0 < area < inf only (pycocotools would count them)"
        )
    n_zero = int((keep & ~d_pos).sum())
    if n_zero:
        warnings.append(
            f"{n_zero} detections have area 0 (w*h == 0 or an empty mask): left out, as lvis-api does "
            "(pycocotools would count them as false positives)"
        )
    gsel = np.flatnonzero(g_pos)
    present = np.unique(g.img[gsel].astype(np.int64) * K + g.cat[gsel])
    allowed = np.union1d(present, lg.neg)
    d_key = r.img.astype(np.int64) * K + r.cat
    keep &= d_pos & np.isin(d_key, allowed)
    dsel = np.flatnonzero(keep)
    counts = {
        "n_images": int(g.image_ids.shape[0]),
        "n_categories": K,
        "n_gt": len(g),
        "n_gt_evaluated": int(gsel.shape[0]),
        "n_dt": len(r),
        "n_dt_after_caps": n_capped,
        "n_dt_evaluated": int(dsel.shape[0]),
    }
    return gsel, dsel, counts, warnings


def _iou_fn(iou_type: str, dgeom: Any, ggeom: Any, crowd: np.ndarray) -> IouFn:
    """IoU of (detection, ground truth) pairs of one shard, as ``mask_utils.iou`` with iscrowd all 0;
    ``dgeom``/``ggeom``: the shard's boxes (bbox) or RLE tables (segm)."""
    if iou_type == "bbox":

        def bbox_fn(
            di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
        ) -> np.ndarray:
            return bbox_iou_pairs(dgeom, ggeom, crowd, di, gi)

        return bbox_fn

    def segm_fn(
        di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
    ) -> np.ndarray:
        return segm_iou_blocks(dgeom, ggeom, crowd, di, gi, bs, bnd, bng)

    return segm_fn


def match_lvis_shard(
    n_img: int, n_cat: int, p: CocoParams, d: dict[str, Any], gd: dict[str, Any]
) -> MatchTable:
    """The task a worker runs: federated matching of one shard of whole images. ``d``/``gd``: the shard's
    selected detections and ground truths (img, cat, score, order, area, ignore, geom), cut on the driver."""
    crowd = np.zeros(gd["img"].shape[0], dtype=bool)  # lvis-api passes iscrowd = 0 for every ground truth
    group_sizes = np.unique(d["img"].astype(np.int64) * n_cat + d["cat"], return_counts=True)[1]
    return match_groups(
        n_imgs=n_img,
        n_cats=n_cat,
        iou_thrs=p.iou_thrs,
        area_rng=p.area_rng,
        max_det=int(group_sizes.max()) if group_sizes.size else 1,  # no per-(image, category) limit
        d_img=d["img"],
        d_cat=d["cat"],
        d_score=d["score"],
        d_order=d["order"],
        d_area=d["area"],
        g_img=gd["img"],
        g_cat=gd["cat"],
        g_order=gd["order"],
        g_area=gd["area"],
        g_crowd=crowd,
        g_ignore=gd["ignore"],
        iou_fn=_iou_fn(p.iou_type, d["geom"], gd["geom"], crowd),
    )


def _match(
    lg: LvisGroundTruth,
    r: CocoResults,
    gsel: np.ndarray,
    dsel: np.ndarray,
    p: CocoParams,
    client: Any = None,
    shards: int | None = None,
) -> MatchTable:
    """Match the selected detections, shard by shard of whole images (groups never straddle images): runs of
    at most ``SHARD_DETECTIONS`` detections in this process, or with ``client``/``shards`` the image ranges
    of :func:`~deteval.run.shards.shard_range` (on the cluster if ``client`` is given). Every
    (image, category) group is matched whole in one shard, so the merged table is the same for any split."""
    g = lg.coco
    n_img = int(g.image_ids.shape[0])
    K = int(g.cat_ids.shape[0])
    if client is None and shards is None:
        per_img = np.bincount(r.img[dsel], minlength=n_img)
        shard = np.cumsum(per_img) // SHARD_DETECTIONS
    else:
        from deteval.run.shards import default_shards, shard_range

        n_shards = default_shards(client, shards)
        shard = np.zeros(n_img, dtype=np.int64)
        for k in range(n_shards):
            lo, hi = shard_range(n_img, k, n_shards)
            shard[lo:hi] = k
    tasks = []
    for s in np.unique(shard).tolist() or [0]:
        in_shard = shard == s if n_img else np.zeros(0, bool)
        gk = gsel[in_shard[g.img[gsel]]] if n_img else gsel
        dk = dsel[in_shard[r.img[dsel]]] if n_img else dsel
        tasks.append((n_img, K, p, lvis_detections(r, dk, dk, g, p.iou_type), lvis_truths(g, gk, p.iou_type)))
    from deteval.run.parts import map_parts

    tables = map_parts(match_lvis_shard, tasks, client)
    return merge_lvis_tables(lg, tables)


def lvis_detections(
    r: CocoResults, rows: np.ndarray, order: np.ndarray, g: CocoGroundTruth, iou_type: str
) -> dict[str, Any]:
    """The columns :func:`match_lvis_shard` reads of the detections ``rows`` of ``r``; ``order``: their
    positions in the whole results (the tie order)."""
    geom = r.bbox[rows] if iou_type == "bbox" else dt_rles(r, rows, g)  # (masks: converted on demand)
    d = {"img": r.img[rows], "cat": r.cat[rows], "score": r.score[rows], "order": order.astype(np.int64)}
    d.update(area=r.area[rows], geom=geom)
    return d


def lvis_truths(g: CocoGroundTruth, rows: np.ndarray, iou_type: str) -> dict[str, Any]:
    """The columns :func:`match_lvis_shard` reads of the ground truths ``rows``."""
    geom = g.bbox[rows] if iou_type == "bbox" else gt_rles(g, rows)
    gd = {"img": g.img[rows], "cat": g.cat[rows], "order": rows.astype(np.int64), "area": g.area[rows]}
    gd.update(ignore=g.ignore[rows], geom=geom)
    return gd


def merge_lvis_tables(lg: LvisGroundTruth, tables: list[MatchTable]) -> MatchTable:
    """The tables of consecutive image shards, in shard order, as one; an unmatched detection of a category
    not exhaustively annotated in its image is ignored (a match to an ignored gt already is)."""
    table = merge_tables(tables)
    K = int(lg.coco.cat_ids.shape[0])
    nel = np.isin(table.img.astype(np.int64) * K + table.cat, lg.not_exhaustive)
    table.ig |= nel[None, None, :] & ~table.tp
    return table


def _pooled(table: MatchTable, frequency: np.ndarray, p: CocoParams) -> tuple[np.ndarray, np.ndarray]:
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
        pr, rc, _ = accumulate(pooled, p.rec_thrs, (int(rank.max()) + 1 if len(table) else 1,))
        prec.append(pr[..., 0])
        rec.append(rc[..., 0])
    return np.concatenate(prec, axis=2), np.concatenate(rec, axis=1)


def _lvis_branch(
    source: Any,
    r: CocoResults,
    g: CocoGroundTruth,
    iou_type: str,
    max_dets: int | None,
    dets_per_cat: int | None,
    on_error: str,
) -> CocoResults:
    """Results as LVISResults reads them. It picks its branch (a ``bbox``: area = w*h; else the mask area) from
    the first record of its *capped* list, which is not the file's first record when the caps reorder it: a
    file whose first record has only a mask can still be read in the bbox branch. Then the surviving records
    are read again with that record first (the other survivors keep their order, so no tie changes)."""
    if r.kind != "segm" or r.skipped or not isinstance(source, (str, PathLike, list)):
        return r
    keep, _, first = lvis_caps(r, int(g.cat_ids.shape[0]), max_dets, dets_per_cat)
    if first == 0:
        return r
    if isinstance(source, list) and is_path_list(source):  # several files: their concatenation
        records = [rec for path in source for rec in read_json(path)]
    else:
        records = read_json(source) if isinstance(source, (str, PathLike)) else source
    if loadres_branch(records[first], r.source) != "bbox":
        return r
    order = [first] + [i for i in np.flatnonzero(keep).tolist() if i != first]
    return load_coco_results([records[i] for i in order], g, iou_type=iou_type, on_error=on_error)


def evaluate_lvis(
    gt: Any,
    results: Any,
    *,
    iou_type: str = "bbox",
    max_dets: int | None = 300,
    dets_per_cat: int | None = None,
    fixed_ap: bool = False,
    pooled: bool = False,
    on_error: str = "raise",
    client: Any = None,
    shards: int | None = None,
) -> LvisEvaluation:
    """Evaluate ``results`` against LVIS ground truth ``gt`` (see the module docstring for the rules).

    ``gt``: a path, a parsed dict, an lvis-api ``LVIS`` or an :class:`~deteval.io.lvis.LvisGroundTruth`;
    ``results``: a path or a list of result dicts (COCO results format, read as loadRes/LVISResults read them),
    or several paths (e.g. one file per training rank), read as their concatenation in the given order.
    ``max_dets``: detections kept per image (lvis-api's 300; None or −1: no limit); ``dets_per_cat``:
    detections kept per category over the dataset (None: no limit); ``fixed_ap=True`` sets
    ``max_dets=None, dets_per_cat=10_000`` (Fixed AP) unless ``dets_per_cat`` is given; ``pooled=True`` adds
    the pooled APs. ``client`` (a ``dask.distributed`` Client) and/or ``shards``: the matching runs on
    ``shards`` image shards (default: one per worker thread), on the cluster if ``client`` is given. Result
    files are then read by the workers in byte ranges (:mod:`deteval.run.lvis`); this process reads
    the ground truth and applies the caps (the per-image cap and Fixed AP's per-category cut over all
    images) on four columns of the detections, so each worker holds only its ranges and its shard's
    detections and ground truths and returns its match table; the results are bit-identical to one process
    for every shard count.
    """
    if iou_type not in IOU_TYPES:
        raise ConfigError(f"unknown iou_type {iou_type!r} for LVIS: use bbox or segm (as lvis-api)")
    if fixed_ap:
        max_dets = None
        dets_per_cat = FIXED_AP_DETS_PER_CAT if dets_per_cat is None else dets_per_cat
    max_dets = _check_cap(max_dets, "max_dets")
    dets_per_cat = _check_cap(dets_per_cat, "dets_per_cat")
    p = CocoParams.default(iou_type)
    lg = load_lvis_gt(gt, keep_segmentation=iou_type == "segm", on_error=on_error)
    g = lg.coco
    read = None
    if (client is not None or shards is not None) and (
        isinstance(results, (str, PathLike)) or is_path_list(results)
    ):  # files: read by the workers, each a byte range of whole records
        from deteval.run.lvis import read_and_match_lvis

        read = read_and_match_lvis(lg, results, p, max_dets, dets_per_cat, on_error, client, shards)
    if read is not None:
        r, gsel, counts, warnings, table = read
    else:
        if is_path_list(results):
            from deteval.run.coco import load_results_files

            r = load_results_files(results, g, iou_type=iou_type, on_error=on_error)
        else:
            r = load_coco_results(results, g, iou_type=iou_type, on_error=on_error)
        r = _lvis_branch(results, r, g, iou_type, max_dets, dets_per_cat, on_error)
        gsel, dsel, counts, warnings = lvis_selection(lg, r, max_dets, dets_per_cat)
        table = _match(lg, r, gsel, dsel, p, client, shards)
    counts["skipped_records"] = g.skipped + r.skipped
    big = int(table.rank.max()) + 1 if len(table) else 1
    precision, recall, _ = accumulate(table, p.rec_thrs, (big,))
    precision, recall = precision[..., 0], recall[..., 0]

    groups = [np.flatnonzero(lg.frequency == i).tolist() for i in range(len(FREQUENCIES))]
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
        pooled_precision, pooled_recall = _pooled(table, lg.frequency, p)
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
    )
