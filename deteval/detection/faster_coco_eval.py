"""faster-coco-eval's precision, a deliberate copy of its arithmetic where it differs from pycocotools'.

faster-coco-eval's C++ ``accumulate`` (detectron2's ``ComputePrecisionRecallCurve``) computes precision as
``tp / (tp + fp)`` (0 before the first counted detection), pycocotools as ``tp / (tp + fp + np.spacing(1))``.
The two differ only where ``tp + fp == 1``: there pycocotools gives ``1 / (1 + eps)`` =
0.9999999999999998 for a true positive, faster-coco-eval 1.0 (for ``tp + fp ≥ 2`` adding eps, at most half an
ulp of the sum, leaves the sum as it is). Precision is made monotone from the right, so pycocotools' sampled
precision holds that value exactly where the first counted detection of a list is a true positive and the
next one is not; no other ratio ``tp / n`` of counts rounds to it. Everything else (matching, recall, scores,
the sampling) is the same, so faster-coco-eval's precision array is pycocotools' with those cells set to 1.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FIRST_HIT", "faster_coco_eval_precision"]

#: pycocotools' precision of a list whose first counted detection is a true positive: ``1 / (1 + eps)``.
FIRST_HIT = 1.0 / (1.0 + float(np.spacing(1)))


def faster_coco_eval_precision(precision: np.ndarray) -> np.ndarray:
    """faster-coco-eval's ``eval["precision"]`` from pycocotools' (a copy; see the module docstring)."""
    return np.where(precision == FIRST_HIT, 1.0, precision)
