"""Match tables of image shards, and their exact merge.

A match table is what matching leaves for accumulation, and nothing more: per kept detection its ranking
keys and outcome flags, per category the number of positives. Matching never looks across images, so the
images can be split into disjoint shards (Dask workers, training ranks, batches), each matched on its own.

* COCO (:class:`~deteval.detection.coco_match.MatchTable`): pycocotools accumulates a category's detections
  in ascending image-id order, then sorts stably by score, so ties between images are broken by image order.
  The table carries the global image index; :func:`merge_coco_tables` concatenates the shards and restores
  the single-process layout (category, image, rank), so the merged table equals, array for array, the one a
  single process builds, and :func:`~deteval.detection.coco_accumulate.accumulate` gives the same bits.
* VOC (:class:`VocMatchTable`): the devkit ranks a class's detections by score with ties in *file* order,
  so the table carries each detection's global row; :func:`merge_voc_tables` puts the outcomes back in row
  order and refuses a row given twice or missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deteval.detection.coco_match import MatchTable, merge_tables
from deteval.errors import ValidationError

__all__ = ["MatchTable", "VocMatchTable", "merge_coco_tables", "merge_voc_tables"]


def merge_coco_tables(tables: Sequence[MatchTable]) -> MatchTable:
    """Merge COCO match tables of disjoint image shards (same parameters and categories).

    The rows are reordered by (category, image, rank) with one stable sort: the layout of a single
    process's table, whatever order the shards arrive in. ``npig`` (positives per category × area) adds up.
    """
    if not tables:
        raise ValueError("no tables to merge")
    if len({t.n_cats for t in tables}) != 1 or len({t.tp.shape[:2] for t in tables}) != 1:
        raise ValidationError("match tables of different categories or parameters cannot be merged")
    merged = merge_tables(tables)
    order = np.lexsort((merged.rank, merged.img, merged.cat))
    if (order[1:] < order[:-1]).any():
        merged = MatchTable(
            cat=merged.cat[order],
            img=merged.img[order],
            score=merged.score[order],
            rank=merged.rank[order],
            tp=merged.tp[:, :, order],
            ig=merged.ig[:, :, order],
            npig=merged.npig,
            n_cats=merged.n_cats,
        )
    return merged


@dataclass
class VocMatchTable:
    """VOC matching outcome of one shard: ``row`` (the detection's row in the full detection table) and
    ``outcome`` (int8: 1 true positive, 0 false positive, −1 ignored on a difficult box)."""

    row: np.ndarray
    outcome: np.ndarray

    def __len__(self) -> int:
        return int(self.row.shape[0])


def merge_voc_tables(tables: Sequence[VocMatchTable], n_rows: int) -> np.ndarray:
    """The outcome of every one of ``n_rows`` detections, in row order, from the shards' tables.

    Every row must come from exactly one shard (the shards hold disjoint images and cover all of them).
    """
    outcome = np.zeros(n_rows, dtype=np.int8)
    seen = np.zeros(n_rows, dtype=np.int64)
    for t in tables:
        row = np.asarray(t.row, dtype=np.int64)
        if row.size and (row.min() < 0 or row.max() >= n_rows):
            raise ValidationError(f"a match table names detection row {int(row.max())} of {n_rows}")
        outcome[row] = t.outcome
        np.add.at(seen, row, 1)
    if n_rows and (seen != 1).any():
        i = int(np.flatnonzero(seen != 1)[0])
        raise ValidationError(f"detection row {i} is in {int(seen[i])} match tables, not exactly one")
    return outcome
