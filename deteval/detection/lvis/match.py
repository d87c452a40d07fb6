"""LVIS matching in parts of whole images: per (image, category), pycocotools' greedy rule with no crowd
(:func:`match_lvis_shard`); the tables of consecutive parts merge into the table of one pass
(:func:`merge_lvis_tables`), where a detection of a category not exhaustively annotated in its image is
ignored."""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.core.sorting import distinct, distinct_counts, member_of, stable_order
from deteval.detection.coco_params import CocoParams
from deteval.detection.coco_rles import dt_rles, gt_rles, region_measure
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.io.lvis import LvisGroundTruth
from deteval.match.coco import MatchTable, match_groups, merge_tables

__all__ = [
    "SHARD_DETECTIONS",
    "bounded_parts",
    "lvis_detections",
    "lvis_truths",
    "match_lvis_shard",
    "merge_lvis_tables",
    "part_tasks",
]

#: Detections per matching part (parts are whole images; bounded memory, same result).
SHARD_DETECTIONS = 400_000


def match_lvis_shard(
    n_img: int, n_cat: int, p: CocoParams, d: dict[str, Any], gd: dict[str, Any]
) -> MatchTable:
    """The task a worker runs: federated matching of one shard of whole images. ``d``/``gd``: the shard's
    selected detections and ground truths (img, cat, score, order, area, ignore, geom), cut on the driver."""
    crowd = np.zeros(gd["img"].shape[0], dtype=bool)  # lvis-api passes iscrowd = 0 for every ground truth
    group_sizes = distinct_counts(d["img"].astype(np.int64) * n_cat + d["cat"])[1]
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
        iou_fn=region_measure(p, d["geom"], gd["geom"], crowd),
    )


def bounded_parts(r: CocoResults, dsel: np.ndarray, n_img: int) -> np.ndarray:
    """The part of each image: runs of consecutive images holding at most about ``SHARD_DETECTIONS`` of the
    selected detections ``dsel`` each (one process: the matching's temporaries stay those of one part)."""
    per_img = np.bincount(r.img[dsel], minlength=n_img)
    return np.cumsum(per_img) // SHARD_DETECTIONS


def part_tasks(
    lg: LvisGroundTruth, r: CocoResults, gsel: np.ndarray, dsel: np.ndarray, p: CocoParams, part: np.ndarray
) -> list[tuple[Any, ...]]:
    """The arguments of :func:`match_lvis_shard` for each part (``part``: the part of each image,
    non-decreasing), in part order: the selected ground truths ``gsel`` and detections ``dsel`` of its
    images."""
    g = lg.coco
    n_img = int(g.image_ids.shape[0])
    K = int(g.cat_ids.shape[0])
    tasks: list[tuple[Any, ...]] = []
    if not n_img:
        return [
            (n_img, K, p, lvis_detections(r, dsel, dsel, g, p.iou_type), lvis_truths(g, gsel, p.iou_type))
        ]
    # each part's rows in their order in gsel / dsel: one stable sort by part instead of a pass per part
    n_parts = int(part.max()) + 1
    g_rows, g_ends = _by_part(gsel, part[g.img[gsel]], n_parts)
    d_rows, d_ends = _by_part(dsel, part[r.img[dsel]], n_parts)
    for s in distinct(part).tolist():
        gk, dk = g_rows[g_ends[s] : g_ends[s + 1]], d_rows[d_ends[s] : d_ends[s + 1]]
        tasks.append((n_img, K, p, lvis_detections(r, dk, dk, g, p.iou_type), lvis_truths(g, gk, p.iou_type)))
    return tasks


def _by_part(rows: np.ndarray, of: np.ndarray, n_parts: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` grouped by their part ``of`` (in ``[0, n_parts)``), each group in the order of ``rows``, and
    where each group starts: part ``s`` is ``[ends[s], ends[s + 1])``."""
    ends = np.zeros(n_parts + 1, dtype=np.int64)
    np.cumsum(np.bincount(of, minlength=n_parts), out=ends[1:])
    return rows[stable_order(of)], ends


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
    keys = table.img.astype(np.int64) * K + table.cat
    nel = np.flatnonzero(member_of(keys, lg.not_exhaustive, int(lg.coco.image_ids.shape[0]) * K))
    # (only those rows: usually a small share of the A × T × N flags)
    table.ig[:, :, nel] |= ~table.tp[:, :, nel]
    return table
