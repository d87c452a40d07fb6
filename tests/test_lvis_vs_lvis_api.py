"""deteval's LVIS evaluation against lvis-api 0.5.3 run live: precision, recall and every result, bit for bit."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from _lvis_cases import lvis_api, random_lvis_case, run_lvis_api

from deteval.detection.lvis import evaluate_lvis

pytest.importorskip("lvis")
# lvis-api calls the deprecated Logger.warn for every in-memory results list
pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")
DATA = Path(__file__).parent / "data" / "coco" / "coco_val2014_100"


def _same(ev, res, precision, recall, what):
    assert ev.precision.shape == precision.shape, what
    assert np.array_equal(ev.precision, precision), f"{what}: precision differs"
    assert np.array_equal(ev.recall, recall), f"{what}: recall differs"
    assert list(ev.results) == list(res), what
    for k, v in res.items():
        assert ev.results[k] == float(v), f"{what}: {k} {ev.results[k]!r} != {float(v)!r}"


def _usable(case):
    # deteval matches annotation id 0; lvis-api (like pycocotools) counts that match as unmatched
    return not any(a["id"] == 0 for a in case["gt"]["annotations"])


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_random_bbox_cases_match_lvis_api(block):
    checked = 0
    for seed in range(block * 60, (block + 1) * 60):
        case = random_lvis_case(seed)
        if not _usable(case):
            continue
        res, precision, recall = run_lvis_api(case["gt"], case["dt"], "bbox", case["max_dets"])
        ev = evaluate_lvis(case["gt"], case["dt"], max_dets=case["max_dets"])
        _same(ev, res, precision, recall, f"seed {seed}")
        checked += int((ev.precision > 0).any())
    assert checked > 40  # most cases have something to score


@pytest.mark.slow
def test_random_segm_cases_match_lvis_api():
    checked = 0
    for seed in range(500, 560):
        case = random_lvis_case(seed, segm=True)
        if not _usable(case):
            continue
        try:
            res, precision, recall = run_lvis_api(case["gt"], case["dt"], "segm", case["max_dets"])
        except KeyError:  # lvis-api's bbox branch met a survivor without a bbox (it crashes there)
            continue
        ev = evaluate_lvis(case["gt"], case["dt"], iou_type="segm", max_dets=case["max_dets"])
        _same(ev, res, precision, recall, f"seed {seed}")
        checked += 1
    assert checked > 40


@pytest.mark.slow
def test_segm_results_scored_as_boxes_match_lvis_api():
    """bbox evaluation of mask results: LVISResults' segm branch takes a missing box from the mask."""
    for seed in range(600, 620):
        case = random_lvis_case(seed, segm=True)
        if not _usable(case):
            continue
        try:
            res, precision, recall = run_lvis_api(case["gt"], case["dt"], "bbox", case["max_dets"])
        except KeyError:
            continue
        _same(evaluate_lvis(case["gt"], case["dt"], max_dets=case["max_dets"]), res, precision, recall, seed)


@pytest.mark.slow
def test_dets_per_category_cap_matches_the_fixed_ap_recipe():
    """Fixed AP as Dave et al.'s evaluate_ap_fixed.py runs it: keep each category's top K detections (a stable
    sort by score), then LVISResults with max_dets=-1 and LVISEval with params.max_dets = -1. Also both caps
    at once (the per-category cap first, as their pooled script does)."""
    for seed in range(700, 760):
        case = random_lvis_case(seed)
        if not _usable(case):
            continue
        k = int(np.random.default_rng(seed).choice([1, 2, 3, 5]))
        by_cat: dict = {}
        for d in case["dt"]:
            by_cat.setdefault(d["category_id"], []).append(d)
        top = [d for v in by_cat.values() for d in sorted(v, key=lambda x: x["score"], reverse=True)[:k]]
        md = -1 if seed % 2 else 4
        res, precision, recall = run_lvis_api(case["gt"], top, "bbox", md)
        ev = evaluate_lvis(case["gt"], case["dt"], max_dets=None if md < 0 else md, dets_per_cat=k)
        _same(ev, res, precision, recall, f"seed {seed}")


def _federated_fixture() -> dict:
    """The cocoapi demo set (100 COCO val2014 images) made federated by fixed rules: frequency from the number
    of images a category is in (r < 3 <= c < 10 <= f), negative categories where (image + category) % 5 == 0,
    not-exhaustive ones where (image + category) % 4 == 0, and no iscrowd field (LVIS has none)."""
    gt = json.loads((DATA / "instances_val2014_100.json").read_text())
    present: dict = {}
    for a in gt["annotations"]:
        present.setdefault(a["image_id"], set()).add(a["category_id"])
        del a["iscrowd"]
    n_img = {c["id"]: sum(c["id"] in s for s in present.values()) for c in gt["categories"]}
    for c in gt["categories"]:
        c["frequency"] = "r" if n_img[c["id"]] < 3 else "c" if n_img[c["id"]] < 10 else "f"
    ids = [c["id"] for c in gt["categories"]]
    for im in gt["images"]:
        pos = present.get(im["id"], set())
        im["neg_category_ids"] = [c for c in ids if c not in pos and (im["id"] + c) % 5 == 0]
        im["not_exhaustive_category_ids"] = sorted(c for c in pos if (im["id"] + c) % 4 == 0)
    return gt


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_federated_cocoapi_demo_matches_lvis_api(iou_type, tmp_path):
    gt = _federated_fixture()
    dt = json.loads((DATA / f"instances_val2014_fake{iou_type}100_results.json").read_text())
    res, precision, recall = run_lvis_api(gt, dt, iou_type)
    gpath, dpath = tmp_path / "gt.json", tmp_path / "dt.json"
    gpath.write_text(json.dumps(gt))
    dpath.write_text(json.dumps(dt))
    ev = evaluate_lvis(str(gpath), str(dpath), iou_type=iou_type)
    _same(ev, res, precision, recall, iou_type)
    assert 0.2 < ev.results["AP"] < 0.9 and ev.results["APr"] != ev.results["APf"]
    # an lvis-api LVIS object is accepted as the ground truth too
    LVIS, _, _ = lvis_api()
    _same(evaluate_lvis(LVIS(str(gpath)), dt, iou_type=iou_type), res, precision, recall, "LVIS object")


