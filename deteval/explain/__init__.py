"""``deteval explain``: why two evaluators give two numbers on the same data, one rule at a time.

Each walk goes from profile A to profile B through a fixed order of rule dimensions, re-scoring the same data
with one more rule of B at every step, so that the steps' deltas add up to B − A
(:class:`Explanation`):

* :mod:`deteval.explain.yolo`: the YOLO profiles (Ultralytics versions, ``coco``, ``supervision``) on a YOLO
  dataset (:func:`explain`, re-exported here with the module's other public names).
* :mod:`deteval.explain.voc`: the Pascal VOC profiles ``voc07``, ``voc2012``, ``py_faster_rcnn``
  (:func:`~deteval.explain.voc.explain_voc`).
* :mod:`deteval.explain.cross`: pycocotools' ``coco`` and the VOC profiles on the same data
  (:func:`~deteval.explain.cross.explain_cross`).
* :mod:`deteval.explain.obb`: the oriented-box profiles of a YOLO-OBB split (``coco``, ``dota_devkit``, the
  Ultralytics eras; :func:`~deteval.explain.obb.explain_obb`, re-exported here).
"""

from __future__ import annotations

from deteval.explain.obb import explain_obb
from deteval.explain.yolo import (
    ORDER,
    PROFILE_RULES,
    Explanation,
    Rules,
    coco_precision_at_levels,
    explain,
    score,
)

__all__ = [
    "ORDER",
    "PROFILE_RULES",
    "Explanation",
    "Rules",
    "coco_precision_at_levels",
    "explain",
    "explain_obb",
    "score",
]
