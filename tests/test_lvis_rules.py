"""LVIS, Fixed AP and pooled AP rules on constructed cases whose numbers are worked out by hand."""

import json

import numpy as np
import pytest

from deteval.cli import main
from deteval.detection.lvis import evaluate_lvis
from deteval.detection.lvis.selection import lvis_caps
from deteval.errors import InputFormatError, ValidationError
from deteval.io.coco import CocoResults

BOX = [10.0, 10.0, 100.0, 100.0]  # area 10,000: "large"
FAR = [300.0, 300.0, 50.0, 50.0]  # overlaps nothing


def _gt(neg1=(), nel2=(), b_area=10000.0):
    """Image 1 holds one A (frequent), image 2 one B (rare)."""
    return {
        "images": [
            {"id": 1, "neg_category_ids": list(neg1), "not_exhaustive_category_ids": []},
            {"id": 2, "neg_category_ids": [], "not_exhaustive_category_ids": list(nel2)},
        ],
        "categories": [{"id": 1, "name": "A", "frequency": "f"}, {"id": 2, "name": "B", "frequency": "r"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": BOX, "area": 10000.0},
            {"id": 2, "image_id": 2, "category_id": 2, "bbox": BOX, "area": b_area},
        ],
    }


def _det(img, cat, box, score):
    return {"image_id": img, "category_id": cat, "bbox": box, "score": score}


def near(x):
    """Precision is tp / (tp + fp + eps) (lvis-api, as pycocotools): 1/(1 + eps) is 1 − 2**-52."""
    return pytest.approx(x, abs=1e-12)


HITS = [_det(1, 1, BOX, 0.9), _det(2, 2, BOX, 0.8)]


def test_federated_filter_discards_categories_not_verified_in_the_image():
    stray = _det(1, 2, FAR, 0.95)  # B in image 1, where B is neither present nor verified absent
    ev = evaluate_lvis(_gt(), HITS + [stray])
    assert ev.results["AP"] == near(1.0) and ev.counts["n_dt_evaluated"] == 2
    # listed as negative in image 1: the same detection is a false positive ranked first for B
    ev = evaluate_lvis(_gt(neg1=[2]), HITS + [stray])
    assert ev.results["APr"] == near(0.5) and ev.results["APf"] == near(1.0) and ev.results["APc"] == -1.0
    assert ev.results["AP"] == near(0.75)
    assert ev.per_class()["B"]["ap"] == near(0.5)


def test_unmatched_detections_of_not_exhaustive_categories_are_ignored():
    extra = _det(2, 2, FAR, 0.95)
    assert evaluate_lvis(_gt(), HITS + [extra]).results["APr"] == near(0.5)
    assert evaluate_lvis(_gt(nel2=[2]), HITS + [extra]).results["APr"] == near(1.0)


def test_zero_area_ground_truth_does_not_exist_for_lvis():
    ev = evaluate_lvis(_gt(b_area=0.0), HITS)
    assert ev.results["APr"] == -1.0  # B has no ground truth left, and its detection is not evaluated
    assert ev.counts["n_gt_evaluated"] == 1 and ev.counts["n_dt_evaluated"] == 1
    assert any("area 0" in w for w in ev.warnings)
    ev = evaluate_lvis(_gt(), [*HITS, _det(1, 1, [5.0, 5.0, 0.0, 9.0], 0.99)])  # a w = 0 detection: dropped
    assert ev.results["AP"] == near(1.0) and ev.counts["n_dt_evaluated"] == 2


def test_per_image_cap_counts_every_category_of_the_image():
    dets = [*HITS, _det(1, 2, FAR, 0.95), _det(1, 2, FAR, 0.99)]  # B in image 1: discarded, but after the cap
    assert evaluate_lvis(_gt(), dets, max_dets=2).results["APf"] == 0.0
    assert evaluate_lvis(_gt(), dets, max_dets=3).results["APf"] == near(1.0)
    ties = [*HITS, _det(1, 2, FAR, 0.9)]  # a score tie at the cap: the earlier record stays
    assert evaluate_lvis(_gt(), ties, max_dets=1).results["APf"] == near(1.0)
    assert evaluate_lvis(_gt(), [ties[2], ties[1], ties[0]], max_dets=1).results["APf"] == 0.0


def test_fixed_ap_cap_is_per_category_over_the_dataset_before_the_federated_filter():
    dets = [_det(2, 1, FAR, 0.95), *HITS]  # A in image 2 (not evaluated there) outranks A's true positive
    ev = evaluate_lvis(_gt(), dets, dets_per_cat=1, max_dets=None)
    assert ev.results["APf"] == 0.0
    assert evaluate_lvis(_gt(), dets, dets_per_cat=2, max_dets=None).results["APf"] == near(1.0)
    crowd = [_det(1, 1, FAR, 0.99)] * 400 + HITS  # 400 misses above the hit in one image
    assert evaluate_lvis(_gt(), crowd).results["APf"] == 0.0  # LVIS: 300 per image, the hit is cut
    ev = evaluate_lvis(_gt(), crowd, fixed_ap=True)  # Fixed AP: no per-image limit
    assert ev.results["APf"] == pytest.approx(1 / 401, abs=1e-12)
    assert ev.dets_per_cat == 10_000 and ev.max_dets is None and "AR@-1" in ev.results


def test_pooled_ap_ranks_all_categories_together():
    dets = [*HITS, _det(2, 2, FAR, 0.95)]
    ev = evaluate_lvis(_gt(), dets, pooled=True)
    assert ev.results["APf"] == near(1.0) and ev.results["APr"] == near(0.5)
    # pooled list: B miss (.95), A hit (.9), B hit (.8): precision 0, 1/2, 2/3; its envelope is 2/3 everywhere
    assert ev.results["AP-pooled-all"] == pytest.approx(2 / 3, abs=1e-12)
    assert ev.results["AP-pooled-r"] == near(0.5) and ev.results["AP-pooled-f"] == near(1.0)
    assert ev.results["AP-pooled-c"] == -1.0


def test_lvis_fields_are_required_with_the_record_named():
    gt = _gt()
    del gt["images"][1]["neg_category_ids"]
    with pytest.raises(InputFormatError, match=r"images\[1\].*neg_category_ids"):
        evaluate_lvis(gt, HITS)
    gt = _gt(neg1=(True,))  # (a bool is no category id; the first image at fault is named)
    del gt["images"][1]["neg_category_ids"]
    with pytest.raises(ValidationError, match=r"images\[0\].*neg_category_ids must be a list"):
        evaluate_lvis(gt, HITS)
    gt = _gt(nel2=(1.0,))
    with pytest.raises(ValidationError, match=r"images\[1\].*not_exhaustive_category_ids must be"):
        evaluate_lvis(gt, HITS)
    gt = _gt(neg1=(2,))
    gt["images"][1]["neg_category_ids"] = 2
    with pytest.raises(ValidationError, match=r"images\[1\].*neg_category_ids must be a list"):
        evaluate_lvis(gt, HITS)
    # numpy integers (a ground truth built in memory) are category ids
    same = evaluate_lvis(_gt(neg1=(np.int64(2),)), HITS).results
    assert same == evaluate_lvis(_gt(neg1=(2,)), HITS).results
    gt = _gt()
    gt["categories"][0]["frequency"] = "often"
    with pytest.raises(ValidationError, match=r"categories\[0\].*frequency"):
        evaluate_lvis(gt, HITS)


def test_cli_json_keys_are_lvis_api_names(tmp_path, capsys):
    g, d = tmp_path / "gt.json", tmp_path / "dt.json"
    g.write_text(json.dumps(_gt(neg1=[2])))
    d.write_text(json.dumps([*HITS, _det(1, 2, FAR, 0.95)]))
    assert main(["lvis", str(g), str(d), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [
        "AP",
        "AP50",
        "AP75",
        "APs",
        "APm",
        "APl",
        "APr",
        "APc",
        "APf",
        "AR@300",
        "ARs@300",
        "ARm@300",
        "ARl@300",
    ]
    assert [k for k in out if k in names] == names
    assert out["AP"] == near(0.75) and out["per_class"]["B"]["ap"] == near(0.5)
    assert main(["lvis", str(g), str(d), "--fixed-ap", "--pooled", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dets_per_cat"] == 10000 and "AR@-1" in out and "AP-pooled-all" in out
    assert main(["lvis", str(g), str(d)]) == 0
    text = capsys.readouterr().out
    assert "Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=300 catIds=  r] = 0.500" in text
    g.write_text(json.dumps({"images": [{"id": 1}], "categories": [], "annotations": []}))
    assert main(["lvis", str(g), str(d)]) == 2


@pytest.mark.parametrize("max_dets", [1, 3, 5, 8, 60])
def test_per_image_cap_keeps_each_images_top_scores(max_dets):
    """LVISResults.limit_dets_per_image: each image's first ``max_dets`` by descending score, ties in list
    order (Python's stable sort); an image with no more than that keeps all, and the capped list's first
    record is the file's first when its image is not cut."""
    rng = np.random.default_rng(max_dets)
    n = 60
    img = rng.integers(0, 12, n)
    score = rng.choice([0.1, 0.5, 0.5, 0.9], n)
    r = CocoResults(img=img, cat=rng.integers(0, 4, n), score=score, bbox=np.ones((n, 4)), area=np.ones(n))
    keep, _, first = lvis_caps(r, 4, max_dets, None)
    expected = np.zeros(n, dtype=bool)
    for i in np.unique(img):
        rows = sorted(np.flatnonzero(img == i).tolist(), key=lambda k: score[k], reverse=True)
        expected[rows[:max_dets]] = True
    assert np.array_equal(keep, expected)
    rows0 = sorted(np.flatnonzero(img == img[0]).tolist(), key=lambda k: score[k], reverse=True)
    assert first == (rows0[0] if len(rows0) > max_dets else 0)
