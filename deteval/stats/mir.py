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
from os import PathLike
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.mir.evaluate import boundary_heading, evaluate_mir
from deteval.mir.tracks import pair_folders
from deteval.results import EvalResult
from deteval.stats.attach import add_statistics
from deteval.stats.means import aggregate_metric, aggregate_mix

__all__ = ["evaluate_mir_tracks", "mir_collection", "track_values"]

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


def evaluate_mir_tracks(
    reference: str | PathLike[str],
    estimate: str | PathLike[str],
    *,
    compare_to: Sequence[str | PathLike[str]] = (),
    pattern: str = "*.lab",
    statistics: dict[str, Any] | None = None,
    **options: Any,
) -> EvalResult:
    """Pairwise and boundary P/R/F of every track of ``estimate`` (a folder) against ``reference`` (a
    folder; tracks paired by :func:`~deteval.mir.tracks.pair_folders`), per track and as the mean over tracks
    (:func:`mir_collection`).

    ``options`` go to :func:`~deteval.mir.evaluate.evaluate_mir` for every track (``taus``, ``rule``,
    ``frame_rate``, ``grid``, ``trim``, ``adjust``, ``case_sensitive``, ``on_error``). ``statistics`` (the keywords of
    :func:`deteval.stats.attach.add_statistics`: ``level``, ``n_resamples``, ``seed``, ``method``, ``test``,
    ``correction``) adds intervals over tracks and the comparisons with each folder of ``compare_to`` (the
    same tracks by another system). The summary holds the means under ``pairwise.precision``, ...,
    ``boundary.<tau>.f`` (the names of ``"ci"`` and ``"comparison"``), one per-class row per track.
    """
    tracks = pair_folders(reference, estimate, pattern=pattern)
    if statistics is not None and len(tracks) < 2:
        # one track resampled is always itself: an interval [v, v] and a detectable difference of 0 would
        # look like certainty
        raise ConfigError(
            f"intervals and tests resample the tracks, and {reference} and {estimate} hold one track: give "
            "at least two"
        )
    results = [evaluate_mir(t.reference, t.estimate, **options) for t in tracks]
    others = []
    for other in compare_to:
        pairs = pair_folders(reference, other, pattern=pattern)
        others.append((str(other), [evaluate_mir(t.reference, t.estimate, **options) for t in pairs]))
    names = [t.name for t in tracks]
    if statistics is None:
        if others:
            raise ConfigError("a comparison needs the statistics options (test, correction, ...)")
        result = mir_collection(results, names=names, statistics=False)
    else:
        result = mir_collection(results, others, names=names, **statistics)
    first = results[0].summary
    result.summary = {
        "rule": first["rule"],
        "reference": str(reference),
        "estimate": str(estimate),
        "pattern": pattern,
        "frame_rate": first["frame_rate"],
        "grid": first["grid"],
        "trim": first["trim"],
        "adjust": first["adjust"],
        "average": "mean over tracks",
        "skipped_records": sum(int(r.summary["skipped_records"]) for r in results),
        **result.summary,
    }
    result.warnings = [f"{t.name}: {w}" for t, r in zip(tracks, results) for w in r.warnings]
    result.lines = _lines(result, len(tracks), list(first["boundary"]))
    return result


def _lines(result: EvalResult, n_tracks: int, taus: list[str]) -> list[str]:
    s = result.summary
    rate = "frame indices" if s["frame_rate"] is None else f"{s['frame_rate']:g} frames/s"
    lines = [
        f"{n_tracks} track{'s' if n_tracks != 1 else ''}: reference {s['reference']}, estimate "
        f"{s['estimate']} ({s['pattern']}, paired by file name)",
        "mean over tracks (each track weighs 1, as MIREX and mir_eval average a collection); per track below",
        "",
        f"pairwise frame-label ({rate})",
        f"  precision {s['pairwise.precision']:.4f}  recall {s['pairwise.recall']:.4f}  F {s['pairwise.f']:.4f}",
        "",
        boundary_heading(s["rule"], s["trim"], s["adjust"]),
    ]
    width = max(len("tau"), *(len(k) for k in taus))
    lines.append(f"  {'tau'.rjust(width)}  precision  recall       F")
    for key in taus:
        p, r, f = (s[f"boundary.{key}.{m}"] for m in ("precision", "recall", "f"))
        lines.append(f"  {key.rjust(width)}  {p:9.4f}  {r:6.4f}  {f:6.4f}")
    return lines
