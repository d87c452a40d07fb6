"""IoU and OKS for flat lists of (detection, ground truth) pairs, bit-identical to pycocotools.

* bbox: pycocotools' C ``bbIou`` (maskApi.c), defined in :mod:`deteval.match.iou` (the home of every box IoU)
  and re-exported here.
* segm: ``pycocotools.mask.iou`` on RLEs, many (image, category) blocks of pairs per call.
* boundary: Boundary IoU (Cheng et al., CVPR 2021) as boundary-iou-api scores it: ``min(mask IoU,
  boundary IoU)`` against a regular ground truth, the mask IoU (crowd rule) against a crowd; both through
  ``pycocotools.mask.iou``, the boundaries from :mod:`deteval.match.boundary`.
* keypoints: COCO's OKS (``COCOeval.computeOks``), vectorised over pairs. The per-pair sum of
  ``exp(−e)`` over the visible keypoints reproduces numpy's pairwise summation order, so it is the same
  double as ``np.sum`` on the 1-D array pycocotools builds.
"""

from __future__ import annotations

from collections import deque
from itertools import chain
from operator import itemgetter
from typing import Any, Protocol

import numpy as np

from deteval.io.coco import row_extents
from deteval.io.rle import text_slices
from deteval.match.iou import MATRIX_PAIRS, bb_iou, bbox_iou_blocks, bbox_iou_pairs

# The box kernels live in deteval.match.iou; their names stay importable from here.
__all__ = [
    "MATRIX_PAIRS",
    "KeypointOks",
    "LazyCounts",
    "RleLookup",
    "bb_iou",
    "bbox_iou_blocks",
    "bbox_iou_pairs",
    "boundary_iou_blocks",
    "numpy_pairwise_sum_rows",
    "oks_pairs",
    "segm_iou_blocks",
]


class RleLookup(Protocol):
    """The RLE of annotation ``i``: a list of RLEs, or a table that converts them on demand (``ensure``)."""

    def __getitem__(self, i: int, /) -> Any: ...


def numpy_pairwise_sum_rows(a: np.ndarray) -> np.ndarray:
    """Row sums of a 2-D float64 array in the exact order of numpy's pairwise summation of a 1-D array.

    numpy sums n < 8 values left to right from 0; up to 128 values in 8 interleaved accumulators combined
    as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) plus a sequential tail; longer arrays split in two halves
    (the first a multiple of 8). Emulating it lets per-pair OKS sums match pycocotools bit for bit.
    """
    rows, n = a.shape
    if n < 8:
        res = np.zeros(rows, dtype=np.float64)
        for i in range(n):
            res = res + a[:, i]
        return res
    if n <= 128:
        r = a[:, :8].copy()
        i = 8
        while i < n - (n % 8):
            r += a[:, i : i + 8]
            i += 8
        res = ((r[:, 0] + r[:, 1]) + (r[:, 2] + r[:, 3])) + ((r[:, 4] + r[:, 5]) + (r[:, 6] + r[:, 7]))
        for j in range(i, n):
            res = res + a[:, j]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return numpy_pairwise_sum_rows(a[:, :n2]) + numpy_pairwise_sum_rows(a[:, n2:])


def oks_pairs(
    dkp: np.ndarray,
    gkp: np.ndarray,
    gbox: np.ndarray,
    garea: np.ndarray,
    sigmas: np.ndarray,
    di: np.ndarray,
    gi: np.ndarray,
) -> np.ndarray:
    """Object keypoint similarity for every pair, as ``COCOeval.computeOks`` (see :class:`KeypointOks`, which
    does the per-ground-truth work once for many calls)."""
    return KeypointOks(dkp, gkp, gbox, garea, sigmas)(di, gi)


