"""Nothing is coerced in COCO input: a ``true``/``false`` where a number or an id is expected, a float id and
an integer numpy cannot hold are refused naming the record, on every path (in memory, a file, a file read in
pieces). ``np.array`` alone reads ``true`` as 1 inside a list of numbers; a dict lookup (pycocotools) finds
``true`` and ``1.0`` under the id 1."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from fuzz_mutations import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import deteval.io.coco as coco_io
from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces


def _gt() -> dict:
    ann = {
        "image_id": 1,
        "category_id": 1,
        "bbox": [10, 10, 20, 20],
        "area": 400,
        "iscrowd": 0,
        "segmentation": [[10, 10, 30, 10, 30, 30, 10, 30]],
    }
    return {
        "images": [{"id": i, "height": 100, "width": 100} for i in (1, 2)],
        "categories": [{"id": c, "name": f"c{c}"} for c in (1, 2)],
        "annotations": [
            copy.deepcopy(dict(ann, id=1)),
            copy.deepcopy(dict(ann, id=2, image_id=2, category_id=2)),
        ],
    }


def _res() -> list:
    return [
        {"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9},
        {"image_id": 2, "category_id": 2, "bbox": [12, 10, 20, 20], "score": 0.8},
    ]


FUZZ = fuzz_settings(60)

ID_VALUES = [True, False, np.True_, 1.5, np.float64(2.5), 2.0**60, 2**64]


@pytest.mark.parametrize("value", ID_VALUES, ids=repr)
@pytest.mark.parametrize(
    ("where", "index", "key", "record"),
    [
        ("annotations", 1, "id", "annotations[1]"),
        ("annotations", 1, "image_id", "annotations[1]"),
        ("annotations", 1, "category_id", "annotations[1]"),
        ("images", 1, "id", "images[1]"),
        ("categories", 1, "id", "categories[1]"),
    ],
)
def test_ground_truth_ids_must_be_integers(value, where, index, key, record):
    gt = _gt()
    gt[where][index][key] = value
    with pytest.raises(InputFormatError, match="must be an integer") as err:
        load_coco_gt(gt)
    assert err.value.record == record
    if isinstance(value, float) and value.is_integer():
        assert "only below 2**53" in err.value.reason
    elif isinstance(value, (bool, np.bool_)):
        assert "true/false is not an id" in err.value.reason


@pytest.mark.parametrize("value", ID_VALUES, ids=repr)
@pytest.mark.parametrize("key", ["image_id", "category_id"])
def test_result_ids_must_be_integers(value, key):
    res = _res()
    res[1][key] = value
    with pytest.raises(InputFormatError, match=f"{key} must be an integer") as err:
        load_coco_results(res, load_coco_gt(_gt()))
    assert err.value.record == 1


def test_numpy_integer_ids_are_integers():
    gt = _gt()
    gt["annotations"][1]["image_id"] = np.int64(2)
    gt["images"][1]["id"] = np.uint32(2)
    g = load_coco_gt(gt)
    assert g.image_ids.tolist() == [1, 2] and g.img.tolist() == [0, 1]


@pytest.mark.parametrize("value", [True, False, np.True_, np.False_], ids=repr)
@pytest.mark.parametrize("position", [0, 2, 3])
def test_a_boolean_in_a_bbox_is_refused(value, position):
    gt = _gt()
    gt["annotations"][1]["bbox"][position] = value
    with pytest.raises(InputFormatError, match=r"bbox must hold numbers.*true/false is not a number") as err:
        load_coco_gt(gt)
    assert err.value.record == "annotations[1]"
    res = _res()
    res[1]["bbox"][position] = value
    with pytest.raises(InputFormatError, match="true/false is not a number") as err:
        load_coco_results(res, load_coco_gt(_gt()))
    assert err.value.record == 1


def test_zero_and_one_coordinates_stay_numbers():
    """Only rows holding a 0 or a 1 are type-checked: plain 0 and 1 (ints or floats) are numbers."""
    res = _res()
    res[0]["bbox"] = [0, 1, 1.0, 0.0]
    r = load_coco_results(res, load_coco_gt(_gt()))
    assert r.bbox[0].tolist() == [0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("value", [2**64, -(2**70), 10**400], ids=["2**64", "-2**70", "10**400"])
def test_an_integer_numpy_cannot_hold_in_a_bbox_names_the_record(value):
    res = _res()
    res[1]["bbox"][2] = value
    with pytest.raises(ValidationError, match=r"is beyond ±2\*\*53") as err:
        load_coco_results(res, load_coco_gt(_gt()))
    assert err.value.record == 1


@pytest.mark.parametrize("key", ["score"])
@pytest.mark.parametrize("value", [np.True_, np.False_], ids=repr)
def test_numpy_booleans_are_not_scores(key, value):
    res = _res()
    res[1][key] = value
    with pytest.raises(InputFormatError, match=f"{key} must be a number"):
        load_coco_results(res, load_coco_gt(_gt()))


def test_numpy_boolean_is_not_an_area():
    gt = _gt()
    gt["annotations"][1]["area"] = np.True_
    with pytest.raises(InputFormatError, match="area must be a number") as err:
        load_coco_gt(gt)
    assert err.value.record == "annotations[1]"


@pytest.mark.parametrize("value", [True, False, np.True_], ids=repr)
def test_a_boolean_in_a_polygon_is_refused(value):
    gt = _gt()
    gt["annotations"][1]["segmentation"][0][3] = value
    with pytest.raises(InputFormatError, match="a polygon must be a list of at least 6 numbers"):
        load_coco_gt(gt, keep_segmentation=True)
        coco_io.check_segmentation(gt["annotations"][1]["segmentation"], "f", 1)
    res = _res()
    res[1]["segmentation"] = [[10, 10, 30, value, 30, 30, 10, 30]]
    with pytest.raises(InputFormatError, match="a polygon must be") as err:
        load_coco_results(res, load_coco_gt(_gt(), keep_segmentation=True), iou_type="segm")
    assert err.value.record == 1


def test_flags_keep_their_documented_forms():
    """iscrowd/ignore: 0, 1, 0.0, 1.0, true, false all mean what pycocotools' truth test reads (documented)."""
    gt = _gt()
    gt["annotations"][0]["iscrowd"] = True
    gt["annotations"][1]["iscrowd"] = 1.0
    assert load_coco_gt(gt).iscrowd.tolist() == [True, True]


