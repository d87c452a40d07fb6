"""Properties of the ranked-retrieval core over random rankings (hypothesis).

Rankings are drawn with ties (scores from a small set), ignored items and relevant items that were never
retrieved (n_pos above the relevant items given).

Floating-point notes, asserted below rather than hidden by a tolerance:

* ``voc07`` sums p/11 eleven times as VOCevaldet.m does, so a perfect ranking scores
  1.0000000000000002 (one ulp above 1), exactly as the devkit does; ``all_points`` sums Δrecall over the
  steps and may land one ulp below 1 (0.9999999999999999, as py-faster-rcnn's np.sum); ``coco101`` divides
  by tp + fp + eps as pycocotools does, so its precision never reaches exactly 1. Only the uninterpolated
  AP is exactly 1 on a perfect ranking. Bounds are therefore asserted exactly for ``uninterpolated``,
  ``all_points`` and ``coco101`` and within one ulp above 1 for ``voc07``.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval.core import (
    AP_METHODS,
    VOC07_LEVELS,
    average_precision,
    interpolated_precision,
    precision_at_k,
    rank,
    recall_at_k,
    summarize_ranking,
)
from deteval.core.cutoff import average_precision_at_k, reciprocal_rank

SETTINGS = settings(max_examples=200, deadline=None)
ONE_ULP_ABOVE_1 = float(np.nextafter(1.0, 2.0))


@st.composite
def rankings_input(draw, min_size=0, max_size=30, ignored=True, distinct=False):
    """(scores, outcomes, n_pos) with n_pos >= the relevant items given."""
    n = draw(st.integers(min_size, max_size))
    if distinct:
        scores = draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n, unique=True))
    else:
        scores = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    values = [1, 0, -1] if ignored else [1, 0]
    outcomes = draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))
    missed = draw(st.integers(0, 3))
    n_pos = outcomes.count(1) + missed
    return np.asarray(scores, dtype=np.float64), np.asarray(outcomes, dtype=np.int64), n_pos


def is_perfect(r) -> bool:
    """Every relevant item precedes every non-relevant one, and all relevant items were retrieved."""
    n_rel = int(r.relevant.sum())
    return r.n_pos > 0 and n_rel == r.n_pos and bool(r.relevant[:n_rel].all())


@SETTINGS
@given(rankings_input())
def test_every_ap_is_in_unit_interval(data):
    r = rank(*data)
    for method in ("uninterpolated", "all_points", "coco101"):
        ap = average_precision(r, method)
        assert 0.0 <= ap <= 1.0, method
    assert 0.0 <= average_precision(r, "voc07") <= ONE_ULP_ABOVE_1
    s = summarize_ranking(r)
    for v in (s.break_even_point, s.f_max, s.average_precision):
        assert 0.0 <= v <= 1.0
    for k in (1, 3, 10, 50):
        for v in (precision_at_k(r, k), recall_at_k(r, k), reciprocal_rank(r, k)):
            assert 0.0 <= v <= 1.0
        for d in ("n_pos", "min_k_n_pos", "retrieved"):
            assert 0.0 <= average_precision_at_k(r, k, denominator=d) <= 1.0


@SETTINGS
@given(rankings_input())
def test_ap_is_one_exactly_for_a_perfect_ranking(data):
    r = rank(*data)
    perfect = is_perfect(r)
    assert (average_precision(r, "uninterpolated") == 1.0) == perfect
    # The interpolated methods reach 1 up to the summation's last bit (see the module docstring), and stay
    # clearly below it otherwise: a non-perfect ranking has precision < 1 or recall < 1 at the last level.
    for method in ("all_points", "voc07", "coco101"):
        ap = average_precision(r, method)
        assert (abs(ap - 1.0) <= 4e-16) == perfect, method
        if not perfect:
            assert ap < 1.0 - 1e-6, method
    if perfect:
        assert average_precision(r, "voc07") == ONE_ULP_ABOVE_1
        assert summarize_ranking(r).break_even_point == summarize_ranking(r).f_max == 1.0


@SETTINGS
@given(rankings_input(distinct=True), st.randoms(use_true_random=False))
def test_reordering_items_with_distinct_scores_changes_nothing(data, rnd):
    scores, outcomes, n_pos = data
    perm = np.arange(scores.shape[0])
    rnd.shuffle(perm)
    a = rank(scores, outcomes, n_pos)
    b = rank(scores[perm], outcomes[perm], n_pos)
    # The same items in the same ranks: order maps through the permutation, everything else is identical.
    assert perm[b.order].tolist() == a.order.tolist()
    for field in ("scores", "relevant", "tp", "fp"):
        assert getattr(a, field).tolist() == getattr(b, field).tolist()
    for method in AP_METHODS:
        assert average_precision(a, method) == average_precision(b, method)
    for ties in ("stable", "quicksort"):
        assert rank(scores[perm], outcomes[perm], n_pos, ties=ties).tp.tolist() == a.tp.tolist()


@SETTINGS
@given(rankings_input())
def test_all_point_ap_is_at_least_uninterpolated_ap(data):
    # Each relevant rank adds 1/n_pos of recall; the envelope there is >= its precision. The two sums add
    # the same quantities in a different order, so equality holds only up to rounding (1e-15).
    r = rank(*data)
    assert average_precision(r, "all_points") >= average_precision(r, "uninterpolated") - 1e-15


@SETTINGS
@given(st.integers(1, 40), st.integers(0, 40), st.integers(0, 10))
def test_voc07_and_all_points_agree_on_a_perfect_ranking(n_rel, n_nonrel, n_ignored):
    outcomes = [1] * n_rel + [-1] * n_ignored + [0] * n_nonrel
    r = rank(None, outcomes, ties="presorted")
    assert is_perfect(r)
    voc07, all_points = average_precision(r, "voc07"), average_precision(r, "all_points")
    assert abs(voc07 - all_points) <= 4e-16
    assert abs(average_precision(r, "coco101") - voc07) <= 4e-16


@SETTINGS
@given(rankings_input(ignored=False, distinct=True), st.lists(st.integers(0, 30), max_size=8))
def test_ignored_items_change_nothing(data, positions):
    # Ignored items take no rank, wherever they are scored.
    scores, outcomes, n_pos = data
    base = rank(scores, outcomes, n_pos)
    extra_scores = np.asarray([p + 0.5 - 15 for p in positions], dtype=np.float64) * 70
    with_ignored = rank(
        np.concatenate([scores, extra_scores]),
        np.concatenate([outcomes, -np.ones(len(positions), dtype=np.int64)]),
        n_pos,
    )
    assert with_ignored.order.tolist() == base.order.tolist()
    for method in AP_METHODS:
        assert average_precision(with_ignored, method) == average_precision(base, method)


@SETTINGS
@given(rankings_input(), st.lists(st.integers(0, 3), min_size=30, max_size=30))
def test_tie_policies_match_a_reference_sort(data, key_pool):
    scores, outcomes, n_pos = data
    n = scores.shape[0]
    key = np.asarray(key_pool[:n], dtype=np.int64)
    kept = [i for i in sorted(range(n), key=lambda i: (-scores[i], i)) if outcomes[i] != -1]
    assert rank(scores, outcomes, n_pos).order.tolist() == kept
    kept = [i for i in sorted(range(n), key=lambda i: (-scores[i], key[i], i)) if outcomes[i] != -1]
    assert rank(scores, outcomes, n_pos, tiebreak=key).order.tolist() == kept


@SETTINGS
@given(rankings_input())
def test_cumulative_counts_and_curves(data):
    r = rank(*data)
    ranks = np.arange(1, len(r) + 1)
    assert (r.tp + r.fp).tolist() == ranks.tolist()
    assert (np.diff(r.tp, prepend=0) == r.relevant).all()
    if len(r):
        assert int(r.tp[-1]) <= r.n_pos
    interp = interpolated_precision(r.recall(), r.precision(), VOC07_LEVELS)
    assert (np.diff(interp) <= 0).all()  # the interpolated precision never rises with recall


# --- the AP methods against straightforward loop versions of the reference procedures --------------------
# Written from the procedures as DESIGN.md states them: ignored items stay in the arrays as rows that add 0 to
# both cumulative counts (as in the devkit and pycocotools), so these also check that removing them first,
# as the core does, changes nothing.


def _reference_rows(scores, outcomes, n_pos):
    order = np.argsort(-scores, kind="mergesort")
    o = outcomes[order]
    tp = np.cumsum(o == 1).astype(float)
    fp = np.cumsum(o == 0).astype(float)
    return tp, fp, tp / n_pos


def _matlab_max(values):
    """MATLAB's max over a vector: NaN entries are skipped; [] for an empty vector, NaN if all are NaN."""
    vals = [v for v in values if not np.isnan(v)]
    if not values:
        return None
    return max(vals) if vals else float("nan")


