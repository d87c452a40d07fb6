"""Oriented boxes as quadrilateral rows: ``x1 y1 x2 y2 x3 y3 x4 y4 area`` (:data:`QUAD_COLUMNS` numbers), the
column every oriented-box table holds (COCO-style OBB JSON, DOTA, YOLO-OBB) and the rotated IoU
(:mod:`deteval.match.rotated`) reads.

* :func:`obb_quads`: ``(cx, cy, w, h, angle)`` (radians, counter-clockwise positive) → corners as hotcoco's
  ``obb_to_corners`` computes them, area ``w·h``;
* :func:`polygon_quads`: four corner points → counter-clockwise corners, area by the shoelace formula;
* :func:`polygon_area`: the shoelace sum in vertex order (hotcoco's ``signed_polygon_area``);
* :func:`corners_obb`: four corner points → ``(cx, cy, w, h, angle)`` as hotcoco's ``corners_to_obb``
  (its DOTA converter): the mean of the corners, the lengths of the first two edges, the first edge's angle;
  exact for a rectangle;
* :func:`quad_extents`: the axis-aligned ``[x, y, w, h]`` extent (:func:`quad_bounds`: its corners).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "QUAD_COLUMNS",
    "corners_obb",
    "obb_quads",
    "polygon_area",
    "polygon_quads",
    "quad_bounds",
    "quad_extents",
]

#: A row of a quadrilateral table: x1, y1, …, x4, y4 and the area the union uses.
QUAD_COLUMNS = 9


def obb_quads(obb: np.ndarray) -> np.ndarray:
    """``(N, 5)`` boxes ``(cx, cy, w, h, angle)`` → ``(N, 9)`` rows: corners (hotcoco's ``obb_to_corners``)
    and the area ``w·h``.

    Parameters
    ----------
    obb
        Centre, width, height and angle in radians (counter-clockwise positive) per row.

    Returns
    -------
    numpy.ndarray
        ``x1 y1 x2 y2 x3 y3 x4 y4 area`` per row, float64.
    """
    b = np.asarray(obb, dtype=np.float64).reshape(-1, 5)
    cx, cy, w, h, a = b.T
    cos_a, sin_a = np.cos(a), np.sin(a)
    hw, hh = w / 2.0, h / 2.0
    dx_w, dy_w, dx_h, dy_h = hw * cos_a, hw * sin_a, hh * sin_a, hh * cos_a
    out = np.empty((b.shape[0], QUAD_COLUMNS), dtype=np.float64)
    out[:, 0], out[:, 1] = (cx - dx_w) + dx_h, (cy - dy_w) - dy_h
    out[:, 2], out[:, 3] = (cx + dx_w) + dx_h, (cy + dy_w) - dy_h
    out[:, 4], out[:, 5] = (cx + dx_w) - dx_h, (cy + dy_w) + dy_h
    out[:, 6], out[:, 7] = (cx - dx_w) - dx_h, (cy - dy_w) + dy_h
    out[:, 8] = w * h
    return out


def polygon_area(x: np.ndarray, y: np.ndarray, n: np.ndarray | None = None) -> np.ndarray:
    """Signed shoelace area of polygons given as ``(P, M)`` vertex columns, the first ``n[p]`` vertices of row
    p (all M when ``n`` is None): ``½ Σ_i (x_i·y_{i+1} − x_{i+1}·y_i)`` accumulated in vertex order (hotcoco's
    ``signed_polygon_area``); 0 for fewer than three vertices."""
    p, m = x.shape
    count = np.full(p, m, dtype=np.int64) if n is None else n
    rows = np.arange(p)
    acc = np.zeros(p, dtype=np.float64)
    for i in range(m):
        live = i < count
        if not live.any():
            break
        j = np.where(i + 1 < count, i + 1, 0)
        xi, yi, xj, yj = x[:, i], y[:, i], x[rows, j], y[rows, j]
        acc = np.where(live, acc + xi * yj, acc)
        acc = np.where(live, acc - xj * yi, acc)
    return np.where(count >= 3, acc * 0.5, 0.0)


def polygon_quads(corners: np.ndarray) -> np.ndarray:
    """``(N, 8)`` corner coordinates ``x1 y1 … x4 y4`` → ``(N, 9)`` rows, counter-clockwise (a clockwise
    quadrilateral's corners reversed) with the absolute shoelace area."""
    c = np.asarray(corners, dtype=np.float64).reshape(-1, 8)
    x, y = c[:, 0::2], c[:, 1::2]
    signed = polygon_area(x, y)
    cw = signed < 0
    x = np.where(cw[:, None], x[:, ::-1], x)
    y = np.where(cw[:, None], y[:, ::-1], y)
    out = np.empty((c.shape[0], QUAD_COLUMNS), dtype=np.float64)
    out[:, 0:8:2], out[:, 1:8:2] = x, y
    out[:, 8] = np.abs(signed)
    return out


def quad_extents(quads: np.ndarray) -> np.ndarray:
    """The axis-aligned ``[x, y, w, h]`` extent of each ``(N, 9)`` quadrilateral row."""
    out = quad_bounds(quads)
    out[:, 2:4] -= out[:, 0:2]
    return out


def quad_bounds(quads: np.ndarray) -> np.ndarray:
    """The ``[x_min, y_min, x_max, y_max]`` of the corners of each ``(N, 9)`` quadrilateral row or ``(N, 8)``
    corners (the four compared pairwise: a reduction along rows of four is several times slower)."""
    q = np.asarray(quads, dtype=np.float64).T
    out = np.empty((q.shape[1], 4))
    out[:, 0] = np.minimum(np.minimum(q[0], q[2]), np.minimum(q[4], q[6]))
    out[:, 1] = np.minimum(np.minimum(q[1], q[3]), np.minimum(q[5], q[7]))
    out[:, 2] = np.maximum(np.maximum(q[0], q[2]), np.maximum(q[4], q[6]))
    out[:, 3] = np.maximum(np.maximum(q[1], q[3]), np.maximum(q[5], q[7]))
    return out


def corners_obb(corners: np.ndarray) -> np.ndarray:
    """``(N, 8)`` corners ``x1 y1 … x4 y4`` → ``(N, 5)`` ``(cx, cy, w, h, angle)`` in hotcoco's order of
    operations: ``cx = (x1 + x2 + x3 + x4) / 4`` (likewise ``cy``), ``w = √(dx₁₂² + dy₁₂²)``,
    ``h = √(dx₂₃² + dy₂₃²)``, ``angle = atan2(dy₁₂, dx₁₂)``.

    Parameters
    ----------
    corners
        Four corner points per row, in the order the file gives them.

    Returns
    -------
    numpy.ndarray
        Centre, width, height and angle (radians) per row, float64.
    """
    c = np.asarray(corners, dtype=np.float64).reshape(-1, 8)
    cx = (((c[:, 0] + c[:, 2]) + c[:, 4]) + c[:, 6]) / 4.0
    cy = (((c[:, 1] + c[:, 3]) + c[:, 5]) + c[:, 7]) / 4.0
    dx01, dy01 = c[:, 2] - c[:, 0], c[:, 3] - c[:, 1]
    dx12, dy12 = c[:, 4] - c[:, 2], c[:, 5] - c[:, 3]
    w = np.sqrt(dx01 * dx01 + dy01 * dy01)
    h = np.sqrt(dx12 * dx12 + dy12 * dy12)
    return np.stack([cx, cy, w, h, np.arctan2(dy01, dx01)], axis=1)
