"""Metrics that are aggregates of per-unit values (TREC per-topic measures, per-track MIR scores).

With per-unit values v (n, m) and unit weights w (k, n): ``mean`` = w·v / Σw, ``gm`` (trec_eval's gm_map,
whose per-topic values are logarithms) = exp(w·v / Σw), ``sum`` = w·v. A weighted mean with all weights 1
sums in numpy's order, not trec_eval's sequential one: the point estimates reported come from the evaluation
itself; these functions give the resamples.
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
        wf = w.astype(np.float64)
        return _finish(wf @ v, wf.sum(axis=1, keepdims=True), aggs)

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
        fa, fb = wa.astype(np.float64), wb.astype(np.float64)
        return _finish(fa @ va + fb @ vb, (fa.sum(axis=1) + fb.sum(axis=1))[:, None], aggs)

    return mix
