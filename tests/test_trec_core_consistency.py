"""The vectorised all-topics measures equal the core's per-ranking functions, topic by topic."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.core import rank, summarize_ranking
from deteval.core.ap import average_precision
from deteval.core.summary import precision_at_k, recall_at_k
from deteval.retrieval import evaluate_trec


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_measures_equal_core_rankings(seed):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for t in range(25):
        docs = [f"d{j}" for j in rng.choice(200, int(rng.integers(1, 60)), replace=False)]
        run[f"t{t}"] = {d: float(rng.integers(0, 8)) for d in docs}  # many ties
        judged = rng.choice(200, 30, replace=False)
        qrels[f"t{t}"] = {f"d{j}": int(rng.integers(0, 2)) for j in judged}
    res = evaluate_trec(qrels, run, ["map", "Rprec", "Fmax", "P.5,10", "recall.5,10"], per_query=True)
    for t, docs in run.items():
        names = sorted(docs)
        scores = np.array([docs[d] for d in names])
        outcomes = np.array([qrels[t].get(d, 0) >= 1 for d in names])
        n_rel = sum(v >= 1 for v in qrels[t].values())
        # trec_eval's tie rule for the core: docno descending = ascending on minus the docno's sort position
        r = rank(scores, outcomes, n_rel, tiebreak=-np.arange(len(names)))
        row = res.per_class[t]
        s = summarize_ranking(r)
        assert row["map"] == pytest.approx(average_precision(r, "uninterpolated"), abs=1e-12)
        assert row["Rprec"] == pytest.approx(s.break_even_point, abs=1e-12)
        assert row["Fmax"] == pytest.approx(s.f_max, abs=1e-12)
        for k in (5, 10):
            assert row[f"P_{k}"] == pytest.approx(precision_at_k(r, k), abs=1e-15)
            assert row[f"recall_{k}"] == pytest.approx(recall_at_k(r, k), abs=1e-15)
