"""The result shape shared by every MIR measure: counts plus P/R/F from the core's ``precision_recall_f``."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from deteval.core import precision_recall_f


@dataclass(frozen=True)
class PRFCounts:
    """Precision, recall and F-measure with the counts they come from.

    P = TP / (TP + FP), R = TP / (TP + FN), F = (1 + β²) P R / (β² P + R); an empty denominator gives 0
    (see :func:`deteval.core.precision_recall_f`). ``warnings`` lists what was tolerated, in words.
    """

    precision: float
    recall: float
    f: float
    tp: int
    fp: int
    fn: int
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """Every field but ``warnings`` (a subclass's fields included), in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "warnings"}


def prf_counts(tp: int, fp: int, fn: int, *, beta: float = 1.0, warnings: tuple[str, ...] = ()) -> PRFCounts:
    """Build :class:`PRFCounts` from integer counts through the core."""
    p, r, f = precision_recall_f(tp, fp, fn, beta=beta)
    return PRFCounts(float(p), float(r), float(f), int(tp), int(fp), int(fn), tuple(warnings))
