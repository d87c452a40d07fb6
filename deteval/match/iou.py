"""Box IoU kernels, one home each: every box-overlap formula of deteval is here (or, for a tool whose own
arithmetic is reproduced on purpose, in the module named for that tool: ``detection/ultralytics.py``'s float32
``box_iou`` with ``+ 1e-7`` in the union).

Each kernel fixes the order of its floating-point operations, because that order is what makes the result the
same double as the reference tool's:

* :func:`bb_iou` (and its pair forms :func:`bb_iou_columns`, :func:`bbox_iou_pairs`, :func:`bbox_iou_blocks`):
  pycocotools' C ``bbIou`` (maskApi.c) on ``[x, y, w, h]`` float64 boxes: ``w = min(dx+dw, gx+gw) − max(dx, gx)``
  (0 if ≤ 0), likewise ``h``; ``i = w·h``; ``u = da`` for a crowd ground truth else ``(da + ga) − i`` with
  ``da = dw·dh``, ``ga = gw·gh``; IoU = i / u.
* :func:`xyxy_iou`: ``xyxy`` boxes with an explicit pixel term ``one`` (1.0: the VOC devkit's inclusive pixels,
  VOCevaldet.m's order; 0.0: continuous boxes): ``iw = min(x2) − max(x1) + one``, likewise ``ih``;
  IoU = iw·ih / (w_a·h_a + w_b·h_b − iw·ih) where iw > 0 and ih > 0, else ``no_overlap``.
* :func:`xyxy_ioa`: the same intersection over the second box's area (a crowd or difficult region's rule).
* :func:`iou_ioa_yxyx`: Open Images (TF Object Detection API ``np_box_ops``) on ``[ymin, xmin, ymax, xmax]``:
  IoU and intersection over the detection's area, extents clamped at 0.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "MATRIX_PAIRS",
    "bb_iou",
    "bb_iou_columns",
    "bbox_iou_blocks",
    "bbox_iou_pairs",
    "iou_ioa_yxyx",
    "xyxy_ioa",
    "xyxy_iou",
]


def bbox_iou_pairs(
    dbox: np.ndarray, gbox: np.ndarray, gcrowd: np.ndarray, di: np.ndarray, gi: np.ndarray
) -> np.ndarray:
    """IoU of detection ``dbox[di[p]]`` with ground truth ``gbox[gi[p]]`` for every pair p (xywh boxes).

    A crowd ground truth divides the intersection by the detection's area instead of the union.
    """
    # rows gathered by np.take (faster than fancy indexing dbox[di]), then as four contiguous columns each
    # (:func:`bb_iou_columns`, fewer temporaries than bb_iou on the gathered rows)
    d = np.take(dbox, di, axis=0).T.copy()
    g = np.take(gbox, gi, axis=0).T.copy()
    return bb_iou_columns(d, g, gcrowd[gi])


def bb_iou_columns(d: np.ndarray, g: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """:func:`bb_iou` of pairs given as (4, P) columns, the same operations on the same doubles (so the same
    results), written into buffers of their own (``d`` and ``g`` are overwritten): a few P-long temporaries
    instead of a dozen."""
    dx, dy, dw, dh = d
    gx, gy, gw, gh = g
    w = dw + dx
    t = gw + gx
    np.minimum(w, t, out=w)
    np.maximum(dx, gx, out=t)
    w -= t
    h = dh + dy
    np.add(gh, gy, out=t)
    np.minimum(h, t, out=h)
    np.maximum(dy, gy, out=t)
    h -= t
    inter = w * h
    union = np.multiply(gw, gh, out=t)
    da = np.multiply(dw, dh, out=dx)
    union += da  # (da + gw * gh: a sum of two doubles is the same either way round)
    union -= inter
    np.copyto(union, da, where=crowd)
    ok = w > 0
    ok &= h > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(inter, union, out=inter)
    np.copyto(inter, 0.0, where=~ok)
    return inter


def bb_iou(d: np.ndarray, g: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """``bbIou`` element-wise on ``d[..., k]`` and ``g[..., k]`` (pairs, or rows × columns by broadcasting)."""
    dx, dy, dw, dh = d[..., 0], d[..., 1], d[..., 2], d[..., 3]
    gx, gy, gw, gh = g[..., 0], g[..., 1], g[..., 2], g[..., 3]
    w = np.minimum(dw + dx, gw + gx) - np.maximum(dx, gx)
    h = np.minimum(dh + dy, gh + gy) - np.maximum(dy, gy)
    inter = w * h
    da = dw * dh
    union = np.where(crowd, da, (da + (gw * gh)) - inter)
    ok = (w > 0) & (h > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / union
    return np.where(ok, iou, 0.0)


#: Blocks of at least this many pairs are computed as a detections × ground truths matrix (broadcast).
MATRIX_PAIRS = 4096


def bbox_iou_blocks(
    dbox: np.ndarray,
    gbox: np.ndarray,
    gcrowd: np.ndarray,
    di: np.ndarray,
    gi: np.ndarray,
    block_start: np.ndarray,
    block_nd: np.ndarray,
    block_ng: np.ndarray,
) -> np.ndarray:
    """:func:`bbox_iou_pairs` for pairs that come in blocks of nd × ng (detection-major): a large block as
    one broadcast matrix (no gathered copy of the boxes per pair; the same operations, so the same doubles),
    the small ones together as pairs."""
    npairs = block_nd * block_ng
    big = npairs >= MATRIX_PAIRS
    if not big.any():
        return bbox_iou_pairs(dbox, gbox, gcrowd, di, gi)
    out = np.empty(di.shape[0], dtype=np.float64)
    small = np.repeat(~big, npairs)
    if small.any():
        out[small] = bbox_iou_pairs(dbox, gbox, gcrowd, di[small], gi[small])
    for s, nd, ng in zip(block_start[big].tolist(), block_nd[big].tolist(), block_ng[big].tolist()):
        cols = gi[s : s + ng]
        rows = np.take(dbox, di[s : s + nd * ng : ng], axis=0)
        m = bb_iou(rows[:, None, :], np.take(gbox, cols, axis=0)[None, :, :], gcrowd[cols][None, :])
        out[s : s + nd * ng] = m.reshape(-1)
    return out


def xyxy_iou(a: np.ndarray, b: np.ndarray, one: float = 0.0, no_overlap: float = 0.0) -> np.ndarray:
    """IoU of ``xyxy`` boxes ``a[..., :]`` and ``b[..., :]`` (they broadcast against each other), in VOCevaldet.m's
    order of operations: iw·ih / ((w_a·h_a + w_b·h_b) − iw·ih) with ``one`` added to every extent (1.0 for the
    VOC devkit's inclusive pixels); ``no_overlap`` where iw ≤ 0 or ih ≤ 0."""
    iw = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + one
    ih = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + one
    inter = iw * ih
    union = (
        (a[..., 2] - a[..., 0] + one) * (a[..., 3] - a[..., 1] + one)
        + (b[..., 2] - b[..., 0] + one) * (b[..., 3] - b[..., 1] + one)
        - inter
    )
    overlap = (iw > 0) & (ih > 0)
    out = np.full(overlap.shape, no_overlap, dtype=np.float64)
    np.divide(inter, union, out=out, where=overlap)
    return out


def xyxy_ioa(a: np.ndarray, b: np.ndarray, one: float = 0.0) -> np.ndarray:
    """Intersection of ``xyxy`` boxes ``a`` and ``b`` (broadcasting) over the area of ``b``: iw·ih / (w_b·h_b),
    ``one`` added to every extent as in :func:`xyxy_iou`; 0 where the boxes do not overlap (iw ≤ 0 or ih ≤ 0)."""
    iw = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + one
    ih = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + one
    area = (b[..., 2] - b[..., 0] + one) * (b[..., 3] - b[..., 1] + one)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((iw > 0) & (ih > 0), (iw * ih) / area, 0.0)


def iou_ioa_yxyx(d: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """IoU and intersection over the detection's area of pairs ``(d[i], g[i])`` of ``[ymin, xmin, ymax, xmax]``
    boxes, in ``np_box_ops``' order of operations (the Open Images challenge's evaluation code): extents
    clamped at 0, IoU = i / ((area_d + area_g) − i), IoA = i / area_d (NaN or inf for an empty box, as there)."""
    h = np.maximum(0.0, np.minimum(d[:, 2], g[:, 2]) - np.maximum(d[:, 0], g[:, 0]))
    w = np.maximum(0.0, np.minimum(d[:, 3], g[:, 3]) - np.maximum(d[:, 1], g[:, 1]))
    inter = h * w
    da = (d[:, 2] - d[:, 0]) * (d[:, 3] - d[:, 1])
    ga = (g[:, 2] - g[:, 0]) * (g[:, 3] - g[:, 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / ((da + ga) - inter), inter / da
