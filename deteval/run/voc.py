"""VOC matching with the images sharded over ``dask.distributed`` workers, bit-identical to one process.

The devkit ranks a class's detections by descending score, ties in file order (the py-faster-rcnn profile:
numpy's unstable sort of the whole class). The driver ranks once, on the whole table, exactly as one
process does; each shard (a run of image indices) is then matched alone, with those global ranks deciding
which of several claimants takes a box, and only (row, outcome) pairs come back
(:class:`~deteval.detection.match_table.VocMatchTable`), merged in row order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deteval.core.ranking import TiePolicy
from deteval.detection.match_table import VocMatchTable, merge_voc_tables
from deteval.detection.voc import match_inputs, match_voc, rank_positions
from deteval.run.parts import map_parts
from deteval.run.shards import default_shards, shard_range

__all__ = ["match_voc_shard", "match_voc_sharded"]


def match_voc_shard(
    rows: np.ndarray,
    det_image: np.ndarray,
    det_boxes: np.ndarray,
    det_label: np.ndarray,
    rank: np.ndarray,
    gt_image: np.ndarray,
    gt_boxes: np.ndarray,
    gt_difficult: np.ndarray,
    gt_label: np.ndarray,
    options: dict[str, Any],
) -> VocMatchTable:
    """The task a worker runs: :func:`~deteval.detection.voc.match_voc` on one shard's images, ranked by
    the driver's global ``rank``; returns the outcomes of ``rows``."""
    outcome = match_voc(
        det_image,
        det_boxes,
        np.zeros(det_image.shape[0]),  # only ``rank`` orders claimants here; scores stay on the driver
        gt_image,
        gt_boxes,
        gt_difficult,
        det_label=det_label,
        gt_label=gt_label,
        rank=rank,
        **options,
    )
    return VocMatchTable(row=rows, outcome=outcome)


def match_voc_sharded(
    det_image: ArrayLike,
    det_boxes: ArrayLike,
    det_scores: ArrayLike,
    gt_image: ArrayLike,
    gt_boxes: ArrayLike,
    gt_difficult: ArrayLike | None = None,
    *,
    det_label: ArrayLike | None = None,
    gt_label: ArrayLike | None = None,
    iou_threshold: float = 0.5,
    plus_one: bool = True,
    strict: bool = False,
    ties: TiePolicy = "stable",
    client: Any = None,
    shards: int | None = None,
) -> np.ndarray:
    """:func:`~deteval.detection.voc.match_voc` over image shards (on ``client`` if given, else one after
    the other here): the same outcomes, in input order. Shard k holds the image indices
    ``[k·I // n, (k+1)·I // n)`` with I = the largest index + 1. The inputs are validated as the one-process
    path validates them (:func:`~deteval.detection.voc.match_inputs`: the same errors) before any shard."""
    db, sc, di, dl, gb, gi, gl, gd = match_inputs(
        det_image, det_boxes, det_scores, gt_image, gt_boxes, gt_difficult, det_label, gt_label
    )
    rank = rank_positions(sc, dl, ties)  # once, globally: an unstable sort depends on the whole class
    options = {"iou_threshold": iou_threshold, "plus_one": plus_one, "strict": strict, "ties": ties}
    n_img = int(max(di.max(initial=-1), gi.max(initial=-1))) + 1
    n = default_shards(client, shards)
    tasks = []
    for k in range(n):
        lo, hi = shard_range(n_img, k, n)
        rows = np.flatnonzero((di >= lo) & (di < hi))
        g = np.flatnonzero((gi >= lo) & (gi < hi))
        tasks.append((rows, di[rows], db[rows], dl[rows], rank[rows], gi[g], gb[g], gd[g], gl[g], options))
    tables = map_parts(match_voc_shard, tasks, client)
    return merge_voc_tables(tables, di.shape[0])
