"""The COCO metric columns of :class:`~deteval.stats.coco.CocoUnits` for many image weightings at once.

Each (area range, maxDet) slice that a summary number or a per-class AP reads becomes one
:class:`~deteval.core.reweighted.ReweightedLists` (categories as groups, IoU thresholds as variants, items in
pycocotools' ranked order): slices whose precision is read (AP) get the interpolated precision, slices whose
recall only is read (AR1, AR10, ...) get the relevant weight alone (no ranking work at all). npig of a
weighting is its image weights times each image's counted ground truths (one matrix product, exact in
doubles). The summary numbers are then ``np.mean(s[s > -1])`` of the same selections as
:func:`~deteval.detection.coco.summarize`, taken for all weightings at once: the values of the categories with
ground truth, in pycocotools' (threshold, recall level, category) order, summed as one contiguous run per
weighting (numpy's pairwise sum of a row equals that of the same values as a 1-D array) and divided by their
count: each weighting's precision row holds only its categories with ground truth (``packed``), so a run of
consecutive thresholds is one slice of it; the per-category AP takes each category's values as one row (a
transposed copy per group of weightings with as many categories).
Every number equals :meth:`CocoUnits._numbers` on :func:`~deteval.detection.coco_accumulate.accumulate` bit
for bit (tests/test_stats.py).
"""

from __future__ import annotations

import numpy as np

from deteval.core.lists import COCO_EPS
from deteval.core.reweighted import ReweightedLists
from deteval.core.sorting import sorted_unique
from deteval.detection.coco.summary import stat_maxdet, summary_specs
from deteval.detection.coco_accumulate import accumulation_slices
from deteval.detection.coco_params import CocoParams
from deteval.match.coco import MatchTable

__all__ = ["CocoBatch"]

#: bytes of interpolated precision that one call fills per slice: the weightings of a call are as many as
#: keep it in cache from the envelope to the means (COCO 5k: 19 resamples; 64 at once were ~15% slower)
OUT_BYTES = 12 * 2**20

#: (AP or AR, threshold indices, area index, maxDet index, category or None); area/maxDet index None: −1
_Column = tuple[bool, np.ndarray, int | None, int | None, int | None]


