"""Differential tests: deteval's trec measures against pytrec_eval (trec_eval in C) on seeded random data.

The cases have score ties (trec_eval breaks them by docno descending), graded and negative relevance,
topics without relevant documents, qrels topics missing from the run and run topics without qrels.
"""

from __future__ import annotations

import numpy as np
import pytest

from deteval.io.trec import load_qrels, load_run, qrels_from_dict, run_from_dict
from deteval.retrieval import evaluate_trec
from deteval.retrieval.prepare import prepare

pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = [
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P.1,2,3,5,10,20,50",
    "recall.1,2,3,5,10,20,50",
    "11pt_avg",
    "ndcg",
    "ndcg_cut.1,2,3,5,10,20,50",
    "map_cut.1,3,5,10,50",
    "success.1,2,5,10",
    "set_P",
    "set_recall",
    "set_F",
    "relative_P.1,2,5,10,50",
    "set_relative_P",
    "set_map",
    "num_nonrel_judged_ret",
    "gm_bpref",
]


def random_case(seed: int, n_topics: int = 12, max_docs: int = 40):
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(60)] + [f"doc-{i:06d}-long-name" for i in range(30)] + ["D", "d", "d0a"]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for t in range(n_topics):
        qid = f"q{t}"
        kind = t % 6
        # seeds divisible by 3 judge only short docnos: qrels and run arrays then differ in width
        n_judgeable = 60 if seed % 3 == 0 else len(pool)
        judged = rng.choice(n_judgeable, size=int(rng.integers(1, 30)), replace=False)
        levels = rng.integers(-1, 4, size=judged.size) if seed % 2 else rng.integers(0, 2, size=judged.size)
        if kind == 1:  # no relevant document at all
            levels = np.minimum(levels, 0)
        if kind != 2:  # kind 2: qrels topic missing from the run
            qrels[qid] = {pool[i]: int(l) for i, l in zip(judged, levels)}
        else:
            qrels[qid] = {pool[i]: int(l) for i, l in zip(judged, levels)}
        if kind == 2:
            continue
        n = int(rng.integers(1, max_docs))
        docs = rng.choice(len(pool), size=min(n, len(pool)), replace=False)
        # coarse scores: many ties, resolved by docno (descending) in trec_eval
        scores = np.round(rng.normal(size=docs.size), 1 if kind in (0, 3) else 6)
        run[qid] = {pool[i]: float(s) for i, s in zip(docs, scores)}
    run["q_only_in_run"] = {"d1": 1.0, "d2": 0.5}
    return qrels, run


def pytrec(qrels, run, level=1):
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES), relevance_level=level)
    return ev.evaluate(run)


def assert_same(ref: dict, got: dict) -> None:
    assert set(ref) == set(got), (sorted(ref), sorted(got))
    n = 0
    for topic, row in ref.items():
        for name, value in row.items():
            assert name in got[topic], name
            assert got[topic][name] == pytest.approx(value, abs=1e-12, rel=0, nan_ok=True), (
                topic,
                name,
                value,
                got[topic][name],
            )
            n += 1
    assert n > 0


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("level", [1, 2])
def test_random_dicts_match_pytrec_eval(seed: int, level: int) -> None:
    qrels, run = random_case(seed)
    ref = pytrec(qrels, run, level)
    res = evaluate_trec(qrels, run, MEASURES, relevance_level=level, per_query=True)
    assert_same(ref, res.per_class)
    # the summary is the mean over the evaluated topics (sums for the counts)
    topics = list(ref)
    assert res.summary["map"] == pytest.approx(sum(ref[t]["map"] for t in topics) / len(topics), abs=1e-12)
    assert res.summary["num_rel"] == sum(int(ref[t]["num_rel"]) for t in topics)
    gm = np.exp(np.mean([ref[t]["gm_map"] for t in topics]))
    assert res.summary["gm_map"] == pytest.approx(gm, abs=1e-12)


@pytest.mark.parametrize("seed", [100, 101, 102])
def test_random_files_match_pytrec_eval(tmp_path, seed: int) -> None:
    qrels, run = random_case(seed, n_topics=20)
    qp, rp = tmp_path / "qrels.txt", tmp_path / "run.txt"
    # messy but legal whitespace: tabs, repeated spaces, CRLF, blank lines
    qp.write_text(
        "".join(f"{q}\t0  {d} {r}\r\n" for q, docs in qrels.items() for d, r in docs.items()) + "\n"
    )
    lines = []
    for q, docs in run.items():
        for i, (d, s) in enumerate(docs.items()):
            lines.append(f"{q} Q0\t{d}  {i + 1} {s!r} tag\n")
    rp.write_text("".join(reversed(lines)))  # ranks in reverse: deteval must re-rank by score
    res = evaluate_trec(load_qrels(qp), load_run(rp), MEASURES, per_query=True)
    assert_same(pytrec(qrels, run), res.per_class)
    assert any("blank line" in w for w in res.warnings)


