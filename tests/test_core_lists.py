"""The many-lists engine (deteval.core.lists) against a plain one-list-at-a-time reading of the rules, and
integer weights against repeated items (hypothesis).

The reference below is written from the definitions in the module docstring with Python loops over ranks,
not from the engine's vectorised code: a sort per list, running counts, ``max`` over ranks for the envelope,
``np.sum`` for VOCap's terms (as the Python ports), a left-to-right loop for the uninterpolated sum.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval.core.levels import COCO_RECALL_LEVELS, PY_FASTER_RCNN_LEVELS, VOC_DEVKIT_LEVELS
from deteval.core.lists import (
    AP_METHODS,
    COCO_EPS,
    min_counts_for_recall,
    presorted_lists,
    ranked_lists,
    true_before,
)
from deteval.errors import ValidationError

SETTINGS = settings(max_examples=150, deadline=None)
EPS = float(np.spacing(1))


def reference_list(scores, outcomes, n_pos):
    """Per rank (tp, fp, score) of one list: stable sort by descending score, ignored items dropped."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    rows, tp, fp = [], 0, 0
    for i in order:
        if outcomes[i] == -1:
            continue
        tp += outcomes[i] == 1
        fp += outcomes[i] == 0
        rows.append((tp, fp, scores[i]))
    return rows


def ref_interp(rows, n_pos, levels, eps=0.0):
    prec = [t / (t + f + eps) for t, f, _ in rows]
    rec = [t / n_pos if n_pos else 0.0 for t, _, _ in rows]
    out = []
    for x in levels:
        reach = [p for p, r in zip(prec, rec) if r >= x]
        out.append(max(reach) if reach else 0.0)
    return out


def ref_ap(rows, n_pos, method, levels=None):
    if n_pos == 0:
        return 0.0
    if method == "voc07":
        ap = 0.0
        lv = VOC_DEVKIT_LEVELS if levels is None else levels
        for p in ref_interp(rows, n_pos, lv):
            ap = ap + p / float(len(lv))
        return ap
    if method == "coco101":
        return float(np.mean(ref_interp(rows, n_pos, COCO_RECALL_LEVELS, EPS)))
    if method == "uninterpolated":
        s = 0.0
        prev = 0
        for t, f, _ in rows:
            if t > prev:
                s += t / (t + f)
            prev = t
        return s / n_pos
    mrec = [0.0] + [t / n_pos for t, _, _ in rows] + [1.0]
    mpre = [0.0] + [t / (t + f) for t, f, _ in rows] + [0.0]
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = max(mpre[i], mpre[i + 1])
    terms = [(mrec[i] - mrec[i - 1]) * mpre[i] for i in range(1, len(mrec)) if mrec[i] != mrec[i - 1]]
    return float(np.sum(terms)) if terms else 0.0


@st.composite
def many_lists(draw, max_lists=6, max_size=25, weights=False):
    n_lists = draw(st.integers(1, max_lists))
    n = draw(st.integers(0, max_size))
    lid = draw(st.lists(st.integers(0, n_lists - 1), min_size=n, max_size=n))
    scores = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    outcomes = draw(st.lists(st.sampled_from([1, 0, -1]), min_size=n, max_size=n))
    w = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) if weights else [1] * n
    missed = draw(st.lists(st.integers(0, 3), min_size=n_lists, max_size=n_lists))
    n_pos = [
        sum(wi for li, o, wi in zip(lid, outcomes, w) if li == k and o == 1) + missed[k]
        for k in range(n_lists)
    ]
    return (
        n_lists,
        np.array(lid, dtype=np.int64),
        np.array(scores, float),
        np.array(outcomes, dtype=np.int64),
        np.array(w, dtype=np.int64),
        n_pos,
    )


def split(lid, scores, outcomes, k):
    rows = np.flatnonzero(lid == k)
    return scores[rows].tolist(), outcomes[rows].tolist()


@pytest.mark.slow
@SETTINGS
@given(many_lists())
def test_every_ap_method_equals_one_list_reference_bit_for_bit(data):
    n_lists, lid, scores, outcomes, _, n_pos = data
    rl = ranked_lists(lid, scores, outcomes, n_pos, n_lists=n_lists)
    for method in AP_METHODS:
        got = rl.average_precision(method).tolist()
        for k in range(n_lists):
            rows = reference_list(*split(lid, scores, outcomes, k), n_pos[k])
            assert got[k] == ref_ap(rows, n_pos[k], method), (method, k)
    for levels in (PY_FASTER_RCNN_LEVELS, np.array([0.9, 0.0, 0.5, 0.25, 1.0])):  # unsorted levels too
        q = rl.interpolated_precision(levels)
        for k in range(n_lists):
            rows = reference_list(*split(lid, scores, outcomes, k), n_pos[k])
            assert q[k].tolist() == ref_interp(rows, n_pos[k], levels)


