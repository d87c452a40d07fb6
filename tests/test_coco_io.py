"""COCO loaders: every input form, and errors that name the file and the record."""

import contextlib
import copy
import io
import json

import numpy as np
import pytest

from deteval.cli import main
from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.coco import gt_pieces as coco_gt_pieces
from deteval.io.coco import json_text as coco_json
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import results as coco_results

GT = {
    "images": [{"id": 7, "height": 100, "width": 100}, {"id": 3, "height": 100, "width": 100}],
    "categories": [{"id": 5, "name": "cat"}, {"id": 2, "name": "dog"}],
    "annotations": [
        {"id": 1, "image_id": 7, "category_id": 5, "bbox": [10, 10, 20, 20], "area": 400.0, "iscrowd": 0},
        {"id": 2, "image_id": 3, "category_id": 2, "bbox": [50, 50, 30, 20], "area": 600.0, "iscrowd": 0},
    ],
}
DT = [
    {"image_id": 7, "category_id": 5, "bbox": [10, 10, 20, 21], "score": 0.9},
    {"image_id": 3, "category_id": 2, "bbox": [0, 0, 5, 5], "score": 0.4},
]


def test_sorted_ids_and_columns():
    g = load_coco_gt(GT)
    assert g.image_ids.tolist() == [3, 7] and g.cat_ids.tolist() == [2, 5] and g.cat_names == ["dog", "cat"]
    assert g.img.tolist() == [1, 0] and g.cat.tolist() == [1, 0]
    r = load_coco_results(DT, g)
    assert r.area.tolist() == [420.0, 25.0] and r.img.tolist() == [1, 0]


@pytest.mark.parametrize(
    "mutate,exc,record,words",
    [
        (lambda d: d[1].update(image_id=99), ValidationError, 1, "unknown image_id 99"),
        (lambda d: d[0].update(category_id=1), ValidationError, 0, "unknown category_id 1"),
        (lambda d: d[1].update(bbox=[1, 2, 3]), InputFormatError, 1, "4 numbers"),
        (lambda d: d[1].update(bbox=[1, 2, float("nan"), 3]), ValidationError, 1, "not finite"),
        (lambda d: d[0].update(bbox=[1, 2, float("inf"), 3]), ValidationError, 0, "not finite"),
        (lambda d: d[1].update(bbox=[1, 2, -3, 3]), ValidationError, 1, "negative width"),
        (lambda d: d[1].update(score=float("nan")), ValidationError, 1, "finite"),
        (lambda d: d[1].update(score="high"), InputFormatError, 1, "number"),
        (lambda d: d[1].pop("score"), InputFormatError, 1, "missing field 'score'"),
        (lambda d: d.__setitem__(1, 5), InputFormatError, 1, "JSON object"),
    ],
)
def test_results_errors_name_the_record(mutate, exc, record, words):
    dt = copy.deepcopy(DT)
    mutate(dt)
    with pytest.raises(exc) as info:
        evaluate_coco(GT, dt)
    assert info.value.record == record and words in str(info.value)


@pytest.mark.parametrize(
    "mutate,exc,words",
    [
        (
            lambda g: g["annotations"][1].update(image_id=4),
            ValidationError,
            "annotations[1]: unknown image_id 4",
        ),
        (lambda g: g["annotations"][1].update(id=1), ValidationError, "duplicate annotation id 1"),
        (lambda g: g["annotations"][0].pop("area"), InputFormatError, "annotations[0]: missing field 'area'"),
        (lambda g: g["annotations"][0].update(bbox=[0, 0, -1, 4]), ValidationError, "annotations[0]"),
        (lambda g: g["images"].append({"id": 7}), ValidationError, "duplicate image id 7"),
        (lambda g: g.pop("images"), InputFormatError, "'images'"),
    ],
)
def test_ground_truth_errors(mutate, exc, words):
    gt = copy.deepcopy(GT)
    mutate(gt)
    with pytest.raises(exc) as info:
        evaluate_coco(gt, DT)
    assert words in str(info.value)


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "res.json"
    bad.write_text("[{oops")
    with pytest.raises(InputFormatError) as info:
        evaluate_coco(GT, bad)
    assert str(bad) in str(info.value)
    dt = copy.deepcopy(DT)
    dt[1]["image_id"] = 42
    (tmp_path / "r2.json").write_text(json.dumps(dt))
    with pytest.raises(ValidationError) as info:
        evaluate_coco(GT, tmp_path / "r2.json")
    assert str(info.value).startswith(f"{tmp_path / 'r2.json'}: record 1: unknown image_id 42")


