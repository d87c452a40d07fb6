"""MeanAveragePrecision as a torchmetrics user meets it: its keywords and result keys, masks, keypoints, image
ids, clear refusals. Every number is compared with pycocotools run on the same data."""

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from _coco_cases import run_pycocotools

import deteval
from deteval import MeanAveragePrecision
from deteval.errors import ConfigError, DetevalError, ValidationError

COCO = Path(__file__).resolve().parent / "data" / "coco"
VAL = COCO / "coco_val2014_100"
# pycocotools' decode() (used here to make masks) trips numpy 2's __array__ copy deprecation
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

# torchmetrics' names for pycocotools' 12 summary numbers (default maxDets 1, 10, 100)
TM_KEYS = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large"]
TM_KEYS += ["mar_1", "mar_10", "mar_100", "mar_small", "mar_medium", "mar_large"]


@cache
def _load(name: str):
    return json.loads((VAL / name).read_text())


def _val2014(kind: str = "bbox"):
    gt = _load("instances_val2014_100.json")
    res = _load(f"instances_val2014_fake{kind}100_results.json")
    return gt, res


def _per_image(gt, res, *, with_id=True, masks=None, order=None):
    """One (prediction, target) dict pair per image, in the ground truth file's image order."""
    preds, targets = [], []
    images = order or [img["id"] for img in gt["images"]]
    for img in images:
        anns = [a for a in gt["annotations"] if a["image_id"] == img]
        dets = [d for d in res if d["image_id"] == img]
        t = {"labels": [a["category_id"] for a in anns], "iscrowd": [a["iscrowd"] for a in anns]}
        t["area"] = [a["area"] for a in anns]
        p = {"scores": [d["score"] for d in dets], "labels": [d["category_id"] for d in dets]}
        if masks is None:
            t["boxes"] = np.array([a["bbox"] for a in anns], float).reshape(-1, 4)
            p["boxes"] = np.array([d["bbox"] for d in dets], float).reshape(-1, 4)
        else:
            t["masks"], p["masks"] = masks(img, anns, dets)
        if with_id:
            t["image_id"] = p["image_id"] = img
        preds.append(p)
        targets.append(t)
    return preds, targets


def _run(preds, targets, batch=7, **kw):
    m = MeanAveragePrecision(**kw)
    for i in range(0, len(preds), batch):
        m.update(preds[i : i + batch], targets[i : i + batch])
    return m.compute()


@cache
def _reference(kind: str, iou_type: str):
    gt, res = _val2014(kind)
    return run_pycocotools(gt, res, iou_type)


def test_bbox_file_order_with_image_id_is_pycocotools_bit_for_bit():
    gt, res = _val2014()
    stats, precision, recall, _ = _reference("bbox", "bbox")
    preds, targets = _per_image(gt, res)  # file order: image ids 1146, 400, 764, ... (not sorted)
    assert [t["image_id"] for t in targets] != sorted(t["image_id"] for t in targets)
    r = _run(preds, targets, box_format="xywh", class_metrics=True)
    assert [r[k] for k in TM_KEYS] == stats.tolist()
    assert round(r["map"], 6) == 0.504581  # pycocotools' published demo value
    assert r.summary["stats"] == stats.tolist()
    # torchmetrics' classes: the labels seen in predictions or targets (76 of the file's 80 categories)
    seen = sorted({a["category_id"] for a in gt["annotations"]} | {d["category_id"] for d in res})
    assert r["classes"].tolist() == seen and len(seen) == 76
    all_ids = sorted(c["id"] for c in gt["categories"])
    for k, cat in enumerate(seen):
        pk, rk = precision[:, :, all_ids.index(cat), 0, -1], recall[:, all_ids.index(cat), 0, -1]
        exp_ap = float(np.mean(pk[pk > -1])) if (pk > -1).any() else -1.0
        exp_ar = float(np.mean(rk[rk > -1])) if (rk > -1).any() else -1.0
        assert r["map_per_class"][k] == exp_ap and r["mar_100_per_class"][k] == exp_ar
    assert (r["map_per_class"] == -1).sum() == 6  # detected categories without ground truth


