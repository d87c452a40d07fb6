"""The core against the reference tools themselves, on seeded random rankings.

* pycocotools: ``COCOeval.accumulate`` run on hand-made per-image evaluation records (scores, matches,
  ignore flags), so that it computes the 101 interpolated precisions of one ranking; the core must give the
  same values bit for bit (``interpolated_precision`` on ``Ranking.precision(eps=np.spacing(1))``).
* trec_eval (pytrec_eval): map, Rprec, recip_rank, P_k, recall_k, map_cut_k and iprec_at_recall of random
  runs with tied scores, ties broken by docno descending via ``tiebreak``. trec_eval sums AP sequentially
  and numpy pairwise, hence 1e-15 rather than equality for the sums.
"""

import contextlib
import copy
import io

import numpy as np
import pytest

from deteval.core import (
    COCO_RECALL_LEVELS,
    average_precision,
    interpolated_precision,
    precision_at_k,
    rank,
    recall_at_k,
    summarize_ranking,
)
from deteval.core.cutoff import average_precision_at_k, reciprocal_rank

N_CASES = 300


def _coco_q(scores, matched, ignored, gt_ignore, max_det):
    from pycocotools.cocoeval import COCOeval

    ev = COCOeval(iouType="bbox")
    p = ev.params
    p.imgIds, p.catIds, p.areaRng, p.areaRngLbl = [0], [1], [[0.0, 1e10]], ["all"]
    p.maxDets, p.iouThrs = [max_det], np.array([0.5])
    ev._paramsEval = copy.deepcopy(p)
    ev.evalImgs = [
        {
            "dtScores": scores.tolist(),
            # A match is stored as the ground-truth id, 0 meaning unmatched.
            "dtMatches": np.where(matched, 7, 0)[None, :],
            "dtIgnore": ignored[None, :],
            "gtIgnore": gt_ignore,
        }
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        ev.accumulate()
    return ev.eval["precision"][0, :, 0, 0, 0], float(ev.eval["recall"][0, 0, 0, 0])


@pytest.mark.slow
def test_coco_accumulate_interpolated_precision_bit_for_bit():
    pytest.importorskip("pycocotools")
    rng = np.random.default_rng(20240611)
    checked = 0
    for _ in range(N_CASES):
        n = int(rng.integers(0, 40))
        scores = np.round(rng.random(n), 1)  # one decimal: many ties, resolved by a stable sort in both
        matched = rng.random(n) < 0.4
        ignored = rng.random(n) < 0.15
        n_pos = int(np.count_nonzero(matched & ~ignored)) + int(rng.integers(0, 4))
        if n_pos == 0:
            continue  # pycocotools skips the category (precision stays -1)
        gt_ignore = np.concatenate([np.zeros(n_pos, dtype=int), np.ones(int(rng.integers(0, 3)), dtype=int)])
        # accumulate sorts the detections itself; the evaluation record holds them sorted already, as
        # evaluateImg leaves them.
        order = np.argsort(-scores, kind="mergesort")
        scores, matched, ignored = scores[order], matched[order], ignored[order]
        max_det = int(rng.integers(1, 45))
        q, coco_recall = _coco_q(scores, matched, ignored, gt_ignore, max_det)

        outcomes = np.where(ignored, -1, matched.astype(int))[:max_det]
        r = rank(scores[:max_det], outcomes, n_pos)
        ours = interpolated_precision(r.recall(), r.precision(eps=float(np.spacing(1))), COCO_RECALL_LEVELS)
        assert ours.tolist() == q.tolist()
        assert average_precision(r, "coco101") == float(np.mean(q))
        assert (r.recall()[-1] if len(r) else 0.0) == coco_recall
        checked += 1
    assert checked > N_CASES // 2


def _trec_case(rng, qid):
    n_ret = int(rng.integers(1, 30))
    docnos = rng.choice(1000, size=n_ret + 10, replace=False)
    names = np.array([f"d{d:04d}" for d in docnos])
    ret, unret = names[:n_ret], names[n_ret:]
    rel = rng.random(n_ret) < 0.35
    judged_nonrel = rng.random(n_ret) < 0.3
    missed = unret[: int(rng.integers(0, 4))]  # relevant documents never retrieved
    qrels = {str(d): 1 for d in ret[rel]}
    qrels.update({str(d): 0 for d in ret[~rel & judged_nonrel]})
    qrels.update({str(d): 1 for d in missed})
    scores = rng.integers(0, 6, size=n_ret).astype(float) / 2  # ties
    run = {str(d): float(s) for d, s in zip(ret, scores)}
    return qrels, run, ret, scores, rel, len(missed)


@pytest.mark.slow
def test_trec_eval_measures_on_random_runs():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(1992)
    cases, qrels, runs = {}, {}, {}
    for i in range(N_CASES):
        qid = f"q{i}"
        q, run, ret, scores, rel, n_missed = _trec_case(rng, qid)
        if not any(v > 0 for v in q.values()):
            continue  # trec_eval needs a relevant document to score the query
        cases[qid] = (ret, scores, rel, int(rel.sum()) + n_missed)
        qrels[qid], runs[qid] = q, run
    measures = {"map", "Rprec", "recip_rank", "P", "recall", "map_cut", "iprec_at_recall"}
    results = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(runs)
    assert len(results) == len(cases) > N_CASES // 2

    levels = np.array([i / 10 for i in range(11)])
    for qid, (ret, scores, rel, n_pos) in cases.items():
        got = results[qid]
        # trec_eval: score descending, then docno descending.
        key = -np.argsort(np.argsort(ret))
        r = rank(scores, rel, n_pos, tiebreak=key)
        assert average_precision(r, "uninterpolated") == pytest.approx(got["map"], abs=1e-15)
        assert summarize_ranking(r).break_even_point == pytest.approx(got["Rprec"], abs=1e-15)
        assert reciprocal_rank(r) == pytest.approx(got["recip_rank"], abs=1e-15)
        for k in (5, 10, 15, 20, 30, 100):
            assert precision_at_k(r, k) == pytest.approx(got[f"P_{k}"], abs=1e-15)
            assert recall_at_k(r, k) == pytest.approx(got[f"recall_{k}"], abs=1e-15)
            assert average_precision_at_k(r, k) == pytest.approx(got[f"map_cut_{k}"], abs=1e-15)
        # trec_eval's iprec_at_recall turns level t into a count of relevant documents,
        # (long)(t * n_pos + 0.9) in the trec_eval 9 that pytrec_eval wraps (lround in later versions). So
        # level 0.7 with 3 relevant documents is reached at 2 of 3 (recall 0.667 < 0.7), and level 0.6 with 2
        # only at 2 of 2. Expressed as recall levels k / n_pos, the core's interpolated precision gives the
        # same values.
        counts = np.floor(levels * n_pos + 0.9)  # the C cast truncates; the values are non-negative
        iprec = interpolated_precision(r.recall(), r.precision(), counts / n_pos)
        expected = [got[f"iprec_at_recall_{t:.2f}"] for t in levels]
        assert iprec.tolist() == expected
