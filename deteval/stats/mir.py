"""MIR F-measures over a set of tracks, with intervals and paired tests: the unit is the track (one
reference / estimate file pair).

A collection's number is the mean over tracks of each track's precision, recall and F (MIREX's and
mir_eval's convention: ``np.mean`` of the per-track scores), here summed track after track in the given
order (:mod:`deteval.stats.means`), so a track of weight 2 equals that track listed twice. Metric names:
``pairwise.precision``, ``pairwise.recall``, ``pairwise.f``, ``boundary.<tau>.precision`` / ``.recall`` /
``.f`` for every tolerance of the per-track results (:func:`~deteval.mir.evaluate.evaluate_mir`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.results import EvalResult
from deteval.stats.attach import add_statistics
from deteval.stats.means import aggregate_metric, aggregate_mix

__all__ = ["mir_collection", "track_values"]

_PRF = ("precision", "recall", "f")


def track_values(tracks: Sequence[EvalResult]) -> tuple[list[str], np.ndarray]:
    """The metric names and (n_tracks, m) per-track values of MIR results (one per track)."""
    if not tracks:
        raise ConfigError("a MIR collection needs at least one track")
    taus = list(tracks[0].summary["boundary"])
    names = [f"pairwise.{k}" for k in _PRF] + [f"boundary.{t}.{k}" for t in taus for k in _PRF]
    rows = []
    for i, r in enumerate(tracks):
        if list(r.summary["boundary"]) != taus:
            raise ConfigError(
                f"track {i} has boundary tolerances {list(r.summary['boundary'])}, track 0 {taus}"
            )
        pw, bd = r.summary["pairwise"], r.summary["boundary"]
        rows.append([float(pw[k]) for k in _PRF] + [float(bd[t][k]) for t in taus for k in _PRF])
    return names, np.array(rows, dtype=np.float64)


def mir_collection(
    tracks: Sequence[EvalResult],
    others: Sequence[tuple[str, Sequence[EvalResult]]] = (),
    *,
    names: Sequence[str] | None = None,
    statistics: bool = True,
    **options: Any,
) -> EvalResult:
    """The mean per-track P/R/F of ``tracks`` (protocol ``"mir"``, summary keyed by metric name, one
    per-class row per track, keyed by ``names`` when given), with intervals (``options["level"]``, default
    0.95) and comparisons with ``others`` = (name, the other system's results on the same tracks, in the
    same order)."""
    if names is not None and (len(names) != len(tracks) or len(set(names)) != len(names)):
        raise ConfigError(f"give one distinct name per track ({len(tracks)} tracks, {len(names)} names)")
    metrics, values = track_values(tracks)
    aggs = ["mean"] * len(metrics)
    point = aggregate_metric(values, aggs)(np.ones((1, len(tracks)), dtype=np.int64))[0]
    summary: dict[str, Any] = {"n_tracks": len(tracks), **dict(zip(metrics, point.tolist()))}
    keys = (
        list(names)
        if names is not None
        else [
            f"{r.summary.get('reference')} vs {r.summary.get('estimate')}#{i}" for i, r in enumerate(tracks)
        ]
    )
    per_class = {key: dict(zip(metrics, row.tolist())) for key, row in zip(keys, values)}
    result = EvalResult(protocol="mir", summary=summary, per_class=per_class)
    if statistics:
        pairs = []
        for other_name, other in others:
            o_metrics, o_values = track_values(other)
            if o_metrics != metrics or o_values.shape != values.shape:
                raise ConfigError(f"{other_name}: not the same tracks and tolerances as the system compared")
            pairs.append((other_name, aggregate_mix(values, o_values, aggs), (values, o_values), len(tracks)))
        add_statistics(
            result, metrics, aggregate_metric(values, aggs), len(tracks), "track", others=pairs, **options
        )
    return result