class KeypointOks:
    """OKS of (detection, ground truth) pairs, as ``COCOeval.computeOks``; built once per evaluation, called
    per chunk of pairs.

    ``e_k = (dx_k² + dy_k²) / (2σ_k)² / (area + eps) / 2``; OKS = mean of ``exp(−e_k)`` over the ground
    truth's visible keypoints (v > 0). Without visible keypoints, ``dx`` is the distance outside the ground
    truth box enlarged to ``[x − w, x + 2w]`` (likewise y) and the mean runs over all keypoints. Every step is
    the float64 operation pycocotools does, in its order (``−(x / 2)`` is ``x · −0.5`` exactly), and the sum
    runs over the visible keypoints compacted to the front, in numpy's pairwise order
    (:func:`_compacted_column_sums`).
    """

    def __init__(
        self,
        dkp: np.ndarray,
        gkp: np.ndarray,
        gbox: np.ndarray,
        garea: np.ndarray,
        sigmas: np.ndarray,
        d_rows: np.ndarray | None = None,
        variances: tuple[np.ndarray, np.ndarray] | None = None,
        counts: np.ndarray | None = None,
    ) -> None:
        """``d_rows``: the rows of ``dkp`` that are the detections (default: all), taken without a copy of
        their whole rows. ``variances``: per-category sigmas, as a table of ``(2σ)²`` rows (one per category)
        and each ground truth's row in it; ``sigmas`` then only gives the keypoint count. ``counts``: each
        ground truth's own keypoint count K_c where categories have skeletons of different sizes (the rows
        padded past it, never visible): without a visible keypoint, the mean runs over its first K_c
        keypoints, as ``computeOks`` run on that category alone (default: every one has all)."""
        n_kp = sigmas.shape[0]
        self.n_kp = n_kp
        self.var = (sigmas * 2) ** 2
        # with per-category sigmas, each ground truth's own variances (a pair divides by its ground truth's)
        self.gvar = None if variances is None else variances[0].take(variances[1], axis=0)
        # per ground truth: how many keypoints are visible, and the order that puts them first (in order), as
        # pycocotools' e[vg > 0] compacts them; without any, all keypoints in order. The slots past the
        # visible ones point far beyond any pair's row: a clipped take reads a 0 there (:meth:`_oks`)
        vis = gkp[:, 2::3] > 0
        k1 = np.count_nonzero(vis, axis=1)
        self.none = k1 == 0
        if counts is None:
            vis[self.none] = True
        else:
            vis[self.none] = np.arange(n_kp) < counts[self.none, None]
        self.order = _visible_first(vis)
        self.order_t = np.ascontiguousarray(self.order.T)
        self.count = np.where(self.none, n_kp if counts is None else counts, k1)
        # (contiguous copies: a pair's keypoints are then gathered as one short row, not 17 strided numbers)
        if d_rows is None:
            self.xd, self.yd = np.ascontiguousarray(dkp[:, 0::3]), np.ascontiguousarray(dkp[:, 1::3])
        else:
            self.xd, self.yd = np.take(dkp[:, 0::3], d_rows, axis=0), np.take(dkp[:, 1::3], d_rows, axis=0)
        self.xg, self.yg = np.ascontiguousarray(gkp[:, 0::3]), np.ascontiguousarray(gkp[:, 1::3])
        self.scale = garea + np.spacing(1)
        self.gbox = gbox
        vis[self.none] = False
        self.visible = vis
        self._extents: tuple[np.ndarray, ...] | None = None

    def __call__(self, di: np.ndarray, gi: np.ndarray, below: float | None = None) -> np.ndarray:
        """OKS of detection ``di[p]`` with ground truth ``gi[p]`` for every pair p. ``below``: a pair whose
        OKS is certainly below this value (:meth:`far`) gets −inf instead, without computing it (the matcher
        keeps only pairs at or above its lowest threshold)."""
        if below is None or di.shape[0] == 0:
            return self._oks(di, gi)
        far = self.far(di, gi, below)
        if not far.any():
            return self._oks(di, gi)
        out = np.full(di.shape[0], -np.inf)
        near = np.flatnonzero(~far)
        out[near] = self._oks(di[near], gi[near])
        return out

    def far(self, di: np.ndarray, gi: np.ndarray, below: float) -> np.ndarray:
        """Pairs whose OKS is below ``below`` by a bound: every visible keypoint k of the ground truth lies in
        the box of its visible keypoints and the detection's k-th keypoint in the box of all of them, so
        ``|dx_k| ≥ gap_x`` and ``|dy_k| ≥ gap_y`` (the gaps between those boxes), each ``e_k`` is at least
        ``(gap_x² + gap_y²) / max var / (area + eps) / 2`` and OKS, a mean of ``exp(−e_k)``, at most the
        exponential of minus that. A pair is far where that bound is below ``below`` by a factor e^(−1e−6),
        far beyond the rounding of either computation. Ground truths without visible keypoints are never
        far (their OKS is measured to a box)."""
        if not below > 0:
            return np.zeros(di.shape[0], dtype=bool)
        if self._extents is None:
            vis = self.visible.T.copy()
            self._extents = (
                *row_extents(self.xd),
                *row_extents(self.yd),
                *row_extents(self.xg, vis),
                *row_extents(self.yg, vis),
                np.maximum.reduce(
                    np.where(vis, self.var[:, None] if self.gvar is None else self.gvar.T, 0.0), axis=0
                ),
            )
        dx0, dx1, dy0, dy1, gx0, gx1, gy0, gy1, vmax = self._extents
        gap_x = np.maximum(np.maximum(gx0[gi] - dx1[di], dx0[di] - gx1[gi]), 0.0)
        gap_y = np.maximum(np.maximum(gy0[gi] - dy1[di], dy0[di] - gy1[gi]), 0.0)
        v = vmax[gi]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = (gap_x * gap_x + gap_y * gap_y) / np.where(v > 0, v, np.inf) / self.scale[gi] / 2
            return (z > 1e-6 - np.log(below)) & ~self.none[gi]

    def _oks(self, di: np.ndarray, gi: np.ndarray) -> np.ndarray:
        n, n_kp = di.shape[0], self.n_kp
        if n == 0:
            return np.zeros(0, dtype=np.float64)
        # e in a buffer with one cell past the pairs' rows, 0: where the compaction reads a slot past the
        # visible keypoints (the zeros change no sum, see _compacted_column_sums)
        buf = np.empty(n * n_kp + 1, dtype=np.float64)
        buf[-1] = 0.0
        dx = buf[:-1].reshape(n, n_kp)
        self.xd.take(di, axis=0, out=dx, mode="clip")  # (mode "raise" with ``out`` copies through a buffer)
        dx -= self.xg.take(gi, axis=0)
        dy = self.yd.take(di, axis=0)
        dy -= self.yg.take(gi, axis=0)
        none = np.flatnonzero(self.none[gi])
        if none.size:  # where the ground truth has no visible keypoint: the distance outside its enlarged box
            bb = self.gbox[gi[none]]
            x0 = (bb[:, 0] - bb[:, 2])[:, None]
            x1 = (bb[:, 0] + bb[:, 2] * 2)[:, None]
            y0 = (bb[:, 1] - bb[:, 3])[:, None]
            y1 = (bb[:, 1] + bb[:, 3] * 2)[:, None]
            xn, yn = self.xd[di[none]], self.yd[di[none]]
            z = np.zeros_like(xn)
            dx[none] = np.maximum(z, x0 - xn) + np.maximum(z, xn - x1)
            dy[none] = np.maximum(z, y0 - yn) + np.maximum(z, yn - y1)
        e = np.multiply(dx, dx, out=dx)
        e += np.multiply(dy, dy, out=dy)
        del dy
        e /= self.var if self.gvar is None else self.gvar.take(gi, axis=0)
        e /= self.scale.take(gi)[:, None]
        e *= -0.5
        np.exp(e, out=e)
        # the visible keypoints of each pair's ground truth first, zeros after them: one flat gather into a
        # transposed layout (a slot's values of all pairs contiguous), the pairs grouped by how numpy sums them
        count = self.count.take(gi)
        group = _sum_groups(count)
        perm = np.argsort(group, kind="stable")
        idx = self.order_t.take(gi.take(perm), axis=1)
        idx += perm * n_kp
        sums = _compacted_column_sums(buf.take(idx, mode="clip"), count.take(perm), group.take(perm))
        out = np.empty(n, dtype=np.float64)
        out[perm] = sums
        return out


