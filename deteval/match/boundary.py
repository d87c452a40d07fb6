"""Mask boundaries for Boundary IoU (Cheng et al., "Boundary IoU: Improving Object-Centric Image Segmentation
Evaluation", CVPR 2021), in numpy, on COCO run-length encoded masks.

The boundary of a binary mask ``G`` of an ``h × w`` image is ``G − erode(G)``: the mask's pixels within
Chebyshev distance ``d`` of a pixel outside it, where everything outside the image counts as outside the mask
(boundary-iou-api pads the mask with one zero pixel and erodes ``d`` times with a 3×3 square of ones in
OpenCV; a zero border eroded ``d`` times reaches ``d`` pixels in, so a mask cut by the image border has a
boundary there). ``d = max(1, round(ratio · √(h² + w²)))``, ``ratio`` the dilation ratio (0.02 by
default).

The erosion here is the same set, computed without OpenCV. Why it is the same: OpenCV's erosion reads
outside its canvas a border value that never erodes (``morphologyDefaultBorderValue``), so one 3×3 erosion
is the minimum over the 3×3 window clipped to the padded canvas, and ``d`` of them the minimum over every
pixel ``d`` king's moves away without leaving the canvas: the ``(2d+1) × (2d+1)`` window clipped to the
canvas (a rectangle: every pixel of the clipped window is reached by such moves). For a pixel of the image,
that clipped window holds a pixel of the zero ring exactly when the full window leaves the image. So
``erode(G)`` is 1 exactly where the whole ``(2d+1) × (2d+1)`` window lies in the image and in ``G``, which
separates into a column pass and a row pass. The column pass shrinks every foreground run of a column by
``d`` at both ends (the runs are read straight from the RLE, which is column-major); the row pass is an AND of
``2d + 1`` neighbouring columns, done in ``⌈log₂(2d+1)⌉ + 1`` ANDs of shifted copies (a window of length ``p``
is two windows of length ``p/2``), on columns packed 8 pixels a byte. It runs over many masks at once: each mask's bounding box (the only place a
boundary can be) is laid out column after column on one flat canvas, with at least one background pixel
below each column and one background column after each mask, so that a window that leaves a mask's box meets
a background pixel, as it does in the image.

The tools round ``ratio · diagonal`` in three ways, one profile each (:data:`BOUNDARY_PROFILES`):
``"boundary-iou-api"`` (the default; Python's ``round``, half to even; vernier follows it),
``"ultrafast"`` (half away from zero, as Rust's ``f64::round``; ultrafast-pycocotools) and
``"faster-coco-eval"`` (``std::round(x − 1e−10)``: every exact half rounds down; faster-coco-eval's C++
``toBoundary``). They differ only where ``ratio · diagonal`` is exactly a whole number plus one half: a
375 × 500 image at 0.02 (12.5: 12, 13, 12), a 105 × 140 one (3.5: 4, 4, 3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.io.rle import decode_counts

__all__ = [
    "BOUNDARY_PROFILES",
    "DEFAULT_DILATION_RATIO",
    "ROUNDINGS",
    "boundary_counts",
    "dilation_pixels",
    "encode_counts",
    "mask_boundaries",
]

#: The dilation ratio of the paper and of every tool's default.
DEFAULT_DILATION_RATIO = 0.02

#: How ``ratio · diagonal`` becomes a whole number of pixels: ``"half_even"`` (Python's ``round``),
#: ``"half_up"`` (half away from zero) or ``"half_down"`` (``std::round(x − 1e−10)``).
ROUNDINGS = ("half_even", "half_up", "half_down")

#: Each tool's rounding of the erosion depth, by profile name (the first is the default).
BOUNDARY_PROFILES: dict[str, str] = {
    "boundary-iou-api": "half_even",
    "ultrafast": "half_up",
    "faster-coco-eval": "half_down",
}

#: Canvas pixels of one pass over many masks (a bound on the memory of the boolean planes).
CANVAS_PIXELS = 1 << 24


def dilation_pixels(h: int, w: int, ratio: float, rounding: str = "half_even") -> int:
    """The erosion depth ``d = max(1, round(ratio · √(h² + w²)))`` of an ``h × w`` image, in pixels.

    ``√(h² + w²)`` is the float64 square root of the exact integer ``h² + w²`` (numpy's and C++'s alike);
    ``rounding`` is one of :data:`ROUNDINGS`.
    """
    x = ratio * math.sqrt(h * h + w * w)
    if rounding == "half_even":
        d = round(x)  # (Python: half to even)
    elif rounding == "half_up":
        d = _half_away(x)
    elif rounding == "half_down":
        d = _half_away(x - 1e-10)
    else:
        raise ConfigError(f"unknown boundary rounding {rounding!r}: use one of {', '.join(ROUNDINGS)}")
    return max(1, d)


def _half_away(x: float) -> int:
    """``x`` rounded half away from zero (x ≥ 0; ``x − ⌊x⌋`` is exact, unlike ``⌊x + 0.5⌋``)."""
    f = math.floor(x)
    return int(f) + (1 if x - f >= 0.5 else 0)


def mask_boundaries(
    rles: Sequence[Any], ratio: float = DEFAULT_DILATION_RATIO, rounding: str = "half_even"
) -> list[dict]:
    """The boundary of each COCO RLE mask (``{"size": [h, w], "counts": ...}``, compressed or a list of
    counts) as a compressed RLE dict with ``counts`` as bytes, as ``pycocotools.mask.encode`` writes it.

    Parameters
    ----------
    rles
        The masks, already validated (:func:`deteval.io.rle.check_rles`).
    ratio
        The dilation ratio: ``d = max(1, round(ratio · image diagonal))`` (:func:`dilation_pixels`).
    rounding
        One of :data:`ROUNDINGS`.

    Returns
    -------
    list of dict
        ``{"size": [h, w], "counts": bytes}`` per mask: the pixels of the mask within Chebyshev distance
        ``d`` of a pixel outside it or of the image border (``mask − erode(mask)``, boundary-iou-api's
        ``mask_to_boundary``).
    """
    n = len(rles)
    if n == 0:
        return []
    hw = np.array([[int(v) for v in r["size"]] for r in rles], dtype=np.int64).reshape(n, 2)
    runs, n_runs = _runs(rles)
    depth = np.array(
        [dilation_pixels(h, w, ratio, rounding) for h, w in hw.tolist()], dtype=np.int64
    ).reshape(n)
    counts, n_counts = boundary_counts(runs, n_runs, hw, depth)
    texts = encode_counts(counts, n_counts)
    return [{"size": [h, w], "counts": t} for (h, w), t in zip(hw.tolist(), texts)]


def _runs(rles: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The runs of every mask, concatenated (int64), and how many each has."""
    strings: list[bytes] = []
    where: list[int] = []
    lists: dict[int, np.ndarray] = {}
    for i, r in enumerate(rles):
        c = r["counts"]
        if isinstance(c, (bytes, str)):
            strings.append(c if isinstance(c, bytes) else c.encode("ascii"))
            where.append(i)
        else:
            lists[i] = np.asarray(c, dtype=np.int64).reshape(-1)
    if not lists:
        runs, _, n_runs, _ = decode_counts(strings)
        return runs, n_runs
    parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(rles)
    if strings:
        dec, _, dec_n, _ = decode_counts(strings)
        for i, piece in zip(where, np.split(dec, np.cumsum(dec_n)[:-1])):
            parts[i] = piece
    for i, piece in lists.items():
        parts[i] = piece
    n_runs = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    return np.concatenate(parts), n_runs


