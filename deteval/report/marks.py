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

#: deteval's one sign convention for a difference of two systems: the system under test minus its baseline
#: (``deteval compare A B``: B − A; ``--compare-to OTHER``: this system − OTHER), stated in every output.
DELTA_IS = "{candidate} - {baseline}"

__all__ = ["ALPHA", "cell_marks", "legend", "marks", "significance", "system_letters"]

#: the level below which an adjusted p-value earns a mark
ALPHA = 0.05


def _groups(result: EvalResult) -> dict[str, dict[str, Any]]:
    """{other system: {metric: comparison}} whatever the number of other systems."""
    comp = result.summary.get("comparison")
    if not isinstance(comp, dict) or not comp:
        return {}
    listed = result.summary.get("compare_to")  # (a hand-made JSON may hold anything)
    others = [str(o) for o in listed] if isinstance(listed, list) else []
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


def _same_value(x: Any, y: Any) -> bool:
    if _is_number(x) and _is_number(y):
        return bool(x == y or (x != x and y != y))  # (NaN: the same undefined value)
    return type(x) is type(y) and x == y  # (null, or a value that is no number)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _against(comp: dict[str, Any], baseline: EvalResult) -> bool:
    """Whether a comparison's other system is ``baseline``'s: every value of that system the comparison
    holds (``"b"`` of each metric) that ``baseline`` also has (its summary, or its per-class ``ap`` for
    ``ap:<class>``) is ``baseline``'s own value, exactly (deteval's numbers are deterministic, so one system
    evaluated alike gives the same doubles), and there is at least one. Names cannot tell: ``compare_to``
    holds the other run's path, a saved result no path of its inputs."""
    found = 0
    for metric, c in comp.items():
        if not isinstance(c, dict) or "b" not in c:
            continue
        if metric.startswith("ap:"):
            row = baseline.per_class.get(metric[3:])
            if not isinstance(row, dict) or "ap" not in row:
                continue
            mine = row["ap"]
        elif metric in baseline.summary:
            mine = baseline.summary[metric]
        else:
            continue
        if not _same_value(c["b"], mine):
            return False
        found += 1
    return found > 0


def significance(
    result: EvalResult, alpha: float = ALPHA, baseline: EvalResult | None = None
) -> dict[str, Any] | None:
    """What ``deteval compare`` stores of one side: ``{"marks": marks(result), "legend": legend(result)}``,
    or None when that side holds no comparison.

    ``baseline`` (the other side of the compare table): only a comparison against that very system is
    marked, since a mark next to the table's delta reads as "this side differs significantly from the other
    side"; a comparison with any other system is left unmarked and named in ``"not_marked"`` (and in the
    legend), with the reason."""
    if not system_letters(result):
        return None
    if baseline is None:
        return {"marks": marks(result, alpha), "legend": legend(result, alpha)}
    groups = _groups(result)
    kept = {other: comp for other, comp in groups.items() if _against(comp, baseline)}
    dropped = [other for other in groups if other not in kept]
    view = EvalResult(result.protocol, {**result.summary, "comparison": kept, "compare_to": list(kept)})
    out: dict[str, Any] = {"marks": marks(view, alpha), "legend": legend(view, alpha)}
    if dropped:
        out["not_marked"] = dropped
        out["legend"] += [
            f"comparison with {other} not marked: {other} is not the other side of this table (its values "
            "differ), and a mark here would read as a difference from that side"
            for other in dropped
        ]
    return out


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
