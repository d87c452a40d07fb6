"""Set precision, recall and F-measure (FMP, Section 4.5.1).

Items are any hashable values, compared by value. With I⁺_ref and I⁺_est the positive items of the
reference and the estimate: TP = |I⁺_est ∩ I⁺_ref|, FP = |I⁺_est \\ I⁺_ref|, FN = |I⁺_ref \\ I⁺_est|.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from deteval.errors import ValidationError
from deteval.mir.counts import PRFCounts, prf_counts


def _as_set(values: Iterable[Any], name: str) -> set[Any]:
    if isinstance(values, np.ndarray):
        values = values.tolist()
    try:
        return set(values)
    except TypeError as exc:
        raise ValidationError(f"{name} items must be hashable ({exc})") from None


def set_prf(
    reference: Iterable[Any],
    estimate: Iterable[Any],
    items: Iterable[Any] | None = None,
    *,
    beta: float = 1.0,
) -> PRFCounts:
    """P/R/F of an estimated positive set against a reference positive set.

    ``items`` (optional) is the whole item set I; when given, both positive sets must lie inside it.
    Duplicates count once (these are sets).

    >>> r = set_prf([0, 1, 2, 3], [0, 1, 2, 4, 5], range(10))
    >>> r.precision, r.recall, r.f, r.tp, r.fp, r.fn
    (0.6, 0.75, 0.6666666666666665, 3, 2, 1)
    """
    ref = _as_set(reference, "reference")
    est = _as_set(estimate, "estimate")
    if items is not None:
        universe = _as_set(items, "items")
        for name, s in (("reference", ref), ("estimate", est)):
            outside = s - universe
            if outside:
                raise ValidationError(
                    f"{len(outside)} {name} item(s) are not in the item set, e.g. {next(iter(outside))!r}"
                )
    tp = len(ref & est)
    return prf_counts(tp, len(est) - tp, len(ref) - tp, beta=beta)