def test_bbox_file_order_without_image_id_uses_update_order():
    """Documented: without image_id the update order breaks score ties across images (0.504569 here)."""
    gt, res = _val2014()
    preds, targets = _per_image(gt, res, with_id=False)
    r = _run(preds, targets, box_format="xywh")
    assert round(r["map"], 6) == 0.504569
    sorted_order = sorted(img["id"] for img in gt["images"])
    preds, targets = _per_image(gt, res, with_id=False, order=sorted_order)
    assert _run(preds, targets, box_format="xywh")["map"] == _reference("bbox", "bbox")[0][0]


def test_voc_orders_by_image_id_too():
    rng = np.random.default_rng(3)
    preds, targets = [], []
    for img in rng.permutation(30):
        b = rng.uniform(0, 50, (4, 2))
        boxes = np.c_[b, b + rng.uniform(5, 20, (4, 2))]
        preds.append({"boxes": boxes + 2, "scores": np.round(rng.uniform(size=4), 1), "labels": [1, 2, 1, 2]})
        targets.append({"boxes": boxes, "labels": [1, 2, 1, 2], "image_id": int(img)})
        preds[-1]["image_id"] = int(img)
    with_id = _run(preds, targets, protocol="voc", metric="voc07", class_metrics=True)
    order = np.argsort([t["image_id"] for t in targets], kind="stable")
    plain = [{k: v for k, v in d.items() if k != "image_id"} for d in preds]
    plain_t = [{k: v for k, v in d.items() if k != "image_id"} for d in targets]
    by_id = _run([plain[i] for i in order], [plain_t[i] for i in order], protocol="voc", metric="voc07")
    assert with_id["map"] == by_id["map"]
    assert list(with_id.per_class.values()) == list(by_id.per_class.values())
    assert with_id["map_per_class"].tolist() == [by_id.per_class[n]["ap"] for n in ("1", "2")]


def test_image_id_refusals():
    p = {"boxes": [[0, 0, 9, 9]], "scores": [0.9], "labels": [1]}
    t = {"boxes": [[0, 0, 9, 9]], "labels": [1]}
    m = MeanAveragePrecision()
    with pytest.raises(
        ValidationError, match=r"predictions\[0\]\['image_id'\] and targets\[0\]\['image_id'\] disagree"
    ):
        m.update([{**p, "image_id": 1}], [{**t, "image_id": 2}])
    m.update([{**p, "image_id": 1}], [{**t, "image_id": 1}])
    with pytest.raises(ValidationError, match="image_id 1 is given twice"):
        m.update([{**p, "image_id": 1}], [t])
    with pytest.raises(ValidationError, match="every image or for none"):
        m.update([p], [t])
    with pytest.raises(ValidationError, match="one integer"):
        m.update([{**p, "image_id": 1.5}], [t])
    assert m.n_images == 1 and m.compute()["map"] == 1 / (1 + np.spacing(1))  # pycocotools precision


def _decoded_masks(img, anns, dets):
    from pycocotools import mask as mask_utils

    info = next(i for i in _val2014()[0]["images"] if i["id"] == img)
    h, w = info["height"], info["width"]

    def decode(segm):
        if isinstance(segm, list):
            rle = mask_utils.merge(mask_utils.frPyObjects(segm, h, w))
        elif isinstance(segm["counts"], list):
            rle = mask_utils.frPyObjects(segm, h, w)
        else:
            rle = segm
        return mask_utils.decode(rle).astype(bool)

    t = np.array([decode(a["segmentation"]) for a in anns]).reshape(-1, h, w)
    p = np.array([decode(d["segmentation"]) for d in dets]).reshape(-1, h, w)
    return t, p


def test_segm_decoded_masks_equal_pycocotools():
    gt, res = _val2014("segm")
    stats = _reference("segm", "segm")[0]
    preds, targets = _per_image(gt, res, masks=_decoded_masks)
    r = _run(preds, targets, iou_type="segm")
    assert [r[k] for k in TM_KEYS] == stats.tolist()
    assert r.summary["iou_type"] == "segm"


