"""Many ranked lists in one set of columns: the segmented engine under every protocol.

A :class:`RankedLists` holds any number of lists (VOC classes, COCO threshold × category slices, TREC topics,
bootstrap resamples) as flat arrays sorted once by (list, rank): per item its outcome (``RELEVANT`` 1,
``NONRELEVANT`` 0, ``IGNORED`` -1) and score, per list ``n_pos``. Every measure is a few vectorised passes over
all lists at once and returns one value per list (or a row of values per list).

Definitions, per list (``n`` = n_pos; ranks count the non-ignored items only, 1-based; ``tp(r)``/``fp(r)`` the
relevant / non-relevant items among the first r ranks; a *hit* is a rank holding a relevant item):

* P(r) = tp(r) / (tp(r) + fp(r) + eps) (eps = 0, or ``np.spacing(1)`` as pycocotools); R(r) = tp(r) / n
  (0 when n = 0).
* Envelope env(r) = max{P(s) : s >= r}. Precision only rises at a hit, so env at a hit is the maximum over the
  hits at or after it, and every interpolated value below is read at hits only.
* Interpolated precision at level x = max{P(r) : R(r) >= x}, 0 if no rank reaches x: the envelope at the
  c-th hit, c the smallest count with ``fl(c / n) >= x`` (:func:`min_counts_for_recall`); this is the value of
  pycocotools' ``searchsorted(rc, x, side="left")`` and of the devkit's ``max(prec(rec >= x))``.

==================  =======================================================================================
AP method           definition (per list)
==================  =======================================================================================
``voc07``           ``ap = ap + p_interp(t) / n_levels`` over the levels in order (VOCevaldet.m); pass the
                    levels explicitly (the devkit's ``0:0.1:1``, py-faster-rcnn's ``np.arange``).
``all_points``      VOCap.m: Σ over hits of (R(hit) − R(previous hit)) · env(hit), plus (1 − R(last)) · 0
                    when R(last) < 1, summed with ``np.sum`` (numpy's pairwise order, as the Python ports).
``coco101``         ``np.mean`` of p_interp at ``np.linspace(0, 1, 101)`` with eps = ``np.spacing(1)``.
``uninterpolated``  (1 / n) Σ over hits of P(hit), summed in rank order (trec_eval's loop).
==================  =======================================================================================

AP of a list with n = 0 is ``if_no_positives``. Weights: an item of integer weight w counts as w adjacent
copies of itself (w = 0 drops it). The copies are laid out once, when the lists are built, so every measure
equals the measure of the repeated list bit for bit; memory grows with Σw, the size of the list they stand for.

Tie policy (how equal scores are ordered inside a list), chosen when the lists are built:
``"stable"`` (input position), ``"quicksort"`` (numpy's unstable ``argsort(-scores)`` per list, as
py-faster-rcnn), ``"presorted"`` (the input order is the ranking), or a ``tiebreak`` key sorted ascending among
equal scores (trec_eval's docno descending as integer ranks; pycocotools' image order).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from deteval.core.levels import COCO_RECALL_LEVELS, VOC_DEVKIT_LEVELS
from deteval.core.outcomes import IGNORED, RELEVANT, TiePolicy, as_outcomes, as_scores
from deteval.core.prf import f_beta
from deteval.core.sorting import lex_order
from deteval.errors import ValidationError, first_true

APMethod = Literal["voc07", "all_points", "coco101", "uninterpolated"]
AP_METHODS: tuple[str, ...] = ("voc07", "all_points", "coco101", "uninterpolated")
APDenominator = Literal["n_pos", "min_k_n_pos", "retrieved"]
AP_AT_K_DENOMINATORS: tuple[str, ...] = ("n_pos", "min_k_n_pos", "retrieved")

#: pycocotools' precision denominator term.
COCO_EPS = float(np.spacing(1))


def safe_div(num: ArrayLike, den: ArrayLike) -> np.ndarray:
    """num / den elementwise, 0 where den is 0."""
    n = np.asarray(num, dtype=np.float64)
    d = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(n, d).shape, dtype=np.float64)
    np.divide(n, d, out=out, where=d != 0)
    return out


def min_counts_for_recall(levels: ArrayLike, n_pos: ArrayLike) -> np.ndarray:
    """(L, R) smallest integer c >= 0 with ``fl(c / n_pos[l]) >= levels[r]`` (n_pos + 1 when no c <= n_pos
    does, and for n_pos = 0: nothing can be recalled). Exact: starts from ceil(x·n) and corrects by ±1."""
    x = np.asarray(levels, dtype=np.float64)[None, :]
    n = np.asarray(n_pos, dtype=np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.clip(np.ceil(x * n), 0, n + 1)
        for _ in range(4):
            c = c - ((c >= 1) & ((c - 1) / n >= x))
            c = c + ((c <= n) & ~(c / n >= x))
    c = np.where(n == 0, 1, c)  # n = 0: no count reaches any level (recall is 0 by definition)
    return c.astype(np.int64)


def mean_in_level_order(values: np.ndarray) -> np.ndarray:
    """The mean over the first axis (the recall levels) added one level after the other, as VOCevaldet.m's
    ``ap = ap + p / n_levels`` (``np.mean`` adds pairwise, with other last bits); 0 without levels."""
    out = np.zeros(values.shape[1:], dtype=np.float64)
    for row in values:
        out = out + row / float(values.shape[0])
    return out


def _segment_ids(counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(counts.shape[0]), counts)


#: Set bits of every byte value (the bit counts where numpy has no ``np.bitwise_count``, before 2.0)
_BYTE_BITS = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)


def true_before(flags: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """(P,) int64: for every position p (0 <= p <= len(flags)), the number of True values in ``flags[:p]``.

    The flags are packed 64 to a word (bit i of a word is item i of its 64) and the words' bit counts summed
    once, so the pass over the items reads one bit each; a position then adds the bits of its own word below
    it. Exact integer counts, as ``np.cumsum(flags)`` would give at the positions."""
    packed = np.packbits(flags, bitorder="little")
    pos = np.asarray(positions, dtype=np.int64)
    if not packed.shape[0]:  # (no flags: every position is 0)
        return np.zeros(pos.shape[0], dtype=np.int64)
    if not hasattr(np, "bitwise_count"):  # (numpy < 2: bytes and a table of their bit counts)
        full = np.zeros(packed.shape[0] + 1, dtype=np.int64)
        np.cumsum(_BYTE_BITS[packed], out=full[1:])
        byte = pos >> 3
        # (clipped: p at the end)
        low = packed.take(byte, mode="clip") & ((1 << (pos & 7)) - 1).astype(np.uint8)
        return full[byte] + _BYTE_BITS[low]
    padded = np.zeros(-(-packed.shape[0] // 8) * 8, dtype=np.uint8)
    padded[: packed.shape[0]] = packed
    words = padded.view("<u8")
    full = np.zeros(words.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bitwise_count(words), out=full[1:])
    word = pos >> 6
    below = np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)) - np.uint64(1)
    low = words.take(word, mode="clip") & below  # (clipped: a position at the end, whose mask is 0)
    return full[word] + np.bitwise_count(low)


def segment_suffix_max(values: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """max(values[p:end of p's segment]) for every p; ``seg`` non-decreasing (contiguous segments).

    Exact and loop-free: values become their integer rank among the distinct values, offset by the segment,
    so that one ``np.maximum.accumulate`` over the reversed array never carries a maximum across segments.
    """
    if values.size == 0:
        return values.copy()
    uniq, vr = np.unique(values, return_inverse=True)
    d = np.int64(uniq.shape[0])
    rseg = (seg[-1] - seg)[::-1].astype(np.int64)
    key = rseg * d + vr.astype(np.int64).reshape(-1)[::-1]
    acc = np.maximum.accumulate(key)
    return uniq[acc - rseg * d][::-1]


def _segment_sum_pairwise(terms: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per segment ``np.sum`` (numpy's pairwise order), bit for bit: one call per non-empty segment, because
    ``np.add.reduceat`` adds left to right and so differs in the last bits."""
    out = np.zeros(counts.shape[0], dtype=np.float64)
    starts = (np.cumsum(counts) - counts).tolist()
    for i in np.flatnonzero(counts > 0).tolist():
        out[i] = np.sum(terms[starts[i] : starts[i] + int(counts[i])])
    return out


def envelope_at_units(
    precision: np.ndarray,
    counts: np.ndarray,
    unit_start: np.ndarray,
    n_units: np.ndarray,
    run_of_unit: np.ndarray | None = None,
    run_end: np.ndarray | None = None,
    *,
    ascending: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(L, R) interpolated precision: the envelope at the c-th unit of relevant weight of each list, c from
    ``counts`` (c = 0 reads the first), 0 where the list has fewer than c units; whether that unit exists;
    and the run holding it (its index among the runs, meaningful where it exists).

    A *run* is a stretch of units along which the precision only rises, so that the envelope over it is that
    at its end: ``precision`` (H,) is P at every run's end, the lists' runs one after the other, list l's
    ending before ``run_end[l]``. List l's units are ``unit_start[l] : unit_start[l] + n_units[l]``, unit u
    in run ``run_of_unit[u]`` (None: each unit is a run, as the hits of lists laid out item by item). Read by
    block maxima between the sampled runs and one running maximum over the R blocks (so the full envelope is
    never built). ``ascending``: the counts are known to be non-decreasing along each row (else they are
    taken ascending and the results put back in their order)."""
    L, R = counts.shape
    srt = None
    if not ascending and R > 1 and np.any(counts[:, 1:] < counts[:, :-1]):
        srt = np.argsort(counts, axis=1, kind="stable")
        counts = np.take_along_axis(counts, srt, axis=1)
    cc = np.maximum(counts, 1)
    valid = cc <= n_units[:, None]
    end = (unit_start + n_units)[:, None]
    # the cc-th unit of the list, the list's end where it has fewer (that unit would be at or past it)
    pos = cc
    pos += (unit_start - 1)[:, None]
    np.minimum(pos, end, out=pos)
    if run_of_unit is not None and run_end is not None:  # its run (past a list's units: a later list's run)
        end = run_end[:, None]
        pos = np.minimum(np.append(run_of_unit, precision.shape[0])[pos], end)
    pr_ext = np.concatenate((precision, [-np.inf]))
    bounds = np.concatenate([pos, end], axis=1).reshape(-1)
    block = np.maximum.reduceat(pr_ext, bounds).reshape(L, R + 1)[:, :R]
    block = np.where(valid, block, -np.inf)
    env = np.maximum.accumulate(block[:, ::-1], axis=1)[:, ::-1]
    q = np.where(valid, env, 0.0)
    if srt is not None:
        inv = np.argsort(srt, axis=1)
        q, valid = np.take_along_axis(q, inv, axis=1), np.take_along_axis(valid, inv, axis=1)
        pos = np.take_along_axis(pos, inv, axis=1)
    return q, valid, pos


@dataclass(frozen=True, eq=False)
class RankedLists:
    """L ranked lists as flat columns sorted by (list, rank); see the module docstring.

    Items of list ``l`` are ``start[l] : start[l] + count[l]`` (ignored items included, in rank order).
    ``order[i]`` is the input index of sorted item i (None when the input was already in this order).
    """

    n_pos: np.ndarray  # (L,) int64
    count: np.ndarray  # (L,) int64 items per list
    is_relevant: np.ndarray  # (N,) bool
    is_ignored: np.ndarray | None  # (N,) bool, None when no item is ignored
    scores: np.ndarray | None = None  # (N,) float64
    order: np.ndarray | None = None  # (N,) input index

    @property
    def outcome(self) -> np.ndarray:
        """(N,) int8 outcome of every sorted item: 1 relevant, 0 non-relevant, -1 ignored."""
        out = self.is_relevant.astype(np.int8)
        if self.is_ignored is not None:
            out[self.is_ignored] = IGNORED
        return out

    @property
    def n_lists(self) -> int:
        return int(self.n_pos.shape[0])

    def __len__(self) -> int:
        return self.n_lists

    @cached_property
    def start(self) -> np.ndarray:
        return np.cumsum(self.count) - self.count

    # --- ranks (ignored items removed) --------------------------------------------------------------------

    @cached_property
    def _any_ignored(self) -> bool:
        return self.is_ignored is not None and bool(self.is_ignored.any())

    @cached_property
    def ranked_items(self) -> np.ndarray:
        """Sorted-item index of every rank (ignored items occupy no rank)."""
        if not self._any_ignored:
            return np.arange(self.is_relevant.shape[0])
        return np.flatnonzero(~self.is_ignored)  # type: ignore[operator]

    @cached_property
    def n_ranked(self) -> np.ndarray:
        """(L,) ranks per list."""
        if not self._any_ignored:
            return self.count
        return np.bincount(_segment_ids(self.count)[self.ranked_items], minlength=self.n_lists)

    @cached_property
    def rank_start(self) -> np.ndarray:
        return np.cumsum(self.n_ranked) - self.n_ranked

    @cached_property
    def rank_list(self) -> np.ndarray:
        """(N_r,) list of every rank."""
        return _segment_ids(self.n_ranked)

    @cached_property
    def rank(self) -> np.ndarray:
        """(N_r,) 1-based rank inside its list."""
        return (
            np.arange(self.rank_list.shape[0], dtype=np.int64) - np.repeat(self.rank_start, self.n_ranked) + 1
        )

    @cached_property
    def relevant(self) -> np.ndarray:
        """(N_r,) bool: the rank holds a relevant item."""
        return self.is_relevant if not self._any_ignored else self.is_relevant[self.ranked_items]

    @cached_property
    def tp(self) -> np.ndarray:
        """(N_r,) tp(r): relevant items among the first r ranks of the list (exact integers)."""
        c = np.cumsum(self.relevant, dtype=np.int64)
        has = self.n_ranked > 0
        offs = np.zeros(self.n_lists, dtype=np.int64)
        offs[has] = (c - self.relevant)[self.rank_start[has]]
        return c - np.repeat(offs, self.n_ranked)

    @cached_property
    def fp(self) -> np.ndarray:
        """(N_r,) fp(r) = r − tp(r)."""
        return self.rank - self.tp

    def precision(self, eps: float = 0.0) -> np.ndarray:
        """(N_r,) P(r) = tp / (tp + fp + eps)."""
        return self.tp / (self.tp + self.fp + eps)

    def recall(self) -> np.ndarray:
        """(N_r,) R(r) = tp / n_pos, 0 where n_pos is 0."""
        return safe_div(self.tp, self.n_pos[self.rank_list])

    def envelope(self, eps: float = 0.0) -> np.ndarray:
        """(N_r,) env(r) = max{P(s) : s >= r} within the list."""
        return segment_suffix_max(self.precision(eps), self.rank_list)

    # --- hits (ranks holding a relevant item) ---------------------------------------------------------------

    @cached_property
    def hit_items(self) -> np.ndarray:
        """(N_h,) sorted-item index of every hit."""
        return np.flatnonzero(self.is_relevant)

    @cached_property
    def hit_list(self) -> np.ndarray:
        return _segment_ids(self.n_hits)

    @cached_property
    def n_hits(self) -> np.ndarray:
        """(L,) relevant items retrieved per list (tp at the last rank)."""
        # the lists are contiguous: the hits before each list's end less those before its start, by placing the
        # lists' ends among the hits (every measure locates the hits anyway; a segmented sum of the flags reads
        # every item again, widened to int64)
        edges = np.searchsorted(self.hit_items, np.append(self.start, self.is_relevant.shape[0]))
        return np.diff(edges).astype(np.int64, copy=False)

    @cached_property
    def hit_start(self) -> np.ndarray:
        return np.cumsum(self.n_hits) - self.n_hits

    @cached_property
    def hit_tp(self) -> np.ndarray:
        """(N_h,) tp at each hit: 1, 2, ... within its list."""
        return np.arange(self.hit_items.shape[0], dtype=np.int64) - self.hit_start[self.hit_list] + 1

    @cached_property
    def hit_rank(self) -> np.ndarray:
        """(N_h,) rank of each hit (ignored items before it not counted)."""
        items = self.hit_items
        starts = self.start[self.hit_list]
        if not self._any_ignored:
            return items - starts + 1
        assert self.is_ignored is not None  # (_any_ignored)
        # the ranks before a hit are its items less the ignored ones: those before each hit and before its list's
        # start counted on the flags packed 8 to a byte (one pass over the items, then a read per hit)
        before = true_before(self.is_ignored, np.append(items, self.start))
        k = items.shape[0]
        return items - starts + 1 - (before[:k] - before[k:].take(self.hit_list))

    def hit_precision(self, eps: float = 0.0) -> np.ndarray:
        """(N_h,) P at each hit, tp / (rank + eps) (rank = tp + fp exactly)."""
        return self.hit_tp / (self.hit_rank + eps)

    def envelope_at_counts(self, counts: np.ndarray, eps: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """For (L, R) counts c: the envelope at the c-th hit of each list (c = 0 reads the first hit), 0 where
        the list has fewer than c hits; and whether that hit exists. Read by block maxima between the
        sampled hits and one running maximum over the R blocks (so the full envelope is never built)."""
        c = np.asarray(counts, dtype=np.int64)
        q, valid, _ = envelope_at_units(self.hit_precision(eps), c, self.hit_start, self.n_hits)
        return q, valid

    # --- measures ---------------------------------------------------------------------------------------------

    def counts_for_recall(self, levels: ArrayLike) -> np.ndarray:
        """(L, R) :func:`min_counts_for_recall` of every list, computed once per distinct n_pos (and kept for
        the last levels asked, which the precision and the scores at those levels share)."""
        lv = np.asarray(levels, dtype=np.float64)
        memo = self.__dict__.get("_counts_memo")
        if memo is not None and np.array_equal(memo[0], lv):
            return memo[1]
        uniq, inv = np.unique(self.n_pos, return_inverse=True)
        c = min_counts_for_recall(lv, uniq)[inv.reshape(-1)]
        self.__dict__["_counts_memo"] = (lv.copy(), c)
        return c

    def interpolated_precision(self, levels: ArrayLike, eps: float = 0.0) -> np.ndarray:
        """(L, R) max{P(r) : R(r) >= x} for every level x, 0 where no rank reaches x."""
        return self.precision_and_items(levels, eps, items=False)[0]

    def precision_and_items(
        self,
        levels: ArrayLike,
        eps: float = 0.0,
        *,
        items: bool = True,
        counts: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`interpolated_precision` and :meth:`sampled_items` at the same ``levels`` (the same numbers),
        the hit each level reads located once for both; ``items=False``: the precision only (None).
        ``counts``: :meth:`counts_for_recall` of these levels, (L, R), where the caller has them (many sets of
        lists over the same n_pos: :func:`min_counts_for_recall` made once for all of them)."""
        lv = np.asarray(levels, dtype=np.float64)
        c = self.counts_for_recall(lv) if counts is None else counts
        # (the counts of ascending levels ascend: min_counts_for_recall is non-decreasing in the level)
        ascending = lv.ndim == 1 and bool(np.all(lv[1:] >= lv[:-1]))
        q, valid, pos = envelope_at_units(
            self.hit_precision(eps), c, self.hit_start, self.n_hits, ascending=ascending
        )
        if not items:
            return q, None
        if self.hit_items.size:
            out = np.where(valid, self.hit_items.take(pos, mode="clip"), -1)  # (clipped: only where valid)
        else:
            out = np.full(c.shape, -1, dtype=np.int64)
        # a count is 0 only at a level <= 0 (no fl(0 / n) >= x otherwise): those columns alone are read
        zero = np.flatnonzero(lv <= 0) if lv.ndim == 1 else np.arange(c.shape[1])
        if zero.size:
            out[:, zero] = self._first_row_at_zero(c[:, zero], out[:, zero])
        return q, out

    def _first_row_at_zero(self, c: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out`` with the list's first row (-1 for an empty list) where the count is 0."""
        first = np.where(self.count > 0, self.start, -1)[:, None]
        return np.where(c == 0, np.broadcast_to(first, c.shape), out)

    def sampled_items(self, levels: ArrayLike) -> np.ndarray:
        """(L, R) sorted-item index of the first row whose recall reaches each level, -1 if none.

        Rows are all items, ignored ones included (pycocotools keeps ignored detections as rows repeating the
        previous counts), so a level <= 0 is reached at the list's first row."""
        c = self.counts_for_recall(levels)
        valid = (c >= 1) & (c <= self.n_hits[:, None])
        if self.hit_items.size:
            out = np.where(valid, self.hit_items[np.where(valid, self.hit_start[:, None] + c - 1, 0)], -1)
        else:
            out = np.full(c.shape, -1, dtype=np.int64)
        return self._first_row_at_zero(c, out)

    def scores_at_levels(self, levels: ArrayLike) -> np.ndarray:
        """(L, R) score of the row :meth:`sampled_items` picks, 0 where none (pycocotools' ``scores``)."""
        idx = self.sampled_items(levels)
        if self.scores is None:
            raise ValidationError("these lists were built without scores")
        sc = np.concatenate((self.scores, [0.0]))
        return np.where(idx >= 0, sc[idx], 0.0)

    def average_precision(
        self,
        method: APMethod = "all_points",
        *,
        levels: ArrayLike | None = None,
        if_no_positives: float = 0.0,
    ) -> np.ndarray:
        """(L,) AP of every list by ``method`` (module table); ``if_no_positives`` where n_pos is 0.

        ``levels`` are the recall levels of ``voc07`` (default :data:`VOC_DEVKIT_LEVELS`) and ``coco101``
        (default :data:`COCO_RECALL_LEVELS`)."""
        if method == "voc07":
            lv = np.asarray(VOC_DEVKIT_LEVELS if levels is None else levels, dtype=np.float64)
            ap = mean_in_level_order(self.interpolated_precision(lv).T)
        elif method == "coco101":
            lv = np.asarray(COCO_RECALL_LEVELS if levels is None else levels, dtype=np.float64)
            ap = np.mean(self.interpolated_precision(lv, COCO_EPS), axis=1)
        elif method == "all_points":
            ap = self._ap_all_points()
        elif method == "uninterpolated":
            ap = safe_div(self._hit_sum(self.hit_precision()), self.n_pos)
        else:
            raise ValidationError(f"unknown AP method {method!r}; choose one of {', '.join(AP_METHODS)}")
        return np.where(self.n_pos == 0, float(if_no_positives), ap)

    def _hit_sum(self, values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Per-list sum over hits in rank order (``np.bincount`` adds in row order)."""
        if mask is None:
            return np.bincount(self.hit_list, weights=values, minlength=self.n_lists)
        return np.bincount(self.hit_list[mask], weights=values[mask], minlength=self.n_lists)

    def _ap_all_points(self) -> np.ndarray:
        n = self.n_pos.astype(np.float64)
        hl = self.hit_list
        with np.errstate(divide="ignore", invalid="ignore"):
            rec = self.hit_tp / n[hl]
            prev = (self.hit_tp - 1) / n[hl]
        env = segment_suffix_max(self.hit_precision(), hl)
        # the padded end: (1 - R(last)) * 0 when the last recall is below 1 (an extra term changes np.sum's
        # grouping, so it is kept exactly where VOCap's array has it)
        with np.errstate(divide="ignore", invalid="ignore"):
            last = np.where(self.n_hits > 0, self.n_hits / n, 0.0)
        tail = (last != 1.0).astype(np.int64)
        counts = self.n_hits + tail
        terms = np.zeros(int(counts.sum()), dtype=np.float64)
        t_start = np.cumsum(counts) - counts
        slot = t_start[hl] + (self.hit_tp - 1)
        terms[slot] = (rec - prev) * env
        tails = np.flatnonzero(tail)
        terms[t_start[tails] + self.n_hits[tails]] = (1.0 - last[tails]) * 0.0
        return _segment_sum_pairwise(terms, counts)

    def tp_at(self, k: ArrayLike) -> np.ndarray:
        """(L,) tp(k) (k a number or one per list); ranks beyond a list's end add nothing."""
        kk = np.minimum(np.broadcast_to(np.asarray(k, dtype=np.int64), (self.n_lists,)), self.n_ranked)
        ok = kk > 0
        out = np.zeros(self.n_lists, dtype=np.int64)
        out[ok] = self.tp[self.rank_start[ok] + kk[ok] - 1]
        return out

    def precision_at(self, k: int) -> np.ndarray:
        """(L,) P@k = tp(k) / k (divides by k even when the list is shorter, as trec_eval)."""
        return self.tp_at(k) / float(k)

    def recall_at(self, k: int) -> np.ndarray:
        """(L,) R@k = tp(k) / n_pos, 0 where n_pos is 0."""
        return safe_div(self.tp_at(k), self.n_pos)

    def r_precision(self) -> np.ndarray:
        """(L,) R-precision = break-even point = tp(n_pos) / n_pos (0 where n_pos is 0)."""
        return safe_div(self.tp_at(self.n_pos), self.n_pos)

    break_even_point = r_precision

    def first_hit_rank(self) -> np.ndarray:
        """(L,) rank of the first relevant item, 0 if none."""
        out = np.zeros(self.n_lists, dtype=np.int64)
        has = self.n_hits > 0
        out[has] = self.hit_rank[self.hit_start[has]]
        return out

    def reciprocal_rank(self, k: int | None = None) -> np.ndarray:
        """(L,) 1 / rank of the first relevant item if within k (k None: anywhere), else 0."""
        first = self.first_hit_rank()
        ok = first > 0 if k is None else (first > 0) & (first <= k)
        return safe_div(ok.astype(np.float64), np.where(ok, first, 1))

    def average_precision_at(self, k: int, denominator: APDenominator = "n_pos") -> np.ndarray:
        """(L,) AP@k = (1 / D) Σ_{hits r <= k} P(r), summed in rank order; D = n_pos, min(k, n_pos) or the hits
        within k (``"retrieved"``); 0 where D is 0."""
        mask = self.hit_rank <= k
        s = self._hit_sum(self.hit_precision(), mask)
        if denominator == "n_pos":
            den = self.n_pos
        elif denominator == "min_k_n_pos":
            den = np.minimum(k, self.n_pos)
        elif denominator == "retrieved":
            den = np.bincount(self.hit_list[mask], minlength=self.n_lists)
        else:
            raise ValidationError(
                f"unknown AP@k denominator {denominator!r}; choose one of {', '.join(AP_AT_K_DENOMINATORS)}"
            )
        return safe_div(s, den)

    def f_curve(self, beta: float = 1.0) -> np.ndarray:
        """(N_r,) F_beta(P(r), R(r)) at every rank."""
        return np.asarray(f_beta(self.precision(), self.recall(), beta), dtype=np.float64).reshape(-1)

    def f_max(self, beta: float = 1.0) -> np.ndarray:
        """(L,) max over ranks of F_beta(P(r), R(r)); 0 for an empty list."""
        f = self.f_curve(beta)
        out = np.zeros(self.n_lists, dtype=np.float64)
        has = self.n_ranked > 0
        if has.any():
            out[has] = np.maximum.reduceat(f, self.rank_start[has])
        return out


# --- building ------------------------------------------------------------------------------------------------


def _as_counts(values: ArrayLike, n: int, what: str) -> np.ndarray:
    """Non-negative integers, one per list or item (a scalar is repeated); a negative one names its index."""
    arr = np.asarray(values)
    if arr.ndim == 0:
        arr = np.full(n, arr)
    if arr.shape != (n,):
        raise ValidationError(f"{what} must hold one count per entry ({n}), got shape {arr.shape}")
    if arr.size and (
        arr.dtype == np.bool_
        or not np.issubdtype(arr.dtype, np.number)
        or not np.all(np.isfinite(arr))
        or not np.array_equal(arr, np.floor(arr))
    ):
        raise ValidationError(f"{what} must be non-negative integers")
    out = arr.astype(np.int64)
    if out.size and out.min() < 0:
        i = int(np.argmin(out))
        raise ValidationError(f"{what} {int(out[i])} at {i} is negative", record=i)
    return out


def ranked_lists(
    list_id: ArrayLike | None,
    scores: ArrayLike | None,
    outcomes: ArrayLike,
    n_pos: ArrayLike | None = None,
    *,
    n_lists: int | None = None,
    weights: ArrayLike | None = None,
    ties: TiePolicy | str = "stable",
    tiebreak: ArrayLike | None = None,
) -> RankedLists:
    """Build :class:`RankedLists` from columns, sorting once by (list, −score, tie policy).

    ``list_id``: integer list of every item (None: one list); ``outcomes``: 1, 0, -1 or booleans;
    ``n_pos``: one count per list (or one for all; default the relevant weight given); ``weights``: integer
    copies per item (0 drops it). ``n_lists`` defaults to max(list_id) + 1.

    >>> rl = ranked_lists([0, 0, 1, 1, 1], [0.9, 0.8, 0.7, 0.6, 0.5], [1, 0, 0, 1, 1], [2, 2])
    >>> rl.average_precision("uninterpolated").tolist()
    [0.5, 0.5833333333333333]
    """
    if scores is None:
        if ties != "presorted":
            raise ValidationError("scores are required unless ties='presorted'")
        out = as_outcomes(outcomes, None)
        sc = None
    else:
        sc = as_scores(scores)
        out = as_outcomes(outcomes, sc.shape[0])
    n = out.shape[0]
    if list_id is None:
        lid = np.zeros(n, dtype=np.int64)
        n_l = 1 if n_lists is None else int(n_lists)
    else:
        lid = np.asarray(list_id)
        if lid.shape != (n,) or (lid.size and not np.issubdtype(lid.dtype, np.integer)):
            raise ValidationError(f"list_id must hold one integer per item ({n})")
        lid = lid.astype(np.int64)
        n_l = (int(lid.max()) + 1 if lid.size else 0) if n_lists is None else int(n_lists)
        if lid.size and (lid.min() < 0 or lid.max() >= n_l):
            i = int(np.flatnonzero((lid < 0) | (lid >= n_l))[0])
            raise ValidationError(f"list id {int(lid[i])} is outside 0..{n_l - 1}", record=i)
    w = None if weights is None else _as_counts(weights, n, "weight")
    rel_w = out == RELEVANT if w is None else (out == RELEVANT) * w
    n_rel = np.bincount(lid, weights=rel_w, minlength=n_l).astype(np.int64) if n else np.zeros(n_l, np.int64)
    npos = n_rel if n_pos is None else _as_counts(n_pos, n_l, "n_pos")
    if (i := first_true(npos < n_rel)) >= 0:
        raise ValidationError(
            f"n_pos={int(npos[i])} of list {i} is smaller than its {int(n_rel[i])} relevant items"
        )

    order = sort_lists(lid, sc, ties=ties, tiebreak=tiebreak)
    if w is not None:
        order = np.repeat(order, w[order])
    count = np.bincount(lid[order], minlength=n_l).astype(np.int64) if order.size else np.zeros(n_l, np.int64)
    return RankedLists(
        n_pos=npos,
        count=count,
        is_relevant=out[order] == RELEVANT,
        is_ignored=out[order] == IGNORED,
        scores=None if sc is None else sc[order],
        order=order,
    )


def sort_lists(
    list_id: np.ndarray,
    scores: np.ndarray | None,
    *,
    ties: TiePolicy | str = "stable",
    tiebreak: ArrayLike | None = None,
) -> np.ndarray:
    """The permutation ranking every list: by list, then descending score under the tie policy (module
    docstring); ``"presorted"`` or no scores keeps input order inside each list."""
    n = list_id.shape[0]
    if ties not in ("stable", "quicksort", "presorted"):
        raise ValidationError(f"unknown tie policy {ties!r}: use 'stable', 'quicksort' or 'presorted'")
    if ties == "presorted" or scores is None:
        return np.argsort(list_id, kind="stable")
    if tiebreak is not None:
        key = np.asarray(tiebreak)
        if key.shape != (n,):
            raise ValidationError(f"tiebreak has shape {key.shape}, scores {(n,)}")
        return lex_order((key, -scores, list_id))
    if ties == "stable":
        return lex_order((-scores, list_id))
    # "quicksort": numpy's unstable sort must see exactly the array the reference sorts (one list's scores
    # in input order), so it runs list by list
    by_list = np.argsort(list_id, kind="stable")
    bounds = np.searchsorted(list_id[by_list], np.arange(int(list_id.max()) + 2 if n else 1))
    parts = [by_list[s:e][np.argsort(-scores[by_list[s:e]])] for s, e in itertools.pairwise(bounds.tolist())]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def presorted_lists(
    count: ArrayLike,
    relevant: np.ndarray,
    n_pos: ArrayLike,
    ignored: np.ndarray | None = None,
    scores: np.ndarray | None = None,
    *,
    weights: ArrayLike | None = None,
) -> RankedLists:
    """:class:`RankedLists` from columns already in (list, rank) order: ``count[l]`` items per list, boolean
    ``relevant`` and ``ignored`` (None: none ignored) flags per item, optional integer ``weights``.

    For the layers that rank their own way, or once for many lists: COCO's one sort shared by every
    threshold and area range, trec_eval's ranking built while joining qrels, bootstrap resamples (one sort of
    the items, then a weight column per resample)."""
    cnt = np.asarray(count, dtype=np.int64)
    rel = np.asarray(relevant, dtype=bool)
    if int(cnt.sum()) != rel.shape[0] or (ignored is not None and np.shape(ignored) != rel.shape):
        raise ValidationError(f"{rel.shape[0]} items for list sizes summing to {int(cnt.sum())}")
    ig = None if ignored is None else np.asarray(ignored, dtype=bool)
    order = None
    if weights is not None:
        w = _as_counts(weights, rel.shape[0], "weight")
        order = np.repeat(np.arange(rel.shape[0]), w)
        cum = np.concatenate(([0], np.cumsum(w)))
        ends = np.cumsum(cnt)
        cnt = cum[ends] - cum[ends - cnt]
        rel = rel[order]
        ig = None if ig is None else ig[order]
        scores = None if scores is None else np.asarray(scores)[order]
    lists = RankedLists(
        n_pos=_as_counts(n_pos, cnt.shape[0], "n_pos"),
        count=cnt,
        is_relevant=rel,
        is_ignored=ig,
        scores=scores,
        order=order,
    )
    if ig is not None and ig[lists.hit_items].any():  # read at the hits only: they are computed anyway
        raise ValidationError("an item cannot be both relevant and ignored")
    if (i := first_true(lists.n_hits > lists.n_pos)) >= 0:
        raise ValidationError(
            f"n_pos={int(lists.n_pos[i])} of list {i} is smaller than its {int(lists.n_hits[i])} relevant items"
        )
    return lists
