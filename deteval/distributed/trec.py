"""trec_eval measures with the topics sharded over ``dask.distributed`` workers, bit-identical to one process.

Every measure's per-topic value depends on that topic's run and qrels rows alone, and trec_eval's ``all``
values are sums in topic order. Shard k holds a run of the sorted topic names (at least one evaluated topic
each; topics that are not evaluated travel with their neighbours, so that duplicate checks see every row);
each worker joins, ranks and scores its topics; the driver concatenates the per-topic values in topic order,
which is exactly the single-process table, and aggregates it as one process does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from deteval.distributed.shards import default_shards
from deteval.io.trec import Qrels, Run
from deteval.retrieval.trec import Options, _Family, _topic_values, no_topic_error

__all__ = ["topic_values_sharded"]

T = TypeVar("T", Qrels, Run)

# the join's counted warnings, in the order one process gives them (their counts add up over shards)
_COUNTED = (
    "run topic(s) without judgements",
    "qrels topic(s) absent",
    "in the qrels outside",
    "in the run outside",
)


def _rows(table: T, rows: np.ndarray) -> T:
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


def _merge_warnings(parts: Sequence[list[str]]) -> list[str]:
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


def topic_values_sharded(
    q: Qrels,
    r: Run,
    requested: Sequence[tuple[_Family, tuple]],
    opts: Options,
    prep: Mapping[str, Any],
    num_docs: int,
    client: Any = None,
    shards: int | None = None,
) -> tuple[list[str], np.ndarray, dict[str, tuple[np.ndarray, str]], list[str]]:
    """:func:`deteval.retrieval.trec._topic_values` over topic shards (on ``client`` if given, else here)."""
    names = np.union1d(np.unique(q.topic), np.unique(r.topic))
    has_q = np.isin(names, q.topic)
    has_r = np.isin(names, r.topic)
    evaluated = np.flatnonzero(has_q & (has_r | bool(prep.get("complete"))))
    if evaluated.size == 0:
        raise no_topic_error(q, r)
    n = min(default_shards(client, shards), int(evaluated.size))
    first = evaluated[[k * evaluated.size // n for k in range(n)]]
    first[0] = 0
    q_shard = np.searchsorted(first, np.searchsorted(names, q.topic), side="right") - 1
    r_shard = np.searchsorted(first, np.searchsorted(names, r.topic), side="right") - 1
    args = []
    for k in range(n):
        qk, rk = _rows(q, np.flatnonzero(q_shard == k)), _rows(r, np.flatnonzero(r_shard == k))
        args.append((qk, rk, requested, opts, prep, num_docs))
    if client is None:
        parts = [_topic_values(*a, (a[0], a[1])) for a in args]
    else:
        parts = client.gather([client.submit(_topic_values, *a, (a[0], a[1]), pure=False) for a in args])
    out_names = [t for p in parts for t in p[0]]
    in_run = np.concatenate([p[1] for p in parts])
    values = {
        key: (np.concatenate([p[2][key][0] for p in parts]), agg) for key, (_, agg) in parts[0][2].items()
    }
    warnings = list(q.warnings) + list(r.warnings) + _merge_warnings([p[3] for p in parts])
    return out_names, in_run, values, warnings
