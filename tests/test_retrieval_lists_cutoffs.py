"""The list-level IR measures take the core's cutoff rule: a positive integer, never a bool or None."""

from __future__ import annotations

import pytest

from deteval.errors import ValidationError
from deteval.retrieval.lists import average_precision, precision_at_k, recall_at_k


@pytest.mark.parametrize("k", [True, False, "3", 2.5, 0, -1, float("nan")])
def test_bad_cutoffs_are_validation_errors(k: object) -> None:
    for measure in (
        lambda: precision_at_k([1, 0, 1], k),  # type: ignore[arg-type]
        lambda: recall_at_k([1, 0, 1], k),  # type: ignore[arg-type]
        lambda: average_precision([1, 0, 1], k=k),  # type: ignore[arg-type]
    ):
        with pytest.raises(ValidationError, match="cutoff k must be a positive integer"):
            measure()


def test_no_cutoff_is_an_error_where_one_is_needed() -> None:
    with pytest.raises(ValidationError, match="cutoff k must be a positive integer, got None"):
        precision_at_k([1, 0, 1], None)  # type: ignore[arg-type]
    assert average_precision([1, 0, 1], k=None) == average_precision([1, 0, 1])


def test_whole_number_cutoffs_count_as_integers() -> None:
    assert precision_at_k([1, 0, 1], 3.0) == precision_at_k([1, 0, 1], 3) == 2 / 3
    assert recall_at_k([1, 0, 1, 1], 2, 3) == 1 / 3
