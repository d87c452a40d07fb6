"""pycocotools' accumulate arrays are the core's per-list results: built here with the generic
``ranked_lists`` (one list per threshold × category, pycocotools' image order as the tie key) rather than
COCO's own presorted path, and compared with ``evaluate_coco`` (itself checked against pycocotools)."""

import numpy as np
from _coco_cases import random_case

from deteval.core.lists import COCO_EPS, ranked_lists
from deteval.detection.coco import evaluate_coco, match_coco
from deteval.detection.coco_params import CocoParams
from deteval.io.coco import load_coco_gt, load_coco_results


def test_precision_recall_scores_are_ranked_lists_reshaped():
    checked = 0
    for seed in range(25):
        case = random_case(seed)
        p = CocoParams.from_options("bbox", **case["params"])
        ev = evaluate_coco(case["gt"], case["dt"], params=p)
        g = load_coco_gt(case["gt"])
        table = match_coco(g, load_coco_results(case["dt"], g), p)[0]
        A, T, _ = table.tp.shape
        K = table.n_cats
        # pycocotools ranks a category's detections by score, ties by image order, then rank in the image
        key = table.img * (int(table.rank.max(initial=0)) + 1) + table.rank
        for m, max_det in enumerate(p.max_dets):
            keep = np.flatnonzero(table.rank < max_det)
            list_id = (np.arange(T)[:, None] * K + table.cat[keep][None, :]).reshape(-1)
            for a in range(A):
                outcome = np.where(table.tp[a][:, keep], 1, np.where(table.ig[a][:, keep], -1, 0))
                lists = ranked_lists(
                    list_id,
                    np.tile(table.score[keep], T),
                    outcome.reshape(-1),
                    np.tile(table.npig[:, a], T),
                    n_lists=T * K,
                    tiebreak=np.tile(key[keep], T),
                )
                q = lists.interpolated_precision(p.rec_thrs, COCO_EPS).reshape(T, K, -1)
                s = lists.scores_at_levels(p.rec_thrs).reshape(T, K, -1)
                rc = (lists.n_hits / np.maximum(lists.n_pos, 1)).reshape(T, K)
                for k in np.flatnonzero(table.npig[:, a] > 0).tolist():
                    assert np.array_equal(ev.precision[:, :, k, a, m], q[:, k, :]), (seed, a, m, k)
                    assert np.array_equal(ev.scores[:, :, k, a, m], s[:, k, :]), (seed, a, m, k)
                    assert np.array_equal(ev.recall[:, k, a, m], rc[:, k]), (seed, a, m, k)
                    checked += 1
    assert checked > 100
