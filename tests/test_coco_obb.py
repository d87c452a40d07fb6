"""The COCO-style oriented-box protocol (iou_type="obb") against hotcoco's OBB mode run live: the twelve
numbers on hundreds of random cases (±90° angles, zero-area boxes, duplicates, crowds, ground truth with and
without an area), the rotated IoU to the bit, every runner strategy, and the reader's refusals.

vernier 0.5 has no oriented-box mode (its iou types are bbox, segm, boundary and keypoints), so hotcoco is the
one live peer here (docs/obb.md)."""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import numpy as np
import pytest

from deteval.errors import DetevalError
from deteval.io.coco_obb import load_obb_gt, load_obb_results
from deteval.match.rotated import quad_iou_pairs
from deteval.run.coco import evaluate_coco
from deteval.tables.quads import obb_quads

hotcoco = pytest.importorskip("hotcoco")


def random_case(seed: int) -> tuple[dict, list]:
    rng = np.random.default_rng(seed)
    n_img, n_cat = int(rng.integers(1, 8)), int(rng.integers(1, 4))
    anns: list[dict] = []
    dts: list[dict] = []
    for i in range(n_img):
        for _ in range(int(rng.integers(0, 8))):
            angle = float(rng.choice([rng.uniform(-np.pi, np.pi), np.pi / 2, -np.pi / 2, 0.0]))
            box = [rng.uniform(0, 200), rng.uniform(0, 200), rng.uniform(0, 80), rng.uniform(0, 80), angle]
            if rng.random() < 0.05:
                box[2] = 0.0  # a zero-area box
            ann = {
                "id": len(anns) + 1,
                "image_id": i + 1,
                "category_id": int(rng.integers(1, n_cat + 1)),
                "obb": box,
                "iscrowd": int(rng.random() < 0.1),
            }
            if rng.random() < 0.7:
                ann["area"] = float(box[2] * box[3] * rng.uniform(0.5, 1.5))
            anns.append(ann)
            for _ in range(int(rng.integers(0, 3))):
                d = np.array(box) + np.r_[rng.normal(0, 5, 4), rng.normal(0, 0.2)]
                d[2:4] = np.abs(d[2:4])
                det = box[:] if rng.random() < 0.1 else [float(x) for x in d]
                cat = ann["category_id"] if rng.random() < 0.8 else int(rng.integers(1, n_cat + 1))
                dts.append(
                    {
                        "image_id": i + 1,
                        "category_id": cat,
                        "obb": det,
                        "score": float(np.round(rng.random(), 2)),
                    }
                )
        for _ in range(int(rng.integers(0, 3))):
            box = [
                rng.uniform(0, 200),
                rng.uniform(0, 200),
                rng.uniform(1, 50),
                rng.uniform(1, 50),
                rng.uniform(-3, 3),
            ]
            dts.append(
                {
                    "image_id": i + 1,
                    "category_id": int(rng.integers(1, n_cat + 1)),
                    "obb": box,
                    "score": float(rng.random()),
                }
            )
    gt = {
        "images": [{"id": i + 1, "width": 200, "height": 200} for i in range(n_img)],
        "categories": [{"id": k + 1, "name": str(k)} for k in range(n_cat)],
        "annotations": anns,
    }
    return gt, dts


def hotcoco_eval(gt: dict, dts: list, thresholds: list[float] | None = None) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ("no reference implementation to check against")
        coco = hotcoco.COCO(json.loads(json.dumps(gt)))
        ev = hotcoco.COCOeval(coco, coco.loadRes(json.loads(json.dumps(dts))), "obb")
        if thresholds is not None:
            ev.params.iouThrs = thresholds
        ev.evaluate()
        ev.accumulate()
        with contextlib.redirect_stdout(io.StringIO()):
            ev.summarize()
    return ev


