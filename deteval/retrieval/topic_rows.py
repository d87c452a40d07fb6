"""Qrels and run tables cut by rows (pieces of whole topics) and their warnings put back together: what both
the sharded evaluation (:mod:`deteval.run.trec`) and the piecewise evaluation of a large run
(:mod:`deteval.retrieval.trec`) need to give the numbers and the warnings of one pass."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from deteval.io.trec_tables import Qrels, Run

__all__ = ["merge_warnings", "take_rows"]

T = TypeVar("T", Qrels, Run)

# the join's counted warnings, in the order one process gives them (their counts add up over shards)
_COUNTED = (
    "run topic(s) without judgements",
    "qrels topic(s) absent",
    "in the qrels outside",
    "in the run outside",
)


def take_rows(table: T, rows: np.ndarray) -> T:
    """The rows ``rows`` (ascending) of a qrels or run table, without the loader's warnings."""
    long = {}
    if table.docno_long:
        keys = np.fromiter(table.docno_long, dtype=np.int64)
        pos = np.searchsorted(rows, keys)
        ok = (pos < rows.shape[0]) & (rows[np.minimum(pos, max(rows.shape[0] - 1, 0))] == keys)
        long = {int(p): table.docno_long[int(k)] for k, p, o in zip(keys, pos, ok) if o}
    cols: dict[str, Any] = {"topic": table.topic[rows], "docno": table.docno[rows], "line": table.line[rows]}
    if isinstance(table, Qrels):
        cols["rel"] = table.rel[rows]
        cols["group"] = None if table.group is None else table.group[rows]
    else:
        cols["score"] = table.score[rows]
    return replace(table, **cols, warnings=[], docno_long=long)


def merge_warnings(parts: Sequence[list[str]]) -> list[str]:
    """The warnings of the pieces of one evaluation as one evaluation gives them: the counted join warnings
    (``"N <what>"``) added up and in one process's order, then every other warning once, in first-seen order."""
    counted: dict[str, int] = {}
    other: list[str] = []
    for warnings in parts:
        for w in warnings:
            m = re.match(r"(\d+) (.*)", w, flags=re.S)
            if m and any(c in m.group(2) for c in _COUNTED):
                counted[m.group(2)] = counted.get(m.group(2), 0) + int(m.group(1))
            elif w not in other:
                other.append(w)
    rank = {tail: next(i for i, c in enumerate(_COUNTED) if c in tail) for tail in counted}
    return [f"{counted[t]} {t}" for t in sorted(counted, key=rank.__getitem__)] + other
