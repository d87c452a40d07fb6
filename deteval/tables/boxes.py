"""A columnar table of boxes: image index, class index, pixel ``xyxy`` (float64) and, for detections, a score.

The YOLO loaders return it; the Ultralytics, supervision and COCO profiles read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class BoxTable:
    """N boxes: ``img`` (int64 image index), ``cls`` (int64 class id), ``xyxy`` (N×4 float64 pixels),
    ``conf`` (N float64; zeros for ground truth), ``polygons`` (one flat pixel array per box, or None) and
    ``masks`` (one COCO ``segmentation`` per box as a predictions JSON gave it, validated, or None)."""

    img: np.ndarray
    cls: np.ndarray
    xyxy: np.ndarray
    conf: np.ndarray
    polygons: list[np.ndarray | None] | None = None
    masks: list[Any] | None = None

    def __len__(self) -> int:
        return int(self.img.shape[0])

    @classmethod
    def empty(cls) -> BoxTable:
        """A table of zero boxes."""
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z.copy(), np.zeros((0, 4)), np.zeros(0))

    @classmethod
    def from_arrays(
        cls, img: np.ndarray, classes: np.ndarray, xyxy: np.ndarray, conf: np.ndarray | None = None
    ) -> BoxTable:
        """Build a table from array-likes (conf defaults to zeros)."""
        xyxy = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
        n = xyxy.shape[0]
        c = np.zeros(n) if conf is None else np.asarray(conf, dtype=np.float64).reshape(-1)
        return cls(
            np.asarray(img, dtype=np.int64).reshape(-1),
            np.asarray(classes, dtype=np.int64).reshape(-1),
            xyxy,
            c,
        )

    def take(self, rows: np.ndarray) -> BoxTable:
        """The boxes at ``rows`` (indices or a boolean mask), in that order, with their polygons and masks."""
        idx = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows, dtype=np.int64)
        return BoxTable(
            self.img[idx],
            self.cls[idx],
            self.xyxy[idx],
            self.conf[idx],
            None if self.polygons is None else [self.polygons[i] for i in idx.tolist()],
            None if self.masks is None else [self.masks[i] for i in idx.tolist()],
        )