@pytest.mark.parametrize("block", range(4))
def test_equal_to_hotcoco_obb(block):
    compared = 0
    for seed in range(block * 60, (block + 1) * 60):
        gt, dts = random_case(seed)
        if not dts:
            continue  # (hotcoco's loadRes refuses an empty list)
        ours = evaluate_coco(gt, dts, iou_type="obb", strategy="one process")
        ev = hotcoco_eval(gt, dts)
        assert np.array_equal(np.asarray(ours.stats), np.asarray(ev.stats)), seed
        np.testing.assert_array_equal(ours.precision, np.asarray(ev.eval["precision"]))
        compared += 1
    assert compared > 50


def test_rotated_iou_is_hotcocos_to_the_bit():
    # one pair per image; hotcoco matches at a threshold equal to our IoU and not at the next double above
    rng = np.random.default_rng(0)
    n = 40
    a = np.c_[rng.uniform(0, 100, (n, 2)), rng.uniform(1, 40, (n, 2)), rng.uniform(-3, 3, n)]
    a[:8, 4] = np.pi / 2
    b = a.copy()
    b[:, :2] += rng.normal(0, 5, (n, 2))
    b[:, 4] += rng.normal(0, 0.3, n)
    iou = quad_iou_pairs(obb_quads(a), obb_quads(b), np.zeros(n, bool), np.arange(n), np.arange(n))
    checked = 0
    for i in range(n):
        if not 0 < iou[i] < 1 - 1e-10:
            continue
        gt = {
            "images": [{"id": 1}],
            "categories": [{"id": 1, "name": "x"}],
            "annotations": [
                {"id": 1, "image_id": 1, "category_id": 1, "obb": b[i].tolist(), "area": 1.0, "iscrowd": 0}
            ],
        }
        dts = [{"image_id": 1, "category_id": 1, "obb": a[i].tolist(), "score": 0.5}]
        ev = hotcoco_eval(gt, dts, [float(iou[i]), float(np.nextafter(iou[i], 2.0))])
        assert np.asarray(ev.eval["recall"])[:, 0, 0, -1].tolist() == [1.0, 0.0], i
        checked += 1
    assert checked > 30


def test_every_strategy_gives_the_same_numbers():
    gt, dts = random_case(5)
    one = evaluate_coco(gt, dts, iou_type="obb", strategy="one process")
    for kwargs in ({"strategy": "auto"}, {"shards": 3}):
        other = evaluate_coco(gt, dts, iou_type="obb", **kwargs)
        np.testing.assert_array_equal(other.precision, one.precision)
        np.testing.assert_array_equal(other.stats, one.stats)


def test_files_and_tables_read_alike(tmp_path):
    gt, dts = random_case(9)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dts))
    from_files = evaluate_coco(tmp_path / "gt.json", tmp_path / "dt.json", iou_type="obb")
    g = load_obb_gt(gt)
    from_tables = evaluate_coco(g, load_obb_results(dts, g), iou_type="obb")
    np.testing.assert_array_equal(from_files.stats, from_tables.stats)
    # results' area is w·h; the ground truth's is the annotation's, else w·h
    r = load_obb_results(dts, g)
    np.testing.assert_array_equal(r.area, [d["obb"][2] * d["obb"][3] for d in dts])
    want = [a.get("area", a["obb"][2] * a["obb"][3]) for a in gt["annotations"]]
    np.testing.assert_array_equal(g.area, want)


@pytest.mark.parametrize("processes", ["1", "2"])
def test_files_read_on_two_cores_as_in_one(tmp_path, monkeypatch, processes):
    """The results file read by a forked child while the ground truth is read here (DETEVAL_PROCESSES=2) or
    here alone (1): the same numbers, those of hotcoco; a bad record or an unknown image in the results file
    raises the one-process error, naming the file and the record."""
    import deteval.run.coco as runner
    import deteval.run.forked as forked

    monkeypatch.setenv(forked.ENV_PROCESSES, processes)
    monkeypatch.setattr(runner, "OBB_FORK_BYTES", 0)
    gt, dts = random_case(11)
    gp, dp = tmp_path / "gt.json", tmp_path / "dt.json"
    gp.write_text(json.dumps(gt))
    dp.write_text(json.dumps(dts))
    ev = evaluate_coco(gp, dp, iou_type="obb")
    np.testing.assert_array_equal(ev.stats, hotcoco_eval(gt, dts).stats)
    for change, fault in (
        (lambda d: d.__setitem__("obb", [1, 2, -3, 4, 0]), "negative width"),
        (lambda d: d.__setitem__("image_id", 999), "999"),
    ):
        bad = [dict(d) for d in dts]
        change(bad[3])
        dp.write_text(json.dumps(bad))
        with pytest.raises(DetevalError) as err:
            evaluate_coco(gp, dp, iou_type="obb")
        assert fault in str(err.value) and "dt.json: record 3:" in str(err.value)


