"""The greedy rules walked over many blocks at once (``greedy_match_pairs``) give ``greedy_match``'s outcomes
block by block: both rules, ``>=`` and ``>``, crowds, and IoU ties (both tie rules)."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.core.levels import COCO_IOU_THRESHOLDS
from deteval.match.greedy import greedy_match, greedy_match_pairs


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("rule", ["coco", "voc"])
@pytest.mark.parametrize("strict", [False, True])
def test_pairs_equal_block_by_block(seed: int, rule: str, strict: bool) -> None:
    rng = np.random.default_rng(seed)
    thresholds = COCO_IOU_THRESHOLDS
    n_blocks = int(rng.integers(1, 12))
    g_sizes, d_sizes = rng.integers(0, 6, n_blocks), rng.integers(0, 9, n_blocks)
    crowd = rng.random(int(g_sizes.sum())) < 0.2
    g_start = np.cumsum(g_sizes) - g_sizes
    expected, pairs = [], []
    det = 0
    for b in range(n_blocks):
        iou = rng.choice([0.0, 0.3, 0.5, 0.55, 0.7, 0.75, 0.9, 0.95, 1.0], (g_sizes[b], d_sizes[b]))
        gi = g_start[b] + np.arange(g_sizes[b])
        expected.append(greedy_match(iou, crowd[gi], thresholds, rule, strict)[0])  # type: ignore[arg-type]
        for k in range(d_sizes[b]):
            for j in range(g_sizes[b]):
                if iou[j, k] >= thresholds.min():
                    pairs.append((det + k, gi[j], iou[j, k]))
        det += d_sizes[b]
    p = np.array(pairs, dtype=np.float64).reshape(-1, 3)
    got = greedy_match_pairs(
        p[:, 0].astype(np.int64), p[:, 1].astype(np.int64), p[:, 2], np.repeat(np.arange(n_blocks), d_sizes),
        crowd, thresholds, rule, strict,  # type: ignore[arg-type]
    )  # fmt: skip
    assert got.tolist() == np.concatenate(expected, axis=1).tolist()
