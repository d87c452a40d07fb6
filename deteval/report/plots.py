"""Figures of an evaluation: per-class PR curves, a sorted per-class AP bar chart, COCO precision curves.

Drawn with matplotlib's object API on an Agg canvas (``Figure`` + ``FigureCanvasAgg``), never through
``pyplot``: no display is needed, no global backend is switched (a notebook keeps its own), and matplotlib
is imported only when a plot is drawn, never at ``import deteval``.

Every figure has a fixed size in inches and a fixed dpi (no ``bbox_inches="tight"``), so its pixel size is
deterministic: ``PANEL_INCHES * DPI`` per panel of a small-multiples grid, ``OVERLAY_INCHES * DPI`` for the
single-axes figures, and ``BAR_WIDTH_INCHES`` x (``1 + BAR_ROW_INCHES * n``, at least 2.5) inches for the bar
chart of ``n`` classes.

Files written (PNG): ``pr_curves.png`` (one panel per class), ``pr_overlay.png`` (all classes on one
axes), ``<key>_bars.png`` (per-class ``key`` sorted descending), ``coco_precision.png`` (per class, precision
at IoU 0.50, 0.75 and averaged over 0.50:0.95, against the recall thresholds) and ``coco_precision_all.png``
(the same three curves averaged over classes, whose means are pycocotools' AP, AP50 and AP75).
"""

from __future__ import annotations

import argparse
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deteval.core.ap import precision_envelope
from deteval.errors import ConfigError, ValidationError
from deteval.report.progress import note
from deteval.report.tables import class_rows, numeric_columns
from deteval.results import EvalResult

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 100
PANEL_INCHES = 2.5
OVERLAY_INCHES = (8.0, 6.0)
BAR_WIDTH_INCHES = 8.0
BAR_ROW_INCHES = 0.25
LEGEND_MAX = 20  # more classes than this on one axes: a legend would cover the plot

_COCO_ARRAY = "<coco precision array>"


