"""A large COCO ground-truth file is read in pieces; the pieces apply exactly the whole-file rules (issue 12,
item 12). ``CHUNK_BYTES`` is forced small so that every damage position is tried, boundaries included: the
piecewise load gives the same error (class, file, record, reason) or the same result as the whole-file load.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from deteval.errors import DetevalError, ValidationError
from deteval.io.coco import load_coco_gt
from deteval.io.coco import pieces as coco_pieces
from deteval.run.coco import evaluate_coco

DATA = Path(__file__).resolve().parent / "data" / "coco"
GT = json.loads((DATA / "coco_fruits" / "fruit_val_coco_format.json").read_text())
KP_GT = json.loads((DATA / "coco_keypoints" / "gt_dataset.json").read_text())
KP_RES = json.loads((DATA / "coco_keypoints" / "dt_dataset.json").read_text())


def _outcome(path: str, monkeypatch, chunk: int, **kw):
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", chunk)
    try:
        g = load_coco_gt(path, **kw)
    except DetevalError as exc:
        return (type(exc).__name__, str(exc.file), exc.record, exc.reason)
    return (
        "ok",
        g.ann_id.tolist(),
        g.img.tolist(),
        g.cat.tolist(),
        # (NaN past a shorter record's keypoints: None, so that the lists compare equal)
        None if g.keypoints is None else [[None if v != v else v for v in r] for r in g.keypoints.tolist()],
    )


def _pieces_equal_whole(tmp_path, monkeypatch, gt: dict, **kw):
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt, indent=1))
    assert len(path.read_bytes()) > 2 * 400  # really read in pieces below
    whole = _outcome(str(path), monkeypatch, 1 << 30, **kw)
    for chunk in (400, 700):
        assert _outcome(str(path), monkeypatch, chunk, **kw) == whole
    return whole


@pytest.mark.slow
@pytest.mark.parametrize("key", ["image_id", "category_id"])
def test_integer_ids_then_string_ids_refused_as_in_a_small_file(tmp_path, monkeypatch, key):
    n = len(GT["annotations"])
    for j in range(n):
        gt = copy.deepcopy(GT)
        for a in gt["annotations"][j:]:
            a[key] = str(a[key])
        outcome = _pieces_equal_whole(tmp_path, monkeypatch, gt)
        if j:  # a mix: refused at the first string id
            assert outcome[0] == "InputFormatError" and outcome[2] == f"annotations[{j}]", outcome
            assert f"{key} must be an integer" in outcome[3]
        gt = copy.deepcopy(GT)  # and string ids first, integers after
        for a in gt["annotations"][:j]:
            a[key] = str(a[key])
        outcome = _pieces_equal_whole(tmp_path, monkeypatch, gt)
        if j:
            assert outcome[0] == "InputFormatError" and outcome[2] == "annotations[0]", outcome


@pytest.mark.slow
def test_string_annotation_ids_refused_alike(tmp_path, monkeypatch):
    for j in range(len(GT["annotations"])):
        gt = copy.deepcopy(GT)
        for a in gt["annotations"][j:]:
            a["id"] = str(a["id"])
        outcome = _pieces_equal_whole(tmp_path, monkeypatch, gt)
        assert outcome[2] == f"annotations[{j}]" and "annotation id must be an integer" in outcome[3], outcome


def test_keypoint_count_change_at_any_position_names_file_and_record(tmp_path, monkeypatch):
    n = len(KP_GT["annotations"])
    for j in range(1, n):
        gt = copy.deepcopy(KP_GT)
        for a in gt["annotations"][j:]:
            a["keypoints"] = a["keypoints"][:-3]
        # read as several skeleton sizes, the same whole and in pieces; the evaluation refuses the first
        # record of its category with another count than the category's 17 keypoint names
        assert _pieces_equal_whole(tmp_path, monkeypatch, gt, need_keypoints=True)[0] == "ok"
        for chunk in (1 << 30, 400):
            monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", chunk)
            with pytest.raises(ValidationError) as exc:
                evaluate_coco(tmp_path / "gt.json", KP_RES, iou_type="keypoints")
            assert exc.value.file == str(tmp_path / "gt.json") and exc.value.record == f"annotations[{j}]"
            assert "must have 3·K = 51 numbers" in exc.value.reason and "got 48" in exc.value.reason


def test_valid_files_load_identically_in_pieces(tmp_path, monkeypatch):
    assert _pieces_equal_whole(tmp_path, monkeypatch, GT)[0] == "ok"
    assert _pieces_equal_whole(tmp_path, monkeypatch, KP_GT, need_keypoints=True)[0] == "ok"
    gt = copy.deepcopy(GT)
    for a in gt["annotations"]:
        a["image_id"] = str(a["image_id"])
    for im in gt["images"]:
        im["id"] = str(im["id"])
    assert _pieces_equal_whole(tmp_path, monkeypatch, gt)[0] == "ok"  # all strings: valid
