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

from deteval.tables.quads import polygon_area, quad_bounds

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
    dex: np.ndarray,
    dey: np.ndarray,
    cur_in: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One Sutherland–Hodgman step: the polygons ``(x, y)`` (vertex j of polygon p at ``[j, p]``, its first
    ``n[p]`` vertices live) clipped by the half-plane left of the edge from ``s`` along ``(dex, dey)``;
    ``cur_in``: each vertex's inside test. Each input vertex j emits, in this order, the crossing of the edge
    ``j−1 → j`` (when it crosses) and vertex j (when inside), as hotcoco's loop pushes them."""
    m, p = x.shape
    cols = np.arange(p)
    last = n - 1
    prev_in = np.empty_like(cur_in)  # (vertex j−1's own test: the same operations on the same point)
    prev_in[1:], prev_in[0] = cur_in[:-1], cur_in[last, cols]
    live = np.arange(m)[:, None] < n
    keep = live & cur_in
    # the crossings, computed only where the edge j−1 → j changes sides (a couple per polygon)
    j, c = np.nonzero(live & (cur_in != prev_in))
    jp = np.where(j > 0, j - 1, last[c])  # (vertex j−1: the last live vertex for j = 0)
    px, py = x[jp, c], y[jp, c]
    d1x, d1y = x[j, c] - px, y[j, c] - py
    ex, ey = dex[c], dey[c]
    denom = (d1x * ey) - (d1y * ex)
    ok = np.abs(denom) >= DENOM_EPS  # (parallel edges: no crossing, left out)
    if not ok.all():
        j, c, px, py, d1x, d1y, ex, ey, denom = (v[ok] for v in (j, c, px, py, d1x, d1y, ex, ey, denom))
    t = (((sx[c] - px) * ey) - ((sy[c] - py) * ex)) / denom
    ix, iy = px + t * d1x, py + t * d1y
    # vertex j's slot comes after the crossing into it: its rank among its polygon's emitted points is the
    # count of crossings and kept vertices up to it; the crossing's, that count less the vertex itself
    emitted = keep.view(np.int8).copy()
    emitted[j, c] += 1
    rank = np.cumsum(emitted, axis=0, dtype=np.int16)
    count = rank[-1].astype(np.int64)
    width = max(int(count.max()) if p else 0, 1)
    # output point k is kept vertex j where j vertices rank at most k (those before it; the crossings' points
    # are written over afterwards)
    slots = np.arange(width, dtype=np.int16)[:, None]
    src = np.zeros((width, p), dtype=np.int64)
    for r in rank[:-1]:
        src += r <= slots
    src *= p
    src += cols
    out_x, out_y = x.ravel().take(src), y.ravel().take(src)
    at = rank[j, c] - keep[j, c] - 1
    out_x[at, c], out_y[at, c] = ix, iy
    return out_x, out_y, count


def _pairs(dq: np.ndarray, gq: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """IoU of rows ``dq[p]`` and ``gq[p]`` (see the module docstring)."""
    p = dq.shape[0]
    # vertex j of pair p at [j, p] (each vertex's coordinates contiguous: the per-polygon sums and ranks run
    # across rows), with room for 8 vertices, as many as a quadrilateral clipped by four half-planes has
    # (more only by rounding: the rows grow then)
    x, y = np.zeros((8, p)), np.zeros((8, p))
    x[:4], y[:4] = dq[:, 0:8:2].T, dq[:, 1:8:2].T
    g = gq.T
    n = np.full(p, 4, dtype=np.int64)
    m = 4  # (the rows any polygon uses)
    for k in range(4):
        e = (k + 1) % 4
        sx, sy = g[2 * k], g[2 * k + 1]
        dex, dey = g[2 * e] - sx, g[2 * e + 1] - sy
        xm, ym = x[:m], y[:m]
        cur_in = (dex * (ym - sy)) - (dey * (xm - sx)) >= 0.0
        inside = np.add.reduce((cur_in & (np.arange(m)[:, None] < n)).view(np.int8), axis=0, dtype=np.int64)
        # a polygon wholly inside the half-plane comes out as it went in (no crossing, every vertex kept),
        # one wholly outside (or already empty) comes out empty: only the others are clipped
        n[inside == 0] = 0
        cut = np.flatnonzero((inside > 0) & (inside < n))
        if not cut.size:
            continue
        cx, cy, cn = _clip(
            xm[:, cut], ym[:, cut], n[cut], sx[cut], sy[cut], dex[cut], dey[cut], cur_in[:, cut]
        )
        w = cx.shape[0]
        if w > x.shape[0]:
            x = np.concatenate([x, np.zeros((w - x.shape[0], p))])
            y = np.concatenate([y, np.zeros((w - y.shape[0], p))])
        x[:w, cut], y[:w, cut], n[cut] = cx, cy, cn
        m = max(m, w)
    inter = np.abs(polygon_area(x[:m].T, y[:m].T, n))
    da, ga = dq[:, 8], gq[:, 8]
    union = np.where(crowd, da, (da + ga) - inter)
    ok = (da > 0.0) & (ga > 0.0) & (inter > 0.0) & (union > 0.0)
    out = np.zeros(p, dtype=np.float64)
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
    # (per row: x_min, y_min, x_max, y_max of the corners, and the area)
    dext, gext = np.c_[quad_bounds(dquad), dquad[:, 8]], np.c_[quad_bounds(gquad), gquad[:, 8]]
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
