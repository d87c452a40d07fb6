"""COCO: every class of bad input (docs/errors.md) through the Python API and the CLI.

Each bad file gives a DetevalError naming the file and the record, exit status 2 and no traceback;
record-level faults can be skipped with ``on_error="skip"`` (``--on-error skip``), and the valid records are
then scored exactly as in the file without the bad ones. Harmless variants (BOM, CRLF, indentation) score
exactly as the original.
"""

from __future__ import annotations

import copy
import json
import math
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from cli_errors import cli_error, subprocess_error

from deteval.cli import main
from deteval.detection.coco import evaluate_coco
from deteval.errors import ConfigError, DetevalError, InputFormatError, ValidationError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces

DATA = Path(__file__).resolve().parent / "data" / "coco"
GT = json.loads((DATA / "coco_fruits" / "fruit_val_coco_format.json").read_text())
RES = json.loads((DATA / "coco_fruits" / "coco_instances_results.json").read_text())
SEGM_GT = json.loads((DATA / "coco_val2014_100" / "instances_val2014_100.json").read_text())
SEGM_RES = json.loads((DATA / "coco_val2014_100" / "instances_val2014_fakesegm100_results.json").read_text())
KP_GT = json.loads((DATA / "coco_keypoints" / "gt_dataset.json").read_text())
KP_RES = json.loads((DATA / "coco_keypoints" / "dt_dataset.json").read_text())
NAN = float("nan")


def write(path: Path, obj) -> str:
    path.write_bytes(obj if isinstance(obj, bytes) else json.dumps(obj).encode())
    return str(path)


def cli_json(capsys, args: list[str]) -> dict:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def scores(doc: dict) -> dict:
    """Everything but the warnings and the skip count (the scores and the counts of scored items)."""
    return {k: v for k, v in doc.items() if k not in ("warnings", "skipped_records")}


def api(gt, res, iou_type="bbox", on_error="raise") -> dict:
    return evaluate_coco(gt, res, iou_type=iou_type, on_error=on_error).to_result().to_dict()


@cache  # (the clean files' numbers, which many tests compare with: evaluated once per process)
def clean_scores(iou_type: str) -> dict:
    """The scores of this module's clean ground truth and results of ``iou_type``."""
    gt, res = {"bbox": (GT, RES), "segm": (SEGM_GT, SEGM_RES), "keypoints": (KP_GT, KP_RES)}[iou_type]
    return scores(api(gt, res, iou_type))


# (setter of the bad record, error class, words) — the bad record goes in at results index 3
BAD_RESULTS = {
    "bbox_3_numbers": ({"bbox": [1, 2, 3]}, InputFormatError, "bbox must have 4 numbers"),
    "bbox_string": ({"bbox": "1,2,3,4"}, InputFormatError, "bbox must be a list of 4 numbers"),
    "bbox_string_number": ({"bbox": [1, "2", 3, 4]}, InputFormatError, "bbox must hold numbers"),
    "bbox_null": ({"bbox": None}, InputFormatError, "bbox must be a list of 4 numbers"),
    "bbox_missing": ({"bbox": ...}, InputFormatError, "missing field 'bbox'"),
    "negative_width": ({"bbox": [1, 2, -3, 4]}, ValidationError, "negative width or height"),
    "bbox_nan": ({"bbox": [NAN, 2, 3, 4]}, ValidationError, "is not finite"),
    "bbox_inf": ({"bbox": [1, 2, math.inf, 4]}, ValidationError, "is not finite"),
    "bbox_huge": ({"bbox": [1, 2, 1e300, 1e300]}, ValidationError, "beyond \u00b12**53"),
    "score_string": ({"score": "0.5"}, InputFormatError, "score must be a number, got '0.5'"),
    "score_bool": ({"score": True}, InputFormatError, "score must be a number, got True"),
    "score_null": ({"score": None}, InputFormatError, "score must be a number, got None"),
    "score_missing": ({"score": ...}, InputFormatError, "missing field 'score'"),
    "score_nan": ({"score": NAN}, ValidationError, "score is nan: must be finite"),
    "score_minus_inf": ({"score": -math.inf}, ValidationError, "score is -inf: must be finite"),
    "image_id_string": ({"image_id": "15"}, InputFormatError, "image_id must be an integer"),
    "image_id_fraction": ({"image_id": 15.5}, InputFormatError, "image_id must be an integer"),
    "category_id_null": ({"category_id": None}, InputFormatError, "category_id must be an integer"),
    "unknown_image": ({"image_id": 999}, ValidationError, "unknown image_id 999"),
    "unknown_category": ({"category_id": 99}, ValidationError, "unknown category_id 99"),
    "not_an_object": ([1, 2], InputFormatError, "expected a JSON object, got list"),
}  # fmt: skip


