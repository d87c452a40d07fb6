"""Rotated-box IoU: the one home of the oriented-box (OBB) overlap of the COCO-style OBB protocol.

A box is either ``(cx, cy, w, h, angle)`` (angle in radians, counter-clockwise positive, as hotcoco's
``obb`` field) or a quadrilateral of four corner points ``x1 y1 … x4 y4`` (DOTA, YOLO-OBB rows). Either form
becomes a row of nine numbers, the eight corner coordinates and the box's area, by
:func:`~deteval.tables.quads.obb_quads` or :func:`~deteval.tables.quads.polygon_quads`; :func:`quad_iou_pairs`
takes such rows.

The arithmetic is hotcoco's (``geometry.rs``, 1.3), operation for operation, so that the IoU is the same
double:

* corners of ``(cx, cy, w, h, a)``: with ``dx_w = (w/2)·cos a``, ``dy_w = (w/2)·sin a``, ``dx_h = (h/2)·sin a``,
  ``dy_h = (h/2)·cos a``: ``(cx − dx_w + dx_h, cy − dy_w − dy_h)``, ``(cx + dx_w + dx_h, cy + dy_w − dy_h)``,
  ``(cx + dx_w − dx_h, cy + dy_w + dy_h)``, ``(cx − dx_w − dx_h, cy − dy_w + dy_h)``; its area is ``w·h``;
* the intersection: Sutherland–Hodgman clipping of the detection's quadrilateral by each edge of the ground
  truth's in turn (a point is inside an edge ``s → e`` when ``(e_x − s_x)(p_y − s_y) − (e_y − s_y)(p_x − s_x) ≥ 0``;
  a crossing point ``p1 + t·(p2 − p1)``, ``t = ((s_x − p1_x)·d2_y − (s_y − p1_y)·d2_x) / denom``, is left out
  where ``|denom| < 1e−12``), its area by the shoelace sum in vertex order, halved, absolute;
* IoU = ``i / (a_d + a_g − i)``; ``i / a_d`` for a crowd ground truth; 0 where either area is ≤ 0, where
  ``i ≤ 0`` or where the union is ≤ 0. Pairs whose axis-aligned extents do not meet are not clipped (IoU 0:
  their polygons cannot intersect; hotcoco clips them too, to the same 0 but for a rounding-level area that
  no threshold above 0 can tell from 0).

A quadrilateral given by its corners gets its shoelace area and is put counter-clockwise (the inside test
assumes it); the clipping is exact for convex quadrilaterals (rotated rectangles), which is what these formats
hold. ``tests/test_rotated_iou.py`` checks the kernel against shapely's exact geometry.
"""

from __future__ import annotations

import numpy as np

from deteval.tables.quads import polygon_area

__all__ = ["DENOM_EPS", "QUAD_PAIR_CHUNK", "quad_iou_matrix", "quad_iou_pairs"]

#: hotcoco's ``line_intersection``: parallel (or nearly) segments give no crossing point.
DENOM_EPS = 1e-12

#: Pairs clipped at once (each holds a few dozen doubles of polygon in flight).
QUAD_PAIR_CHUNK = 32_768


