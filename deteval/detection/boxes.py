"""Axis-aligned boxes: formats, areas and intersection over union (checked inputs; the kernel is
:func:`deteval.match.iou.xyxy_iou`).

Inside deteval a box is four float64 numbers ``x1, y1, x2, y2`` (``xyxy``) in the pixel convention of its
source. Other formats are converted with :func:`convert_boxes`.

The Pascal VOC convention counts pixels inclusively: a box from column 1 to column 3 is 3 pixels wide. That
"+1" is the explicit ``plus_one`` parameter of the functions below, never a hidden constant:

* width  = x2 - x1 + one, height = y2 - y1 + one, with one = 1.0 (VOC devkit) or 0.0 (continuous boxes);
* iw = min(x2) - max(x1) + one, ih likewise; the boxes overlap only if iw > 0 and ih > 0;
* IoU = iw*ih / (w_a*h_a + w_b*h_b - iw*ih), evaluated in exactly this order (the devkit's), so that the
  result is bit-identical to VOCevaldet.m.

Boxes that do not overlap get IoU ``no_overlap`` (0.0 by default). The VOC matcher passes ``-inf`` so that,
as in the devkit, a detection overlapping nothing can never reach any threshold, not even 0.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from deteval.errors import ValidationError
from deteval.match.iou import xyxy_iou
from deteval.tables.arrays import as_boxes

BoxFormat = Literal["xyxy", "xywh", "cxcywh"]
BOX_FORMATS: tuple[str, ...] = ("xyxy", "xywh", "cxcywh")


def convert_boxes(boxes: ArrayLike, src: BoxFormat, dst: BoxFormat = "xyxy") -> np.ndarray:
    """Convert between ``xyxy``, ``xywh`` (COCO: corner + size) and ``cxcywh`` (centre + size).

    ``xywh → xyxy`` is x2 = x + w, y2 = y + h (no pixel-inclusive adjustment: that is the IoU's business).
    """
    arr = as_boxes(boxes)
    for fmt in (src, dst):
        if fmt not in BOX_FORMATS:
            raise ValidationError(f"unknown box format {fmt!r}; choose one of {', '.join(BOX_FORMATS)}")
    if src == dst:
        return arr.copy()
    a, b, c, d = arr.T
    if src == "xywh":
        xyxy = np.stack([a, b, a + c, b + d], axis=1)
    elif src == "cxcywh":
        xyxy = np.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=1)
    else:
        xyxy = arr
    x1, y1, x2, y2 = xyxy.T
    if dst == "xyxy":
        return xyxy.copy() if xyxy is arr else xyxy
    if dst == "xywh":
        return np.stack([x1, y1, x2 - x1, y2 - y1], axis=1)
    return np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], axis=1)


def box_area(boxes: ArrayLike, *, plus_one: bool = False) -> np.ndarray:
    """(x2 - x1 + one) * (y2 - y1 + one), one = 1.0 if ``plus_one`` (VOC) else 0.0."""
    b = as_boxes(boxes)
    one = 1.0 if plus_one else 0.0
    return (b[:, 2] - b[:, 0] + one) * (b[:, 3] - b[:, 1] + one)


def box_iou(a: ArrayLike, b: ArrayLike, *, plus_one: bool = False, no_overlap: float = 0.0) -> np.ndarray:
    """IoU matrix (N, M) between boxes ``a`` (N, 4) and ``b`` (M, 4), ``xyxy``.

    IoU = iw*ih / (area_a + area_b - iw*ih) where the boxes overlap (iw > 0 and ih > 0), else ``no_overlap``.
    ``plus_one=True`` is the VOC devkit's pixel-inclusive convention (see the module docstring).

    >>> box_iou([[1, 1, 10, 10]], [[1, 1, 10, 10], [6, 1, 15, 10]], plus_one=True).tolist()
    [[1.0, 0.3333333333333333]]
    """
    aa, bb = as_boxes(a, "a"), as_boxes(b, "b")
    return xyxy_iou(aa[:, None, :], bb[None, :, :], 1.0 if plus_one else 0.0, no_overlap)


def paired_iou(a: ArrayLike, b: ArrayLike, *, plus_one: bool = False, no_overlap: float = 0.0) -> np.ndarray:
    """Element-wise IoU of the pairs (a[i], b[i]); same rule as :func:`box_iou`."""
    aa, bb = as_boxes(a, "a"), as_boxes(b, "b")
    if aa.shape != bb.shape:
        raise ValidationError(f"paired boxes must have equal shapes, got {aa.shape} and {bb.shape}")
    return xyxy_iou(aa, bb, 1.0 if plus_one else 0.0, no_overlap)
