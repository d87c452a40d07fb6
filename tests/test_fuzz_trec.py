"""Fuzzing the TREC loaders and measures: damaged qrels and runs give a DetevalError or a valid result.

No other exception, no hang and no NaN in a reported measure, in both error modes; with ``on_error="skip"``
deleting the lines the result reports as skipped gives a file that scores exactly the same.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fuzz_mutations import assert_valid_result, fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

from deteval.errors import DetevalError
from deteval.io.trec import load_qrels, load_run, run_from_dict
from deteval.run.trec import evaluate_trec

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "trec"
QRELS = (SAMPLE / "qrels.txt").read_bytes()
RUN = (SAMPLE / "run.txt").read_bytes()
MEASURES = ["official", "P.5,10", "ndcg_cut.10", "recall.10", "bpref", "Rprec", "recip_rank"]
FUZZ = fuzz_settings(100)
MODES = st.sampled_from(("raise", "skip"))


def _evaluate(qrels: Path, run: Path, on_error: str, complete: bool) -> dict | None:
    try:
        q, r = load_qrels(qrels, on_error=on_error), load_run(run, on_error=on_error)
        result = evaluate_trec(q, r, MEASURES, complete=complete, per_query=True)
    except DetevalError as exc:
        assert exc.file is not None, exc
        return None
    assert_valid_result(result)
    skipped = result.summary.get("skipped_records")
    assert (skipped is None) == (on_error == "raise")
    return result.to_dict()


def _without_skipped(path: Path, warnings: list[str]) -> bytes:
    prefix = f"skipped bad record: {path}: line "
    bad = {int(w[len(prefix) :].split(":")[0]) for w in warnings if w.startswith(prefix)}
    lines = path.read_bytes().split(b"\n")
    return b"\n".join(t for i, t in enumerate(lines, 1) if i not in bad)


def _scores(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("warnings", "skipped_records", "lines")}


@FUZZ
@given(qrels=mutated(QRELS, max_ops=6), run=mutated(RUN, max_ops=6), which=st.integers(0, 2), on_error=MODES,
       complete=st.booleans())  # fmt: skip
def test_fuzz_qrels_and_run(qrels, run, which, on_error, complete):
    with tempfile.TemporaryDirectory() as tmp:
        q, r = Path(tmp) / "qrels.txt", Path(tmp) / "run.txt"
        q.write_bytes(qrels if which != 1 else QRELS)  # 0: both damaged, 1: the run only, 2: the qrels only
        r.write_bytes(run if which != 2 else RUN)
        doc = _evaluate(q, r, on_error, complete)
        if doc is not None and on_error == "skip" and doc["skipped_records"]:
            # the skip contract: the files without the reported lines score exactly the same
            q.write_bytes(_without_skipped(q, doc["warnings"]))
            r.write_bytes(_without_skipped(r, doc["warnings"]))
            clean = _evaluate(q, r, "raise", complete)
            assert clean is not None and _scores(clean) == _scores(doc)


SCORES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**30), 10**30),
    st.sampled_from(["1", "x", None, True, b"1"]),
)  # fmt: skip
IDS = st.one_of(
    st.sampled_from(["401", "402", "d1", "", " ", "a b", 401, 3.5, None, b"x"]), st.text(max_size=3)
)


@FUZZ
@given(run=st.dictionaries(IDS, st.dictionaries(IDS, SCORES, max_size=5), max_size=4))
def test_fuzz_in_memory_run(run):
    try:
        r = run_from_dict(run)
        with tempfile.TemporaryDirectory() as tmp:
            q = Path(tmp) / "qrels.txt"
            q.write_bytes(QRELS)
            result = evaluate_trec(load_qrels(q), r, MEASURES, complete=True)
    except DetevalError:
        return
    assert_valid_result(result)


@fuzz_settings(30)
@given(
    qrels=mutated(QRELS, max_ops=6), run=mutated(RUN, max_ops=6), version=st.sampled_from(("9.0.8", "10.0"))
)
def test_fuzz_all_trec_measures_both_versions(qrels, run, version):
    # every measure of the version's all_trec set, comment lines read as 10.0 reads them
    with tempfile.TemporaryDirectory() as tmp:
        q, r = Path(tmp) / "qrels.txt", Path(tmp) / "run.txt"
        q.write_bytes(qrels)
        r.write_bytes(run)
        comments = version == "10.0"
        try:
            result = evaluate_trec(
                load_qrels(q, comments=comments),
                load_run(r, comments=comments),
                ["all_trec"],
                complete=True,
                per_query=True,
                version=version,
            )
        except DetevalError as exc:
            assert exc.file is not None or exc.record is None, exc
            return
        assert_valid_result(result)
