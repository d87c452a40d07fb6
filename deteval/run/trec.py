"""trec_eval measures with the topics sharded over ``dask.distributed`` workers, bit-identical to one process.

Every measure's per-topic value depends on that topic's run and qrels rows alone, and trec_eval's ``all``
values are sums in topic order. Shard k holds a run of the sorted topic names (at least one evaluated topic
each; topics that are not evaluated travel with their neighbours, so that duplicate checks see every row);
each worker joins, ranks and scores its topics; the driver concatenates the per-topic values in topic order,
which is exactly the single-process table, and aggregates it as one process does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval.io.trec import Qrels, Run
from deteval.retrieval.topic_rows import merge_warnings, take_rows
from deteval.retrieval.trec import Family, Options, no_topic_error, topic_values
from deteval.run.parts import map_parts
from deteval.run.shards import default_shards

__all__ = ["topic_values_sharded"]


def topic_values_sharded(
    q: Qrels,
    r: Run,
    requested: Sequence[tuple[Family, tuple]],
    opts: Options,
    prep: Mapping[str, Any],
    num_docs: int,
    client: Any = None,
    shards: int | None = None,
) -> tuple[list[str], np.ndarray, dict[str, tuple[np.ndarray, str]], list[str]]:
    """:func:`deteval.retrieval.trec.topic_values` over topic shards (on ``client`` if given, else here)."""
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
        qk, rk = take_rows(q, np.flatnonzero(q_shard == k)), take_rows(r, np.flatnonzero(r_shard == k))
        args.append((qk, rk, requested, opts, prep, num_docs))
    parts = map_parts(topic_values, [(*a, (a[0], a[1])) for a in args], client)
    out_names = [t for p in parts for t in p[0]]
    in_run = np.concatenate([p[1] for p in parts])
    values = {
        key: (np.concatenate([p[2][key][0] for p in parts]), agg) for key, (_, agg) in parts[0][2].items()
    }
    warnings = list(q.warnings) + list(r.warnings) + merge_warnings([p[3] for p in parts])
    return out_names, in_run, values, warnings