class CocoBatch:
    """Summary numbers and per-category AP of ``table`` under many weightings (module docstring).

    ``column`` (rows of ``table``,) the weight column of each row; ``gt_table`` the table whose ground truths
    npig counts (their image index is their weight column in the ground-truth weights)."""

    def __init__(
        self,
        table: MatchTable,
        params: CocoParams,
        compat: str,
        n_classes: int,
        column: np.ndarray,
        gt_table: MatchTable,
        n_images: int,
    ) -> None:
        self.params = params
        self.columns = self.summary_columns(params, compat, n_classes)
        ap_read = {(a, m) for ap, _, a, m, _ in self.columns if ap and a is not None and m is not None}
        read = {(a, m) for _, _, a, m, _ in self.columns if a is not None and m is not None}
        K, A = table.n_cats, table.tp.shape[0]
        valid = (table.npig > 0).T
        self.slices: dict[tuple[int, int], ReweightedLists] = {}
        ranked: dict[int, np.ndarray] = {}  # per maxDet, the rows' weight columns in ranked order
        for m, a, om, _, per_list, tp, ig in accumulation_slices(table, params.max_dets, valid, None, read):
            T = table.tp.shape[1]
            if m not in ranked:
                ranked[m] = column[om]
            self.slices[a, m] = ReweightedLists(
                per_list[:K],
                ranked[m],
                tp.reshape(T, -1),
                ig.reshape(T, -1),
                params.rec_thrs,
                COCO_EPS,
                precision=(a, m) in ap_read,
                reuse_output=True,  # read once by _values before the next call
            )
        if gt_table.gt_img is None or gt_table.gt_cat is None or gt_table.gt_counted is None:
            raise ValueError("this MatchTable was built without its ground-truth columns")
        # npig of a weighting: per (image, category) with counted ground truths, the image's weight times
        # their count per area range, summed by category (pairs sorted by category: a cumulative sum)
        keep = gt_table.gt_cat < K
        # np.unique, without its first-use import of numpy.ma (a cost in each fresh process)
        key = sorted_unique(np.sort(gt_table.gt_cat[keep] * n_images + gt_table.gt_img[keep]))
        pair = np.searchsorted(key, gt_table.gt_cat * n_images + gt_table.gt_img)
        self.gt_count = np.zeros((key.shape[0], A), dtype=np.int64)
        for a in range(A):
            sel = keep & gt_table.gt_counted[a]
            np.add.at(self.gt_count[:, a], pair[sel], 1)
        self.gt_image = key % n_images
        self.gt_bounds = np.searchsorted(key // n_images, np.arange(K + 1), side="left")
        self.shape = (K, A)

    @staticmethod
    def summary_columns(p: CocoParams, compat: str, n_classes: int) -> list[_Column]:
        """The summary numbers, then the per-category AP, as selections (``summarize_value``'s); raises
        NotImplementedError where the parameters need the accumulation path (nothing else does)."""
        specs: list[tuple[bool, float | None, str, int | None, int | None]] = [
            (*s, None) for s in summary_specs(p, compat)
        ]
        md_ap = stat_maxdet(p, compat, "ap")
        specs += [(True, None, "all", md_ap, k) for k in range(n_classes)]
        out: list[_Column] = []
        for ap, iou_thr, area, max_det, k in specs:
            aind = [i for i, lbl in enumerate(p.area_lbl) if lbl == area]
            mind = [i for i, m in enumerate(p.max_dets) if m == max_det]
            thr = np.arange(p.iou_thrs.shape[0]) if iou_thr is None else np.where(iou_thr == p.iou_thrs)[0]
            if max_det is None or not aind or not mind or not thr.size:
                out.append((bool(ap), thr, None, None, k))  # pycocotools' −1
            elif len(aind) > 1 or len(mind) > 1:
                raise NotImplementedError("repeated area labels or maxDets: use the accumulation path")
            else:
                out.append((bool(ap), thr, aind[0], mind[0], k))
        return out

    def _npig(self, gt_weights: np.ndarray) -> np.ndarray:
        """(B, K, A) npig of the weightings (integers)."""
        B, (K, A) = gt_weights.shape[0], self.shape
        if B > 1 and gt_weights.min(initial=1) == 1 and gt_weights.max(initial=1) == 1:
            # every ground truth once (a randomization test's rounds): one row, repeated
            return np.repeat(self._npig(gt_weights[:1]), B, axis=0)
        out = np.empty((B, K, A), dtype=np.int64)
        g = np.take(gt_weights, self.gt_image, axis=1)
        cum = np.zeros((B, g.shape[1] + 1), dtype=np.int64)
        for a in range(A):
            np.cumsum(g * self.gt_count[:, a], axis=1, out=cum[:, 1:])
            out[:, :, a] = cum[:, self.gt_bounds[1:]] - cum[:, self.gt_bounds[:-1]]
        return out

    def _rows_per_call(self, copies: int) -> int:
        """Weightings evaluated together: as many as keep each slice's precision output (``copies`` of
        (rows, T, R, K) doubles) within ``OUT_BYTES``."""
        per_row = max(
            (
                sl.n_variants * sl.levels.shape[0] * sl.n_groups * 8
                for sl in self.slices.values()
                if sl.precision
            ),
            default=0,
        )
        return max(1, OUT_BYTES // (per_row * copies)) if per_row else 1 << 30

    def __call__(self, weights: np.ndarray, gt_weights: np.ndarray) -> np.ndarray:
        """(B, columns) metric values (NaN for pycocotools' −1) of B weightings: ``weights`` (B, weight
        columns) of the rows, ``gt_weights`` (B, images) of the ground truths."""
        return self._in_calls(weights, gt_weights, complements=False)[0]

    def complements(self, weights: np.ndarray, gt_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of ``weights`` (0s and 1s) and of 1 − ``weights`` (a randomization round's two
        pseudo-systems), both with the ground-truth weights ``gt_weights``: each slice's counts are taken
        once for both (:meth:`ReweightedLists.evaluate_complements`); the numbers of two calls."""
        values, values_c = self._in_calls(weights, gt_weights, complements=True)
        return values, values_c

    def _in_calls(self, weights: np.ndarray, gt_weights: np.ndarray, complements: bool) -> list[np.ndarray]:
        """:meth:`__call__` (one array) or :meth:`complements` (two), :meth:`_rows_per_call` weightings per
        call of the slices."""
        w, gt_w = np.asarray(weights, dtype=np.int64), np.asarray(gt_weights, dtype=np.int64)
        rows = self._rows_per_call(2 if complements else 1)
        parts = []
        for i in range(0, max(w.shape[0], 1), rows):
            npig = self._npig(gt_w[i : i + rows])
            if complements:
                pairs = {
                    key: sl.evaluate_complements(w[i : i + rows], npig[:, :, key[0]], packed=True)
                    for key, sl in self.slices.items()
                }
                parts.append(
                    [self._values(npig, {key: pair[j] for key, pair in pairs.items()}) for j in (0, 1)]
                )
            else:
                lists = {
                    key: sl.evaluate(w[i : i + rows], npig[:, :, key[0]], packed=True)
                    for key, sl in self.slices.items()
                }
                parts.append([self._values(npig, lists)])
        return parts[0] if len(parts) == 1 else [np.concatenate(col) for col in zip(*parts)]

    def _values(
        self, npig: np.ndarray, lists: dict[tuple[int, int], tuple[np.ndarray | None, np.ndarray]]
    ) -> np.ndarray:
        """(B, columns) values from npig (B, K, A) and each slice's (precision or None, hits); the precision
        rows are packed (:meth:`ReweightedLists.evaluate`): the categories with ground truth only."""
        B = npig.shape[0]
        prec: dict[tuple[int, int], np.ndarray] = {}
        rec: dict[tuple[int, int], np.ndarray] = {}
        for (sa, sm), (q, hits) in lists.items():
            n_pos = npig[:, :, sa]
            if q is not None:
                prec[sa, sm] = q  # (B, T, R, K), packed rows
            with np.errstate(divide="ignore", invalid="ignore"):  # categories without truth: left out below
                rec[sa, sm] = hits / n_pos[:, None, :]  # (B, T, K)
        out = np.full((B, len(self.columns)), np.nan)
        per_class: dict[tuple[int, int, bytes], np.ndarray] = {}
        positions: dict[tuple[tuple[int, ...], bytes], np.ndarray] = {}  # (shape, mask): the values kept
        for j, (ap, thr, a, m, k) in enumerate(self.columns):
            if a is None or m is None or (a, m) not in (prec if ap else rec):
                continue
            has = npig[:, :, a] > 0  # (B, K): the categories whose values are > −1
            if ap:
                if k is None:
                    out[:, j] = _packed_means(prec[a, m], has, thr)
                    continue
                key = (a, m, thr.tobytes())
                if key not in per_class:
                    per_class[key] = _packed_class_means(prec[a, m], has, thr)
                out[:, j] = per_class[key][:, k]
                continue
            src = rec[a, m]
            sel = (
                src
                if thr.shape[0] == src.shape[1] and (thr == np.arange(thr.shape[0])).all()
                else src[:, thr]
            )
            if k is None:
                out[:, j] = _masked_means(sel, has, positions)
                continue
            key = (a, m, thr.tobytes())
            if key not in per_class:  # every category's values in (threshold, level) order, one row each
                per_class[key] = _row_means(np.moveaxis(sel, -1, 1).reshape(B, src.shape[-1], -1))
            out[:, j] = np.where(has[:, k], per_class[key][:, k], np.nan)
        return out


def _packed_rows(q: np.ndarray, has: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The rows of packed ``q`` (B, T, R, K) by their number g of categories with ground truth (``has``
    (B, K)): (g, rows), rows in order."""
    g = np.count_nonzero(has, axis=1)
    return [(n, np.flatnonzero(g == n)) for n in np.flatnonzero(np.bincount(g)).tolist()]


def _packed_means(q: np.ndarray, has: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """Per row b: the mean of ``q[b][thr][..., has[b]]`` flattened in C order (NaN if empty), ``q`` packed
    (its row b holds the (T, R, g) values of the categories in ``has[b]`` at its start): the thresholds
    ``thr`` of a row are one contiguous run of it when consecutive (every threshold, or one), summed as one
    1-D array like ``np.mean`` (pairwise)."""
    B, R = q.shape[0], q.shape[2]
    flat = q.reshape(B, -1)
    out = np.full(B, np.nan)
    run = bool((np.diff(thr) == 1).all())
    for g, rows in _packed_rows(q, has):
        if g == 0:
            continue
        if not run:
            x = flat[rows[:, None], (thr[:, None] * (R * g) + np.arange(R * g)).reshape(-1)]
            out[rows] = x.sum(axis=1) / x.shape[1]
            continue
        lo, hi = int(thr[0]) * R * g, (int(thr[-1]) + 1) * R * g
        if rows.shape[0] == B:
            out[:] = flat[:, lo:hi].sum(axis=1) / (hi - lo)
            continue
        for b in rows.tolist():  # each row's run as it lies (no copy of the rows)
            out[b] = flat[b, lo:hi].sum() / (hi - lo)
    return out


def _packed_class_means(q: np.ndarray, has: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """(B, K) per row and category with ground truth the mean of its values ``q[b][thr][..., k]`` in
    (threshold, level) order, each summed as a contiguous row like ``np.mean``; NaN for the others. ``q``
    packed as in :func:`_packed_means`."""
    B, T, R, K = q.shape
    flat = q.reshape(B, -1)
    out = np.full((B, K), np.nan)
    every = thr.shape[0] == T and bool((thr == np.arange(T)).all())
    for g, rows in _packed_rows(q, has):
        if g == 0:
            continue
        # all rows at once, or each row alone: a slice of the rows, never a copy before the transposed one
        for lo, hi in [(0, B)] if rows.shape[0] == B else [(b, b + 1) for b in rows.tolist()]:
            x = flat[lo:hi, : T * R * g].reshape(-1, T, R, g)
            per = np.ascontiguousarray(np.moveaxis(x if every else x[:, thr], -1, 1)).reshape(hi - lo, g, -1)
            part = out[lo:hi]
            part[has[lo:hi]] = (per.sum(axis=-1) / per.shape[-1]).reshape(-1)
    return out


def _row_means(x: np.ndarray) -> np.ndarray:
    """Means along the last axis, each row summed as a contiguous 1-D array (``np.mean``'s order)."""
    x = np.ascontiguousarray(x)
    return x.sum(axis=-1) / max(x.shape[-1], 1)


def _masked_means(
    sel: np.ndarray, has: np.ndarray, positions: dict[tuple[tuple[int, ...], bytes], np.ndarray]
) -> np.ndarray:
    """Per row b: the mean of ``sel[b][..., has[b]]`` flattened in C order (NaN if empty): the rows with
    every category at once, in place; each other row from one gather of its values (the positions made once
    per distinct (shape, mask) in ``positions``), where copying its group's rows and then their columns cost twice the memory traffic."""
    B = sel.shape[0]
    out = np.full(B, np.nan)
    flat = np.ascontiguousarray(sel).reshape(B, -1)
    full = has.all(axis=1)
    if full.all():
        return _row_means(flat)
    if full.any():
        out[full] = _row_means(flat[full])
    for b in np.flatnonzero(~full).tolist():
        key = (sel.shape[1:], has[b].tobytes())
        idx = positions.get(key)
        if idx is None:
            idx = positions[key] = np.flatnonzero(np.broadcast_to(has[b], sel.shape[1:]))
        if idx.shape[0]:
            out[b] = np.take(flat[b], idx).sum() / idx.shape[0]
    return out
