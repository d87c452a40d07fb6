"""The per-class deltas of a comparison (``deteval.stats``) with their intervals, as a figure.

One horizontal bar per class: ``delta`` = a − b of its AP (this system minus the other, deteval's one sign
convention :data:`~deteval.report.marks.DELTA_IS`), the paired-bootstrap interval as an error bar,
filled when the adjusted p-value is below ``alpha`` (significant), hollow otherwise. Drawn on an Agg canvas
like :mod:`deteval.report.plots` (no pyplot, no global backend).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from deteval.errors import ConfigError
from deteval.report.figure import literal, new_figure, plot_dir, save_png
from deteval.report.marks import DELTA_IS
from deteval.results import EvalResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["class_deltas", "class_deltas_figure", "comparison_others", "plot_class_deltas"]


def class_deltas(
    result: EvalResult, other: str | None = None
) -> list[tuple[str, float, list[float], float | None]]:
    """(class, delta, [lo, hi], p_adjusted) of every class with a defined delta, sorted by delta; ``other``
    picks one comparison when the result holds several."""
    comp: Any = result.summary.get("comparison")
    if not isinstance(comp, dict) or not comp:
        raise ConfigError("the result holds no comparison: evaluate with --compare-to (deteval.stats)")
    if not any(k.startswith("ap:") for k in comp):  # several systems: keyed by the other system first
        names = list(comp)
        key = other if other is not None else names[0]
        if key not in comp:
            raise ConfigError(f"no comparison with {key!r}; the result compares with {', '.join(names)}")
        comp = comp[key]
    rows = [
        (k[3:], float(c["delta"]), [float(c["ci"][0]), float(c["ci"][1])], c.get("p_adjusted"))
        for k, c in comp.items()
        if k.startswith("ap:") and c.get("delta") is not None and c.get("ci")
    ]
    return sorted(rows, key=lambda r: r[1])


def comparison_others(result: EvalResult) -> list[str | None]:
    """The ``other`` argument of each comparison: ``[None]`` for one, the other systems' names for several."""
    comp: Any = result.summary.get("comparison")
    if not isinstance(comp, dict) or not comp:
        return []
    if any(k.startswith("ap:") for k in comp) or not all(isinstance(v, dict) for v in comp.values()):
        return [None]
    return list(comp)


def class_deltas_figure(result: EvalResult, *, other: str | None = None, alpha: float = 0.05) -> Figure:
    """The figure :func:`plot_class_deltas` saves (module docstring)."""
    rows = class_deltas(result, other)
    if not rows:
        raise ConfigError("the comparison has no per-class AP delta to draw")
    fig = new_figure(7.0, 1.0 + 0.28 * len(rows))
    ax = fig.add_subplot()
    for i, (_name, delta, (lo, hi), p) in enumerate(rows):
        significant = p is not None and p < alpha
        ax.errorbar(
            delta, i, xerr=[[delta - lo], [hi - delta]], fmt="o", color="C3" if significant else "C0",
            mfc="C3" if significant else "white", capsize=3,
        )  # fmt: skip
    ax.axvline(0.0, color="0.5", lw=0.8)
    ax.set_yticks(range(len(rows)), [literal(r[0]) for r in rows])
    names = result.summary.get("compare_to") or []
    baseline = other if other is not None else (str(names[0]) if len(names) == 1 else "the other system")
    sign = DELTA_IS.format(candidate="this system", baseline=baseline)
    ax.set_xlabel(literal(f"AP delta = {sign}, with its interval; filled: adjusted p < {alpha:g}"))
    return fig


def plot_class_deltas(
    result: EvalResult, out_dir: str | Path, *, other: str | None = None, alpha: float = 0.05
) -> Path:
    """Write ``class_deltas.png`` into ``out_dir`` (module docstring) and return its path."""
    return save_png(
        class_deltas_figure(result, other=other, alpha=alpha), plot_dir(out_dir) / "class_deltas.png"
    )
