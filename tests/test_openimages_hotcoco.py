"""Open Images against an independent implementation: hotcoco 1.3.0's ``oid_style`` evaluator, run live.

hotcoco implements the Open Images protocol itself (Rust), so where its rules and the TF Object Detection API's
coincide the two implementations must give the same per-class AP and mAP (to 1e-12: hotcoco sums the AP and
the mean in its own order). The random cases of ``tests/_oid_cases.py`` are compared on what hotcoco takes:

* no image-level labels: hotcoco scores every class in every image of the ground truth, which is deteval with
  a negative (verified absent) label for every class in every image, or deteval without labels when every
  prediction is of a class with a box in its image;
* a hierarchy where each class has one parent (``Hierarchy.from_parent_map``: hotcoco keeps one parent, and
  its ``from_dict`` makes the root a class);
* distinct positive scores, valid prediction boxes, no repeated ground-truth box, ``max_dets=[10000]``.

Where hotcoco departs from the TF rules (read in ``per_image_evaluation.py``, ``np_box_list_ops.py`` and
``metrics.py``), deteval keeps the TF rule; each departure is asserted on a hand-made case below, with both
numbers (docs/openimages.md lists them).
"""

from __future__ import annotations

import contextlib
import csv
import io
import warnings
from pathlib import Path
from typing import Any

import hotcoco
import numpy as np
import pytest
from _oid_cases import oid_box as _box
from _oid_cases import oid_det as _det
from _oid_cases import random_oid_case

from deteval.detection.openimages import evaluate_openimages

#: a hierarchy hotcoco can hold: one parent per class (the root is not a class)
TREE = {
    "LabelName": "/m/root",
    "Subcategory": [
        {"LabelName": "/m/animal", "Subcategory": [{"LabelName": "/m/dog"}, {"LabelName": "/m/cat"}]},
        {"LabelName": "/m/vehicle", "Subcategory": [{"LabelName": "/m/car"}, {"LabelName": "/m/bus"}]},
        {"LabelName": "/m/pet"},
        {"LabelName": "/m/tree"},
    ],
}
CLASSES = ["/m/animal", "/m/dog", "/m/cat", "/m/vehicle", "/m/car", "/m/bus", "/m/pet", "/m/tree"]
CID = {c: i + 1 for i, c in enumerate(CLASSES)}
PARENT = {"/m/dog": "/m/animal", "/m/cat": "/m/animal", "/m/car": "/m/vehicle", "/m/bus": "/m/vehicle"}


def _hotcoco(
    boxes: list[dict[str, Any]],
    preds: list[dict[str, Any]],
    images: list[str],
    *,
    hierarchy: Any = None,
    max_dets: int | None = 10_000,
) -> tuple[float, dict[str, float]]:
    """hotcoco's Open Images (mAP, per-class AP of the classes with ground truth)."""
    iid = {im: i + 1 for i, im in enumerate(images)}

    def xywh(r: dict[str, Any]) -> list[float]:
        return [r["XMin"], r["YMin"], r["XMax"] - r["XMin"], r["YMax"] - r["YMin"]]

    anns = [
        {
            "id": k + 1,
            "image_id": iid[b["ImageID"]],
            "category_id": CID[b["LabelName"]],
            "bbox": xywh(b),
            "area": (b["XMax"] - b["XMin"]) * (b["YMax"] - b["YMin"]),
            "iscrowd": 0,
            "is_group_of": bool(b["IsGroupOf"]),
        }
        for k, b in enumerate(boxes)
    ]
    gt = hotcoco.COCO(
        {
            "images": [{"id": i, "width": 1, "height": 1} for i in iid.values()],
            "categories": [{"id": CID[c], "name": c} for c in CLASSES],
            "annotations": anns,
        }
    )
    dets = [
        {
            "image_id": iid[p["ImageID"]],
            "category_id": CID[p["LabelName"]],
            "score": p["Score"],
            "bbox": xywh(p),
        }
        for p in preds
    ]
    if hierarchy is None:
        h = None
    elif hierarchy == "parent_map":
        h = hotcoco.Hierarchy.from_parent_map({CID[c]: CID[p] for c, p in PARENT.items()})
    else:
        h = hotcoco.Hierarchy.from_dict(hierarchy, label_to_id=CID)
    ev = hotcoco.COCOeval(gt, gt.loadRes(dets), "bbox", oid_style=True, hierarchy=h)
    if max_dets is not None:
        ev.params.max_dets = [max_dets]
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not leaderboard-comparable": no image-level labels
        ev.run()
    res = ev.results(per_class=True)
    # classes without ground truth come back as -1
    return float(res["metrics"]["AP"]), {c: float(a) for c, a in res["per_class"].items() if a >= 0}