def test_results_decoded_by_type_as_by_the_plain_reader(tmp_path, monkeypatch):
    """A results file decoded by type (msgspec, deteval.io.coco.typed.obb_columns) gives the plain-records
    reader's arrays bit for bit; whatever that reader could read otherwise is left to it."""
    import deteval.io.coco.typed as coco_typed

    pytest.importorskip("msgspec")
    gt, dts = random_case(4)
    g = load_obb_gt(gt)
    dts[0]["obb"] = [round(v) for v in dts[0]["obb"][:4]] + [0]  # (integer values are numbers too)
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dts))
    assert coco_typed.obb_columns(path.read_bytes()) is not None
    monkeypatch.setattr(coco_typed, "MIN_BYTES", 0)
    typed = load_obb_results(path, g)
    monkeypatch.setattr(coco_typed, "MIN_BYTES", 1 << 60)
    plain = load_obb_results(path, g)
    for f in ("img", "cat", "score", "bbox", "area", "obb"):
        a, b = getattr(typed, f), getattr(plain, f)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f
    text = json.dumps(dts[:3])
    left = [
        text.replace('"score"', '"extra": 1, "score"', 1),  # an unknown key
        text.replace('"score"', '"score": 1, "score"', 1),  # a repeated key
        text.replace('"image_id": 1', '"image_id": 1.0', 1),  # a whole float as an id
        text.replace('"image_id": 1', f'"image_id": {2**53}', 1),  # beyond the N×7 array's exact ids
        text.replace('"image_id": 1', '"image_id": true', 1),
        text.replace('"score": ', '"score": null, "x": ', 1),
        json.dumps([{**dts[0], "obb": [*dts[0]["obb"][:4], True]}]),
        json.dumps([{**dts[0], "obb": dts[0]["obb"][:4]}]),
        json.dumps([{**dts[0], "obb": [1, 2, -3, 4, 0]}]),
        json.dumps([{**dts[0], "obb": [2.0**53, 2, 3, 4, 0]}]),
        "[]",
    ]
    assert all(b != text for b in left)
    for bad in left:
        assert coco_typed.obb_columns(bad.encode()) is None, bad


GT_FIELDS = ("image_ids", "image_hw", "cat_ids", "ann_id", "img", "cat", "bbox", "area", "iscrowd", "ignore")


