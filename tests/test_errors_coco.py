"""COCO (``deteval coco``): the bad-input catalogue of docs/errors.md, through the CLI.

Skipped until the COCO evaluator is present in the tree (it was built on another branch).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cli_errors import cli_error

pytest.importorskip("deteval.io.coco")

from deteval.cli import main  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "coco"


@pytest.fixture(scope="module")
def gt() -> dict:
    return json.loads((SAMPLE / "instances_val.json").read_bytes())


@pytest.fixture(scope="module")
def res() -> list:
    return json.loads((SAMPLE / "results_bbox.json").read_bytes())


def write(tmp_path: Path, name: str, value) -> Path:
    path = tmp_path / name
    path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode())
    return path


def run_json(capsys, *args: str) -> dict:
    code = main(["coco", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _set(path: list, value):
    def go(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return doc

    return go


def _pop(path: list):
    def go(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target.pop(path[-1])
        return doc

    return go


def _append_copy(key: str):
    def go(doc):
        doc[key].append(dict(doc[key][0]))
        return doc

    return go


# (which file, mutation of the parsed JSON, words the one-line error must hold)
BAD = {
    "results_not_a_list": ("res", lambda r: {"a": 1}, ["results JSON must be a list"]),
    "gt_not_an_object": ("gt", lambda g: [1], ["ground truth JSON must be an object"]),
    "gt_without_images": ("gt", _pop(["images"]), ["'images'"]),
    "gt_without_categories": ("gt", _pop(["categories"]), ["'categories'"]),
    "result_not_an_object": ("res", _set([3], [1, 2]), ["record 3", "expected a JSON object"]),
    "missing_bbox": ("res", _pop([3, "bbox"]), ["record 3", "missing field 'bbox'"]),
    "non_numeric_bbox": ("res", _set([3, "bbox"], ["a", 1, 2, 3]), ["record 3", "bbox must hold numbers"]),
    "bbox_of_3": ("res", _set([3, "bbox"], [1, 2, 3]), ["record 3", "4 numbers"]),
    "negative_width": ("res", _set([3, "bbox"], [1, 2, -3, 4]), ["record 3", "negative width or height"]),
    "missing_score": ("res", _pop([3, "score"]), ["record 3", "missing field 'score'"]),
    "non_numeric_score": ("res", _set([3, "score"], "x"), ["record 3", "score must be a number"]),
    "unknown_image": ("res", _set([3, "image_id"], 987654321), ["record 3", "unknown image_id 987654321"]),
    "unknown_category": ("res", _set([3, "category_id"], 987654), ["record 3", "unknown category_id 987654"]),
    "duplicate_image": ("gt", _append_copy("images"), ["images[3]", "duplicate image id"]),
    "duplicate_annotation": ("gt", _append_copy("annotations"), ["duplicate annotation id"]),
    "duplicate_category": ("gt", _append_copy("categories"), ["categories[3]", "duplicate category id"]),
    "annotation_unknown_image": ("gt", _set(["annotations", 0, "image_id"], 987654321),
                                 ["annotations[0]", "unknown image_id"]),
    "annotation_unknown_category": ("gt", _set(["annotations", 0, "category_id"], 987654),
                                    ["annotations[0]", "unknown category_id"]),
    "annotation_without_area": ("gt", _pop(["annotations", 0, "area"]),
                                ["annotations[0]", "missing field 'area'"]),
    "annotation_without_bbox": ("gt", _pop(["annotations", 0, "bbox"]),
                                ["annotations[0]", "missing field 'bbox'"]),
    "iscrowd_not_a_number": ("gt", _set(["annotations", 0, "iscrowd"], "x"), ["annotations[0]", "iscrowd"]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_json_values(tmp_path, capsys, gt, res, name):
    which, mutate, words = BAD[name]
    g = write(tmp_path, "gt.json", mutate(copy.deepcopy(gt)) if which == "gt" else gt)
    r = write(tmp_path, "res.json", mutate(copy.deepcopy(res)) if which == "res" else res)
    cli_error(capsys, ["coco", str(g), str(r)], str(g if which == "gt" else r), *words)


RAW = {
    "empty_results_file": ("res", lambda b: b"", ["invalid JSON"]),
    "empty_gt_file": ("gt", lambda b: b"", ["invalid JSON"]),
    "truncated_results": ("res", lambda b: b[: len(b) // 2], ["invalid JSON"]),
    "truncated_gt": ("gt", lambda b: b[: len(b) // 2], ["invalid JSON"]),
    "nan_score": ("res", lambda b: b.replace(b'"score": ', b'"score": NaN, "x": ', 1), ["invalid JSON"]),
    "infinity_in_bbox": ("res", lambda b: b.replace(b'"bbox": [', b'"bbox": [Infinity, ', 1),
                         ["invalid JSON"]),
    "overflowing_score": ("res", lambda b: b.replace(b'"score": ', b'"score": 1e999, "x": ', 1),
                          ["invalid JSON", "infinity"]),
    "latin1_gt": ("gt", lambda b: b.replace(b'"images"', b'"info2": "caf\xe9", "images"', 1),
                  ["invalid JSON"]),
    "utf16_results": ("res", lambda b: b.decode().encode("utf-16"), ["invalid JSON"]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RAW))
def test_bad_json_files(tmp_path, capsys, gt, res, name):
    which, mutate, words = RAW[name]
    gb, rb = json.dumps(gt).encode(), json.dumps(res).encode()
    g = write(tmp_path, "gt.json", mutate(gb) if which == "gt" else gb)
    r = write(tmp_path, "res.json", mutate(rb) if which == "res" else rb)
    cli_error(capsys, ["coco", str(g), str(r)], str(g if which == "gt" else r), *words)


def test_unreadable_files(tmp_path, capsys, gt, res):
    r = write(tmp_path, "res.json", res)
    cli_error(capsys, ["coco", str(tmp_path / "missing.json"), str(r)], "missing.json", "No such file")
    cli_error(capsys, ["coco", str(tmp_path), str(r)], str(tmp_path), "Is a directory")


def test_tolerated_inputs(tmp_path, capsys, gt, res):
    g = write(tmp_path, "gt.json", gt)
    # An empty results list is a valid evaluation (pycocotools crashes on it).
    doc = run_json(capsys, str(g), str(write(tmp_path, "empty.json", [])))
    assert doc["AP"] == 0.0 and all(v in (0.0, -1.0) for v in doc["stats"])
    # Windows line endings and indentation: the same numbers.
    clean = run_json(capsys, str(g), str(write(tmp_path, "res.json", res)))
    crlf = write(tmp_path, "crlf.json", json.dumps(res, indent=1).replace("\n", "\r\n").encode())
    assert run_json(capsys, str(g), str(crlf)) == clean
    # Annotation id 0: matched normally (pycocotools mis-scores it), and said so.
    g0 = copy.deepcopy(gt)
    g0["annotations"][0]["id"] = 0
    doc = run_json(capsys, str(write(tmp_path, "gt0.json", g0)), str(write(tmp_path, "res.json", res)))
    assert any("id 0" in w for w in doc["warnings"])


@pytest.mark.xfail(reason="open: the COCO reader refuses a UTF-8 BOM (orjson), VOC/.lab/results accept it")
def test_bom_is_accepted_like_the_other_protocols(tmp_path, capsys, gt, res):
    g = write(tmp_path, "gt.json", b"\xef\xbb\xbf" + json.dumps(gt).encode())
    r = write(tmp_path, "res.json", res)
    run_json(capsys, str(g), str(r))


@pytest.mark.xfail(reason="open: a key repeated in one JSON object is silently resolved (last wins)")
def test_duplicate_keys_are_refused(tmp_path, capsys, gt, res):
    g = write(tmp_path, "gt.json", gt)
    rb = json.dumps(res).encode().replace(b'"score": ', b'"score": 0.1, "score": ', 1)
    cli_error(capsys, ["coco", str(g), str(write(tmp_path, "res.json", rb))], "duplicate")


@pytest.mark.xfail(reason="open: float ids beyond int64 are cast to one value, so distinct ids can collide")
def test_ids_beyond_int64_are_refused(tmp_path, capsys, gt, res):
    g, r = copy.deepcopy(gt), copy.deepcopy(res)
    old = g["images"][0]["id"]
    g["images"][0]["id"] = 1e300
    for a in g["annotations"]:
        if a["image_id"] == old:
            a["image_id"] = 1e300
    for d in r:
        if d["image_id"] == old:
            d["image_id"] = 1e19  # another image: must not be matched to 1e300
    gp, rp = write(tmp_path, "gt.json", g), write(tmp_path, "res.json", r)
    cli_error(capsys, ["coco", str(gp), str(rp)], "image_id")
