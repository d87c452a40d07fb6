"""Figures of an evaluation: per-class PR curves, a sorted per-class bar chart, COCO precision curves.

Drawn with matplotlib's object API on an Agg canvas (``Figure`` + ``FigureCanvasAgg``), never through
``pyplot``: no display is needed, no global backend is switched (a notebook keeps its own), and matplotlib
is imported only when a plot is drawn, never at ``import deteval``.

Every figure has a fixed size in inches and a fixed dpi (no ``bbox_inches="tight"``), so its pixel size is
deterministic: ``PANEL_INCHES * DPI`` per panel of a small-multiples grid plus ``HEADER_INCHES`` for its
title and line legend, ``OVERLAY_INCHES * DPI`` for the single-axes figures, and ``BAR_WIDTH_INCHES`` x
(``1 + BAR_ROW_INCHES * rows``, at least 2.5) inches for the bar chart. Small-multiples grids are laid out
with fixed margins (a layout engine costs seconds for 80 panels).

Readable with 80 or 1,000 classes: a grid shows every class up to ``MAX_PANELS``, else the best and worst
``MAX_PANELS // 2`` by AP (the title says so); the bar chart every class up to ``MAX_BARS``, else the best
and worst ``MAX_BARS // 2`` and one row for those in between; the overlay colours every class up to
``LEGEND_MAX``, else the best and worst ``HIGHLIGHT`` over the others in grey. Titles name the threshold the
curves are drawn at (a COCO result's curves are at IoU 0.50, or OKS 0.50, and carry that AP); class names
are drawn literally (a ``$`` does not start math mode).

Files written (PNG): ``pr_curves.png`` (one panel per class), ``pr_overlay.png`` (all classes on one
axes), ``<key>_bars.png`` (per-class ``key`` sorted descending; ``delta_bars.png`` for a comparison),
``coco_precision.png`` (per category, precision at IoU 0.50, 0.75 and averaged over 0.50:0.95, against the
recall thresholds) and ``coco_precision_all.png`` (the same three curves averaged over the categories with
ground truth, whose means are pycocotools' AP50, AP75 and AP).
"""

from __future__ import annotations

import argparse
import math
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deteval.core.ap import precision_envelope
from deteval.errors import ConfigError, ValidationError
from deteval.report.delta_plot import class_deltas, class_deltas_figure, comparison_others
from deteval.report.figure import DPI as DPI  # the figures' resolution, also read here
from deteval.report.figure import literal, new_figure, plot_dir, save_png
from deteval.report.marks import system_letters
from deteval.report.progress import Progress, note
from deteval.report.tables import class_rows, numeric_columns, row_label
from deteval.results import EvalResult

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PANEL_INCHES = 2.5
OVERLAY_INCHES = (8.0, 6.0)
BAR_WIDTH_INCHES = 8.0
BAR_ROW_INCHES = 0.25
HEADER_INCHES = 0.8  # above a small-multiples grid: the title and the line legend
LEGEND_MAX = 10  # up to this many classes on one axes: every curve coloured, with a legend
HIGHLIGHT = 5  # beyond it: the best and worst HIGHLIGHT coloured and labelled, the others grey
MAX_PANELS = 24  # small multiples: more classes than this show the best and worst MAX_PANELS // 2
MAX_BARS = 40  # bar chart: more classes than this show the best and worst MAX_BARS // 2

_COCO_ARRAY = "<coco precision array>"


def grid_shape(n: int, ncols: int | None = None) -> tuple[int, int]:
    """(rows, columns) of a small-multiples grid for ``n`` panels: about square, at least 4 wide."""
    if n <= 0:
        return (1, 1)
    cols = min(n, ncols if ncols else max(4, math.ceil(math.sqrt(n))))
    return (math.ceil(n / cols), cols)


def _short(name: str, limit: int = 28) -> str:
    return literal(name if len(name) <= limit else name[: limit - 1] + "…")