def _figure(width_in: float, height_in: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    try:
        fig.savefig(path, dpi=DPI, format="png")
    except OSError as exc:
        raise ConfigError(f"cannot write plot: {exc.strerror or exc}", file=path) from None
    return path


def _out_dir(out_dir: str | Path) -> Path:
    path = Path(out_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the plot folder: {exc.strerror or exc}", file=path) from None
    return path


def grid_shape(n: int, ncols: int | None = None) -> tuple[int, int]:
    """(rows, columns) of a small-multiples grid for ``n`` panels: about square, at least 4 wide."""
    if n <= 0:
        return (1, 1)
    cols = min(n, ncols if ncols else max(4, math.ceil(math.sqrt(n))))
    return (math.ceil(n / cols), cols)


def _short(name: str, limit: int = 28) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _unit_axes(ax: Axes, xlabel: str, ylabel: str) -> None:
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)


def _envelope(precision: np.ndarray) -> np.ndarray:
    # The core's envelope skips NaN (the devkit's 0/0 precision), as the interpolated AP sees it.
    return precision_envelope(precision)


def _ordered_curve_names(result: EvalResult) -> list[str]:
    names = [n for n in result.per_class if n in result.curves]
    return names + [n for n in result.curves if n not in result.per_class]


def _column(result: EvalResult, key: str) -> dict[str, float]:
    """``{class: value}`` of one numeric per-class column (classes without a number left out)."""
    _, rows = class_rows(result)
    return {
        name: float(row[key])
        for name, row in rows
        if isinstance(row.get(key), (int, float)) and not isinstance(row.get(key), bool)
    }


def plot_pr_curves(result: EvalResult, out_dir: str | Path, *, ncols: int | None = None) -> list[Path]:
    """Per-class PR curves: ``pr_curves.png`` (small multiples) and ``pr_overlay.png`` (one axes).

    Each panel draws the raw curve (precision at each rank against recall) and, dashed, its interpolated
    envelope max{P(r') : r' >= r} (what VOC and COCO AP integrate). The panel title carries the class AP
    when the per-class row has an ``ap``. Raises :class:`ConfigError` when the result holds no curves
    (save it with its curves, ``to_json(include_curves=True)``).
    """
    names = _ordered_curve_names(result)
    if not names:
        raise ConfigError("the result has no PR curves to plot (were they saved with the result?)")
    out = _out_dir(out_dir)
    aps = _column(result, "ap")
    rows, cols = grid_shape(len(names), ncols)
    fig = _figure(cols * PANEL_INCHES, rows * PANEL_INCHES)
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(names):
            ax.set_axis_off()
            continue
        name = names[i]
        curve = result.curves[name]
        _unit_axes(ax, "recall", "precision")
        ap = aps.get(name)
        ax.set_title(_short(name) + ("" if ap is None else f"  AP {ap:.3f}"), fontsize=9)
        if curve.recall.size == 0:
            ax.text(0.5, 0.5, "no detections", ha="center", va="center", fontsize=8, transform=ax.transAxes)
            continue
        ax.plot(curve.recall, curve.precision, lw=1.0, color="C0")
        env = _envelope(curve.precision)
        ax.step(np.r_[0.0, curve.recall], np.r_[env[0], env], where="pre", lw=0.8, ls="--", color="C1")
    paths = [_save(fig, out / "pr_curves.png")]

    fig = _figure(*OVERLAY_INCHES)
    ax = fig.subplots()
    _unit_axes(ax, "recall", "precision")
    ax.set_title(f"{result.protocol} PR curves ({len(names)} classes)", fontsize=10)
    for i, name in enumerate(names):
        curve = result.curves[name]
        ap = aps.get(name)
        label = _short(name, 20) + ("" if ap is None else f" ({ap:.3f})")
        ax.plot(curve.recall, curve.precision, lw=1.0, color=f"C{i % 10}", label=label)
    if len(names) <= LEGEND_MAX:
        ax.legend(fontsize=7, loc="lower left", ncols=2 if len(names) > 10 else 1)
    paths.append(_save(fig, out / "pr_overlay.png"))
    return paths


def _bar_value(result: EvalResult, value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    # pycocotools writes -1 for "no ground truth in this class": not a score, so no bar.
    if result.protocol == "coco" and value == -1:
        return None
    return float(value)


def plot_ap_bars(result: EvalResult, out_dir: str | Path, key: str = "ap") -> Path:
    """Horizontal bars of the per-class ``key``, highest on top; classes without a value are listed as n/a.

    A dashed line marks the mean over the classes that have a value. Written to ``<key>_bars.png``.
    """
    if key not in numeric_columns(result):
        known = ", ".join(numeric_columns(result)) or "none"
        raise ConfigError(f"no numeric per-class column {key!r} to plot (numeric columns: {known})")
    out = _out_dir(out_dir)
    _, rows = class_rows(result)
    values = [(name, _bar_value(result, row.get(key))) for name, row in rows]
    valued = sorted((v for v in values if v[1] is not None), key=lambda nv: -nv[1])  # stable on ties
    missing = [v for v in values if v[1] is None]
    ordered = valued + missing
    n = len(ordered)
    fig = _figure(BAR_WIDTH_INCHES, max(2.5, 1.0 + BAR_ROW_INCHES * n))
    ax = fig.subplots()
    ypos = np.arange(n)[::-1]  # first (highest) at the top
    nums = np.array([v if v is not None else 0.0 for _, v in ordered])
    ax.barh(ypos, nums, color=["C0" if v is not None else "0.8" for _, v in ordered], height=0.75)
    ax.set_yticks(ypos, [_short(name, 32) for name, _ in ordered], fontsize=7)
    lo = min(0.0, float(nums.min()) if n else 0.0)
    hi = max(1.0, float(nums.max()) if n else 1.0)
    ax.set_xlim(lo, hi * 1.08)
    ax.set_ylim(-0.6, n - 0.4)
    for y, (_, v) in zip(ypos, ordered):
        ax.text(
            max(v, 0.0) if v is not None else 0.0,
            y,
            f" {v:.3f}" if v is not None else " n/a",
            va="center",
            fontsize=6,
        )
    if valued:
        mean = float(np.mean([v for _, v in valued]))
        ax.axvline(mean, ls="--", lw=0.8, color="C3", label=f"mean {mean:.3f} over {len(valued)}")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel(key, fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(f"{result.protocol}: per-class {key}", fontsize=10)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", key)
    return _save(fig, out / f"{safe}_bars.png")


def _iou_index(iou_thrs: np.ndarray, value: float) -> int | None:
    hits = np.flatnonzero(np.isclose(iou_thrs, value, rtol=0.0, atol=1e-9))
    return int(hits[0]) if hits.size else None


def coco_precision_curves(
    precision: np.ndarray, iou_thrs: Sequence[float], *, area_index: int = 0, maxdet_index: int = -1
) -> dict[str, np.ndarray]:
    """Per-class precision against the recall thresholds: ``{"IoU=0.50": [R, K], "IoU=0.75": ...,
    "IoU=0.50:0.95": mean over the IoU thresholds}``; pycocotools' -1 (no ground truth) becomes NaN."""
    p = np.asarray(precision, dtype=np.float64)[:, :, :, area_index, maxdet_index]  # [T, R, K]
    p = np.where(p == -1, np.nan, p)
    thrs = np.asarray(iou_thrs, dtype=np.float64)
    out: dict[str, np.ndarray] = {}
    for value, label in ((0.5, "IoU=0.50"), (0.75, "IoU=0.75")):
        t = _iou_index(thrs, value)
        if t is not None:
            out[label] = p[t]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: classes without ground truth
        lo, hi = thrs.min(), thrs.max()
        out[f"IoU={lo:.2f}:{hi:.2f}" if thrs.size > 1 else f"IoU={lo:.2f}"] = np.nanmean(p, axis=0)
    return out


def plot_coco_precision(
    precision: np.ndarray,
    iou_thrs: Sequence[float],
    rec_thrs: Sequence[float],
    names: Sequence[str],
    out_dir: str | Path,
    *,
    area_index: int = 0,
    maxdet_index: int = -1,
    ncols: int | None = None,
) -> list[Path]:
    """COCO precision curves from pycocotools' ``eval["precision"]`` array, laid out ``[T, R, K, A, M]``.

    ``area_index`` / ``maxdet_index`` pick the area range and max-detections setting (default: "all" and
    the last maxDets, i.e. 100). Writes ``coco_precision.png`` (one panel per category, three curves:
    IoU 0.50, 0.75 and the mean over all thresholds) and ``coco_precision_all.png`` (the three curves
    averaged over the categories that have ground truth; their means are AP50, AP75 and AP).
    """
    arr = np.asarray(precision, dtype=np.float64)
    thrs = np.asarray(iou_thrs, dtype=np.float64)
    recs = np.asarray(rec_thrs, dtype=np.float64)
    names = [str(n) for n in names]
    if arr.ndim != 5:
        raise ValidationError(
            f"precision must have 5 axes [T, R, K, A, M], got shape {arr.shape}", file=_COCO_ARRAY
        )
    expected = (len(thrs), len(recs), len(names))
    if arr.shape[:3] != expected:
        raise ValidationError(
            f"precision shape {arr.shape} does not match (iouThrs, recThrs, names) = {expected}",
            file=_COCO_ARRAY,
        )
    for axis, index in ((3, area_index), (4, maxdet_index)):
        if not -arr.shape[axis] <= index < arr.shape[axis]:
            raise ConfigError(f"index {index} out of range for axis {axis} of size {arr.shape[axis]}")
    out = _out_dir(out_dir)
    curves = coco_precision_curves(arr, thrs, area_index=area_index, maxdet_index=maxdet_index)
    labels = list(curves)

    rows, cols = grid_shape(len(names), ncols)
    fig = _figure(cols * PANEL_INCHES, rows * PANEL_INCHES)
    axes = fig.subplots(rows, cols, squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(names):
            ax.set_axis_off()
            continue
        _unit_axes(ax, "recall", "precision")
        mean_curve = curves[labels[-1]][:, k]
        if np.all(np.isnan(mean_curve)):
            ax.set_title(_short(names[k]), fontsize=9)
            ax.text(0.5, 0.5, "no ground truth", ha="center", va="center", fontsize=8, transform=ax.transAxes)
            continue
        ax.set_title(f"{_short(names[k])}  AP {np.nanmean(mean_curve):.3f}", fontsize=9)
        for i, label in enumerate(labels):
            ax.plot(recs, curves[label][:, k], lw=1.0, color=f"C{i}", label=label)
        if k == 0:
            ax.legend(fontsize=6, loc="lower left")
    paths = [_save(fig, out / "coco_precision.png")]

    fig = _figure(*OVERLAY_INCHES)
    ax = fig.subplots()
    _unit_axes(ax, "recall", "precision")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, label in enumerate(labels):
            avg = np.nanmean(curves[label], axis=1)  # over categories with ground truth
            ap = float(np.nanmean(curves[label])) if not np.all(np.isnan(curves[label])) else float("nan")
            ax.plot(recs, avg, lw=1.2, color=f"C{i}", label=f"{label}  AP {ap:.3f}")
    ax.set_title(f"COCO precision over {len(names)} categories", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    paths.append(_save(fig, out / "coco_precision_all.png"))
    return paths


def write_plots(
    result: EvalResult, out_dir: str | Path, *, coco_arrays: Mapping[str, Any] | None = None
) -> list[Path]:
    """Every figure the result supports.

    PR curves if it has curves; a bar chart of the per-class ``ap`` (``delta`` for a comparison, else the
    first numeric column) if it has rows; the COCO precision figures if ``coco_arrays`` is given as
    ``{"precision", "iou_thrs", "rec_thrs", "names"[, "area_index", "maxdet_index"]}``.
    """
    out = _out_dir(out_dir)
    paths: list[Path] = []
    if result.curves:
        paths += plot_pr_curves(result, out)
    numeric = numeric_columns(result)
    if numeric:
        # A comparison is read through its deltas; any other result through its AP.
        preferred = "delta" if result.protocol == "compare" else "ap"
        paths.append(plot_ap_bars(result, out, preferred if preferred in numeric else numeric[0]))
    if coco_arrays is not None:
        missing = {"precision", "iou_thrs", "rec_thrs", "names"} - set(coco_arrays)
        if missing:
            raise ConfigError(f"coco_arrays lacks {', '.join(sorted(missing))}")
        paths += plot_coco_precision(
            coco_arrays["precision"],
            coco_arrays["iou_thrs"],
            coco_arrays["rec_thrs"],
            coco_arrays["names"],
            out,
            area_index=coco_arrays.get("area_index", 0),
            maxdet_index=coco_arrays.get("maxdet_index", -1),
        )
    return paths


def add_plot_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--plots DIR`` to a subcommand."""
    parser.add_argument(
        "--plots",
        metavar="DIR",
        default=None,
        help="also write PNG figures (PR curves, per-class AP bars) to DIR",
    )


def write_plots_from_args(
    result: EvalResult, args: argparse.Namespace, *, coco_arrays: Mapping[str, Any] | None = None
) -> list[Path]:
    """What a subcommand calls after evaluating: write the figures if ``--plots DIR`` was given and say
    so on stderr (silenced by ``--quiet``). Returns the files written (none without ``--plots``)."""
    out_dir = getattr(args, "plots", None)
    if not out_dir:
        return []
    paths = write_plots(result, out_dir, coco_arrays=coco_arrays)
    if paths:
        skipped = "" if result.curves else " (no PR curves: the result holds none)"
        note(f"deteval: wrote {len(paths)} plot(s) to {out_dir}: {', '.join(p.name for p in paths)}{skipped}")
    else:
        note(
            f"deteval: no plots written to {out_dir}: the result has no PR curves and no numeric "
            "per-class column"
        )
    return paths
