"""Metrics that are aggregates of per-unit values (TREC per-topic measures, per-track MIR scores).

With per-unit values v (n, m) and unit weights w (k, n): ``mean`` = w·v / Σw, ``gm`` (trec_eval's gm_map,
whose per-topic values are logarithms) = exp(w·v / Σw), ``sum`` = w·v. w·v is summed as trec_eval sums
topics, one value after the other in unit order, unit i's value added w_i times (``sum += v_i``, not
``sum += w_i v_i``, which rounds differently): all weights 1 give trec_eval's ``all`` values bit for bit
(:func:`deteval.retrieval.trec_output.aggregate`), and a unit of weight 2 equals that unit listed twice in a row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from deteval.errors import ConfigError
from deteval.stats.bootstrap import Metric, PairMetric

__all__ = ["AGGREGATES", "aggregate_metric", "aggregate_mix"]

AGGREGATES = ("mean", "gm", "sum")


def _finish(total: np.ndarray, n: np.ndarray, aggs: Sequence[str]) -> np.ndarray:
    """``total`` (k, m) weighted sums, ``n`` (k,) total weights."""
    n = n.reshape(-1)
    out = np.empty_like(total)
    for j, agg in enumerate(aggs):
        if agg == "sum":
            out[:, j] = total[:, j]
        elif agg == "gm":
            out[:, j] = np.exp(total[:, j] / n)
        else:
            out[:, j] = total[:, j] / n
    return out


def _sequential(values: Sequence[np.ndarray], weights: Sequence[np.ndarray]) -> np.ndarray:
    """(k, m) sums, row r adding unit by unit each system's value of the unit ``weights[s][r, unit]`` times
    (systems in the given order within a unit), left to right (np.cumsum)."""
    m = values[0].shape[1]
    inter = np.stack(values, axis=1).reshape(-1, m)  # unit 0 of every system, unit 1, ...
    k = weights[0].shape[0]
    out = np.zeros((k, m))
    w_all = np.stack([np.asarray(w, dtype=np.int64) for w in weights], axis=2).reshape(k, -1)
    for r in range(k):
        items = np.repeat(inter, w_all[r], axis=0)
        if items.shape[0]:
            out[r] = np.cumsum(items, axis=0)[-1]
    return out


def _check(values: np.ndarray, aggs: Sequence[str]) -> None:
    if values.ndim != 2 or values.shape[1] != len(aggs):
        raise ConfigError(f"per-unit values must be (units, {len(aggs)}), got {values.shape}")
    bad = [a for a in aggs if a not in AGGREGATES]
    if bad:
        raise ConfigError(f"unknown aggregate {bad[0]!r}: use one of {', '.join(AGGREGATES)}")


def aggregate_metric(values: np.ndarray, aggs: Sequence[str]) -> Metric:
    """Unit weights → aggregates of the per-unit ``values`` (n_units, m), one aggregate per column."""
    v = np.asarray(values, dtype=np.float64)
    _check(v, aggs)

    def metric(w: np.ndarray) -> np.ndarray:
        return _finish(_sequential([v], [w]), w.sum(axis=1).astype(np.float64), aggs)

    return metric


def aggregate_mix(values_a: np.ndarray, values_b: np.ndarray, aggs: Sequence[str]) -> PairMetric:
    """(w_a, w_b) → aggregates of the system answering each unit with A's values w_a times and B's w_b."""
    va = np.asarray(values_a, dtype=np.float64)
    vb = np.asarray(values_b, dtype=np.float64)
    _check(va, aggs)
    _check(vb, aggs)
    if va.shape != vb.shape:
        raise ConfigError(f"the two systems have per-unit values of shapes {va.shape} and {vb.shape}")

    def mix(wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
        return _finish(
            _sequential([va, vb], [wa, wb]), (wa.sum(axis=1) + wb.sum(axis=1)).astype(np.float64), aggs
        )

    return mix