def with_bad(records: list, fields, at: int = 3) -> list:
    out = copy.deepcopy(records)
    if isinstance(fields, dict):
        rec = dict(out[at])
        for k, v in fields.items():
            if v is ...:
                del rec[k]
            else:
                rec[k] = v
    else:
        rec = fields
    out.insert(at, rec)
    return out


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_RESULTS))
def test_bad_result_record(tmp_path, capsys, name):
    fields, exc, words = BAD_RESULTS[name]
    gt = write(tmp_path / "gt.json", GT)
    clean = api(gt, write(tmp_path / "clean.json", RES))
    res = write(tmp_path / "res.json", with_bad(RES, fields))
    with pytest.raises(exc) as info:
        api(gt, res)
    assert info.value.file == res and info.value.record == 3 and words in info.value.reason
    argv = ["coco", gt, res, "--format", "json"]
    cli_error(capsys, argv, f"{res}: record 3: ", words)
    for doc in (api(gt, res, on_error="skip"), cli_json(capsys, [*argv, "--on-error", "skip"])):
        assert scores(doc) == scores(clean)
        assert doc["skipped_records"] == 1 and clean["skipped_records"] == 0
        skipped = [w for w in doc["warnings"] if w.startswith("skipped")]
        # the reason is that of the record checked on its own (a record without a bbox is then "a result
        # needs a bbox, ..."), the place is exact
        assert len(skipped) == 1 and skipped[0].startswith(f"skipped bad record: {res}: record 3: ")


def test_many_bad_results_each_reported_when_skipped(tmp_path):
    clean = api(GT, RES)
    records = copy.deepcopy(RES)
    for k, (fields, _, _) in enumerate(BAD_RESULTS.values()):
        records = with_bad(records, fields, at=2 * k)  # every other record bad, including the first
    doc = api(GT, records, on_error="skip")
    assert scores(doc) == scores(clean)
    assert doc["skipped_records"] == len(BAD_RESULTS)
    skipped = [w for w in doc["warnings"] if w.startswith("skipped")]
    assert [int(w.split("record ")[1].split(":")[0]) for w in skipped] == [
        2 * k for k in range(len(BAD_RESULTS))
    ]


def test_the_first_record_decides_nothing_once_skipped():
    """A bad first record is skipped and the kind (bbox) is decided from the first kept one, as in the file
    without it."""
    records = with_bad(RES, {"bbox": [], "score": "x"}, at=0)
    assert scores(api(GT, records, on_error="skip")) == clean_scores("bbox")


def _segm_only(record: dict) -> dict:
    """The record as a mask of its box, without a bbox: loadRes' segm branch (first record decides)."""
    x, y, w, h = record["bbox"]
    out = {k: v for k, v in record.items() if k != "bbox"}
    out["segmentation"] = [[x, y, x + w, y, x + w, y + h, x, y + h]]
    return out


@pytest.mark.parametrize(
    ("first", "others", "bad"),
    [
        ("bbox", "bbox", [7, 20]),  # segm-only records among bbox ones
        ("segm", "segm", [3, 8]),  # bbox-only records among segm ones
        ("broken", "segm", [0, 5]),  # a broken first record: the next (segm) decides
    ],
)
def test_a_record_of_another_kind_is_skipped(first, others, bad):
    """loadRes reads every record in the branch of the first one: with records skipped, the first kept one.
    A record of the other kind is bad (it lacks its branch's field) and skipped wherever it is, and the rest
    scores exactly as the file without it (such a record used to load alone, pass as good, and make the final
    load fail: ``--on-error skip`` raised)."""
    other = {"bbox": "segm", "segm": "bbox"}[others]
    kinds = [others] * 40
    for i in bad:
        kinds[i] = other
    if first == "broken":
        kinds[0] = "broken"
    records = []
    for r, kind in zip(copy.deepcopy(RES[:40]), kinds):
        if kind == "segm":
            r = _segm_only(r)
        elif kind == "broken":
            r["bbox"] = "1,2,3,4"
        records.append(r)
    keep = [r for i, r in enumerate(records) if i not in bad]
    doc = api(GT, records, on_error="skip")
    assert scores(doc) == scores(api(GT, keep))
    assert doc["skipped_records"] == len(bad)
    skipped = [int(w.split("record ")[1].split(":")[0]) for w in doc["warnings"] if w.startswith("skipped")]
    assert skipped == bad
    with pytest.raises(
        InputFormatError,
        match="record 1: missing field 'bbox'" if first == "broken" else f"record {bad[0]}: missing field",
    ):
        api(GT, records)  # without skipping: the first record's branch (a check of all records' bbox first)