def _clip(
    x: np.ndarray,
    y: np.ndarray,
    n: np.ndarray,
    sx: np.ndarray,
    sy: np.ndarray,
    ex: np.ndarray,
    ey: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One Sutherland–Hodgman step: the polygons ``(x, y)`` (first ``n`` vertices of each row) clipped by the
    half-plane left of the edge ``s → e``; each input vertex j emits, in this order, the crossing of the edge
    ``j−1 → j`` (when it crosses) and vertex j (when inside), as hotcoco's loop pushes them."""
    p, m = x.shape
    rows = np.arange(p)
    last = np.maximum(n - 1, 0)
    px, py = np.empty_like(x), np.empty_like(y)  # vertex j−1 (the last live vertex for j = 0)
    px[:, 1:], py[:, 1:] = x[:, :-1], y[:, :-1]
    px[:, 0], py[:, 0] = x[rows, last], y[rows, last]
    dex, dey = (ex - sx)[:, None], (ey - sy)[:, None]
    s0x, s0y = sx[:, None], sy[:, None]
    cur_in = (dex * (y - s0y)) - (dey * (x - s0x)) >= 0.0
    prev_in = np.empty_like(cur_in)  # (vertex j−1's own test: the same operations on the same point)
    prev_in[:, 1:], prev_in[:, 0] = cur_in[:, :-1], cur_in[rows, last]
    live = np.arange(m)[None, :] < n[:, None]
    d1x, d1y = x - px, y - py
    denom = (d1x * dey) - (d1y * dex)
    crossing = live & (cur_in != prev_in) & (np.abs(denom) >= DENOM_EPS)
    with np.errstate(divide="ignore", invalid="ignore"):  # (parallel edges: no crossing, left out)
        t = (((s0x - px) * dey) - ((s0y - py) * dex)) / denom
    t = np.where(crossing, t, 0.0)  # (slots left empty hold finite numbers, never read)
    ix, iy = px + t * d1x, py + t * d1y
    keep = live & cur_in
    # slots 2j (crossing) and 2j+1 (vertex j), compacted to the front of each row in slot order
    cand_x, cand_y, valid = np.empty((p, 2 * m)), np.empty((p, 2 * m)), np.empty((p, 2 * m), dtype=bool)
    cand_x[:, 0::2], cand_x[:, 1::2] = ix, x
    cand_y[:, 0::2], cand_y[:, 1::2] = iy, y
    valid[:, 0::2], valid[:, 1::2] = crossing, keep
    slot = np.cumsum(valid, axis=1)
    count = slot[:, -1]
    width = max(int(count.max()) if p else 0, 1)
    out_x, out_y = np.zeros((p, width)), np.zeros((p, width))
    r, c = np.nonzero(valid)  # (row-major: each row's slots in order)
    out_x[r, slot[r, c] - 1], out_y[r, slot[r, c] - 1] = cand_x[r, c], cand_y[r, c]
    return out_x, out_y, count


def _extents(quads: np.ndarray) -> np.ndarray:
    """Per row ``x_min, y_min, x_max, y_max`` of the corners and the area."""
    x, y = quads[:, 0:8:2], quads[:, 1:8:2]
    return np.stack([x.min(1), y.min(1), x.max(1), y.max(1), quads[:, 8]], axis=1)


def _pairs(dq: np.ndarray, gq: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """IoU of rows ``dq[p]`` and ``gq[p]`` (see the module docstring)."""
    x, y = dq[:, 0:8:2].copy(), dq[:, 1:8:2].copy()
    n = np.full(dq.shape[0], 4, dtype=np.int64)
    for k in range(4):
        e = (k + 1) % 4
        x, y, n = _clip(x, y, n, gq[:, 2 * k], gq[:, 2 * k + 1], gq[:, 2 * e], gq[:, 2 * e + 1])
    inter = np.abs(polygon_area(x, y, n))
    da, ga = dq[:, 8], gq[:, 8]
    union = np.where(crowd, da, (da + ga) - inter)
    ok = (da > 0.0) & (ga > 0.0) & (inter > 0.0) & (union > 0.0)
    out = np.zeros(dq.shape[0], dtype=np.float64)
    np.divide(inter, union, out=out, where=ok)
    return out


def quad_iou_pairs(
    dquad: np.ndarray, gquad: np.ndarray, gcrowd: np.ndarray, di: np.ndarray, gi: np.ndarray
) -> np.ndarray:
    """Rotated IoU of detection ``dquad[di[p]]`` with ground truth ``gquad[gi[p]]`` for every pair p.

    Parameters
    ----------
    dquad, gquad
        ``(N, 9)`` rows of :func:`~deteval.tables.quads.obb_quads` / :func:`~deteval.tables.quads.polygon_quads`.
    gcrowd
        Per ground truth: a crowd region (intersection over the detection's area instead of the union).
    di, gi
        Row indices of the pairs.

    Returns
    -------
    numpy.ndarray
        One IoU per pair, float64 (hotcoco's ``obb_iou`` for the same boxes).
    """
    # Pairs whose axis-aligned extents are apart (or with an empty box) have IoU 0 and are not clipped.
    dext, gext = _extents(dquad), _extents(gquad)
    out = np.zeros(di.shape[0], dtype=np.float64)
    for s in range(0, di.shape[0], QUAD_PAIR_CHUNK):
        d, g = di[s : s + QUAD_PAIR_CHUNK], gi[s : s + QUAD_PAIR_CHUNK]
        a, b = np.take(dext, d, axis=0), np.take(gext, g, axis=0)
        near = (a[:, 0] <= b[:, 2]) & (b[:, 0] <= a[:, 2]) & (a[:, 1] <= b[:, 3]) & (b[:, 1] <= a[:, 3])
        near &= (a[:, 4] > 0.0) & (b[:, 4] > 0.0)
        k = np.flatnonzero(near)
        if k.size:
            out[s + k] = _pairs(np.take(dquad, d[k], axis=0), np.take(gquad, g[k], axis=0), gcrowd[g[k]])
    return out


def quad_iou_matrix(dquad: np.ndarray, gquad: np.ndarray, gcrowd: np.ndarray | None = None) -> np.ndarray:
    """The ``(D, G)`` matrix of :func:`quad_iou_pairs` of every detection with every ground truth."""
    nd, ng = dquad.shape[0], gquad.shape[0]
    crowd = np.zeros(ng, dtype=bool) if gcrowd is None else np.asarray(gcrowd, dtype=bool)
    di = np.repeat(np.arange(nd), ng)
    gi = np.tile(np.arange(ng), nd)
    return quad_iou_pairs(dquad, gquad, crowd, di, gi).reshape(nd, ng)
