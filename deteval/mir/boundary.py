"""Boundary and onset precision, recall and F-measure with a tolerance τ.

A boundary annotation is a sorted set of positions: frame indices (FMP), or times in seconds (mir_eval).
An estimated boundary b_est is in reach of a reference boundary b_ref when |b_est − b_ref| ≤ τ (decided as
mir_eval decides it, see :mod:`deteval.mir.matching`). Two rules:

``fmp`` (FMP, Section 4.5.4, as its text defines it)
    TP = estimates with a reference in reach, FP = estimates without, FN = references with no estimate in
    reach. Several estimates in one window all count, and one estimate may serve several references.
    libfmp's code (``evaluate_boundary``) adds, for each reference, the number of estimates in its window,
    so an estimate inside two windows counts twice (TP = 2 for one estimate); here it counts once, as the
    text says ("the true positives are the items b_est that are correct"). P, R and F agree with libfmp
    whenever no estimate sits in two windows.
``one_to_one`` (mir_eval.segment.detection, mir_eval.onset.f_measure; the default)
    TP = size of a maximum matching in which each reference and each estimate is used at most once and
    every matched pair is in reach; FP = #est − TP, FN = #ref − TP.

P = TP / (TP + FP), R = TP / (TP + FN), F = 2PR / (P + R), through the core's ``precision_recall_f``; no
estimate (or no reference) gives P (or R) = 0, as in mir_eval.

FMP asks for boundaries more than 2τ apart (|b_{k+1} − b_k| > 2τ, FMP Eq. 4.58); otherwise one window can
hold several boundaries and the scores lose their meaning. When the reference or the estimate breaks that
condition, :func:`boundary_prf` emits a :class:`BoundarySpacingWarning` and lists it in ``warnings``.
"""

from __future__ import annotations

import warnings as _warnings
from typing import Any, Literal

import numpy as np

from deteval.errors import ConfigError, DetevalWarning, InputFormatError, ValidationError, first_true
from deteval.io.lab import as_segments
from deteval.mir.counts import PRFCounts, prf_counts
from deteval.mir.matching import fmp_counts, match_one_to_one
from deteval.tables.segments import Segments

Rule = Literal["fmp", "one_to_one"]
RULES: tuple[str, ...] = ("fmp", "one_to_one")


class BoundarySpacingWarning(DetevalWarning):
    """Two boundaries of one annotation are at most 2τ apart (FMP's minimum-distance condition fails)."""


def segment_boundaries(segments: Any, *, trim: bool = False, decimals: int | None = 5) -> np.ndarray:
    """The boundaries of a segment annotation: the sorted unique start and end times.

    mir_eval's convention (``util.intervals_to_boundaries``): times are rounded to ``decimals`` (5) before
    the duplicates are merged, so a start 1e-6 s after the previous end is one boundary; ``decimals=None``
    keeps the times as they are. ``trim=True`` drops the first and the last boundary (usually the start and
    the end of the track), as ``mir_eval.segment.detection(trim=True)``.
    """
    seg = as_segments(segments)
    times = np.concatenate([seg.starts, seg.ends])
    if decimals is not None:
        times = np.round(times, decimals)
    b = np.unique(times)
    return b[1:-1] if trim else b


def boundaries_from_binary(flags: Any, *, name: str = "boundary array") -> np.ndarray:
    """Indices of the 1s of a binary boundary array (FMP's B = (0, 0, 1, 0, ...))."""
    arr = np.asarray(flags)
    if arr.ndim != 1:
        raise InputFormatError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf" or not np.all((arr == 0) | (arr == 1)):
        raise ValidationError(f"{name} must hold only 0 and 1")
    return np.flatnonzero(arr).astype(np.float64)


def _positions(values: Any, name: str, binary: bool, trim: bool) -> np.ndarray:
    if isinstance(values, Segments):
        return segment_boundaries(values, trim=trim)
    if binary:
        return boundaries_from_binary(values, name=f"{name} boundary array")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputFormatError(f"{name} positions must be numbers") from None
    if arr.ndim != 1:
        raise InputFormatError(f"{name} positions must be one-dimensional, got shape {arr.shape}")
    if (i := first_true(~np.isfinite(arr))) >= 0:
        raise ValidationError(f"{name} position {arr[i]!r} is not finite", record=i)
    return np.sort(arr, kind="stable")


