"""DOTA evaluation (:mod:`deteval.detection.dota`) in parts of whole images: here, or on a Dask client."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.detection.dota import PROFILE, finish_dota, prepare_dota
from deteval.errors import ConfigError
from deteval.io.dota import dota_coco
from deteval.results import EvalResult
from deteval.run.coco import evaluate_coco
from deteval.run.voc import match_in_parts
from deteval.tables.voc import VOCDetections, VOCGroundTruth

__all__ = ["PROTOCOLS", "evaluate_dota"]

#: ``dota_devkit`` (the DOTA devkit's Task1 AP) or ``coco`` (the COCO-style OBB protocol on the same files,
#: read as hotcoco's ``COCO.from_dota`` reads them)
PROTOCOLS = (PROFILE, "coco")


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
    protocol: str = PROFILE,
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
    protocol
        ``"dota_devkit"`` (default) or ``"coco"``: COCOeval with the rotated IoU
        (:mod:`deteval.detection.coco_obb`), difficult objects as crowd regions, as hotcoco scores
        ``COCO.from_dota``; ``iou_threshold``, ``metric``, ``difficult`` and ``classes`` are the devkit's.

    Returns
    -------
    EvalResult
        Protocol ``"dota"``: the summary (``map``), a row and a PR curve per category.
    """
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unknown DOTA protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    if protocol == "coco":
        if (iou_threshold, metric, difficult, classes) != (0.5, "voc07", True, None):
            raise ConfigError(
                "the coco protocol has COCO's thresholds, AP and crowds: leave the devkit's options"
            )
        doc, results = dota_coco(gt, dets, det_corners)
        return evaluate_coco(doc, results, iou_type="obb", client=client, shards=shards).to_result(
            per_class=True
        )
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
