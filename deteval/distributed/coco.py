"""COCO evaluation with the images sharded over ``dask.distributed`` workers, bit-identical to one process.

Shard k of n holds the evaluated images ``[k·I // n, (k+1)·I // n)`` (ascending id, pycocotools' order).
Each task loads the ground truth and the result file(s) itself, keeps the detections of its images, matches
them (:func:`~deteval.detection.coco.match_coco` restricted to the shard) and returns the compact
:class:`~deteval.detection.coco_match.MatchTable` with counts; no box, mask or keypoint leaves a worker. The
driver merges the tables (:func:`~deteval.detection.match_table.merge_coco_tables`) and accumulates them.
A task holds its shard's detections (each result file is read, cut to the shard, then dropped, so training
jobs that write one file per rank keep a worker's peak at one file plus its shard) and the ground truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from deteval.detection.coco import (
    COMPAT_MODES,
    SHARD_DETECTIONS,
    CocoEvaluation,
    _finish,
    _resolve_params,
    _selection,
    is_path_list,
    match_coco,
    past_border_counts,
    past_border_message,
)
from deteval.detection.coco_match import MatchTable
from deteval.detection.coco_params import CocoParams
from deteval.detection.match_table import merge_coco_tables
from deteval.distributed.shards import default_shards, shard_range
from deteval.errors import ConfigError
from deteval.io.coco import CocoGroundTruth, CocoResults, load_coco_gt, load_coco_results

__all__ = ["ShardTable", "evaluate_coco_sharded", "load_results_files", "match_coco_shard"]

#: the warning match_coco gives about detections outside the selection (recounted over all shards)
_OUTSIDE = " detections outside the selected images/categories were not evaluated"


def _subset(r: CocoResults, rows: np.ndarray) -> CocoResults:
    """The results of ``rows`` (ascending), every column cut alike; input order is kept."""
    return replace(
        r,
        img=r.img[rows],
        cat=r.cat[rows],
        score=r.score[rows],
        bbox=r.bbox[rows],
        area=r.area[rows],
        keypoints=None if r.keypoints is None else r.keypoints[rows],
        segmentation=None if r.segmentation is None else [r.segmentation[i] for i in rows.tolist()],
    )


def _concat(parts: Sequence[CocoResults]) -> CocoResults:
    first = parts[0]
    return replace(
        first,
        img=np.concatenate([p.img for p in parts]),
        cat=np.concatenate([p.cat for p in parts]),
        score=np.concatenate([p.score for p in parts]),
        bbox=np.concatenate([p.bbox for p in parts]),
        area=np.concatenate([p.area for p in parts]),
        keypoints=None if first.keypoints is None else np.concatenate([p.keypoints for p in parts]),
        segmentation=None
        if first.segmentation is None
        else [s for p in parts for s in (p.segmentation or [])],
        source=", ".join(p.source for p in parts),
        warnings=[w for p in parts for w in p.warnings],
        skipped=sum(p.skipped for p in parts),
    )


def load_results_files(
    sources: Sequence[Any],
    gt: CocoGroundTruth,
    *,
    iou_type: str = "bbox",
    on_error: str = "raise",
    keep: Any = None,
) -> CocoResults:
    """Several result files read as their concatenation, in the given order (the tie order of equal scores).

    ``keep``: optional function from a file's :class:`CocoResults` to the rows to keep, applied to each file
    as soon as it is read (so only one whole file is in memory at a time). Files of different kinds (bbox
    and segm results) are refused.
    """
    parts = []
    for src in sources:
        r = load_coco_results(src, gt, iou_type=iou_type, on_error=on_error)
        parts.append(r if keep is None else _subset(r, keep(r)))
    kinds = {p.kind for p in parts}
    if len(kinds) > 1 or len({p.keypoints is None for p in parts}) > 1:
        raise ConfigError(f"the result files hold different kinds of results ({', '.join(sorted(kinds))})")
    return _concat(parts)


@dataclass
class ShardTable:
    """What a shard task sends back: its match table, counts, and (shard 0 only) the ground truth's
    image/category tables without annotations and the load warnings."""

    table: MatchTable
    counts: dict[str, int]
    outside: int  # detections of this shard outside the selected images/categories
    border: tuple[int, int]  # past_border_counts of this shard's detections
    warnings: list[str] = field(default_factory=list)  # matching's warnings but the count of left-out ones
    load_warnings: list[str] = field(default_factory=list)
    gt: CocoGroundTruth | None = None


def _light_gt(g: CocoGroundTruth) -> CocoGroundTruth:
    """The ground truth without its annotations (what accumulation and the summary read); one annotation
    id 0 is kept if the file has one, for the warning about it."""
    z = np.flatnonzero(g.ann_id == 0)[:1]
    return replace(
        g,
        ann_id=g.ann_id[z],
        img=g.img[z],
        cat=g.cat[z],
        bbox=g.bbox[z],
        area=g.area[z],
        iscrowd=g.iscrowd[z],
        ignore=g.ignore[z],
        num_keypoints=g.num_keypoints[z],
        keypoints=None,
        segmentation=None,
        image_records=None,
        category_records=None,
    )


def _match_bounded(
    g: CocoGroundTruth,
    r: CocoResults,
    params: CocoParams,
    compat: str,
    img_map: np.ndarray,
    lo: int,
    hi: int,
) -> tuple[MatchTable, dict[str, int], list[str]]:
    """Match images ``[lo, hi)`` in pieces of whole images holding about ``SHARD_DETECTIONS`` detections each
    (as one process does), so that a worker's temporaries stay those of one piece; merged exactly."""
    idx = img_map[r.img]
    inside = (idx >= lo) & (idx < hi)
    per_img = np.bincount(idx[inside] - lo, minlength=hi - lo)
    piece = np.cumsum(per_img) // SHARD_DETECTIONS
    if hi <= lo or piece[-1] == 0:
        return match_coco(g, r, params, compat, images=np.arange(lo, hi))
    tables: list[MatchTable] = []
    total: dict[str, int] = {}
    warnings: list[str] = []
    for k in np.unique(piece).tolist():
        t, c, w = match_coco(g, r, params, compat, images=lo + np.flatnonzero(piece == k))
        tables.append(t)
        warnings = warnings or w
        for key, v in c.items():
            total[key] = v if key in ("n_images", "n_categories") else total.get(key, 0) + v
    return merge_coco_tables(tables), total, warnings