@pytest.mark.slow
@SETTINGS
@given(many_lists())
def test_curves_and_cutoff_measures_equal_one_list_reference(data):
    n_lists, lid, scores, outcomes, _, n_pos = data
    rl = ranked_lists(lid, scores, outcomes, n_pos, n_lists=n_lists)
    prec, rec, env, f = rl.precision(), rl.recall(), rl.envelope(), rl.f_curve()
    for k in range(n_lists):
        rows = reference_list(*split(lid, scores, outcomes, k), n_pos[k])
        sl = slice(int(rl.rank_start[k]), int(rl.rank_start[k] + rl.n_ranked[k]))
        p = [t / (t + f_) for t, f_, _ in rows]
        r = [t / n_pos[k] if n_pos[k] else 0.0 for t, _, _ in rows]
        assert prec[sl].tolist() == p and rec[sl].tolist() == r
        assert env[sl].tolist() == [max(p[i:]) for i in range(len(p))]
        assert rl.scores[rl.ranked_items[sl]].tolist() == [s for _, _, s in rows]
        tps = [t for t, _, _ in rows]
        for cut in (1, 2, 5, 40):
            tk = tps[min(cut, len(tps)) - 1] if tps else 0
            assert rl.precision_at(cut)[k] == tk / cut
            assert rl.recall_at(cut)[k] == (tk / n_pos[k] if n_pos[k] else 0.0)
        bep = (tps[min(n_pos[k], len(tps)) - 1] / n_pos[k]) if (tps and n_pos[k]) else 0.0
        assert rl.r_precision()[k] == bep
        first = next((i + 1 for i, t in enumerate(tps) if t == 1), 0)
        assert rl.reciprocal_rank()[k] == (1 / first if first else 0.0)
        assert rl.f_max()[k] == (max(f[sl]) if len(rows) else 0.0)
        for cut in (1, 3):
            s = sum(t / (i + 1) for i, t in enumerate(tps[:cut]) if t > (tps[i - 1] if i else 0))
            assert rl.average_precision_at(cut)[k] == pytest.approx(
                s / n_pos[k] if n_pos[k] else 0.0, abs=1e-15
            )


def expand(lid, scores, outcomes, w):
    """The repeated list: each item w times, copies adjacent in input order."""
    return np.repeat(lid, w), np.repeat(scores, w), np.repeat(outcomes, w)


@pytest.mark.slow
@SETTINGS
@given(many_lists(weights=True))
def test_weights_equal_repeated_items_for_every_measure(data):
    n_lists, lid, scores, outcomes, w, n_pos = data
    weighted = ranked_lists(lid, scores, outcomes, n_pos, n_lists=n_lists, weights=w)
    repeated = ranked_lists(*expand(lid, scores, outcomes, w), n_pos, n_lists=n_lists)
    for method in AP_METHODS:
        a = weighted.average_precision(method, if_no_positives=-1.0)
        b = repeated.average_precision(method, if_no_positives=-1.0)
        assert a.tolist() == b.tolist(), method
    for name in ("r_precision", "reciprocal_rank", "f_max"):
        assert getattr(weighted, name)().tolist() == getattr(repeated, name)().tolist()
    for k in (1, 2, 7):
        assert weighted.precision_at(k).tolist() == repeated.precision_at(k).tolist()
        assert weighted.recall_at(k).tolist() == repeated.recall_at(k).tolist()
        assert weighted.average_precision_at(k).tolist() == repeated.average_precision_at(k).tolist()
    assert (
        weighted.interpolated_precision(COCO_RECALL_LEVELS).tolist()
        == repeated.interpolated_precision(COCO_RECALL_LEVELS).tolist()
    )
    assert (
        weighted.scores_at_levels(COCO_RECALL_LEVELS).tolist()
        == repeated.scores_at_levels(COCO_RECALL_LEVELS).tolist()
    )


def test_weight_zero_drops_the_item():
    a = ranked_lists(None, [3, 2, 1], [0, 1, 1], 2, weights=[0, 1, 1])
    b = ranked_lists(None, [2, 1], [1, 1], 2)
    assert (
        a.average_precision("uninterpolated").tolist()
        == b.average_precision("uninterpolated").tolist()
        == [1.0]
    )
    assert a.order.tolist() == [1, 2]


