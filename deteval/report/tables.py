"""Render an EvalResult as a terminal table, Markdown, CSV or JSON.

Every format carries the same numbers: the summary fields and one row per class. Floats are printed with 4
decimals in the table and Markdown (what people read) and in full precision (``repr``, which round-trips) in
CSV and JSON (what scripts read).

Nested summary values (MIR's ``{"boundary": {"0.5": {"f": ...}}}``, COCO's ``stats`` list) are flattened to
dotted keys (``boundary.0.5.f``, ``stats.0``) so that no number is hidden; per-class rows are flattened the
same way. Every value is first normalised exactly as the JSON exporter writes it (numpy scalars become Python
numbers, NaN and inf become null), so that re-rendering a saved JSON result gives the same text as rendering
the result that produced it.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from deteval.errors import ConfigError
from deteval.report.grouped_grid import grouped_grid, is_number_cell
from deteval.report.marks import cell_marks
from deteval.report.stats_table import STATS_KEYS, stats_lines, with_ci
from deteval.report.warning_cap import shown_warnings
from deteval.results import EvalResult, flat_fields, jsonable
from deteval.results import flatten as flatten  # its home is results (dotted keys); this path keeps working

FORMATS: tuple[str, ...] = ("table", "json", "csv", "markdown")


def format_cell(value: Any, full: bool) -> str:
    """A normalised (JSON-ready) value as a cell: 4 decimals for people, ``repr`` for scripts."""
    if value is None:
        return "" if full else "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if full:
            return repr(value)
        # A delta of -1e-16 (summation order) is zero to the reader: no "-0.0000".
        text = f"{value:.4f}"
        return "0.0000" if text == "-0.0000" else text
    return str(value)


def summary_fields(result: EvalResult) -> list[tuple[str, Any]]:
    """The summary as flat ``(key, value)`` pairs, nested values under dotted keys, in insertion order."""
    return flat_fields(jsonable(result.summary), record="summary")


def _spec(values: list[Any]) -> Any:
    """A list of numbers as the command line spells it: ``start:stop:count`` when evenly spaced (the
    ``--iou-thrs`` syntax), else comma-separated; ``lo,hi;lo,hi`` for a list of ranges (``--area-rng``)."""
    if values and all(isinstance(v, list) for v in values):
        return ";".join(",".join(_num(x) for x in v) for v in values)
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return ",".join(str(v) for v in values)
    if len(values) > 3 and all(isinstance(v, float) for v in values):
        steps = [b - a for a, b in itertools.pairwise(values)]
        if max(steps) - min(steps) < 1e-9:
            return f"{_num(values[0])}:{_num(values[-1])}:{len(values)}"
    return ",".join(_num(v) for v in values)


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def display_fields(result: EvalResult) -> list[tuple[str, Any]]:
    """The summary as people (Markdown, the table without ``lines``) and spreadsheets (CSV) read it:
    :func:`summary_fields` without COCO's ``stats`` list when its twelve values are also named fields
    (``AP``, ``AP50``, ...), and with each parameter on one line as the command line spells it
    (``params.iou_thrs: 0.5:0.95:10``) instead of one line per value. JSON keeps everything."""
    summary_fields(result)  # refuse colliding keys before any of them is dropped or merged
    summary = jsonable(result.summary)
    if isinstance(summary.get("stats"), list) and "AP" in summary:
        summary = {k: v for k, v in summary.items() if k != "stats"}
    params = summary.get("params")
    if isinstance(params, dict):
        summary["params"] = {
            k: _spec(v) if isinstance(v, list) else v
            for k, v in params.items()
            if not (k in summary and summary[k] == v)  # e.g. iou_type, already a top-level field
        }
    return flat_fields(summary, record="summary")


def row_label(result: EvalResult) -> str:
    """The first column's heading: "topic" for TREC (one row per query), "track" for MIR (one row per
    track of a multi-track run), "class" otherwise."""
    return {"trec": "topic", "mir": "track"}.get(result.protocol, "class")


def class_rows(result: EvalResult) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    """The per-class table: the union of the (flattened) row keys in first-seen order, and the rows."""
    cols: dict[str, None] = {}
    rows: list[tuple[str, dict[str, Any]]] = []
    for name, row in jsonable(result.per_class).items():
        flat = dict(flat_fields(row, record=f"class {name!r}"))
        cols.update(dict.fromkeys(flat))
        rows.append((name, flat))
    return list(cols), rows


def _grid(header: list[str], rows: list[list[str]]) -> str:
    """Aligned plain-text columns: the first and text columns left, numeric columns right."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    right = [i > 0 and all(is_number_cell(r[i]) for r in rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def render_table(result: EvalResult, *, with_warnings: bool = True) -> str:
    """Plain text: the protocol's own ``lines`` (or the flattened summary), the per-class grid, and the
    warnings unless ``with_warnings`` is false (the terminal, where they go to stderr alone)."""

    marked, legend = cell_marks(result)
    parts: list[str] = []
    try:
        block: list[str] | None = stats_lines(result)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        block = None  # statistics fields not in deteval's shape (a hand-made JSON): shown as plain fields
    if result.lines:
        parts.append("\n".join(result.lines))
    else:
        stat = tuple(f"{k}." for k in STATS_KEYS) if block is not None else ()
        keys = STATS_KEYS if block is not None else ()
        fields = [(k, v) for k, v in display_fields(result) if k not in keys and not k.startswith(stat)]
        parts.append("\n".join(f"{k}: {format_cell(v, False)}{_mark(marked, None, k)}" for k, v in fields))
    parts.append("\n".join((block or []) + legend))
    cols, rows = class_rows(result)
    if rows:
        # an AP with its interval: "ap [lo, hi]" in one cell (deteval.stats puts a "ci" in the row)
        ci_cols = "ci.0" in cols and "ap" in cols
        if ci_cols:
            cols = [c for c in cols if c not in ("ci.0", "ci.1")]
        grid = [
            [name, *((with_ci(row.get(c), [row.get("ci.0"), row.get("ci.1")]) if ci_cols and c == "ap"
                      else format_cell(row.get(c), False)) + _mark(marked, name, c) for c in cols)]
            for name, row in rows
        ]  # fmt: skip
        if result.protocol == "mir":  # dotted groups of columns, wrapped to 100 characters
            parts.append(grouped_grid([row_label(result), *cols], grid))
        else:
            parts.append(_grid([row_label(result), *cols], grid))
    if result.warnings and with_warnings:
        parts.append("\n".join(f"warning: {w}" for w in shown_warnings(result.warnings)))
    return "\n\n".join(p for p in parts if p) + "\n"


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
_ENTITY_START = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def md_text(text: str) -> str:
    """``text`` for a Markdown table cell: a pipe would end the cell and a newline the row; a ``<`` that could
    open an HTML tag, comment or autolink (CommonMark: followed by a letter, ``/``, ``!`` or ``?``) and an
    ``&`` that could start an entity become entities, so that raw HTML in a name is shown, never run by a
    renderer that does not sanitize (``p < 0.05`` stays as written)."""
    text = _ENTITY_START.sub("&amp;", text)
    text = _TAG_START.sub("&lt;", text)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _mark(marked: dict[tuple[str | None, str], str], row: str | None, key: str) -> str:
    """``^letters`` after a value significantly different from those systems (deteval.report.marks)."""
    mark = marked.get((row, key))
    return f"^{mark}" if mark else ""