@pytest.mark.slow
def test_per_category_rows_are_lvis_api_means_of_that_category():
    gt = _federated_fixture()
    dt = json.loads((DATA / "instances_val2014_fakebbox100_results.json").read_text())
    _, precision, recall = run_lvis_api(gt, dt, "bbox")
    ev = evaluate_lvis(gt, copy.deepcopy(dt))
    rows = ev.per_class()
    for k, name in enumerate(ev.cat_names):
        s = precision[:, :, k, 0]
        want = float(np.mean(s[s > -1])) if (s > -1).any() else -1.0
        assert rows[name]["ap"] == want, name
        r = recall[:, k, 0]
        assert rows[name]["ar@300"] == (float(np.mean(r[r > -1])) if (r > -1).any() else -1.0), name
        s50 = precision[0, :, k, 0]
        assert rows[name]["ap50"] == (float(np.mean(s50[s50 > -1])) if (s50 > -1).any() else -1.0), name


def _pooled_reference(case, max_dets, dets_per_cat):
    """AP^pool from lvis-api's own per-image matching (``eval_imgs``), accumulated per pool as Dave et al.
    define it: each pool's detections in one list (images in order, categories in order inside an image),
    stable sort by score, precision and recall over the pool, lvis-api's interpolation and sampling."""
    _, LVISResults, LVISEval = lvis_api()
    from _lvis_cases import _gt_object

    dt = copy.deepcopy(case["dt"])
    if dets_per_cat is not None:
        by_cat: dict = {}
        for d in dt:
            by_cat.setdefault(d["category_id"], []).append(d)
        dt = [
            d
            for v in by_cat.values()
            for d in sorted(v, key=lambda x: x["score"], reverse=True)[:dets_per_cat]
        ]
    g = _gt_object(case["gt"])
    E = LVISEval(g, LVISResults(g, dt, max_dets=-1 if max_dets is None else max_dets), "bbox")
    E.evaluate()
    n_img, n_area = len(E.params.img_ids), len(E.params.area_rng)
    out = {}
    freq = [c["frequency"] for c in g.load_cats(E.params.cat_ids)]
    for pool in ("all", "r", "c", "f"):
        cats = [k for k in range(len(E.params.cat_ids)) if pool == "all" or freq[k] == pool]
        es = [E.eval_imgs[k * n_area * n_img + i] for i in range(n_img) for k in cats]
        es = [e for e in es if e is not None]
        gt_ig = np.concatenate([e["gt_ignore"] for e in es]) if es else np.zeros(0)
        num_gt = int(np.count_nonzero(gt_ig == 0))
        if num_gt == 0:
            out[pool] = -1.0
            continue
        scores = np.concatenate([e["dt_scores"] for e in es])
        o = np.argsort(-scores, kind="mergesort")
        m = np.concatenate([e["dt_matches"] for e in es], axis=1)[:, o]
        ig = np.concatenate([e["dt_ignore"] for e in es], axis=1)[:, o]
        tp = np.cumsum((m != 0) & ~ig, axis=1).astype(float)
        fp = np.cumsum((m == 0) & ~ig, axis=1).astype(float)
        vals = []
        for t in range(tp.shape[0]):
            rc = tp[t] / num_gt
            pr = list(tp[t] / (fp[t] + tp[t] + np.spacing(1)))
            for i in range(len(pr) - 1, 0, -1):
                pr[i - 1] = max(pr[i - 1], pr[i])
            idx = np.searchsorted(rc, E.params.rec_thrs, side="left")
            vals.append([pr[i] if i < len(pr) else 0.0 for i in idx])
        out[pool] = float(np.mean(np.array(vals)))
    return out


@pytest.mark.slow
def test_pooled_ap_follows_its_definition_on_lvis_api_matches():
    checked = 0
    for seed in range(800, 840):
        case = random_lvis_case(seed)
        if not _usable(case):
            continue
        fixed = seed % 2 == 0
        want = _pooled_reference(case, None if fixed else case["max_dets"], 3 if fixed else None)
        ev = evaluate_lvis(
            case["gt"],
            case["dt"],
            max_dets=None if fixed else case["max_dets"],
            dets_per_cat=3 if fixed else None,
            pooled=True,
        )
        for pool, v in want.items():
            assert ev.results[f"AP-pooled-{pool}"] == v, (seed, pool)
        checked += int(want["all"] > 0)
    assert checked > 20


def test_data_sample_matches_lvis_api():
    root = Path(__file__).resolve().parent.parent / "data_samples"
    gt = json.loads((root / "lvis" / "lvis_val.json").read_text())
    dt = json.loads((root / "coco" / "results_bbox.json").read_text())
    res, precision, recall = run_lvis_api(gt, dt, "bbox")
    _same(evaluate_lvis(gt, dt), res, precision, recall, "data sample")