# (mutation of the ground truth's annotation 2, error class, words)
BAD_ANNOTATIONS = {
    "bbox_3_numbers": ({"bbox": [1, 2, 3]}, InputFormatError, "bbox must have 4 numbers"),
    "bbox_string": ({"bbox": "x"}, InputFormatError, "bbox must be a list of 4 numbers"),
    "negative_height": ({"bbox": [1, 2, 3, -4]}, ValidationError, "negative width or height"),
    "bbox_nan": ({"bbox": [NAN, 2, 3, 4]}, ValidationError, "not finite"),
    "area_missing": ({"area": ...}, InputFormatError, "missing field 'area'"),
    "area_string": ({"area": "5"}, InputFormatError, "area must be a number"),
    "area_inf": ({"area": math.inf}, ValidationError, "area is inf: must be finite"),
    "iscrowd_2": ({"iscrowd": 2}, ValidationError, "iscrowd must be 0 or 1, got 2"),
    "iscrowd_string": ({"iscrowd": "0"}, InputFormatError, "iscrowd must be a number"),
    "iscrowd_missing": ({"iscrowd": ...}, InputFormatError, "missing field 'iscrowd'"),
    "ignore_5": ({"ignore": 5}, ValidationError, "ignore must be 0 or 1, got 5"),
    "unknown_image": ({"image_id": 999}, ValidationError, "unknown image_id 999"),
    "unknown_category": ({"category_id": 999}, ValidationError, "unknown category_id 999"),
    "id_string": ({"id": "a"}, InputFormatError, "annotation id must be an integer"),
}  # fmt: skip


def gt_with(mutations: dict, at: int = 2) -> tuple[dict, dict]:
    """The ground truth with annotation ``at`` damaged, and the ground truth without it."""
    bad, without = copy.deepcopy(GT), copy.deepcopy(GT)
    for k, v in mutations.items():
        if v is ...:
            del bad["annotations"][at][k]
        else:
            bad["annotations"][at][k] = v
    del without["annotations"][at]
    return bad, without


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_ANNOTATIONS))
def test_bad_ground_truth_annotation(tmp_path, capsys, name):
    fields, exc, words = BAD_ANNOTATIONS[name]
    bad, without = gt_with(fields)
    gt, res = write(tmp_path / "gt.json", bad), write(tmp_path / "res.json", RES)
    with pytest.raises(exc) as info:
        api(gt, res)
    assert info.value.file == gt and info.value.record == "annotations[2]" and words in info.value.reason
    argv = ["coco", gt, res, "--format", "json"]
    cli_error(capsys, argv, f"{gt}: annotations[2]: ", words)
    expected = api(without, RES)
    for doc in (api(gt, res, on_error="skip"), cli_json(capsys, [*argv, "--on-error", "skip"])):
        assert scores(doc) == scores(expected) and doc["skipped_records"] == 1
        skipped = [w for w in doc["warnings"] if w.startswith("skipped")]
        assert len(skipped) == 1 and skipped[0].startswith(f"skipped bad record: {gt}: annotations[2]: ")


def _set(path: list, value):
    def go(d):
        obj = d
        for k in path[:-1]:
            obj = obj[k]
        if value is ...:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value
        return d

    return go


