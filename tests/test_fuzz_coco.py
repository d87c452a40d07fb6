"""Fuzzing the COCO loaders and matcher: damaged ground truth and results give a DetevalError or a valid
result, nothing else.

No other exception, no hang and no NaN in a reported metric (COCO's -1, "no ground truth in this area
range", is a documented value, not an error), in both error modes; with ``on_error="skip"`` the result equals
the one on the input without the skipped records.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np
from fuzz_mutations import assert_valid_result, fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

from deteval.detection.coco import CocoStream, evaluate_coco, evaluate_coco_arrays
from deteval.errors import DetevalError

DATA = Path(__file__).resolve().parent / "data" / "coco"
GT_BYTES = (DATA / "coco_fruits" / "fruit_val_coco_format.json").read_bytes()
RES_BYTES = (DATA / "coco_fruits" / "coco_instances_results.json").read_bytes()
GT = json.loads(GT_BYTES)
RES = json.loads(RES_BYTES)[:30]
KP_GT = json.loads((DATA / "coco_keypoints" / "gt_dataset.json").read_bytes())
KP_RES = json.loads((DATA / "coco_keypoints" / "dt_dataset.json").read_bytes())[:25]


def _polygon(b: list) -> list:
    x, y, w, h = b
    return [[x, y, x + w, y, x + w, y + h, x, y + h]]


SEGM_GT = copy.deepcopy(GT)
for _a in SEGM_GT["annotations"]:
    _a["segmentation"] = _polygon(_a["bbox"])
SEGM_RES = [{**r, "segmentation": _polygon(r["bbox"])} for r in RES]
for _r in SEGM_RES:
    del _r["bbox"]

FUZZ = fuzz_settings(100)
MODES = st.sampled_from(("raise", "skip"))
IOU_TYPES = st.sampled_from(("bbox", "segm"))


def _check(gt, res, iou_type: str, on_error: str):
    """Evaluate; a DetevalError must name a file, a valid result holds no NaN. Returns the result or None."""
    try:
        ev = evaluate_coco(gt, res, iou_type=iou_type, on_error=on_error)
    except DetevalError as exc:
        assert exc.file is not None, exc
        return None
    result = ev.to_result()
    assert_valid_result(result)
    stats = np.asarray(result.summary["stats"])
    assert ((stats >= 0) & (stats <= 1) | (stats == -1)).all(), stats
    assert result.summary["skipped_records"] >= 0
    if on_error == "raise":
        assert result.summary["skipped_records"] == 0
    return result


@FUZZ
@given(data=mutated(RES_BYTES, max_ops=6), on_error=MODES)
def test_fuzz_results_file_bytes(data, on_error):
    with tempfile.TemporaryDirectory() as tmp:
        res = Path(tmp) / "res.json"
        res.write_bytes(data)
        _check(GT, str(res), "bbox", on_error)


@FUZZ
@given(data=mutated(GT_BYTES, max_ops=6), on_error=MODES)
def test_fuzz_ground_truth_file_bytes(data, on_error):
    with tempfile.TemporaryDirectory() as tmp:
        gt = Path(tmp) / "gt.json"
        gt.write_bytes(data)
        _check(str(gt), RES, "bbox", on_error)


# Values that have broken COCO tools: special numbers, wrong types, ids that do not exist.
NASTY_VALUES = st.sampled_from(
    [math.nan, math.inf, -math.inf, -1, 0, -0.0, 1e300, -1e300, 1e16, 2**63, -(2**63) - 1, 10**30, 0.5, True,
     False, None, "", "1", "nan", [], {}, [1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4, 5], [[1, 2, 3, 4, 5, 6]],
     [[math.nan, 0, 1, 1, 2, 2]], {"counts": "abc", "size": [600, 800]}, {"counts": [1, 2]}, 15, 16, 99]
)  # fmt: skip


@st.composite
def damaged_records(draw, records: list, keys: list[str], max_ops: int = 4):
    """``records`` after random field edits: a value replaced by a nasty one, a field deleted, a record
    duplicated, deleted or replaced by a non-object."""
    out = copy.deepcopy(records)
    for _ in range(draw(st.integers(1, max_ops))):
        if not out:
            break
        i = draw(st.integers(0, len(out) - 1))
        op = draw(st.sampled_from(("set", "set", "delete", "duplicate", "drop", "not_object")))
        if op == "set" and isinstance(out[i], dict):
            out[i][draw(st.sampled_from(keys))] = draw(NASTY_VALUES)
        elif op == "delete" and isinstance(out[i], dict):
            out[i].pop(draw(st.sampled_from(keys)), None)
        elif op == "duplicate":
            out.insert(i, copy.deepcopy(out[i]))
        elif op == "drop":
            del out[i]
        elif op == "not_object":
            out[i] = draw(NASTY_VALUES)
    return out


def _assert_skip_contract(gt, records: list, iou_type: str, result) -> None:
    """The skipped result equals the result on the records that were not skipped."""
    skipped = {
        int(w.split(": record ")[1].split(":")[0])
        for w in result.warnings
        if w.startswith("skipped bad record: <in-memory results>: record ")
    }
    kept = [r for i, r in enumerate(records) if i not in skipped]
    clean = evaluate_coco(gt, kept, iou_type=iou_type).to_result()
    assert clean.summary["stats"] == result.summary["stats"]
    assert clean.per_class == result.per_class


@FUZZ
@given(data=st.data(), iou_type=IOU_TYPES, on_error=MODES)
def test_fuzz_result_records(data, iou_type, on_error):
    base = RES if iou_type == "bbox" else SEGM_RES
    keys = ["image_id", "category_id", "score", "bbox"] + (["segmentation"] if iou_type == "segm" else [])
    records = data.draw(damaged_records(base, keys))
    gt = GT if iou_type == "bbox" else SEGM_GT
    result = _check(gt, records, iou_type, on_error)
    if result is not None and on_error == "skip" and result.summary["skipped_records"]:
        _assert_skip_contract(gt, records, iou_type, result)


@FUZZ
@given(data=st.data(), iou_type=IOU_TYPES, on_error=MODES)
def test_fuzz_ground_truth_records(data, iou_type, on_error):
    gt = copy.deepcopy(GT if iou_type == "bbox" else SEGM_GT)
    keys = ["id", "image_id", "category_id", "bbox", "area", "iscrowd", "ignore"]
    if iou_type == "segm":
        keys.append("segmentation")
    gt["annotations"] = data.draw(damaged_records(gt["annotations"], keys, max_ops=3))
    if data.draw(st.booleans()):
        table = data.draw(st.sampled_from(("images", "categories")))
        gt[table] = data.draw(damaged_records(gt[table], ["id", "height", "width", "name"], max_ops=2))
    _check(gt, RES if iou_type == "bbox" else SEGM_RES, iou_type, on_error)


@FUZZ
@given(data=st.data(), on_error=MODES)
def test_fuzz_keypoints(data, on_error):
    res = data.draw(damaged_records(KP_RES, ["image_id", "category_id", "score", "keypoints"], max_ops=3))
    gt = copy.deepcopy(KP_GT)
    if data.draw(st.booleans()):
        gt["annotations"] = data.draw(
            damaged_records(gt["annotations"], ["keypoints", "num_keypoints", "area", "bbox"], max_ops=2)
        )
    if data.draw(st.booleans()):  # a keypoint list of the wrong length or with a nasty value
        r = data.draw(st.integers(0, len(res) - 1))
        if isinstance(res[r], dict) and isinstance(res[r].get("keypoints"), list) and res[r]["keypoints"]:
            k = data.draw(st.integers(0, len(res[r]["keypoints"]) - 1))
            if data.draw(st.booleans()):
                del res[r]["keypoints"][k]
            else:
                res[r]["keypoints"][k] = data.draw(NASTY_VALUES)
    _check(gt, res, "keypoints", on_error)


FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, 1.0, 10.0, 50.0, -1.0, 1e300]),
)


@st.composite
def image_arrays(draw):
    n = draw(st.integers(0, 4))
    g = draw(st.integers(0, 4))
    box = st.lists(FLOATS, min_size=4, max_size=4)
    preds = {
        "boxes": draw(st.lists(box, min_size=n, max_size=n)),
        "scores": draw(st.lists(FLOATS, min_size=n, max_size=n)),
        "labels": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
    }
    targets = {
        "boxes": draw(st.lists(box, min_size=g, max_size=g)),
        "labels": draw(st.lists(st.integers(0, 3), min_size=g, max_size=g)),
    }
    if draw(st.booleans()):
        targets["iscrowd"] = draw(st.lists(st.integers(0, 1), min_size=g, max_size=g))
    if draw(st.booleans()) and n:  # a length mismatch
        preds["scores"] = preds["scores"][:-1]
    return preds, targets


@FUZZ
@given(images=st.lists(image_arrays(), min_size=1, max_size=3), box_format=st.sampled_from(("xyxy", "xywh")))
def test_fuzz_in_memory_arrays(images, box_format):
    preds = [p for p, _ in images]
    targets = [t for _, t in images]
    try:
        ev = evaluate_coco_arrays(preds, targets, box_format=box_format)
    except DetevalError as exc:
        assert exc.file is not None, exc
        return
    assert_valid_result(ev.to_result())
    stream = CocoStream(box_format=box_format)
    stream.update(preds, targets)
    assert stream.compute().stats.tolist() == ev.stats.tolist()


def _rle(polygon: list, image_id: int, *, as_list: bool = False) -> dict:
    """The polygon's mask as a compressed RLE (a str, as in a JSON file) or as a list of runs."""
    from pycocotools import mask as mask_utils

    img = next(i for i in GT["images"] if i["id"] == image_id)
    rle = mask_utils.merge(mask_utils.frPyObjects(polygon, img["height"], img["width"]))
    if not as_list:
        return {"size": rle["size"], "counts": rle["counts"].decode()}
    with warnings.catch_warnings():  # pycocotools' decode under numpy 2
        warnings.simplefilter("ignore", DeprecationWarning)
        flat = mask_utils.decode([rle])[:, :, 0].flatten(order="F").astype(np.int8)
    cuts = np.flatnonzero(np.diff(flat)) + 1
    return {"size": rle["size"], "counts": np.diff(np.r_[0, cuts, flat.size]).tolist()}


