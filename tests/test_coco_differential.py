"""deteval's COCO evaluation against pycocotools on seeded random cases: every array, bit for bit."""

import numpy as np
import pytest

from deteval.detection.coco import evaluate_coco
from deteval.detection.coco_params import CocoParams

from _coco_cases import random_case, run_pycocotools

N_CASES = 320


def _ours(case):
    p = dict(case["params"])
    params = CocoParams.from_options("bbox", **p)
    return evaluate_coco(case["gt"], case["dt"], params=params)


@pytest.mark.parametrize("block", range(8))
def test_random_cases_match_pycocotools_exactly(block):
    per_block = N_CASES // 8
    for seed in range(block * per_block, (block + 1) * per_block):
        case = random_case(seed)
        gt = case["gt"]
        if any(a["id"] == 0 for a in gt["annotations"]):
            # deteval matches annotation id 0 (pycocotools' bug counts it unmatched): the reference gets the
            # same data with that id renumbered
            free = max(a["id"] for a in gt["annotations"]) + 1
            gt = {**gt, "annotations": [{**a, "id": free} if a["id"] == 0 else a for a in gt["annotations"]]}
        stats, precision, recall, scores = run_pycocotools(gt, case["dt"], "bbox", case["params"])
        ev = _ours(case)
        assert ev.precision.shape == precision.shape, seed
        assert np.array_equal(ev.precision, precision), f"seed {seed}: precision differs"
        assert np.array_equal(ev.recall, recall), f"seed {seed}: recall differs"
        assert np.array_equal(ev.scores, scores), f"seed {seed}: scores differ"
        assert np.array_equal(ev.stats, stats), f"seed {seed}: stats {ev.stats} != {stats}"