def match_coco_shard(
    gt: Any,
    results: Any,
    k: int,
    n_shards: int,
    params: CocoParams,
    compat: str = "pycocotools",
    on_error: str = "raise",
) -> ShardTable:
    """Load, cut to shard ``k`` of ``n_shards`` and match: the task each worker runs.

    Detections of images outside the evaluated selection go to shard 0, so that every detection is counted
    by exactly one shard.
    """
    g = load_coco_gt(
        gt,
        keep_segmentation=params.iou_type == "segm",
        need_keypoints=params.iou_type == "keypoints",
        on_error=on_error,
    )
    img_sel = _selection(g.image_ids, params.img_ids, "image")
    n_img = int(img_sel.shape[0])
    lo, hi = shard_range(n_img, k, n_shards)
    img_map = np.full(g.image_ids.shape[0], -1, dtype=np.int64)
    img_map[img_sel] = np.arange(n_img)

    def keep(r: CocoResults) -> np.ndarray:
        idx = img_map[r.img]
        mine = (idx >= lo) & (idx < hi)
        if k == 0:
            mine |= idx < 0
        return np.flatnonzero(mine)

    sources = list(results) if is_path_list(results) else [results]
    r = load_results_files(sources, g, iou_type=params.iou_type, on_error=on_error, keep=keep)
    table, counts, warnings = _match_bounded(g, r, params, compat, img_map, lo, hi)
    counts = {**counts, "skipped_records": g.skipped + r.skipped}
    return ShardTable(
        table=table,
        counts=counts,
        outside=len(r) - counts["n_dt"],
        border=past_border_counts(g, r) if params.iou_type == "bbox" else (0, 0),
        warnings=[w for w in warnings if not w.endswith(_OUTSIDE)] if k == 0 else [],
        load_warnings=r.warnings if k == 0 else [],
        gt=_light_gt(g) if k == 0 else None,
    )


def merge_shards(parts: Sequence[ShardTable], params: CocoParams, compat: str) -> CocoEvaluation:
    """Merge the shards' tables and accumulate: the :class:`CocoEvaluation` of one process."""
    first = parts[0]
    if first.gt is None:
        raise ValueError("shard 0 must come first")
    table = merge_coco_tables([p.table for p in parts])
    counts = dict(first.counts)
    for key in ("n_gt", "n_dt", "n_dt_evaluated"):
        counts[key] = sum(p.counts[key] for p in parts)
    outside = sum(p.outside for p in parts)
    # the order of one process: loading, matching (the count of left-out detections first), border check
    warnings = list(first.load_warnings) + ([f"{outside}{_OUTSIDE}"] if outside else []) + first.warnings
    if params.iou_type == "bbox":
        warnings += past_border_message(sum(p.border[0] for p in parts), sum(p.border[1] for p in parts))
    return _finish(table, params, compat, first.gt, counts, warnings)


def evaluate_coco_sharded(
    gt: Any,
    results: Any,
    *,
    client: Any = None,
    shards: int | None = None,
    iou_type: str | None = None,
    params: CocoParams | Any | None = None,
    compat: str = "pycocotools",
    on_error: str = "raise",
) -> CocoEvaluation:
    """:func:`~deteval.detection.coco.evaluate_coco` over ``shards`` image shards on a ``dask.distributed``
    ``client`` (without a client, the shards run one after the other in this process: the same code path,
    for tests and for bounded memory). Bit-identical to one process for every shard count."""
    if compat not in COMPAT_MODES:
        raise ConfigError(f"unknown compat {compat!r}: use one of {', '.join(COMPAT_MODES)}")
    p = _resolve_params(params, iou_type)
    n = default_shards(client, shards)
    if client is None:
        parts = [match_coco_shard(gt, results, k, n, p, compat, on_error) for k in range(n)]
    else:
        futures = [
            client.submit(match_coco_shard, gt, results, k, n, p, compat, on_error, pure=False)
            for k in range(n)
        ]
        parts = client.gather(futures)
    return merge_shards(parts, p, compat)
