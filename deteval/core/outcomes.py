"""The vocabulary of a ranked list: an item's outcome, the tie policies, and the checks of scores and outcomes.

* An item's outcome is ``RELEVANT`` (1), ``NONRELEVANT`` (0) or ``IGNORED`` (-1). Ignored items (a detection
  matched to a "difficult" VOC object or a COCO crowd region) are sorted with the others, so that the tie
  policy sees the same input the reference tool sees, and then removed: they occupy no rank.
* Scores must be finite: a NaN has no place in a ranking, so it is rejected rather than sorted somewhere.

The lowest module of the core: :mod:`deteval.core.lists` (many lists) and :mod:`deteval.core.ranking` (one
list) both build on it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from deteval.errors import ValidationError, first_true

RELEVANT = 1
NONRELEVANT = 0
IGNORED = -1

TiePolicy = Literal["stable", "quicksort", "presorted"]


def as_scores(scores: ArrayLike, what: str = "scores") -> np.ndarray:
    """``scores`` as a 1-D float64 array, or a :class:`ValidationError` naming the first non-finite item."""
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} must be numbers: {exc}") from None
    if arr.ndim != 1:
        raise ValidationError(f"{what} must be one-dimensional, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if (i := first_true(bad)) >= 0:
        raise ValidationError(
            f"{what} must be finite: item {i} has score {float(arr[i])!r} ({int(bad.sum())} non-finite in all)",
            record=i,
        )
    return arr


def as_outcomes(outcomes: ArrayLike, n: int | None) -> np.ndarray:
    """``outcomes`` (booleans or 1, 0, −1; ``n`` items when given) as int8 :data:`RELEVANT`, :data:`NONRELEVANT`,
    :data:`IGNORED`; anything else, or a length other than ``n``, is a :class:`ValidationError`."""
    try:
        arr = np.asarray(outcomes)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"outcomes must be booleans or the integers 1, 0, -1: {exc}") from None
    if arr.ndim != 1:
        raise ValidationError(f"outcomes must be one-dimensional, got shape {arr.shape}")
    # Checked before any conversion: a length mismatch must never be cut or padded silently.
    if n is not None and arr.shape[0] != n:
        raise ValidationError(f"{arr.shape[0]} outcomes for {n} scores")
    if arr.dtype == np.bool_:
        return arr.astype(np.int8)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        numeric = np.issubdtype(arr.dtype, np.floating) and bool(np.isfinite(arr).all())
        as_int = arr.astype(np.int64) if numeric else None
        if as_int is None or not np.array_equal(as_int, arr):
            raise ValidationError("outcomes must be booleans or the integers 1, 0, -1")
        arr = as_int
    if (i := first_true((arr != RELEVANT) & (arr != NONRELEVANT) & (arr != IGNORED))) >= 0:
        raise ValidationError(f"outcome {arr[i].item()!r} is not 1 (relevant), 0 or -1 (ignored)", record=i)
    return arr.astype(np.int8, copy=False)