def _unit_axes(ax: Axes, xlabel: str | None, ylabel: str | None, *, limits: bool = True) -> None:
    """Recall/precision axes. ``limits=False`` for the panels of a shared grid: set once, the limits and
    ticks apply to every panel (setting them on each panel costs time quadratic in the panels)."""
    if limits:
        # a little room beyond [0, 1]: a curve at precision 1.0 or recall 0 is not hidden by the frame
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.05)
        ax.set_xticks([0.0, 0.5, 1.0])
        ax.set_yticks([0.0, 0.5, 1.0])
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=8)
    if ylabel:
        ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)


def _grid_figure(n: int, ncols: int | None) -> tuple[Figure, np.ndarray]:
    """A small-multiples figure with fixed margins (no layout engine: it costs seconds for 80 panels)."""
    rows, cols = grid_shape(n, ncols)
    width, height = cols * PANEL_INCHES, rows * PANEL_INCHES + HEADER_INCHES
    fig = new_figure(width, height, layout=None)
    # shared axes: tick labels only on the outer panels (drawing tick labels is most of the time)
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
    fig.subplots_adjust(
        left=0.5 / width,
        right=1 - 0.15 / width,
        bottom=0.45 / height,
        top=1 - HEADER_INCHES / height,
        wspace=0.3,
        hspace=0.5,
    )
    return fig, axes


def _panels(axes: np.ndarray, n: int) -> Iterator[tuple[int, Axes]]:
    """The first ``n`` panels of a grid, their recall/precision axes labelled on the outer ones (the others
    turned off)."""
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.set_axis_off()
            continue
        first_col, last_row = i % axes.shape[1] == 0, i >= n - axes.shape[1]
        _unit_axes(ax, "recall" if last_row else None, "precision" if first_col else None, limits=i == 0)
        if last_row:  # the lowest panel of its column (above an empty cell, shared axes hide its numbers)
            ax.xaxis.set_tick_params(labelbottom=True)
        yield i, ax


def _ordered_curve_names(result: EvalResult) -> list[str]:
    names = [n for n in result.per_class if n in result.curves]
    return names + [n for n in result.curves if n not in result.per_class]


def best_and_worst(names: Sequence[str], values: Mapping[str, float], limit: int) -> tuple[list[str], str]:
    """All ``names`` if there are at most ``limit``; else the best and the worst ``limit // 2`` by value
    (best first), and a caption saying so. Names without a value rank last."""
    if len(names) <= limit:
        return list(names), ""
    ranked = sorted(names, key=lambda n: -values[n] if n in values else math.inf)  # stable on ties
    half = limit // 2
    return ranked[:half] + ranked[-half:], f"best {half} and worst {half} of {len(names)}"


def _curve_context(result: EvalResult) -> tuple[str, str, str]:
    """(per-class column whose value belongs to the drawn curve, its label, what the curves are)."""
    s = result.summary
    if result.protocol == "coco":
        measure = "OKS" if s.get("iou_type") == "keypoints" else "IoU"
        params = s.get("params")
        md = (params.get("max_dets") if isinstance(params, dict) else None) or ["?"]
        what = f"COCO {s.get('iou_type', 'bbox')}: interpolated precision at {measure} 0.50, area all, "
        return "ap50", f"AP@{measure}.50", what + f"maxDets {md[-1]}"
    if result.protocol == "voc":
        iou = s.get("iou_threshold", 0.5)
        return "ap", "AP", f"VOC {s.get('metric', '')}: PR curves at IoU {iou}".replace("  ", " ")
    return "ap", "AP", f"{result.protocol} PR curves"


def _curve_values(result: EvalResult, key: str) -> dict[str, float]:
    """The number printed beside each curve. COCO: the mean of the drawn curve, its AP at that threshold
    read at the curve's maxDets (the last; the per-class ``ap50`` is read where the summary reads it, which
    is ``maxDets[2]`` under pycocotools' rule when there are more than three); else the ``key`` column."""
    if result.protocol != "coco":
        _, rows = class_rows(result)
        return {name: v for name, row in rows if (v := _bar_value(result, row.get(key))) is not None}
    return {n: float(np.mean(c.precision)) for n, c in result.curves.items() if c.precision.size}