#: An index past every pair's row in :meth:`KeypointOks._oks`' buffer (a clipped take reads its last cell);
#: adding a row's offset keeps it within int64.
_PAST = 1 << 62


def _visible_first(vis: np.ndarray) -> np.ndarray:
    """Per row of ``vis`` (rows × K), the columns that are True, in order, then ``_PAST``."""
    order = np.argsort(~vis, axis=1, kind="stable")
    return np.where(np.arange(vis.shape[1]) < np.count_nonzero(vis, axis=1)[:, None], order, _PAST)


def _sum_groups(count: np.ndarray) -> np.ndarray:
    """Each count's group in :func:`_compacted_column_sums` (``c // 8``, or 17 past 128), as int8 (sorted
    by radix)."""
    return np.where(count > 128, 17, count >> 3).astype(np.int8)


def _compacted_column_sums(at: np.ndarray, count: np.ndarray, group: np.ndarray) -> np.ndarray:
    """``np.sum(row[:c]) / c`` for each row of ``at.T`` and its count c, where the row holds zeros from c on.

    numpy's pairwise sum of c numbers (:func:`numpy_pairwise_sum_rows`) depends on c only through c // 8
    while c ≤ 128: c < 8 is summed left to right; otherwise 8 accumulators run over the c // 8 full blocks,
    are combined as a tree, and the remaining c % 8 numbers are added left to right. Adding 0 leaves a sum
    of non-negative numbers unchanged, so one formula per c // 8, run over 8 · (c // 8) + 7 columns of the
    zero-padded rows, gives every row of that group its exact sum: at most three groups for 17 keypoints,
    instead of one per visible count. Rows with c > 128 (numpy's sum then splits) are summed per count.

    The rows come sorted by their ``group`` (:func:`_sum_groups`), transposed: each group is one contiguous
    slice of every row of ``at``, so its sums run over contiguous memory with no copy of its rows (the same
    additions in the same order as over the rows)."""
    n_kp, n = at.shape
    out = np.empty(n, dtype=np.float64)
    bounds = np.searchsorted(group, np.arange(19)).tolist()
    for m in range(18):
        lo, hi = bounds[m], bounds[m + 1]
        if lo == hi:
            continue
        if m > 16:  # (c > 128: numpy's sum splits c in halves, so each count is summed on its own)
            g, gc = at[:, lo:hi].T, count[lo:hi]
            s = np.empty(hi - lo, dtype=np.float64)
            for c in np.flatnonzero(np.bincount(gc)).tolist():
                sel = np.flatnonzero(gc == c)
                s[sel] = numpy_pairwise_sum_rows(g[sel, :c])
        elif m == 0:
            s = at[0, lo:hi].copy()
            for j in range(1, min(7, n_kp)):
                s += at[j, lo:hi]
        else:
            acc = at[0:8, lo:hi].copy()
            for b in range(1, m):
                acc += at[8 * b : 8 * b + 8, lo:hi]
            s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
            for j in range(8 * m, min(8 * m + 7, n_kp)):
                s += at[j, lo:hi]
        out[lo:hi] = s
    out /= count
    return out


