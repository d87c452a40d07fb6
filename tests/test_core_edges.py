"""Edge cases of the ranked-retrieval core, defined and tested.

The behaviour at every edge is part of the contract:

* ``n_pos == 0`` (nothing relevant in the reference): recall is 0 at every rank; ``average_precision``
  returns ``if_no_positives`` (0.0 unless asked otherwise, e.g. -1 as pycocotools); the summaries of
  :func:`summarize_ranking` (break-even point, F-max, AP) and P@k / R@k are 0 (precision is still
  defined: a list of non-relevant items has precision 0).
* no items: an empty ranking; every AP is 0 when ``n_pos > 0`` (nothing was found) and
  ``if_no_positives`` when ``n_pos == 0``; P@k and R@k are 0.
* every item ignored: the same as no items (ignored items take no rank).
* NaN or inf scores: rejected with a ``ValidationError`` naming the first bad item.
* ties: ``ties="stable"`` keeps input order among equal scores (the lower index ranks higher: FMP's
  "lower identifier first", the VOC devkit's stable sort, pycocotools' mergesort); ``tiebreak`` sorts
  equal scores by a key ascending; ``ties="presorted"`` takes the input order as the ranking.
* bad input of any kind (wrong lengths, non-numeric values, a non-integral ``n_pos`` or cutoff, an unknown
  AP method) raises a :class:`~deteval.errors.DetevalError` subclass, never a bare numpy error, and
  nothing is truncated silently.
"""

import numpy as np
import pytest

from deteval.core import (
    AP_METHODS,
    precision_at_k,
    rank,
    recall_at_k,
    summarize_ranking,
)
from deteval.core.ap import average_precision
from deteval.core.cutoff import average_precision_at_k, reciprocal_rank
from deteval.errors import DetevalError, ValidationError

# --- bad input: always a ValidationError, never a truncation ------------------------------------------


@pytest.mark.parametrize(
    "scores, outcomes",
    [
        ([0.3, 0.2], [True]),  # fewer boolean outcomes than scores
        ([0.3], [True, False]),  # more boolean outcomes than scores: must not be dropped silently
        ([0.3, 0.2], [1]),
        ([0.3], [1, 0]),
        ([0.3, 0.2], np.array([1.0])),
    ],
)
def test_length_mismatch_is_rejected_for_every_outcome_dtype(scores, outcomes):
    with pytest.raises(ValidationError, match="outcomes for"):
        rank(scores, outcomes)


@pytest.mark.parametrize("scores", [["a", "b"], [0.1, None], [[0.1, 0.2], [0.3]]])
def test_non_numeric_scores_are_a_validation_error(scores):
    with pytest.raises(ValidationError, match="scores"):
        rank(scores, [1, 0])


@pytest.mark.parametrize("outcomes", [[1.0, np.nan], [1, "x"], [0.5, 1.0], [2, 0], [[1, 0], [1]]])
def test_bad_outcomes_are_a_validation_error(outcomes):
    with pytest.raises(ValidationError, match="outcome"):
        rank([0.3, 0.2], outcomes)


def test_float_outcomes_with_integral_values_are_accepted():
    assert rank([0.3, 0.2, 0.1], np.array([1.0, -1.0, 0.0])).relevant.tolist() == [True, False]


@pytest.mark.parametrize("n_pos", [2.5, np.nan, np.inf, -1, "3", True])
def test_n_pos_must_be_a_non_negative_integer(n_pos):
    with pytest.raises(ValidationError, match="n_pos"):
        rank([0.3, 0.2], [1, 0], n_pos=n_pos)


@pytest.mark.parametrize("n_pos", [3, 3.0, np.int64(3), np.float32(3)])
def test_integral_n_pos_of_any_numeric_type(n_pos):
    r = rank([0.3, 0.2], [1, 0], n_pos=n_pos)
    assert r.n_pos == 3 and type(r.n_pos) is int


def test_unknown_ap_method_is_rejected_even_without_positives():
    for n_pos in (0, 1):
        r = rank([0.3], [n_pos], n_pos=n_pos)
        with pytest.raises(ValidationError, match="unknown AP method"):
            average_precision(r, "bogus")


@pytest.mark.parametrize("k", [0, -1, 2.5, np.nan, np.inf, None, "3", True])
def test_cutoff_must_be_a_positive_integer(k):
    r = rank([0.3, 0.2], [1, 0])
    for fn in (precision_at_k, recall_at_k):
        with pytest.raises(ValidationError, match="cutoff"):
            fn(r, k)


def test_integral_cutoff_of_any_numeric_type():
    r = rank([0.3, 0.2], [1, 0])
    assert precision_at_k(r, 2.0) == precision_at_k(r, np.int64(2)) == 0.5


# --- n_pos == 0 ------------------------------------------------------------------------------------------


def test_no_positives():
    r = rank([0.3, 0.2, 0.1], [0, -1, 0])
    assert r.n_pos == 0
    assert r.recall().tolist() == [0.0, 0.0]
    assert r.precision().tolist() == [0.0, 0.0]  # still defined: nothing retrieved is relevant
    for method in AP_METHODS:
        assert average_precision(r, method) == 0.0
        assert average_precision(r, method, if_no_positives=-1.0) == -1.0  # pycocotools' marker
    s = summarize_ranking(r)
    assert (s.break_even_point, s.f_max, s.average_precision) == (0.0, 0.0, 0.0)
    assert s.f.tolist() == [0.0, 0.0]
    assert precision_at_k(r, 1) == 0.0 and recall_at_k(r, 1) == 0.0
    assert reciprocal_rank(r) == 0.0
    for d in ("n_pos", "min_k_n_pos", "retrieved"):
        assert average_precision_at_k(r, 5, denominator=d) == 0.0


