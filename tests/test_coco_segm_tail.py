"""A large segm results file read on two cores from the start (deteval.io.coco_segm_tail): the child's tail,
read without the ground truth, put together with the head gives the one-process columns exactly; whatever
the child does not read as the one-process loader would (a given box, a polygon, an uncompressed RLE, a
mask of another size than its image's, an unknown id) makes it decline, and the evaluation is then the
one-process one."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from test_coco_two_cores import _data, _outcome, _same, _segm_data

import deteval.detection.coco as coco_eval
import deteval.io.coco as coco_io
from deteval.detection.coco_params import CocoParams
from deteval.distributed import forked
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco_segm_tail import segm_tail, segm_with_pending_tail, segm_with_tail


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(coco_io, "CHUNK_BYTES", 2048)


def _files(tmp_path, gt: dict, dets: list[dict]):
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    return str(tmp_path / "gt.json"), str(tmp_path / "dt.json")


@pytest.mark.parametrize("seed", [0, 1])
def test_head_and_tail_give_the_one_process_columns(tmp_path, small_pieces, seed):
    gt, dets = _segm_data(seed)
    g_path, d_path = _files(tmp_path, gt, dets)
    g = load_coco_gt(g_path, keep_segmentation=True)
    one = load_coco_results(d_path, g, iou_type="segm")
    size = (tmp_path / "dt.json").stat().st_size
    for start in (0, size // 3, size // 2, size + 1):
        tail = segm_tail(d_path, start)
        assert tail is not None
        two = segm_with_tail(d_path, g, start, lambda tail=tail: tail)
        assert two is not None
        for f in ("img", "cat", "score", "area"):
            a, b = getattr(one, f), getattr(two, f)
            assert a.dtype == b.dtype and np.array_equal(a, b), f
        assert two.segmentation == one.segmentation and two.rles == one.rles
        assert two.kind == one.kind == "segm" and two.source == one.source
        assert np.array_equal(two.bbox, one.bbox)  # (the masks' boxes, made when read)
        assert (len(tail) > 0) == (start < size)  # (a start past the end: the head is the whole file)


def _given_box(d: dict) -> None:
    d["bbox"] = [1.0, 2.0, 3.0, 4.0]


def _polygon(d: dict) -> None:
    d["segmentation"] = [[10.0, 10.0, 40.0, 10.0, 40.0, 30.0]]


def _uncompressed(d: dict) -> None:
    d["segmentation"] = {"size": [400, 500], "counts": [1000, 50, 400 * 500 - 1050]}


def _other_size(d: dict) -> None:
    d["segmentation"] = {"size": [400, 501], "counts": d["segmentation"]["counts"]}


def _unknown_image(d: dict) -> None:
    d["image_id"] = 987654


def _bad_runs(d: dict) -> None:
    d["segmentation"] = {"size": [400, 500], "counts": d["segmentation"]["counts"][:-2]}


@pytest.mark.parametrize(
    "change,valid",
    [
        (_given_box, True),
        (_polygon, True),
        (_uncompressed, True),
        (_other_size, False),
        (_unknown_image, False),
        (_bad_runs, False),
    ],
)
def test_what_the_tail_does_not_read_is_declined(tmp_path, monkeypatch, small_pieces, change, valid):
    gt, dets = _segm_data(2)
    change(dets[-3])  # (in the child's tail)
    g_path, d_path = _files(tmp_path, gt, dets)
    g = load_coco_gt(g_path, keep_segmentation=True)
    start = (tmp_path / "dt.json").stat().st_size // 2
    tail = segm_tail(d_path, start)
    assert tail is None or segm_with_tail(d_path, g, start, lambda: tail) is None
    # the evaluation then reads the file in one process: the same numbers, or the same error
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    one = _outcome(g_path, d_path, monkeypatch, "1", "segm")
    two = _outcome(g_path, d_path, monkeypatch, "", "segm")
    assert (one[0] == "ok") == valid, one
    _same(one, two)


def test_split_byte_leaves_this_process_less_the_ground_truth():
    assert coco_eval.segm_split_byte(20_000_000, 0) == int(20_000_000 * coco_eval.SEGM_EARLY_SHARE)
    assert (
        coco_eval.segm_split_byte(20_000_000, 4_000_000)
        == int(20_000_000 * coco_eval.SEGM_EARLY_SHARE) - 2_000_000
    )
    assert coco_eval.segm_split_byte(1_000_000, 40_000_000) == 0


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_category_halves_written_in_shared_memory_with_other_params(tmp_path, monkeypatch, iou_type):
    """The halves of the categories write their precision, recall and scores into memory shared with the
    child (coco._shared_arrays, segm; bbox sends the child's through the pipe): shaped from the parameters,
    so other thresholds, recall levels, area ranges and maxDets give the one-process numbers too."""
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(coco_eval, "FORK_DETECTIONS", 0)
    monkeypatch.setattr(coco_eval, "FORK_MASKS", 0)
    used = []
    real = coco_eval._half_into
    monkeypatch.setattr(coco_eval, "_half_into", lambda *a: used.append(real(*a)) or used[-1])
    gt, dets = _segm_data(5) if iou_type == "segm" else _data(5)
    g_path, d_path = _files(tmp_path, gt, dets)
    params = CocoParams(
        iou_type=iou_type,
        iou_thrs=np.array([0.3, 0.5, 0.75]),
        rec_thrs=np.linspace(0, 1, 11),
        max_dets=(1, 10),
        area_rng=((0.0, 1e10), (0.0, 2000.0)),
        area_lbl=("all", "small"),
    )
    one = _outcome(g_path, d_path, monkeypatch, "1", iou_type, params=params)
    two = _outcome(g_path, d_path, monkeypatch, "", iou_type, params=params)
    assert len(used) == (iou_type == "segm") and one[1].shape == (3, 11, 7 if iou_type == "bbox" else 5, 2, 2)
    _same(one, two)


PROBE = """
import os, sys
from deteval.detection.coco import evaluate_coco
stats = evaluate_coco(sys.argv[1], sys.argv[2], iou_type="segm").stats
print(stats[0] > 0, "numpy.ma" in sys.modules)
"""


@pytest.mark.parametrize("processes", ["1", "2"])
def test_segm_evaluation_imports_no_numpy_ma(tmp_path, processes):
    """numpy 2's first ``np.unique`` imports numpy.ma (about 6 ms in a fresh process): a segm evaluation of
    valid input calls none (checked in a fresh interpreter, where nothing has imported it yet)."""
    import subprocess
    import sys

    g_path, d_path = _files(tmp_path, *_segm_data(7))
    env = {**os.environ, forked.ENV_PROCESSES: processes}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, g_path, d_path], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["True", "False"], out.stdout + out.stderr


def test_pending_masks_made_per_category_then_all(tmp_path, small_pieces):
    """The tail's mask dicts left to make (segm_with_pending_tail): a half of the categories makes only its
    records' (where None stood), the rest then make the one-process columns."""
    gt, dets = _segm_data(8)
    g_path, d_path = _files(tmp_path, gt, dets)
    g = load_coco_gt(g_path, keep_segmentation=True)
    one = load_coco_results(d_path, g, iou_type="segm")
    start = (tmp_path / "dt.json").stat().st_size // 3
    tail = segm_tail(d_path, start)
    got = segm_with_pending_tail(d_path, g, start, lambda: tail)
    assert got is not None
    res, pending = got
    rows = pending.rows
    assert rows.size and all(res.rles[i] is None and res.segmentation[i] is None for i in rows.tolist())
    head = np.setdiff1d(np.arange(len(res)), rows)
    assert all(res.rles[i] == one.rles[i] for i in head.tolist())
    half = np.zeros(g.cat_ids.shape[0], dtype=bool)
    half[::2] = True
    pending.fill(res, half)
    made = half[res.cat[rows]]
    assert made.any() and not made.all()
    for i, m in zip(rows.tolist(), made.tolist()):
        assert (res.rles[i] is not None) == m and (res.segmentation[i] is not None) == m
        if m:
            assert res.rles[i] == one.rles[i] and res.segmentation[i] is res.rles[i]
    pending.fill(res)
    assert res.rles == one.rles and res.segmentation == one.segmentation
    assert np.array_equal(res.bbox, one.bbox)


def test_a_matching_child_that_dies_leaves_the_masks_to_make_here(tmp_path, monkeypatch, small_pieces):
    """The tail's masks are made by each half of the categories after the fork; when the child fails, this
    process makes the rest and matches everything itself: the one-process numbers."""
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    monkeypatch.setattr(coco_eval, "FORK_MASKS", 0)
    gt, dets = _segm_data(9)
    g_path, d_path = _files(tmp_path, gt, dets)
    one = _outcome(g_path, d_path, monkeypatch, "1", "segm")
    parent = os.getpid()
    real_half = coco_eval._half
    filled = []
    real_fill = coco_eval.PendingMasks.fill

    def dying(*args):
        if os.getpid() != parent:
            os.kill(os.getpid(), 9)
        return real_half(*args)

    def spy(self, res, categories=None):
        filled.append(categories is None)
        return real_fill(self, res, categories)

    monkeypatch.setattr(coco_eval, "_half", dying)
    monkeypatch.setattr(coco_eval.PendingMasks, "fill", spy)
    two = _outcome(g_path, d_path, monkeypatch, "", "segm")
    assert filled == [False, True]  # this half's masks, then the rest once the child failed
    _same(one, two)
