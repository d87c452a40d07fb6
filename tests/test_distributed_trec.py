"""evaluate_trec over topic shards (in-process and on a real LocalCluster): every measure of all_trec, per topic
and aggregated, with the join's warnings, bit-identical to one process."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from deteval.errors import ConfigError, ValidationError
from deteval.io.trec import qrels_from_dict, run_from_dict
from deteval.run.trec import evaluate_trec


def random_trec(seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    topics = [f"q{t}" for t in rng.choice(200, int(rng.integers(1, 12)), replace=False)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for t in topics:
        docs = [f"d{d}" for d in rng.choice(60, int(rng.integers(1, 30)), replace=False)]
        if rng.random() < 0.8:  # some topics only in the run, some only in the qrels
            qrels[t] = {
                d: int(rng.choice([-1, 0, 0, 1, 2])) for d in docs[: int(rng.integers(1, len(docs) + 1))]
            }
        if rng.random() < 0.85:
            run[t] = {f"d{d}": float(rng.choice([0.1, 0.5, 0.9, rng.random()])) for d in rng.choice(60, 20)}
    if not qrels:
        qrels[topics[0]] = {"d1": 1}
    if not run or not set(run) & set(qrels):
        run[next(iter(qrels))] = {"d1": 0.5, "d2": 0.4}
    return qrels_from_dict(qrels), run_from_dict(run)


def _same(a: Any, b: Any) -> None:
    assert repr(a.summary) == repr(b.summary)  # repr: NaN equals NaN, and floats print to the last bit
    assert repr(a.per_class) == repr(b.per_class)
    assert a.lines == b.lines
    assert a.warnings == b.warnings


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(15))
def test_topic_shards_equal_one_process(seed: int) -> None:
    q, r = random_trec(seed)
    for kw in ({}, {"complete": True}, {"max_docs": 5, "judged_only": True}):
        one = evaluate_trec(q, r, "all_trec", per_query=True, **kw)
        for shards in (1, 2, 7):
            _same(evaluate_trec(q, r, "all_trec", per_query=True, shards=shards, **kw), one)


def test_no_evaluated_topic_and_judgment_groups() -> None:
    q, r = qrels_from_dict({"a": {"d": 1}}), run_from_dict({"b": {"d": 1.0}})
    with pytest.raises(ValidationError, match="no topic has both results and judgements"):
        evaluate_trec(q, r, shards=2)
    jg = replace(qrels_from_dict({"b": {"d": 1}}), group=np.array([b"0"]))
    with pytest.raises(ConfigError, match="judgment groups"):
        evaluate_trec(jg, r, shards=2)


@pytest.mark.slow
def test_topic_shards_on_a_local_cluster(dask_cluster: Any) -> None:
    for seed in (3, 4):
        q, r = random_trec(seed)
        one = evaluate_trec(q, r, "all_trec", per_query=True, complete=True)
        for shards in (1, 2, 7):
            _same(evaluate_trec(q, r, "all_trec", per_query=True, complete=True, client=dask_cluster,
                                shards=shards), one)  # fmt: skip