def _sup(marked: dict[tuple[str | None, str], str], row: str | None, key: str) -> str:
    mark = marked.get((row, key))
    return f"<sup>{md_text(mark)}</sup>" if mark else ""


_BACKTICK_RUN = re.compile(r" {0,3}(`+)")


def code_fence(lines: list[str]) -> str:
    """The backtick fence that holds ``lines`` verbatim in one CommonMark code block: longer than any run of
    backticks that opens a line of them (a closing fence is a run at least as long as the opening one, after
    at most three spaces), and at least three. A line holding a line break counts as the lines it makes.

    Parameters
    ----------
    lines : list of str
        The block's text, one entry per line (names of images or classes may bring their own breaks).

    Returns
    -------
    str
        ``"`"`` repeated ``max(3, longest run + 1)`` times.
    """
    longest = 0
    for line in lines:
        for part in line.splitlines():
            m = _BACKTICK_RUN.match(part)
            if m:
                longest = max(longest, len(m.group(1)))
    return "`" * max(3, longest + 1)


def render_markdown(result: EvalResult) -> str:
    """GitHub Markdown: a heading, the protocol's ``lines`` in a code block, a field/value table, a class
    table, the warnings as quotes."""

    parts = [f"## {md_text(result.protocol)} evaluation", ""]
    if result.lines:
        # The protocol's familiar rendering (e.g. pycocotools' twelve lines), verbatim.
        fence = code_fence(result.lines)
        parts += [fence + "text", *result.lines, fence, ""]
    fields = display_fields(result)
    if result.lines:
        # the lines above already show these numbers (rounded as pycocotools prints them, as in the table)
        shown = {k for k, v in result.summary.items() if isinstance(v, float) and _shown(k, result.lines)}
        fields = [(k, v) for k, v in fields if k not in shown]
    marked, legend = cell_marks(result)
    fields = [(k, v) for k, v in fields if not k.startswith("significance.")]  # shown as marks + legend
    parts += ["| field | value |", "|---|---|"]
    parts += [
        f"| {md_text(k)} | {md_text(format_cell(v, False))}{_sup(marked, None, k)} |" for k, v in fields
    ]
    cols, rows = class_rows(result)
    if rows:
        head = f"| {row_label(result)} | " + " | ".join(md_text(c) for c in cols) + " |"
        parts += ["", head, "|---" * (len(cols) + 1) + "|"]
        for name, row in rows:
            cells = (md_text(format_cell(row.get(c), False)) + _sup(marked, name, c) for c in cols)
            parts.append(f"| {md_text(name)} | " + " | ".join(cells) + " |")
    if legend:
        # what the superscript letters mean (deteval.report.marks)
        parts += ["", *(re.sub(r"\^([a-z]+):", r"<sup>\1</sup>:", md_text(x)) + "  " for x in legend)]
    if result.warnings:
        parts += ["", *(f"> warning: {md_text(w)}" for w in shown_warnings(result.warnings))]
    return "\n".join(parts) + "\n"