def test_ground_truth_decoded_by_type_as_by_the_plain_reader(tmp_path, monkeypatch):
    """A ground-truth file decoded by type (deteval.io.coco.typed.obb_gt_columns) gives the ordinary reader's
    table bit for bit (annotations with and without an area, zero-area boxes, crowds); whatever that reader
    could read otherwise, or refuses, is left to it, with its error."""
    import deteval.io.coco.typed as coco_typed
    from deteval.io.coco.json_text import loads_json

    pytest.importorskip("msgspec")
    path = tmp_path / "gt.json"
    for seed in range(6):
        gt, _ = random_case(seed)
        gt["info"] = {"description": "x", "version": {"major": 1}}
        path.write_text(json.dumps(gt))
        assert coco_typed.obb_gt_columns(path.read_bytes(), lambda t: loads_json(t, "gt.json")) is not None
        monkeypatch.setattr(coco_typed, "MIN_BYTES", 0)
        typed = load_obb_gt(path)
        monkeypatch.setattr(coco_typed, "MIN_BYTES", 1 << 60)
        plain = load_obb_gt(path)
        for f in (*GT_FIELDS, "obb"):
            a, b = getattr(typed, f), getattr(plain, f)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), (seed, f)
        assert (typed.cat_names, typed.image_records, typed.source) == (
            plain.cat_names,
            plain.image_records,
            plain.source,
        )
    gt, _ = random_case(1)
    text = json.dumps(gt)
    assert coco_typed.obb_gt_columns(text.encode(), lambda t: loads_json(t, "gt.json")) is not None
    ann = '{"id": 1, "image_id"'  # (the first annotation's text)
    left = [
        text.replace(ann, '{"id": 1, "bbox": [0, 0, 1, 1], "image_id"', 1),  # another key
        text.replace(ann, '{"id": 1, "id": 1, "image_id"', 1),  # a repeated key
        text.replace('"images": [', '"extra": 1, "images": [', 1),  # a top-level key not read
        text.replace('"images": [{"id": 1,', '"images": [{"id": 1, "id": 1,', 1),  # repeated in an image
        text.replace(ann, '{"id": 1.0, "image_id"', 1),  # a whole float as an id
        text.replace(ann, '{"id": true, "image_id"', 1),
        text.replace('"iscrowd": 0', '"iscrowd": 2', 1),
        text.replace('"iscrowd": 0', '"iscrowd": false', 1),
        text.replace(', "iscrowd": 0', "", 1),  # no iscrowd: the ordinary reader refuses it
        json.dumps({**gt, "annotations": [{**gt["annotations"][0], "area": -1.0}]}),
        json.dumps({**gt, "annotations": [{**gt["annotations"][0], "image_id": "1"}]}),
        json.dumps({**gt, "annotations": [{**gt["annotations"][0], "obb": [1, 2, 3, 4]}]}),
        json.dumps({k: v for k, v in gt.items() if k != "categories"}),
    ]
    assert all(b != text for b in left)
    for bad in left:
        assert coco_typed.obb_gt_columns(bad.encode(), lambda t: loads_json(t, "gt.json")) is None, bad
    # a fault the columns cannot see (an annotation of an unknown image): the ordinary reader's error
    gt["annotations"][0]["image_id"] = 999
    path.write_text(json.dumps(gt))
    monkeypatch.setattr(coco_typed, "MIN_BYTES", 0)
    with pytest.raises(DetevalError) as typed_err:
        load_obb_gt(path)
    monkeypatch.setattr(coco_typed, "MIN_BYTES", 1 << 60)
    with pytest.raises(DetevalError) as plain_err:
        load_obb_gt(path)
    assert str(typed_err.value) == str(plain_err.value) and "999" in str(plain_err.value)


@pytest.mark.parametrize(
    ("box", "fault"),
    [
        ([1, 2, 3, 4], "5 numbers"),
        ([1, 2, -3, 4, 0], "negative width"),
        ([1, 2, 3, float("nan"), 0], "finite"),
        ("12345", "5 numbers"),
    ],
)
def test_bad_obb_is_named(tmp_path, box, fault):
    gt, dts = random_case(2)
    gt["annotations"][0]["obb"] = box
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    with pytest.raises(DetevalError) as err:
        load_obb_gt(path)
    assert fault in str(err.value) and "annotations[0]" in str(err.value) and "gt.json" in str(err.value)
    g = load_obb_gt(random_case(2)[0])
    dts[1]["obb"] = box
    with pytest.raises(DetevalError, match=fault):
        load_obb_results(dts, g)


def test_plain_coco_inputs_are_refused_for_obb():
    gt, dts = random_case(3)
    for d in dts:
        d["bbox"] = [0, 0, 1, 1]
        del d["obb"]
    with pytest.raises(DetevalError, match="'obb' of 5 numbers"):
        evaluate_coco(gt, dts, iou_type="obb")


def test_vernier_has_no_obb_mode_to_compare_with():
    # docs/obb.md: vernier 0.5 scores bbox, segm, boundary and keypoints only. Should it gain an OBB mode,
    # this fails, and the comparison above gains vernier as a second live oracle.
    vernier = pytest.importorskip("vernier")
    with pytest.raises(NotImplementedError, match="iouType"):
        vernier.COCOeval(None, None, iouType="obb")
