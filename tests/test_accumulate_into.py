"""COCO accumulation written into given buffers (``accumulate(out=)``, used by the two halves of a segm
evaluation to fill memory shared between them, each a run of consecutive categories): the same numbers as
the arrays accumulate makes, on random cases with their own thresholds, recall levels, areas and maxDets."""

from __future__ import annotations

import numpy as np
import pytest
from _coco_cases import random_case

from deteval.detection.coco import match_coco
from deteval.detection.coco_accumulate import accumulate, pycocotools_views
from deteval.detection.coco_params import CocoParams
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.run.coco_two_cores import _category_runs


def _table(seed: int, min_cats: int = 1):
    case = random_case(seed, min_cats)
    p = CocoParams.from_options("bbox", **case["params"])
    g = load_coco_gt(case["gt"])
    r = load_coco_results(case["dt"], g)
    return g, r, p, match_coco(g, r, p)[0]


def _buffers(p: CocoParams, k: int, fill: float):
    A, M, T, R = len(p.area_rng), len(p.max_dets), p.iou_thrs.shape[0], p.rec_thrs.shape[0]
    return np.full((A, M, T, k, R), fill), np.full((A, M, T, k, R), fill), np.full((A, M, T, k), fill)


@pytest.mark.parametrize("seed", range(12))
def test_accumulated_into_buffers_as_into_its_own(seed):
    _, _, p, table = _table(seed)
    made = accumulate(table, p.rec_thrs, p.max_dets)
    # (stale values in the buffers: everything accumulation leaves at -1 is written so)
    out = _buffers(p, table.n_cats, 7.0)
    views = accumulate(table, p.rec_thrs, p.max_dets, out=out)
    assert all(np.shares_memory(v, b) for v, b in zip(views, (out[0], out[2], out[1])))
    for a, b in zip(made, views):
        assert a.shape == b.shape and np.array_equal(a, b), seed
    for a, b in zip(made, pycocotools_views(*out)):
        assert np.array_equal(a, b)


def test_accumulate_out_refuses_what_it_cannot_fill():
    _, _, p, table = _table(0)
    with pytest.raises(ValueError, match="wrong shape"):
        accumulate(table, p.rec_thrs, p.max_dets, out=_buffers(p, table.n_cats + 1, 0.0))
    with pytest.raises(ValueError, match="neither cache nor only"):
        accumulate(table, p.rec_thrs, p.max_dets, cache={}, out=_buffers(p, table.n_cats, 0.0))


@pytest.mark.parametrize("seed", range(12))
def test_category_runs_are_consecutive_and_balanced(seed):
    g, r, _, _ = _table(seed, min_cats=2)  # (one category cannot be cut in two runs)
    cat_sel = np.arange(g.cat_ids.shape[0])
    assert cat_sel.shape[0] >= 2
    first, second = _category_runs(r, cat_sel, g.cat_ids.shape[0])
    assert first.size and second.size
    assert np.array_equal(np.concatenate([first, second]), np.arange(cat_sel.shape[0]))
    per_cat = np.bincount(r.cat, minlength=cat_sel.shape[0])
    a, b = int(per_cat[first].sum()), int(per_cat[second].sum())
    # the cut is where the running count reaches half: off by at most the category it falls in
    assert abs(a - b) <= int(per_cat.max()) or first.size == 1 or second.size == 1
    # (with two or three categories a run has one, so also: the first run is below half unless it is one
    # category, and reaches half with the category after it)
    half = per_cat.sum() / 2
    assert a < half or first.size == 1
    assert a + int(per_cat[second[0]]) >= half
