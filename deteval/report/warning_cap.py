"""How many skipped-record warnings a person reads: with ``--on-error skip`` every bad record is a warning
(``skipped bad record: <file>: <record>: <reason>``), and a file with thousands of bad lines would bury the
result under them. Printed output (stderr, the text table, Markdown) shows the first :data:`SKIPPED_SHOWN`
and one line saying how many more there are; the result itself keeps every one (``warnings`` in JSON and
CSV) and ``skipped_records`` counts them."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SKIPPED_SHOWN", "shown_warnings"]

#: The skipped-record warnings printed before the rest is summed up in one line.
SKIPPED_SHOWN = 20

_SKIPPED = "skipped bad record: "


def shown_warnings(warnings: Sequence[str], limit: int = SKIPPED_SHOWN) -> list[str]:
    """``warnings`` with the skipped-record ones after the first ``limit`` replaced, where the first of them
    stood, by ``... and N more skipped bad records (all listed in the JSON output)``; other warnings are all
    kept, in order."""
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