#: The names of COCO's summary numbers (AP, AP50, APs, ..., AR1, AR10, AR100 or the maxDets given, ARl)
_STAT_NAME = re.compile(r"A[PR](?:\d+|[sml])?")


def _shown(key: str, lines: list[str]) -> bool:
    """Whether a summary number is one of the protocol's printed ``lines`` (COCO's twelve stats)."""
    return _STAT_NAME.fullmatch(key) is not None and any("Average" in line for line in lines)


#: A cell that is a plain decimal number (a spreadsheet reads it as a number, never as a formula).
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _neutral(cell: str) -> str:
    """Spreadsheet formula injection (OWASP "CSV injection"): a text cell starting with ``=``, ``+``,
    ``-``, ``@``, tab or carriage return is prefixed with ``'`` so that it is shown, never evaluated.
    Numbers (``-0.25``, ``1e-05``) stay numbers."""
    if cell and cell[0] in "=+-@\t\r" and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def _csv_cell(cell: str) -> str:
    cell = _neutral(cell)
    # Quote what the csv module would, and also a lone "\r": csv.writer with a "\n" line terminator
    # leaves it bare (CPython <= 3.11), which a reader then takes for a line break.
    if any(ch in cell for ch in ',"\r\n'):
        return '"' + cell.replace('"', '""') + '"'
    return cell


