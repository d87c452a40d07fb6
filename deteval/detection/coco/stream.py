"""Incremental COCO bbox evaluation for a training loop (:class:`CocoStream`): each batch matched at once
into a compact match table, the tables merged and accumulated at the end."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval.detection.coco.arrays import arrays_to_tables
from deteval.detection.coco.evaluation import CocoEvaluation, finish_evaluation
from deteval.detection.coco.match import match_coco
from deteval.detection.coco.params import check_compat, resolve_params
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError, ValidationError
from deteval.io.coco import CocoGroundTruth
from deteval.match.coco import MatchTable, merge_tables

__all__ = ["CocoStream"]


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
        check_compat(compat)
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
        g, r = arrays_to_tables(preds, targets, self.box_format, self.class_names, self.n_images)
        table, counts, _ = match_coco(g, r, self.params, self.compat)
        table.img = table.img + self.n_images
        self._parts.append((table, g.cat_ids, counts))
        if image_ids is not None:
            self._image_ids.extend(ids)
        self.n_images += len(preds)

    def compute(self) -> CocoEvaluation:
        """Merge the batches and accumulate: the full :class:`CocoEvaluation`."""
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
