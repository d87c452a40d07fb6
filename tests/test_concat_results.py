"""``deteval.io.coco.concat_results``: the one concatenation of results that the pieces of a large file (one
process or two) and the files and byte ranges of sharded reading use."""

import json
from itertools import pairwise

import numpy as np
import pytest
from _coco_cases import random_case, random_keypoints_case, random_segm_case, segm_case_without_boxes

from deteval.errors import ConfigError
from deteval.io.coco import (
    CocoResults,
    MaskBoxes,
    concat_results,
    load_coco_gt,
    load_coco_results,
    stored_boxes,
)
from deteval.run import coco as dist_coco

_COLUMNS = ("img", "cat", "score", "bbox", "area")


def _same(a: CocoResults, b: CocoResults) -> None:
    for name in _COLUMNS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.kind == b.kind and len(a) == len(b)
    assert (a.keypoints is None) == (b.keypoints is None)
    if a.keypoints is not None:
        assert np.array_equal(a.keypoints, b.keypoints)
    assert a.segmentation == b.segmentation
    assert (a.rles is None) == (b.rles is None)
    if a.rles is not None:
        assert [r["counts"] for r in a.rles] == [r["counts"] for r in b.rles]


def _split(dt: list, cuts: list[int]) -> list[list]:
    bounds = [0, *cuts, len(dt)]
    return [dt[lo:hi] for lo, hi in pairwise(bounds)]


