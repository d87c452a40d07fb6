"""The ranking primitive: scores + outcome per item + n_pos → cumulative TP/FP, precision and recall.

Conventions (every protocol builds on these):

* An item's outcome is ``RELEVANT`` (1), ``NONRELEVANT`` (0) or ``IGNORED`` (-1). Ignored items (a detection
  matched to a "difficult" VOC object or a COCO crowd region) are sorted with the others, so that the tie
  policy sees the same input the reference tool sees, and then removed: they occupy no rank. This gives
  the same AP as the VOC devkit, whose ignored rows add 0 to both cumulative counts.
* ``n_pos`` is the number of relevant items in the reference. It may exceed the relevant items retrieved
  (missed objects, unretrieved documents) but never be smaller.
* Scores must be finite: a NaN has no place in a ranking, so it is rejected rather than sorted somewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from deteval.core.lists import RankedLists, presorted_lists, ranked_lists
from deteval.core.outcomes import IGNORED, NONRELEVANT, RELEVANT, TiePolicy, as_outcomes, as_scores
from deteval.errors import ValidationError

# The outcome vocabulary is defined in deteval.core.outcomes; these names stay importable from here.
__all__ = [
    "IGNORED",
    "NONRELEVANT",
    "RELEVANT",
    "Ranking",
    "TiePolicy",
    "as_outcomes",
    "as_scores",
    "rank",
]


@dataclass(frozen=True)
class Ranking:
    """A ranked list with ignored items removed.

    ``order[r]`` is the input index of the item at rank ``r + 1``; ``tp[r]`` and ``fp[r]`` are the numbers of
    relevant and non-relevant items among the first ``r + 1`` ranks.
    """

    order: np.ndarray
    scores: np.ndarray | None
    relevant: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    n_pos: int

    def __len__(self) -> int:
        return int(self.relevant.shape[0])

    @cached_property
    def lists(self) -> RankedLists:
        """This ranking as the one-list case of :class:`~deteval.core.lists.RankedLists` (every measure of
        a single ranking is computed there)."""
        return presorted_lists([len(self)], self.relevant, [self.n_pos], scores=self.scores)

    def precision(self, eps: float = 0.0) -> np.ndarray:
        """P(r) = tp / (tp + fp + eps) at every rank.

        ``eps = np.spacing(1)`` reproduces pycocotools. Without ignored items tp + fp = r >= 1, so eps = 0 never
        divides by zero.
        """
        return self.lists.precision(eps)

    def recall(self) -> np.ndarray:
        """R(r) = tp / n_pos at every rank; all zeros when ``n_pos == 0`` (nothing can be recalled)."""
        return self.lists.recall()


def _as_count(n_pos: object) -> int:
    # int(2.5) would silently truncate and int(nan) raise a bare ValueError: accept integral values only.
    try:
        value = int(n_pos)  # type: ignore[call-overload]
        integral = value == n_pos and not isinstance(n_pos, bool)
    except (TypeError, ValueError, OverflowError):
        integral = False
    if not integral or value < 0:
        raise ValidationError(f"n_pos must be a non-negative integer, got {n_pos!r}")
    return value


def rank(
    scores: ArrayLike | None,
    outcomes: ArrayLike,
    n_pos: int | None = None,
    *,
    ties: TiePolicy = "stable",
    tiebreak: ArrayLike | None = None,
    weights: ArrayLike | None = None,
) -> Ranking:
    """Rank items by descending score and accumulate TP and FP over the non-ignored ones.

    ``outcomes`` holds 1 (relevant), 0 (non-relevant), -1 (ignored) or booleans (True = relevant).
    ``n_pos`` defaults to the number of relevant items given. With ``ties="presorted"`` scores may be None.
    ``weights``: an integer per item, counted that many times (0 drops it). The one-list case of
    :func:`deteval.core.lists.ranked_lists`.

    >>> r = rank([0.9, 0.8, 0.7], [1, 0, 1], n_pos=3)
    >>> r.tp.tolist(), r.fp.tolist(), r.recall().tolist()
    ([1, 1, 2], [0, 1, 1], [0.3333333333333333, 0.3333333333333333, 0.6666666666666666])
    """
    if n_pos is not None:
        n_pos = _as_count(n_pos)
    rl = ranked_lists(None, scores, outcomes, n_pos, weights=weights, ties=ties, tiebreak=tiebreak)
    kept = rl.ranked_items
    return Ranking(
        order=rl.order[kept] if rl.order is not None else kept,
        scores=None if rl.scores is None else rl.scores[kept],
        relevant=rl.relevant,
        tp=rl.tp,
        fp=rl.fp,
        n_pos=int(rl.n_pos[0]),
    )