def vocevaldet_ap(scores, outcomes, n_pos):
    tp, fp, rec = _reference_rows(scores, outcomes, n_pos)
    with np.errstate(invalid="ignore"):
        prec = tp / (fp + tp)  # NaN where both are 0, as in MATLAB
    ap = 0.0
    for k in range(11):  # for t=0:0.1:1, a MATLAB loop variable being a + k*d
        t = 0.0 + k * 0.1
        p = _matlab_max([float(x) for x, ok in zip(prec, rec >= t) if ok])
        ap = ap + (0.0 if p is None else p) / 11
    return ap


def vocap_ap(scores, outcomes, n_pos):
    tp, fp, rec = _reference_rows(scores, outcomes, n_pos)
    with np.errstate(invalid="ignore"):
        prec = tp / (fp + tp)
    mrec = [0.0, *rec.tolist(), 1.0]
    mpre = [0.0, *prec.tolist(), 0.0]
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = _matlab_max([mpre[i], mpre[i + 1]])
    ap = 0.0
    for i in range(1, len(mrec)):
        if mrec[i] != mrec[i - 1]:
            ap += (mrec[i] - mrec[i - 1]) * mpre[i]
    return ap


def cocoeval_q(scores, outcomes, n_pos):
    """The 101 interpolated precisions pycocotools' accumulate stores for one curve."""
    tp, fp, rc = _reference_rows(scores, outcomes, n_pos)
    pr = (tp / (fp + tp + np.spacing(1))).tolist()
    for i in range(len(pr) - 1, 0, -1):
        if pr[i] > pr[i - 1]:
            pr[i - 1] = pr[i]
    q = [0.0] * 101
    for ri, pi in enumerate(np.searchsorted(rc, np.linspace(0.0, 1.0, 101), side="left")):
        if pi >= len(pr):
            break
        q[ri] = pr[pi]
    return q


