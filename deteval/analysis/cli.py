"""The ``--errors`` options shared by ``deteval coco`` and ``deteval voc``, and how they reach the result."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from deteval.analysis.calibration import Calibration, calibration
from deteval.analysis.confusion import Confusion
from deteval.analysis.html import write_html
from deteval.analysis.images import ImageDiagnostics
from deteval.analysis.operating import OperatingPoints, operating_points
from deteval.analysis.options import analyses_requested
from deteval.analysis.ranked import Matched
from deteval.analysis.tide import ErrorAnalysis, TideInput, format_errors
from deteval.errors import ConfigError, ValidationError
from deteval.report.progress import note
from deteval.report.tables import summary_fields
from deteval.results import EvalResult

__all__ = ["AnalysisHooks", "run_analyses"]


def _attach(
    result: EvalResult, key: str, analysis: Any, lines: Callable[[Any], list[str]], text: bool
) -> None:
    """Put an analysis in ``result``: ``summary[key]`` (its ``to_dict()``) and, where the protocol prints its
    own lines (COCO), its text (``lines(analysis)``) after them."""
    result.summary[key] = analysis.to_dict()
    if text and result.lines:
        result.lines.extend(["", *lines(analysis)])


def operating_lines(ops: OperatingPoints) -> list[str]:
    """The operating points as text: per class the threshold of maximum F1 with its P, R, F1, TP, FP and
    ground truth, and the class's F1 at the global threshold; then the global threshold."""
    rows = [(name, b, ops.global_per_class.get(name)) for name, b in ops.best.items()]
    width = max([5, *(len(name) for name, _, _ in rows)])
    g = "-" if ops.global_threshold is None else f"{ops.global_threshold:.4g}"
    out = [
        f"Operating points (maximum F1 per class; F1@global: at the global threshold {g})",
        f"  {'class':<{width}} {'threshold':>9} {'P':>6} {'R':>6} {'F1':>6} {'TP':>6} {'FP':>6} {'GT':>6} "
        f"{'F1@global':>9}",
    ]
    for name, b, at_global in rows:
        th = "-" if b["threshold"] is None else f"{b['threshold']:.4g}"
        fg = "-" if at_global is None else f"{at_global:.4f}"
        out.append(
            f"  {name:<{width}} {th:>9} {b['precision']:6.4f} {b['recall']:6.4f} {b['f1']:6.4f} {b['tp']:6d} "
            f"{b['fp']:6d} {b['n_gt']:6d} {fg:>9}"
        )
    if ops.global_threshold is not None:
        out.append(f"Global score threshold {ops.global_threshold:.4g}: mean F1 {ops.global_mean_f1:.4f}")
    return out


def calibration_lines(cal: Calibration) -> list[str]:
    """Calibration as text: ECE and MCE, then each confidence bin's detections, mean confidence, fraction
    of true positives and their gap (``-`` for an empty bin)."""
    out = [
        f"Calibration at IoU {cal.iou:g}: ECE {cal.ece:.4f}, MCE {cal.mce:.4f}",
        f"  {'bin':<11} {'detections':>10} {'confidence':>10} {'TP share':>9} {'gap':>7}",
    ]
    for i, n in enumerate(cal.count.tolist()):
        lo, hi = cal.edges[i], cal.edges[i + 1]
        conf, acc = cal.confidence[i], cal.accuracy[i]
        span = f"[{lo:.2f}, {hi:.2f}{']' if i == len(cal.count) - 1 else ')'}"
        if conf is None or acc is None:
            out.append(f"  {span:<11} {n:>10} {'-':>10} {'-':>9} {'-':>7}")
        else:
            out.append(f"  {span:<11} {n:>10} {conf:10.4f} {acc:9.4f} {acc - conf:+7.4f}")
    return out


def attach_images(result: EvalResult, diag: ImageDiagnostics, top: int, text: bool = True) -> None:
    """``summary["images"]`` with the ``top`` worst images, and a short table after the protocol's lines."""
    result.summary["images"] = diag.to_dict(top)
    if text and result.lines and diag.rows:
        result.lines.extend(["", f"Worst images (IoU {diag.iou:g}): image, fp, missed, AP loss, share"])
        result.lines.extend(
            f"  {r['image']:>14} {r['fp']:5d} {r['missed']:5d} {r['ap_loss']:9.5f} {100 * r['share']:6.1f}%"
            for r in diag.rows[:top]
        )


@dataclass
class AnalysisHooks:
    """How a protocol command computes each analysis (the CLI options are read by :func:`run_analyses`)."""

    errors: Callable[[str, float | None, float], ErrorAnalysis]  # compat, fg IoU (None: default), bg IoU
    confusion: Callable[[float], Confusion]  # score threshold
    matched: Callable[[], Matched]
    images: Callable[[], tuple[ImageDiagnostics, TideInput]]
    draw: Callable[[ImageDiagnostics, TideInput, str, int], list[Path]]  # out dir, how many
    title: str
    per_class: Callable[[], dict[str, dict]] | None = None  # for the report when the result has none


