"""DOTA evaluation (:mod:`deteval.detection.dota`) in parts of whole images: here, or on a Dask client."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.detection.dota import finish_dota, prepare_dota
from deteval.results import EvalResult
from deteval.run.voc import match_in_parts
from deteval.tables.voc import VOCDetections, VOCGroundTruth

__all__ = ["evaluate_dota"]


def evaluate_dota(
    gt: VOCGroundTruth,
    dets: VOCDetections,
    det_corners: np.ndarray,
    *,
    iou_threshold: float = 0.5,
    metric: str = "voc07",
    difficult: bool = True,
    classes: Sequence[str] | None = None,
    client: Any = None,
    shards: int | None = None,
) -> EvalResult:
    """DOTA Task1 AP per category and mAP, as the DOTA devkit computes them (:mod:`deteval.detection.dota`).

    Parameters
    ----------
    gt, dets, det_corners
        :func:`deteval.io.dota.load_dota_annotations` and :func:`deteval.io.dota.load_dota_detections`.
    iou_threshold, metric, difficult, classes
        As :func:`deteval.detection.dota.prepare_dota`.
    client, shards
        Parts of whole images on a ``dask.distributed`` client and/or their number (bit-identical).

    Returns
    -------
    EvalResult
        Protocol ``"dota"``: the summary (``map``), a row and a PR curve per category.
    """
    ev = prepare_dota(
        gt,
        dets,
        det_corners,
        iou_threshold=iou_threshold,
        metric=metric,
        difficult=difficult,
        classes=classes,
    )
    return finish_dota(ev, match_in_parts(ev.whole, client, shards))
