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