# Faults of the whole ground truth or of two records: always an error, also with skip.
BAD_GT_FILES = {
    "empty_file": (b"", InputFormatError, "empty file"),
    "blank_file": (b" \n\t\n", InputFormatError, "empty file"),
    "truncated": (json.dumps(GT).encode()[:500], InputFormatError, "line 1: invalid JSON"),
    "a_list": ([GT], InputFormatError, "must be an object"),
    "annotations_not_a_list": (_set(["annotations"], {}), InputFormatError, "'annotations' must be a list"),
    "images_missing": (_set(["images"], ...), InputFormatError, "missing or invalid 'images' list"),
    "categories_missing": (_set(["categories"], ...), InputFormatError, "'categories'"),
    "image_not_an_object": (_set(["images", 0], 3), InputFormatError, "images[0]: expected a JSON object"),
    "image_without_id": (_set(["images", 0, "id"], ...), InputFormatError, "images[0]: missing field 'id'"),
    "category_without_id": (_set(["categories", 1, "id"], ...), InputFormatError, "categories[1]: missing"),
    "duplicate_image_id": (lambda g: g["images"].append(dict(g["images"][0])) or g, ValidationError,
                           "images[3]: duplicate image id 15 (also at index 0)"),
    "duplicate_category_id": (lambda g: g["categories"].append(dict(g["categories"][0])) or g,
                              ValidationError, "categories[3]: duplicate category id 0"),
    "duplicate_annotation_id": (lambda g: _set(["annotations", 2, "id"], g["annotations"][1]["id"])(g),
                                ValidationError, "annotations[2]: duplicate annotation id 2"),
    "latin1": (json.dumps(GT).replace('"date"', '"d\u00e9te"').encode("latin-1"), InputFormatError,
               "line 1: not UTF-8 text"),
}  # fmt: skip


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_GT_FILES))
def test_bad_ground_truth_file(tmp_path, capsys, name):
    content, exc, words = BAD_GT_FILES[name]
    if callable(content):
        content = content(copy.deepcopy(GT))
    gt, res = write(tmp_path / "gt.json", content), write(tmp_path / "res.json", RES)
    for on_error in ("raise", "skip"):
        with pytest.raises(exc) as info:
            api(gt, res, on_error=on_error)
        assert info.value.file == gt and words in str(info.value)
        cli_error(capsys, ["coco", gt, res, "--on-error", on_error], gt, words)


BAD_RESULT_FILES = {
    "empty_file": (b"", InputFormatError, "empty file (no JSON at all)"),
    "truncated": (json.dumps(RES).encode()[:500], InputFormatError, "line 1: invalid JSON"),
    "an_object": ({"annotations": RES}, InputFormatError, "results JSON must be a list of objects, not dict"),
    "a_number": (b"3", InputFormatError, "results JSON must be a list of objects, not int"),
    "latin1": (json.dumps(RES).replace('"score"', '"sc\u00e9ore"', 1).encode("latin-1"), InputFormatError,
               "not UTF-8 text"),
    "junk_after": (json.dumps(RES).encode() + b"]", InputFormatError, "invalid JSON: Extra data"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD_RESULT_FILES))
def test_bad_results_file(tmp_path, capsys, name):
    content, exc, words = BAD_RESULT_FILES[name]
    gt, res = write(tmp_path / "gt.json", GT), write(tmp_path / "res.json", content)
    for on_error in ("raise", "skip"):
        with pytest.raises(exc) as info:
            api(gt, res, on_error=on_error)
        assert info.value.file == res and words in str(info.value)
        cli_error(capsys, ["coco", gt, res, "--on-error", on_error], res, words)


def test_missing_directory_and_unreadable_files(tmp_path, capsys, monkeypatch):
    gt, res = write(tmp_path / "gt.json", GT), write(tmp_path / "res.json", RES)
    cli_error(capsys, ["coco", gt, str(tmp_path / "none.json")], "none.json: cannot read file: No such file")
    cli_error(capsys, ["coco", str(tmp_path), res], f"{tmp_path}: cannot read file: Is a directory")
    real = Path.read_bytes

    def deny(self):
        if self.name == "res.json":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", deny)
    cli_error(capsys, ["coco", gt, res], res, "Permission denied")


def test_nan_and_infinity_tokens_name_the_record(tmp_path, capsys):
    """Python's json.dump writes NaN/Infinity; they are read, and the record holding one is named."""
    text = json.dumps(with_bad(RES, {"score": NAN}, at=5))
    assert "NaN" in text
    gt, res = write(tmp_path / "gt.json", GT), write(tmp_path / "res.json", text.encode())
    cli_error(capsys, ["coco", gt, res], f"{res}: record 5: score is nan: must be finite")
    doc = cli_json(capsys, ["coco", gt, res, "--format", "json", "--on-error", "skip"])
    assert scores(doc) == clean_scores("bbox") and doc["skipped_records"] == 1
    big = json.dumps(RES).replace(str(RES[2]["bbox"][0]), "1e999", 1)
    write(tmp_path / "res.json", big.encode())
    cli_error(capsys, ["coco", gt, res], f"{res}: record 2: bbox [inf, ")


