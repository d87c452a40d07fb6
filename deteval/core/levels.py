"""Every protocol's recall levels and IoU thresholds: the one place they are computed.

Each array is built with the expression its reference tool uses, so that it holds the same doubles (a level one
ulp away decides whether a recall reaches it). Read them, never modify them: they are shared.

==============================  ==========================================================================
name                            reference and expression
==============================  ==========================================================================
``VOC_DEVKIT_LEVELS``           VOCevaldet.m's loop ``for t=0:0.1:1``: t = 0 + k·0.1 (MATLAB's loop variable)
``PY_FASTER_RCNN_LEVELS``       py-faster-rcnn ``voc_eval.py``: ``np.arange(0., 1.1, 0.1)`` (the same doubles)
``VOC07_LEVELS``                the nearest doubles to 0.0, 0.1, …, 1.0 (``i / 10``), not the devkit's
``COCO_RECALL_LEVELS``          pycocotools ``recThrs``: ``np.linspace(.0, 1.00, round((1.00 - .0) / .01) + 1)``
``COCO_IOU_THRESHOLDS``         pycocotools ``iouThrs``: ``np.linspace(.5, .95, round((.95 - .5) / .05) + 1)``
``ULTRALYTICS_IOU_THRESHOLDS``  ``torch.linspace(0.5, 0.95, 10)`` in float32 (0.550000011920929, …)
``ULTRALYTICS_RECALL_POINTS``   Ultralytics ``compute_ap``: ``np.linspace(0, 1, 101)``, the trapezoid's x
``ULTRALYTICS_CONFIDENCES``     Ultralytics ``ap_per_class``: ``np.linspace(0, 1, 1000)``, the P/R/F1 curves' x
``TIDECV_RECALL_LEVELS``        tidecv ``APDataObject.get_ap``: ``[x / 100 for x in range(101)]``
==============================  ==========================================================================
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "COCO_IOU_THRESHOLDS",
    "COCO_RECALL_LEVELS",
    "PY_FASTER_RCNN_LEVELS",
    "TIDECV_RECALL_LEVELS",
    "ULTRALYTICS_CONFIDENCES",
    "ULTRALYTICS_IOU_THRESHOLDS",
    "ULTRALYTICS_RECALL_POINTS",
    "VOC07_LEVELS",
    "VOC_DEVKIT_LEVELS",
]

#: The VOC devkit's recall levels: VOCevaldet.m loops ``for t=0:0.1:1``, and a MATLAB (and Octave) for-loop
#: variable is ``a + k*d``, so t = k*0.1: 0.30000000000000004, 0.6000000000000001 and 0.7000000000000001 at
#: k = 3, 6, 7 (a recall of exactly 0.3, 0.6 or 0.7 does not reach them). The default of ``voc07``.
VOC_DEVKIT_LEVELS = np.array([0.0 + k * 0.1 for k in range(11)], dtype=np.float64)
#: py-faster-rcnn's ``np.arange(0.0, 1.1, 0.1)``: the same eleven doubles as the devkit's loop.
PY_FASTER_RCNN_LEVELS = np.arange(0.0, 1.1, 0.1)
#: 0.0, 0.1, ..., 1.0 as the nearest doubles to the decimals (i / 10 is correctly rounded), for tools that
#: sample the decimals; not the devkit's levels.
VOC07_LEVELS = np.array([i / 10 for i in range(11)], dtype=np.float64)
#: pycocotools' ``recThrs``.
COCO_RECALL_LEVELS = np.linspace(0.0, 1.0, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)
#: pycocotools' ``iouThrs`` (``np.arange`` would put some of them one ulp off).
COCO_IOU_THRESHOLDS = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True)
#: Ultralytics' ``iouv = torch.linspace(0.5, 0.95, 10)`` (float32): numpy's float64 linspace rounded to float32
#: gives the same ten floats.
ULTRALYTICS_IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10).astype(np.float32)
#: Ultralytics' ``compute_ap`` interpolates the precision envelope at these 101 recalls and integrates with
#: ``np.trapezoid`` (the same doubles as ``COCO_RECALL_LEVELS``; a different use).
ULTRALYTICS_RECALL_POINTS = np.linspace(0, 1, 101)
#: Ultralytics' ``ap_per_class``: the confidence grid of its P, R and F1 curves.
ULTRALYTICS_CONFIDENCES = np.linspace(0, 1, 1000)
#: tidecv's ``APDataObject.get_ap`` samples the envelope at ``x / 100`` for x in 0..100 (correctly rounded
#: decimals; ten of them, 0.35 among them, differ from ``COCO_RECALL_LEVELS`` in the last bit).
TIDECV_RECALL_LEVELS = np.array([x / 100 for x in range(101)], dtype=np.float64)
