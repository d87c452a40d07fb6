"""How many skipped-record warnings a person reads: with ``--on-error skip`` every bad record is a warning
(``skipped bad record: <file>: <record>: <reason>``), and a file with thousands of bad lines would bury the
result under them. Printed output (stderr, the text table, Markdown) shows the first :data:`SKIPPED_SHOWN`
and one line saying how many more there are; the result itself keeps every one (``warnings`` in JSON and
CSV) and ``skipped_records`` counts them.

Warnings of one kind repeated over the rows of a result (a multi-track MIR run warns about close boundaries on
nearly every track: ``seg03: boundary tau 0.5: 2 pair(s) of reference boundaries ...``) are printed once, the
first of them with the count of the others (:func:`grouped_warnings`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["SKIPPED_SHOWN", "grouped_warnings", "shown_warnings"]

#: The skipped-record warnings printed before the rest is summed up in one line.
SKIPPED_SHOWN = 20

_SKIPPED = "skipped bad record: "

#: ``<row>: <message>``: a warning about one row (a track, a class) of a result, named without spaces.
_ROW = re.compile(r"([^\s:]+): (.+)", re.DOTALL)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _kind(warning: str) -> tuple[str, str] | None:
    """(row, the message with its numbers blanked) of a per-row warning; None for any other."""
    match = _ROW.fullmatch(warning)
    if match is None or _SKIPPED in warning:
        return None
    return match.group(1), _NUMBER.sub("#", match.group(2))


def grouped_warnings(warnings: Sequence[str]) -> list[str]:
    """``warnings`` with each kind that several rows repeat (the same message after ``<row>: `` once its
    numbers are blanked) printed once, where its first one stood: that warning and ``(and N more like it on
    R rows: a, b, ...; all listed in the JSON output)``. Warnings of one row, or of none, are all kept."""
    kinds = [_kind(w) for w in warnings]
    rows: dict[str, list[str]] = {}
    for k in kinds:
        if k is not None:
            rows.setdefault(k[1], []).append(k[0])
    out: list[str] = []
    done: set[str] = set()
    for w, k in zip(warnings, kinds):
        if k is None or len(set(rows[k[1]])) < 2:
            out.append(w)
        elif k[1] not in done:
            done.add(k[1])
            names = list(dict.fromkeys(rows[k[1]]))
            listed = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            more = len(rows[k[1]]) - 1
            out.append(
                f"{w} (and {more} more like it on {len(names)} rows: {listed}; all listed in the JSON output)"
            )
    return out


def shown_warnings(warnings: Sequence[str], limit: int = SKIPPED_SHOWN) -> list[str]:
    """``warnings`` with the skipped-record ones after the first ``limit`` replaced, where the first of them
    stood, by ``... and N more skipped bad records (all listed in the JSON output)``; other warnings are all
    kept, in order; a kind repeated over several rows is then shown once (:func:`grouped_warnings`)."""
    warnings = grouped_warnings(warnings)
    skipped = [i for i, w in enumerate(warnings) if _SKIPPED in w]
    if len(skipped) <= limit:
        return list(warnings)
    dropped = set(skipped[limit:])
    more = len(dropped)
    out: list[str] = []
    for i, w in enumerate(warnings):
        if i == skipped[limit]:
            out.append(f"... and {more} more skipped bad records (all listed in the JSON output)")
        if i not in dropped:
            out.append(w)
    return out