def test_segm_rle_dicts_and_default_area_equal_pycocotools():
    """Masks as COCO RLE dicts; without 'area' the target's area is its mask area (torchmetrics' default)."""
    from pycocotools import mask as mask_utils

    gt, res = _val2014("segm")
    gt = json.loads(json.dumps(gt))
    keep = [a for a in gt["annotations"] if not a["iscrowd"]][:400]
    images = {a["image_id"] for a in keep}
    gt["images"] = [i for i in gt["images"] if i["id"] in images]
    size = {i["id"]: (i["height"], i["width"]) for i in gt["images"]}
    for a in keep:
        h, w = size[a["image_id"]]
        rle = mask_utils.merge(mask_utils.frPyObjects(a["segmentation"], h, w))
        a["segmentation"] = {"size": rle["size"], "counts": rle["counts"].decode()}
        a["area"] = float(mask_utils.area(rle))
    gt["annotations"] = keep
    res = [d for d in res if d["image_id"] in images]

    def rles(img, anns, dets):
        return [a["segmentation"] for a in anns], [d["segmentation"] for d in dets]

    preds, targets = _per_image(gt, res, masks=rles)
    for t in targets:
        del t["area"]
    r = _run(preds, targets, iou_type="segm")
    assert [r[k] for k in TM_KEYS] == run_pycocotools(gt, res, "segm")[0].tolist()


def keypoints_case():
    """The one-image keypoints sample: (gt, results, prediction dict, target dict)."""
    gt = json.loads((COCO / "coco_keypoints" / "gt_dataset.json").read_text())
    res = json.loads((COCO / "coco_keypoints" / "dt_dataset.json").read_text())
    img = gt["images"][0]["id"]
    anns = gt["annotations"]
    target = {
        "keypoints": np.array([a["keypoints"] for a in anns], float).reshape(len(anns), -1, 3),
        "boxes": [a["bbox"] for a in anns],
        "labels": [a["category_id"] for a in anns],
        "iscrowd": [a["iscrowd"] for a in anns],
        "area": [a["area"] for a in anns],
        "image_id": img,
    }
    pred = {
        "keypoints": [d["keypoints"] for d in res],
        "scores": [d["score"] for d in res],
        "labels": [d["category_id"] for d in res],
    }
    return gt, res, pred, target


def test_keypoints_equal_pycocotools():
    gt, res, pred, target = keypoints_case()
    stats = run_pycocotools(gt, res, "keypoints")[0]
    r = _run([pred], [target], iou_type="keypoints", box_format="xywh")
    keys = ["map", "map_50", "map_75", "map_medium", "map_large", "mar_20", "mar_50", "mar_75"]
    assert [r[k] for k in [*keys, "mar_medium", "mar_large"]] == stats.tolist()
    assert stats[0] > 0.5  # a real score, not an empty evaluation


def test_torchmetrics_thresholds_and_iou_type_tuple():
    gt, res = _val2014("segm")
    sub = {i["id"] for i in gt["images"][:40]}
    gt = {**gt, "images": [i for i in gt["images"] if i["id"] in sub]}
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] in sub]
    res = [d for d in res if d["image_id"] in sub]
    from pycocotools import mask as mask_utils

    for d in res:  # a bbox for each segm result, as loadRes computes it
        d["bbox"] = mask_utils.toBbox(d["segmentation"]).tolist()
    params = {"iou_thrs": [0.3, 0.5, 0.8], "rec_thrs": np.linspace(0, 1, 21), "max_dets": [2, 20, 50]}
    preds, targets = _per_image(gt, res, masks=_decoded_masks)
    for p, d in zip(preds, _per_image(gt, res)[0]):
        p["boxes"] = d["boxes"]
    for t, d in zip(targets, _per_image(gt, res)[1]):
        t["boxes"] = d["boxes"]
    r = _run(
        preds,
        targets,
        box_format="xywh",
        iou_type=("bbox", "segm"),
        iou_thresholds=params["iou_thrs"],
        rec_thresholds=params["rec_thrs"],
        max_detection_thresholds=params["max_dets"],
    )
    keys = [k.replace("mar_1", "mar_2").replace("mar_20", "mar_20") for k in TM_KEYS]
    keys = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_2", "mar_20", "mar_50"]
    keys += ["mar_small", "mar_medium", "mar_large"]
    for t in ("bbox", "segm"):
        expected = run_pycocotools(gt, res, t, params)[0]
        assert [r[f"{t}_{k}"] for k in keys] == expected.tolist()
        assert r.results[t].summary["iou_type"] == t
    assert "map" not in r and r["segm_map_per_class"] == -1.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"iou_threshold": 0.5},
            r"unknown keyword 'iou_threshold' for protocol='coco'; accepted: .*'iou_thresholds'",
        ),
        (
            {"protocol": "voc", "compat": "fixed"},
            r"unknown keyword 'compat' for protocol='voc'; accepted: .*'metric'",
        ),
        ({"protocol": "voc", "iou_thresholds": [0.5]}, "not used by protocol='voc'"),
        ({"iou_type": "mask"}, "iou_type must be one of 'bbox', 'segm', 'keypoints'"),
        ({"average": "micro"}, r"average='micro' is not supported; accepted: 'macro'"),
        ({"params": {"max_dets": [1]}, "max_detection_thresholds": [5]}, "either params= or"),
        ({"protocol": "xywh"}, "box_format is the second argument"),
        ({"iou_type": 5}, "iou_type must be one of"),
        ({"iou_thresholds": "abc"}, "iou_thresholds must be a non-empty list of finite numbers"),
        (
            {"max_detection_thresholds": [1.5]},
            "max_detection_thresholds must be a non-empty list of finite whole",
        ),
        ({"compat": "bogus"}, "unknown compat 'bogus'"),
    ],
)
def test_bad_keywords_are_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        MeanAveragePrecision(**kwargs)