@pytest.mark.parametrize("chunk", [1 << 30, 300])
def test_file_and_pieces_refuse_alike(tmp_path, monkeypatch, chunk):
    """A ``true`` in a bbox and a float id in a results file (parsed by orjson, whole or in pieces) and in a
    ground-truth file read in pieces."""
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", chunk)
    gt = _gt()
    gt["annotations"] = [dict(copy.deepcopy(gt["annotations"][k % 2]), id=k + 1) for k in range(40)]
    gpath = tmp_path / "gt.json"
    bad = copy.deepcopy(gt)
    bad["annotations"][33]["bbox"][1] = True
    gpath.write_text(json.dumps(bad, indent=1))
    with pytest.raises(InputFormatError, match="true/false is not a number") as err:
        load_coco_gt(str(gpath))
    assert err.value.record == "annotations[33]"
    res = [copy.deepcopy(_res()[k % 2]) for k in range(60)]
    res[47] = dict(res[47], image_id=2.5)
    rpath = tmp_path / "res.json"
    rpath.write_text(json.dumps(res, indent=1))
    with pytest.raises(InputFormatError, match="image_id must be an integer") as err:
        load_coco_results(str(rpath), load_coco_gt(gt))
    assert err.value.record == 47


def test_a_score_numpy_cannot_hold_says_why():
    res = _res()
    res[1]["score"] = 10**400
    with pytest.raises(InputFormatError, match=r"score must be a number below 2\*\*64, got 1000") as err:
        load_coco_results(res, load_coco_gt(_gt()))
    assert err.value.record == 1 and len(err.value.reason) < 120


# Values of the wrong type per kind of field: whatever record and field they land in, the load fails naming
# that record (never a number read from a string or a boolean).
_NOT_IDS = st.sampled_from([True, False, np.True_, 2.0**60, 2.5, "1", None, [1], 2**64])
_NOT_NUMBERS = st.sampled_from(
    [True, False, np.True_, np.False_, "12.5", "1", "nan", None, [1], 2**64, 10**400]
)


