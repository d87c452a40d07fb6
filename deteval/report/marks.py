"""Significance marks in tables, like ranx's: each other system of a comparison (``--compare-to``) gets a
letter (``a``, ``b``, ... in ``compare_to`` order) and a value carries that letter when its difference with
that system is significant: the adjusted p-value (after ``summary["correction"]``) is below ``alpha``
(0.05). A result without a ``"comparison"`` block gets no mark and no legend.

The marks are computed from the saved JSON only, so ``deteval report``, ``deteval compare`` and the exporters
agree with the ``"comparison"`` numbers: a mark is never more than ``p_adjusted < alpha``.
"""

from __future__ import annotations

import string
from typing import Any

from deteval.results import EvalResult

__all__ = ["ALPHA", "cell_marks", "legend", "marks", "significance", "system_letters"]

#: the level below which an adjusted p-value earns a mark
ALPHA = 0.05


def _groups(result: EvalResult) -> dict[str, dict[str, Any]]:
    """{other system: {metric: comparison}} whatever the number of other systems."""
    comp = result.summary.get("comparison")
    if not isinstance(comp, dict) or not comp:
        return {}
    others = [str(o) for o in result.summary.get("compare_to") or []]
    if len(others) == 1 and others[0] not in comp:
        return {others[0]: comp}
    return {k: v for k, v in comp.items() if isinstance(v, dict)}


def system_letters(result: EvalResult) -> dict[str, str]:
    """{other system: its letter}, in the order the systems were given (``a`` for the first)."""
    letters = string.ascii_lowercase
    return {name: letters[i % 26] * (1 + i // 26) for i, name in enumerate(_groups(result))}


def marks(result: EvalResult, alpha: float = ALPHA) -> dict[str, str]:
    """{metric key (``map``, ``AP``, ``ap:<class>``, a measure): the letters of the systems it differs from
    significantly (``p_adjusted < alpha``)}; metrics without a significant difference are left out."""
    letters = system_letters(result)
    out: dict[str, str] = {}
    for other, comp in _groups(result).items():
        for metric, c in comp.items():
            p = c.get("p_adjusted") if isinstance(c, dict) else None
            if isinstance(p, (int, float)) and not isinstance(p, bool) and p < alpha:
                out[metric] = out.get(metric, "") + letters[other]
    return out


def legend(result: EvalResult, alpha: float = ALPHA) -> list[str]:
    """One line per other system saying what its letter means (empty without a comparison)."""
    letters = system_letters(result)
    if not letters:
        return []
    how = f"{result.summary.get('test')} test, {result.summary.get('correction')} correction"
    return [
        f"^{letter}: significantly different from {other} (adjusted p < {alpha:g}; {how})"
        for other, letter in letters.items()
    ]


def significance(result: EvalResult, alpha: float = ALPHA) -> dict[str, Any] | None:
    """What ``deteval compare`` stores of one side: ``{"marks": marks(result), "legend": legend(result)}``,
    or None when that side holds no comparison."""
    if not system_letters(result):
        return None
    return {"marks": marks(result, alpha), "legend": legend(result, alpha)}


def cell_marks(result: EvalResult) -> tuple[dict[tuple[str | None, str], str], list[str]]:
    """{(row or None for a summary field, column or field key): mark} of every marked cell of
    ``result``'s tables, and the legend lines. For a single result the summary key is the metric and a
    class's ``ap`` cell is the comparison's ``ap:<class>``; for a ``compare`` result the ``a`` / ``b`` cells
    carry the marks of that side's own comparison (``summary["significance"]``)."""
    cells: dict[tuple[str | None, str], str] = {}
    if result.protocol != "compare":
        for metric, mark in marks(result).items():
            if metric.startswith("ap:"):
                cells[(metric[3:], "ap")] = mark
            else:
                cells[(None, metric)] = mark
        return cells, legend(result)
    sig = result.summary.get("significance")
    if not isinstance(sig, dict):
        return cells, []
    lines: list[str] = []
    compared = result.summary.get("metric")
    for side in ("a", "b"):
        one = sig.get(side)
        if not isinstance(one, dict):
            continue
        lines += [f"{side.upper()}: {line}" for line in one.get("legend", [])]
        for key, mark in one.get("marks", {}).items():
            if key.startswith("ap:") and compared == "ap":
                cells[(key[3:], side)] = mark
            elif not key.startswith("ap:"):
                cells[(None, f"fields.{key}.{side}")] = mark
    return cells, lines