@pytest.mark.parametrize(
    ("make", "iou_type"),
    [(random_case, "bbox"), (random_segm_case, "segm"), (random_keypoints_case, "keypoints")],
)
def test_parts_with_empty_ones_give_the_whole(make, iou_type):
    for seed in range(4):
        case = make(seed)
        g = load_coco_gt(case["gt"], keep_segmentation=iou_type == "segm")
        dt = case["dt"]
        if len(dt) < 3:
            continue
        whole = load_coco_results(dt, g, iou_type=iou_type)
        # empty pieces first, between and last (an empty keypoints part's matrix has no width)
        pieces = _split(dt, [0, 1, 1, len(dt) // 2, len(dt), len(dt)])
        parts = [load_coco_results(p, g, iou_type=iou_type) for p in pieces]
        assert any(len(p) == 0 for p in parts)
        if iou_type == "keypoints":
            empty = [p for p in parts if len(p) == 0]
            assert all(p.keypoints is not None and p.keypoints.shape[1] == 0 for p in empty)
        _same(concat_results(parts, whole.source), whole)


def test_all_parts_empty_and_no_parts():
    case = random_keypoints_case(0)
    g = load_coco_gt(case["gt"])
    empty = load_coco_results([], g, iou_type="keypoints")
    r = concat_results([empty, empty])
    assert len(r) == 0 and r.bbox.shape == (0, 4) and r.keypoints is not None
    with pytest.raises(ValueError, match="no results"):
        concat_results([])


def test_warnings_skipped_and_sources_kept():
    case = random_case(2)
    g = load_coco_gt(case["gt"])
    dt = case["dt"]
    bad = {**dt[0], "image_id": -12345}  # not in the ground truth: left out under on_error="skip"
    a = load_coco_results([bad, *dt[:3]], g, on_error="skip")
    b = load_coco_results([], g)
    c = load_coco_results([*dt[3:], bad, bad], g, on_error="skip")
    assert a.skipped == 1 and c.skipped == 2 and a.warnings and c.warnings
    a.source, b.source, c.source = "a.json", "b.json", "c.json"
    r = concat_results([a, b, c])
    assert r.skipped == 3
    assert r.warnings == a.warnings + c.warnings
    assert r.source == "a.json, b.json, c.json"
    assert concat_results([a, b, c], "all").source == "all"
    _same(r, load_coco_results(dt, g))


def test_mask_boxes_stay_lazy_and_equal_the_whole():
    case = segm_case_without_boxes(3)
    g = load_coco_gt(case["gt"], keep_segmentation=True)
    dt = case["dt"]
    parts = [load_coco_results(p, g, iou_type="segm") for p in _split(dt, [0, len(dt) // 2, len(dt)])]
    assert any(len(p) == 0 for p in parts)
    r = concat_results(parts)
    assert isinstance(stored_boxes(r), MaskBoxes)  # (the empty parts' boxes do not make them)
    whole = load_coco_results(dt, g, iou_type="segm")
    _same(r, whole)  # (reading r.bbox computes the boxes now)
    assert isinstance(stored_boxes(r), np.ndarray)


def test_sharded_reading_uses_the_one_concatenation(tmp_path):
    """Several files read as one through the distributed module: the same columns, skipped counts and
    warnings as the parts."""
    case = random_keypoints_case(1)
    g = load_coco_gt(case["gt"])
    dt = case["dt"]
    files = []
    for i, piece in enumerate(_split(dt, [len(dt) // 3, len(dt) // 2])):
        f = tmp_path / f"dt{i}.json"
        f.write_text(json.dumps(piece))
        files.append(f)
    r = dist_coco.load_results_files(files, g, iou_type="keypoints")
    _same(r, load_coco_results(dt, g, iou_type="keypoints"))
    assert r.source == ", ".join(str(f) for f in files)
    assert dist_coco.concat_results is concat_results


@pytest.mark.parametrize(
    ("make", "iou_type"), [(random_segm_case, "segm"), (random_keypoints_case, "keypoints")]
)
def test_an_empty_file_among_several_holds_any_kind(tmp_path, make, iou_type):
    """A rank without detections writes ``[]``, which reads as the bbox branch (no first record): among
    segm or keypoints files it is the empty part of their concatenation, not a file of another kind."""
    from deteval.detection.coco import evaluate_coco

    case = make(1)
    g, d, e = tmp_path / "gt.json", tmp_path / "dt.json", tmp_path / "empty.json"
    g.write_text(json.dumps(case["gt"]))
    d.write_text(json.dumps(case["dt"]))
    e.write_text("[]")
    ref = evaluate_coco(g, d, iou_type=iou_type).stats
    for files in ([d, e], [e, d, e]):
        assert np.array_equal(evaluate_coco(g, files, iou_type=iou_type).stats, ref)
        for range_bytes in (300, 1 << 20):
            ev = dist_coco.evaluate_coco_sharded(
                g, files, shards=2, iou_type=iou_type, range_bytes=range_bytes
            )
            assert np.array_equal(ev.stats, ref)
    if iou_type == "segm":  # (non-empty files of two kinds are still refused)
        bbox = tmp_path / "bbox.json"
        keys = ("image_id", "category_id", "score")
        bbox.write_text(json.dumps([{k: r[k] for k in keys} | {"bbox": [1, 2, 3, 4]} for r in case["dt"]]))
        with pytest.raises(ConfigError, match=r"different kinds of results \(bbox, segm\)"):
            evaluate_coco(g, [d, e, bbox], iou_type=iou_type)


def test_replace_keeps_mask_boxes_lazy(monkeypatch):
    """``CocoResults.replace``: a copy with other values whose masks' boxes are still to be computed (as the
    distributed reading hands its results on); ``dataclasses.replace`` computes them (it reads every field)."""
    import dataclasses

    case = segm_case_without_boxes(3)
    g = load_coco_gt(case["gt"], keep_segmentation=True)
    whole = load_coco_results(case["dt"], g, iou_type="segm")
    assert whole.bbox.shape == (len(whole), 4)  # (computed here, before counting)
    computed = []
    real = MaskBoxes.compute
    monkeypatch.setattr(MaskBoxes, "compute", lambda self: computed.append(1) or real(self))
    r = load_coco_results(case["dt"], g, iou_type="segm")
    c = r.replace(warnings=["w"], skipped=2)
    assert isinstance(stored_boxes(c), MaskBoxes) and isinstance(stored_boxes(r), MaskBoxes)
    assert c.warnings == ["w"] and c.skipped == 2 and r.warnings == [] and r.skipped == 0
    given = r.replace(bbox=np.zeros((len(r), 4)))
    assert not given.bbox.any() and isinstance(stored_boxes(r), MaskBoxes)
    plan = dist_coco._plan(g, dist_coco.CocoParams.from_options("segm"), 2)
    read = dist_coco._read_done(r, plan)
    assert sum(map(len, read.pieces)) == len(r)
    assert all(isinstance(stored_boxes(p), MaskBoxes) for p in read.pieces)
    assert not computed
    _same(c, whole)  # (reading c.bbox computes them now, the same boxes)
    assert computed == [1]
    dataclasses.replace(r)
    assert computed == [1, 1] and isinstance(stored_boxes(r), np.ndarray)
