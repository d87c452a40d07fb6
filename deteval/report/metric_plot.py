"""``MeanAveragePrecision.plot()``: the scalar values of a result as horizontal bars, as torchmetrics'
``plot()`` shows a metric (a figure and its axes, on the Agg canvas: no pyplot, no global backend)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deteval.report.figure import literal, new_figure

__all__ = ["plot_values"]


def _scalar(value: Any) -> float | None:
    if hasattr(value, "detach"):  # a torch tensor: its one number, if it has one
        value = value.detach().cpu()
        if getattr(value, "ndim", 1) != 0:
            return None
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def plot_values(
    values: Mapping[str, Any], ax: Any = None, title: str = "MeanAveragePrecision"
) -> tuple[Any, Any]:
    """(figure, axes) with one bar per scalar key of ``values`` (per-class arrays left out; −1, pycocotools'
    "undefined", drawn as no bar and marked n/a). ``ax``: draw into these axes instead of a new figure."""
    items: list[tuple[str, float]] = []
    for key, value in values.items():
        number = _scalar(value)
        if number is not None and key != "classes" and not key.endswith("_per_class"):
            items.append((key, number))
    if ax is None:
        fig = new_figure(6.0, 1.0 + 0.25 * max(len(items), 1))
        ax = fig.subplots()
    else:
        fig = ax.figure
    pos = list(range(len(items)))[::-1]
    ax.barh(pos, [max(v, 0.0) for _, v in items], color="C0", height=0.7)
    ax.set_yticks(pos, [literal(f"{k}  {v:.4f}" if v != -1 else f"{k}  n/a") for k, v in items], fontsize=7)
    ax.set_xlim(0.0, 1.0)
    ax.set_title(literal(title), fontsize=9)
    ax.tick_params(axis="x", labelsize=7)
    return fig, ax