def _line_legend(fig: Figure, coco: bool) -> None:
    from matplotlib.lines import Line2D

    if coco:
        handles = [Line2D([], [], color="C0", lw=1.0, label="interpolated precision at 101 recall levels")]
    else:
        handles = [
            Line2D([], [], color="C0", lw=1.0, label="precision at each rank"),
            Line2D([], [], color="C1", lw=0.8, ls="--", label="interpolated: max precision at recall ≥ r"),
        ]
    _header_legend(fig, handles)


def _header_legend(fig: Figure, handles: list[Any]) -> None:
    """The line legend of a small-multiples grid, in its own row under the title (at the right it ran
    into a long title)."""
    top = 1 - 0.32 / fig.get_figheight()
    fig.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(0.005, top), fontsize=7, ncols=len(handles),
        frameon=False, borderaxespad=0.0,
    )  # fmt: skip


def _header_title(fig: Figure, title: str) -> None:
    """The title of a small-multiples grid, in the first row of its header (the legend is in the second)."""
    fig.suptitle(title, x=0.01, y=1 - 0.06 / fig.get_figheight(), ha="left", va="top", fontsize=10)


def pr_grid_figure(result: EvalResult, ncols: int | None = None) -> Figure:
    """The figure of ``pr_curves.png``: one panel per class (the best and worst when there are many)."""
    names = _ordered_curve_names(result)
    key, label, what = _curve_context(result)
    aps = _curve_values(result, key)
    shown, caption = best_and_worst(names, aps, MAX_PANELS)
    fig, axes = _grid_figure(len(shown), ncols)
    coco = result.protocol == "coco"
    for i, ax in _panels(axes, len(shown)):
        name = shown[i]
        curve = result.curves[name]
        ap = aps.get(name)
        ax.set_title(_short(name) + ("" if ap is None else f"  {label} {ap:.3f}"), fontsize=9)
        if curve.recall.size == 0:
            ax.text(0.5, 0.5, "no detections", ha="center", va="center", fontsize=8, transform=ax.transAxes)
            continue
        ax.plot(curve.recall, curve.precision, lw=1.0, color="C0")
        if not coco:  # COCO's curve is already the interpolated one
            env = precision_envelope(curve.precision)  # NaN (the devkit's 0/0) skipped
            ax.step(np.r_[0.0, curve.recall], np.r_[env[0], env], where="pre", lw=0.8, ls="--", color="C1")
    title = literal(what) + (f" ({caption} classes by {label})" if caption else f" ({len(names)} classes)")
    _header_title(fig, title)
    _line_legend(fig, coco)
    return fig


def _pr_overlay(result: EvalResult) -> Figure:
    from matplotlib.collections import LineCollection

    names = _ordered_curve_names(result)
    key, label, what = _curve_context(result)
    aps = _curve_values(result, key)
    fig = new_figure(*OVERLAY_INCHES)
    ax = fig.subplots()
    _unit_axes(ax, "recall", "precision")
    if len(names) <= LEGEND_MAX:
        coloured, grey = names, []
        title = f"{what}\n{len(names)} classes"
    else:
        coloured, _ = best_and_worst(names, aps, 2 * HIGHLIGHT)
        grey = [n for n in names if n not in set(coloured)]
        title = f"{what}\nbest and worst {HIGHLIGHT} of {len(names)} classes by {label} (grey: the other {len(grey)})"
    if grey:
        segments = [np.c_[result.curves[n].recall, result.curves[n].precision] for n in grey]
        ax.add_collection(LineCollection(segments, colors="0.75", linewidths=0.6, zorder=1))
    for i, name in enumerate(coloured):
        curve = result.curves[name]
        ap = aps.get(name)
        text = _short(name, 24) + ("" if ap is None else f" ({label} {ap:.3f})")
        ax.plot(curve.recall, curve.precision, lw=1.2, color=f"C{i % 10}", label=text, zorder=2)
    if coloured:
        ax.legend(fontsize=7, loc="lower left", ncols=2 if len(coloured) > 5 else 1)
    ax.set_title(literal(title), fontsize=9)
    return fig


