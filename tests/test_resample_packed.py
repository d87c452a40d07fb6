"""Packed precision rows of the batched resampling path (deteval.core.reweighted): each weighting's row holds
only the groups with positive n_pos, the same values as the full rows, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from test_resample import _lists

from deteval.core.lists import COCO_EPS, COCO_RECALL_LEVELS, VOC_DEVKIT_LEVELS
from deteval.core.reweighted import ReweightedLists


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_packed_rows_hold_the_groups_with_positive_n_pos(seed: int) -> None:
    """Random lists, weights (bootstrap-like, and 0/1 with repeated n_pos rows as a randomization test's
    rounds), n_pos rows with zeros, levels in any order, some groups asked for: row b of the packed output
    starts with ``full[b][..., keep & (n_pos[b] > 0)]`` flattened, for evaluate and both complements; the
    hits are those of the full call."""
    rng = np.random.default_rng(seed)
    for trial in range(80):
        n_groups, n_var, n_cols = int(rng.integers(1, 7)), int(rng.integers(1, 4)), int(rng.integers(2, 9))
        cnt = rng.integers(0, 30, n_groups)
        col, rel, ig, group = _lists(rng, cnt, n_var, n_cols, 0.5, 0.2)
        binary = trial % 2 == 1
        B = int(rng.integers(1, 6))
        w = rng.integers(0, 2 if binary else 4, (B, n_cols))
        most = np.max([np.bincount(group, weights=r, minlength=n_groups) for r in rel], axis=0)
        n_pos = (most * (1 + rng.integers(0, 3, n_groups))).astype(np.int64)
        if binary:  # the same n_pos row every round (shared lookups), one group without positives
            n_pos[int(rng.integers(0, n_groups))] = 0
            rows = np.tile(n_pos, (B, 1))
        else:
            rows = n_pos * (rng.random((B, n_groups)) < 0.7)  # groups without positives, row by row
        levels = (COCO_RECALL_LEVELS, VOC_DEVKIT_LEVELS)[trial % 2]
        if trial % 3 == 0:
            levels = rng.permutation(levels)
        keep = None if trial % 4 else rng.random(n_groups) < 0.7
        lists = ReweightedLists(cnt, col, rel, ig, levels, COCO_EPS)
        full, hits = lists.evaluate(w, rows)
        packed, hits_p = lists.evaluate(w, rows, keep, packed=True)
        assert full is not None and packed is not None and np.array_equal(hits, hits_p)
        assert packed.shape == full.shape
        calls = [(full, packed)]
        if binary:
            (fa, _), (fb, _) = lists.evaluate_complements(w, rows)
            (pa, _), (pb, _) = lists.evaluate_complements(w, rows, keep, packed=True)
            assert fa is not None and fb is not None and pa is not None and pb is not None
            assert np.array_equal(fa, full)
            calls += [(fa, pa), (fb, pb)]
        for whole, part in calls:
            for b in range(B):
                sel = rows[b] > 0 if keep is None else keep & (rows[b] > 0)
                want = whole[b][..., sel].reshape(-1)
                assert want.shape[0] == n_var * len(levels) * int(sel.sum())
                assert np.array_equal(part[b].reshape(-1)[: want.shape[0]], want)