# Harmless variants: accepted, scored exactly as the original files.
HARMLESS = {
    "bom": lambda b: b"\xef\xbb\xbf" + b,
    "crlf_indented": lambda b: json.dumps(json.loads(b), indent=2).replace("\n", "\r\n").encode(),
    "tabs_and_spaces": lambda b: json.dumps(json.loads(b), indent="\t", separators=(" ,  ", " :\t")).encode(),
    "utf16_with_bom": lambda b: b.decode().encode("utf-16"),
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(HARMLESS))
@pytest.mark.parametrize("which", ["gt", "res"])
def test_harmless_variants_score_as_the_original(tmp_path, capsys, name, which):
    gt, res = write(tmp_path / "gt.json", GT), write(tmp_path / "res.json", RES)
    clean = api(gt, res)
    target = Path(gt if which == "gt" else res)
    target.write_bytes(HARMLESS[name](target.read_bytes()))
    assert api(gt, res) == clean
    assert cli_json(capsys, ["coco", gt, res, "--format", "json"]) == clean


def test_an_empty_results_list_is_a_valid_result(tmp_path, capsys):
    """pycocotools crashes on []; deteval scores it: every AP 0 (ground truth exists), nothing skipped."""
    gt, res = write(tmp_path / "gt.json", GT), write(tmp_path / "res.json", b"[]")
    doc = cli_json(capsys, ["coco", gt, res, "--format", "json"])
    # -1: no ground truth in that area range (no small fruit), as pycocotools reports it
    assert doc["stats"] == [0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0]
    assert doc["n_dt"] == 0 and doc["skipped_records"] == 0


def test_ground_truth_id_zero_is_scored_and_reported():
    """pycocotools mis-scores an annotation with id 0 (its matches count as unmatched); deteval does not,
    and says so."""
    gt = copy.deepcopy(GT)
    gt["annotations"][0]["id"] = 0
    doc = api(gt, RES)
    assert scores(doc)["stats"] == api(GT, RES)["stats"]
    assert any("id 0" in w for w in doc["warnings"])


def test_results_for_images_absent_from_the_ground_truth_are_counted_when_skipped():
    """An error by default (as pycocotools' loadRes); with skip, left out and each one reported."""
    records = copy.deepcopy(RES) + [dict(RES[0], image_id=9999), dict(RES[1], image_id=8888)]
    with pytest.raises(ValidationError, match=f"record {len(RES)}: unknown image_id 9999"):
        api(GT, records)
    doc = api(GT, records, on_error="skip")
    assert scores(doc) == clean_scores("bbox") and doc["skipped_records"] == 2
    assert sum("unknown image_id" in w for w in doc["warnings"]) == 2


def test_duplicate_result_records_are_scored_as_pycocotools():
    """The same detection twice is not an input error: the second is a duplicate (FP) once the first
    matched, as in pycocotools."""
    from _coco_cases import run_pycocotools

    records = copy.deepcopy(RES)
    records.insert(4, dict(records[3]))
    ours = evaluate_coco(GT, records)
    assert ours.stats.tolist() == run_pycocotools(GT, records, "bbox")[0].tolist()


# Segmentations (results of the val2014 sample, record 3)
RLE3 = SEGM_RES[3]["segmentation"]
BAD_SEGMENTATIONS = {
    "an_integer": (5, InputFormatError, "invalid segmentation '5'"),
    "a_string": ("abc", InputFormatError, "invalid segmentation 'abc'"),
    "empty_list": ([], InputFormatError, "invalid segmentation '[]'"),
    "short_polygon": ([[1, 2, 3]], InputFormatError, "an even number of coordinates, at least 6"),
    "odd_polygon": ([[1, 2, 3, 4, 5, 6, 7]], InputFormatError, "at least 6 (3 points x, y), got 7"),
    "four_number_polygon": ([[1, 2, 3, 4]], InputFormatError, "at least 6 (3 points x, y), got 4"),
    "later_two_point_polygon": ([[0, 0, 9, 0, 9, 9], [1, 2, 3, 4]], InputFormatError, "got 4"),
    "rle_corrupt_string": (RLE3 | {"counts": RLE3["counts"][:-1] + "a"}, InputFormatError, "ends inside a value"),
    "rle_runs_short": (RLE3 | {"counts": "0" + RLE3["counts"][1:]}, ValidationError, "not height * width"),
    "rle_list_runs_short": (RLE3 | {"counts": [4, 5]}, ValidationError, "add up to 9 pixels"),
    "rle_outside_alphabet": (RLE3 | {"counts": "~~"}, InputFormatError, "outside '0'..'o'"),
    "polygon_of_strings": ([["a", 2, 3, 4, 5, 6]], InputFormatError, "a polygon must be a list"),
    "polygon_nan": ([[NAN, 2, 3, 4, 5, 6]], ValidationError, "polygon coordinates must be finite"),
    "polygon_huge": ([[0, 0, 1e12, 0, 1e12, 1e12]], ValidationError, "within \u00b11e6"),
    "rle_without_size": ({"counts": "abc"}, InputFormatError, "needs 'counts' and 'size'"),
    "rle_bad_size": ({"counts": [1, 2], "size": "x"}, InputFormatError, "needs 'counts' and 'size'"),
    "rle_bad_counts": ({"counts": 7, "size": [10, 10]}, InputFormatError, "'counts' must be a string"),
    "missing": (..., InputFormatError, "missing field 'segmentation'"),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BAD_SEGMENTATIONS))
