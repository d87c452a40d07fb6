"""A matplotlib figure on the Agg canvas and its PNG file: what every figure of :mod:`deteval.report` starts
from and ends with (no pyplot, no global backend; matplotlib is imported only when a figure is drawn)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from deteval.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["DPI", "literal", "new_figure", "plot_dir", "save_png"]

DPI = 100


def new_figure(
    width_in: float, height_in: float, *, layout: Literal["constrained"] | None = "constrained"
) -> Figure:
    """A matplotlib figure of that size in inches at :data:`DPI`, on the Agg canvas (no GUI backend, no pyplot
    state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG at :data:`DPI`; a write that fails is a :class:`ConfigError` naming it."""
    try:
        # fast zlib level: the figures are flat colours, level 1 costs little size and saves ~20% of the time
        fig.savefig(path, dpi=DPI, format="png", pil_kwargs={"compress_level": 1})
    except OSError as exc:
        raise ConfigError(f"cannot write plot: {exc.strerror or exc}", file=path) from None
    return path


def plot_dir(out_dir: str | Path) -> Path:
    """``out_dir``, created with its parents if missing (a :class:`ConfigError` naming it if that fails)."""
    path = Path(out_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the plot folder: {exc.strerror or exc}", file=path) from None
    return path


def literal(text: str) -> str:
    """``text`` drawn as written: ``$`` would start matplotlib's math mode (``$x_{$`` fails to parse)."""
    return text.replace("$", r"\$")
