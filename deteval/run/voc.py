"""Running the Pascal VOC protocol: its steps chained in this process, or its parts on Dask workers.

:mod:`deteval.detection.voc` says what is computed (prepare → parts → match_part → merge → finish); this
module decides where the parts run. The ranking is made once, on the whole table, as one process makes it
(the py-faster-rcnn profile's unstable sort depends on the whole class); each part (a run of whole images)
is then matched alone with those global ranks deciding which of several claimants takes a box, and only
(row, outcome) pairs come back (:class:`~deteval.detection.voc.VocMatchTable`), merged in row order.
Every strategy gives the one-process numbers bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deteval.detection import voc
from deteval.detection.voc import VOCDetections, VOCGroundTruth, VOCParams
from deteval.results import EvalResult
from deteval.run.parts import map_parts
from deteval.run.shards import default_shards, shard_range

__all__ = ["evaluate_voc", "evaluate_voc_at", "match_in_parts", "match_voc_sharded"]


def evaluate_voc(
    gt: VOCGroundTruth,
    dets: VOCDetections,
    *,
    iou_threshold: float = 0.5,
    metric: str = "voc2010",
    profile: str = "voc_devkit",
    plus_one: bool = True,
    classes: Sequence[str] | None = None,
    recall_levels: ArrayLike | None = None,
    params: VOCParams | None = None,
    client: Any = None,
    shards: int | None = None,
) -> EvalResult:
    """Pascal VOC AP per class and mAP, as the devkit (or ``profile="py_faster_rcnn"``) computes them.

    Parameters
    ----------
    gt, dets
        The ground truth and the detections (:mod:`deteval.tables.voc`; the loaders of
        :mod:`deteval.io.voc` return them). Detections refer to images by name: ``dets.images`` is mapped
        onto ``gt.images`` and an unknown one raises.
    iou_threshold, plus_one
        The match threshold (0.5) and the devkit's +1 pixel-inclusive IoU.
    metric
        ``"voc07"`` (11-point, VOCevaldet.m with ``VOCopts.year == 2007``) or ``"voc2010"`` (all-point,
        VOCap.m).
    profile
        ``"voc_devkit"`` or ``"py_faster_rcnn"`` (that port's strict ``>`` and unstable sort).
    classes
        The evaluated classes, in that order (default: every class named by ``gt.classes``, then those only
        ``dets.classes`` names; the loaders sort names, so the 20 VOC classes come in the devkit's order).
    recall_levels
        The 11-point metric's recall levels (default: the profile's).
    params
        The protocol as one :class:`~deteval.detection.voc.VOCParams` (replaces the five keywords above).
    client, shards
        A ``dask.distributed`` Client and/or a number of image parts: the matching runs on parts of whole
        images, each worker sent only its images' boxes and returning only their outcomes. The result is
        bit-identical to one process.

    Returns
    -------
    EvalResult
        Protocol ``"voc"``, with a PR curve per class in ``curves``. mAP is the mean AP over the classes with
        npos > 0; classes without non-difficult ground truth are reported with ``ap = None`` and left out of
        the mean (with a warning).
    """
    if params is None:
        params = VOCParams(
            iou_threshold=float(iou_threshold),
            metric=metric,
            profile=profile,
            plus_one=bool(plus_one),
            recall_levels=None if recall_levels is None else tuple(np.asarray(recall_levels, float).tolist()),
        )
    evaluation = voc.prepare(gt, dets, params, classes)
    return voc.finish(evaluation, match_in_parts(evaluation.whole, client, shards))


def evaluate_voc_at(
    gt: VOCGroundTruth,
    dets: VOCDetections,
    thresholds: Sequence[float],
    *,
    metric: str = "voc2010",
    profile: str = "voc_devkit",
    plus_one: bool = True,
) -> list[EvalResult]:
    """:func:`evaluate_voc` at each of several IoU thresholds, in one process: the tables are prepared and
    ranked once and each detection's best box found once (:func:`~deteval.detection.voc.match_part_at`);
    only the claims and the AP are made per threshold.

    Parameters
    ----------
    gt, dets, metric, profile, plus_one
        As for :func:`evaluate_voc`.
    thresholds
        The IoU thresholds.

    Returns
    -------
    list[EvalResult]
        One result per threshold, each equal to ``evaluate_voc(gt, dets, iou_threshold=t, metric=metric,
        profile=profile, plus_one=plus_one)``.
    """
    ts = [float(t) for t in thresholds]
    if not ts:
        return []
    evaluation = voc.prepare(gt, dets, VOCParams(iou_threshold=ts[0], metric=metric, profile=profile,
                                                 plus_one=bool(plus_one)))  # fmt: skip
    whole = evaluation.whole
    out = []
    for t, table in zip(ts, voc.match_part_at(whole, ts)):
        at_t = replace(evaluation, params=replace(evaluation.params, iou_threshold=t),
                       whole=replace(whole, iou_threshold=t))  # fmt: skip
        out.append(voc.finish(at_t, voc.merge([table], len(whole))))
    return out


def match_in_parts(whole: voc.VOCMatchPart, client: Any = None, shards: int | None = None) -> np.ndarray:
    """The outcome of every detection of ``whole``, in row order, matched in parts of whole images.

    ``shards`` parts if given, else one per worker thread of ``client``, else one; part k holds the image
    indices ``[k·I // n, (k+1)·I // n)`` with I = the largest index + 1. The parts run on ``client`` if
    given, else one after the other here (:func:`~deteval.run.parts.map_parts`).
    """
    n = default_shards(client, shards)
    ranges = [shard_range(whole.n_images, k, n) for k in range(n)]
    tables = map_parts(voc.match_part, [(part,) for part in voc.parts(whole, ranges)], client)
    return voc.merge(tables, len(whole))


def match_voc_sharded(
    *columns: Any, client: Any = None, shards: int | None = None, **rule: Any
) -> np.ndarray:
    """:func:`~deteval.detection.voc.match_voc` over parts of whole images (on ``client`` if given, else one
    after the other here; :func:`match_in_parts`): the same outcomes, in input order.

    ``columns`` and ``rule`` are :func:`~deteval.detection.voc.whole_part`'s (the columns and keywords of
    ``match_voc`` but ``pair_chunk``), validated as the one-process path validates them (the same errors)
    before any part."""
    return match_in_parts(voc.whole_part(*columns, **rule), client, shards)
