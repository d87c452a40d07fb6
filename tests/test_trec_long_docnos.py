"""One very long docno must cost its own size, not its size per row (issue 12 item 3).

The docno column's width follows the typical docno; docnos much longer than the rest are kept apart whole.
Results must be those of the whole strings: ties broken by docno (a long docno sharing its first bytes with
short ones), joins, duplicates, the exact-join path, in-memory dicts, long number tokens.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from _trec_files import write_trec
from test_trec_vs_pytrec_eval import MEASURES, assert_same

from deteval.errors import InputFormatError, ValidationError
from deteval.io.trec import column_width, load_qrels, load_run, qrels_from_dict, run_from_dict
from deteval.retrieval import evaluate_trec
from deteval.retrieval.docnos import codes
from deteval.retrieval.prepare import prepare

pytrec_eval = pytest.importorskip("pytrec_eval")

HUGE = "X" * 200_000


@pytest.mark.slow
def test_one_huge_docno_keeps_memory_small(tmp_path) -> None:
    # 20,000 lines and one 200 KB docno: a column as wide as the longest docno would need 4 GB
    rng = np.random.default_rng(0)
    run = {f"{t}": {f"doc{d:06d}": float(s) for d, s in zip(range(100), rng.random(100))} for t in range(200)}
    run["7"][HUGE] = 0.5
    qrels = {f"{t}": {f"doc{d:06d}": int(d % 3) for d in range(0, 100, 7)} for t in range(200)}
    qrels["7"][HUGE] = 2
    qp, rp = write_trec(tmp_path, qrels, run)
    size = rp.stat().st_size + qp.stat().st_size  # about 1.3 MB
    tracemalloc.start()
    res = evaluate_trec(load_qrels(qp), load_run(rp), ["map", "P.10", "ndcg"], per_query=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * size, (peak, size)  # measured: 7.1 MB for 1.3 MB of input (was 4 GB)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_10", "ndcg"}).evaluate(run)
    assert res.per_class["7"]["map"] == pytest.approx(ref["7"]["map"], abs=1e-12)
    assert res.per_class["7"]["ndcg"] == pytest.approx(ref["7"]["ndcg"], abs=1e-12)


def test_column_width_follows_the_typical_token() -> None:
    assert column_width(np.array([5, 7, 6])) == 7
    assert column_width(np.array([10] * 1000 + [20_000])) == 10
    assert column_width(np.array([], dtype=np.int64)) == 0


def tie_case():
    # docnos sharing their first bytes with a long one; all tied on score, so docno order decides
    base = "d" * 40
    names = [base, base + "a", base + "b" * 3000, base + "b" * 3001, base + "c", "e" * 5000, "e", "a" * 4000]
    qrels = {"q": {n: (i % 2) for i, n in enumerate(names)}, "r": {"x": 1}}
    run = {"q": dict.fromkeys(names + ["zzz"], 1.0), "r": {"x": 1.0, "y" * 7000: 1.0}}
    return qrels, run


def test_ties_between_long_and_short_docnos_follow_strcmp(tmp_path) -> None:
    qrels, run = tie_case()
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run)
    got = evaluate_trec(qrels, run, MEASURES, per_query=True)
    assert run_from_dict(run).docno_long  # the long docnos are kept apart
    assert_same(ref, got.per_class)
    qp, rp = write_trec(tmp_path, qrels, run)
    assert load_run(rp).docno_long
    assert_same(ref, evaluate_trec(load_qrels(qp), load_run(rp), MEASURES, per_query=True).per_class)
    q, r = qrels_from_dict(qrels), run_from_dict(run)
    a, b = prepare(q, r), prepare(q, r, exact_join=True)
    assert np.array_equal(a.rel, b.rel) and np.array_equal(a.num_rel, b.num_rel)


def test_codes_order_long_docnos_among_short_ones() -> None:
    names = [b"b", b"a" * 900, b"a", b"b" + b"z" * 900, b"a" * 900, b"c"]
    r = run_from_dict({"q": {}})  # any run: only its helpers are used below
    assert not r.docno_long
    col = np.array([n[:2] for n in names])
    long = {i: n for i, n in enumerate(names) if len(n) > 2}
    got = codes(col, long, np.arange(len(names)))
    expected = np.unique(np.array(names, dtype=object), return_inverse=True)[1]
    assert got.tolist() == list(expected)


@pytest.mark.slow
def test_a_repeated_long_docno_is_refused(tmp_path) -> None:
    qp, rp = tmp_path / "qrels", tmp_path / "run"
    qp.write_text("q 0 a 1\n")
    rp.write_text(
        "".join(f"q Q0 d{i} 1 0.5 t\n" for i in range(50)) + f"q Q0 {HUGE} 1 0.4 t\nq Q0 {HUGE} 2 0.3 t\n"
    )
    with pytest.raises(ValidationError, match="duplicate document 'XXX") as info:
        evaluate_trec(load_qrels(qp), load_run(rp), ["map"])
    assert info.value.record == "line 52"


def test_long_score_and_relevance_tokens_are_read_whole(tmp_path) -> None:
    qp, rp = tmp_path / "qrels", tmp_path / "run"
    qp.write_text("".join(f"q 0 d{i} {i % 2}\n" for i in range(50)) + "q 0 e " + "0" * 3000 + "1\n")
    long_score = "0." + "0" * 3000 + "1"  # 1e-3001 reads as 0.0
    rp.write_text("".join(f"q Q0 d{i} 1 {i} t\n" for i in range(50)) + f"q Q0 e 1 {long_score} t\n")
    q, r = load_qrels(qp), load_run(rp)
    assert q.rel[-1] == 1 and r.score[-1] == 0.0
    rp.write_text("".join(f"q Q0 d{i} 1 {i} t\n" for i in range(50)) + f"q Q0 e 1 {long_score}x t\n")
    with pytest.raises(InputFormatError, match="not a valid number") as info:
        load_run(rp)
    assert info.value.record == "line 51"


def test_a_topic_id_beyond_the_limit_is_refused(tmp_path) -> None:
    rp = tmp_path / "run"
    rp.write_text("q Q0 d 1 1 t\n" + "T" * 300 + " Q0 d 1 1 t\n")
    with pytest.raises(InputFormatError, match="topic id of 300 bytes") as info:
        load_run(rp)
    assert info.value.record == "line 2"
    with pytest.raises(InputFormatError, match="topic id of 300 bytes"):
        run_from_dict({"T" * 300: {"d": 1.0}})