def _deteval(
    boxes: list[dict[str, Any]],
    preds: list[dict[str, Any]],
    images: list[str] | None,
    *,
    hierarchy: bool,
) -> tuple[float, dict[str, float]]:
    """deteval's (mAP, per-class AP); ``images``: every class verified absent there (hotcoco's reading)."""
    labels = [{"ImageID": im, "LabelName": c, "Confidence": 0} for im in images or [] for c in CLASSES]
    ev = evaluate_openimages(
        boxes,
        preds,
        labels=labels or None,
        hierarchy=TREE if hierarchy else None,
        class_names=[(c, c) for c in CLASSES],
    )
    return ev.map, {c: float(a) for c, a in zip(CLASSES, ev.ap) if not np.isnan(a)}


def _comparable(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """A random case restricted to what both implement alike: (boxes, predictions, images)."""
    case = random_oid_case(seed)
    # the generator repeats some boxes (IoU ties between boxes): hotcoco then matches the free copy, TF the
    # first one (test_hotcoco_matches_the_best_free_box_tf_the_best_box)
    boxes = list({tuple(b.items()): b for b in case["boxes"]}.values())
    # images: with a box, or only with image-level labels (hotcoco: an image without annotations)
    images = sorted({b["ImageID"] for b in case["boxes"]} | {r["ImageID"] for r in case["labels"]})
    ok = set(images)
    preds = [
        p
        for p in case["preds"]
        if p["ImageID"] in ok and p["XMin"] < p["XMax"] and p["YMin"] < p["YMax"] and p["Score"] > -10
    ]
    rng = np.random.default_rng(10_000 + seed)
    scores = (rng.permutation(len(preds)) + 1) / (len(preds) + 1)  # distinct, in (0, 1)
    preds = [{**p, "Score": float(s)} for p, s in zip(preds, scores)]
    return boxes, preds, images


def _agree(a: tuple[float, dict[str, float]], b: tuple[float, dict[str, float]], what: Any) -> None:
    assert a[1].keys() == b[1].keys(), what
    for c in a[1]:
        assert abs(a[1][c] - b[1][c]) <= 1e-12, (what, c, a[1][c], b[1][c])
    assert abs(a[0] - b[0]) <= 1e-12, (what, a[0], b[0])


@pytest.mark.slow
@pytest.mark.parametrize("hierarchy", [False, True])
def test_random_cases_agree_with_hotcoco_every_class_verified_in_every_image(hierarchy):
    scored = 0
    for seed in range(120):
        boxes, preds, images = _comparable(seed)
        if not boxes:
            continue
        hc = _hotcoco(boxes, preds, images, hierarchy="parent_map" if hierarchy else None)
        de = _deteval(boxes, preds, images, hierarchy=hierarchy)
        _agree(hc, de, seed)
        scored += int(0 < de[0] < 1)
    assert scored > 90


@pytest.mark.slow
def test_random_cases_agree_with_hotcoco_without_labels_when_predictions_stay_in_boxed_classes():
    ancestors = {
        "/m/dog": ["/m/animal"],
        "/m/cat": ["/m/animal"],
        "/m/car": ["/m/vehicle"],
        "/m/bus": ["/m/vehicle"],
    }
    compared = 0
    for seed in range(120, 220):
        boxes, preds, _ = _comparable(seed)
        boxed = {
            (b["ImageID"], c) for b in boxes for c in [b["LabelName"], *ancestors.get(b["LabelName"], [])]
        }
        preds = [p for p in preds if (p["ImageID"], p["LabelName"]) in boxed]
        images = sorted({b["ImageID"] for b in boxes})
        if not boxes:
            continue
        hc = _hotcoco(boxes, preds, images, hierarchy="parent_map")
        _agree(hc, _deteval(boxes, preds, None, hierarchy=True), seed)
        compared += 1
    assert compared > 80


# --- where hotcoco departs from the TF rules (deteval keeps TF's) ------------------------------------------


def _both(
    boxes: list[dict[str, Any]], preds: list[dict[str, Any]], label: str, **kw: Any
) -> tuple[float, float]:
    images = sorted({b["ImageID"] for b in boxes})
    return _hotcoco(boxes, preds, images, **kw)[1][label], _deteval(boxes, preds, None, hierarchy=False)[1][
        label
    ]


def test_hotcoco_matches_the_best_free_box_tf_the_best_box():
    # per_image_evaluation.compute_match_iou: argmax over all boxes; taken already -> false positive
    boxes = [_box("a", "/m/car", 0.0, 0.4, 0.0, 0.4), _box("a", "/m/car", 0.1, 0.5, 0.0, 0.4)]
    dets = [_det("a", "/m/car", 0.9, 0.0, 0.4, 0.0, 0.4), _det("a", "/m/car", 0.8, 0.04, 0.44, 0.0, 0.4)]
    assert _both(boxes, dets, "/m/car") == (1.0, 0.5)


def test_hotcoco_orders_equal_scores_stably_tf_by_reversed_argsort():
    # metrics.compute_precision_recall: np.argsort(scores)[::-1]; equal scores: the later entry first
    boxes = [_box("a", "/m/dog", 0.0, 0.5, 0.0, 0.5), _box("b", "/m/dog", 0.0, 0.5, 0.0, 0.5)]
    hit_a, miss_b = _det("a", "/m/dog", 0.5, 0.0, 0.5, 0.0, 0.5), _det("b", "/m/dog", 0.5, 0.6, 0.9, 0.6, 0.9)
    assert _both(boxes, [hit_a, miss_b], "/m/dog") == (0.5, 0.25)
    hit_b, miss_a = _det("b", "/m/dog", 0.5, 0.0, 0.5, 0.0, 0.5), _det("a", "/m/dog", 0.5, 0.6, 0.9, 0.6, 0.9)
    assert _both(boxes, [hit_b, miss_a], "/m/dog") == (0.25, 0.5)


@pytest.mark.parametrize("score", [0.0, -0.5])
def test_hotcoco_scores_a_group_of_box_whose_predictions_score_at_most_zero(score):
    # compute_match_ioa keeps a group-of entry only where its best score > 0
    boxes = [_box("a", "/m/dog", 0.0, 0.5, 0.0, 0.5, group=1), _box("a", "/m/dog", 0.6, 0.9, 0.6, 0.9)]
    dets = [_det("a", "/m/dog", score, 0.1, 0.2, 0.1, 0.2), _det("a", "/m/dog", 0.5, 0.6, 0.9, 0.6, 0.9)]
    assert _both(boxes, dets, "/m/dog") == (1.0, 0.5)


def test_hotcoco_keeps_invalid_boxes_and_scores_at_most_minus_ten():
    boxes = [_box("a", "/m/dog", 0.0, 0.5, 0.0, 0.5)]
    hit = _det("a", "/m/dog", 0.5, 0.0, 0.5, 0.0, 0.5)
    # _remove_invalid_boxes drops XMin >= XMax (or YMin >= YMax); hotcoco counts it a false positive
    assert _both(boxes, [_det("a", "/m/dog", 0.9, 0.2, 0.2, 0.0, 0.5), hit], "/m/dog") == (0.5, 1.0)
    # non_max_suppression's score_threshold -10 keeps scores > -10 only; hotcoco ranks them
    low = [_det("a", "/m/dog", -10.0, 0.6, 0.7, 0.0, 0.5), _det("a", "/m/dog", -20.0, 0.0, 0.5, 0.0, 0.5)]
    assert _both(boxes, low, "/m/dog") == (0.5, 0.0)


def test_hotcoco_caps_predictions_at_100_per_image_and_class_by_default():
    boxes = [_box("a", "/m/dog", 0.0, 0.5, 0.0, 0.5)]
    dets = [_det("a", "/m/dog", 0.9 - i * 1e-3, 0.6, 0.9, 0.6, 0.9) for i in range(150)]
    dets.append(_det("a", "/m/dog", 0.1, 0.0, 0.5, 0.0, 0.5))  # the 151st: the only hit
    assert _both(boxes, dets, "/m/dog", max_dets=None) == (0.0, 1 / 151)
    assert _both(boxes, dets, "/m/dog")[0] == 1 / 151  # max_dets=[10000], the TF cap


def test_hotcoco_has_no_image_level_labels_so_every_class_of_an_image_is_scored():
    # image b has a dog box only; the cat prediction there is discarded by TF (cat not verified in b)
    boxes = [_box("a", "/m/cat", 0.0, 0.5, 0.0, 0.5), _box("b", "/m/dog", 0.0, 0.5, 0.0, 0.5)]
    dets = [_det("b", "/m/cat", 0.9, 0.0, 0.5, 0.0, 0.5), _det("a", "/m/cat", 0.5, 0.0, 0.5, 0.0, 0.5)]
    assert _both(boxes, dets, "/m/cat") == (0.5, 1.0)
    # a negative image-level label for cat in b: TF scores it, as hotcoco does
    labels = [{"ImageID": "b", "LabelName": "/m/cat", "Confidence": 0}]
    assert evaluate_openimages(boxes, dets, labels=labels).per_class()["/m/cat"]["ap"] == 0.5


def test_hotcoco_hierarchy_from_dict_makes_the_root_a_class_and_keeps_one_parent():
    boxes = [_box("a", "/m/dog", 0.0, 0.5, 0.0, 0.5)]
    dets = [_det("a", "/m/dog", 0.9, 0.0, 0.5, 0.0, 0.5)]
    hc_map, hc_ap = _hotcoco(boxes, dets, ["a"], hierarchy=TREE)
    de_map, de_ap = _deteval(boxes, dets, None, hierarchy=True)
    # the root gets the expanded box (AP 0, no predictions) and enters the mean; TF skips the root
    assert hc_ap == {"/m/dog": 1.0, "/m/animal": 0.0, "/m/root": 0.0} and hc_map == 1 / 3
    assert de_ap == {"/m/dog": 1.0, "/m/animal": 0.0} and de_map == 0.5
    # a class under two parents (dog under animal and pet): hotcoco keeps the last one only
    two = {"LabelName": "/m/root", "Subcategory": [*TREE["Subcategory"][:2], {"LabelName": "/m/pet", "Subcategory": [{"LabelName": "/m/dog"}]}]}  # fmt: skip
    h = hotcoco.Hierarchy.from_dict(two, label_to_id=CID)
    assert CID["/m/pet"] in h.ancestors(CID["/m/dog"]) and CID["/m/animal"] not in h.ancestors(CID["/m/dog"])


# --- through both tools' own CSV readers ------------------------------------------------------------------


def _write_csv(path: Any, rows: list[dict[str, Any]], fields: list[str]) -> str:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return str(path)


def _hotcoco_csv(boxes_csv: str, preds_csv: str, parent: dict[str, str] | None = None) -> dict[str, float]:
    """hotcoco's per-class AP from the challenge CSVs (``COCO.from_oid``, ``load_res_oid``)."""
    gt = hotcoco.COCO.from_oid(boxes_csv)
    ids = {c["name"]: c["id"] for c in gt.loadCats(gt.getCatIds())}
    h = None
    if parent:
        extra = sorted(set(parent.values()) - set(ids))
        ids.update({p: max(ids.values()) + 1 + k for k, p in enumerate(extra)})
        h = hotcoco.Hierarchy.from_parent_map({ids[c]: ids[p] for c, p in parent.items() if c in ids})
    ev = hotcoco.COCOeval(gt, gt.load_res_oid(preds_csv), "bbox", oid_style=True, hierarchy=h)
    ev.params.max_dets = [10_000]
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev.run()
    names = {i: n for n, i in ids.items()}
    per = ev.results(per_class=True)["per_class"]
    # classes only in the hierarchy come back named "_unknown": name them by id through the eval's categories
    out = {c: float(a) for c, a in per.items() if a >= 0 and c != "_unknown"}
    if "_unknown" in per:
        (only,) = [n for n in names.values() if n not in per]
        out[only] = float(per["_unknown"])
    return out


@pytest.mark.slow
def test_random_cases_through_the_csv_readers_agree(tmp_path):
    box_fields = ["ImageID", "LabelName", "XMin", "XMax", "YMin", "YMax", "IsGroupOf"]
    det_fields = ["ImageID", "LabelName", "Score", "XMin", "XMax", "YMin", "YMax"]
    compared = 0
    for seed in range(220, 250):
        boxes, preds, _ = _comparable(seed)
        images = sorted({b["ImageID"] for b in boxes})
        classes = sorted({b["LabelName"] for b in boxes})
        preds = [
            p for p in preds if p["ImageID"] in images and p["LabelName"] in classes
        ]  # hotcoco: else an error
        if not boxes or not preds:
            continue
        b_csv = _write_csv(tmp_path / f"b{seed}.csv", boxes, box_fields)
        p_csv = _write_csv(tmp_path / f"p{seed}.csv", preds, det_fields)
        labels = [{"ImageID": im, "LabelName": c, "Confidence": 0} for im in images for c in classes]
        ev = evaluate_openimages(b_csv, p_csv, labels=labels)
        hc = _hotcoco_csv(b_csv, p_csv)
        assert hc.keys() == ev.per_class().keys(), seed
        for c, row in ev.per_class().items():
            assert abs(hc[c] - row["ap"]) <= 1e-12, (seed, c)
        compared += 1
    assert compared > 25


def test_the_shipped_sample_agrees_with_every_class_verified_in_every_image():
    d = f"{Path(__file__).resolve().parent.parent / 'data_samples' / 'openimages'}/"
    hc = _hotcoco_csv(
        d + "boxes.csv",
        d + "predictions.csv",
        dict.fromkeys(("/m/date", "/m/fig", "/m/hazelnut"), "/m/fruit"),
    )
    with open(d + "boxes.csv") as f:
        images = sorted({r["ImageID"] for r in csv.DictReader(f)})
    classes = ["/m/fruit", "/m/date", "/m/fig", "/m/hazelnut"]
    labels = [{"ImageID": im, "LabelName": c, "Confidence": 0} for im in images for c in classes]
    ev = evaluate_openimages(
        d + "boxes.csv", d + "predictions.csv", labels=labels, hierarchy=d + "hierarchy.json"
    )
    assert (
        hc
        == {c: row["ap"] for c, row in ev.per_class().items()}
        == {c: float(c != "/m/fruit") for c in classes}
    )