#: Pairs (detections × ground truths of several groups, most of them across groups) of one ``mask.iou`` call.
SEGM_CALL_PAIRS = 1 << 12


def segm_iou_blocks(
    drles: RleLookup,
    grles: RleLookup,
    gcrowd: np.ndarray,
    di: np.ndarray,
    gi: np.ndarray,
    block_start: np.ndarray,
    block_nd: np.ndarray,
    block_ng: np.ndarray,
) -> np.ndarray:
    """Mask IoU through ``pycocotools.mask.iou`` for blocks of nd × ng pairs (detection-major), many blocks
    per call (see :class:`_Tags`)."""
    # pycocotools is imported where masks are compared only: a bbox evaluation never loads it
    from pycocotools import mask as mask_utils

    out = np.zeros(di.shape[0], dtype=np.float64)
    if di.shape[0] == 0:
        return out
    for table, idx in ((drles, di), (grles, gi)):
        if hasattr(table, "ensure"):  # convert only the masks that take part, in batches
            table.ensure(np.flatnonzero(np.bincount(idx)))  # (the rows in order, each once; see above)
    npairs = block_nd * block_ng
    blk = np.repeat(np.arange(block_start.shape[0]), npairs)
    local = np.arange(di.shape[0], dtype=np.int64) - block_start[blk]
    kd, kg = local // block_ng[blk], local % block_ng[blk]  # row and column inside the block
    del local
    d_first, g_first = np.cumsum(block_nd) - block_nd, np.cumsum(block_ng) - block_ng
    d_idx = di[kg == 0]
    d_rows, g_rows = d_idx.tolist(), gi[kd == 0].tolist()  # each block's detections, ground truths
    # (an RleTable's converted masks are read straight from its cache: one C-level map)
    dets_all = list(map(_getter(drles), d_rows))
    gts_all = list(map(_getter(grles), g_rows))
    lazy = drles.lazy_counts(d_idx) if hasattr(drles, "lazy_counts") else None
    hw_d, hw_g = _table_sizes(drles, d_rows), _table_sizes(grles, g_rows)
    hw = None if hw_d is None or hw_g is None else np.concatenate([hw_d, hw_g])
    tags = _Tags.of(dets_all, gts_all, block_nd, block_ng, hw, lazy)
    if tags is None and lazy is not None:  # (every call untagged: the masks made as dicts once)
        dets_all, lazy = lazy.made(dets_all, 0, len(dets_all)), None
    nb = block_start.shape[0]
    lo = 0
    while lo < nb:
        window = slice(lo, min(nb, lo + 4096))
        grow = np.cumsum(block_nd[window]) * np.cumsum(block_ng[window])
        hi = lo + max(1, int(np.searchsorted(grow, SEGM_CALL_PAIRS, side="right")))
        d0, d1 = int(d_first[lo]), int(d_first[hi - 1] + block_nd[hi - 1])
        g0, g1 = int(g_first[lo]), int(g_first[hi - 1] + block_ng[hi - 1])
        p0, p1 = int(block_start[lo]), int(block_start[hi - 1] + npairs[hi - 1])
        crowd = gcrowd[g_rows[g0:g1]].astype(np.uint8).tolist()
        tagged = None if tags is None else tags.masks(lo, hi, d0, d1, g0, g1)
        if tagged is None:  # (not plain RLE dicts: untagged, the pairs across blocks are computed too)
            dets = dets_all[d0:d1] if lazy is None else lazy.made(dets_all, d0, d1)
            gts = gts_all[g0:g1]
        else:
            dets, gts = tagged
        m = np.asarray(mask_utils.iou(dets, gts, crowd), dtype=np.float64).reshape(d1 - d0, g1 - g0)
        b = blk[p0:p1]
        out[p0:p1] = m[d_first[b] - d0 + kd[p0:p1], g_first[b] - g0 + kg[p0:p1]]
        lo = hi
    return out