def plot_pr_curves(result: EvalResult, out_dir: str | Path, *, ncols: int | None = None) -> list[Path]:
    """Per-class PR curves: ``pr_curves.png`` (small multiples) and ``pr_overlay.png`` (one axes).

    Each panel draws the raw curve (precision at each rank against recall) and, dashed, its interpolated
    envelope max{P(r') : r' >= r} (what VOC AP integrates); a COCO result's curves are pycocotools'
    interpolated precision at IoU 0.50 (OKS for keypoints), titled with the class's AP at that threshold.
    With more than ``MAX_PANELS`` classes, the best and worst half of that many by AP are drawn; the overlay
    colours and labels every class up to ``LEGEND_MAX``, else the best and worst ``HIGHLIGHT`` over the
    others in grey. Raises :class:`ConfigError` when the result holds no curves (save it with its curves,
    ``to_json(include_curves=True)``).
    """
    if not _ordered_curve_names(result):
        raise ConfigError("the result has no PR curves to plot (were they saved with the result?)")
    out = plot_dir(out_dir)
    return [
        save_png(pr_grid_figure(result, ncols), out / "pr_curves.png"),
        save_png(_pr_overlay(result), out / "pr_overlay.png"),
    ]


def _bar_value(result: EvalResult, value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    # pycocotools writes -1 for "no ground truth in this class": not a score, so no bar.
    if result.protocol == "coco" and value == -1:
        return None
    return float(value)


_COCO_KEYS = {"ap": "AP@[.50:.95]", "ap50": "AP@.50", "ap75": "AP@.75", "aps": "AP small", "apm": "AP medium"}


def _key_label(result: EvalResult, key: str) -> str:
    if result.protocol == "coco":
        return _COCO_KEYS.get(key, "AP large" if key == "apl" else key)
    if result.protocol == "compare":
        s = result.summary
        return f"{s.get('metric', '')} delta (B − A)".strip()
    return key


def _bars(result: EvalResult, key: str) -> Figure:
    _, rows = class_rows(result)
    values = {name: v for name, row in rows if (v := _bar_value(result, row.get(key))) is not None}
    missing = [name for name, _ in rows if name not in values]
    valued = sorted(values, key=lambda n: -values[n])  # stable on ties
    shown, caption = best_and_worst(valued, values, MAX_BARS)
    gap = len(shown) < len(valued)
    listed_missing = missing if len(missing) <= 10 else []
    ordered: list[str | None] = (
        [*shown[: len(shown) // 2], None, *shown[len(shown) // 2 :]] if gap else list(shown)
    )
    ordered += listed_missing
    n = len(ordered)
    fig = new_figure(BAR_WIDTH_INCHES, max(2.5, 1.0 + BAR_ROW_INCHES * n))
    ax = fig.subplots()
    ypos = np.arange(n)[::-1]  # first (highest) at the top
    nums = np.array([values.get(name, 0.0) if name is not None else 0.0 for name in ordered])
    colours = ["C0" if name in values else "0.8" for name in ordered]
    ax.barh(ypos, nums, color=colours, height=0.75)
    # the value is part of the class's label: one text per bar instead of two (text is most of the time)
    labels = [
        "…"
        if name is None
        else f"{_short(name, 32)}  {values[name]:.3f}"
        if name in values
        else f"{_short(name, 32)}  n/a"
        for name in ordered
    ]
    ax.set_yticks(ypos, labels, fontsize=7)
    data = [values[m] for m in valued]
    if key == "delta" or (data and (min(data) < 0 or max(data) > 1)):
        lo, hi = min([0.0, *data]), max([0.0, *data])  # fit the data (deltas are small and signed)
        pad = 0.12 * (hi - lo) if hi > lo else 0.05
        ax.set_xlim(lo - (pad if lo < 0 else 0), hi + pad)
        ax.axvline(0.0, lw=0.8, color="0.3")
    else:
        ax.set_xlim(0.0, 1.08)
    ax.set_ylim(-0.6, n - 0.4)
    for y, name in zip(ypos, ordered):
        if name is None:
            rest = [values[m] for m in valued if m not in set(shown)]
            text = f" {len(rest)} classes in between ({min(rest):.3f} – {max(rest):.3f})"
            ax.text(
                0.01, y, text, va="center", fontsize=7, style="italic", transform=ax.get_yaxis_transform()
            )
    label = _key_label(result, key)
    unit = row_label(result)  # "class", or "track" (MIR), "topic" (TREC)
    units = unit + ("es" if unit.endswith("s") else "s")
    if data:
        mean = float(np.mean(data))
        ax.axvline(mean, ls="--", lw=0.8, color="C3", label=f"mean {mean:.3f} over {len(data)} {units}")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel(literal(label), fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    if result.protocol == "compare":
        s = result.summary
        title = (
            f"per-class {label}: B = {s.get('b', 'B')}, A = {s.get('a', 'A')} (B: under test, A: baseline)"
        )
    else:
        title = f"{result.protocol}: per-{unit} {label}"
    notes = [f"{caption} {units}" if caption else "", f"{len(missing)} without a value" if missing else ""]
    notes = [t for t in notes if t]
    ax.set_title(literal(title + (f" ({'; '.join(notes)})" if notes else "")), fontsize=9)
    return fig


def plot_ap_bars(result: EvalResult, out_dir: str | Path, key: str = "ap") -> Path:
    """Horizontal bars of the per-class ``key``, highest on top; classes without a value are listed as n/a
    (counted in the title when more than 10). With more than ``MAX_BARS`` classes, the best and worst half
    of that many are drawn with one row summarising those in between. A dashed line marks the mean over
    every class that has a value. A comparison's deltas get an axis fitted to the data and a title naming
    the metric and the two inputs. Written to ``<key>_bars.png``.
    """
    if key not in numeric_columns(result):
        known = ", ".join(numeric_columns(result)) or "none"
        raise ConfigError(f"no numeric per-class column {key!r} to plot (numeric columns: {known})")
    out = plot_dir(out_dir)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", key)
    return save_png(_bars(result, key), out / f"{safe}_bars.png")


def _iou_index(iou_thrs: np.ndarray, value: float) -> int | None:
    hits = np.flatnonzero(np.isclose(iou_thrs, value, rtol=0.0, atol=1e-9))
    return int(hits[0]) if hits.size else None


def coco_precision_curves(
    precision: np.ndarray,
    iou_thrs: Sequence[float] | np.ndarray,
    *,
    area_index: int = 0,
    maxdet_index: int = -1,
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


def _coco_plan(coco_arrays: Mapping[str, Any], kind: str, ncols: int | None) -> list[tuple[str, Any]]:
    """``coco_precision.png`` and ``coco_precision_all.png`` of ``coco_arrays`` (:func:`write_plots`), checked."""
    missing = {"precision", "iou_thrs", "rec_thrs", "names"} - set(coco_arrays)
    if missing:
        raise ConfigError(f"coco_arrays lacks {', '.join(sorted(missing))}")
    area_index, maxdet_index = coco_arrays.get("area_index", 0), coco_arrays.get("maxdet_index", -1)
    arr = np.asarray(coco_arrays["precision"], dtype=np.float64)
    thrs = np.asarray(coco_arrays["iou_thrs"], dtype=np.float64)
    recs = np.asarray(coco_arrays["rec_thrs"], dtype=np.float64)
    labels = [str(n) for n in coco_arrays["names"]]
    if arr.ndim != 5:
        raise ValidationError(
            f"precision must have 5 axes [T, R, K, A, M], got shape {arr.shape}", file=_COCO_ARRAY
        )
    expected = (len(thrs), len(recs), len(labels))
    if arr.shape[:3] != expected:
        raise ValidationError(
            f"precision shape {arr.shape} does not match (iouThrs, recThrs, names) = {expected}",
            file=_COCO_ARRAY,
        )
    for axis, index in ((3, area_index), (4, maxdet_index)):
        if not -arr.shape[axis] <= index < arr.shape[axis]:
            raise ConfigError(f"index {index} out of range for axis {axis} of size {arr.shape[axis]}")
    curves = coco_precision_curves(arr, thrs, area_index=area_index, maxdet_index=maxdet_index)
    return [
        ("coco_precision.png", lambda: _coco_grid(curves, recs, labels, kind, ncols)),
        ("coco_precision_all.png", lambda: _coco_all(curves, recs, kind)),
    ]


def _measure(kind: str, label: str) -> str:
    return label.replace("IoU", "OKS") if kind == "keypoints" else label


def _width(i: int, n: int) -> float:
    """Line widths falling with the drawing order, so that equal curves (often all at precision 1.0) stay
    visible under one another."""
    return 1.0 + 0.7 * (n - 1 - i)


def _coco_grid(
    curves: dict[str, np.ndarray], recs: np.ndarray, names: list[str], kind: str, ncols: int | None
) -> Figure:
    labels = list(curves)
    mean_label = labels[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        aps = {n: float(np.nanmean(curves[mean_label][:, k])) for k, n in enumerate(names)}
    with_gt = [n for n in names if not math.isnan(aps[n])]
    shown, caption = best_and_worst(with_gt, aps, MAX_PANELS)
    index = {n: k for k, n in enumerate(names)}
    fig, axes = _grid_figure(len(shown), ncols)
    for i, ax in _panels(axes, len(shown)):
        k = index[shown[i]]
        ax.set_title(f"{_short(shown[i])}  AP {aps[shown[i]]:.3f}", fontsize=9)
        for j, label in enumerate(labels):
            ax.plot(recs, curves[label][:, k], lw=_width(j, len(labels)), color=f"C{j}")
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=f"C{j}", lw=_width(j, len(labels)), label=_measure(kind, lab))
        for j, lab in enumerate(labels)
    ]
    _header_legend(fig, handles)
    n_out = len(names) - len(with_gt)
    title = f"COCO precision per category; AP = mean over {_measure(kind, mean_label)}"
    title += f" ({caption} categories by AP)" if caption else f" ({len(with_gt)} categories)"
    if n_out:
        title += f"; {n_out} without ground truth not shown"
    _header_title(fig, literal(title))
    return fig


def _coco_all(curves: dict[str, np.ndarray], recs: np.ndarray, kind: str) -> Figure:
    fig = new_figure(*OVERLAY_INCHES)
    ax = fig.subplots()
    _unit_axes(ax, "recall", "precision")
    n_gt = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, label in enumerate(curves):
            has = ~np.all(np.isnan(curves[label]), axis=0)
            n_gt = max(n_gt, int(has.sum()))
            avg = np.nanmean(curves[label], axis=1)  # over categories with ground truth
            ap = float(np.nanmean(curves[label])) if has.any() else float("nan")
            ax.plot(
                recs,
                avg,
                lw=_width(i, len(curves)),
                color=f"C{i}",
                label=f"{_measure(kind, label)}  AP {ap:.3f}",
            )
    ax.set_title(f"COCO precision averaged over the {n_gt} categories with ground truth", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    return fig


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
    iou_type: str = "bbox",
) -> list[Path]:
    """COCO precision curves from pycocotools' ``eval["precision"]`` array, laid out ``[T, R, K, A, M]``.

    ``area_index`` / ``maxdet_index`` pick the area range and max-detections setting (default: "all" and
    the last maxDets, i.e. 100). Writes ``coco_precision.png`` (one panel per category with ground truth,
    the best and worst ``MAX_PANELS // 2`` when there are more; three curves: IoU 0.50, 0.75 and the mean
    over all thresholds, whose mean is the panel's AP) and ``coco_precision_all.png`` (the three curves
    averaged over the categories that have ground truth; their means are AP50, AP75 and AP). Keypoints
    (``iou_type="keypoints"``) say OKS.
    """
    arrays = {"precision": precision, "iou_thrs": iou_thrs, "rec_thrs": rec_thrs, "names": names}
    plan = _coco_plan({**arrays, "area_index": area_index, "maxdet_index": maxdet_index}, iou_type, ncols)
    out = plot_dir(out_dir)
    return [save_png(draw(), out / name) for name, draw in plan]


def _delta_plan(result: EvalResult) -> list[tuple[str, Any]]:
    """``class_deltas.png`` (``class_deltas_<letter>.png`` per other system when there are several) when
    the result holds a comparison with per-class AP intervals (deteval.stats, ``--compare-to``)."""
    others = comparison_others(result)
    letters = system_letters(result)
    plan: list[tuple[str, Any]] = []
    for other in others:
        if not class_deltas(result, other):
            continue
        name = "class_deltas.png" if other is None else f"class_deltas_{letters[other]}.png"
        plan.append((name, lambda o=other: class_deltas_figure(result, other=o)))
    return plan


def _plan(result: EvalResult, coco_arrays: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """(file name, function drawing its Figure) for every figure the result supports, in order."""
    plan: list[tuple[str, Any]] = []
    if result.curves:
        plan += [
            ("pr_curves.png", lambda: pr_grid_figure(result)),
            ("pr_overlay.png", lambda: _pr_overlay(result)),
        ]
    numeric = numeric_columns(result)
    if numeric:
        # A comparison is read through its deltas; any other result through its AP.
        preferred = "delta" if result.protocol == "compare" else "ap"
        key = preferred if preferred in numeric else numeric[0]
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", key)
        plan.append((f"{safe}_bars.png", lambda: _bars(result, key)))
    plan += _delta_plan(result)
    if coco_arrays is not None:
        plan += _coco_plan(coco_arrays, str(result.summary.get("iou_type", "bbox")), None)
    return plan


def figures(result: EvalResult, *, coco_arrays: Mapping[str, Any] | None = None) -> dict[str, Figure]:
    """The matplotlib Figures :func:`write_plots` would save, by file name (to show in a notebook, restyle
    or inspect; drawn on an Agg canvas, never through pyplot)."""
    return {name: draw() for name, draw in _plan(result, coco_arrays)}


def write_plots(
    result: EvalResult,
    out_dir: str | Path,
    *,
    coco_arrays: Mapping[str, Any] | None = None,
    progress: Any = None,
) -> list[Path]:
    """Every figure the result supports, saved as PNG in ``out_dir``; returns the paths.

    PR curves if it has curves; a bar chart of the per-class ``ap`` (``delta`` for a comparison, else the
    first numeric column) if it has rows; the COCO precision figures if ``coco_arrays`` is given as
    ``{"precision", "iou_thrs", "rec_thrs", "names"[, "area_index", "maxdet_index"]}``. ``progress``: a
    :class:`~deteval.report.progress.Progress` told each figure's name as it is drawn.
    """
    out = plot_dir(out_dir)
    paths = []
    for name, draw in _plan(result, coco_arrays):
        if progress is not None:
            progress.stage(f"drawing {name}")
        paths.append(save_png(draw(), out / name))
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
    with Progress(len(_plan(result, coco_arrays)), "deteval plots") as bar:
        paths = write_plots(result, out_dir, coco_arrays=coco_arrays, progress=bar)
    if paths:
        skipped = "" if result.curves else " (no PR curves: the result holds none)"
        note(f"deteval: wrote {len(paths)} plot(s) to {out_dir}: {', '.join(p.name for p in paths)}{skipped}")
    else:
        note(
            f"deteval: no plots written to {out_dir}: the result has no PR curves and no numeric "
            "per-class column"
        )
    return paths
