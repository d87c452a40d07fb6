"""Interpolated precision and hits of fixed ranked lists under many integer weightings at once (resamples).

A bootstrap resample or a randomization round changes the weights of the items, never their order nor their
outcomes. :class:`ReweightedLists` therefore lays out once what weights cannot change and, per weighting,
touches only what they can. The lists are G groups (categories) of items in one fixed rank order, seen under T
*variants* (COCO's IoU thresholds) that differ only in which items are relevant or ignored; every item takes
its weight from a *column* of the weight matrix (an image; a (system, image) pair when two systems are mixed).

With w the weights, for variant t and an item k of group g (rank order, all integers, exact):

* the *base*: the items not ignored under every variant (the others never count, whatever their weight), up
  to the group's last item relevant under some variant (no relevant item's N reaches those after it);
* C(k) = Σ w over the base items of g up to k; J_t(k) = Σ w over those ignored under t (a short, static
  index per variant);
* ranked weight N_t(k) = C(k) − J_t(k); relevant weight TP_t(k) = Σ w over the items of g up to k relevant
  under t;

and, as :mod:`deteval.core.weighted` shows for one weighting, the interpolated precision at a level is the
maximum of P = TP_t(k) / (N_t(k) + eps) over the relevant items k from the one holding the c-th unit of
relevant weight (c from :func:`~deteval.core.lists.min_counts_for_recall`) to the group's end. Precision may be
computed at any relevant item of the variant, whatever its weight. A relevant item z of weight 0 has the TP
of the last weighted relevant item r before it in its group over an N at least as large, so P(z) <= P(r)
(IEEE division is monotone in the denominator); if z lies at or after the item holding the c-th unit, which is
weighted, so does r; if there is no r, P(z) = 0 / (N + eps) = 0 (guarded when eps = 0). So such extra
candidates never change a maximum, and the c-th unit always lies in a weighted item (TP only grows there).
Nor do the relevant items inside a *run* (relevant items of a list with no item counted under t, neither
relevant nor ignored, between them): along a run TP and N grow by the same weights w, and with tp <= n,
(tp + w) / fl(n + w + eps) >= tp / fl(n + eps) for eps 0 and COCO's np.spacing(1) (fl(n + eps) is then n,
or n + eps for n <= 1, exactly), so the computed P never falls (division rounds monotonically), and the
maximum from any item of a run on is the maximum from the run's last item on. For those eps the precision
and the envelope are therefore taken at the runs' last items only, each sampled item standing for its run's
end; for another eps, at every relevant item.

Per weighting the cost is one gather and cumulative sum over the base items, one over the relevant items of
all variants, one over the J items, and G × levels lookups: no copy of a repeated item is laid out and
nothing is sorted.

Layout: per list (variant, group) its relevant items (*slots*) then an end slot of weight 0 (precision 0 in
the envelope), all lists in one array, so that one cumulative sum serves every list: the end slot
takes back its list's weight (the sums restart), and a *J stream* (per list an entry carrying the ranked
weight before it, then its J items) gives N with one gather. The c-th unit's slot is the last slot with fewer
than c units before it: a cumulative histogram of the units before each slot (``np.bincount``, O(slots +
units)) gives every level's slot with one gather, where one entry per unit (``np.repeat`` of the slots by
weight) costs far more (with weights 0 or 1 the weighted slots are the units: ``flatnonzero``).
The envelope at the sampled slots is a running maximum from each list's end over the kept slots laid out in
chunks of 8, each list from a chunk of its own (one vector step per slot of a chunk over all chunks, then a
short scan over the chunks; the end slots and the pads hold precision 0, below every other, so no step needs a
list boundary). Weightings are taken one at a time, in buffers made once (the size of one
weighting's slots; fresh arrays of that size cost more in page faults than the sums); gathers into them use
``mode="wrap"``, the same elements as the default "raise" for indices in range, negative ones too (every index
here is, by construction), where "raise" gathers into a temporary and copies it. A
randomization round's two pseudo-systems have complementary weights (w and 1 − w, weights 0 or 1): every count
above is a sum of weights, so those of 1 − w are those of all weights 1 (computed once) minus those of w, and
:meth:`ReweightedLists.evaluate_complements` gathers and sums once per round, leaving the precision, the
sampled slots and the envelope to each pseudo-system. The sums are int32 whenever no sum can reach 2**31
(items × the largest weight), int64 otherwise: the same integers, half the memory traffic.
Levels of a group that sample the same unit (a group with fewer units than levels) are looked up once per
(variant, group, unit) and spread to the levels at the end (:class:`_Plan`), when an n_pos row recurs (a
randomization test's rounds). A bootstrap resample's own levels
are looked up each on its own (:class:`_Levels`): the units from one broadcast sum, in (variant, group,
level) order (each list's lookups ascending, near each other), and the values copied transposed into the
output's (variant, level, group) order, with no index array. With ``packed`` output a
weighting's row holds only the groups with positive n_pos (a summary's categories with ground truth: the
others are never looked up, and the summary sums a contiguous run of the row instead of gathering it).
tests/test_resample.py checks every number against :func:`~deteval.core.weighted.weighted_levels` and against
the laid-out copies (:func:`~deteval.core.lists.presorted_lists` with weights), bit for bit.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from deteval.core.lists import min_counts_for_recall

__all__ = ["ReweightedLists"]

#: kept slots per chunk of the chunked envelope (:meth:`ReweightedLists._chunk_layout`): the steps of the
#: running maximum inside the chunks, each one vector operation over every chunk (8: with TP and N gathered
#: in the layout's order, shorter strides and less padding beat 16; 4 and 32 were slower)
_CHUNK = 8
#: n_pos below this take their sampled counts from a table kept across calls (at most this many rows)
_COUNTS_TABLE = 1 << 16
#: those tables, per level set (every slice of a COCO evaluation has the same recall levels: one table); at
#: most ``_PLANS`` level sets are kept (each table can reach ``_COUNTS_TABLE`` x levels int64: 53 MB for 101)
_TABLES: dict[bytes, np.ndarray] = {}
#: sampling plans kept across calls (:class:`_Plan`, one per distinct n_pos row: a randomization test has one)
_PLANS = 8


class _Plan(NamedTuple):
    """Which units the levels of one n_pos row sample. Levels of a group that sample the same unit (the same
    count: a group with fewer units of n_pos than levels, or with close levels) are looked up once: D
    distinct (group, count) pairs, and ``expand`` takes each level's value from them."""

    counts: np.ndarray  # (D,) the relevant weight before the sampled unit (c − 1) of each pair
    lists: np.ndarray  # (T, D) the list (variant, group) of each pair under each variant
    ends: np.ndarray  # (T, D) that list's end slot
    expand: np.ndarray  # (T, R, G') each level's entry (input order) among the (T·D) pairs, groups returned
    top: int  # the largest count
    groups: np.ndarray | None  # (G,) the groups returned (None: all)


