"""Fuzzing the TREC loaders and measures: a DetevalError or a valid result, never another exception or a
NaN in a reported measure. Skipped until the TREC evaluator is present in the tree."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from fuzz_mutations import assert_valid_result, fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("deteval.io.trec")

from deteval.errors import DetevalError  # noqa: E402
from deteval.io.trec import load_qrels, load_run  # noqa: E402
from deteval.retrieval.trec import evaluate_trec  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "trec"
QRELS = (SAMPLE / "qrels.txt").read_bytes() if (SAMPLE / "qrels.txt").exists() else b""
RUN = (SAMPLE / "run.txt").read_bytes() if (SAMPLE / "run.txt").exists() else b""


def _evaluate(qrels: bytes, run: bytes, measures: str | list[str], complete: bool, per_query: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        q, r = Path(tmp) / "qrels.txt", Path(tmp) / "run.txt"
        q.write_bytes(qrels)
        r.write_bytes(run)
        try:
            result = evaluate_trec(
                load_qrels(q), load_run(r), measures, complete=complete, per_query=per_query
            )
        except DetevalError as exc:
            assert exc.file is not None and (str(q) in exc.file or str(r) in exc.file), exc
            return
        assert_valid_result(result)


MEASURES = st.sampled_from(
    ("official", "all_trec", ["map", "P.5,10", "ndcg_cut.10", "recip_rank"], ["Rprec", "bpref"])
)


@fuzz_settings(150)
@given(run=mutated(RUN, max_ops=5), measures=MEASURES, complete=st.booleans(), per_query=st.booleans())
def test_fuzz_run(run, measures, complete, per_query):
    _evaluate(QRELS, run, measures, complete, per_query)


@fuzz_settings(150)
@given(qrels=mutated(QRELS, max_ops=5), measures=MEASURES, complete=st.booleans(), per_query=st.booleans())
def test_fuzz_qrels(qrels, measures, complete, per_query):
    _evaluate(qrels, RUN, measures, complete, per_query)