def test_bad_segmentation(tmp_path, capsys, name):
    segm, exc, words = BAD_SEGMENTATIONS[name]
    records = with_bad(SEGM_RES, {"segmentation": segm})
    gt, res = write(tmp_path / "gt.json", SEGM_GT), write(tmp_path / "res.json", records)
    with pytest.raises(exc) as info:
        api(gt, res, "segm")
    assert info.value.file == res and info.value.record == 3 and words in info.value.reason
    argv = ["coco", gt, res, "--iou-type", "segm", "--format", "json"]
    cli_error(capsys, argv, f"{res}: record 3: ", words)
    doc = cli_json(capsys, [*argv, "--on-error", "skip"])
    assert scores(doc) == clean_scores("segm") and doc["skipped_records"] == 1


@pytest.mark.slow
def test_bad_ground_truth_segmentation_and_image_size(tmp_path, capsys):
    gt = copy.deepcopy(SEGM_GT)
    gt["annotations"][2]["segmentation"] = [[NAN, 1, 2, 3, 4, 5]]
    path, res = write(tmp_path / "gt.json", gt), write(tmp_path / "res.json", SEGM_RES)
    cli_error(capsys, ["coco", path, res, "--iou-type", "segm"], f"{path}: annotations[2]: polygon")
    gt = copy.deepcopy(SEGM_GT)
    gt["images"][0]["height"] = "600"
    write(tmp_path / "gt.json", gt)
    cli_error(
        capsys, ["coco", path, res, "--iou-type", "segm"], f"{path}: images[0]: height must be a number"
    )
    gt["images"][0]["height"] = 10.5
    write(tmp_path / "gt.json", gt)
    cli_error(capsys, ["coco", path, res, "--iou-type", "segm"], "images[0]: height must be a whole number")


BAD_KEYPOINTS = {
    # (another count than its category's: refused against the category's 17 keypoint names)
    "wrong_length": (
        lambda k: k[:48],
        ValidationError,
        "must have 3·K = 51 numbers (K = 17, from its record's keypoint names), got 48",
    ),
    "not_a_multiple_of_3": (
        lambda k: k[:50],
        InputFormatError,
        "must have 3K numbers (x, y, v per keypoint), got 50",
    ),
    "a_string": (lambda k: "x", InputFormatError, "keypoints must be a list of numbers"),
    "a_string_inside": (lambda k: ["x"] + k[1:], InputFormatError, "keypoints must hold numbers"),
    # numpy would read "12.5" as 12.5: refused, as pycocotools' arithmetic on it would fail
    "a_numeric_string_inside": (lambda k: ["12.5"] + k[1:], InputFormatError, "keypoints must hold numbers"),
    "a_bool_inside": (lambda k: [True] + k[1:], InputFormatError, "keypoints must hold numbers"),
    "an_integer_beyond_float": (lambda k: [2**1100] + k[1:], InputFormatError, "keypoints must hold numbers"),
    "nan": (lambda k: [NAN] + k[1:], ValidationError, "keypoints are not finite"),
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_KEYPOINTS))
def test_bad_keypoints(tmp_path, capsys, name):
    change, exc, words = BAD_KEYPOINTS[name]
    records = with_bad(KP_RES, {"keypoints": change(KP_RES[3]["keypoints"])})
    gt, res = write(tmp_path / "gt.json", KP_GT), write(tmp_path / "res.json", records)
    with pytest.raises(exc) as info:
        api(gt, res, "keypoints")
    assert info.value.record == 3 and words in info.value.reason
    argv = ["coco", gt, res, "--iou-type", "keypoints", "--format", "json"]
    cli_error(capsys, argv, f"{res}: record 3: ", words)
    doc = cli_json(capsys, [*argv, "--on-error", "skip"])
    assert scores(doc) == clean_scores("keypoints") and doc["skipped_records"] == 1