def csv_row(cells: list[str]) -> str:
    """One CSV line of text cells: RFC 4180 quoting, formula-like cells prefixed with ``'``."""
    if cells == [""]:
        return '""'  # a single empty cell, not a blank line
    return ",".join(_csv_cell(c) for c in cells)


def render_csv(result: EvalResult) -> str:
    """Two sections separated by one blank line: the per-class table (header ``class``, or ``topic`` for
    TREC, then one row per class; left out when the result has no rows), then the ``field,value`` table:
    the protocol, the summary (:func:`display_fields`), the warnings.

    RFC 4180 quoting with ``\n`` line ends; numbers are written with ``repr`` (they parse back to the same
    float); null is an empty cell; a text cell that a spreadsheet would run as a formula (``=``, ``+``,
    ``-``, ``@``) is prefixed with ``'``.
    """
    cols, rows = class_rows(result)
    lines = []
    if rows:
        lines = [csv_row([row_label(result), *cols])]
        lines += [csv_row([name, *(format_cell(row.get(c), True) for c in cols)]) for name, row in rows]
        lines += [""]
    lines += [csv_row(["field", "value"]), csv_row(["protocol", result.protocol])]
    lines += [csv_row([k, format_cell(v, True)]) for k, v in display_fields(result)]
    lines += [csv_row(["warning", w]) for w in result.warnings]
    return "\n".join(lines) + "\n"


def render(
    result: EvalResult, fmt: str = "table", *, include_curves: bool = False, with_warnings: bool = True
) -> str:
    """``result`` as text in one of :data:`FORMATS`: ``"table"`` (aligned columns, what the terminal
    shows), ``"markdown"``, ``"csv"`` (two sections, see docs/results.md) or ``"json"`` (the full document;
    ``include_curves`` adds the PR curves). The same text as the command line's ``--format``.
    ``with_warnings=False`` leaves the warnings out of the table (the other formats keep them as data).

    >>> from deteval.results import EvalResult
    >>> print(render(EvalResult("voc", {"map": 0.5}, {"cat": {"ap": 0.5}}), "csv"), end="")
    class,ap
    cat,0.5
    <BLANKLINE>
    field,value
    protocol,voc
    map,0.5
    """
    if fmt == "table":
        return render_table(result, with_warnings=with_warnings)
    if fmt == "markdown":
        return render_markdown(result)
    if fmt == "csv":
        return render_csv(result)
    if fmt == "json":
        return result.to_json(include_curves=include_curves) + "\n"
    raise ConfigError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")


def numeric_columns(*results: EvalResult) -> list[str]:
    """The per-class columns (flattened, first-seen order over ``results``) holding numbers only.

    A column qualifies when every non-null cell is an int or float (not a bool) and at least one is.
    """
    order: dict[str, None] = {}
    kinds: dict[str, set[bool]] = {}  # per column, whether each non-null cell is a number
    for result in results:
        cols, rows = class_rows(result)
        order.update(dict.fromkeys(cols))
        for _, row in rows:
            for c, v in row.items():
                if v is not None:
                    kinds.setdefault(c, set()).add(isinstance(v, (int, float)) and not isinstance(v, bool))
    return [c for c in order if kinds.get(c) == {True}]


def pick_metric(*results: EvalResult, metric: str | None = None) -> str:
    """The per-class column to compare or plot: ``metric`` if given, else ``"ap"`` if present, else the
    first numeric column. Raises :class:`ConfigError` naming the available columns when there is none."""
    numeric = numeric_columns(*results)
    if metric is not None:
        if metric not in numeric:
            known = ", ".join(numeric) or "none"
            raise ConfigError(f"no numeric per-class column {metric!r} (numeric columns: {known})")
        return metric
    if "ap" in numeric:
        return "ap"
    if not numeric:
        raise ConfigError("the result has no numeric per-class column")
    return numeric[0]
