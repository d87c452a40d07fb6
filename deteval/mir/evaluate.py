"""One call for a structure annotation pair: pairwise frame-label P/R/F and boundary P/R/F per tolerance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.io.lab import as_segments
from deteval.mir.boundary import RULES, Rule, boundary_prf, segment_boundaries, spacing_warnings
from deteval.mir.pairwise import Grid, PairwiseResult, pairwise_prf
from deteval.mir.timespan import adjust_to_reference
from deteval.results import EvalResult
from deteval.tables.segments import Segments

DEFAULT_TAUS: tuple[str, ...] = ("0.5", "3.0")


def boundary_heading(rule: str, trim: bool, adjust: bool) -> str:
    """The heading of the boundary table in the plain-text rendering (rule and options)."""
    return (
        f"boundary detection (rule {rule}{', trimmed' if trim else ''}"
        f"{', spans adjusted as mir_eval.segment.evaluate' if adjust else ''})"
    )


def evaluate_mir(
    reference: Any,
    estimate: Any,
    *,
    taus: Sequence[float | str] = DEFAULT_TAUS,
    rule: Rule = "one_to_one",
    frame_rate: float | None = 10.0,
    grid: Grid = "exact",
    trim: bool = False,
    case_sensitive: bool = True,
    on_error: str = "raise",
    adjust: bool = False,
) -> EvalResult:
    """Pairwise and boundary P/R/F of an estimated structure annotation against a reference.

    ``reference``/``estimate``: ``.lab`` paths, :class:`~deteval.tables.segments.Segments` or ``[[start, end,
    label], ...]``. ``taus`` are boundary tolerances (seconds, or frames when ``frame_rate`` is None); each
    keys the ``boundary`` block by its text as given (``"0.5"``, ``"3.0"``). ``frame_rate`` samples the
    pairwise measure (mir_eval's default frame size 0.1 s is 10 frames/s). The JSON document is::

        {"protocol": "mir", "rule": ..., "pairwise": {"precision", "recall", "f", "tp", "fp", "fn",
         "n_frames"}, "boundary": {"0.5": {"precision", "recall", "f", "tp", "fp", "fn"}, ...}, ...}

    Boundary spacing problems (FMP's 2τ condition) and unlabelled frames go to ``warnings``. With
    ``on_error="skip"`` bad ``.lab`` lines are left out (see :func:`deteval.io.lab.load_lab`), each listed
    in ``warnings`` and counted in ``skipped_records``. ``adjust=True`` first pads the reference to start
    at 0 and cuts or pads the estimate to the reference's span, as ``mir_eval.segment.evaluate`` does
    (:func:`deteval.mir.timespan.adjust_to_reference`); the segment and boundary counts are then those of
    the adjusted annotations.
    """
    if rule not in RULES:
        raise ConfigError(f"unknown boundary rule {rule!r}; choose one of {', '.join(RULES)}")
    keys, values = _tolerances(taus)
    ref = as_segments(reference, source="<reference>", on_error=on_error)
    est = as_segments(estimate, source="<estimate>", on_error=on_error)
    skipped = list(ref.skipped) + list(est.skipped)
    if adjust:
        ref, est = adjust_to_reference(ref, est)

    pw = pairwise_prf(ref, est, frame_rate=frame_rate, grid=grid, case_sensitive=case_sensitive)
    warnings = [f"skipped bad record: {s}" for s in skipped] + list(pw.warnings)
    ref_b = segment_boundaries(ref, trim=trim)
    est_b = segment_boundaries(est, trim=trim)
    boundary: dict[str, dict[str, Any]] = {}
    for key, tau in zip(keys, values):
        res = boundary_prf(ref_b, est_b, tau, rule=rule, warn=False)
        boundary[key] = res.to_dict()
        spacing = spacing_warnings(ref_b, tau, "reference") + spacing_warnings(est_b, tau, "estimated")
        warnings.extend(f"boundary tau {key}: {w}" for w in spacing)

    summary: dict[str, Any] = {
        "rule": rule,
        "reference": ref.source,
        "estimate": est.source,
        "frame_rate": frame_rate,
        "grid": grid,
        "trim": trim,
        "adjust": adjust,
        "n_reference_segments": len(ref),
        "n_estimated_segments": len(est),
        "n_reference_boundaries": int(ref_b.shape[0]),
        "n_estimated_boundaries": int(est_b.shape[0]),
        "pairwise": pw.to_dict(),
        "boundary": boundary,
        "skipped_records": len(skipped),
    }
    lines = _lines(ref, est, ref_b, est_b, pw, summary)
    return EvalResult(protocol="mir", summary=summary, warnings=warnings, lines=lines)


def _tolerances(taus: Sequence[float | str]) -> tuple[list[str], list[float]]:
    """The boundary tolerances' keys (their text as given) and values; none, a repeated one or one that is
    not a number is refused."""
    if not taus:
        raise ConfigError("give at least one boundary tolerance")
    keys = [t.strip() if isinstance(t, str) else str(t) for t in taus]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ConfigError(f"tolerance given twice: {', '.join(dup)}")
    try:
        values = [float(t) for t in taus]
    except (TypeError, ValueError):
        raise ConfigError(f"tolerances must be numbers, got {list(taus)!r}") from None
    return keys, values


def _lines(
    ref: Segments,
    est: Segments,
    ref_b: np.ndarray,
    est_b: np.ndarray,
    pw: PairwiseResult,
    summary: dict[str, Any],
) -> list[str]:
    """The plain-text rendering of one pair's result: the annotations, the pairwise and the boundary table."""
    rule, trim, adjust = summary["rule"], summary["trim"], summary["adjust"]
    frame_rate, boundary = summary["frame_rate"], summary["boundary"]
    rate = "frame indices" if frame_rate is None else f"{frame_rate:g} frames/s"
    unit = "frames" if frame_rate is None else "s"
    keys = list(boundary)
    lines = [
        f"reference: {ref.source}  ({len(ref)} segments, {ref_b.shape[0]} boundaries, "
        f"ends at {ref.duration:g} {unit})",
        f"estimate:  {est.source}  ({len(est)} segments, {est_b.shape[0]} boundaries, "
        f"ends at {est.duration:g} {unit})",
        "",
        f"pairwise frame-label ({rate}, {pw.n_frames} frames)",
        f"  precision {pw.precision:.4f}  recall {pw.recall:.4f}  F {pw.f:.4f}   "
        f"(pairs: TP {pw.tp}  FP {pw.fp}  FN {pw.fn})",
        "",
        boundary_heading(rule, trim, adjust),
    ]
    width = max(len("tau"), *(len(k) for k in keys))
    lines.append(f"  {'tau'.rjust(width)}  precision  recall       F    TP    FP    FN")
    for key in keys:
        b = boundary[key]
        lines.append(
            f"  {key.rjust(width)}  {b['precision']:9.4f}  {b['recall']:6.4f}  {b['f']:6.4f}"
            f"  {b['tp']:4d}  {b['fp']:4d}  {b['fn']:4d}"
        )
    return lines