def test_all_input_forms_agree(tmp_path):
    from pycocotools.coco import COCO

    (tmp_path / "gt.json").write_text(json.dumps(GT))
    (tmp_path / "dt.json").write_text(json.dumps(DT))
    ref = evaluate_coco(tmp_path / "gt.json", tmp_path / "dt.json")
    dt_copy = copy.deepcopy(DT)
    assert np.array_equal(evaluate_coco(GT, dt_copy).precision, ref.precision)
    assert dt_copy == DT  # the caller's dicts are not modified (pycocotools' loadRes writes into them)
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO(str(tmp_path / "gt.json"))
        cd = cg.loadRes(str(tmp_path / "dt.json"))
    assert np.array_equal(evaluate_coco(cg, cd).precision, ref.precision)
    arr = np.array([[d["image_id"], *d["bbox"], d["score"], d["category_id"]] for d in DT], dtype=float)
    assert np.array_equal(evaluate_coco(GT, arr).precision, ref.precision)
    with pytest.raises(InputFormatError):
        evaluate_coco(GT, arr[:, :6])


def test_cli_json_and_errors(tmp_path, capsys):
    (tmp_path / "gt.json").write_text(json.dumps(GT))
    (tmp_path / "dt.json").write_text(json.dumps(DT))
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["protocol"] == "coco" and doc["iou_type"] == "bbox" and len(doc["stats"]) == 12
    assert set(doc["per_class"]) == {"cat", "dog"}
    assert set(doc["per_class"]["cat"]) == {"ap", "ap50", "ap75", "aps", "apm", "apl", "ar100"}
    ev = evaluate_coco(GT, DT)
    assert doc["stats"] == ev.stats.tolist()
    out = tmp_path / "r.csv"
    assert (
        main(
            [
                "coco",
                str(tmp_path / "gt.json"),
                str(tmp_path / "dt.json"),
                "--per-class",
                "--format",
                "csv",
                "--output",
                str(out),
                "--config",
                "coco_fixed",
                "--max-dets",
                "1,5,100",
            ]
        )
        == 0
    )
    assert out.read_text().startswith("class,ap,")
    bad = copy.deepcopy(DT)
    bad[1]["bbox"] = [1, 2, 3]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deteval: error: ") and "bad.json: record 1: bbox must have 4 numbers" in err
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--iou-thrs", "zero"]) == 2
    assert isinstance(DetevalError("x"), Exception)


@pytest.mark.slow
def test_large_results_are_parsed_in_pieces_with_the_same_arrays_and_record_numbers(tmp_path, monkeypatch):
    import deteval.io.coco as coco_io

    rng = np.random.default_rng(3)
    dets = [
        {
            "image_id": int(rng.choice([3, 7])),
            "category_id": int(rng.choice([2, 5])),
            "bbox": [float(v) for v in np.round(rng.uniform(0, 50, 4), 3)],
            "score": float(rng.random()),
        }
        for _ in range(3000)
    ]
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dets))
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 4096)
    g = coco_io.load_coco_gt(GT)
    chunked = coco_results._bbox_results_in_chunks(path, g)
    assert chunked is not None
    whole = coco_io.load_coco_results(dets, g)
    for key in ("img", "cat", "score", "bbox", "area"):
        assert np.array_equal(getattr(chunked, key), getattr(whole, key))
    dets[2500]["bbox"] = [1.0, 2.0, -3.0, 4.0]
    path.write_text(json.dumps(dets))
    with pytest.raises(ValidationError) as info:
        coco_io.load_coco_results(path, g)
    assert info.value.record == 2500 and str(path) in str(info.value)


