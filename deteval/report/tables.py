"""Render an EvalResult as a terminal table, Markdown, CSV or JSON.

Every format carries the same numbers: the scalar summary fields and one row per class. Floats are printed
with 4 decimals in the table and Markdown (what people read) and in full precision in CSV and JSON (what
scripts read).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from deteval.errors import ConfigError
from deteval.results import EvalResult

FORMATS: tuple[str, ...] = ("table", "json", "csv", "markdown")


def _fmt(value: Any, full: bool) -> str:
    if value is None:
        return "" if full else "-"
    if isinstance(value, float):
        return repr(value) if full else f"{value:.4f}"
    return str(value)


def _scalar_summary(result: EvalResult) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in result.summary.items() if isinstance(v, (str, int, float, bool)) or v is None]


def _columns(result: EvalResult) -> list[str]:
    cols: list[str] = []
    for row in result.per_class.values():
        for key in row:
            if key not in cols:
                cols.append(key)
    return cols


def _grid(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
    )
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def render_table(result: EvalResult) -> str:
    parts: list[str] = []
    if result.lines:
        parts.append("\n".join(result.lines))
    else:
        parts.append("\n".join(f"{k}: {_fmt(v, False)}" for k, v in _scalar_summary(result)))
    cols = _columns(result)
    if result.per_class:
        rows = [[name, *(_fmt(row.get(c), False) for c in cols)] for name, row in result.per_class.items()]
        parts.append(_grid(["class", *cols], rows))
    if result.warnings:
        parts.append("\n".join(f"warning: {w}" for w in result.warnings))
    return "\n\n".join(p for p in parts if p) + "\n"


def render_markdown(result: EvalResult) -> str:
    parts = [f"## {result.protocol} evaluation", ""]
    parts += ["| field | value |", "|---|---|"]
    parts += [f"| {k} | {_fmt(v, False)} |" for k, v in _scalar_summary(result)]
    cols = _columns(result)
    if result.per_class:
        parts += ["", "| class | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for name, row in result.per_class.items():
            parts.append(f"| {name} | " + " | ".join(_fmt(row.get(c), False) for c in cols) + " |")
    if result.warnings:
        parts += ["", *(f"> warning: {w}" for w in result.warnings)]
    return "\n".join(parts) + "\n"


def render_csv(result: EvalResult) -> str:
    """One row per class plus a final ``__summary__`` row carrying the scalar summary fields."""
    buf = io.StringIO()
    cols = _columns(result)
    summary = _scalar_summary(result)
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["class", *cols])
    for name, row in result.per_class.items():
        writer.writerow([name, *(_fmt(row.get(c), True) for c in cols)])
    if summary:
        writer.writerow([])
        writer.writerow(["field", "value"])
        for k, v in summary:
            writer.writerow([k, _fmt(v, True)])
    return buf.getvalue()


def render(result: EvalResult, fmt: str = "table", *, include_curves: bool = False) -> str:
    """Render ``result`` in one of :data:`FORMATS`."""
    if fmt == "table":
        return render_table(result)
    if fmt == "markdown":
        return render_markdown(result)
    if fmt == "csv":
        return render_csv(result)
    if fmt == "json":
        return result.to_json(include_curves=include_curves) + "\n"
    raise ConfigError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
