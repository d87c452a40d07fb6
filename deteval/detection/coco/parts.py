"""An evaluation in parts: runs of whole images, or of categories, each matched alone
(:func:`~deteval.detection.coco.match.match_coco`); the tables of disjoint parts merge into the table of one
pass (groups never straddle images or categories), so every split gives the same numbers. Parts bound the
matching's temporary memory (``SHARD_DETECTIONS`` detections each) and are what :mod:`deteval.run` hands to
other processes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from deteval.core.sorting import sorted_unique
from deteval.detection.coco.match import match_coco
from deteval.detection.coco.params import id_selection, selected_positions
from deteval.detection.coco_accumulate import accumulate, pycocotools_views
from deteval.detection.coco_params import CocoParams
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.match.coco import MatchTable, merge_tables

__all__ = [
    "SHARD_DETECTIONS",
    "Arrays",
    "accumulate_categories",
    "category_shards",
    "compact_categories",
    "image_parts",
    "match_in_shards",
    "merge_parts",
    "per_category",
    "sum_counts",
]

#: precision, scores (A, M, T, K, R) and recall (A, M, T, K), or pycocotools' views of them.
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]

#: Detections per matching shard: larger inputs are matched in shards of whole images (bounded memory).
SHARD_DETECTIONS = 400_000


def image_parts(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    categories: np.ndarray | None = None,
    images: np.ndarray | None = None,
) -> list[np.ndarray] | None:
    """The parts of an evaluation: runs of consecutive evaluated images (indices, ascending id) holding about
    ``SHARD_DETECTIONS`` of the detections of ``images`` and ``categories`` each (as in :func:`match_coco`);
    None where one part holds them all, and an empty list where no image is selected."""
    if len(res) <= SHARD_DETECTIONS:
        return None
    img_sel = id_selection(gt.image_ids, params.img_ids, "image")
    n_img = int(img_sel.shape[0])
    d_img = selected_positions(img_sel, gt.image_ids.shape[0])[res.img]
    in_images = np.ones(n_img, dtype=bool)
    if images is not None and n_img:  # only these images' detections fill the parts
        in_images[:] = False
        in_images[np.asarray(images, dtype=np.int64)] = True
        d_img = np.where(in_images[np.maximum(d_img, 0)], d_img, -1)
    if categories is not None and params.use_cats:  # only these categories' detections fill the parts
        cat_sel = id_selection(gt.cat_ids, params.cat_ids, "category")
        in_part = np.zeros(gt.cat_ids.shape[0], dtype=bool)
        in_part[cat_sel[np.asarray(categories, dtype=np.int64)]] = True
        d_img = np.where(in_part[res.cat], d_img, -1)
    per_img = np.bincount(d_img[d_img >= 0], minlength=n_img)
    shard = np.cumsum(per_img) // SHARD_DETECTIONS  # non-decreasing part number per image
    return [np.flatnonzero((shard == s) & in_images) for s in sorted_unique(shard[in_images]).tolist()]


def merge_parts(
    matched: list[tuple[MatchTable, dict[str, int], list[str]]],
) -> tuple[MatchTable, dict[str, int], list[str]]:
    """The tables of disjoint parts (in image order) as one, their counts summed; the last part's warnings
    (every part gives the same ones)."""
    counts = matched[0][1]
    for _, c, _ in matched[1:]:
        counts = sum_counts(counts, c)
    return merge_tables([t for t, _, _ in matched]), counts, matched[-1][2]


def match_in_shards(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    compat: str,
    categories: np.ndarray | None = None,
    images: np.ndarray | None = None,
) -> tuple[MatchTable, dict[str, int], list[str]]:
    """:func:`match_coco` over the :func:`image_parts`, merged (:func:`merge_parts`); identical to one call
    (groups never straddle images) with bounded temporary memory. ``categories``, ``images``: as in
    :func:`match_coco`. (A category half matches runs of its categories instead, each ranked and accumulated
    on its own: :func:`accumulate_categories`.)"""
    parts = image_parts(gt, res, params, categories, images)
    if not parts:  # one part; or no image selected: the one-pass match gives the same (empty) table
        return match_coco(gt, res, params, compat, images=images, categories=categories)
    return merge_parts([match_coco(gt, res, params, compat, images=p, categories=categories) for p in parts])


def category_shards(
    res: CocoResults, cat_sel: np.ndarray, gt: CocoGroundTruth, categories: np.ndarray
) -> list[np.ndarray] | None:
    """``categories`` (ascending indices into the evaluated ones) cut into runs holding at most
    ``SHARD_DETECTIONS`` detections each; None if one category alone holds more."""
    per_cat = per_category(res, cat_sel, gt.cat_ids.shape[0])[categories]
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


def sum_counts(counts: dict[str, int], c: dict[str, int]) -> dict[str, int]:
    """The counts of two disjoint shards of one evaluation (the same images and categories selected)."""
    return {k: (v if k in ("n_images", "n_categories") else counts[k] + v) for k, v in c.items()}


def per_category(r: CocoResults, cat_sel: np.ndarray, n_cats: int) -> np.ndarray:
    """Detections of each evaluated category (``cat_sel``: their indices among the ``n_cats``)."""
    c = selected_positions(cat_sel, n_cats)[r.cat]
    return np.bincount(c[c >= 0], minlength=cat_sel.shape[0])


def accumulate_categories(
    g: CocoGroundTruth,
    r: CocoResults,
    p: CocoParams,
    compat: str,
    part: np.ndarray,
    out: Arrays | None = None,
) -> tuple[Arrays, dict[str, int], list[str]]:
    """Match and accumulate the categories ``part`` alone; their precision, recall and scores columns
    (written into ``out`` when given: see :func:`~deteval.detection.coco_accumulate.accumulate`). A part
    with more than ``SHARD_DETECTIONS`` detections is matched in runs of consecutive categories
    (:func:`category_shards`), each accumulated into its block of the columns as soon as it is matched: no
    merged table (its flags copied once more) and one run's table at a time."""
    runs: list[np.ndarray] | None = [part]
    if len(r) > SHARD_DETECTIONS:  # (a category larger than a shard: shards of images, a table not ranked)
        runs = (
            category_shards(r, id_selection(g.cat_ids, p.cat_ids, "category"), g, part)
            if p.use_cats
            else None
        )
    if runs is None or len(runs) < 2:
        table, counts, warnings = (
            match_in_shards(g, r, p, compat, categories=part)
            if runs is None
            else match_coco(g, r, p, compat, categories=part, ranked=True)
        )
        return accumulate(compact_categories(table, part), p.rec_thrs, p.max_dets, out=out), counts, warnings
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
        accumulate(compact_categories(t, run), p.rec_thrs, p.max_dets, out=block)
        summed = sum_counts(summed, c) if summed else c
        lo = hi
        del t
    return pycocotools_views(*out), summed, w


def compact_categories(table: MatchTable, part: np.ndarray) -> MatchTable:
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