@pytest.mark.slow
@FUZZ
@given(
    n=st.integers(1, 12),
    data=st.data(),
)
def test_wrong_types_anywhere_name_their_record(n, data):
    g = load_coco_gt(_gt())
    res = [
        {"image_id": 1 + k % 2, "category_id": 1 + k % 2, "bbox": [k % 3, 1, 10.0, 0], "score": 0.5}
        for k in range(n)
    ]
    i = data.draw(st.integers(0, n - 1))
    field = data.draw(st.sampled_from(["image_id", "category_id", "score", "bbox"]))
    if field == "bbox":
        res[i]["bbox"][data.draw(st.integers(0, 3))] = data.draw(_NOT_NUMBERS)
    else:
        res[i][field] = data.draw(_NOT_IDS if field.endswith("_id") else _NOT_NUMBERS)
    with pytest.raises(DetevalError) as err:
        load_coco_results(res, g)
    assert err.value.record == i


def test_byte_ranges_leave_a_coerced_value_to_the_whole_file(tmp_path):
    """The range reader (deteval.io.coco.ranges) checks as the whole-file loader does: the range holding a
    ``true`` bbox value gives None (the caller then reads the whole file, which names the record)."""
    from deteval.io.coco.ranges import load_results_range
    from deteval.io.json_ranges import scan_json_array

    g = load_coco_gt(_gt())
    res = [copy.deepcopy(_res()[k % 2]) for k in range(30)]
    res[17]["bbox"][3] = True
    path = tmp_path / "res.json"
    path.write_text(json.dumps(res))
    ranges = scan_json_array(path, 200)
    assert ranges is not None and len(ranges) > 2
    got = [
        load_results_range(
            path, int(lo), int(hi), int(f), int(c), g, iou_type="bbox", kind="bbox", kp_width=None
        )
        for lo, hi, f, c in zip(ranges.starts, ranges.ends, ranges.first, ranges.counts)
    ]
    holding = [k for k in range(len(ranges)) if ranges.first[k] <= 17 < ranges.first[k] + ranges.counts[k]]
    assert [k for k, r in enumerate(got) if r is None] == holding
    with pytest.raises(InputFormatError, match="true/false is not a number") as err:
        load_coco_results(str(path), g)
    assert err.value.record == 17


@pytest.mark.parametrize("dtype", ["U8", bool, object])
def test_a_results_array_holds_numbers(dtype):
    arr = np.array([[1, 10, 10, 20, 20, 1, 1]]).astype(dtype)
    with pytest.raises(InputFormatError, match="a results array must hold numbers"):
        load_coco_results(arr, load_coco_gt(_gt()))
    r = load_coco_results(np.array([[1, 10, 10, 20, 20, 0.5, 1]], dtype=np.float32), load_coco_gt(_gt()))
    assert r.score.tolist() == [0.5]


@pytest.mark.parametrize("chunk", [1 << 30, 300])
def test_whole_float_ids_are_the_integers_they_equal(tmp_path, monkeypatch, chunk):
    """``2.0`` is the id 2, as in pycocotools' dict index (JSON has one number type), in memory, from a file
    and from a file read in pieces; the evaluation equals the one with integer ids."""
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", chunk)
    gt = _gt()
    gt["annotations"] = [dict(copy.deepcopy(gt["annotations"][k % 2]), id=k + 1) for k in range(40)]
    res = [copy.deepcopy(_res()[k % 2]) for k in range(60)]
    gt_f, res_f = copy.deepcopy(gt), copy.deepcopy(res)
    for a in gt_f["annotations"][::3]:
        a["image_id"], a["id"] = float(a["image_id"]), float(a["id"])
    gt_f["images"][1]["id"] = float(gt_f["images"][1]["id"])
    gt_f["categories"][0]["id"] = float(gt_f["categories"][0]["id"])
    for r in res_f[::2]:
        r["image_id"], r["category_id"] = float(r["image_id"]), float(r["category_id"])
    paths = []
    for name, obj in (("gt.json", gt), ("res.json", res), ("gt_f.json", gt_f), ("res_f.json", res_f)):
        (tmp_path / name).write_text(json.dumps(obj, indent=1))
        paths.append(str(tmp_path / name))
    for g_in, r_in in ((gt_f, res_f), (paths[2], paths[3])):
        g, g0 = load_coco_gt(g_in), load_coco_gt(gt)
        assert g.image_ids.tolist() == g0.image_ids.tolist() and g.img.tolist() == g0.img.tolist()
        r, r0 = load_coco_results(r_in, g), load_coco_results(res, g0)
        assert r.img.tolist() == r0.img.tolist() and r.cat.tolist() == r0.cat.tolist()
