"""Parameters pycocotools accepts although they name nothing in the ground truth or repeat a value.

pycocotools evaluates ``catIds`` / ``imgIds`` holding ids the ground truth lacks (an unknown category has no
ground truth and gets -1, an unknown image has nothing to match) and ``maxDets`` with a repeated value (the
sorted list is used as given: a repeated column is computed twice, and the stats read at that value average
identical columns). Under ``compat="pycocotools"`` deteval gives its numbers, with a warning naming what was
ignored; under ``compat="fixed"`` the unknown ids are refused (docs/errors.md shows both).
"""

import numpy as np
import pytest
from _coco_cases import random_case, run_pycocotools

from deteval.detection.coco import evaluate_coco
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError


def _both(case, params):
    gt = case["gt"]
    if any(a["id"] == 0 for a in gt["annotations"]):
        # pycocotools counts a match of annotation id 0 as unmatched (its bug; deteval matches it): the
        # reference gets the same data with that id renumbered
        free = max(a["id"] for a in gt["annotations"]) + 1
        gt = {**gt, "annotations": [{**a, "id": free} if a["id"] == 0 else a for a in gt["annotations"]]}
    stats, precision, recall, scores = run_pycocotools(gt, case["dt"], "bbox", params)
    ev = evaluate_coco(case["gt"], case["dt"], params=CocoParams.from_options("bbox", **params))
    return ev, (stats, precision, recall, scores)


def _known_columns(case, params, arrays):
    """pycocotools' arrays restricted to the categories of the ground truth (the unknown ones hold -1)."""
    precision, recall, scores = arrays
    if params.get("use_cats", True) is False:
        return precision, recall, scores
    cats = sorted(set(params["cat_ids"]))
    known = {c["id"] for c in case["gt"]["categories"]}
    keep = [k for k, c in enumerate(cats) if c in known]
    lost = [k for k, c in enumerate(cats) if c not in known]
    assert (precision[:, :, lost] == -1).all() and (recall[:, lost] == -1).all()
    return precision[:, :, keep], recall[:, keep], scores[:, :, keep]


@pytest.mark.fast_cases(seed=2)
@pytest.mark.parametrize("seed", range(60))
def test_unknown_category_and_image_ids_give_pycocotools_numbers(seed):
    case = random_case(seed)
    rng = np.random.default_rng(seed)
    params = dict(case["params"])
    cats = [c["id"] for c in case["gt"]["categories"]]
    chosen = list(params.get("cat_ids", cats))
    unknown_cat = int(rng.choice([999, -3, 10**6]))
    chosen.insert(int(rng.integers(0, len(chosen) + 1)), unknown_cat)
    params["cat_ids"] = chosen
    if seed % 2:
        imgs = list(params.get("img_ids", sorted(i["id"] for i in case["gt"]["images"])))
        imgs.insert(int(rng.integers(0, len(imgs) + 1)), int(rng.choice([-5, 0, 10**9])))
        params["img_ids"] = imgs
    ev, (stats, precision, recall, scores) = _both(case, params)
    assert np.array_equal(ev.stats, stats)
    p_known, r_known, s_known = _known_columns(case, params, (precision, recall, scores))
    assert np.array_equal(ev.precision, p_known) and np.array_equal(ev.recall, r_known)
    assert np.array_equal(ev.scores, s_known)
    notes = [w for w in ev.warnings if "not in the ground truth" in w]
    assert any(f"category id not in the ground truth ignored ({unknown_cat})" in w for w in notes)
    assert any("image id" in w for w in notes) == bool(seed % 2)


@pytest.mark.fast_cases(seed=2)
@pytest.mark.parametrize("seed", range(40))
def test_repeated_max_dets_give_pycocotools_numbers(seed):
    case = random_case(seed)
    rng = np.random.default_rng(1000 + seed)
    base = sorted(int(v) for v in rng.choice(np.arange(1, 12), 2, replace=False)) + [100]
    dets = [*base, int(rng.choice(base))]
    rng.shuffle(dets)  # pycocotools sorts them
    # (custom area labels without "medium" would crash pycocotools' summarize with a repeated maxDets: its
    # empty area index does not broadcast against two maxDets indices)
    params = {k: v for k, v in case["params"].items() if k not in ("max_dets", "area_rng", "area_lbl")}
    params["max_dets"] = dets
    ev, (stats, precision, recall, scores) = _both(case, params)
    assert ev.params.max_dets == tuple(sorted(dets))
    assert np.array_equal(ev.stats, stats) and np.array_equal(ev.precision, precision)
    assert np.array_equal(ev.recall, recall) and np.array_equal(ev.scores, scores)
    assert any("twice" in w for w in ev.warnings)


def test_issue_example_max_dets_10_10_100():
    case = random_case(3)
    params = {"max_dets": [10, 10, 100]}
    ev, (stats, *_) = _both(case, params)
    assert np.array_equal(ev.stats, stats)
    assert "maxDets= 10" in ev.lines[6] and "maxDets= 10" in ev.lines[7] and "maxDets=100" in ev.lines[8]


def test_fixed_compat_refuses_unknown_ids():
    case = random_case(5)
    cats = [c["id"] for c in case["gt"]["categories"]]
    with pytest.raises(ConfigError, match="category id 999 is not in the ground truth"):
        evaluate_coco(case["gt"], case["dt"], params={"cat_ids": [*cats, 999]}, compat="fixed")
    imgs = [i["id"] for i in case["gt"]["images"]]
    with pytest.raises(ConfigError, match="image id -5 is not in the ground truth"):
        evaluate_coco(case["gt"], case["dt"], params={"img_ids": [*imgs, -5]}, compat="fixed")


@pytest.mark.parametrize(
    ("max_dets", "compat", "names"),
    [
        ((1, 10, 100), "pycocotools", ("AR1", "AR10", "AR100")),
        ((1, 2, 3), "fixed", ("AR1", "AR2", "AR3")),
        ((1, 2, 3), "pycocotools", ("AR1", "AR2", "AR3")),
        ((5, 10, 20, 50), "fixed", ("AR5", "AR10", "AR50")),
        ((5, 10, 20, 50), "pycocotools", ("AR5", "AR10", "AR20")),
    ],
)
def test_recall_stats_are_named_by_the_max_dets_they_read(max_dets, compat, names):
    """Each AR key of the result names the maxDets its printed line reads (the keys were AR1/AR10/AR100
    whatever maxDets were given)."""
    case = random_case(7)
    ev = evaluate_coco(
        case["gt"], case["dt"], params=CocoParams.from_options("bbox", max_dets=list(max_dets)), compat=compat
    )
    summary = ev.to_result().summary
    for name, k in zip(names, (6, 7, 8)):
        assert summary[name] == ev.stats[k]
        assert f"maxDets={int(name[2:]):>3d}" in ev.lines[k]