def test_scores_at_levels_reads_pycocotools_rows():
    # rows: ignored (0.9), TP (0.8), FP (0.7), TP (0.6); n_pos 4. Level 0 -> the first row even if ignored.
    rl = ranked_lists(None, [0.9, 0.8, 0.7, 0.6], [-1, 1, 0, 1], 4)
    assert rl.scores_at_levels([0.0, 0.25, 0.26, 0.5, 0.51]).tolist() == [[0.9, 0.8, 0.6, 0.6, 0.0]]
    eps = EPS
    assert rl.interpolated_precision([0.0, 0.5, 0.6], eps).tolist() == [[1 / (1 + eps), 2 / (3 + eps), 0.0]]


def test_tie_policies():
    sc, out = [1.0, 1.0, 1.0], [0, 1, 0]
    assert ranked_lists(None, sc, out).order.tolist() == [0, 1, 2]
    # trec_eval: docno descending as an ascending key (here the key ranks item 2 first, then 1, then 0)
    assert ranked_lists(None, sc, out, tiebreak=[2, 1, 0]).order.tolist() == [2, 1, 0]
    assert ranked_lists(None, None, out, ties="presorted").order.tolist() == [0, 1, 2]
    two = ranked_lists([1, 0, 1, 0], [1.0, 2.0, 3.0, 2.0], [1, 1, 0, 0])
    assert two.order.tolist() == [1, 3, 2, 0] and two.count.tolist() == [2, 2]


def test_presorted_lists_and_empty_lists():
    rl = presorted_lists([2, 0, 1], np.array([1, 0, 1], dtype=bool), [1, 3, 1])
    assert rl.average_precision("all_points").tolist() == [1.0, 0.0, 1.0]
    assert rl.average_precision("coco101", if_no_positives=-1.0)[1] == 0.0
    empty = presorted_lists([0], np.zeros(0, bool), [0])
    assert empty.average_precision("voc07", if_no_positives=-1.0).tolist() == [-1.0]
    assert empty.f_max().tolist() == [0.0] and empty.reciprocal_rank().tolist() == [0.0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_pos": [0]}, "smaller than"),
        ({"weights": [1, -1]}, "negative"),
        ({"weights": [1.5, 1]}, "integers"),
        ({"n_pos": [1, 2]}, "one count per entry"),
    ],
)
def test_bad_input_is_refused(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        ranked_lists(None, [1.0, 2.0], [1, 0], **kwargs)


def test_presorted_lists_refuse_inconsistent_columns():
    with pytest.raises(ValidationError, match="smaller than"):
        presorted_lists([2], np.array([True, True]), [1])
    with pytest.raises(ValidationError, match="both relevant and ignored"):
        presorted_lists([1], np.array([True]), [1], np.array([True]))
    with pytest.raises(ValidationError, match="summing to"):
        presorted_lists([3], np.array([True]), [1])


def test_list_id_out_of_range():
    with pytest.raises(ValidationError, match="outside"):
        ranked_lists([0, 3], [1.0, 2.0], [1, 0], n_lists=2)
    assert math.isfinite(ranked_lists([0, 1], [1.0, 2.0], [1, 0]).average_precision()[0])


def test_readme_core_example_runs_and_weights_mean_copies():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "ranked_lists" in b)
    ns: dict = {}
    exec(block, ns)
    lists, resample = ns["lists"], ns["resample"]
    # list 0: TP, (ignored), FP with n_pos 2 -> P = 1, 1/2; list 1: FP, TP with n_pos 1 -> P = 0, 1/2
    assert lists.average_precision("all_points").tolist() == [0.5, 0.5]
    assert lists.precision_at(2).tolist() == [0.5, 0.5] and lists.reciprocal_rank().tolist() == [1.0, 0.5]
    repeated = ranked_lists([0, 0, 0, 1, 1, 1], [0.9, 0.9, 0.7, 0.6, 0.6, 0.5], [1, 1, 0, 0, 0, 1], [2, 1])
    for method in AP_METHODS:
        assert resample.average_precision(method).tolist() == repeated.average_precision(method).tolist()


