"""Property tests against brute-force oracles (independent of mir_eval): pair counts from the N×N matrix,
maximum matching from scipy's Hopcroft–Karp, the FMP rule from its definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval.mir import boundary_prf, match_one_to_one, pair_counts, pairwise_prf, pairwise_prf_labels

scipy_sparse = pytest.importorskip("scipy.sparse")
csgraph = pytest.importorskip("scipy.sparse.csgraph")

labels = st.lists(st.integers(0, 4), min_size=0, max_size=60)


def brute_pairs(ref: list, est: list) -> tuple[int, int, int]:
    ref_a, est_a = np.asarray(ref), np.asarray(est)
    iu = np.triu_indices(len(ref), k=1)
    r = (ref_a[:, None] == ref_a[None, :])[iu]
    e = (est_a[:, None] == est_a[None, :])[iu]
    return int(np.sum(r & e)), int(np.sum(~r & e)), int(np.sum(r & ~e))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_pair_counts_equal_the_pair_matrix(data) -> None:
    ref = data.draw(labels)
    est = data.draw(st.lists(st.integers(0, 6), min_size=len(ref), max_size=len(ref)))
    assert pair_counts(np.asarray(ref, dtype=np.int64), np.asarray(est, dtype=np.int64)) == brute_pairs(
        ref, est
    )
    r = pairwise_prf_labels([f"L{x}" for x in ref], est)
    assert (r.tp, r.fp, r.fn) == brute_pairs(ref, est)


def test_pair_counts_with_many_labels_take_the_sorting_path() -> None:
    rng = np.random.default_rng(3)
    ref = rng.integers(0, 5000, size=3000)
    est = rng.integers(0, 5000, size=3000)
    assert pair_counts(ref, est) == brute_pairs(ref.tolist(), est.tolist())


def brute_max_matching(ref: np.ndarray, est: np.ndarray, w: float) -> int:
    if ref.size == 0 or est.size == 0:
        return 0
    adj = (ref[:, None] >= est[None, :] - w) & (ref[:, None] <= est[None, :] + w)
    m = csgraph.maximum_bipartite_matching(scipy_sparse.csr_matrix(adj.astype(np.int8)), perm_type="column")
    return int(np.sum(m >= 0))


points = st.lists(st.integers(0, 40), min_size=0, max_size=25)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(points, points, st.sampled_from([0, 1, 2, 3, 0.5, 2.5]))
def test_greedy_matching_is_maximum(ref: list, est: list, w: float) -> None:
    r = np.sort(np.asarray(ref, dtype=np.float64))
    e = np.sort(np.asarray(est, dtype=np.float64))
    ri, _ei = match_one_to_one(r, e, w)
    assert len(ri) == brute_max_matching(r, e, w)
    res = boundary_prf(ref, est, w, warn=False)
    assert (res.tp, res.fp, res.fn) == (len(ri), len(est) - len(ri), len(ref) - len(ri))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(points, points, st.sampled_from([0, 1, 2, 3.5]))
def test_fmp_rule_follows_its_definition(ref: list, est: list, tau: float) -> None:
    r, e = np.asarray(ref, dtype=float), np.asarray(est, dtype=float)
    near = np.abs(r[:, None] - e[None, :]) <= tau  # integers: no rounding question
    tp = int(near.any(axis=0).sum()) if r.size else 0
    fn = int((~near.any(axis=1)).sum()) if e.size else len(ref)
    res = boundary_prf(ref, est, tau, rule="fmp", warn=False)
    assert (res.tp, res.fp, res.fn) == (tp, len(est) - tp, fn)


def test_an_hour_at_100_frames_per_second() -> None:
    # 360 000 frames: the pair matrix would have 6.5e10 entries; the contingency table has a handful.
    ref = [[0.0, 600.0, "A"], [600.0, 1800.0, "B"], [1800.0, 2400.0, "A"], [2400.0, 3600.0, "C"]]
    est = [[0.0, 1200.0, "x"], [1200.0, 3600.0, "y"]]
    r = pairwise_prf(ref, est, frame_rate=100)
    assert r.n_frames == 360_000

    def pairs(c: int) -> int:
        return c * (c - 1) // 2

    # contingency (frames): A∧x 60000, B∧x 60000, B∧y 60000, A∧y 60000, C∧y 120000
    tp = pairs(60000) * 4 + pairs(120000)
    ref_pos = pairs(120000) * 3
    est_pos = pairs(120000) + pairs(240000)
    assert (r.tp, r.fp, r.fn) == (tp, est_pos - tp, ref_pos - tp)
