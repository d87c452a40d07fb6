"""LVIS evaluation with the results read by ``dask.distributed`` workers, bit-identical to one process.

The results files are read as for COCO (:mod:`deteval.run.coco`): tasks read byte ranges of whole
records and cut their columns into shards of whole images (all images, ascending id). lvis-api's caps span
more than a shard (Fixed AP keeps the top K detections of each category over all images; the per-image cap
breaks ties in that order), so the driver gathers four numbers per detection (image, category, score, area:
no box or mask) in input order and makes the selection exactly as one process does
(:func:`~deteval.detection.lvis.lvis_selection`). Each shard task then gets the indices of its selected detections
(among the pieces it concatenates, in input order) and its ground truths, matches, and returns its table.

One case is left to the driver's own reading: segm results whose capped list does not start with the file's
first record (LVISResults takes its branch from that record, and may read the file again in another branch).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from os import PathLike
from typing import Any

import numpy as np

from deteval.detection.coco.evaluation import FULL_ARRAYS_BYTES, full_arrays_bytes
from deteval.detection.coco.inputs import is_path_list, load_results_files
from deteval.detection.coco_params import MASK_TYPES, CocoParams, results_kind
from deteval.detection.lvis.evaluation import (
    FIXED_AP_DETS_PER_CAT,
    IOU_TYPES,
    LvisArrays,
    LvisEvaluation,
    check_cap,
    finish_lvis,
    lvis_arrays,
)
from deteval.detection.lvis.match import (
    bounded_parts,
    lvis_detections,
    lvis_truths,
    match_lvis_shard,
    merge_lvis_tables,
    part_tasks,
)
from deteval.detection.lvis.selection import lvis_branch, lvis_caps, lvis_selection
from deteval.errors import ConfigError
from deteval.io.coco import CocoGroundTruth, CocoResults, concat_results, load_coco_results
from deteval.io.lvis import LvisGroundTruth, load_lvis_gt
from deteval.match.boundary import DEFAULT_DILATION_RATIO
from deteval.match.coco import MatchTable
from deteval.run import coco as _coco
from deteval.run.coco import ShardPlan, gt_rows, read_results, record_keys
from deteval.run.coco_two_cores import (
    bbox_results_two_cores,
    both_halves,
    category_halves,
    file_bytes,
    fork_detections,
)
from deteval.run.forked import can_fork
from deteval.run.pages import small_pages
from deteval.run.parts import map_parts, scatter
from deteval.run.shards import default_shards, shard_range

__all__ = ["arrays_on_two_cores", "evaluate_lvis", "match_selected", "read_and_match_lvis"]


def _lvis_shard_task(
    g: CocoGroundTruth,
    pieces: list[CocoResults],
    rows: np.ndarray,
    order: np.ndarray,
    n_img: int,
    K: int,
    p: CocoParams,
    gd: dict[str, Any],
) -> MatchTable:
    """Shard task: its pieces (input order) as one; ``rows`` of them are the selected detections, ``order``
    their positions in all the results."""
    r = concat_results(pieces)
    return match_lvis_shard(n_img, K, p, lvis_detections(r, rows, order, g, p.iou_type), gd)


def read_and_match_lvis(
    lg: LvisGroundTruth,
    results: Any,
    p: CocoParams,
    max_dets: int | None,
    dets_per_cat: int | None,
    on_error: str,
    client: Any,
    shards: int | None,
    range_bytes: int | None = None,
) -> tuple[CocoResults, np.ndarray, dict[str, int], list[str], MatchTable] | None:
    """Read ``results`` (a path or several) on the workers, select as lvis-api and match in image shards.
    Returns the results' key columns (image, category, score, area; ``warnings`` and ``skipped`` of the
    reading), the selected ground truths, counts, warnings and the merged match table; None in the case
    the driver must read itself (see the module docstring). ``range_bytes``: the size of the byte ranges
    (default: :data:`deteval.run.coco.RANGE_BYTES`)."""
    g = lg.coco
    n_img, K = int(g.image_ids.shape[0]), int(g.cat_ids.shape[0])
    n = default_shards(client, shards)
    bounds = [shard_range(n_img, k, n)[0] for k in range(n)] + [n_img]
    plan = ShardPlan(np.arange(n_img, dtype=np.int64), np.array(bounds, dtype=np.int64))
    base = scatter(gt_rows(g, np.arange(min(1, len(g)))), client, broadcast=True)
    light = scatter(gt_rows(g, np.zeros(0, dtype=np.int64)), client, broadcast=True)
    plan_f = scatter(plan, client, broadcast=True)
    size = _coco.RANGE_BYTES if range_bytes is None else range_bytes
    read_tasks, pieces, reads = read_results(
        client, results, base, plan_f, n, results_kind(p.iou_type), on_error, size
    )
    keys = map_parts(record_keys, [(t,) for t in read_tasks], client)
    img, cat, score, area = (np.concatenate([k[i] for k in keys]) for i in range(4))
    full = [m for m in reads if m.n] or reads[:1]
    r = CocoResults(
        img=img,
        cat=cat,
        score=score,
        bbox=np.zeros((img.shape[0], 0)),  # (the selection never reads a box)
        area=area,
        kind=full[0].kind,
        source=", ".join(m.source for m in reads),
        warnings=[w for m in reads for w in m.warnings],
        skipped=sum(m.skipped for m in reads),
    )
    if r.kind == "segm" and not r.skipped and lvis_caps(r, K, max_dets, dets_per_cat)[2] != 0:
        return None
    gsel, dsel, counts, warnings = lvis_selection(lg, r, max_dets, dets_per_cat)
    shard = plan.shard(r.img)
    d_shard, g_shard = shard[dsel], plan.shard(g.img[gsel])

    def tasks() -> Iterator[tuple[Any, ...]]:  # (each shard's ground truth made as its task is sent)
        for k in range(n):
            dk = dsel[d_shard == k]
            rows = np.searchsorted(np.flatnonzero(shard == k), dk)  # positions among the shard's pieces
            yield light, pieces[k], rows, dk, n_img, K, p, lvis_truths(g, gsel[g_shard == k], p.iou_type)

    table = merge_lvis_tables(lg, map_parts(_lvis_shard_task, tasks(), client))
    return r, gsel, counts, warnings, table


@small_pages()  # (huge pages fault in slowly: see deteval.run.pages)
def evaluate_lvis(
    gt: Any,
    results: Any,
    *,
    iou_type: str = "bbox",
    dilation_ratio: float = DEFAULT_DILATION_RATIO,
    boundary_profile: str = "boundary-iou-api",
    max_dets: int | None = 300,
    dets_per_cat: int | None = None,
    fixed_ap: bool = False,
    pooled: bool = False,
    on_error: str = "raise",
    client: Any = None,
    shards: int | None = None,
) -> LvisEvaluation:
    """Evaluate ``results`` against LVIS ground truth ``gt`` (the rules: :mod:`deteval.detection.lvis`).

    ``gt``: a path, a parsed dict, an lvis-api ``LVIS`` or an :class:`~deteval.io.lvis.LvisGroundTruth`;
    ``results``: a path or a list of result dicts (COCO results format, read as loadRes/LVISResults read them),
    or several paths (e.g. one file per training rank), read as their concatenation in the given order.
    ``iou_type``: ``"bbox"``, ``"segm"`` or ``"boundary"`` (boundary-iou-api's LVIS rule: min(mask IoU,
    boundary IoU), ``dilation_ratio`` and ``boundary_profile`` as for COCO, :class:`CocoParams`).
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

    The protocol's steps run in this process (parts of at most ``SHARD_DETECTIONS`` detections), or with
    ``client``/``shards`` in image shards, the result files then read by the workers in byte ranges
    (:func:`read_and_match_lvis`).
    """
    if iou_type not in IOU_TYPES:
        raise ConfigError(
            f"unknown iou_type {iou_type!r} for LVIS: use bbox, segm (as lvis-api) or boundary (as boundary-iou-api)"
        )
    if fixed_ap:
        max_dets = None
        dets_per_cat = FIXED_AP_DETS_PER_CAT if dets_per_cat is None else dets_per_cat
    max_dets = check_cap(max_dets, "max_dets")
    dets_per_cat = check_cap(dets_per_cat, "dets_per_cat")
    p = replace(
        CocoParams.default(iou_type), dilation_ratio=dilation_ratio, boundary_profile=boundary_profile
    ).validated()
    kind = results_kind(iou_type)
    r_two = None
    read_gt = partial(load_lvis_gt, gt, keep_segmentation=iou_type in MASK_TYPES, on_error=on_error)
    if client is None and shards is None and kind == "bbox":  # (the bbox results' tail read by a child)
        lg, r_two = bbox_results_two_cores(results, file_bytes(gt), read_gt, on_error)
    else:
        lg = read_gt()
    g = lg.coco
    read = None
    if (client is not None or shards is not None) and (
        isinstance(results, (str, PathLike)) or is_path_list(results)
    ):  # files: read by the workers, each a byte range of whole records
        read = read_and_match_lvis(lg, results, p, max_dets, dets_per_cat, on_error, client, shards)
    table: MatchTable | None = None
    arrays = None
    if read is not None:
        r, gsel, counts, warnings, table = read
    else:
        if r_two is not None:
            r = r_two
        elif is_path_list(results):
            r = load_results_files(results, g, iou_type=kind, on_error=on_error)
        else:
            r = load_coco_results(results, g, iou_type=kind, on_error=on_error)
        r = lvis_branch(results, r, g, kind, max_dets, dets_per_cat, on_error)
        gsel, dsel, counts, warnings = lvis_selection(lg, r, max_dets, dets_per_cat)
        if client is None and shards is None and not pooled:  # (the pooled APs need the whole table)
            arrays = arrays_on_two_cores(lg, r, gsel, dsel, p)
        if arrays is None:
            table = match_selected(lg, r, gsel, dsel, p, client, shards)
    counts["skipped_records"] = g.skipped + r.skipped
    return finish_lvis(lg, r, gsel, table, p, max_dets, dets_per_cat, pooled, counts, warnings, arrays)


def match_selected(
    lg: LvisGroundTruth,
    r: CocoResults,
    gsel: np.ndarray,
    dsel: np.ndarray,
    p: CocoParams,
    client: Any = None,
    shards: int | None = None,
) -> MatchTable:
    """Match the selected detections part by part of whole images (groups never straddle images): runs of at
    most ``SHARD_DETECTIONS`` detections in this process, or with ``client``/``shards`` the image ranges of
    :func:`~deteval.run.shards.shard_range` (on the cluster if ``client`` is given). Every (image, category)
    group is matched whole in one part, so the merged table is the same for any split."""
    n_img = int(lg.coco.image_ids.shape[0])
    if client is None and shards is None:
        part = bounded_parts(r, dsel, n_img)
    else:
        n_shards = default_shards(client, shards)
        part = np.zeros(n_img, dtype=np.int64)
        for k in range(n_shards):
            lo, hi = shard_range(n_img, k, n_shards)
            part[lo:hi] = k
    tables = map_parts(match_lvis_shard, part_tasks(lg, r, gsel, dsel, p, part), client)
    return merge_lvis_tables(lg, tables)


def arrays_on_two_cores(
    lg: LvisGroundTruth, r: CocoResults, gsel: np.ndarray, dsel: np.ndarray, p: CocoParams
) -> LvisArrays | None:
    """The matching and accumulation of the selected ground truths ``gsel`` and detections ``dsel`` done by
    two processes, a half of the categories each (:func:`~deteval.run.coco_two_cores.category_halves`; the
    child's precision and recall of its categories come back through the pipe), as
    :func:`~deteval.detection.lvis.lvis_arrays` of the one-process table gives them: each category's lists
    are matched (per image) and ranked on their own. None where that does not pay (few detections), where
    the arrays would hold only some categories, or where the child fails (the caller then runs one process)."""
    K = int(lg.coco.cat_ids.shape[0])
    if dsel.shape[0] < fork_detections(p.iou_type) or K < 2:
        return None
    if full_arrays_bytes(p, K, n_max_dets=1) > FULL_ARRAYS_BYTES or not can_fork():
        return None  # (asked first: the halves are not worth weighing for one process)
    if p.iou_type in MASK_TYPES:  # imported once, before the fork, not by each half
        import pycocotools.mask  # noqa: F401
    mine, theirs = category_halves(r.img[dsel], r.cat[dsel], np.arange(K), K)
    both = both_halves(_half_arrays, (lg, r, gsel, dsel, p), mine, theirs)
    if both is None:
        return None
    (pm, rm, km), (pt, rt, kt) = both
    T, R, A = p.iou_thrs.shape[0], p.rec_thrs.shape[0], len(p.area_rng)
    precision = np.full((T, R, K, A), -1.0)
    recall = np.full((T, K, A), -1.0)
    precision[:, :, km], precision[:, :, kt] = pm, pt
    recall[:, km], recall[:, kt] = rm, rt
    return precision, recall, None


def _half_arrays(
    lg: LvisGroundTruth, r: CocoResults, gsel: np.ndarray, dsel: np.ndarray, p: CocoParams, cats: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """precision[T, R, k, A] and recall[T, k, A] of the categories ``cats`` (in that order), and ``cats``."""
    g = lg.coco
    half = np.zeros(int(g.cat_ids.shape[0]), dtype=bool)
    half[cats] = True
    table = match_selected(lg, r, gsel[half[g.cat[gsel]]], dsel[half[r.cat[dsel]]], p)
    precision, recall, _ = lvis_arrays(table, p)  # (every category: the caller's arrays fit)
    return precision[:, :, cats], recall[:, cats], cats
