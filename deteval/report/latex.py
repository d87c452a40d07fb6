"""A result's per-class table (or, without rows, its numeric summary) as a LaTeX ``tabular`` (booktabs),
with the significance marks of :mod:`deteval.report.marks` as superscripts and their legend as a comment
and a ``\\footnotesize`` note under the table."""

from __future__ import annotations

import re

from deteval.report.marks import cell_marks
from deteval.report.tables import class_rows, display_fields, format_cell, row_label
from deteval.results import EvalResult

__all__ = ["render_latex"]

_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {"\\": r"\textbackslash{}", "~": r"\textasciitilde{}",
                                               "^": r"\textasciicircum{}"}  # fmt: skip


def _tex(text: str) -> str:
    return "".join(_SPECIAL.get(c, c) for c in text.replace("\n", " ").replace("\r", " "))


def _cell(text: str, mark: str | None) -> str:
    return _tex(text) + (f"$^{{{mark}}}$" if mark else "")


def render_latex(result: EvalResult) -> str:
    """``\\begin{tabular}`` ... ``\\end{tabular}``: one row per class (columns as in the table), or
    ``field & value`` rows of the numeric summary when the result has no per-class rows."""
    marked, legend = cell_marks(result)
    cols, rows = class_rows(result)
    if rows:
        header = [row_label(result), *cols]
        body = [
            [_tex(name), *(_cell(format_cell(row.get(c), False), marked.get((name, c))) for c in cols)]
            for name, row in rows
        ]
    else:
        header = ["field", "value"]
        body = [
            [_tex(k), _cell(format_cell(v, False), marked.get((None, k)))]
            for k, v in display_fields(result)
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
    lines = [f"% deteval {result.protocol} table", "\\begin{tabular}{l" + "r" * (len(header) - 1) + "}"]
    lines += ["\\toprule", " & ".join(_tex(h) for h in header) + " \\\\", "\\midrule"]
    lines += [" & ".join(r) + " \\\\" for r in body]
    lines += ["\\bottomrule", "\\end{tabular}"]
    if legend:
        note = "; ".join(re.sub(r"\\textasciicircum\{\}([a-z]+):", r"$^{\1}$:", _tex(x)) for x in legend)
        lines += ["", f"{{\\footnotesize {note}}}"]
    return "\n".join(lines) + "\n"
