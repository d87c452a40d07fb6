"""The batched resampling path (deteval.core.reweighted, deteval.stats.coco_batch) equals the weighted
accumulation (deteval.core.weighted, one accumulation per weighting) and the laid-out copies, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from _coco_cases import random_case, random_keypoints_case
from test_stats import _coco_duplicate

from deteval.core.lists import COCO_EPS, COCO_RECALL_LEVELS, VOC_DEVKIT_LEVELS, presorted_lists
from deteval.core.reweighted import ReweightedLists
from deteval.core.weighted import weighted_levels
from deteval.detection.coco import evaluate_coco
from deteval.stats.bootstrap import bootstrap_weights
from deteval.stats.coco import CocoUnits


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_reweighted_lists_equal_weighted_levels_and_copies(seed: int) -> None:
    """Variants (thresholds) of lists sharing one order, weight columns, zero weights, items ignored under
    every variant or some: interpolated precision and hits of every weighting and variant equal
    weighted_levels and presorted_lists with the copies laid out."""
    rng = np.random.default_rng(seed)
    for trial in range(150):
        n_groups, n_var, n_cols = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(1, 6))
        cnt = rng.integers(0, 9, n_groups)
        n = int(cnt.sum())
        col = rng.integers(0, n_cols, n)
        rel = rng.random((n_var, n)) < 0.5
        ig = (~rel) & (rng.random((n_var, n)) < 0.3)
        if trial % 4 == 0:  # items ignored under every variant
            ig[:, rng.random(n) < 0.3] = True
            ig &= ~rel
        ign = None if trial % 3 == 0 else ig
        w = rng.integers(0, 4, (int(rng.integers(1, 5)), n_cols)) * (rng.random((1, n_cols)) < 0.8)
        if trial % 3 == 1 or trial % 7 == 0:
            w = np.minimum(w, 1)  # weights 0 or 1 (randomization rounds)
        levels, eps = (COCO_RECALL_LEVELS, COCO_EPS) if trial % 2 else (VOC_DEVKIT_LEVELS, 0.0)
        if trial % 5 == 0:
            levels = rng.permutation(levels)
        group = np.repeat(np.arange(n_groups), cnt)
        n_pos = np.stack(
            [
                np.max([np.bincount(group, weights=row[col] * r, minlength=n_groups) for r in rel], axis=0)
                for row in w
            ]
        ).astype(np.int64) + rng.integers(0, 3, (w.shape[0], n_groups))
        q, hits = ReweightedLists(cnt, col, rel, ign, levels, eps).evaluate(w, n_pos)
        _, hits_only = ReweightedLists(cnt, col, rel, ign, levels, eps, precision=False).evaluate(w, n_pos)
        if trial % 5 == 1:  # sums in int64 (weights too large for int32 sums): the same numbers
            wide = ReweightedLists(cnt, col, rel, ign, levels, eps)
            wide._set_int = lambda m: None  # type: ignore[method-assign]
            q64, hits64 = wide.evaluate(w, n_pos)
            assert wide._int == np.int64 and np.array_equal(q64, q) and np.array_equal(hits64, hits)
        assert q is not None and np.array_equal(hits_only, hits)
        if w.max(initial=0) <= 1:  # a round's two pseudo-systems at once: the numbers of w and of 1 - w
            for prec in (True, False):
                lists = ReweightedLists(cnt, col, rel, ign, levels, eps, precision=prec)
                if trial % 2:
                    lists._set_int = lambda m: None  # type: ignore[method-assign]  # int64 sums
                (qa, ha), (qb, hb) = lists.evaluate_complements(w, n_pos)
                for mine, theirs in (
                    ((qa, ha), lists.evaluate(w, n_pos)),
                    ((qb, hb), lists.evaluate(1 - w, n_pos)),
                ):
                    assert np.array_equal(mine[1], theirs[1])
                    assert (mine[0] is None) == (not prec) and (
                        not prec or np.array_equal(mine[0], theirs[0])
                    )
        for b, row in enumerate(w):
            for t in range(n_var):
                it = None if ign is None else ign[t]
                ref_q, _, ref_hits = weighted_levels(cnt, rel[t], it, n_pos[b], row[col], levels, eps)
                assert np.array_equal(q[b, t].T, ref_q) and np.array_equal(hits[b, t], ref_hits)
                copies = presorted_lists(cnt, rel[t], n_pos[b], it, weights=row[col])
                assert np.array_equal(q[b, t].T, copies.interpolated_precision(levels, eps))
                assert np.array_equal(hits[b, t], copies.n_hits)


def _lists(
    rng: np.random.Generator, cnt: np.ndarray, n_var: int, n_cols: int, p_rel: float, p_ign: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random item columns, relevant and ignored flags (never both) of lists of ``cnt`` items, and each
    item's group."""
    n = int(cnt.sum())
    col = rng.integers(0, n_cols, n)
    rel = rng.random((n_var, n)) < p_rel
    ign = (~rel) & (rng.random((n_var, n)) < p_ign)
    return col, rel, ign, np.repeat(np.arange(cnt.shape[0]), cnt)


