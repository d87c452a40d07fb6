"""Differential tests: deteval.mir against mir_eval (run in the same process) on seeded random cases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

mir_eval = pytest.importorskip("mir_eval")

from deteval.io.lab import build_segments  # noqa: E402
from deteval.mir import (  # noqa: E402
    boundary_prf,
    match_one_to_one,
    onset_prf,
    pairwise_prf,
    segment_boundaries,
)

SEEDS = range(200)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def random_segmentation(rng: np.random.Generator, duration: float, n_seg: int, labels: str) -> tuple:
    """Intervals covering [0, duration] with n_seg segments and labels drawn from ``labels``."""
    cuts = np.sort(rng.uniform(0, duration, size=n_seg - 1))
    edges = np.concatenate([[0.0], cuts, [duration]])
    intervals = np.stack([edges[:-1], edges[1:]], axis=1)
    labs = [labels[k] for k in rng.integers(0, len(labels), size=n_seg)]
    return intervals, labs


def near_tolerance_points(rng: np.random.Generator, n: int, window: float, duration: float) -> tuple:
    """Estimates placed at ref ± window ± a few ulps, plus random ones: stresses the <= window test."""
    ref = np.sort(rng.uniform(0, duration, size=n))
    picks = ref[rng.integers(0, n, size=n)]
    sign = rng.choice([-1.0, 1.0], size=n)
    est = picks + sign * window
    ulps = rng.integers(-3, 4, size=n)
    est = np.array([np.nextafter(e, np.inf if u > 0 else -np.inf) if u else e for e, u in zip(est, ulps)])
    for _ in range(2):
        est = np.where(ulps > 1, np.nextafter(est, np.inf), est)
        est = np.where(ulps < -1, np.nextafter(est, -np.inf), est)
    est = np.concatenate([est, rng.uniform(0, duration, size=n // 2)])
    return ref, np.sort(np.abs(est))


# --------------------------------------------------------------------------------- segment.detection
@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS)
def test_detection_matches_mir_eval(seed: int) -> None:
    rng = np.random.default_rng(seed)
    duration = float(rng.uniform(20, 300))
    ref_iv, ref_lab = random_segmentation(rng, duration, int(rng.integers(1, 25)), "ABCD")
    est_iv, est_lab = random_segmentation(rng, duration, int(rng.integers(1, 40)), "abc")
    ref = build_segments(ref_iv[:, 0], ref_iv[:, 1], ref_lab)
    est = build_segments(est_iv[:, 0], est_iv[:, 1], est_lab)
    for window in (0.5, 3.0, float(rng.uniform(0, 10))):
        for trim in (False, True):
            expected = _quiet(mir_eval.segment.detection, ref_iv, est_iv, window=window, trim=trim)
            got = boundary_prf(ref, est, window, rule="one_to_one", trim=trim, warn=False)
            assert (got.precision, got.recall, got.f) == pytest.approx(expected, rel=0, abs=1e-12)
            assert (got.precision, got.recall, got.f) == expected  # in fact bit for bit


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS)
def test_detection_on_boundaries_at_the_window_edge(seed: int) -> None:
    # Estimated boundaries at reference ± window, nudged by a few ulps: the hit test must decide each
    # near-tie as mir_eval does.
    rng = np.random.default_rng(10_000 + seed)
    window = float(rng.choice([0.5, 3.0, 0.1, 0.05]))
    ref_b, est_b = near_tolerance_points(rng, int(rng.integers(2, 30)), window, 200.0)
    ref_b = np.unique(np.round(ref_b, 5))
    est_b = np.unique(np.round(est_b, 5))
    ref_iv = np.stack([ref_b[:-1], ref_b[1:]], axis=1)
    est_iv = np.stack([est_b[:-1], est_b[1:]], axis=1)
    if len(ref_iv) == 0 or len(est_iv) == 0:
        return
    expected = _quiet(mir_eval.segment.detection, ref_iv, est_iv, window=window)
    got = boundary_prf(ref_b, est_b, window, warn=False)
    assert (got.precision, got.recall, got.f) == expected


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS)
def test_one_to_one_count_equals_mir_eval_matching(seed: int) -> None:
    rng = np.random.default_rng(20_000 + seed)
    window = float(rng.choice([0.05, 0.5, 1.0]))
    if seed % 2:
        ref, est = near_tolerance_points(rng, int(rng.integers(1, 60)), window, 20.0)
    else:  # dense clusters: many estimates per window, many windows per estimate
        ref = np.sort(rng.uniform(0, 5, size=int(rng.integers(0, 80))))
        est = np.sort(rng.uniform(0, 5, size=int(rng.integers(0, 80))))
    expected = len(mir_eval.util.match_events(ref, est, window))
    r_idx, e_idx = match_one_to_one(ref, est, window)
    assert len(r_idx) == expected
    # a valid matching: each point once, every pair in reach
    assert len(set(r_idx.tolist())) == len(r_idx) and len(set(e_idx.tolist())) == len(e_idx)
    if len(r_idx):
        assert np.all(ref[r_idx] >= est[e_idx] - window) and np.all(ref[r_idx] <= est[e_idx] + window)


def test_near_tolerance_distance_is_decided_like_mir_eval() -> None:
    # 0.3 - 0.1 = 0.19999999999999998 <= 0.2, but the bound 0.3 - 0.2 rounds to 0.09999999999999998 and
    # 0.1 >= it: mir_eval's hit test (est ± window, rounded) and ours agree on a hit.
    ref, est = np.array([0.1]), np.array([0.3])
    assert len(mir_eval.util.match_events(ref, est, 0.2)) == len(match_one_to_one(ref, est, 0.2)[0]) == 1
    # 0.7 + 0.1 = 0.7999999999999999 < 0.8 (a hit in exact decimals); the float test decides.
    ref, est = np.array([0.8]), np.array([0.7])
    assert len(mir_eval.util.match_events(ref, est, 0.1)) == len(match_one_to_one(ref, est, 0.1)[0])


# --------------------------------------------------------------------------------------- onset
@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS)
def test_onset_f_measure_matches_mir_eval(seed: int) -> None:
    rng = np.random.default_rng(30_000 + seed)
    if seed % 3 == 0:
        ref, est = near_tolerance_points(rng, int(rng.integers(1, 100)), 0.05, 30.0)
    else:
        ref = np.sort(rng.uniform(0, 30, size=int(rng.integers(0, 200))))
        jitter = rng.normal(0, 0.04, size=ref.shape[0])
        keep = rng.random(ref.shape[0]) < 0.8
        extra = rng.uniform(0, 30, size=int(rng.integers(0, 30)))
        est = np.sort(np.abs(np.concatenate([(ref + jitter)[keep], extra])))
    window = 0.05 if seed % 2 == 0 else float(rng.uniform(0.01, 0.2))
    f, p, r = _quiet(mir_eval.onset.f_measure, ref, est, window=window)
    got = onset_prf(ref, est, window)
    assert (got.f, got.precision, got.recall) == (f, p, r)


# ---------------------------------------------------------------------------------------- pairwise
@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS)
def test_pairwise_matches_mir_eval_on_its_grid(seed: int) -> None:
    rng = np.random.default_rng(40_000 + seed)
    duration = float(rng.uniform(5, 240))
    ref_iv, ref_lab = random_segmentation(rng, duration, int(rng.integers(2, 20)), "ABCDE")
    est_iv, est_lab = random_segmentation(rng, duration, int(rng.integers(2, 30)), "vwxyz")
    if seed % 4 == 0:  # boundaries on exact multiples of the frame size: the grid decides
        ref_iv = np.round(ref_iv, 1)
        est_iv = np.round(est_iv, 1)
        ok = ref_iv[:, 1] > ref_iv[:, 0]
        ref_iv, ref_lab = ref_iv[ok], [l for l, k in zip(ref_lab, ok) if k]
        ok = est_iv[:, 1] > est_iv[:, 0]
        est_iv, est_lab = est_iv[ok], [l for l, k in zip(est_lab, ok) if k]
    frame_size = float(rng.choice([0.1, 0.05, 0.25, 1.0 / 3.0, 0.07, 0.0232]))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = _quiet(mir_eval.segment.pairwise, ref_iv, ref_lab, est_iv, est_lab, frame_size=frame_size)
    ref = build_segments(ref_iv[:, 0], ref_iv[:, 1], ref_lab)
    est = build_segments(est_iv[:, 0], est_iv[:, 1], est_lab)
    got = pairwise_prf(ref, est, frame_size=frame_size, grid="mir_eval")
    if not np.all(np.isfinite(expected)):  # mir_eval: 0/0 → NaN; ours: 0 (documented)
        pytest.skip("degenerate case: no positive pair")
    assert (got.precision, got.recall, got.f) == pytest.approx(expected, rel=0, abs=1e-12)
    assert (got.precision, got.recall, got.f) == expected


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", SEEDS)
def test_pairwise_exact_grid_equals_mir_eval_off_grid(seed: int) -> None:
    # Boundaries far (>= 1e-6 s) from every frame time: the float32 grid and k / frame_rate agree.
    rng = np.random.default_rng(50_000 + seed)
    frame_rate = float(rng.choice([10.0, 20.0, 4.0]))
    n_frames = int(rng.integers(50, 3000))
    duration = (n_frames + 0.5) / frame_rate

    def seg(n: int, labels: str) -> tuple:
        cuts = np.sort(rng.choice(np.arange(1, n_frames), size=min(n, n_frames - 1), replace=False))
        cuts = (cuts + rng.uniform(0.1, 0.9, size=cuts.shape)) / frame_rate
        edges = np.concatenate([[0.0], cuts, [duration]])
        labs = [labels[k] for k in rng.integers(0, len(labels), len(edges) - 1)]
        return np.stack([edges[:-1], edges[1:]], axis=1), labs

    ref_iv, ref_lab = seg(int(rng.integers(1, 20)), "ABC")
    est_iv, est_lab = seg(int(rng.integers(1, 30)), "xyzw")
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = _quiet(
            mir_eval.segment.pairwise, ref_iv, ref_lab, est_iv, est_lab, frame_size=1.0 / frame_rate
        )
    if not np.all(np.isfinite(expected)):
        pytest.skip("degenerate case: no positive pair")
    got = pairwise_prf(
        build_segments(ref_iv[:, 0], ref_iv[:, 1], ref_lab),
        build_segments(est_iv[:, 0], est_iv[:, 1], est_lab),
        frame_rate=frame_rate,
    )
    assert got.n_frames == n_frames
    assert (got.precision, got.recall, got.f) == pytest.approx(expected, rel=0, abs=1e-12)


def test_pairwise_case_folding_like_mir_eval() -> None:
    ref_iv = np.array([[0.0, 2.0], [2.0, 4.0], [4.0, 6.0]])
    est_iv = np.array([[0.0, 3.0], [3.0, 6.0]])
    ref_lab, est_lab = ["A", "B", "a"], ["x", "y"]
    expected = mir_eval.segment.pairwise(ref_iv, ref_lab, est_iv, est_lab)
    ref = build_segments(ref_iv[:, 0], ref_iv[:, 1], ref_lab)
    est = build_segments(est_iv[:, 0], est_iv[:, 1], est_lab)
    folded = pairwise_prf(ref, est, frame_rate=10, grid="mir_eval", case_sensitive=False)
    assert (folded.precision, folded.recall, folded.f) == expected
    strict = pairwise_prf(ref, est, frame_rate=10, grid="mir_eval")
    assert strict.tp + strict.fn < folded.tp + folded.fn  # 'A' and 'a' differ


# Labels given as Python (or numpy) numbers: mir_eval compares every label by its text (index_labels:
# str(label).lower()), so 1 and 1.0 are two labels ("1", "1.0"), and 1 and "1" one; so does deteval, with and
# without case folding. Random mixes of such labels, numpy floats with -0.0 among them too.
_NUMBER_LABELS = [1, 1.0, "1", 2, 2.0, np.int64(2), np.float64(1.0), -0.0, 0.0, 0, "A", "a", (1, 2)]


@pytest.mark.parametrize("seed", range(40))
def test_number_labels_are_their_text_like_mir_eval(seed: int) -> None:
    rng = np.random.default_rng(90_000 + seed)
    ref_iv, _ = random_segmentation(rng, 20.0, int(rng.integers(2, 12)), "A")
    est_iv, _ = random_segmentation(rng, 20.0, int(rng.integers(2, 12)), "A")
    pick = lambda n: [_NUMBER_LABELS[k] for k in rng.integers(0, len(_NUMBER_LABELS), n)]  # noqa: E731
    ref_lab, est_lab = pick(len(ref_iv)), pick(len(est_iv))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = _quiet(mir_eval.segment.pairwise, ref_iv, ref_lab, est_iv, est_lab)
    if not np.all(np.isfinite(expected)):
        pytest.skip("degenerate case: no positive pair")
    for case_sensitive in (False, True):
        got = pairwise_prf(
            build_segments(ref_iv[:, 0], ref_iv[:, 1], ref_lab),
            build_segments(est_iv[:, 0], est_iv[:, 1], est_lab),
            frame_rate=10,
            grid="mir_eval",
            case_sensitive=case_sensitive,
        )
        if case_sensitive and {"A", "a"} <= {str(x) for x in ref_lab + est_lab}:
            continue  # ('A' and 'a' are one label only when folded)
        assert (got.precision, got.recall, got.f) == expected


def test_one_and_one_point_zero_are_two_labels() -> None:
    ref_iv, est_iv = np.array([[0.0, 2.0], [2.0, 4.0]]), np.array([[0.0, 4.0]])
    expected = mir_eval.segment.pairwise(ref_iv, [1, 1.0], est_iv, ["x"])
    assert expected[1] == 1.0 and expected[0] < 0.5  # two reference labels: half of the pairs are not one
    ref = build_segments(ref_iv[:, 0], ref_iv[:, 1], [1, 1.0])
    est = build_segments(est_iv[:, 0], est_iv[:, 1], ["x"])
    got = pairwise_prf(ref, est, frame_rate=10, grid="mir_eval")
    assert (got.precision, got.recall, got.f) == expected


def test_segment_boundaries_match_mir_eval() -> None:
    rng = np.random.default_rng(7)
    iv, lab = random_segmentation(rng, 100.0, 12, "AB")
    iv[3, 0] = iv[2, 1] + 4e-6  # a gap below 1e-5 s: rounded to one boundary
    seg = build_segments(iv[:, 0], iv[:, 1], lab)
    np.testing.assert_array_equal(segment_boundaries(seg), mir_eval.util.intervals_to_boundaries(iv))


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(50))
def test_pairwise_with_gaps_matches_mir_eval(seed: int) -> None:
    # Frames in no segment share one label in mir_eval (None); here too, and they are reported.
    rng = np.random.default_rng(60_000 + seed)
    duration = float(rng.uniform(20, 120))
    ref_iv, ref_lab = random_segmentation(rng, duration, int(rng.integers(3, 15)), "ABC")
    est_iv, est_lab = random_segmentation(rng, duration, int(rng.integers(3, 15)), "xyz")
    drop = int(rng.integers(1, len(est_iv) - 1))  # remove an inner segment: a gap
    est_iv = np.delete(est_iv, drop, axis=0)
    del est_lab[drop]
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = _quiet(mir_eval.segment.pairwise, ref_iv, ref_lab, est_iv, est_lab, frame_size=0.1)
    if not np.all(np.isfinite(expected)):
        pytest.skip("degenerate case: no positive pair")
    got = pairwise_prf(
        build_segments(ref_iv[:, 0], ref_iv[:, 1], ref_lab),
        build_segments(est_iv[:, 0], est_iv[:, 1], est_lab),
        frame_rate=10,
        grid="mir_eval",
    )
    assert (got.precision, got.recall, got.f) == expected
    assert all("lie in no estimated segment" in w for w in got.warnings)  # none if the gap holds no frame


def test_onsets_with_duplicates_and_any_order() -> None:
    rng = np.random.default_rng(99)
    ref = np.sort(np.round(rng.uniform(0, 5, 60), 2))  # rounding makes duplicates
    est = np.sort(np.round(ref + rng.normal(0, 0.03, 60), 2))
    assert np.any(np.diff(ref) == 0) and np.any(np.diff(est) == 0)
    f, p, r = _quiet(mir_eval.onset.f_measure, ref, est)
    got = onset_prf(ref[::-1], rng.permutation(est))
    assert (got.f, got.precision, got.recall) == (f, p, r)
