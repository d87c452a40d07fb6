"""A COCO resample re-weights match outcomes; where an image drawn twice holds detections of equal score, the
order of the copies differs from the files with that image listed twice, and so can the AP.

pycocotools orders equal scores by image: the duplicated files put image A's tied detections, then those of
its copy A' (``d1 d2 d1' d2'``), while a re-weighted item stands next to its own copy (``d1 d1' d2 d2'``). Both
orders reach the same counts at the end of the tie, so only the precision inside it differs: recall levels
within the tie's recall span. These tests prove (a) bit-exactness whenever no image drawn more than once
holds two detections of one category at the same score, whatever the ties across images, and (b) the bound
the README states for the rest: per category, |ΔAP| ≤ Σ over the affected ties of (detections in the tie,
with their weights) / npos + 1/101.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from test_stats import _coco_case, _coco_duplicate

from deteval.detection.coco import evaluate_coco
from deteval.stats.bootstrap import bootstrap_weights
from deteval.stats.coco import CocoUnits


def _tied(dets: list, decimals: int) -> list:
    return [{**d, "score": round(d["score"], decimals)} for d in dets]


def _per_class(values: list[float], n_stats: int) -> np.ndarray:
    return np.array([-1.0 if np.isnan(v) else v for v in values[n_stats:]])


def _bound(gt: dict, dets: list, w: np.ndarray) -> dict[int, float]:
    """Per category: Σ over ties (same category and score) that hold two detections of one image drawn more
    than once, of (the tie's detections counted with their images' weights) / npos + 1/101."""
    weight = {im["id"]: int(w[n]) for n, im in enumerate(gt["images"])}
    npos = Counter(a["category_id"] for a in gt["annotations"] if not a["iscrowd"])
    within = Counter((d["category_id"], d["score"], d["image_id"]) for d in dets)
    tie_size = Counter()
    for d in dets:
        tie_size[d["category_id"], d["score"]] += weight[d["image_id"]]
    affected = {(c, s) for (c, s, i), n in within.items() if n > 1 and weight[i] > 1}
    out: dict[int, float] = {}
    for c, s in affected:
        out[c] = out.get(c, 0.0) + tie_size[c, s] / max(npos[c], 1) + 1 / 101
    return out


@pytest.mark.parametrize("seed", range(6))
def test_ties_across_images_only_stay_exact(seed: int) -> None:
    gt, dets = _coco_case(seed, n_img=12)
    # every score tied with the same score in other images, never within one image and category
    seen: Counter = Counter()
    for d in dets:
        key = (d["image_id"], d["category_id"])
        d["score"] = 0.9 - 0.1 * seen[key]
        seen[key] += 1
    units = CocoUnits(gt, [dets])
    for w in bootstrap_weights(12, 5, seed):
        ev = evaluate_coco(*_coco_duplicate(gt, dets, w))
        want = [*ev.stats.tolist(), *(r["ap"] for r in ev.per_class().values())]
        got = units.metric(0)(w[None, :])[0]
        assert [-1.0 if np.isnan(v) else v for v in got] == want  # bit for bit


def test_ties_within_a_drawn_image_stay_within_the_bound() -> None:
    differed = 0
    for seed in range(8):
        gt, dets = _coco_case(100 + seed, n_img=12)
        dets = _tied(dets, 1)  # many ties, within images too
        units = CocoUnits(gt, [dets])
        cats = [c["id"] for c in gt["categories"]]
        for w in bootstrap_weights(12, 6, seed):
            ev = evaluate_coco(*_coco_duplicate(gt, dets, w))
            got = units.metric(0)(w[None, :])[0]
            want_pc = np.array([r["ap"] for r in ev.per_class().values()])
            got_pc = _per_class(list(got), ev.stats.shape[0])
            bound = _bound(gt, dets, w)
            for k, c in enumerate(cats):
                if want_pc[k] < 0:
                    continue
                gap = abs(got_pc[k] - want_pc[k])
                assert gap <= bound.get(c, 0.0) + 1e-12, (seed, c, gap, bound.get(c, 0.0))
                differed += gap > 0
            if not bound:  # no tie within a drawn image: bit for bit
                assert [-1.0 if np.isnan(v) else v for v in got] == [*ev.stats.tolist(), *want_pc.tolist()]
    assert differed > 0  # the exception is real on these cases, so the bound is exercised