@pytest.mark.parametrize("seed", [3, 4])
def test_exact_join_path_agrees(seed: int) -> None:
    qrels, run = random_case(seed)
    q, r = qrels_from_dict(qrels), run_from_dict(run)
    a, b = prepare(q, r), prepare(q, r, exact_join=True)
    assert np.array_equal(a.rel, b.rel) and np.array_equal(a.row_topic, b.row_topic)
    assert np.array_equal(a.num_rel, b.num_rel)


def test_complete_counts_missing_topics_as_empty_rankings() -> None:
    qrels, run = random_case(5)
    ref = pytrec(qrels, run)
    res = evaluate_trec(
        qrels, run, ["map", "P.5", "num_rel", "gm_map", "num_q"], complete=True, per_query=True
    )
    missing = sorted(set(qrels) - set(run))
    assert missing and all(res.per_class[t]["map"] == 0.0 for t in missing)
    n = len(qrels)
    assert res.summary["num_q"] == n
    assert res.summary["map"] == pytest.approx(sum(ref[t]["map"] for t in ref) / n, abs=1e-12)
    logs = [ref[t]["gm_map"] for t in ref] + [np.log(1e-5)] * len(missing)
    assert res.summary["gm_map"] == pytest.approx(np.exp(np.mean(logs)), abs=1e-12)
    plain = evaluate_trec(qrels, run, ["map"])
    assert plain.summary["map"] == pytest.approx(sum(ref[t]["map"] for t in ref) / len(ref), abs=1e-12)


def test_uneven_topic_sizes_use_the_global_sort_and_agree():
    rng = np.random.default_rng(11)
    qrels = {
        f"t{i}": {f"d{j}": int(rng.integers(0, 3)) for j in rng.choice(3000, 40, replace=False)}
        for i in range(30)
    }
    run = {
        f"t{i}": {
            f"d{j}": float(rng.integers(0, 50))
            for j in rng.choice(3000, 2500 if i == 0 else 2, replace=False)
        }
        for i in range(30)
    }
    assert_same(pytrec(qrels, run), evaluate_trec(qrels, run, MEASURES, per_query=True).per_class)


def test_hash_collisions_fall_back_to_the_exact_join(monkeypatch):
    import deteval.retrieval.prepare as prep

    qrels, run = random_case(8)
    ref = pytrec(qrels, run)
    calls = []

    def colliding(topic, docno):  # every docno of a topic gets the same key
        calls.append(1)
        return topic.astype(np.uint64) << np.uint64(40)

    monkeypatch.setattr(prep, "_pair_hash", colliding)
    assert_same(ref, evaluate_trec(qrels, run, MEASURES, per_query=True).per_class)
    assert calls


def test_equal_depth_topics_agree():
    # every topic retrieves the same number of documents (the usual TREC run): the unpadded sort path
    rng = np.random.default_rng(12)
    qrels = {
        f"t{i}": {f"doc{j}": int(rng.integers(0, 3)) for j in rng.choice(500, 30, replace=False)}
        for i in range(40)
    }
    run = {
        f"t{i}": {f"doc{j}": float(rng.integers(0, 20)) for j in rng.choice(500, 50, replace=False)}
        for i in range(40)
    }
    assert_same(pytrec(qrels, run), evaluate_trec(qrels, run, MEASURES, per_query=True).per_class)


@pytest.mark.parametrize("seed", [20, 21])
def test_max_docs_equals_pytrec_eval_on_the_truncated_run(seed):
    qrels, run = random_case(seed)
    m = 7
    # trec_eval's order: score descending, docno descending (bytewise); keep the first m
    truncated = {
        t: dict(sorted(docs.items(), key=lambda kv: (-kv[1], [-b for b in kv[0].encode()] + [1]))[:m])
        for t, docs in run.items()
    }
    res = evaluate_trec(qrels, run, MEASURES, per_query=True, max_docs=m)
    assert_same(pytrec(qrels, truncated), res.per_class)
    assert max(row["num_ret"] for row in res.per_class.values()) == m