def trec_ap(scores, outcomes, n_pos):
    order = np.argsort(-scores, kind="mergesort")
    total, rel_so_far, rank_ = 0.0, 0, 0
    for o in outcomes[order]:
        if o == -1:
            continue
        rank_ += 1
        if o == 1:
            rel_so_far += 1
            total += rel_so_far / rank_
    return total / n_pos


@SETTINGS
@given(rankings_input(min_size=1))
def test_ap_methods_match_loop_versions_of_the_references(data):
    scores, outcomes, n_pos = data
    r = rank(scores, outcomes, n_pos)
    if n_pos == 0:
        return
    devkit07 = vocevaldet_ap(scores, outcomes, n_pos)
    if np.isnan(devkit07):
        # Every item ignored: MATLAB's max over all-NaN precisions is NaN; the core defines it as 0.
        assert len(r) == 0 and average_precision(r, "voc07") == 0.0
    else:
        assert average_precision(r, "voc07") == devkit07  # same levels, same order of additions
    # Same terms; numpy's pairwise sum may differ from the sequential one in the last bit.
    assert abs(average_precision(r, "all_points") - vocap_ap(scores, outcomes, n_pos)) <= 1e-15
    eps_precision = r.precision(eps=float(np.spacing(1)))
    assert interpolated_precision(r.recall(), eps_precision, np.linspace(0, 1, 101)).tolist() == cocoeval_q(
        scores, outcomes, n_pos
    )
    assert average_precision(r, "coco101") == float(np.mean(cocoeval_q(scores, outcomes, n_pos)))
    assert abs(average_precision(r, "uninterpolated") - trec_ap(scores, outcomes, n_pos)) <= 1e-15


def test_all_points_uses_the_envelope():
    # R N N R R R: precision at rank 4 is 1/2 but rises to 2/3 by rank 6, so the envelope lifts the second
    # recall step above the uninterpolated value.
    r = rank(None, [1, 0, 0, 1, 1, 1], ties="presorted")
    assert average_precision(r, "uninterpolated") == (1 + 2 / 4 + 3 / 5 + 4 / 6) / 4
    assert abs(average_precision(r, "all_points") - (1 + 3 * 4 / 6) / 4) <= 1e-15
