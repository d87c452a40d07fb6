"""Every number of FMP's evaluation notebook (seed 001) and of libfmp's recorded outputs (tests/data/fmp)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from deteval.core import precision_recall_f
from deteval.mir import (
    BoundarySpacingWarning,
    boundaries_from_binary,
    boundary_prf,
    pairwise_prf,
    pairwise_prf_labels,
    set_prf,
)

FIXTURE = Path(__file__).parent / "data" / "fmp" / "fmp_expected.json"
CASES = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]


def _cases(func: str) -> list[dict]:
    return [c for c in CASES if c["func"] == func]


def _ids(cases: list[dict]) -> list[str]:
    return [c["name"] for c in cases]


# ----------------------------------------------------------------------------------------------- sets
SET_CASES = _cases("measure_prf_sets")


def test_fixture_has_the_three_set_examples() -> None:
    assert _ids(SET_CASES) == ["nb_example1", "nb_example2", "nb_example3"]


@pytest.mark.parametrize("case", SET_CASES, ids=_ids(SET_CASES))
def test_set_prf_matches_libfmp(case: dict) -> None:
    r = set_prf(case["I_ref_pos"], case["I_est_pos"], case["I"])
    exp = case["expected"]
    assert (r.precision, r.recall, r.f) == (exp["P"], exp["R"], exp["F"])


def test_set_prf_counts_of_example_2() -> None:
    r = set_prf(range(7), [0, 1, 2, 7, 8, 9], range(10))
    assert (r.tp, r.fp, r.fn) == (3, 3, 4)


def test_set_prf_goes_through_the_core() -> None:
    r = set_prf({"a", "b", "c"}, {"b", "c", "d", "e"})
    assert (r.precision, r.recall, r.f) == tuple(precision_recall_f(2, 2, 1))


def test_set_prf_rejects_items_outside_the_item_set() -> None:
    from deteval.errors import ValidationError

    with pytest.raises(ValidationError, match="not in the item set"):
        set_prf([0, 1], [0, 11], range(10))


# ------------------------------------------------------------------------------------------- pairwise
PAIR_CASES = _cases("evaluate_pairwise(compare_pairwise(X_ref), compare_pairwise(X_est))")


def test_fixture_has_the_toy_and_three_brahms_cases() -> None:
    assert _ids(PAIR_CASES) == [
        "nb_toy",
        "nb_brahms_coarse_vs_medium",
        "nb_brahms_coarse_vs_fine",
        "nb_brahms_medium_vs_fine",
    ]


@pytest.mark.parametrize("case", PAIR_CASES, ids=_ids(PAIR_CASES))
def test_pairwise_from_frame_annotations_matches_libfmp(case: dict) -> None:
    r = pairwise_prf(case["ann_ref"], case["ann_est"])  # frames: frame_rate=None
    exp = case["expected"]
    assert (r.tp, r.fn, r.fp) == (exp["num_TP"], exp["num_FN"], exp["num_FP"])
    assert (r.precision, r.recall, r.f) == (exp["P"], exp["R"], exp["F"])
    assert r.n_frames == len(case["X_ref"])
    assert r.warnings == ()


@pytest.mark.parametrize("case", PAIR_CASES, ids=_ids(PAIR_CASES))
def test_pairwise_from_label_sequences_matches_libfmp(case: dict) -> None:
    r = pairwise_prf_labels(case["X_ref"], case["X_est"])
    exp = case["expected"]
    assert (r.tp, r.fn, r.fp) == (exp["num_TP"], exp["num_FN"], exp["num_FP"])
    assert (r.precision, r.recall, r.f) == (exp["P"], exp["R"], exp["F"])


def test_seed_toy_numbers_as_printed() -> None:
    r = pairwise_prf(
        [[0, 4, "A"], [4, 7, "B"], [7, 10, "A"]],
        [[0, 1, "X"], [1, 3, "Y"], [3, 7, "Z"], [7, 9, "Y"], [9, 10, "X"]],
    )
    assert (r.tp, r.fn, r.fp) == (10, 14, 3)
    assert (round(r.precision, 3), round(r.recall, 3), round(r.f, 3)) == (0.769, 0.417, 0.541)
    # 24 of the 45 pairs are positive in the reference, 13 in the estimate
    assert r.tp + r.fn == 24 and r.tp + r.fp == 13


def test_seed_brahms_numbers_as_printed() -> None:
    coarse = [[0, 16, "G major"], [16, 28, "G minor"], [28, 40, "G major"]]
    medium = [
        [0, 4, "A"],
        [4, 8, "A"],
        [8, 12, "B"],
        [12, 16, "B"],
        [16, 27, "C"],
        [27, 32, "A"],
        [32, 36, "B"],
        [36, 39, "B"],
        [39, 40, ""],
    ]
    fine = [
        [0, 2, "a"],
        [2, 4, "a"],
        [4, 6, "a"],
        [6, 8, "a"],
        [8, 10, "b"],
        [10, 12, "c"],
        [12, 13, "b"],
        [13, 15, "c"],
        [15, 18, "d"],
        [18, 20, "d"],
        [20, 22, "e"],
        [22, 24, "e"],
        [24, 26, "e"],
        [26, 28, "e"],
        [28, 30, "a"],
        [30, 32, "a"],
        [32, 34, "b"],
        [34, 36, "c"],
        [36, 37, "b"],
        [37, 39, "c"],
        [39, 40, ""],
    ]
    printed = {
        (0, 1): (226, 218, 12, 0.950, 0.509, 0.663),
        (0, 2): (143, 301, 4, 0.973, 0.322, 0.484),
        (1, 2): (136, 102, 11, 0.925, 0.571, 0.706),
    }
    anns = [coarse, medium, fine]
    for (i, j), (tp, fn, fp, p, r, f) in printed.items():
        res = pairwise_prf(anns[i], anns[j])
        assert (res.tp, res.fn, res.fp) == (tp, fn, fp)
        assert (round(res.precision, 3), round(res.recall, 3), round(res.f, 3)) == (p, r, f)


def test_labels_are_compared_by_value_not_identity() -> None:
    # FMP's compare_pairwise uses `is`: two equal strings built at run time are different objects.
    a1 = "".join(["ver", "se"])
    a2 = "".join(["ve", "rse"])
    assert a1 == a2 and a1 is not a2
    r = pairwise_prf_labels([a1, a2, "x"], ["e", "e", "f"])
    assert (r.tp, r.fp, r.fn) == (1, 0, 0)


def test_pairwise_without_positive_pairs_is_zero_not_a_division_error() -> None:
    # Every estimated frame has its own label: no estimated positive pair. FMP divides by zero; mir_eval
    # returns NaN; here P = 0 (the core's zero_division) and F = 0.
    r = pairwise_prf_labels(list("AABB"), list("wxyz"))
    assert (r.tp, r.fp, r.fn) == (0, 0, 2)
    assert (r.precision, r.recall, r.f) == (0.0, 0.0, 0.0)


# ------------------------------------------------------------------------------------------- boundary
BOUNDARY_CASES = _cases("evaluate_boundary")
LIBFMP_DOUBLE_COUNT = "edge_one_est_two_overlapping_windows"


def test_fixture_boundary_cases() -> None:
    assert _ids(BOUNDARY_CASES) == [
        "nb_example_tau0",
        "nb_example_tau1",
        "nb_example_tau2",
        "edge_three_est_in_one_window",
        "edge_one_est_two_overlapping_windows",
        "edge_window_clipped_at_ends",
        "edge_no_est_in_any_window",
    ]


@pytest.mark.parametrize("case", BOUNDARY_CASES, ids=_ids(BOUNDARY_CASES))
def test_fmp_rule_matches_libfmp(case: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundarySpacingWarning)
        r = boundary_prf(case["B_ref"], case["B_est"], case["tau"], rule="fmp", binary=True)
        # the same from index lists
        ref_idx, est_idx = boundaries_from_binary(case["B_ref"]), boundaries_from_binary(case["B_est"])
        r2 = boundary_prf(ref_idx, est_idx, case["tau"], rule="fmp")
    exp = case["expected"]
    assert r == r2
    assert (r.precision, r.recall, r.f) == (exp["P"], exp["R"], exp["F"])
    if case["name"] == LIBFMP_DOUBLE_COUNT:
        # libfmp adds the estimates of each reference window, so the estimate at 4 (inside the windows of
        # the references at 3 and 5) is counted twice: TP = 2 for one estimate. The text defines TP as
        # the correct estimates: one. P, R and F agree (1, 1, 1).
        assert (exp["num_TP"], exp["num_FN"], exp["num_FP"]) == (2, 0, 0)
        assert (r.tp, r.fn, r.fp) == (1, 0, 0)
    else:
        assert (r.tp, r.fn, r.fp) == (exp["num_TP"], exp["num_FN"], exp["num_FP"])


def test_fmp_rule_counts_each_estimate_once_where_libfmp_double_counts() -> None:
    # Refs 3 and 5 share the estimate 4; the estimate 9 is out of reach. libfmp: TP 2, FP 1 → P = 2/3.
    # Text: one of the two estimates is correct → P = 1/2; both references are in reach → R = 1.
    r = boundary_prf([3, 5], [4, 9], 1, rule="fmp", warn=False)
    assert (r.tp, r.fp, r.fn) == (1, 1, 0)
    assert (r.precision, r.recall) == (0.5, 1.0)


SEED_REF = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0]
SEED_EST = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0]


@pytest.mark.parametrize(
    ("tau", "counts", "prf"),
    [
        (0, (1, 3, 2), (1 / 4, 1 / 3, 2 / 7)),
        (1, (2, 2, 1), (1 / 2, 2 / 3, 4 / 7)),
        (2, (4, 0, 0), (1.0, 1.0, 1.0)),
    ],
)
def test_seed_boundary_example(tau: int, counts: tuple, prf: tuple) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = boundary_prf(SEED_REF, SEED_EST, tau, rule="fmp", binary=True)
    assert (r.tp, r.fp, r.fn) == counts
    np.testing.assert_allclose([r.precision, r.recall, r.f], prf, rtol=0, atol=1e-15)
    spacing = [w for w in caught if issubclass(w.category, BoundarySpacingWarning)]
    if tau == 2:
        # "when using tau = 2 ... the minimal distance condition is violated": the estimates 10, 14, 18 are
        # 4 = 2*tau apart (the references 3, 10, 16 are not).
        assert len(spacing) == 1 and len(r.warnings) == 1
        assert "2 pair(s) of estimated boundaries" in r.warnings[0]
    else:
        assert spacing == [] and r.warnings == ()


@pytest.mark.parametrize(("tau", "counts"), [(0, (1, 3, 2)), (1, (2, 2, 1)), (2, (3, 1, 0))])
def test_seed_boundary_example_one_to_one(tau: int, counts: tuple) -> None:
    # One-to-one: at tau = 2 the estimates 14 and 18 compete for the reference 16; one of them is an FP.
    r = boundary_prf(SEED_REF, SEED_EST, tau, rule="one_to_one", binary=True, warn=False)
    assert (r.tp, r.fp, r.fn) == counts


def test_reference_spacing_warning() -> None:
    with pytest.warns(BoundarySpacingWarning, match="reference boundaries"):
        r = boundary_prf([1.0, 1.8, 10.0], [1.0], 0.5)
    assert len(r.warnings) == 1


# ------------------------------------------------------------------------------------- zero division
PRF_RAISES = _cases("measure_prf")


@pytest.mark.parametrize("case", PRF_RAISES, ids=_ids(PRF_RAISES))
def test_libfmp_zero_division_cases_get_defined_values(case: dict) -> None:
    # libfmp's measure_prf(TP, FN, FP) raises ZeroDivisionError; the core defines P (no estimate) and R (no
    # reference) as 0, and F as 0.
    assert case["raises"] == "ZeroDivisionError"
    tp, fn, fp = case["args"]
    assert tuple(precision_recall_f(tp, fp, fn)) == (0.0, 0.0, 0.0)


def test_nothing_estimated() -> None:
    r = set_prf([1, 2, 3], [])
    assert (r.tp, r.fp, r.fn, r.precision, r.recall, r.f) == (0, 0, 3, 0.0, 0.0, 0.0)
    b = boundary_prf([1.0, 3.0], [], 0.5)
    assert (b.tp, b.fp, b.fn, b.precision, b.recall, b.f) == (0, 0, 2, 0.0, 0.0, 0.0)


# ---------------------------------------------------------------------------------- frame sampling
def test_exact_grid_counts_whole_frames_as_written() -> None:
    # 2.3 * 10 is 22.999999999999996 in doubles; the exact grid counts the 23 frames the file means.
    r = pairwise_prf([[0.0, 1.0, "A"], [1.0, 2.3, "B"]], [[0.0, 2.3, "x"]], frame_rate=10)
    assert r.n_frames == 23
    assert (r.tp, r.fp, r.fn) == (45 + 78, 253 - 123, 0)
    m = pairwise_prf([[0.0, 1.0, "A"], [1.0, 2.3, "B"]], [[0.0, 2.3, "x"]], frame_rate=10, grid="mir_eval")
    assert m.n_frames == 22  # mir_eval: floor(2.3 / 0.1) = 22


def test_frame_on_a_shared_boundary_belongs_to_the_later_segment() -> None:
    r = pairwise_prf([[0, 2, "A"], [2, 4, "B"]], [[0, 3, "x"], [3, 4, "y"]])
    # frames 0,1 → A; 2,3 → B. est: 0,1,2 → x; 3 → y
    assert (r.tp, r.fp, r.fn) == (1 + 0, 3 - 1, 2 - 1)


def test_estimate_longer_or_shorter_than_reference_is_reported() -> None:
    longer = pairwise_prf([[0, 10, "A"]], [[0, 12, "x"]])
    assert longer.n_frames == 10 and (longer.tp, longer.fp, longer.fn) == (45, 0, 0)
    assert any("2 frame(s) are not evaluated" in w for w in longer.warnings)
    shorter = pairwise_prf([[0, 10, "A"]], [[0, 8, "x"]])
    # as in mir_eval, a segment's end time is inside it when no segment starts there: frame 8 (t = 8) is x
    assert (shorter.tp, shorter.fp, shorter.fn) == (36, 0, 45 - 36)
    assert any("1 of 10 frames lie in no estimated segment" in w for w in shorter.warnings)


def test_reference_gap_is_reported() -> None:
    r = pairwise_prf([[0, 4, "A"], [6, 10, "A"]], [[0, 10, "x"]])
    # frames 0-4 and 6-9 are A (t = 4 is inside [0, 4]), frame 5 is unlabelled
    assert any("1 of 10 reference frames lie in no reference segment" in w for w in r.warnings)
    assert (r.tp, r.fp, r.fn) == (36, 45 - 36, 0)


def test_zero_length_segment_holds_no_frame() -> None:
    r = pairwise_prf([[0, 2, "A"], [2, 2, "Z"], [2, 4, "A"]], [[0, 4, "x"]])
    assert (r.tp, r.fp, r.fn, r.n_frames) == (6, 0, 0, 4)


def test_trim_needs_segment_annotations() -> None:
    from deteval.errors import ConfigError

    with pytest.raises(ConfigError, match="trim applies to segment annotations"):
        boundary_prf([1.0, 2.0], [1.0], 0.5, trim=True)


def test_tuple_labels_are_kept_whole() -> None:
    r = pairwise_prf([[0, 2, ("A", 1)], [2, 4, ("A", 1)]], [[0, 4, "x"]])
    assert (r.tp, r.fp, r.fn) == (6, 0, 0)


def test_binary_arrays_must_have_one_length() -> None:
    from deteval.errors import ValidationError

    with pytest.raises(ValidationError, match="one length"):
        boundary_prf([0, 1, 0], [0, 1], 1, binary=True)
    with pytest.raises(ValidationError, match="only 0 and 1"):
        boundary_prf([0, 2, 0], [0, 1, 0], 1, binary=True)


def test_frame_size_or_frame_rate() -> None:
    from deteval.errors import ConfigError
    from deteval.mir import frame_times

    ref, est = [[0.0, 1.0, "A"], [1.0, 2.0, "B"]], [[0.0, 2.0, "x"]]
    by_rate = pairwise_prf(ref, est, frame_rate=4)
    by_size = pairwise_prf(ref, est, frame_size=0.25)
    assert by_rate == by_size and by_rate.n_frames == 8
    np.testing.assert_array_equal(frame_times(4, 4.0), [0.0, 0.25, 0.5, 0.75])
    # mir_eval's grid is float32: t_2 = float32(2) * float32(0.1) = 0.20000000298023224, not 0.2
    mir_grid = frame_times(3, frame_size=0.1, grid="mir_eval")
    assert mir_grid.tolist() == [0.0, 0.10000000149011612, 0.20000000298023224]
    with pytest.raises(ConfigError, match="not both"):
        pairwise_prf(ref, est, frame_rate=4, frame_size=0.25)
    with pytest.raises(ConfigError, match="frame size must be a positive number"):
        pairwise_prf(ref, est, frame_size=0)
    with pytest.raises(ConfigError, match="unknown grid"):
        pairwise_prf(ref, est, frame_rate=4, grid="fast")
