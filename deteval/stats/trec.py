"""trec_eval measures with intervals and paired tests: the unit is the topic, and every measure's ``all``
value is an aggregate of per-topic values (:mod:`deteval.stats.means`), so a resample is a weighted mean of
the per-topic values :func:`~deteval.run.trec.evaluate_trec` returns (``per_query=True``).

Measures without a per-topic value (``runid``, ``num_q``) or without an aggregate (``relstring``) get no
interval. ``gm_map`` / ``gm_bpref`` resample the per-topic logarithms (their geometric mean).
Comparisons use the topics both runs are evaluated on (a warning names how many differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.results import EvalResult
from deteval.retrieval.trec_measures import FAMILIES
from deteval.stats.attach import add_statistics
from deteval.stats.means import aggregate_metric, aggregate_mix

__all__ = ["trec_measures", "trec_statistics"]


def _agg(name: str) -> str | None:
    fam = FAMILIES.get(name)
    agg = "mean" if fam is None else fam.agg
    return agg if agg in ("mean", "gm", "sum") else None


def trec_measures(result: EvalResult) -> tuple[list[str], list[str]]:
    """The measures of ``result`` that have per-topic values and an aggregate, and their aggregates."""
    rows = list(result.per_class.values())
    names = [
        n
        for n, v in result.summary.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and _agg(n) and rows and n in rows[0]
    ]
    return names, [str(_agg(n)) for n in names]


def _values(result: EvalResult, topics: Sequence[str], names: Sequence[str]) -> np.ndarray:
    return np.array(
        [[float(result.per_class[t][n]) for n in names] for t in topics], dtype=np.float64
    ).reshape(len(topics), len(names))


def trec_statistics(
    result: EvalResult, others: Sequence[tuple[str, EvalResult]] = (), **options: Any
) -> EvalResult:
    """Add intervals of every measure (topic bootstrap) and comparisons with ``others`` (name, result) to
    ``result``; all results evaluated with ``per_query=True``. ``options``: as
    :func:`deteval.stats.attach.add_statistics` (``test`` may be ``t`` or ``wilcoxon`` here)."""
    names, aggs = trec_measures(result)
    topics = list(result.per_class)
    pairs = []
    for other_name, other in others:
        common = [t for t in topics if t in other.per_class]
        if len(common) != len(topics) or len(common) != len(other.per_class):
            result.warnings.append(
                f"comparison with {other_name}: {len(common)} common topics of {len(topics)} and "
                f"{len(other.per_class)}; the comparison uses the common ones (-c evaluates every qrels topic)"
            )
        va, vb = _values(result, common, names), _values(other, common, names)
        pairs.append((other_name, aggregate_mix(va, vb, aggs), (va, vb), len(common)))
    metric = aggregate_metric(_values(result, topics, names), aggs)
    add_statistics(result, names, metric, len(topics), "topic", others=pairs, **options)
    return result