def _n_pos(w: np.ndarray, rel: np.ndarray, col: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Per weighting and group the largest relevant weight over the variants (a consistent n_pos)."""
    return np.stack(
        [
            np.max([np.bincount(group, weights=r * row[col], minlength=n_groups) for r in rel], axis=0)
            for row in w
        ]
    ).astype(np.int64)


def _assert_weighted_levels(
    q: np.ndarray | None,
    cnt: np.ndarray,
    col: np.ndarray,
    rel: np.ndarray,
    ign: np.ndarray,
    w: np.ndarray,
    n_pos: np.ndarray,
    eps: float,
    levels: np.ndarray = COCO_RECALL_LEVELS,
) -> None:
    """``q`` (at ``levels``, COCO's recall levels by default) equals weighted_levels for every weighting and
    variant, bit for bit."""
    assert q is not None
    for b, row in enumerate(w):
        for t in range(rel.shape[0]):
            ref, _, _ = weighted_levels(cnt, rel[t], ign[t], n_pos[b], row[col], levels, eps)
            assert np.array_equal(q[b, t].T, ref)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2))
def test_reweighted_repeated_n_pos_rows_share_their_levels(seed: int) -> None:
    """Weightings with the same n_pos row (a randomization test's rounds) look each distinct (group, count)
    up once and spread it to the levels (_Plan); rows met once take every level as its own: the same numbers,
    bit for bit, in one call, row by row, through the complements, and past the
    plans kept across calls (more distinct repeated rows than the cache holds); asked for some groups only,
    those groups' values."""
    rng = np.random.default_rng(100 + seed)
    for trial in range(60):
        n_groups, n_var, n_cols = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(2, 12))
        cnt = rng.integers(0, 40, n_groups)
        n = int(cnt.sum())
        col = rng.integers(0, n_cols, n)
        rel = rng.random((n_var, n)) < 0.5
        ig = (~rel) & (rng.random((n_var, n)) < 0.2)
        w = (rng.random((int(rng.integers(2, 7)), n_cols)) < 0.5).astype(np.int64)
        n_pos = rng.integers(0, 12, n_groups)  # fewer units than levels: levels share their units
        groups = np.repeat(np.arange(n_groups), cnt)
        most = np.max([np.bincount(groups, weights=r, minlength=n_groups) for r in rel], axis=0)
        n_pos = np.maximum(n_pos, most).astype(np.int64)  # never fewer than the relevant items
        if trial % 4 == 3:  # n_pos rows in pairs, more distinct ones than the plans kept
            rows = np.repeat(n_pos[None] + np.arange(6)[:, None], 2, axis=0)
            w = (rng.random((rows.shape[0], n_cols)) < 0.5).astype(np.int64)
        else:
            rows = np.tile(n_pos, (w.shape[0], 1))
        one = ReweightedLists(cnt, col, rel, ig, COCO_RECALL_LEVELS, COCO_EPS)
        together, hits = one.evaluate(w, rows)
        assert together is not None
        for b in range(w.shape[0]):  # each row alone: every level its own pair
            alone, h = ReweightedLists(cnt, col, rel, ig, COCO_RECALL_LEVELS, COCO_EPS).evaluate(
                w[b : b + 1], rows[b : b + 1]
            )
            assert (
                alone is not None and np.array_equal(alone[0], together[b]) and np.array_equal(h[0], hits[b])
            )
        (qa, _), (qb, _) = one.evaluate_complements(w, rows)
        assert np.array_equal(qa, together)
        assert np.array_equal(qb, one.evaluate(1 - w, rows)[0])
        # the precision of some groups only: those groups' values, in one call, row by row, complements
        keep = rng.random(n_groups) < 0.6
        part, _ = one.evaluate(w, rows, keep)
        assert part is not None and np.array_equal(part, together[..., keep])
        alone, _ = ReweightedLists(cnt, col, rel, ig, COCO_RECALL_LEVELS, COCO_EPS).evaluate(
            w[:1], rows[:1], keep
        )
        assert alone is not None and np.array_equal(alone, together[:1, ..., keep])
        (qa, _), (qb, _) = one.evaluate_complements(w, rows, keep)
        assert np.array_equal(qa, together[..., keep])
        assert np.array_equal(qb, one.evaluate(1 - w, rows)[0][..., keep])


def test_reweighted_envelope_over_many_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many lists (159, of up to 30 items): the envelope and weighted_levels give the same interpolated
    precision, bit for bit, for weights and 0/1 complements; sampled counts from the table kept across calls
    or per call (large n_pos) alike."""
    import deteval.core.reweighted as reweighted

    rng = np.random.default_rng(5)
    n_groups, n_var, n_cols = 53, 3, 40
    cnt = rng.integers(0, 30, n_groups)
    col, rel, ign, group = _lists(rng, cnt, n_var, n_cols, 0.4, 0.2)
    for w in (rng.integers(0, 4, (3, n_cols)), rng.integers(0, 2, (3, n_cols))):
        n_pos = _n_pos(w, rel, col, group, n_groups) + rng.integers(0, 2, (w.shape[0], n_groups))
        lists = ReweightedLists(cnt, col, rel, ign, COCO_RECALL_LEVELS, COCO_EPS)
        q, _ = lists.evaluate(w, n_pos)
        assert q is not None
        for eps in (0.0, 0.37):  # the runs' ends (eps 0 or COCO's), every relevant item (another eps)
            q_eps, _ = ReweightedLists(cnt, col, rel, ign, COCO_RECALL_LEVELS, eps).evaluate(w, n_pos)
            _assert_weighted_levels(q_eps, cnt, col, rel, ign, w, n_pos, eps)
        with monkeypatch.context() as m:
            m.setattr(reweighted, "_COUNTS_TABLE", 0)
            q_large, _ = ReweightedLists(cnt, col, rel, ign, COCO_RECALL_LEVELS, COCO_EPS).evaluate(w, n_pos)
        assert np.array_equal(q_large, q)
        _assert_weighted_levels(q, cnt, col, rel, ign, w, n_pos, COCO_EPS)
        if w.max() <= 1:
            (qa, _), (qb, _) = lists.evaluate_complements(w, n_pos)
            assert np.array_equal(qa, q) and np.array_equal(qb, lists.evaluate(1 - w, n_pos)[0])


def test_sampled_count_tables_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampled-count tables kept across calls (one per level set) are at most _PLANS: evaluations with
    many distinct level sets do not keep one table each, and a table made again gives the same numbers."""
    import deteval.core.reweighted as reweighted

    monkeypatch.setattr(reweighted, "_TABLES", {})
    rng = np.random.default_rng(11)
    n_groups, n_var, n_cols = 7, 2, 20
    cnt = rng.integers(1, 12, n_groups)
    col, rel, ign, group = _lists(rng, cnt, n_var, n_cols, 0.4, 0.2)
    w = rng.integers(0, 3, (2, n_cols))
    n_pos = _n_pos(w, rel, col, group, n_groups) + 1
    first = None
    for k in range(3 * reweighted._PLANS):
        levels = np.linspace(0.0, 1.0, 11 + k % (reweighted._PLANS + 3))
        q, _ = ReweightedLists(cnt, col, rel, ign, levels, COCO_EPS).evaluate(w, n_pos)
        assert len(reweighted._TABLES) <= reweighted._PLANS
        _assert_weighted_levels(q, cnt, col, rel, ign, w, n_pos, COCO_EPS, levels)
        if k == 0:
            first = q
        elif k % (reweighted._PLANS + 3) == 0:
            assert np.array_equal(q, first)


@pytest.mark.parametrize("seed", range(2))
def test_reweighted_chunked_envelope_long_lists(seed: int) -> None:
    """Lists much longer than a chunk (up to 400 items, so a list runs through many chunks of the chunked
    envelope) next to empty and one-item lists: the chunked envelope equals weighted_levels, bit for bit, for
    weights and 0/1 complements."""
    rng = np.random.default_rng(seed)
    n_groups, n_var, n_cols = 9, 2, 30
    cnt = rng.choice([0, 1, 17, 150, 400], n_groups)
    col, rel, ign, group = _lists(rng, cnt, n_var, n_cols, 0.6, 0.1)
    for w in (rng.integers(0, 3, (3, n_cols)), rng.integers(0, 2, (3, n_cols))):
        n_pos = _n_pos(w, rel, col, group, n_groups)
        chunked = ReweightedLists(cnt, col, rel, ign, COCO_RECALL_LEVELS, COCO_EPS)
        assert chunked.chunked
        q, _ = chunked.evaluate(w, n_pos)
        assert q is not None
        _assert_weighted_levels(q, cnt, col, rel, ign, w, n_pos, COCO_EPS)
        if w.max() <= 1:
            (qa, _), (qb, _) = chunked.evaluate_complements(w, n_pos)
            assert np.array_equal(qa, q) and np.array_equal(qb, chunked.evaluate(1 - w, n_pos)[0])


def test_reweighted_lists_without_lists() -> None:
    """No group or no variant: empty arrays of the right shapes."""
    for G, T in ((0, 2), (2, 0)):
        lists = ReweightedLists(
            np.zeros(G, dtype=np.int64),
            np.zeros(0, dtype=np.int64),
            np.zeros((T, 0), dtype=bool),
            None,
            COCO_RECALL_LEVELS,
            COCO_EPS,
        )
        w, n_pos = np.ones((2, 3), dtype=np.int64), np.zeros((2, G), dtype=np.int64)
        q, hits = lists.evaluate(w, n_pos)
        assert q is not None and q.shape == (2, T, 101, G) and hits.shape == (2, T, G)
        (qa, ha), (qb, _) = lists.evaluate_complements(w, n_pos)
        assert qa is not None and qb is not None and qa.shape == qb.shape == q.shape
        assert ha.shape == hits.shape


def _other(dets: list, rng: np.random.Generator) -> list:
    """A second system: every other detection, scores perturbed (ties kept where they were ties)."""
    return [{**d, "score": round(d["score"] ** 2, 3)} for d in dets if rng.random() < 0.7]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_coco_batch_equals_accumulation(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """COCO bbox with random parameters (maxDets, thresholds, recall levels, area ranges, use_cats): the
    batched metric and mix equal one weighted accumulation per weighting, bit for bit, on random integer
    weights with zeros, all-zero rows and swap masks."""
    case = random_case(seed)
    rng = np.random.default_rng(seed)
    dt2 = _other(case["dt"], rng)
    units = CocoUnits(case["gt"], [case["dt"], dt2], params=case["params"])
    n = units.n_units
    w = np.concatenate([np.ones((1, n), dtype=np.int64), bootstrap_weights(n, 5, seed)])
    w[-1] = rng.integers(0, 3, n) * (rng.random(n) < 0.6)
    for s in range(2):
        assert units._system_batch(s) is not None  # the batched path, not the fallback
        fast, slow = units.metric(s)(w), units._metric_accumulated(s)(w)
        assert np.array_equal(fast, slow, equal_nan=True)
    swap = rng.integers(0, 2, (4, n))
    wa = np.concatenate([w, 1 - swap, np.zeros((1, n), dtype=np.int64), w[1:2]])
    wb = np.concatenate([np.zeros_like(w), swap, w[2:3], w[3:4]])
    fast, slow = units.mix(0, 1)(wa, wb), units._mix_accumulated(0, 1)(wa, wb)
    assert np.array_equal(fast, slow, equal_nan=True)
    rounds = (1 - swap, swap)  # only weights 0 and 1, as a randomization test's rounds
    assert np.array_equal(units.mix(0, 1)(*rounds), units._mix_accumulated(0, 1)(*rounds), equal_nan=True)
    # both pseudo-systems of the rounds at once (complementary weights), masks with all-0 and all-1 rows
    swap[0], swap[-1] = 0, 1
    both = units.mix(0, 1).rounds(swap)  # type: ignore[attr-defined]
    slow = units._mix_accumulated(0, 1)
    assert np.array_equal(both[0], slow(1 - swap, swap), equal_nan=True)
    assert np.array_equal(both[1], slow(swap, 1 - swap), equal_nan=True)
    assert np.array_equal(fast[: w.shape[0]], units.metric(0)(w), equal_nan=True)


def test_coco_mix_builds_the_merged_table_only_when_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A paired bootstrap weighs one system per row: its mix never merges the two tables; rounds (and rows
    weighing both systems) merge them once. Parameters that need the accumulation path take it for
    mix too."""
    import deteval.stats.coco as stats_coco

    case = random_case(5)
    rng = np.random.default_rng(5)
    dt2 = _other(case["dt"], rng)
    merges = []
    real = stats_coco.merge_tables
    monkeypatch.setattr(stats_coco, "merge_tables", lambda t: merges.append(1) or real(t))
    units = CocoUnits(case["gt"], [case["dt"], dt2])
    n = units.n_units
    mix = units.mix(0, 1)
    w = bootstrap_weights(n, 3, 5)
    z = np.zeros_like(w)
    delta = mix(w, z) - mix(z, w)
    assert merges == []
    assert np.array_equal(delta, units.metric(0)(w) - units.metric(1)(w), equal_nan=True)
    swap = rng.integers(0, 2, (3, n))
    a, b = mix.rounds(swap)  # type: ignore[attr-defined]
    mixed = mix(1 - swap, swap)
    assert merges == [1]
    assert np.array_equal(a, mixed, equal_nan=True)
    assert np.array_equal(a, units._mix_accumulated(0, 1)(1 - swap, swap), equal_nan=True)
    assert np.array_equal(b, units._mix_accumulated(0, 1)(swap, 1 - swap), equal_nan=True)

    # parameters that the batched columns refuse (validated CocoParams never are: a guard) take the
    # accumulation path for mix too
    def refuse(*args: object) -> None:
        raise NotImplementedError

    monkeypatch.setattr(stats_coco.CocoBatch, "summary_columns", staticmethod(refuse))
    slow = units.mix(0, 1)
    assert not hasattr(slow, "rounds")
    assert np.array_equal(slow(w, z), units.metric(0)(w), equal_nan=True)


def test_coco_batch_rows_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weightings split into calls of a few rows (the precision output kept small): the same numbers."""
    import deteval.stats.coco_batch as coco_batch

    case = random_case(4)
    rng = np.random.default_rng(4)
    units = CocoUnits(case["gt"], [case["dt"], _other(case["dt"], rng)])
    n = units.n_units
    w, swap = bootstrap_weights(n, 7, 4), rng.integers(0, 2, (5, n))
    whole = units.metric(0)(w), units.mix(0, 1).rounds(swap)  # type: ignore[attr-defined]
    batch = units._system_batch(0)
    assert batch is not None and batch._rows_per_call(1) >= 7
    monkeypatch.setattr(coco_batch, "OUT_BYTES", 1)  # one row per call
    assert batch._rows_per_call(1) == 1
    assert np.array_equal(units.metric(0)(w), whole[0], equal_nan=True)
    split = units.mix(0, 1).rounds(swap)  # type: ignore[attr-defined]
    assert np.array_equal(split[0], whole[1][0], equal_nan=True)
    assert np.array_equal(split[1], whole[1][1], equal_nan=True)


@pytest.mark.parametrize("seed", range(3))
def test_coco_batch_equals_duplicated_images(seed: int) -> None:
    """Bootstrap weights on a random bbox case: the batched numbers are those of evaluate_coco on the files
    in which each image is listed as many times as drawn (scores made distinct: among equal scores of one
    image, copies of an image interleave differently from repeated items, in both paths alike)."""
    case = random_case(100 + seed)
    gt = case["gt"]
    dets = [{**d, "score": d["score"] + i * 1e-7} for i, d in enumerate(case["dt"])]
    units = CocoUnits(gt, [dets])
    ids = [im["id"] for im in sorted(gt["images"], key=lambda im: im["id"])]
    gt_sorted = {**gt, "images": [next(im for im in gt["images"] if im["id"] == i) for i in ids]}
    w = bootstrap_weights(units.n_units, 4, seed)
    got = units.metric(0)(w)
    for row, values in zip(w, got):
        dup_gt, dup_dt = _coco_duplicate(
            {**gt_sorted, "images": [{**im, "id": im["id"] * 100} for im in gt_sorted["images"]],
             "annotations": [{**a, "image_id": a["image_id"] * 100} for a in gt["annotations"]]},
            [{**d, "image_id": d["image_id"] * 100} for d in dets],
            row,
        )  # fmt: skip
        ev = evaluate_coco(dup_gt, dup_dt)
        want = [*ev.stats.tolist(), *(r["ap"] for r in ev.per_class().values())]
        assert [-1.0 if np.isnan(v) else v for v in values] == want


@pytest.mark.fast_cases(compat=1)
@pytest.mark.parametrize("compat", ["pycocotools", "fixed"])
def test_coco_batch_keypoints_and_compat(compat: str) -> None:
    """Keypoints (10 numbers at maxDets 20) and the ``fixed`` profile's slices: batched == accumulated."""
    for seed in range(3):
        case = random_keypoints_case(seed)
        units = CocoUnits(case["gt"], [case["dt"]], iou_type="keypoints", compat=compat)
        w = np.concatenate(
            [np.ones((1, units.n_units), dtype=np.int64), bootstrap_weights(units.n_units, 4, 1)]
        )
        assert units._system_batch(0) is not None
        assert np.array_equal(units.metric(0)(w), units._metric_accumulated(0)(w), equal_nan=True)
    case = random_case(7)
    units = CocoUnits(case["gt"], [case["dt"]], compat=compat)
    w = bootstrap_weights(units.n_units, 4, 2)
    assert np.array_equal(units.metric(0)(w), units._metric_accumulated(0)(w), equal_nan=True)


@pytest.mark.slow
def test_processes_change_no_number() -> None:
    """Resamples and rounds split over forked processes: the same numbers as one process; a worker that
    fails is re-run in the parent."""
    import os

    from deteval.stats.bootstrap import bootstrap, paired_bootstrap
    from deteval.stats.parallel import evaluate_rows
    from deteval.stats.tests import randomization_test

    case = random_case(3)
    rng = np.random.default_rng(3)
    units = CocoUnits(case["gt"], [case["dt"], _other(case["dt"], rng)])
    n = units.n_units
    one = bootstrap(units.metric(0), n, n_resamples=150, seed=4)
    two = bootstrap(units.metric(0), n, n_resamples=150, seed=4, processes=3)
    assert np.array_equal(one.samples, two.samples, equal_nan=True)
    pa, pb = (paired_bootstrap(units.mix(0, 1), n, n_resamples=100, processes=k) for k in (1, 2))
    assert np.array_equal(pa.samples, pb.samples, equal_nan=True)
    ra, rb = (randomization_test(units.mix(0, 1), n, n_rounds=150, processes=k) for k in (1, 2))
    assert np.array_equal(ra.p_value, rb.p_value, equal_nan=True)
    ones = np.ones((1, n), dtype=np.int64)  # A and B (from the merged table's round that swaps nothing)
    assert np.array_equal(ra.a, units.metric(0)(ones)[0], equal_nan=True)
    assert np.array_equal(ra.b, units.metric(1)(ones)[0], equal_nan=True)
    parent = os.getpid()

    def fails_in_child(w: np.ndarray) -> np.ndarray:
        if os.getpid() != parent:
            raise RuntimeError("worker failure")
        return w[:, :2] * 2.0

    rows = np.arange(600).reshape(300, 2)
    assert np.array_equal(evaluate_rows(fails_in_child, rows, processes=2), rows * 2.0)


@pytest.mark.parametrize("profile", ["voc_devkit", "py_faster_rcnn"])
def test_voc07_batched_equals_laid_out_copies(profile: str) -> None:
    """VOC 11-point AP: the batched metric and mix equal the laid-out copies (VOCUnits._evaluate), bit for
    bit, with coarse scores (ties between systems and images) under both tie policies."""
    from test_stats import CLASSES, _dets, _gt

    from deteval.detection.voc import VOCDetections, VOCParams
    from deteval.stats.voc import VOCUnits

    for seed in range(4):
        rng = np.random.default_rng(seed)
        n_img = 15
        gt = _gt(rng, n_img, 40)
        a, b = _dets(rng, gt, n_img, 2.0), _dets(rng, gt, n_img, 4.0)
        a, b = (
            VOCDetections.from_arrays(
                d.image, d.label, d.boxes, np.round(d.scores, 1), images=n_img, classes=CLASSES
            )
            for d in (a, b)
        )
        units = VOCUnits(gt, [a, b], VOCParams(metric="voc07", profile=profile))
        w = np.concatenate([np.ones((1, n_img), dtype=np.int64), bootstrap_weights(n_img, 6, seed)])
        w[-1, : n_img // 2] = 0
        for s in range(2):
            want = units._evaluate([units.items[s]], [w])
            assert np.array_equal(units.metric(s)(w), want, equal_nan=True)
        swap = rng.integers(0, 2, (5, n_img))
        wa, wb = np.concatenate([w, 1 - swap]), np.concatenate([w[::-1], swap])
        want = units._evaluate(units.items, [wa, wb])
        assert np.array_equal(units.mix(0, 1)(wa, wb), want, equal_nan=True)