def _check_tau(tau: float) -> float:
    try:
        t = float(tau)
    except (TypeError, ValueError):
        raise ConfigError(f"tolerance must be a number, got {tau!r}") from None
    if not np.isfinite(t) or t < 0:
        raise ConfigError(f"tolerance must be a finite number >= 0, got {tau!r}")
    return t


def spacing_warnings(positions: np.ndarray, tau: float, name: str) -> list[str]:
    """Messages for neighbours at most 2τ apart (FMP's condition |b_{k+1} − b_k| > 2τ fails)."""
    d = np.diff(positions)
    bad = np.flatnonzero(d <= 2 * tau)
    if not bad.size:
        return []
    k = int(bad[np.argmin(d[bad])])
    return [
        f"{bad.size} pair(s) of {name} boundaries are at most 2*tau = {2 * tau:g} apart "
        f"(closest: {positions[k]:g} and {positions[k + 1]:g}); one tolerance window can hold several "
        "boundaries (FMP's condition |b[k+1] - b[k]| > 2*tau does not hold)"
    ]


def boundary_prf(
    reference: Any,
    estimate: Any,
    tau: float,
    *,
    rule: Rule = "one_to_one",
    binary: bool = False,
    trim: bool = False,
    beta: float = 1.0,
    warn: bool = True,
) -> PRFCounts:
    """Boundary P/R/F with tolerance ``tau`` under ``rule`` (``"one_to_one"`` or ``"fmp"``).

    ``reference``/``estimate``: positions (frame indices or seconds, any order), binary boundary arrays
    with ``binary=True``, or :class:`~deteval.tables.segments.Segments` (their :func:`segment_boundaries`, with
    ``trim``). ``warn=False`` keeps the spacing messages in the result only.

    >>> ref = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    >>> est = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0]
    >>> r = boundary_prf(ref, est, 1, rule="fmp", binary=True)
    >>> r.tp, r.fp, r.fn, r.precision, round(r.recall, 4), round(r.f, 4)
    (2, 2, 1, 0.5, 0.6667, 0.5714)
    """
    if rule not in RULES:
        raise ConfigError(f"unknown boundary rule {rule!r}; choose one of {', '.join(RULES)}")
    t = _check_tau(tau)
    if trim and not (isinstance(reference, Segments) and isinstance(estimate, Segments)):
        raise ConfigError("trim applies to segment annotations; drop the first and last positions yourself")
    if binary and np.shape(reference) != np.shape(estimate):
        raise ValidationError(
            f"binary boundary arrays index the same frames and must have one length "
            f"(reference {np.shape(reference)}, estimate {np.shape(estimate)})"
        )
    ref = _positions(reference, "reference", binary, trim)
    est = _positions(estimate, "estimate", binary, trim)
    if rule == "fmp":
        tp, fp, fn = fmp_counts(ref, est, t)
    else:
        tp = int(match_one_to_one(ref, est, t)[0].shape[0])
        fp, fn = int(est.shape[0]) - tp, int(ref.shape[0]) - tp
    spacing = spacing_warnings(ref, t, "reference") + spacing_warnings(est, t, "estimated")
    messages = [f"tau {t:g}: {m}" for m in spacing]
    if warn:
        for m in messages:
            _warnings.warn(m, BoundarySpacingWarning, stacklevel=2)
    return prf_counts(tp, fp, fn, beta=beta, warnings=tuple(messages))


def onset_prf(reference: Any, estimate: Any, window: float = 0.05, *, beta: float = 1.0) -> PRFCounts:
    """Event (onset) P/R/F: one-to-one matching within ±``window`` seconds (mir_eval.onset.f_measure).

    Times in any order; duplicates allowed (each one is matched at most once). mir_eval returns
    ``(F, P, R)``; this returns :class:`PRFCounts` with the counts too.

    >>> r = onset_prf([0.10, 0.50, 1.00], [0.12, 0.52, 0.58, 1.30])
    >>> r.tp, r.fp, r.fn, r.precision, r.recall
    (2, 2, 1, 0.5, 0.6666666666666666)
    """
    t = _check_tau(window)
    ref = _positions(reference, "reference", False, False)
    est = _positions(estimate, "estimate", False, False)
    tp = int(match_one_to_one(ref, est, t)[0].shape[0])
    return prf_counts(tp, int(est.shape[0]) - tp, int(ref.shape[0]) - tp, beta=beta)