@pytest.mark.slow
@SETTINGS
@given(many_lists(weights=True))
def test_presorted_weights_equal_ranked_weights(data):
    n_lists, lid, scores, outcomes, w, n_pos = data
    ranked = ranked_lists(lid, scores, outcomes, n_pos, n_lists=n_lists, weights=w)
    order = ranked_lists(lid, scores, outcomes, None, n_lists=n_lists).order  # the same sort, unweighted
    counts = np.bincount(lid, minlength=n_lists)
    pre = presorted_lists(
        counts, outcomes[order] == 1, n_pos, outcomes[order] == -1, scores[order], weights=w[order]
    )
    assert pre.count.tolist() == ranked.count.tolist()
    assert order[pre.order].tolist() == ranked.order.tolist()
    for method in AP_METHODS:
        assert pre.average_precision(method).tolist() == ranked.average_precision(method).tolist()
    assert (
        pre.scores_at_levels(COCO_RECALL_LEVELS).tolist()
        == ranked.scores_at_levels(COCO_RECALL_LEVELS).tolist()
    )


@pytest.mark.parametrize("seed", range(60))
def test_hit_rank_counts_the_items_not_ignored_up_to_each_hit(seed: int) -> None:
    """``hit_rank`` (rank among the items not ignored, the hit included) and ``n_hits`` against a loop over
    each list, with few ignored items and many (lists of more than 8 items: the packed flags' bytes and the
    bits of a hit's own byte both count)."""
    rng = np.random.default_rng(seed)
    count = rng.integers(0, 12, rng.integers(1, 30))
    n = int(count.sum())
    share = [0.02, 0.1, 0.5][seed % 3]
    ignored = rng.random(n) < share
    relevant = (rng.random(n) < 0.5) & ~ignored
    lists = presorted_lists(count, relevant, np.maximum(relevant.sum(), 1) * np.ones(len(count)), ignored)
    want = []
    hits = []
    start = 0
    for c in count.tolist():
        kept = 0
        for i in range(start, start + c):
            kept += not ignored[i]
            if relevant[i]:
                want.append(kept)
        hits.append(int(relevant[start : start + c].sum()))
        start += c
    assert lists.hit_rank.tolist() == want
    assert lists.n_hits.tolist() == hits


@pytest.mark.parametrize("words", [True, False])
@pytest.mark.parametrize("seed", range(20))
def test_true_before_counts_like_a_running_sum(seed: int, words: bool, monkeypatch) -> None:
    """``true_before``: the True flags before each position (0 to the length, in any order), as a running sum
    reads them, for lengths around multiples of 64 (the packed words) and every share of True; ``words``
    False: numpy without ``bitwise_count`` (before 2.0), the bytes' path."""
    if not words:
        monkeypatch.delattr(np, "bitwise_count", raising=False)
    elif not hasattr(np, "bitwise_count"):
        pytest.skip("numpy < 2 has no bitwise_count")
    rng = np.random.default_rng(seed)
    n = [0, 64, 128, 7][seed] if seed < 4 else int(rng.integers(1, 200))
    flags = rng.random(n) < [0.0, 0.3, 0.9, 1.0][seed % 4]
    positions = rng.integers(0, n + 1, 40)
    want = np.concatenate(([0], np.cumsum(flags)))[positions]
    assert true_before(flags, positions).tolist() == want.tolist()
    assert true_before(flags, np.array([n])).tolist() == [int(flags.sum())]


@pytest.mark.parametrize("seed", range(10))
def test_precision_and_items_with_given_counts_equal_its_own(seed: int) -> None:
    """``precision_and_items(counts=...)`` with the counts of ``min_counts_for_recall`` made by the caller (once
    for many sets of lists over the same n_pos, as COCO's accumulation does) gives the arrays it computes
    itself; the counts it is given are the ones it reads (other counts give other rows)."""
    rng = np.random.default_rng(seed)
    count = rng.integers(0, 30, 12)
    n = int(count.sum())
    ignored = rng.random(n) < 0.2
    relevant = (rng.random(n) < 0.4) & ~ignored
    lists = presorted_lists(count, relevant, np.maximum(relevant.sum(), 1) + rng.integers(0, 4, 12), ignored)
    counts = min_counts_for_recall(COCO_RECALL_LEVELS, lists.n_pos)
    q, rows = lists.precision_and_items(COCO_RECALL_LEVELS, COCO_EPS)
    q2, rows2 = lists.precision_and_items(COCO_RECALL_LEVELS, COCO_EPS, counts=counts)
    assert q.tolist() == q2.tolist() and rows.tolist() == rows2.tolist()
    assert (q > 0).any()
    _, shifted = lists.precision_and_items(COCO_RECALL_LEVELS, COCO_EPS, counts=counts + 1)
    assert shifted.tolist() != rows.tolist()