class _Levels(NamedTuple):
    """Every level of one weighting looked up on its own (a bootstrap resample's: finding the repeated
    units would cost more than it saves), in (variant, group, level) order (each list's lookups ascending:
    near each other in memory), then copied transposed into the output's (variant, level, group) order."""

    counts: np.ndarray  # (G', R) the relevant weight before each (group returned, level)'s unit; input order
    groups: np.ndarray | None  # (G',) the groups returned (None: all)
    top: int  # the largest count


#: how one weighting's levels sample their units
_Lookup = _Plan | _Levels


def _checked(
    count: np.ndarray, column: np.ndarray, relevant: np.ndarray, ignored: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The inputs as arrays (count, column as int64; relevant, ignored as bool), their shapes checked."""
    cnt = np.asarray(count, dtype=np.int64)
    rel = np.asarray(relevant, dtype=bool)
    col = np.asarray(column, dtype=np.int64)
    if rel.ndim != 2 or rel.shape[1] != col.shape[0] or int(cnt.sum()) != col.shape[0]:
        raise ValueError("relevant must be (variants, items) with one column per item and sum(count) items")
    ig = None if ignored is None else np.asarray(ignored, dtype=bool)
    if ig is not None and (ig.shape != rel.shape or np.any(ig & rel)):
        raise ValueError("ignored must have the shape of relevant, and no item is relevant and ignored")
    return cnt, col, rel, ig


def _base_items(
    cnt: np.ndarray, rel: np.ndarray, ig: np.ndarray | None, count_type: type[np.signedinteger[Any]]
) -> np.ndarray:
    """The base: the items that can count under some variant and weighting. Items ignored under every variant
    never count, whatever their weight; nor do those after the last item of their group relevant under some
    variant (no slot's ranked weight reaches them: a detector's tail of false positives)."""
    n = rel.shape[1]
    counted = ~ig.all(axis=0) if ig is not None else np.ones(n, dtype=bool)
    any_rel = rel.any(axis=0)
    rel_upto = np.cumsum(any_rel, dtype=count_type)  # relevant items up to each item, all groups
    rel_in_group = rel_upto[np.cumsum(cnt) - 1] if n else np.zeros(cnt.shape[0], dtype=np.int64)
    return np.flatnonzero(counted & (rel_upto - any_rel < np.repeat(rel_in_group, cnt)))


class ReweightedLists:
    """G groups of items in a fixed rank order under T variants; interpolated precision at ``levels`` and
    relevant weight per (weighting, variant, group) for many weightings at once (module docstring).

    ``count`` (G,) items per group (items in (group, rank) order); ``column`` (N,) each item's weight column;
    ``relevant`` / ``ignored`` (T, N) flags (an item is never both under one variant; ``ignored`` None: none);
    ``eps`` the precision denominator's term; ``precision`` False: relevant weights only (recall);
    ``reuse_output``: the precision arrays returned are buffers that the next call overwrites (no fresh pages per call)."""

    def __init__(
        self,
        count: np.ndarray,
        column: np.ndarray,
        relevant: np.ndarray,
        ignored: np.ndarray | None,
        levels: np.ndarray,
        eps: float = 0.0,
        *,
        precision: bool = True,
        reuse_output: bool = False,
    ) -> None:
        cnt, col, rel, ig = _checked(count, column, relevant, ignored)
        G, T = cnt.shape[0], rel.shape[0]
        self.n_groups, self.n_variants, self.n_items = G, T, col.shape[0]
        self.eps, self.precision = float(eps), precision
        self.reuse_output = reuse_output
        self._out: list[np.ndarray] = []  # the output buffers (reuse_output)
        lv = np.asarray(levels, dtype=np.float64)
        self._lv_order = np.argsort(lv, kind="stable")  # levels taken ascending, returned in input order
        self.levels = lv[self._lv_order]
        self._lv_inv = np.argsort(self._lv_order)  # each input level's place among the ascending ones
        self._lv_sorted = bool(np.array_equal(self._lv_order, np.arange(lv.shape[0])))
        # running counts of flags in int32 where they fit: numpy sums booleans into int64 ~20x slower
        count_type = np.int32 if col.shape[0] < 2**31 - 1 else np.int64
        base = _base_items(cnt, rel, ig, count_type)
        b_group = np.repeat(np.arange(G), cnt)[base]
        b_count = np.bincount(b_group, minlength=G)
        b_start = np.cumsum(b_count) - b_count
        self.base_col = col[base]
        # the flags of the base items, each variant's row gathered once (take: half the time of rel[:, base]);
        # recall only (no precision) reads no ignored flag
        rel_b = np.take(rel, base, axis=1)
        ig_b = np.take(ig, base, axis=1) if ig is not None and precision else None
        slot_list, keep, list_j = self._lay_slots(rel_b, ig_b, b_group, b_start, count_type)
        # the precision is taken at the run ends only (module docstring): their slots, each slot's run end
        # among them, and each list's end slot among them
        if self.eps not in (0.0, float(np.spacing(1.0))):  # runs need an exact n + eps (module docstring)
            keep[:] = True
        self.kept = np.flatnonzero(keep)
        self.kept_of_slot = (np.cumsum(keep, dtype=count_type) - keep).astype(np.int64)  # (an index array)
        # the precision's envelope: kept slots laid out in chunks (_chunk_layout)
        self.chunked = precision
        if self.chunked:
            self._chunk_layout(slot_list)
        self.list_c = np.tile(b_start, T)  # ranked weight before each list: C at its group's first base item
        # the J stream: per list an entry that sets the running sum to the ranked weight before the list
        # (C at its group's start), then the list's J items, so that the running sum at a relevant item is
        # that plus the J weight before it in its list: N = C − (stream sum), one gather per item
        j_list = np.repeat(np.arange(T * G), np.diff(np.r_[list_j, self.j_col.shape[0]]))
        self.j_stream = np.arange(self.j_col.shape[0]) + j_list + 1
        self.j_first, self.j_end = list_j, np.r_[list_j[1:], self.j_col.shape[0]]
        self.pseudo = list_j + np.arange(T * G)
        self.kept_c = self.slot_c[self.kept]
        self.kept_jn = (self.slot_j + slot_list)[self.kept] if precision else self.kept
        self._max_col = int(col.max()) if col.size else -1
        # the integer type of the sums: int32 while no sum can reach 2**31 (half the memory traffic of int64,
        # the same integers), set per call from the largest weight
        self._int: np.dtype[np.signedinteger[Any]] = np.dtype(np.int64)
        self._ws: dict[str, dict[str, np.ndarray]] = {}  # per integer type
        self._plan_cache: dict[bytes, _Plan] = {}
        self._ones_counts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}

    def _lay_slots(
        self,
        rel_b: np.ndarray,
        ig_b: np.ndarray | None,
        b_group: np.ndarray,
        b_start: np.ndarray,
        count_type: type[np.signedinteger[Any]],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lay out the slots: per list (variant t, group g) its relevant base items in rank order, then one
        slot of weight 0 (the weight matrix gets a zero column) that ends the list (-inf, or 0, in the
        precision). Sets ``slot_col``, ``slot_c``, ``slot_j``, ``j_col`` and ``list_end``; returns each slot's
        list, the run ends (the slots whose precision is taken) and each list's first J entry."""
        T, G = rel_b.shape[0], b_start.shape[0]
        slot_col, slot_c, slot_j, j_cols, run_end = [], [], [], [], []
        # J before each list (a J item before it is an earlier group's)
        list_j = np.zeros(T * G, dtype=np.int64)
        j_off = 0
        n_slots = np.ones(T * G, dtype=np.int64)  # per list its relevant items, then its end slot
        for t in range(T):
            hp = np.flatnonzero(rel_b[t])  # base positions of the relevant items
            h_count = np.bincount(b_group[hp], minlength=G)
            n_slots[t * G : (t + 1) * G] += h_count
            at = np.cumsum(h_count)  # the end slot of each list, before the end slots are inserted
            slot_col.append(np.insert(self.base_col[hp], at, -1))
            if not self.precision:  # recall only: the slots' weights are all that is read
                continue
            jp = np.flatnonzero(ig_b[t]) if ig_b is not None else np.zeros(0, dtype=np.int64)
            j_cols.append(self.base_col[jp])
            list_j[t * G : (t + 1) * G] = j_off + np.searchsorted(jp, b_start, side="left")
            slot_c.append(np.insert(hp + 1, at, 0))
            slot_j.append(np.insert(j_off + np.searchsorted(jp, hp, side="right"), at, 0))
            j_off += jp.shape[0]
            # a relevant item ends its run unless the next one of its list follows with no item counted
            # under t (an item neither relevant nor ignored) between them; the end slots end theirs
            counted_t = ~rel_b[t] if ig_b is None else ~(rel_b[t] | ig_b[t])
            fp_upto = np.cumsum(counted_t, dtype=count_type)
            ends = np.ones(hp.shape[0], dtype=bool)
            ends[:-1] = (b_group[hp[1:]] != b_group[hp[:-1]]) | (fp_upto[hp[1:]] != fp_upto[hp[:-1]])
            run_end.append(np.insert(ends, at, True))
        self.slot_col = np.concatenate(slot_col) if T else np.zeros(0, dtype=np.int64)
        self.slot_c = np.concatenate(slot_c) if slot_c else np.zeros(0, dtype=np.int64)
        self.slot_j = np.concatenate(slot_j) if slot_j else np.zeros(0, dtype=np.int64)
        self.j_col = np.concatenate(j_cols) if j_cols else np.zeros(0, dtype=np.int64)
        self.list_end = np.cumsum(n_slots) - 1  # the end slot of each list
        keep = np.concatenate(run_end) if run_end else np.zeros(0, dtype=bool)
        return np.repeat(np.arange(T * G), n_slots), keep, list_j

    def _chunk_layout(self, slot_list: np.ndarray) -> None:
        """Lay the kept slots out for :meth:`_envelope_chunked`: each list's kept slots from a multiple of
        ``_CHUNK`` on (padded to the next one), so that no chunk holds two lists, stored transposed (row j
        holds every chunk's j-th slot) so that each step of the running maximum inside the chunks is one
        contiguous vector operation. ``kept`` (hence TP, N and the precision) is in the layout's order too,
        padded with the list's end slot (its gathers stride, but the division runs over contiguous arrays,
        where a transposed view of it cost more than they do); ``kept_of_slot`` indexes the layout; ``kept_zero`` holds the layout positions of the end slots and the pads, whose precision is
        set to 0: below or equal to every precision, the envelope needs no list boundary inside a chunk, and
        levels past a list's relevant weight sample its end slot (0, pycocotools' zero-filled precision)."""
        C, L = _CHUNK, self.n_variants * self.n_groups
        k_list = slot_list[self.kept]  # non-decreasing: lists one after the other
        m = np.bincount(k_list, minlength=L)  # kept slots per list (at least its end slot)
        chunks = -(-m // C)
        n_ch = int(chunks.sum())
        first = np.cumsum(m) - m  # each list's first kept slot
        flat = (C * (np.cumsum(chunks) - chunks))[k_list] + np.arange(self.kept.shape[0]) - first[k_list]

        def layout(f: np.ndarray) -> np.ndarray:  # flat position f sits at (f % C) * n_ch + f // C
            return (f % C) * n_ch + f // C

        zero = np.ones(n_ch * C, dtype=bool)
        zero[flat] = False
        if L:
            zero[flat[first + m - 1]] = True  # the end slots
        padded = np.repeat(self.kept[first + m - 1], chunks * C) if L else self.kept
        padded[flat] = self.kept
        self.kept = np.ascontiguousarray(padded.reshape(n_ch, C).T).reshape(-1)  # in the layout's order
        self.kept_of_slot = layout(flat)[self.kept_of_slot]
        self.kept_zero = layout(np.flatnonzero(zero))
        chunk_list = np.repeat(np.arange(L), chunks)
        # the maximum from chunk c + 1 on reaches chunk c's slots when both hold one list (1.0, else 0.0);
        # the running maximum over the chunks, reversed, restarts at each list (complex (list, value))
        self._cont = (chunk_list[1:] == chunk_list[:-1]).astype(np.float64)
        self._chunk_key = -chunk_list[::-1].astype(np.float64)

    def evaluate(
        self,
        weights: np.ndarray,
        n_pos: np.ndarray,
        groups: np.ndarray | None = None,
        *,
        packed: bool = False,
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """(B, T, R, G) interpolated precision (levels before groups, as pycocotools' arrays; None when built
        with ``precision=False``) and (B, T, G) relevant weight of B weightings: ``weights`` (B, columns)
        integers >= 0, ``n_pos`` (B, G). ``groups`` (G,) flags: the precision of those groups only (B, T, R,
        groups.sum()), as ``prec[..., groups]``. ``packed``: row b holds only the groups (of ``groups``) with
        ``n_pos[b] > 0``, as ``prec[b][..., n_pos[b] > 0]`` flattened at the start of the row (the rest
        unspecified). A summary leaves out the categories without ground truth: their values are then never
        made, nor gathered out."""
        w = np.asarray(weights, dtype=np.int64)
        wz, hits, (prec,), plans = self._prepare(w, n_pos, groups, packed, int(w.max(initial=0)), 1)
        binary = bool(w.size == 0 or w.max() <= 1)  # randomization rounds: weights 0 or 1
        for r, row in enumerate(wz if hits.size else ()):
            _, tp0 = self._row(row, hits[r], prec is not None)
            if prec is not None and plans is not None:
                pos = self._sampled_slots(tp0, plans[r], binary)
                self._envelope(
                    self._work["tpk"], self._work["n"], pos, self._target(prec[r], plans[r]), plans[r]
                )
        return prec, hits

    def evaluate_complements(
        self,
        weights: np.ndarray,
        n_pos: np.ndarray,
        groups: np.ndarray | None = None,
        *,
        packed: bool = False,
    ) -> tuple[tuple[np.ndarray | None, np.ndarray], tuple[np.ndarray | None, np.ndarray]]:
        """:meth:`evaluate` of B weightings of 0s and 1s and of their complements 1 − w (a randomization
        round's two pseudo-systems), both with ``n_pos``: every count of 1 − w is that of all weights 1 minus
        that of w (sums are linear in the weights), so the gathers and cumulative sums are made once per pair;
        only the precision, the sampled slots and the envelope are taken per weighting. The same numbers as
        :meth:`evaluate` on each (``groups``, ``packed`` as there)."""
        w = np.asarray(weights, dtype=np.int64)
        if w.size and (w.min() < 0 or w.max() > 1):
            raise ValueError("complements need weights 0 or 1")
        wz, hits, (prec, prec_c), plans = self._prepare(w, n_pos, groups, packed, 1, 2)
        hits_c = np.zeros_like(hits)
        if not hits.size:
            return (prec, hits), (prec_c, hits_c)
        ones = self._ones()
        for r, row in enumerate(wz):
            last, tp0 = self._row(row, hits[r], prec is not None)
            last_c = ones[0] - last
            tp0_c = self._before(last_c, "tp0_c")
            hits_c[r] = (last_c - tp0_c).reshape(hits_c.shape[1:])
            if prec is None or prec_c is None or plans is None:
                continue
            ws, plan = self._work, plans[r]
            pos = self._sampled_slots(tp0, plan, True)
            # the complement's units: the slots of weight 0 but the end slots (whose weights
            # _sampled_slots set to 0); its total weight from the running sums' ends
            unit_c = np.equal(ws["hw"], 0, out=ws["mask"])
            unit_c[self.list_end] = False
            total_c = ones[3] - int(ws["cs"][-1])
            pos_c = self._unit_slots(unit_c, total_c, self._at(tp0_c, plan), plan)
            self._envelope(ws["tpk"], ws["n"], pos, self._target(prec[r], plan), plan)
            tp_c = np.subtract(ones[1], ws["tpk"], out=ws["tpk"])
            n_c = np.subtract(ones[2], ws["n"], out=ws["n"])
            self._envelope(tp_c, n_c, pos_c, self._target(prec_c[r], plan), plan)
        return (prec, hits), (prec_c, hits_c)

    def _prepare(
        self,
        w: np.ndarray,
        n_pos: np.ndarray,
        groups: np.ndarray | None,
        packed: bool,
        max_weight: int,
        n_out: int,
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray | None], list[_Lookup] | None]:
        """What :meth:`evaluate` and :meth:`evaluate_complements` take for weights ``w`` (B, columns): the
        weights with the end slots' column of 0s last, zero relevant weights (B, T, G), ``n_out`` precision
        outputs (:meth:`_prec_out`) and each weighting's lookup (None without precision or lists)."""
        self._set_int(max_weight)
        B, T, G = w.shape[0], self.n_variants, self.n_groups
        wz = np.zeros((B, w.shape[1] + 1), dtype=self._int)
        wz[:, :-1] = w  # the last column: the end slots' weight 0
        keep = None if groups is None else np.asarray(groups, dtype=bool)
        prec = [self._prec_out(B, i, None if packed else keep) for i in range(n_out)]
        plans = self._plans(n_pos, B, keep, packed) if T * G else None
        return wz, np.zeros((B, T, G), dtype=np.int64), prec, plans

    def _set_int(self, max_weight: int) -> None:
        """int32 sums when n_items × the largest weight stays below 2**31 (no sum can overflow), else int64."""
        small = max_weight * max(self.n_items, 1) < 2**31 - 1
        self._int = np.dtype(np.int32 if small else np.int64)

    def _prec_out(self, B: int, i: int, keep: np.ndarray | None) -> np.ndarray | None:
        """(B, T, R, G') for the precision of the groups ``keep`` (None: all; None without precision): zeros,
        or buffer ``i`` (reuse_output)."""
        g_out = self.n_groups if keep is None else int(np.count_nonzero(keep))
        shape = (B, self.n_variants, self.levels.shape[0], g_out)
        if not self.precision:
            return None
        if not self.reuse_output:
            return np.zeros(shape)
        while len(self._out) <= i:
            self._out.append(np.zeros((0, *shape[1:])))
        if self._out[i].shape[0] < B or self._out[i].shape[1:] != shape[1:]:
            self._out[i] = np.zeros(shape)
        return self._out[i][:B]  # every row is written (in full unless packed) or empty

    def _sampled_counts(self, n_pos: np.ndarray, B: int) -> np.ndarray | None:
        """(B, 1, G, R) the relevant weight before the unit whose slot each level samples (the c-th unit, c
        at least 1: c − 1), or None."""
        if not self.precision:
            return None
        R, G = self.levels.shape[0], self.n_groups
        n = np.asarray(n_pos, dtype=np.int64)
        top = int(n.max(initial=0))
        if top >= _COUNTS_TABLE:  # large weights: once per distinct n_pos of these weightings
            uniq, inv = np.unique(n, return_inverse=True)
            c = np.maximum(min_counts_for_recall(self.levels, uniq), 1) - 1
            return np.asarray(c[inv.reshape(-1)].reshape(B, 1, G, R))
        key = self.levels.tobytes()
        table = _TABLES.get(key, np.zeros((0, R), dtype=np.int64))
        if top >= table.shape[0]:  # each n_pos up to the largest seen, computed once for these levels
            more = np.arange(table.shape[0], top + 1)
            c = np.maximum(min_counts_for_recall(self.levels, more), 1) - 1
            if key not in _TABLES and len(_TABLES) >= _PLANS:
                _TABLES.clear()
            table = _TABLES[key] = np.concatenate([table, c])
        return np.asarray(table[n.reshape(-1)].reshape(B, 1, G, R))

    def _plans(
        self, n_pos: np.ndarray, B: int, keep: np.ndarray | None, packed: bool
    ) -> list[_Lookup] | None:
        """Each weighting's lookup (None without precision): an n_pos row met more than once (every round of
        a randomization test has the same) gets its distinct pairs (:class:`_Plan`), found once and kept;
        another (a bootstrap resample's own) looks every level up on its own, where finding the pairs would
        cost more than it saves (:class:`_Levels`). ``keep``: the groups returned (None: all); ``packed``:
        those with n_pos > 0 only."""
        cc = self._sampled_counts(n_pos, B)
        if cc is None:
            return None
        n = np.asarray(n_pos, dtype=np.int64).reshape(B, -1)
        tail = (b"" if keep is None else keep.tobytes()) + (b"p" if packed else b"")
        keys = [row.tobytes() + tail for row in n]
        repeated = {k for k in keys if k in self._plan_cache} | {k for k in keys if keys.count(k) > 1}
        out: list[_Lookup] = []
        by_level: np.ndarray | None = None  # (B, G, R) the counts, levels in the input order
        rows: np.ndarray = np.ones(n.shape, dtype=bool) if keep is None else np.broadcast_to(keep, n.shape)
        if packed:
            rows = rows & (n > 0)
        whole = [bool(x) for x in np.all(rows, axis=1)]  # all groups returned: no selection
        tops = [int(x) for x in cc.reshape(B, -1).max(axis=1, initial=0)]
        for b, key in enumerate(keys):
            kept = None if whole[b] else rows[b]
            if key in repeated:
                plan = self._plan_cache.get(key)
                if plan is None:
                    if len(self._plan_cache) >= _PLANS:
                        self._plan_cache.clear()
                    plan = self._plan_cache[key] = self._plan(cc[b, 0], kept)
                out.append(plan)
                continue
            top = tops[b]
            if by_level is None:
                by_level = cc[:, 0] if self._lv_sorted else np.ascontiguousarray(cc[:, 0][:, :, self._lv_inv])
            groups = None if kept is None else np.flatnonzero(kept)
            out.append(_Levels(by_level[b] if groups is None else by_level[b][groups], groups, top))
        return out

    def _plan(self, cc: np.ndarray, keep: np.ndarray | None) -> _Plan:
        """The :class:`_Plan` of the sampled counts ``cc`` (G, R), non-decreasing along the levels, returning
        the groups ``keep`` (None: all)."""
        T, (G, R) = self.n_variants, cc.shape
        first = np.ones((G, R), dtype=bool)
        first[:, 1:] = cc[:, 1:] != cc[:, :-1]
        pair = np.flatnonzero(first)
        D = pair.shape[0]
        lists = np.arange(T)[:, None] * G + pair // max(R, 1)
        entry = (np.cumsum(first.reshape(-1)) - 1).reshape(G, R).T  # (R, G): each level's pair
        every = np.arange(T)[:, None, None] * D + entry
        count = cc.reshape(-1)[pair]
        every = every if self._lv_sorted else every[:, self._lv_inv]  # the levels in the input order
        expand = np.ascontiguousarray(every if keep is None else every[:, :, keep])
        return _Plan(count, lists, self.list_end[lists], expand, int(count.max(initial=0)), keep)

    def _target(self, row: np.ndarray, look: _Lookup) -> np.ndarray:
        """The part of one weighting's output ``row`` (T, R, G) that ``look`` fills: all of it, or its groups
        packed at the start."""
        shape = look.expand.shape if isinstance(look, _Plan) else (self.n_variants, *look.counts.shape[::-1])
        return row.reshape(-1)[: shape[0] * shape[1] * shape[2]].reshape(shape)

    def _ends(self, look: _Lookup) -> np.ndarray:
        """The end slot of the list of each of ``look``'s lookups (:meth:`_at`), broadcast."""
        if isinstance(look, _Plan):
            return look.ends
        ends = self.list_end.reshape(self.n_variants, -1)
        return (ends if look.groups is None else ends[:, look.groups])[:, :, None]

    @property
    def _work(self) -> dict[str, np.ndarray]:
        """Buffers reused by every weighting (made on first use): fresh arrays of this size cost more in page
        faults than the arithmetic on them."""
        ws = self._ws.get(self._int.str)
        if ws is not None:
            return ws
        S, J, K = self.slot_col.shape[0], self.j_col.shape[0], self.kept.shape[0]
        i64 = self._int
        ws = self._ws[self._int.str] = {
            "hw": np.empty(S, dtype=i64),
            "cs": np.empty(S, dtype=i64),
            "tp": np.empty(S, dtype=i64),
            "tpk": np.empty(K, dtype=i64),
            "n": np.empty(K, dtype=i64),
            "tmp": np.empty(K, dtype=i64),
            "p": np.empty(K),
            "mask": np.empty(S, dtype=bool),
            "tp0": np.zeros(self.n_variants * self.n_groups, dtype=np.int64),
            "tp0_c": np.zeros(self.n_variants * self.n_groups, dtype=np.int64),
            "tp0_end": np.zeros(self.n_variants * self.n_groups, dtype=np.int64),
            "at": np.empty(self.n_variants * self.n_groups * self.levels.shape[0], dtype=np.int64),
            "vals": np.empty(self.n_variants * self.n_groups * self.levels.shape[0] if self.chunked else 0),
            "bw": np.empty(self.base_col.shape[0], dtype=i64),
            "c_cum": np.zeros(self.base_col.shape[0] + 1, dtype=i64),
            "jw": np.empty(J, dtype=i64),
            "j_cum": np.zeros(J + 1, dtype=i64),
            "stream": np.empty(J + self.n_variants * self.n_groups, dtype=i64),
            "zc": np.empty(K // _CHUNK if self.chunked else 0, dtype=np.complex128),
            "carry": np.empty(K // _CHUNK if self.chunked else 0),
        }
        return ws

    def _ones(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(relevant weight up to each list's end, TP, N, the slots' total weight) of all weights 1: the
        complements' minuends."""
        key = self._int.str
        if key not in self._ones_counts:
            wr = np.ones(self._max_col + 2, dtype=self._int)
            wr[-1] = 0  # the end slots' column
            last = self._counts(wr, self.precision)
            ws = self._work
            total = int(ws["cs"][-1]) if ws["cs"].shape[0] else 0
            self._ones_counts[key] = (last.copy(), ws["tpk"].copy(), ws["n"].copy(), total)
        return self._ones_counts[key]

    def _counts(self, wr: np.ndarray, precision: bool) -> np.ndarray:
        """The relevant weight up to each list's end (returned); with ``precision``, into the workspace:
        ``hw`` the slots' weights (end slots: minus their list's weight), ``tp`` the relevant weight up to
        each slot inside its list, ``n`` the ranked weight there."""
        ws = self._work
        hw = np.take(wr, self.slot_col, out=ws["hw"], mode="wrap")
        # relevant weight up to each list's end, all lists
        last = np.cumsum(hw, dtype=self._int, out=ws["cs"])[self.list_end]
        if not precision:
            return last
        hw[self.list_end] = self._before(last, "tp0_end") - last  # each end slot takes back its list's weight
        np.cumsum(hw, dtype=self._int, out=ws["tp"])  # relevant weight up to each slot, inside its list
        c_cum = ws["c_cum"]
        np.cumsum(np.take(wr, self.base_col, out=ws["bw"], mode="wrap"), dtype=self._int, out=c_cum[1:])
        jw = np.take(wr, self.j_col, out=ws["jw"], mode="wrap")
        j_cum = ws["j_cum"]
        np.cumsum(jw, dtype=self._int, out=j_cum[1:])
        c0 = c_cum[self.list_c]  # ranked weight (base) before each list's group
        stream = ws["stream"]
        stream[self.j_stream] = jw
        step = c0.copy()  # each list's entry: its start minus where the stream stands after the list before
        step[1:] -= c0[:-1] + (j_cum[self.j_end[:-1]] - j_cum[self.j_first[:-1]])
        stream[self.pseudo] = step
        n = np.take(c_cum, self.kept_c, out=ws["n"], mode="wrap")
        n -= np.take(np.cumsum(stream, dtype=self._int), self.kept_jn, out=ws["tmp"], mode="wrap")
        np.take(ws["tp"], self.kept, out=ws["tpk"], mode="wrap")
        return last

    def _sampled_slots(self, tp0: np.ndarray, plan: _Lookup, binary: bool) -> np.ndarray:
        """(T, D) the slot of each list holding its (count + 1)-th unit of relevant weight for each of the
        ``plan``'s pairs (past the list's weight: its end slot), from the slots' weights ``hw`` of the
        workspace (end slots set to 0 here), their running sum ``cs`` over all lists and the relevant weight
        ``tp0`` before each list. The u-th unit (from 0) lies in the first
        slot whose running sum exceeds u, the one after every slot with a running sum of at most u (running
        sums are non-decreasing): its index is the count of those, a cumulative histogram of the running
        sums, O(slots + units) without laying out one entry per unit (past every unit: every slot, an index
        one too far that the clip to the list's end slot takes back, as it does every lookup past its list);
        with ``binary`` weights (0 or 1) the weighted slots are the units themselves."""
        hw, cs = self._work["hw"], self._work["cs"]
        hw[self.list_end] = 0
        total = int(cs[-1]) if cs.shape[0] else 0
        at = self._at(tp0, plan)
        if binary:  # weights 0 or 1: the weighted slots are the units
            return self._unit_slots(np.not_equal(hw, 0, out=self._work["mask"]), total, at, plan)
        upto = np.bincount(cs, minlength=total + plan.top + 1)  # (at most the largest count past the units)
        np.cumsum(upto, out=upto)  # upto[u]: the slots with at most u units up to their end
        pos = np.take(upto, at)
        np.minimum(pos, self._ends(plan), out=pos)
        return pos

    def _at(self, tp0: np.ndarray, plan: _Lookup) -> np.ndarray:
        """(T, D) the unit each of the ``plan``'s pairs samples ((T, G', R) each level's of a :class:`_Levels`),
        counted over all lists: ``tp0`` (T·G,) the relevant weight before each list plus the count, into the
        workspace."""
        if isinstance(plan, _Levels):  # one broadcast sum, no gather
            T, (g, R) = self.n_variants, plan.counts.shape
            before = tp0.reshape(T, -1) if plan.groups is None else tp0.reshape(T, -1)[:, plan.groups]
            return np.add(before[:, :, None], plan.counts, out=self._work["at"][: T * R * g].reshape(T, g, R))
        at = self._work["at"][: plan.lists.size].reshape(plan.lists.shape)
        np.take(tp0, plan.lists, out=at, mode="wrap")
        return np.add(at, plan.counts, out=at)

    def _before(self, last: np.ndarray, name: str) -> np.ndarray:
        """The relevant weight before each list (int64, into workspace buffer ``name``) from ``last``, that
        up to each list's end."""
        out = self._work[name]
        out[0] = 0
        out[1:] = last[:-1]
        return out

    def _unit_slots(self, unit: np.ndarray, total: int, at: np.ndarray, plan: _Lookup) -> np.ndarray:
        """:meth:`_sampled_slots` of weights 0 or 1: ``unit`` (S,) flags the slots of weight 1 (changed
        here), ``total`` their count; unit u (from 0) is the u-th flagged slot, and past every unit the last
        slot (an end slot), each clipped to its list's end slot."""
        np.minimum(at, total, out=at)
        unit[-1] = True
        pos = np.take(np.flatnonzero(unit), at)
        np.minimum(pos, self._ends(plan), out=pos)
        return pos

    def _row(self, wr: np.ndarray, hits: np.ndarray, precision: bool) -> tuple[np.ndarray, np.ndarray]:
        """The counts of one weighting ``wr`` (its end slots' column last; with ``precision``, the slots' TP
        and N into the workspace: :meth:`_counts`) and its relevant weight per list into ``hits`` (T, G);
        returns the relevant weight up to each list's end and before each list."""
        last = self._counts(wr, precision)
        tp0 = self._before(last, "tp0")
        hits[:] = (last - tp0).reshape(hits.shape)
        return last, tp0

    def _envelope(
        self, tp: np.ndarray, n: np.ndarray, pos: np.ndarray, prec: np.ndarray, plan: _Lookup
    ) -> None:
        """(T, R, G') interpolated precision into ``prec`` (:meth:`_target`) from the slots' TP and N and the
        slots ``pos`` (:meth:`_sampled_slots`) that the ``plan``'s lookups sample."""
        p = self._work["p"]
        if self.eps > 0:  # (chunked: TP, N and the precision in the chunk layout alike)
            np.add(n, self.eps, out=p)
            np.divide(tp, p, out=p)
        else:  # a relevant item of weight 0 before any weight: 0, as the module docstring says
            p.fill(0.0)
            np.divide(tp, n, out=p, where=n > 0)
        pos = np.take(self.kept_of_slot, pos)  # the sampled slot's run end: the top of the run's precision
        p[self.kept_zero] = 0.0
        self._envelope_chunked(p)
        if isinstance(plan, _Levels):  # (T, G', R), then each level in place
            vals = np.take(p, pos, out=self._work["vals"][: pos.size].reshape(pos.shape), mode="wrap")
            np.copyto(prec, vals.transpose(0, 2, 1))
        else:  # each pair once, then each level
            np.take(np.take(p, pos).reshape(-1), plan.expand, out=prec, mode="wrap")

    def _envelope_chunked(self, p: np.ndarray) -> None:
        """The maximum of ``p`` (in the chunk layout, every value >= 0) from each kept slot to its list's
        end, in place: inside each chunk (one list) from its last slot down, one vector step per slot; then
        the maximum from each chunk's first slot to its list's end (a reversed running maximum over the
        chunks, as complex numbers (list, value), restarting at each list), which each chunk's slots take
        from the next chunk of their list (0 where none: every value is >= 0)."""
        C, n_ch = _CHUNK, self._chunk_key.shape[0]
        q = p.reshape(C, n_ch)
        for j in range(C - 2, -1, -1):
            np.maximum(q[j], q[j + 1], out=q[j])
        z = self._work["zc"]
        z.real = self._chunk_key
        z.imag = q[0, ::-1]
        np.maximum.accumulate(z, out=z)
        carry = self._work["carry"]
        np.multiply(z.imag[-2::-1], self._cont, out=carry[:-1])  # chunk c + 1's maximum, for chunk c
        carry[-1] = 0.0
        np.maximum(q, carry, out=q)