def boundary_iou_blocks(
    drles: RleLookup,
    grles: RleLookup,
    dbounds: RleLookup,
    gbounds: RleLookup,
    gcrowd: np.ndarray,
    di: np.ndarray,
    gi: np.ndarray,
    block_start: np.ndarray,
    block_nd: np.ndarray,
    block_ng: np.ndarray,
    floor: float = 0.0,
) -> np.ndarray:
    """Boundary IoU of blocks of pairs (as :func:`segm_iou_blocks`): ``min(mask IoU, boundary IoU)`` where
    the ground truth is not a crowd, the mask IoU (intersection over the detection's area) where it is.

    ``dbounds``/``gbounds``: the boundaries of the masks (a
    :class:`~deteval.detection.coco_rles.BoundaryTable`). A boundary lies inside its mask, so where two masks
    do not meet (mask IoU 0) their boundaries do not either: the boundary IoU is computed only for the pairs
    of a regular ground truth whose mask IoU is above 0, so a mask's boundary is made only when it meets one.
    ``floor``: the matcher's lowest threshold; a pair whose mask IoU is below it keeps its mask IoU (the
    minimum is below it too, and the matcher leaves out every pair below it either way).
    """
    iou = segm_iou_blocks(drles, grles, gcrowd, di, gi, block_start, block_nd, block_ng)
    pairs = np.flatnonzero((iou > 0) & (iou >= floor) & ~gcrowd[gi])
    if pairs.size:
        ones = np.ones(pairs.shape[0], dtype=np.int64)
        starts = np.arange(pairs.shape[0], dtype=np.int64)
        no_crowd = np.zeros(gcrowd.shape[0], dtype=bool)
        b = segm_iou_blocks(dbounds, gbounds, no_crowd, di[pairs], gi[pairs], starts, ones, ones)
        iou[pairs] = np.minimum(iou[pairs], b)
    return iou


