"""A wide per-row table whose columns come in groups (``pairwise.precision``, ``boundary.0.5.f``, ...) as
plain text that fits a terminal: each group's name is written once above its columns, the columns keep only
their last name part (``precision``, ``recall``, ``f``), and groups that would pass ``width`` characters go
to a further block that repeats the row names. A multi-track MIR result has 3 + 3 × (number of tolerances)
such columns; with full dotted names one per column its table was about 170 characters wide."""

from __future__ import annotations

import itertools

__all__ = ["WIDTH", "grouped_grid", "is_number_cell"]

#: The widest line a block may have (as the other tables: a 100-column terminal).
WIDTH = 100

_GAP = "   "  # between groups (two spaces between the columns of one group)


def is_number_cell(cell: str) -> bool:
    """Whether a table cell is a number (or ``-``, a missing one): such columns are right-aligned."""
    if cell == "-":
        return True
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _split(col: str) -> tuple[str, str]:
    group, dot, leaf = col.rpartition(".")
    return (group, leaf) if dot else ("", col)


def grouped_grid(header: list[str], rows: list[list[str]], width: int = WIDTH) -> str:
    """``header[0]`` names the rows; ``header[1:]`` are dotted column keys, grouped by all but their last
    part (consecutive keys of one group stay together). The cells of ``rows`` are already formatted."""
    label = header[0]
    groups = [
        (name, [i for i, _ in run])
        for name, run in itertools.groupby(enumerate(header[1:], 1), key=lambda col: _split(col[1])[0])
    ]
    col_w = {
        i: max(len(_split(header[i])[1]), *(len(r[i]) for r in rows)) if rows else len(_split(header[i])[1])
        for i in range(1, len(header))
    }

    def span_of(idx: list[int]) -> int:
        return sum(col_w[i] for i in idx) + 2 * (len(idx) - 1)

    for name, idx in groups:  # a group name longer than its columns widens its first column
        col_w[idx[0]] += max(0, len(name) - span_of(idx))
    right = {i: all(is_number_cell(r[i]) for r in rows) for i in range(1, len(header))}
    label_w = max(len(label), *(len(r[0]) for r in rows)) if rows else len(label)
    blocks: list[list[tuple[str, list[int]]]] = [[]]
    used = label_w
    for group in groups:
        need = len(_GAP) + span_of(group[1])
        if blocks[-1] and used + need > width:
            blocks.append([])
            used = label_w
        blocks[-1].append(group)
        used += need

    def cells(block: list[tuple[str, list[int]]], row: list[str]) -> str:
        parts = [row[0].ljust(label_w)]
        for _, idx in block:
            parts.append(
                "  ".join(row[i].rjust(col_w[i]) if right[i] else row[i].ljust(col_w[i]) for i in idx)
            )
        return _GAP.join(parts).rstrip()

    out: list[str] = []
    for block in blocks:
        leaves = [label, *(_split(c)[1] for c in header[1:])]
        top = _GAP.join([" " * label_w, *(name.ljust(span_of(idx)) for name, idx in block)]).rstrip()
        rule = _GAP.join(["-" * label_w, *("  ".join("-" * col_w[i] for i in idx) for _, idx in block)])
        out.append("\n".join([top, cells(block, leaves), rule, *(cells(block, r) for r in rows)]))
    return "\n\n".join(out)
