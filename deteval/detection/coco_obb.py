"""The COCO-style protocol for oriented boxes (``iou_type="obb"``): COCO's evaluation with the rotated IoU.

Everything is pycocotools' COCOeval (:mod:`deteval.detection.coco`: the greedy matching, crowds, area ranges,
maxDets, the 101-point accumulation, the twelve numbers) but the similarity, which is the rotated-box IoU of
:mod:`deteval.match.rotated` (polygon intersection over union; intersection over the detection's area for a
crowd ground truth). This is hotcoco's ``COCOeval(gt, dt, "obb")`` (1.3), the one peer that evaluates oriented
boxes the COCO way (vernier 0.5 has no OBB mode):

=============================  ==========================================================================
input                          ``"obb": [cx, cy, w, h, angle]`` on every annotation and result, radians
                               (:mod:`deteval.io.coco_obb`); DOTA and YOLO-OBB quadrilaterals as they are
ground-truth area (ranges)     the annotation's ``area`` (``w·h`` where it has none)
detection area (ranges)        ``w·h`` of its box (pycocotools' loadRes for boxes; hotcoco's for obb)
IoU union                      ``w·h`` of both boxes (a quadrilateral's shoelace area)
parameters                     bbox's: ten thresholds 0.5:0.95, 101 recall levels, maxDets 1/10/100,
                               areas all/small/medium/large
=============================  ==========================================================================

:func:`obb_measure` is the protocol's one addition to the COCO matcher; the rest of the steps (parts, merge,
accumulate, summary) are the COCO package's, run by :func:`deteval.run.coco.evaluate_coco`.
"""

from __future__ import annotations

import numpy as np

from deteval.errors import InputFormatError
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.match.coco import IouFn
from deteval.match.rotated import quad_iou_pairs

__all__ = ["obb_measure"]


def obb_measure(
    gt: CocoGroundTruth,
    res: CocoResults,
    gsel: slice | np.ndarray,
    dsel: slice | np.ndarray,
    crowd: np.ndarray,
) -> IouFn:
    """The rotated IoU of (detection, ground truth) pairs of the kept rows (``gsel``/``dsel``), as the COCO
    matcher asks for them.

    Parameters
    ----------
    gt, res
        Tables with their ``obb`` quadrilateral columns (:mod:`deteval.io.coco_obb`).
    gsel, dsel
        The kept rows (a slice where every row is kept).
    crowd
        Per kept ground truth: a crowd region.

    Returns
    -------
    IouFn
        ``f(di, gi, block_start, block_nd, block_ng)`` → one IoU per pair.
    """
    if gt.obb is None or res.obb is None:
        raise InputFormatError(
            "iou_type 'obb' needs oriented boxes on both sides: an 'obb' [cx, cy, w, h, angle] per annotation "
            "and per result (deteval.io.coco_obb)",
            file=gt.source if gt.obb is None else res.source,
        )
    gq = gt.obb[gsel]
    dq = res.obb[dsel]

    def rotated_iou(
        di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
    ) -> np.ndarray:
        return quad_iou_pairs(dq, gq, crowd, di, gi)

    return rotated_iou
