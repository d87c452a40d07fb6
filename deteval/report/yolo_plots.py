"""The figures ``yolo val`` writes, under its file names and with its meanings.

* ``BoxPR_curve.png``: per class the precision envelope at IoU 0.5 against recall (``linspace(0, 1, 1000)``),
  labelled with its AP50, and the class mean labelled "all classes <mAP50> mAP@0.5";
* ``BoxF1_curve.png``, ``BoxP_curve.png``, ``BoxR_curve.png``: per class F1, precision and recall at IoU 0.5
  against the confidence grid ``linspace(0, 1, 1000)``, and the class mean after a 5 % box filter, labelled
  with its maximum and the confidence where it is reached (Ultralytics' ``plot_mc_curve``);
* ``confusion_matrix.png`` and ``confusion_matrix_normalized.png``: rows predicted, columns true (background
  last), the normalized one divided by each column's sum + 1e-9 (each true class sums to 1), cells below 0.005
  blank, from 100 classes on every other class or fewer (as Ultralytics 8.3.x and later draw it:
  :func:`~deteval.detection.ultralytics_confusion.plot_array`).

Ultralytics draws one line per class only below 21 classes, names the matrix's rows below 99 and writes its
cell values below 30 (background included); so here. The
lines of all classes go into one collection and the matrix is one image, so that 80 classes draw quickly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from deteval.core.levels import ULTRALYTICS_CONFIDENCES
from deteval.detection.ultralytics import box_filter
from deteval.detection.ultralytics_confusion import plot_array, plot_keep
from deteval.report.figure import literal, new_figure, plot_dir, save_png


class ConfusionTable(Protocol):
    """What the confusion figures read of a confusion matrix (:class:`deteval.analysis.confusion.Confusion`
    has it): rows true and columns predicted, background last, and the thresholds it was counted at."""

    labels: list[str]
    matrix: np.ndarray
    iou: float
    score_threshold: float


__all__ = ["YoloCurves", "write_yolo_val_plots"]

#: Ultralytics draws per-class lines (and a legend) only below this many classes.
PER_CLASS_LINES_BELOW = 21
#: ... names the confusion matrix's rows and columns below this many (background included) ...
TICK_LABELS_BELOW = 99
#: ... and writes the value of each cell below this many (background included).
CELL_VALUES_BELOW = 30


@dataclass
class YoloCurves:
    """What the curve figures draw: ``names`` (classes with labels), ``ap50`` per class, and K × 1000 arrays
    ``precision``, ``recall``, ``f1`` (against the confidence grid) and ``pr`` (precision against recall)."""

    names: list[str]
    ap50: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    pr: np.ndarray


def _lines(ax: object, x: np.ndarray, ys: np.ndarray, labels: list[str]) -> None:
    from matplotlib.collections import LineCollection  # matplotlib: optional, imported when drawing

    if len(ys) and len(ys) < PER_CLASS_LINES_BELOW:
        for y, label in zip(ys, labels):
            ax.plot(x, y, linewidth=1, label=literal(label))  # type: ignore[attr-defined]
    elif len(ys):
        segments = np.stack([np.broadcast_to(x, ys.shape), ys], axis=-1)
        ax.add_collection(LineCollection(list(segments), linewidths=1, colors="grey"))  # type: ignore[attr-defined]


def _curve_axes() -> tuple[Any, Any]:
    """A 9 × 6 in figure (Ultralytics' size) with room on the right for the legend."""
    fig = new_figure(9, 6, layout=None)
    fig.subplots_adjust(left=0.08, right=0.7, bottom=0.1, top=0.93)
    return fig, fig.subplots()


def _finish(fig: object, ax: object, xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    ax.set_xlabel(xlabel)  # type: ignore[attr-defined]
    ax.set_ylabel(ylabel)  # type: ignore[attr-defined]
    ax.set_xlim(0, 1)  # type: ignore[attr-defined]
    ax.set_ylim(0, 1)  # type: ignore[attr-defined]
    ax.legend(bbox_to_anchor=(1.04, 1), loc="upper left")  # type: ignore[attr-defined]
    ax.set_title(title)  # type: ignore[attr-defined]
    return save_png(fig, path)  # type: ignore[arg-type]


def _pr_figure(c: YoloCurves, path: Path) -> Path:
    fig, ax = _curve_axes()
    x = ULTRALYTICS_CONFIDENCES  # (the same grid serves as recall axis)
    _lines(ax, x, c.pr, [f"{n} {a:.3f}" for n, a in zip(c.names, c.ap50)])
    mean = c.pr.mean(0) if len(c.pr) else np.zeros_like(x)
    m50 = float(c.ap50.mean()) if len(c.ap50) else 0.0
    ax.plot(x, mean, linewidth=3, color="blue", label=f"all classes {m50:.3f} mAP@0.5")
    return _finish(fig, ax, "Recall", "Precision", "Precision-Recall Curve", path)


def _confidence_figure(ys: np.ndarray, names: list[str], ylabel: str, path: Path) -> Path:
    fig, ax = _curve_axes()
    x = ULTRALYTICS_CONFIDENCES
    _lines(ax, x, ys, names)
    mean = box_filter(ys.mean(0), 0.05) if len(ys) else np.zeros_like(x)
    best = int(mean.argmax())
    ax.plot(x, mean, linewidth=3, color="blue", label=f"all classes {mean[best]:.2f} at {x[best]:.3f}")
    return _finish(fig, ax, "Confidence", ylabel, f"{ylabel}-Confidence Curve", path)


def _confusion_figure(conf: ConfusionTable, normalize: bool, path: Path) -> Path:
    # deteval's matrix has rows true, columns predicted; Ultralytics draws rows predicted, columns true
    shown = plot_array(conf.matrix.T.astype(np.float64), normalize)
    labels = [literal(conf.labels[i]) for i in plot_keep(len(conf.labels) - 1)]
    k = len(labels)
    fig = new_figure(12, 9, layout=None)  # Ultralytics' size; a fixed layout is much faster than a solver
    # (room below for the rotated names, as Ultralytics leaves it: 0.25 less 0.001 per row, at least 0.1)
    fig.subplots_adjust(left=0.14, right=0.98, bottom=max(0.1, 0.25 - 0.001 * k), top=0.95)
    ax = fig.subplots()
    im = ax.imshow(shown, cmap="Blues", vmin=0.0, aspect="auto", interpolation="nearest")
    fig.colorbar(im, ax=ax)
    if k < TICK_LABELS_BELOW:
        size = max(6.0, 15 - 0.1 * k)
        ax.set_xticks(range(k), labels, rotation=90, fontsize=size)
        ax.set_yticks(range(k), labels, fontsize=size)
    if k < CELL_VALUES_BELOW:
        for i, j in zip(*np.nonzero(~np.isnan(shown))):
            text = f"{shown[i, j]:.2f}" if normalize else f"{int(shown[i, j])}"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xlabel("True")
    ax.set_ylabel("Predicted")
    title = "Confusion Matrix Normalized" if normalize else "Confusion Matrix"
    ax.set_title(f"{title} (IoU {conf.iou:g}, conf {conf.score_threshold:g})")
    return save_png(fig, path)


def write_yolo_val_plots(out_dir: str | Path, curves: YoloCurves, confusion: ConfusionTable) -> list[Path]:
    """Write the six figures (module docstring) into ``out_dir``; return their paths."""
    d = plot_dir(out_dir)
    return [
        _confusion_figure(confusion, False, d / "confusion_matrix.png"),
        _confusion_figure(confusion, True, d / "confusion_matrix_normalized.png"),
        _pr_figure(curves, d / "BoxPR_curve.png"),
        _confidence_figure(curves.f1, curves.names, "F1", d / "BoxF1_curve.png"),
        _confidence_figure(curves.precision, curves.names, "Precision", d / "BoxP_curve.png"),
        _confidence_figure(curves.recall, curves.names, "Recall", d / "BoxR_curve.png"),
    ]