def test_ground_truth_visibility_flags_must_be_0_1_2(tmp_path, capsys):
    gt = copy.deepcopy(KP_GT)
    gt["annotations"][2]["keypoints"][2] = 7
    path, res = write(tmp_path / "gt.json", gt), write(tmp_path / "res.json", KP_RES)
    cli_error(capsys, ["coco", path, res, "--iou-type", "keypoints"], "annotations[2]: keypoints visibility")


@pytest.mark.slow
def test_through_a_subprocess(tmp_path):
    gt = write(tmp_path / "gt.json", GT)
    res = write(tmp_path / "res.json", with_bad(RES, {"bbox": [1, 2, 3]}))
    subprocess_error(["coco", gt, res], f"{res}: record 3: bbox must have 4 numbers")
    write(tmp_path / "gt.json", b"{")
    subprocess_error(["coco", gt, res], f"{gt}: line 1: invalid JSON")


def test_in_memory_forms(tmp_path):
    with pytest.raises(InputFormatError, match="<in-memory results>: record 3: score must be a number"):
        load_coco_results(with_bad(RES, {"score": "x"}), load_coco_gt(GT))
    with pytest.raises(InputFormatError, match="results must be a path"):
        load_coco_results(3, load_coco_gt(GT))
    with pytest.raises(InputFormatError, match="ground truth must be a path"):
        load_coco_gt(3)
    with pytest.raises(ConfigError, match="on_error"):
        load_coco_gt(GT, on_error="ignore")
    r = load_coco_results(with_bad(RES, {"score": "x"}), load_coco_gt(GT), on_error="skip")
    assert r.skipped == 1 and len(r) == len(RES)
    assert issubclass(InputFormatError, DetevalError) and issubclass(ValidationError, DetevalError)


def test_results_array_rows():
    import numpy as np

    gt = load_coco_gt(GT)
    good = [15, 1.0, 2.0, 3.0, 4.0, 0.9, 1]
    for row, words in (
        ([15.5, 1, 2, 3, 4, 0.9, 1], "ids must be integers"),
        ([1e300, 1, 2, 3, 4, 0.9, 1], "ids must be integers"),
        ([15, 1, 2, 1e300, 4, 0.9, 1], "beyond"),
        ([15, 1, 2, -3, 4, 0.9, 1], "negative width"),
        ([15, 1, 2, 3, 4, NAN, 1], "not finite"),
        ([15, 1, 2, 3, 4, 0.9, 77], "unknown category_id 77"),
    ):
        with pytest.raises(DetevalError, match=f"record 1: .*{words}"):
            load_coco_results(np.array([good, row]), gt)
    with pytest.raises(InputFormatError, match="N×7"):
        load_coco_results(np.zeros((2, 6)), gt)


def test_large_files_read_in_pieces_name_the_global_record(tmp_path, monkeypatch, capsys):
    """Files above 2 pieces are parsed piece by piece; a bad record in a later piece is still named by its
    index in the whole file, and skipping it gives the same result as the file without it."""

    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 1000)
    gt = write(tmp_path / "gt.json", GT)
    clean = api(gt, write(tmp_path / "clean.json", RES))
    at = len(RES) - 5
    res = write(tmp_path / "res.json", with_bad(RES, {"score": "x"}, at=at))
    cli_error(capsys, ["coco", gt, res], f"{res}: record {at}: score must be a number")
    doc = cli_json(capsys, ["coco", gt, res, "--format", "json", "--on-error", "skip"])
    assert scores(doc) == scores(clean) and doc["skipped_records"] == 1
    bad_gt = copy.deepcopy(GT)
    bad_gt["annotations"][-3]["bbox"] = [1, 2, 3]
    n = len(GT["annotations"])
    path = write(tmp_path / "gt.json", bad_gt)
    cli_error(capsys, ["coco", path, res], f"{path}: annotations[{n - 3}]: bbox must have 4 numbers")


