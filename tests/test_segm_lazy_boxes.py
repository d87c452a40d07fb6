"""segm results without boxes: loadRes' ``toBbox`` boxes are computed when ``CocoResults.bbox`` is first read,
with loadRes' values, and a segm evaluation never computes them."""

import contextlib
import copy
import io
import json
import pickle

import numpy as np
import pytest
from _coco_cases import segm_case_without_boxes as _case_without_boxes
from pycocotools import mask as mask_utils

from deteval.detection.coco import evaluate_coco
from deteval.io import coco as coco_io
from deteval.io.coco import MaskBoxes, load_coco_gt, load_coco_results, stored_boxes
from deteval.io.coco import pieces as coco_pieces
from deteval.run import forked
from deteval.run.coco import evaluate_coco_sharded


def _loadres_boxes(case: dict) -> np.ndarray:
    from pycocotools.coco import COCO

    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = copy.deepcopy(case["gt"])
        cg.createIndex()
        cd = cg.loadRes(copy.deepcopy(case["dt"]))
    return np.array([cd.anns[i + 1]["bbox"] for i in range(len(case["dt"]))], dtype=np.float64)


@pytest.mark.parametrize("seed", [0, 7, 21])
def test_boxes_made_on_first_read_are_loadres_boxes(seed):
    case = _case_without_boxes(seed)
    g = load_coco_gt(case["gt"], keep_segmentation=True)
    r = load_coco_results(case["dt"], g, iou_type="segm")
    assert isinstance(stored_boxes(r), MaskBoxes)
    again = pickle.loads(pickle.dumps(r))  # (a forked child sends its part pickled, boxes not made)
    assert isinstance(stored_boxes(again), MaskBoxes)
    ref = _loadres_boxes(case)
    assert np.array_equal(r.bbox, ref) and np.array_equal(again.bbox, ref)
    assert isinstance(stored_boxes(r), np.ndarray)  # made once, then kept


def test_parts_stay_lazy_when_put_together():
    case = _case_without_boxes(3)
    g = load_coco_gt(case["gt"], keep_segmentation=True)
    dt = case["dt"]
    assert len(dt) >= 2
    half = len(dt) // 2
    parts = [
        load_coco_results(dt[:half], g, iou_type="segm"),
        load_coco_results(dt[half:], g, iou_type="segm"),
    ]
    whole = coco_io.concat_results(parts, "both")
    assert isinstance(stored_boxes(whole), MaskBoxes)
    assert np.array_equal(whole.bbox, _loadres_boxes(case))


def test_bbox_evaluation_of_mask_results_still_gets_boxes():
    case = _case_without_boxes(5)
    g = load_coco_gt(case["gt"])
    r = load_coco_results(case["dt"], g, iou_type="bbox")
    assert isinstance(stored_boxes(r), np.ndarray)
    assert np.array_equal(r.bbox, _loadres_boxes(case))


@pytest.mark.parametrize("processes", ["1", "2", "sharded"])
def test_segm_evaluation_never_computes_boxes(tmp_path, monkeypatch, processes):
    case = _case_without_boxes(11)
    ref = evaluate_coco(case["gt"], case["dt"], iou_type="segm").stats
    g, d = tmp_path / "gt.json", tmp_path / "dt.json"
    g.write_text(json.dumps(case["gt"]))
    d.write_text(json.dumps(case["dt"]))

    def refuse(*a):
        raise AssertionError("toBbox called")

    monkeypatch.setattr(mask_utils, "toBbox", refuse)
    if processes == "sharded":  # pieces cut by image shard and put together again stay lazy
        for shards, range_bytes in [(1, 1 << 20), (3, 300)]:
            ev = evaluate_coco_sharded(g, d, shards=shards, iou_type="segm", range_bytes=range_bytes)
            assert np.array_equal(ev.stats, ref)
        return
    monkeypatch.setenv(forked.ENV_PROCESSES, processes)
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 512)  # (two cores: the file is read in pieces, by both)
    from deteval.run import coco_two_cores as coco_eval

    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    monkeypatch.setattr(coco_eval, "FORK_MASKS", 0)
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    read = []
    real = coco_eval.segm_with_pending_tail
    monkeypatch.setattr(coco_eval, "segm_with_pending_tail", lambda *a: read.append(real(*a)) or read[-1])
    assert np.array_equal(evaluate_coco(str(g), str(d), iou_type="segm").stats, ref)
    if processes == "2" and forked.can_fork():
        assert len(read) == 1 and read[0] is not None  # (read in two parts, put together lazily)
    assert np.array_equal(evaluate_coco(case["gt"], case["dt"], iou_type="segm").stats, ref)