def boundary_counts(
    runs: np.ndarray, n_runs: np.ndarray, hw: np.ndarray, depth: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The RLE counts of the boundaries of many masks, given their runs (concatenated, ``n_runs[i]`` each,
    column-major, background first), sizes ``hw`` (n × 2) and erosion depths ``depth`` (pixels, ≥ 1).

    Returns the counts concatenated and how many each mask has (background first; a mask without
    foreground gives ``[h·w]``; no trailing zero).
    """
    n = hw.shape[0]
    h_of = hw[:, 0]
    # foreground runs as [start, end) in the column-major flat image: those of odd index in each mask
    first = np.cumsum(n_runs) - n_runs
    owner = np.repeat(np.arange(n), n_runs)
    local = np.arange(runs.shape[0]) - first[owner]
    csum = np.concatenate([[0], np.cumsum(runs)])
    ends = csum[1:] - np.repeat(csum[first], n_runs)
    fg = (local & 1).astype(bool) & (runs > 0)
    f_own, f_end = owner[fg], ends[fg]
    f_start = f_end - runs[fg]
    # runs that touch (a zero-length background run between them) are one run
    f_own, f_start, f_end = _joined(f_own, f_start, f_end)
    # split at column ends: pieces (mask, column, y0, y1)
    hp = h_of[f_own]
    c0, c1 = f_start // hp, (f_end - 1) // hp
    k = c1 - c0 + 1
    p_own = np.repeat(f_own, k)
    p_col = np.repeat(c0, k) + (np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k))
    hp = h_of[p_own]
    base = p_col * hp
    p_y0 = np.maximum(np.repeat(f_start, k), base) - base
    p_y1 = np.minimum(np.repeat(f_end, k), base + hp) - base
    has = np.zeros(n, dtype=bool)
    has[p_own] = True
    out_runs, out_own = _boundary_runs(p_own, p_col, p_y0, p_y1, hw, depth, has)
    # counts per mask: [s0, e0 − s0, s1 − e0, …, h·w − e_last] (no trailing zero)
    none = np.zeros(0, dtype=np.int64)
    s_e = np.concatenate([none, *out_runs])
    r_own = np.concatenate([none, *out_own])
    order = np.argsort(r_own, kind="stable")
    s_e = s_e.reshape(-1, 2)[order].reshape(-1)
    r_own = r_own[order]
    n_b = np.bincount(r_own, minlength=n)  # boundary runs per mask
    total = h_of * hw[:, 1]
    # each mask: its 2·n_b positions, then h·w; counts are the differences from 0
    n_pos = 2 * n_b + 1
    pos = np.empty(int(n_pos.sum()), dtype=np.int64)
    p_first = np.cumsum(n_pos) - n_pos
    last = p_first + n_pos - 1
    is_run = np.ones(pos.shape[0], dtype=bool)
    is_run[last] = False
    pos[is_run] = s_e
    pos[last] = total
    counts = np.diff(pos, prepend=0)
    counts[p_first] = pos[p_first]
    # no trailing zero (a boundary reaching the last pixel), as pycocotools' encoder writes it
    drop = (counts[last] == 0) & (n_b > 0)
    if drop.any():
        keep = np.ones(counts.shape[0], dtype=bool)
        keep[last[drop]] = False
        counts = counts[keep]
    return counts, n_pos - drop


def _boundary_runs(
    p_own: np.ndarray,
    p_col: np.ndarray,
    p_y0: np.ndarray,
    p_y1: np.ndarray,
    hw: np.ndarray,
    depth: np.ndarray,
    has: np.ndarray,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The boundary runs (flat [start, end) pairs, interleaved) of the masks that have foreground, and the
    mask of each run, canvas by canvas (masks of one depth, by height of their box)."""
    n = hw.shape[0]
    cnt = np.bincount(p_own, minlength=n)
    grp = np.cumsum(cnt) - cnt
    idx = np.flatnonzero(has)
    # per mask: its box (columns x0..x1, rows y0..y1 − 1)
    x0, x1, y0, y1 = np.zeros((4, n), dtype=np.int64)
    x0[idx] = p_col[grp[idx]]
    x1[idx] = p_col[grp[idx] + cnt[idx] - 1]
    y0[idx] = np.minimum.reduceat(p_y0, grp[idx])
    y1[idx] = np.maximum.reduceat(p_y1, grp[idx])
    bh = y1 - y0
    bw = x1 - x0 + 1
    order = idx[np.lexsort((bh[idx], depth[idx]))]
    out_runs: list[np.ndarray] = []
    out_own: list[np.ndarray] = []
    lo = 0
    while lo < order.shape[0]:
        d = int(depth[order[lo]])
        hi, stride, n_cols = lo, 0, 1
        while hi < order.shape[0] and int(depth[order[hi]]) == d:
            m = int(order[hi])
            s, c = max(stride, _stride(int(bh[m]))), n_cols + int(bw[m]) + 1
            if hi > lo and s * c > CANVAS_PIXELS:
                break
            stride, n_cols, hi = s, c, hi + 1
        members = order[lo:hi]
        runs, own = _canvas(members, p_own, p_col, p_y0, p_y1, grp, cnt, x0, y0, bw, bh, hw, d)
        out_runs.append(runs)
        out_own.append(own)
        lo = hi
    return out_runs, out_own


def _canvas(
    members: np.ndarray,
    p_own: np.ndarray,
    p_col: np.ndarray,
    p_y0: np.ndarray,
    p_y1: np.ndarray,
    grp: np.ndarray,
    cnt: np.ndarray,
    x0: np.ndarray,
    y0: np.ndarray,
    bw: np.ndarray,
    bh: np.ndarray,
    hw: np.ndarray,
    d: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The boundaries of ``members`` (masks with foreground, erosion depth ``d``) on one canvas: their runs
    (flat [start, end) in their images, interleaved) and the mask of each run."""
    stride = _stride(int(bh[members].max()))
    cols = bw[members] + 1  # (≥ 1 background column after every mask)
    col_base = np.cumsum(cols) - cols + 1  # (a background column first)
    n_cols = int(cols.sum()) + 1
    size = n_cols * stride
    # the pieces of the members, in canvas order (ascending positions)
    k = cnt[members]
    sel = np.repeat(grp[members], k) + (np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k))
    where = np.zeros(hw.shape[0], dtype=np.int64)
    where[members] = np.arange(members.shape[0])
    own = p_own[sel]
    at = col_base[where[own]] + p_col[sel] - x0[own]
    top = at * stride - y0[own]
    a, b = p_y0[sel], p_y1[sel]
    a2, b2 = a + d, b - d
    ok = a2 < b2
    # the column pass on the runs, the row pass on the canvas packed 8 pixels a byte (a column is a whole
    # number of bytes): an AND of 2d + 1 neighbouring columns, by doubling
    row_bytes = stride // 8
    acc = np.packbits(_paint((top + a2)[ok], (top + b2)[ok], size))
    length, p = 2 * d + 1, 1
    while 2 * p <= length:
        cut = max(acc.shape[0] - p * row_bytes, 0)
        acc = acc[:cut] & acc[p * row_bytes : p * row_bytes + cut]
        p *= 2
    eroded = np.zeros(size // 8, dtype=np.uint8)
    span = size // 8 - 2 * d * row_bytes
    if span > 0:
        shift = (length - p) * row_bytes
        np.bitwise_and(
            acc[:span], acc[shift : shift + span], out=eroded[d * row_bytes : d * row_bytes + span]
        )
    # the boundary is the mask XOR its erosion (the erosion lies inside the mask, 1 pixel or more from each
    # end of its runs): its edges are the mask's run ends and the erosion's edges, these read from the bytes
    # that differ from themselves moved by one pixel (MSB first: pixel 8k is bit 7 of byte k)
    moved = eroded >> 1
    moved[1:] |= eroded[:-1] << 7
    moved ^= eroded
    at_byte = np.flatnonzero(moved)
    bits = np.unpackbits(moved[at_byte].astype(np.uint8)).reshape(-1, 8)
    r, c = np.nonzero(bits)
    edges = np.sort(np.concatenate([top + a, top + b, at_byte[r] * 8 + c]))
    col, row = np.divmod(edges, stride)
    m_of_col = np.repeat(members, cols)
    m_of_col = np.concatenate([[0], m_of_col])
    owner = m_of_col[col]
    x = col - col_base[where[owner]] + x0[owner]
    y = row + y0[owner]
    flat = x * hw[owner, 0] + y
    # a run that ends at the bottom of a column and one that starts at the top of the next are one run
    own, starts, ends = _joined(owner[0::2], flat[0::2], flat[1::2])
    return np.stack([starts, ends], axis=1).reshape(-1), own


def _joined(
    own: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs ``[starts, ends)`` (ascending, mask ``own``) with every chain of runs of one mask that touch (one
    ends where the next starts) made one run, from the first one's start to the last one's end."""
    join = np.flatnonzero((own[1:] == own[:-1]) & (starts[1:] == ends[:-1]))
    if not join.size:
        return own, starts, ends
    keep_start = np.ones(own.shape[0], dtype=bool)
    keep_start[join + 1] = False
    keep_end = np.ones(own.shape[0], dtype=bool)
    keep_end[join] = False
    return own[keep_start], starts[keep_start], ends[keep_end]


def _stride(height: int) -> int:
    """The canvas rows of a column: at least one background row under ``height``, a multiple of 8."""
    return (height + 8) // 8 * 8


def _paint(starts: np.ndarray, ends: np.ndarray, size: int) -> np.ndarray:
    """A boolean plane of ``size`` pixels, True on the disjoint, non-touching ``[starts, ends)`` (ascending)."""
    if not starts.size:
        return np.zeros(size, dtype=bool)
    bounds = np.empty(2 * starts.shape[0] + 2, dtype=np.int64)
    bounds[0] = 0
    bounds[1:-1:2] = starts
    bounds[2:-1:2] = ends
    bounds[-1] = size
    lengths = np.diff(bounds)
    values = np.zeros(lengths.shape[0], dtype=bool)
    values[1::2] = True
    return np.repeat(values, lengths)


def encode_counts(counts: np.ndarray, n_counts: np.ndarray) -> list[bytes]:
    """RLE counts (concatenated, ``n_counts[i]`` per mask) as pycocotools' compressed strings
    (``rleToString``): from the fourth count on, the difference to the count two places back; each value
    in 5-bit groups, least significant first, ``chr(48 + group)``, bit 0x20 on every group but the last,
    as few groups as hold the value in two's complement (its last group's bit 0x10 is the sign)."""
    n = n_counts.shape[0]
    if not counts.size:
        return [b""] * n
    first = np.cumsum(n_counts) - n_counts
    x = counts.copy()
    x[2:] -= counts[:-2]
    for i in range(3):  # (a mask's first three counts are written as they are)
        at = first[n_counts > i] + i
        x[at] = counts[at]
    # characters per value: most take one (|x| < 16), few more than two; each longer group counted on the
    # values that still need it
    k = np.ones(x.shape[0], dtype=np.int64)
    idx = np.flatnonzero((x < -16) | (x >= 16))
    lim = 16
    while idx.size:
        k[idx] += 1
        lim <<= 5
        xi = x[idx]
        idx = idx[(xi < -lim) | (xi >= lim)]
    end = np.cumsum(k)
    start = end - k
    out = np.empty(int(end[-1]), dtype=np.uint8)
    more = k > 1
    ch = x & 0x1F
    ch |= more.astype(np.int64) << 5
    ch += 48
    out[start] = ch
    sel = np.flatnonzero(more)
    j = 1
    while sel.size:  # (the second and later characters of the few values that have them)
        ks = k[sel]
        ch = (x[sel] >> (5 * j)) & 0x1F
        ch |= (ks - 1 > j).astype(np.int64) << 5
        ch += 48
        out[start[sel] + j] = ch
        j += 1
        sel = sel[ks > j]
    buf = out.tobytes()
    ends = end[first + n_counts - 1].tolist()
    return [buf[a:b] for a, b in zip([0, *ends[:-1]], ends)]
