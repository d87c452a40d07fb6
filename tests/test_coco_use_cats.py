"""``use_cats=False`` (pycocotools' ``useCats=0``) against pycocotools, live.

* catIds in a user-given order: pycocotools sorts ``catIds`` only when useCats is on; with it off it lists
  ground truths and detections category by category in the given order, which decides score ties (stable
  sort) and IoU ties (the later ground truth wins).
* keypoints: ``computeOks`` ignores useCats and reads the ground truth of category -1 (none), so no
  detection is ever matched; ``compat="fixed"`` pools the categories, as ``computeIoU`` does for boxes.
"""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
import pytest
from _coco_cases import assert_same_as_reference, random_keypoints_case, run_pycocotools

from deteval.detection.coco import evaluate_coco
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError


def tied_case(seed: int) -> dict:
    """Few boxes and few scores shared across categories: ground truths of different categories with the same
    box in one image (IoU ties) and detections of different categories with the same score (score ties)."""
    rng = np.random.default_rng(40_000 + seed)
    cat_ids = sorted(rng.choice(np.arange(1, 30), int(rng.integers(2, 5)), replace=False).tolist())
    img_ids = list(range(1, int(rng.integers(1, 4)) + 1))
    pool = [
        [
            float(v)
            for v in (rng.integers(0, 60), rng.integers(0, 60), rng.integers(8, 40), rng.integers(8, 40))
        ]
    ]
    for _ in range(3):
        b = list(pool[-1] if rng.random() < 0.5 else pool[0])
        b[0] += float(rng.integers(-6, 7))  # overlapping variants of the same box
        pool.append(b)
    scores = np.round(rng.random(3), 1).tolist()
    anns, dets = [], []
    for img in img_ids:
        for _ in range(int(rng.integers(0, 7))):
            b = pool[int(rng.integers(0, len(pool)))]
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": img,
                    "category_id": int(rng.choice(cat_ids)),
                    "bbox": b,
                    "area": b[2] * b[3],
                    "iscrowd": int(rng.random() < 0.1),
                }
            )
        for _ in range(int(rng.integers(0, 9))):
            b = list(pool[int(rng.integers(0, len(pool)))])
            if rng.random() < 0.3:
                b[1] += float(rng.integers(-4, 5))
            dets.append(
                {
                    "image_id": img,
                    "category_id": int(rng.choice(cat_ids)),
                    "bbox": b,
                    "score": float(rng.choice(scores)),
                }
            )
    if not dets:
        dets.append({"image_id": 1, "category_id": cat_ids[0], "bbox": pool[0], "score": 0.5})
    rng.shuffle(anns)
    rng.shuffle(dets)
    given = [int(c) for c in rng.permutation(cat_ids)]
    if rng.random() < 0.3 and len(given) > 2:
        given = given[:-1]  # a subset, in a given order
    params: dict = {"use_cats": False, "cat_ids": given}
    if rng.random() < 0.4:
        params["max_dets"] = sorted(int(v) for v in rng.choice(np.arange(1, 8), 3, replace=False))
    gt = {
        "images": [{"id": i, "height": 100, "width": 100} for i in img_ids],
        "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids],
        "annotations": anns,
    }
    return {"gt": gt, "dt": dets, "params": params}


@pytest.mark.slow
@pytest.mark.parametrize("block", range(3))
def test_pooled_categories_in_the_given_order_match_pycocotools(block):
    order_mattered = 0
    for seed in range(block * 100, block * 100 + 100):
        case = tied_case(seed)
        ref = run_pycocotools(case["gt"], case["dt"], "bbox", case["params"])
        ev = evaluate_coco(case["gt"], case["dt"], params=CocoParams.from_options("bbox", **case["params"]))
        assert_same_as_reference(ev, ref, f"seed {seed}")
        in_sorted_order = {**case["params"], "cat_ids": sorted(case["params"]["cat_ids"])}
        if not np.array_equal(run_pycocotools(case["gt"], case["dt"], "bbox", in_sorted_order)[1], ref[1]):
            order_mattered += 1
    assert order_mattered >= 3  # the cases do exercise the order (sorting the ids would fail them)


def test_repeated_category_id_with_pooled_categories_is_refused():
    case = tied_case(0)
    cats = case["params"]["cat_ids"]
    p = CocoParams.from_options("bbox", use_cats=False, cat_ids=[*cats, cats[0]])
    with pytest.raises(ConfigError, match="repeat"):
        evaluate_coco(case["gt"], case["dt"], params=p)
    # with use_cats on, pycocotools takes the unique ids: so does deteval
    ref = run_pycocotools(case["gt"], case["dt"], "bbox", {"cat_ids": [*cats, cats[0]]})
    ev = evaluate_coco(
        case["gt"], case["dt"], params=CocoParams.from_options("bbox", cat_ids=[*cats, cats[0]])
    )
    assert_same_as_reference(ev, ref, "use_cats on, repeated id")


def _two_category_keypoints(seed: int) -> dict:
    """random_keypoints_case with the people split over two categories."""
    case = random_keypoints_case(seed)
    rng = np.random.default_rng(50_000 + seed)
    for rec in case["gt"]["annotations"] + case["dt"]:
        rec["category_id"] = int(rng.choice([1, 2]))
    case["gt"]["categories"] = [{"id": 1, "name": "person"}, {"id": 2, "name": "other"}]
    return case


def _pycocotools_with_pooled_oks(gt: dict, dt: list):
    """pycocotools with computeOks given the pooled lists that computeIoU uses under useCats=0."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    class PooledOks(COCOeval):
        def computeOks(self, imgId, catId):
            pooled = ((imgId, catId), [x for c in self.params.catIds for x in self._gts[imgId, c]])
            self._gts[pooled[0]] = pooled[1]
            self._dts[pooled[0]] = [x for c in self.params.catIds for x in self._dts[imgId, c]]
            try:
                return super().computeOks(imgId, catId)
            finally:
                del self._gts[pooled[0]], self._dts[pooled[0]]

    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(gt)
        cg.createIndex()
        E = PooledOks(cg, cg.loadRes(copy.deepcopy(dt)), "keypoints")
        E.params.useCats = 0
        E.evaluate()
        E.accumulate()
        E.summarize()
    return np.asarray(E.stats), E.eval["precision"], E.eval["recall"], E.eval["scores"]


@pytest.mark.slow
@pytest.mark.parametrize("block", range(2))
def test_keypoints_without_categories(block):
    compared = 0
    for seed in range(block * 30, block * 30 + 30):
        case = _two_category_keypoints(seed)
        params = CocoParams.from_options("keypoints", use_cats=False)
        ref = run_pycocotools(case["gt"], case["dt"], "keypoints", {"use_cats": False})
        ev = evaluate_coco(case["gt"], case["dt"], params=params)
        assert_same_as_reference(ev, ref, f"seed {seed} pycocotools")
        assert any("category -1" in w for w in ev.warnings)
        # computeOks never matches: AP 0 wherever there is non-ignored ground truth, -1 elsewhere
        assert set(np.unique(ev.precision).tolist()) <= {-1.0, 0.0}
        fixed = evaluate_coco(case["gt"], case["dt"], params=params, compat="fixed")
        assert_same_as_reference(
            fixed, _pycocotools_with_pooled_oks(case["gt"], case["dt"]), f"seed {seed} fixed"
        )
        assert not any("category -1" in w for w in fixed.warnings)
        compared += bool((fixed.precision > 0).any())
    assert compared >= 10  # the pooled matching does find people
