"""lvis-api's caps and filters: which detections and ground truths an LVIS evaluation reads
(``LVISResults``' per-image cap, Fixed AP's per-category cut, zero areas, the federated filter), and the
branch ``LVISResults`` reads a segm file in."""

from __future__ import annotations

from os import PathLike
from typing import Any

import numpy as np

from deteval.core.sorting import distinct, lex_order, member_of
from deteval.detection.coco.inputs import is_path_list
from deteval.io.coco import CocoGroundTruth, CocoResults, load_coco_results, loadres_branch, read_json
from deteval.io.lvis import LvisGroundTruth

__all__ = ["lvis_branch", "lvis_caps", "lvis_selection"]


def _rank_within(key: np.ndarray, score: np.ndarray, tie: np.ndarray | None = None) -> np.ndarray:
    """Rank of each item inside its ``key`` group by descending score, ties by ascending ``tie`` (the list
    order: Python's stable ``sorted(..., key=score, reverse=True)``); None: input order (``np.lexsort``'s permutation, which ``lex_order`` gives)."""
    n = key.shape[0]
    order = lex_order((-score, key) if tie is None else (tie, -score, key))
    ks = key[order]
    start = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]]) if n else np.zeros(0, np.int64)
    pos_in = np.arange(n) - np.repeat(start, np.diff(np.r_[start, n]))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = pos_in
    return rank


def _most_per_image(img: np.ndarray) -> int:
    """The most items of one image (``img``: image indices); 0 for none."""
    return int(np.bincount(img).max()) if img.shape[0] else 0


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
    # LVISResults.limit_dets_per_image, over all categories of the image; an image with no more detections
    # than the cap keeps them all whatever their ranks, so they are ranked only where one has more
    if max_dets is not None and _most_per_image(r.img[keep]) > max_dets:
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
    present = distinct(g.img[gsel].astype(np.int64) * K + g.cat[gsel])
    allowed = distinct(np.concatenate((present, lg.neg)))  # (np.union1d)
    d_key = r.img.astype(np.int64) * K + r.cat
    keep &= d_pos & member_of(d_key, allowed, int(g.image_ids.shape[0]) * K)
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


def lvis_branch(
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