def _getter(table: RleLookup) -> Any:
    cache = getattr(table, "cache", None)
    return cache.__getitem__ if isinstance(cache, list) else table.__getitem__


def _table_sizes(table: RleLookup, rows: list[int]) -> np.ndarray | None:
    """``[h, w]`` of masks ``rows`` of an :class:`~deteval.detection.coco_rles.RleTable` from their images' sizes,
    where every one of those images has a size: the table's masks were checked to be their image's size (or
    made at it from polygons), so reading them from the image spares a pass over the scattered mask dicts."""
    img, image_hw = getattr(table, "img", None), getattr(table, "image_hw", None)
    if not isinstance(img, np.ndarray) or not isinstance(image_hw, np.ndarray):
        return None
    hw = image_hw[img[np.asarray(rows, dtype=np.int64)]].astype(np.int64).reshape(-1, 2)
    return hw if (hw >= 0).all() else None


class _Tags:
    """The masks of several blocks, each block's given a width of its own, so that one ``mask.iou`` call walks
    the runs of the pairs inside a block only (pycocotools gives masks of different sizes −1 before walking
    their runs). Where every mask of a block has one size, that changes no IoU inside the block: the runs
    and ``rleToBbox``'s box depend on the height alone, the width being only where the box's first column
    starts (``xs = w``, before the minimum over the foreground runs, every one of them in a column below
    w): a mask without foreground pixels but with runs keeps a box starting at column ``w`` (+ its block's
    offset), clear of every other box but those of such masks, and any pair with it has IoU 0 either way.
    Block j of a call gets width ``w + j · (max w + 1)``, below 2**32 (rleToBbox reads it as a 32-bit uint).

    A call is left untagged (correct, only slower) where one of its blocks mixes mask sizes (where −1
    against a box that moved would change), and every call where a mask is not an RLE dict with a size of
    two integers (:meth:`of` gives None)."""

    def __init__(
        self,
        h: list[int],
        w: np.ndarray,
        counts: list,
        mixed: np.ndarray,
        n_d: int,
        nd: np.ndarray,
        ng: np.ndarray,
        lazy: LazyCounts | None = None,
    ) -> None:
        self.h, self.w, self.counts, self.mixed, self.n_d, self.nd, self.ng = h, w, counts, mixed, n_d, nd, ng
        self.lazy = lazy

    @classmethod
    def of(
        cls,
        dets: list,
        gts: list,
        nd: np.ndarray,
        ng: np.ndarray,
        hw: np.ndarray | None = None,
        lazy: LazyCounts | None = None,
    ) -> _Tags | None:
        """The sizes (read from the masks unless ``hw`` gives them) and counts of every block's masks, read
        once (C-level passes); ``lazy``: the detections whose counts are read from a text, call by call."""
        if lazy is not None and hw is None:
            return None
        try:
            masks = dets + gts
            counts = list(map(itemgetter("counts"), masks))
            if hw is None:
                sizes = list(map(itemgetter("size"), masks))
                if set(map(len, sizes)) != {2} or set(map(type, chain.from_iterable(sizes))) != {int}:
                    return None
                n = len(sizes)
                hw = np.fromiter(chain.from_iterable(sizes), dtype=np.int64, count=2 * n).reshape(n, 2)
        except (KeyError, TypeError, ValueError, IndexError, OverflowError):
            return None
        nb = nd.shape[0]
        block = np.concatenate([np.repeat(np.arange(nb), nd), np.repeat(np.arange(nb), ng)])
        other = (hw != hw[(np.cumsum(nd) - nd)[block]]).any(axis=1)  # not the size of its block's first mask
        mixed = np.bincount(block[other], minlength=nb) > 0
        return cls(hw[:, 0].tolist(), hw[:, 1], counts, mixed, len(dets), nd, ng, lazy)

    def masks(self, lo: int, hi: int, d0: int, d1: int, g0: int, g1: int) -> tuple[list, list] | None:
        """The tagged masks of blocks ``lo:hi`` (their detections ``d0:d1``, ground truths ``g0:g1``), or None."""
        w_d, w_g = self.w[d0:d1], self.w[self.n_d + g0 : self.n_d + g1]
        w_max = max(int(w_d.max()), int(w_g.max()))
        if (
            self.mixed[lo:hi].any()
            or min(int(w_d.min()), int(w_g.min())) < 0
            or (w_max + 1) * (hi - lo) >= 2**32
        ):
            return None
        offsets = np.arange(hi - lo, dtype=np.int64) * (w_max + 1)
        out = []
        for s0, s1, w, n, lazy in (
            (d0, d1, w_d, self.nd[lo:hi], self.lazy),  # (only detections are read from texts)
            (self.n_d + g0, self.n_d + g1, w_g, self.ng[lo:hi], None),
        ):
            tags = (w + np.repeat(offsets, n)).tolist()
            counts = self.counts[s0:s1]
            if lazy is not None:
                at, texts = lazy.slices(d0, d1)
                deque(map(counts.__setitem__, at, texts), maxlen=0)  # (counts[i] = text, in C)
            out.append([{"size": [h, t], "counts": c} for h, t, c in zip(self.h[s0:s1], tags, counts)])
        return out[0], out[1]