# --- no items, every item ignored ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda n_pos: rank([], [], n_pos=n_pos),
        lambda n_pos: rank(np.empty(0), np.empty(0, dtype=bool), n_pos=n_pos),
        lambda n_pos: rank(None, [], n_pos=n_pos, ties="presorted"),
        lambda n_pos: rank([0.9, 0.9, 0.1], [-1, -1, -1], n_pos=n_pos),  # every item ignored
    ],
    ids=["lists", "arrays", "presorted", "all-ignored"],
)
def test_empty_ranking(make):
    r = make(3)
    assert len(r) == 0 and r.order.shape == (0,) and np.issubdtype(r.order.dtype, np.integer)
    assert r.tp.tolist() == [] and r.fp.tolist() == []
    assert r.precision().tolist() == [] and r.recall().tolist() == []
    # Relevant items exist but none was retrieved: every AP is 0, not undefined.
    for method in AP_METHODS:
        assert average_precision(r, method) == 0.0
    s = summarize_ranking(r)
    assert (s.break_even_point, s.f_max, s.average_precision) == (0.0, 0.0, 0.0)
    assert precision_at_k(r, 10) == 0.0 and recall_at_k(r, 10) == 0.0
    assert reciprocal_rank(r) == 0.0 and average_precision_at_k(r, 10) == 0.0
    # Without relevant items in the reference the caller's marker comes back.
    empty = make(0)
    assert average_precision(empty, "coco101", if_no_positives=-1.0) == -1.0


def test_all_ignored_differs_from_the_matlab_devkit_only_by_being_defined():
    # VOCevaldet.m's precision is 0/0 = NaN on every row when every detection is ignored, and its 11-point
    # AP becomes NaN; the core defines it as 0 (nothing relevant was found). py-faster-rcnn also gives 0.
    r = rank([0.9, 0.8], [-1, -1], n_pos=2)
    assert average_precision(r, "voc07") == 0.0 and average_precision(r, "all_points") == 0.0


# --- NaN and inf scores ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("ties", ["stable", "quicksort", "presorted"])
def test_non_finite_scores_are_rejected_naming_the_item(bad, ties):
    with pytest.raises(ValidationError) as info:
        rank([0.5, bad, 0.2, bad], [1, 0, 0, 1], ties=ties)
    err = info.value
    assert err.record == 1
    assert "finite" in err.reason and "item 1" in err.reason and "2 non-finite" in err.reason
    assert str(err).startswith("record 1: ")


def test_non_finite_scores_of_ignored_items_are_rejected_too():
    with pytest.raises(ValidationError, match="finite"):
        rank([0.5, np.nan], [1, -1])


# --- ties ------------------------------------------------------------------------------------------------


def test_ties_default_keeps_input_order():
    # FMP: "D_k has a higher rank than D_l if k < l" on equal scores; VOC devkit and pycocotools sort stably.
    r = rank([0.5, 0.9, 0.5, 0.5], [0, 1, 1, 0])
    assert r.order.tolist() == [1, 0, 2, 3]
    assert rank([0.0, -0.0], [0, 1]).order.tolist() == [0, 1]  # -0.0 ties with 0.0


def test_ties_are_not_averaged():
    # The order of tied items decides the result, as in the reference tools (scikit-learn's
    # average_precision_score, which treats a tie as one threshold, would give 0.5 to both).
    assert average_precision(rank([0.5, 0.5], [1, 0]), "uninterpolated") == 1.0
    assert average_precision(rank([0.5, 0.5], [0, 1]), "uninterpolated") == 0.5


def test_tiebreak_key_sorts_equal_scores_ascending():
    # trec_eval breaks ties by docno descending: pass the negated ascending rank of the docnos.
    docnos = np.array(["d1", "d3", "d2", "d0"])
    key = -np.argsort(np.argsort(docnos))
    r = rank([1.0, 1.0, 1.0, 2.0], [0, 1, 0, 0], tiebreak=key)
    assert docnos[r.order].tolist() == ["d0", "d3", "d2", "d1"]


def test_quicksort_policy_is_a_descending_order():
    scores = np.repeat([0.1, 0.7, 0.4], 20)
    r = rank(scores, np.zeros(60, dtype=int), n_pos=1, ties="quicksort")
    assert sorted(r.order.tolist()) == list(range(60))
    assert (np.diff(scores[r.order]) <= 0).all()


def test_presorted_takes_the_input_order():
    assert rank([0.1, 0.9], [1, 0], ties="presorted").order.tolist() == [0, 1]


def test_bad_tie_options():
    with pytest.raises(ValidationError, match="tie policy"):
        rank([0.1, 0.2], [1, 0], ties="random")
    with pytest.raises(ValidationError, match="tiebreak"):
        rank([0.1, 0.2], [1, 0], tiebreak=[1, 2, 3])
    with pytest.raises(ValidationError, match="presorted"):
        rank(None, [1, 0])
    with pytest.raises(DetevalError):
        rank([0.1, 0.2], [1, 0], n_pos=None, ties="stable", tiebreak=np.zeros((2, 2)))


def test_unknown_tie_policy_is_rejected_even_with_a_tiebreak():
    with pytest.raises(ValidationError, match="tie policy"):
        rank([0.1, 0.2], [1, 0], ties="random", tiebreak=[0, 1])


def test_ap_uninterpolated_checks_lengths():
    from deteval.core import ap_uninterpolated

    with pytest.raises(ValidationError, match="equal length"):
        ap_uninterpolated([True, False], [1.0], 1)
    assert ap_uninterpolated([True, False], [1.0, 0.5], 2) == 0.5