def run_analyses(args: argparse.Namespace, result: EvalResult, hooks: AnalysisHooks) -> None:
    """Compute the analyses the options ask for (all of them for ``--html``), attach them to ``result`` and
    write the pictures and the HTML report."""
    every = bool(getattr(args, "html", None))
    protocol_lines = list(result.lines)
    if not result.lines and analyses_requested(args, html=False):
        # a protocol without its own text (VOC): its flat summary becomes the lines the tables follow, so the
        # analyses print as tables instead of hundreds of dotted fields
        result.lines = [
            f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}" for k, v in summary_fields(result)
        ]
    errors = confusion = None
    if args.errors or every:
        errors = _supported(
            lambda: hooks.errors(
                args.errors_compat or "protocol", args.errors_fg_iou, _or(args.errors_bg_iou, 0.1)
            ),
            bool(args.errors),
            result,
        )
        if errors is not None:
            _attach(result, "errors", errors, format_errors, bool(args.errors))
    if args.confusion or every:
        confusion = _supported(
            lambda: hooks.confusion(_or(args.score_threshold, 0.25)),
            bool(args.confusion),
            result,
        )
        if confusion is not None:
            _attach(result, "confusion", confusion, Confusion.lines, bool(args.confusion))
    ops, cal = _matched_analyses(args, result, hooks, every)
    worst = _worst_images(args, result, hooks, every)
    if every:
        write_html(
            args.html,
            replace(
                result,
                lines=protocol_lines,
                per_class=result.per_class or (hooks.per_class() if hooks.per_class else {}),
            ),
            title=hooks.title,
            errors=errors,
            confusion=confusion,
            operating=ops,
            calibration=cal,
            worst=worst,
        )
        note(f"deteval: wrote the HTML report to {args.html}")


def _matched_analyses(
    args: argparse.Namespace, result: EvalResult, hooks: AnalysisHooks, every: bool
) -> tuple[OperatingPoints | None, Calibration | None]:
    """The analyses of the matched detections (operating points, calibration), attached to ``result``;
    calibration is left out of the HTML report with a warning where the scores are not in [0, 1]."""
    ops: OperatingPoints | None = None
    cal: Calibration | None = None
    m = None
    if args.operating_points or args.calibration or every:
        m = _supported(hooks.matched, bool(args.operating_points or args.calibration), result)
    if m is None:
        return ops, cal
    if args.operating_points or every:
        ops = operating_points(m)
        _attach(result, "operating_points", ops, operating_lines, bool(args.operating_points))
    if args.calibration or every:
        try:
            cal = calibration(m, int(_or(args.calibration_bins, 10)))
        except ValidationError:
            if args.calibration:
                raise
            result.warnings.append("calibration left out of the report: scores are not in [0, 1]")
        if cal is not None:
            _attach(result, "calibration", cal, calibration_lines, bool(args.calibration))
    return ops, cal


def _worst_images(
    args: argparse.Namespace, result: EvalResult, hooks: AnalysisHooks, every: bool
) -> list[tuple[dict, bytes]]:
    """The worst images: attached to ``result``, drawn into ``--images``, and for the HTML report drawn into
    a temporary folder (returned as rows with their pictures' bytes)."""
    worst: list[tuple[dict, bytes]] = []
    asked_images = args.worst_images is not None or bool(args.images)
    shown = _supported(hooks.images, asked_images, result) if asked_images or every else None
    if shown is None:
        return worst
    top = int(_or(args.worst_images, 10))
    diag, inp = shown
    if every:
        with tempfile.TemporaryDirectory() as tmp:
            for path, row in zip(hooks.draw(diag, inp, tmp, min(top, 6)), diag.rows):
                row.pop("picture", None)
                worst.append((dict(row), path.read_bytes()))
    if args.images:
        drawn = hooks.draw(diag, inp, args.images, top)
        note(
            f"deteval: wrote {len(drawn)} image(s) to {args.images}"
            + (f": {drawn[0].name}, ..." if drawn else "")
        )
    attach_images(result, diag, top, args.worst_images is not None or bool(args.images))
    return worst


_T = TypeVar("_T")


def _supported(make: Callable[[], _T], asked: bool, result: EvalResult) -> _T | None:
    """``make()``; where only the HTML report wants it (not asked for itself), an analysis the evaluation does
    not support (its ConfigError: the bbox-only analyses of a segm or boundary evaluation) is left out of the
    report with a warning instead."""
    try:
        return make()
    except ConfigError as exc:
        if asked:
            raise
        result.warnings.append(f"left out of the report: {exc.reason}")
        return None


def _or(value: float | int | None, default: float) -> float:
    return default if value is None else value