class LazyCounts:
    """The masks of a list that stand there as placeholders, their counts strings still in texts that hold
    many: entry ``pos[k]`` (ascending) has ``texts[which[k]][starts[k]:ends[k]]`` (validated) and size
    ``hw[k]``. pycocotools reads a ``counts`` given as bytes as it reads the string's ASCII encoding
    (``_frString`` encodes a str first)."""

    def __init__(
        self,
        pos: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        hw: np.ndarray,
        texts: list[bytes],
        which: np.ndarray,
    ) -> None:
        self.pos, self.starts, self.ends, self.hw, self.texts, self.which = (
            pos,
            starts,
            ends,
            hw,
            texts,
            which,
        )

    def _range(self, lo: int, hi: int) -> tuple[int, int]:
        return int(np.searchsorted(self.pos, lo)), int(np.searchsorted(self.pos, hi))

    def slices(self, lo: int, hi: int) -> tuple[list[int], list[bytes]]:
        """The entries in ``lo:hi`` that are placeholders (their places from ``lo``) and their counts."""
        k0, k1 = self._range(lo, hi)
        texts = text_slices(self.texts, self.which[k0:k1], self.starts[k0:k1], self.ends[k0:k1])
        return (self.pos[k0:k1] - lo).tolist(), texts

    def made(self, masks: list, lo: int, hi: int) -> list:
        """``masks[lo:hi]`` with the placeholders made into RLE dicts."""
        out = masks[lo:hi]
        at, texts = self.slices(lo, hi)
        k0, _ = self._range(lo, hi)
        for i, size, c in zip(at, self.hw[k0 : k0 + len(at)].tolist(), texts):
            out[i] = {"size": size, "counts": c}
        return out