def test_json_fallback_without_orjson_gives_the_same_arrays(tmp_path, monkeypatch):

    (tmp_path / "gt.json").write_text(json.dumps(GT))
    (tmp_path / "dt.json").write_text(json.dumps(DT))
    with_fast = evaluate_coco(tmp_path / "gt.json", tmp_path / "dt.json")
    monkeypatch.setattr(coco_json, "_orjson", None)
    plain = evaluate_coco(tmp_path / "gt.json", tmp_path / "dt.json")
    assert np.array_equal(with_fast.precision, plain.precision) and np.array_equal(
        with_fast.stats, plain.stats
    )
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InputFormatError) as info:
        evaluate_coco(tmp_path / "bad.json", DT)
    assert "invalid JSON" in str(info.value)


@pytest.mark.slow
def test_cli_segm_and_keypoints_on_fixtures(capsys):
    from pathlib import Path

    data = Path(__file__).parent / "data" / "coco"
    val = data / "coco_val2014_100"
    assert (
        main(
            [
                "coco",
                str(val / "instances_val2014_100.json"),
                str(val / "instances_val2014_fakesegm100_results.json"),
                "--iou-type",
                "segm",
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["iou_type"] == "segm" and doc["stats"][0] == pytest.approx(0.3195452758576433, abs=1e-12)
    assert len(doc["per_class"]) == 80
    kp = data / "coco_keypoints"
    assert (
        main(
            [
                "coco",
                str(kp / "gt_dataset.json"),
                str(kp / "dt_dataset.json"),
                "--config",
                "coco_keypoints",
                "--per-class",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith(" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets= 20 ] = 0.505")
    assert "person" in out and "ar20" in out
    assert main(["presets"]) == 0
    listed = capsys.readouterr().out
    assert "coco " in listed and "coco_fixed" in listed and "coco_keypoints" in listed


@pytest.mark.slow
def test_pycocotools_objects_and_params_are_accepted():
    from pathlib import Path

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    val = Path(__file__).parent / "data" / "coco" / "coco_val2014_100"
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO(str(val / "instances_val2014_100.json"))
        cd = cg.loadRes(str(val / "instances_val2014_fakebbox100_results.json"))
        E = COCOeval(cg, cd, "bbox")
        E.params.imgIds = sorted(cg.getImgIds())[:50]
        E.params.maxDets = [1, 5, 100]
        E.params.iouThrs = np.array([0.3, 0.5, 0.75])
        ev = evaluate_coco(cg, cd, params=E.params)
        E.evaluate()
        E.accumulate()
        E.summarize()
    assert np.array_equal(ev.precision, E.eval["precision"]) and np.array_equal(ev.stats, E.stats)
    assert ev.counts["n_images"] == 50 and any("not evaluated" in w for w in ev.warnings)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,opts",
    [
        ("coco_val2014_100/instances_val2014_100.json", {"keep_segmentation": True}),
        ("coco_fruits/fruit_val_coco_format.json", {}),
        ("coco_keypoints/gt_dataset.json", {"need_keypoints": True}),
    ],
)
def test_large_ground_truth_is_parsed_in_pieces_identically(name, opts, monkeypatch, tmp_path):
    from pathlib import Path

    import deteval.io.coco as coco_io

    path = Path(__file__).parent / "data" / "coco" / name
    whole = coco_io.load_coco_gt(json.loads(path.read_text()), **opts)
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 300)
    assert coco_gt_pieces.gt_in_pieces(
        path, opts.get("keep_segmentation", False), opts.get("need_keypoints", False)
    )
    pieces = coco_io.load_coco_gt(path, **opts)
    for key in (
        "image_ids",
        "image_hw",
        "cat_ids",
        "ann_id",
        "img",
        "cat",
        "bbox",
        "area",
        "iscrowd",
        "ignore",
        "num_keypoints",
    ):
        assert np.array_equal(getattr(whole, key), getattr(pieces, key)), key
    assert pieces.cat_names == whole.cat_names and pieces.segmentation == whole.segmentation
    if opts.get("need_keypoints"):
        assert np.array_equal(whole.keypoints, pieces.keypoints)
    # an error in a later piece names the record by its index in the whole array
    doc = json.loads(path.read_text())
    last = len(doc["annotations"]) - 2
    doc["annotations"][last]["bbox"] = [0, 0, -1, 1]
    (tmp_path / "gt.json").write_text(json.dumps(doc))
    with pytest.raises(ValidationError) as info:
        coco_io.load_coco_gt(tmp_path / "gt.json", **opts)
    assert info.value.record == f"annotations[{last}]"


def test_id_lookup_table_and_binary_search_agree():
    """_index_of reads dense integer ids through a lookup table (issue 15): same positions, and the same first
    unknown id refused, as the binary search, including ids far outside the table (no int64 wrap)."""
    from deteval.io.coco import index_of as _index_of

    rng = np.random.default_rng(1)
    extremes = np.array([-(2**63), 2**63 - 1, -1, 0], dtype=np.int64)
    for _ in range(200):
        span = int(rng.choice([10, 1000, 10**7]))  # dense (lookup) and sparse (binary search) tables
        table = np.unique(rng.integers(-5, span, int(rng.integers(1, 50))))
        ids = rng.choice(table, int(rng.integers(0, 30)))
        assert np.array_equal(_index_of(ids, table, "image_id", "f", None), np.searchsorted(table, ids))
        bad = np.r_[ids, rng.choice(extremes, 1), rng.integers(-10, span + 10, 3), ids]
        unknown = np.flatnonzero(~np.isin(bad, table))
        if unknown.size == 0:
            continue
        first = int(unknown[0])
        with pytest.raises(ValidationError) as exc:
            _index_of(bad, table, "image_id", "f", None)
        assert exc.value.record == first


def test_large_keypoints_results_file_read_in_pieces_equals_whole(tmp_path, monkeypatch):
    """Keypoints results (loadRes' keypoints branch) are parsed piece by piece like bbox ones (issue 15:
    bounded memory): same columns, same stats as pycocotools, and an error names the record in the file."""
    import sys
    from pathlib import Path

    from deteval.io import coco as coco_io

    sys.path.insert(0, str(Path(__file__).parent))
    from _coco_cases import random_keypoints_case, run_pycocotools

    case = next(
        c for c in map(random_keypoints_case, range(60)) if len(c["dt"]) >= 12 and not c.get("params")
    )
    dt = [{k: v for k, v in d.items() if k not in ("bbox", "segmentation")} for d in case["dt"]]
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dt))
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 300)
    g = coco_io.load_coco_gt(case["gt"], need_keypoints=True)
    chunked = coco_results._bbox_results_in_chunks(path, g, "keypoints")
    assert chunked is not None
    whole = coco_io.load_coco_results(dt, g, iou_type="keypoints")
    for key in ("img", "cat", "score", "bbox", "area", "keypoints"):
        assert np.array_equal(getattr(chunked, key), getattr(whole, key), equal_nan=True)
    stats, *_ = run_pycocotools(case["gt"], dt, "keypoints")
    assert np.array_equal(evaluate_coco(case["gt"], path, iou_type="keypoints").stats, stats)
    bad = len(dt) - 2
    dt[bad]["keypoints"] = dt[bad]["keypoints"][:-3]
    path.write_text(json.dumps(dt))
    # (a record of another keypoint count reads as a file of several skeleton sizes: its evaluation refuses it)
    with pytest.raises(ValidationError) as info:
        evaluate_coco(case["gt"], path, iou_type="keypoints")
    assert info.value.record == bad and str(path) in str(info.value)