RLE_RES = [{**r, "segmentation": _rle(r["segmentation"], r["image_id"])} for r in SEGM_RES[:12]]
RLE_GT = copy.deepcopy(SEGM_GT)
for _a in RLE_GT["annotations"][:6]:  # crowds with uncompressed (list) RLEs, as COCO writes them
    _a["iscrowd"] = 1
    _a["segmentation"] = _rle(_a["segmentation"], _a["image_id"], as_list=True)


@st.composite
def damaged_counts(draw, counts):
    """RLE counts after 1-3 edits: a string truncated, a character replaced, inserted or deleted (any byte);
    a list's run changed, dropped, duplicated or made negative."""
    out = bytearray(counts.encode()) if isinstance(counts, str) else list(counts)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(out)))
        op = draw(st.sampled_from(("truncate", "replace", "insert", "delete")))
        if isinstance(out, bytearray):
            byte = draw(st.one_of(st.integers(48, 111), st.integers(0, 255)))
            if op == "truncate":
                out = out[:i]
            elif op == "replace" and i < len(out):
                out[i] = byte
            elif op == "insert":
                out[i:i] = bytes([byte])
            else:
                del out[i : i + 1]
        else:
            value = draw(st.sampled_from((-1, 0, 1, 2**31, 2**33)))
            if op == "replace" and i < len(out):
                out[i] = out[i] + value if value in (-1, 1) else value
            elif op == "insert":
                out.insert(i, value if value >= 0 else 0)
            elif op == "delete":
                del out[i : i + 1]
            else:
                out = out[:i]
    return out.decode("latin-1") if isinstance(out, bytearray) else out


@FUZZ
@given(data=st.data(), on_error=MODES)
def test_fuzz_rle_counts(data, on_error):
    """Damaged compressed RLE strings in results and damaged run lists in crowd ground truth: a DetevalError
    or a valid result, never a crash or a hang inside pycocotools (every RLE is decoded and checked first)."""
    res = copy.deepcopy(RLE_RES)
    gt = copy.deepcopy(RLE_GT)
    for _ in range(data.draw(st.integers(1, 2))):
        if data.draw(st.booleans()):
            r = res[data.draw(st.integers(0, len(res) - 1))]["segmentation"]
        else:
            r = gt["annotations"][data.draw(st.integers(0, 5))]["segmentation"]
        r["counts"] = data.draw(damaged_counts(r["counts"]))
    result = _check(gt, res, "segm", on_error)
    if result is not None and on_error == "skip" and result.summary["skipped_records"]:
        _assert_skip_contract(gt, res, "segm", result)