def test_bad_batches_name_the_key_and_list_what_is_accepted():
    p = {"boxes": [[0, 0, 9, 9]], "scores": [0.9], "labels": [1]}
    t = {"boxes": [[0, 0, 9, 9]], "labels": [1]}
    m = MeanAveragePrecision()
    with pytest.raises(
        ValidationError,
        match=r"targets\[0\] has key\(s\) 'masks' that iou_type='bbox' does not use; accepted: 'boxes', 'labels', 'iscrowd', 'area', 'image_id'",
    ):
        m.update([p], [{**t, "masks": np.zeros((1, 4, 4), bool)}])
    with pytest.raises(
        ValidationError, match=r"predictions must be a list with one dict per image, got dict .wrap"
    ):
        m.update(p, [t])
    with pytest.raises(ValidationError, match=r"predictions\[0\] has key\(s\) 'box'"):
        m.update([{"box": [[0, 0, 9, 9]], "scores": [0.9], "labels": [1]}], [t])
    voc = MeanAveragePrecision(protocol="voc")
    with pytest.raises(ValidationError, match=r"'iscrowd' that protocol='voc' does not use"):
        voc.update([p], [{**t, "iscrowd": [0]}])
    segm = MeanAveragePrecision(iou_type="segm")
    with pytest.raises(ValidationError, match=r"predictions\[0\] has no 'masks'"):
        segm.update([p], [t])
    with pytest.raises(ValidationError, match="N×H×W"):
        segm.update([{**p, "masks": np.zeros((4, 4))}], [{**t, "masks": np.zeros((1, 4, 4))}])
    assert m.n_images == 0 and voc.n_images == 0 and segm.n_images == 0
    assert all(issubclass(e, DetevalError) for e in (ValidationError, ConfigError))


def test_print_is_short_and_keys_are_listed():
    gt, res = _val2014()
    r = _run(*_per_image(gt, res), box_format="xywh", class_metrics=True)
    text = str(r)
    assert len(text) < 400 and "coco" in text and "0.5046" in text and "76 classes" in text
    assert repr(r) == text
    assert r.keys()[:12] == TM_KEYS and "classes" in r
    with pytest.raises(KeyError, match="this result has 'map', 'map_50'"):
        r["AP"]


def test_entry_points_are_importable_from_deteval():
    for name in ("evaluate_voc", "evaluate_coco", "evaluate_trec", "evaluate_mir", "MeanAveragePrecision"):
        assert callable(getattr(deteval, name)) and name in deteval.__all__
    assert "MeanAveragePrecision" in (deteval.__doc__ or "") and "docs/api.md" in deteval.__doc__


def test_import_and_evaluation_do_not_import_matplotlib():
    code = (
        "import sys, deteval\n"
        "m = deteval.MeanAveragePrecision(protocol='voc')\n"
        "m.update([{'boxes': [[0, 0, 9, 9]], 'scores': [0.9], 'labels': [1]}], [{'boxes': [[0, 0, 9, 9]], 'labels': [1]}])\n"
        "print(m.compute()['map'])\n"
        "from deteval.report import render\n"
        "render(m.compute(), 'markdown')\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1.0"


def test_render_docstring_example_runs():
    import doctest

    import deteval.report.tables

    failures, tried = doctest.testmod(deteval.report.tables)
    assert tried >= 2 and failures == 0
    import deteval.report

    assert deteval.report.write_plots.__module__ == "deteval.report.plots"