def test_pycocotools_objects_with_bad_records():
    """A pycocotools COCO (ground truth, or results from loadRes) goes through the same checks and skip."""
    import contextlib
    import io

    from pycocotools.coco import COCO

    coco = COCO()
    coco.dataset = copy.deepcopy(GT)
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
        res = coco.loadRes(copy.deepcopy(RES))
    res.dataset["annotations"][3]["score"] = NAN
    with pytest.raises(ValidationError, match="<pycocotools COCO results>: record 3: score is nan"):
        evaluate_coco(coco, res)
    doc = evaluate_coco(coco, res, on_error="skip").to_result().to_dict()
    without = [r for i, r in enumerate(RES) if i != 3]
    assert scores(doc) == scores(api(GT, without)) and doc["skipped_records"] == 1


def test_iscrowd_and_ignore_as_true_false():
    """true/false flags (some exporters write them) read as 1/0, including a file where all are false."""
    gt = copy.deepcopy(GT)
    for a in gt["annotations"]:
        a["iscrowd"], a["ignore"] = False, False
    assert api(gt, RES) == api(GT, RES)
    gt["annotations"][4]["iscrowd"] = True
    crowd = copy.deepcopy(GT)
    crowd["annotations"][4]["iscrowd"] = 1
    assert api(gt, RES) == api(crowd, RES)


def test_images_too_large_for_pycocotools_masks(tmp_path, capsys):
    """Found by fuzzing: a 65536x65536 image made pycocotools' 32-bit mask code loop without end."""
    gt = copy.deepcopy(SEGM_GT)
    gt["images"][4]["height"] = gt["images"][4]["width"] = 65536
    path, res = write(tmp_path / "gt.json", gt), write(tmp_path / "res.json", SEGM_RES)
    cli_error(
        capsys, ["coco", path, res, "--iou-type", "segm"], f"{path}: images[4]: an image of 65536x65536"
    )
    records = with_bad(SEGM_RES, {"segmentation": {"counts": "abc", "size": [65536, 65536]}})
    write(tmp_path / "res.json", records)
    gt["images"][4]["height"] = gt["images"][4]["width"] = 640
    write(tmp_path / "gt.json", gt)
    cli_error(capsys, ["coco", path, res, "--iou-type", "segm"], f"{res}: record 3: ", "below 2**32 pixels")


@pytest.mark.slow
def test_an_rle_of_another_size_than_its_image(tmp_path, capsys):
    """pycocotools gives it an IoU of -1: it would silently never match."""
    records = copy.deepcopy(SEGM_RES)
    records[3]["segmentation"] = {"counts": "52", "size": [5, 5]}  # 25 background pixels
    gt, res = write(tmp_path / "gt.json", SEGM_GT), write(tmp_path / "res.json", records)
    cli_error(capsys, ["coco", gt, res, "--iou-type", "segm"], f"{res}: record 3: RLE size [5, 5] differs")
    doc = cli_json(capsys, ["coco", gt, res, "--iou-type", "segm", "--format", "json", "--on-error", "skip"])
    without = [r for i, r in enumerate(SEGM_RES) if i != 3]
    assert scores(doc) == scores(api(SEGM_GT, without, "segm")) and doc["skipped_records"] == 1


def test_in_memory_arrays_refuse_overflowing_boxes_quietly():
    import warnings

    import numpy as np

    from deteval.detection.coco import evaluate_coco_arrays

    preds = [{"boxes": np.array([[-1.7e308, 0, 1.7e308, 10]]), "scores": np.array([0.5]), "labels": [1]}]
    targets = [{"boxes": np.array([[0.0, 0, 10, 10]]), "labels": [1]}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValidationError, match="<preds>: image 0, box 0: box"):
            evaluate_coco_arrays(preds, targets)


def test_keypoints_as_numpy_scalars_are_numbers():
    """In-memory keypoints may hold numpy integers and floats (read as the same numbers); a numeric string, a
    bool or an integer beyond float range is refused above (fromiter alone would coerce the first two)."""
    as_numpy = [
        dict(
            r,
            keypoints=[np.float64(v) if j % 3 else np.int64(round(v)) for j, v in enumerate(r["keypoints"])],
        )
        for r in KP_RES
    ]
    rounded = [
        dict(r, keypoints=[float(v) if j % 3 else float(round(v)) for j, v in enumerate(r["keypoints"])])
        for r in KP_RES
    ]
    ours = evaluate_coco(KP_GT, as_numpy, iou_type="keypoints").stats
    assert np.array_equal(ours, evaluate_coco(KP_GT, rounded, iou_type="keypoints").stats)
