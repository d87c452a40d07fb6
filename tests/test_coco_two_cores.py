"""bbox, segm and keypoints evaluation on two cores (forked children, issue 15) give the one-process numbers, counts, warnings
and errors exactly. The size thresholds are forced small so that a test-sized input takes the forked paths;
``DETEVAL_PROCESSES=1`` gives the one-process reference."""

from __future__ import annotations

import json
import os
from unittest.mock import patch

import numpy as np
import pytest

import deteval.detection.coco.parts as coco_parts
import deteval.io.coco as coco_io
import deteval.run.coco as run_coco
import deteval.run.coco_two_cores as coco_eval
import deteval.run.forked as forked
from deteval.detection.coco import evaluate_coco
from deteval.errors import ConfigError, DetevalError
from deteval.io.coco import ground_truth as coco_gt
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import typed as coco_typed
from deteval.run import coco_reading


def _data(seed: int = 0, n_img: int = 40, n_cat: int = 7) -> tuple[dict, list[dict]]:
    rng = np.random.default_rng(seed)
    img_ids = rng.choice(np.arange(1, 1000), n_img, replace=False)
    cat_ids = np.sort(rng.choice(np.arange(1, 100), n_cat, replace=False))
    anns, dets = [], []
    for i in range(n_img * 6):
        x, y = rng.uniform(0, 300, 2).round(1)
        w, h = rng.uniform(2, 150, 2).round(1)
        img, cat = int(rng.choice(img_ids)), int(rng.choice(cat_ids))
        anns.append(
            {
                "id": i + 1,
                "image_id": img,
                "category_id": cat,
                "bbox": [float(x), float(y), float(w), float(h)],
                "area": float(round(w * h * rng.uniform(0.5, 1), 2)),
                "iscrowd": int(rng.random() < 0.05),
            }
        )
        for _ in range(int(rng.poisson(3))):
            j = rng.normal(0, 0.1, 4) * [w, h, w, h]
            dets.append(
                {
                    "image_id": img,
                    "category_id": cat if rng.random() < 0.9 else int(rng.choice(cat_ids)),
                    "bbox": [
                        float(v) for v in np.round([x + j[0], y + j[1], abs(w + j[2]), abs(h + j[3])], 2)
                    ],
                    "score": float(rng.choice([0.25, 0.5, 0.75, *rng.random(3).round(3)])),  # ties too
                }
            )
    for _ in range(n_img * 10):  # background hits
        dets.append(
            {
                "image_id": int(rng.choice(img_ids)),
                "category_id": int(rng.choice(cat_ids)),
                "bbox": [float(v) for v in rng.uniform(1, 200, 4).round(2)],
                "score": round(float(rng.random()), 4),
            }
        )
    gt = {
        "images": [{"id": int(i), "height": 400, "width": 500} for i in img_ids],
        "categories": [{"id": int(c), "name": f"c{c}"} for c in cat_ids],
        "annotations": anns,
    }
    return gt, dets


@pytest.fixture
def small_thresholds(monkeypatch):
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)  # (the machine may be busy)
    if not forked.can_fork():  # (checked here: an earlier test may have left a thread running)
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    monkeypatch.setattr(coco_eval, "FORK_DETECTIONS", 0)
    monkeypatch.setattr(coco_eval, "FORK_MASKS", 0)
    monkeypatch.setattr(coco_eval, "FORK_KEYPOINTS", 0)
    calls = []
    real = coco_eval.fork_call

    def counting(fn, *args):
        child = real(fn, *args)
        calls.append(child is not None)
        return child

    monkeypatch.setattr(coco_eval, "fork_call", counting)
    return calls


def _outcome(gt_path, dt_path, monkeypatch, processes: str, iou_type: str = "bbox", **kw):
    monkeypatch.setenv(forked.ENV_PROCESSES, processes)
    try:
        e = evaluate_coco(str(gt_path), str(dt_path), iou_type=iou_type, **kw)
    except DetevalError as exc:
        return ("error", type(exc).__name__, str(exc.file), exc.record, exc.reason)
    return ("ok", e.precision, e.recall, e.scores, e.stats, e.counts, e.warnings)


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a == b
        return
    for x, y in zip(a[1:5], b[1:5]):
        assert x.shape == y.shape and np.array_equal(x, y)
    assert a[5] == b[5] and a[6] == b[6]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_cores_give_the_one_process_numbers(tmp_path, monkeypatch, small_thresholds, seed):
    gt, dets = _data(seed)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    assert not any(small_thresholds)
    small_thresholds.clear()
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert small_thresholds == [True, True]  # the results tail, then the category halves
    _same(one, two)
    assert one[4][0] > 0.05  # a real evaluation (some matches)
    # a category subset and maxDets below the detections per group go through the halves as well
    params = {"cat_ids": [c["id"] for c in gt["categories"][1:5]], "max_dets": [1, 3, 100]}
    _same(
        _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1", params=params),
        _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "", params=params),
    )


DAMAGE = [
    ("bbox", [1.0, 2.0, -3.0, 4.0]),
    ("bbox", [1.0, 2.0, 3.0]),
    ("bbox", None),
    ("score", "0.5"),
    ("score", True),
    ("image_id", 123456),
    ("image_id", "7"),
    ("category_id", 4242),
    ("category_id", 1.5),
]


@pytest.mark.slow
@pytest.mark.parametrize("key,value", DAMAGE)
def test_a_bad_record_anywhere_gives_the_one_process_error(
    tmp_path, monkeypatch, small_thresholds, key, value
):
    gt, dets = _data(3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    n = len(dets)
    for j in (0, n // 3, n // 2, n - 1):  # the parent's head, the child's tail, the last record
        bad = [dict(d) for d in dets]
        bad[j][key] = value
        if j == n // 2:  # and a second fault earlier in the child's part: the first one is named
            bad[n // 2 - 5]["category_id"] = 4242
        (tmp_path / "dt.json").write_text(json.dumps(bad))
        one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
        two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
        assert one[0] == "error"
        _same(one, two)


@pytest.mark.slow
def test_duplicate_key_and_broken_json_in_the_tail(tmp_path, monkeypatch, small_thresholds):
    gt, dets = _data(4)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    text = json.dumps(dets)
    for broken in (
        text[: len(text) * 3 // 4] + text[len(text) * 3 // 4 :].replace('"score"', '"score": 1, "score"', 1),
        text[: len(text) * 3 // 4] + text[len(text) * 3 // 4 :].replace("}, {", "}, {{", 1),
    ):
        (tmp_path / "dt.json").write_text(broken)
        one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
        assert one[0] == "error"
        _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))


def test_a_bad_ground_truth_is_reported_before_the_results(tmp_path, monkeypatch, small_thresholds):
    gt, dets = _data(5)
    gt["annotations"][3]["area"] = -1.0
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    dets[-1]["score"] = None
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert two[0] == "error" and two[3] == "annotations[3]"
    _same(_outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1"), two)


def _dies_in_a_child():
    """A function that ends a forked child at once (and must never run in this process)."""
    parent = os.getpid()

    def dying(*args):
        if os.getpid() != parent:
            os._exit(3)
        raise AssertionError("runs in the child only")

    return dying


@pytest.mark.slow
def test_a_child_that_dies_is_replaced_by_this_process(tmp_path, monkeypatch, small_thresholds):
    gt, dets = _data(6)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    parent = os.getpid()
    monkeypatch.setattr(coco_eval, "results_tail", _dies_in_a_child())
    real_half = coco_eval.accumulate_categories

    def half(*args):
        if os.getpid() != parent:
            os.kill(os.getpid(), 9)
        return real_half(*args)

    monkeypatch.setattr(coco_eval, "accumulate_categories", half)
    small_thresholds.clear()
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert small_thresholds == [True, True]
    _same(one, two)


def _gt_larger(tmp_path, seed: int) -> tuple[dict, list[dict]]:
    """A ground truth file larger than the results file: the child reads the first annotation pieces too."""
    gt, dets = _data(seed, n_img=60)
    return gt, dets[: len(dets) // 12]


def _spy_gt_head(monkeypatch) -> list[bool]:
    """Whether each ground truth read with a child's head used it (True) or fell back to reading alone."""
    used: list[bool] = []
    real = coco_gt.gt_in_pieces

    def spy(*args):
        out = real(*args)
        if len(args) > 4 and args[4] is not None:
            used.append(out is not None)
        return out

    monkeypatch.setattr(coco_gt, "gt_in_pieces", spy)
    return used


def _shared_as_one_process(tmp_path, monkeypatch, small_thresholds):
    """The one-process outcome, after checking that two cores (the ground truth shared) give it too."""
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    used = _spy_gt_head(monkeypatch)
    small_thresholds.clear()
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert small_thresholds == [True, True] and used == [True]
    _same(one, two)
    return one


def test_a_ground_truth_larger_than_the_results_is_shared_with_the_child(
    tmp_path, monkeypatch, small_thresholds
):
    gt, dets = _gt_larger(tmp_path, 11)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    assert (tmp_path / "gt.json").stat().st_size > 2 * (tmp_path / "dt.json").stat().st_size
    one = _shared_as_one_process(tmp_path, monkeypatch, small_thresholds)
    assert one[4][0] > 0.02  # a real evaluation (a fifth of the objects have a detection)


@pytest.mark.slow
def test_a_large_ground_truth_with_a_small_results_file_is_shared(tmp_path, monkeypatch, small_thresholds):
    """Results too small for two cores (and to cut in pieces): the child reads half of the ground truth."""
    gt, dets = _gt_larger(tmp_path, 14)
    dets = dets[:20]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", (tmp_path / "gt.json").stat().st_size)
    assert (tmp_path / "dt.json").stat().st_size < 2 * coco_pieces.CHUNK_BYTES
    one = _shared_as_one_process(tmp_path, monkeypatch, small_thresholds)
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", (tmp_path / "gt.json").stat().st_size + 1)
    small_thresholds.clear()
    _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))
    assert small_thresholds == [True]  # both files below the size: the category halves only


# (a byte of results costs w bytes of ground truth: orjson, msgspec)
@pytest.mark.parametrize("w", [1.0, 0.5])
def test_split_reading_balances_the_bytes(w):
    chunk = coco_pieces.CHUNK_BYTES
    h = w * coco_reading.HEAD_SPLIT_COST  # (the parent maps the head's ids; the child's columns reach it)
    for results, gt in ((30 * chunk, 10 * chunk), (30 * chunk, 0)):  # the parent: ground truth + head
        start, head = coco_reading.split_reading(results, gt, w)
        assert head == 0 and abs(gt + h * start - h * (results - start)) <= 2
    # (the first piece stays here; results cheaper to parse: the child parses them all)
    assert coco_reading.split_reading(3 * chunk, 2 * chunk, w) == ((chunk, 0) if w == 1 else (0, 0))
    # a costlier ground truth: the child's head of it and all the results against the rest and the hand-over
    for results, gt in ((20 * chunk, 40 * chunk), (30 * chunk, 16 * chunk)):
        start, head = coco_reading.split_reading(results, gt, w)
        if gt <= w * results:
            continue
        handover = int(results * coco_reading.HANDOVER_COST)
        assert start == 0 and abs((gt - head + handover) - (head + w * results)) <= 2
    assert coco_reading.split_reading(chunk, 40 * chunk, w) == (
        chunk,
        int((40 + w) * chunk) // 2,
    )  # results uncut
    assert coco_reading.split_reading(chunk, 3 * chunk, w) == (
        chunk,
        chunk,
    )  # a piece of the ground truth stays here
    with patch.object(coco_typed, "_DECODER", None):
        assert coco_reading.results_byte_cost() == 1.0
    assert coco_reading.results_byte_cost() == (0.5 if coco_typed.typed_decoding() else 1.0)
    # a ground truth read in pieces has its annotations decoded by type too: a byte costs about the same
    assert coco_reading.results_byte_cost(2 * coco_pieces.CHUNK_BYTES) == 1.0
    assert coco_reading.results_byte_cost(2 * coco_pieces.CHUNK_BYTES - 1) == (
        0.5 if coco_typed.typed_decoding() else 1.0
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "key,value", [("area", -1.0), ("image_id", 98765), ("image_id", "7"), ("bbox", [1, 2, 3]), ("id", 1)]
)
def test_a_bad_annotation_in_either_share_gives_the_one_process_error(
    tmp_path, monkeypatch, small_thresholds, key, value
):
    gt, dets = _gt_larger(tmp_path, 12)
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    n = len(gt["annotations"])
    for j in (2, n // 2, n - 1):  # the child's first piece, the parent's pieces, the last record
        bad = json.loads(json.dumps(gt))
        bad["annotations"][j][key] = value
        (tmp_path / "gt.json").write_text(json.dumps(bad))
        one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
        assert one[0] == "error" and one[3].startswith("annotations[")
        _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))


@pytest.mark.slow
def test_a_child_that_dies_reading_the_ground_truth_is_replaced(tmp_path, monkeypatch, small_thresholds):
    gt, dets = _gt_larger(tmp_path, 13)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    monkeypatch.setattr(coco_eval, "gt_head", _dies_in_a_child())
    used = _spy_gt_head(monkeypatch)
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert used == [False]
    _same(one, two)


def _spy_starts(monkeypatch) -> list[int]:
    """The byte from which each two-core bbox results read left the results to the child."""
    starts: list[int] = []
    real = coco_eval.results_with_tail

    def spy(path, g, start, tail, *shared):
        starts.append(start)
        return real(path, g, start, tail, *shared)

    monkeypatch.setattr(coco_eval, "results_with_tail", spy)
    return starts


def _tail_columns(path, gt_path, start, shared):
    """The child's tail (read here) and the parent's results put together from it, with or without a
    TailBuffer."""
    g = coco_io.load_coco_gt(gt_path)
    tail = coco_io.results_tail(path, start, shared)
    return tail, coco_io.results_with_tail(path, g, start, lambda: tail, shared)


@pytest.mark.slow
@pytest.mark.parametrize("start_share", [0.0, 0.4])
def test_the_tail_columns_come_through_shared_memory(tmp_path, monkeypatch, start_share):
    """The child writes its columns into the TailBuffer and sends only their number of rows; the parent's
    results are the pipe's, column for column. A buffer too small for every piece (or a piece whose ids are
    not integers) sends them all through the pipe, those already written included."""
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)
    gt, dets = _data(3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    size = (tmp_path / "dt.json").stat().st_size
    start = int(size * start_share)
    piped, whole = _tail_columns(tmp_path / "dt.json", tmp_path / "gt.json", start, None)
    assert isinstance(piped[1], list) and piped[0] > 2
    buffer = coco_reading.TailBuffer(size - start)
    shared, via_buffer = _tail_columns(tmp_path / "dt.json", tmp_path / "gt.json", start, buffer)
    assert shared[0] == piped[0] and shared[1] == buffer.used == sum(len(c[0]) for c in piped[1])
    for name in ("img", "cat", "score", "bbox", "area"):
        assert np.array_equal(getattr(via_buffer, name), getattr(whole, name))
    small = coco_reading.TailBuffer((buffer.used - 2) * coco_reading.MIN_BBOX_RECORD_BYTES)
    assert small.rows == buffer.used - 1  # (the last record does not fit)
    fallback, via_pipe = _tail_columns(tmp_path / "dt.json", tmp_path / "gt.json", start, small)
    assert isinstance(fallback[1], list) and len(fallback[1]) == len(piped[1])
    for a, b in zip(fallback[1], piped[1]):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert np.array_equal(via_pipe.bbox, whole.bbox)
    assert buffer.columns(buffer.rows + 1) is None  # (a child claiming more rows than the buffer holds)
    if (
        start
    ):  # the head's rows written before the tail's: the results are the buffer's rows, the same numbers
        with_head = coco_reading.TailBuffer(size - start, start)
        tail, joined = _tail_columns(tmp_path / "dt.json", tmp_path / "gt.json", start, with_head)
        assert isinstance(tail[1], int) and with_head.base > 0
        assert np.shares_memory(joined.bbox, np.frombuffer(with_head.map, dtype=np.uint8))
        for name in ("img", "cat", "score", "bbox", "area"):
            assert np.array_equal(getattr(joined, name), getattr(whole, name))
        cramped = coco_reading.TailBuffer(size - start, start)
        cramped.base = 3  # (no room for the head: its columns are put together with the tail's as before)
        tail, joined = _tail_columns(tmp_path / "dt.json", tmp_path / "gt.json", start, cramped)
        assert isinstance(tail[1], int) and not np.shares_memory(
            joined.bbox, np.frombuffer(cramped.map, np.uint8)
        )
        for name in ("img", "cat", "score", "bbox", "area"):
            assert np.array_equal(getattr(joined, name), getattr(whole, name))
    # string image ids are not typed columns: through the pipe
    for d in dets:
        d["image_id"] = str(d["image_id"])
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    tail = coco_io.results_tail(tmp_path / "dt.json", start, coco_reading.TailBuffer(size))
    assert tail is not None and isinstance(tail[1], list)


@pytest.mark.slow
def test_two_cores_read_the_tail_through_shared_memory(tmp_path, monkeypatch, small_thresholds):
    gt, dets = _data(4)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    sent: list = []
    real = coco_eval._Share.results

    def spy(self):
        got = real(self)
        sent.append(None if got is None else got[1])
        return got

    monkeypatch.setattr(coco_eval._Share, "results", spy)
    _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))
    assert len(sent) == 1 and isinstance(sent[0], int) and sent[0] > 0

    def refused(*args):
        raise OSError("cannot map that much")

    monkeypatch.setattr(coco_eval, "TailBuffer", refused)  # (no buffer: the columns through the pipe)
    _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))
    assert len(sent) == 2 and isinstance(sent[1], list)


@pytest.mark.fast_cases(key=1)
@pytest.mark.parametrize("key,value", [(None, None), *DAMAGE[:6]])
def test_the_child_reads_every_result_when_the_ground_truth_costs_more(
    tmp_path, monkeypatch, small_thresholds, key, value
):
    """A ground truth costlier than the results: the child reads all of them (its first record's loadRes
    branch checked there), the parent none; the one-process numbers, and errors, whatever the record."""
    gt, dets = _gt_larger(tmp_path, 15)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    n = len(dets)
    for j in (0, n // 2, n - 1) if key else (0,):
        bad = [dict(d) for d in dets]
        if key:
            bad[j][key] = value
        (tmp_path / "dt.json").write_text(json.dumps(bad))
        one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
        starts = _spy_starts(monkeypatch)
        _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))
        assert starts == [0] and (one[0] == "error") == bool(key)
        monkeypatch.setattr(coco_eval, "results_with_tail", coco_io.results_with_tail)


def test_a_first_result_of_another_branch_is_left_to_one_process(tmp_path, monkeypatch, small_thresholds):
    """The child reading every result refuses a first record in loadRes' segm branch (a mask): the parent
    then reads the file alone, as one process does."""
    gt, dets = _gt_larger(tmp_path, 16)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    dets[0]["segmentation"] = [[1.0, 1.0, 5.0, 1.0, 5.0, 5.0]]
    del dets[0]["bbox"]
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    assert coco_io.results_tail(tmp_path / "dt.json", 0) is None
    assert (
        coco_io.results_tail(tmp_path / "dt.json", 3 * coco_pieces.CHUNK_BYTES) is not None
    )  # (a later start)
    starts = _spy_starts(monkeypatch)
    _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))
    assert starts == [0]


@pytest.mark.slow
def test_a_child_that_dies_reading_every_result_is_replaced(tmp_path, monkeypatch, small_thresholds):
    gt, dets = _gt_larger(tmp_path, 17)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    monkeypatch.setattr(coco_eval, "results_tail", _dies_in_a_child())
    starts = _spy_starts(monkeypatch)
    _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))
    assert starts == [0]


BAD_BOXES = [
    [1.0, 2.0, 3.0],
    [1.0, 2.0, 3.0, 4.0, 5.0],
    "abcd",
    {"x": 1, "y": 2, "w": 3, "h": 4},
    None,
    7,
    [[1.0], 2.0, 3.0, 4.0],
    [1.0, "2", 3.0, 4.0],
    [True, True, True, True],
    [1.0, None, 3.0, 4.0],
    [1, 2, 3, 1e300],
    [True, 2.5, 3.0, 4.0],  # accepted (as 1.0) by both paths alike
]


@pytest.mark.fast_cases(box=1)
@pytest.mark.parametrize("box", BAD_BOXES)
def test_boxes_read_from_a_file_in_pieces_as_from_a_list(tmp_path, monkeypatch, box):
    """A large file read in pieces (in one process) accepts and refuses boxes as the reading of an
    in-memory list does, with the same message."""
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)
    gt, dets = _data(7)
    g = coco_io.load_coco_gt(gt)
    for j in (3, len(dets) // 2):
        bad = [dict(d) for d in dets]
        bad[j]["bbox"] = box
        path = tmp_path / "dt.json"
        path.write_text(json.dumps(bad))
        outcomes = []
        for source in (bad, path):
            try:
                r = coco_io.load_coco_results(source, g)
                outcomes.append(("ok", r.bbox.tolist(), r.img.tolist(), r.score.tolist()))
            except DetevalError as exc:
                outcomes.append((type(exc).__name__, exc.record, exc.reason))
        assert outcomes[0] == outcomes[1]


def test_a_half_without_detections_and_empty_categories(tmp_path, monkeypatch, small_thresholds):
    """Categories without any detection (a whole half of them) or without ground truth split as well."""
    gt, dets = _data(8, n_cat=4)
    cats = sorted({c["id"] for c in gt["categories"]})
    dets = [d for d in dets if d["category_id"] == cats[0]]  # one category holds every detection
    gt["annotations"] = [a for a in gt["annotations"] if a["category_id"] != cats[1]]  # one has no truth
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    small_thresholds.clear()
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert small_thresholds == [True, True]
    _same(one, two)
    assert (one[1][:, :, 1] == -1).all() and (one[1][:, :, 2] == 0).all()  # no truth: -1; no detection: 0


@pytest.mark.slow
def test_halves_matched_in_shards_of_images(tmp_path, monkeypatch, small_thresholds):
    """Each half is matched in shards of whole images filled by its own categories' detections."""
    gt, dets = _data(9)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    monkeypatch.setattr(coco_parts, "SHARD_DETECTIONS", 150)
    small_thresholds.clear()
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert small_thresholds == [True, True]
    _same(one, two)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [9, 10])
def test_halves_matched_in_runs_of_categories(tmp_path, monkeypatch, small_thresholds, seed):
    """A half larger than a shard is matched in runs of its categories, each accumulated into its block of
    the half's columns as it is matched (no merged table): the one-process numbers, counts and warnings."""
    gt, dets = _data(seed, n_cat=9)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    monkeypatch.setattr(coco_parts, "SHARD_DETECTIONS", 300)
    runs: list[int] = []
    real = coco_parts.category_shards

    def counting(*args):
        got = real(*args)
        runs.append(0 if got is None else len(got))
        return got

    monkeypatch.setattr(coco_parts, "category_shards", counting)
    small_thresholds.clear()
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert small_thresholds == [True, True]
    assert len(runs) == 1 and runs[0] >= 2  # (this process's half; the child's calls are not seen here)
    _same(one, two)


@pytest.mark.slow
def test_the_halves_count_the_boxes_past_the_border_in_halves(tmp_path, monkeypatch, small_thresholds):
    """Boxes given as [x1, y1, x2, y2]: each category half counts the boxes past the border in a half of the
    rows (this process the second), and the warning, as every number, is the one-process one."""
    gt, dets = _data(11)
    for d in dets:
        x, y, w, h = d["bbox"]
        d["bbox"] = [x, y, round(x + w, 2), round(y + h, 2)]
    dets[-1]["bbox"] = [1.0, 1.0, 2.0, 2.0]  # (the second half's count differs from the first's)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1")
    assert any("past their image's right or bottom border" in w for w in one[6])
    here: list[tuple[int, slice | None, tuple[int, int]]] = []
    real = coco_eval.past_border_counts

    def counting(g, r, rows=None):
        got = real(g, r, rows)
        here.append((os.getpid(), rows, got))
        return got

    monkeypatch.setattr(coco_eval, "past_border_counts", counting)
    monkeypatch.setattr(run_coco, "past_border_counts", counting)
    small_thresholds.clear()
    _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, ""))
    assert small_thresholds == [True, True]
    n = len(dets)
    # (the child's count of the first rows is not seen here)
    assert [(pid, rows) for pid, rows, _ in here] == [(os.getpid(), slice(n // 2, None))]
    second = here[0][2]
    here.clear()
    monkeypatch.setenv(forked.ENV_PROCESSES, "1")
    _same(one, _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1"))
    assert [(pid, rows) for pid, rows, _ in here] == [(os.getpid(), None)]  # one process: all rows here
    whole = here[0][2]
    assert 0 < second[0] < whole[0] and second[1] == n - n // 2 and whole[1] == n


@pytest.mark.slow
def test_bbox_of_pooled_categories_splits_the_images(tmp_path, monkeypatch, small_thresholds):
    """use_cats=False: no categories to split; each process matches a half of the images."""
    gt, dets = _data(10)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    params = {"use_cats": False}
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1", params=params)
    small_thresholds.clear()
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "", params=params)
    assert small_thresholds == [True, True]
    _same(one, two)
    assert one[4][0] > 0.05


# ------------------------------------------------------------------------------------ segm and keypoints


def _segm_data(seed: int = 0, n_img: int = 30, n_cat: int = 5) -> tuple[dict, list[dict]]:
    """Polygons in the ground truth; compressed RLEs (pycocotools' own encoding) in the results."""
    from pycocotools import mask as mask_utils

    gt, dets = _data(seed, n_img, n_cat)
    t = np.linspace(0, 2 * np.pi, 10, endpoint=False)

    def polygon(box: list[float]) -> list[float]:
        x, y, w, h = box
        poly = np.empty(20)
        poly[0::2] = np.clip(x + w / 2 + w / 2 * np.cos(t), 0, 499)
        poly[1::2] = np.clip(y + h / 2 + h / 2 * np.sin(t), 0, 399)
        return [float(v) for v in poly.round(2)]

    for a in gt["annotations"]:
        a["segmentation"] = [polygon(a["bbox"])]
    out = []
    for d in dets:
        rle = mask_utils.merge(mask_utils.frPyObjects([polygon(d["bbox"])], 400, 500))
        seg = {"size": [400, 500], "counts": rle["counts"].decode("ascii")}
        out.append(
            {
                "image_id": d["image_id"],
                "category_id": d["category_id"],
                "segmentation": seg,
                "score": d["score"],
            }
        )
    return gt, out


def _kp_data(seed: int = 0, n_img: int = 60) -> tuple[dict, list[dict]]:
    """One person category, 17 keypoints (some unlabeled), jittered detections and background ones."""
    rng = np.random.default_rng(seed)
    img_ids = rng.choice(np.arange(1, 1000), n_img, replace=False)
    anns, dets = [], []
    for i in range(n_img * 3):
        img = int(rng.choice(img_ids))
        w = float(rng.uniform(10, 200))
        h = w * float(rng.uniform(1.2, 2.0))
        x, y = float(rng.uniform(0, 300)), float(rng.uniform(0, 100))
        kx, ky = x + rng.random(17) * w, y + rng.random(17) * h
        vis = np.where(rng.random(17) < 0.25, 0, 2)
        kp = np.stack([np.round(kx), np.round(ky), vis], axis=1) * (vis > 0)[:, None]
        anns.append(
            {
                "id": i + 1,
                "image_id": img,
                "category_id": 1,
                "bbox": [round(x, 2), round(y, 2), round(w, 2), round(h, 2)],
                "area": round(w * h * 0.6, 2),
                "iscrowd": int(rng.random() < 0.03),
                "num_keypoints": int((vis > 0).sum()),
                "keypoints": [int(v) for v in kp.ravel()],
            }
        )
        for _ in range(int(rng.poisson(3))):
            dx, dy = kx + rng.normal(0, 0.05, 17) * w, ky + rng.normal(0, 0.05, 17) * h
            dk = np.stack([dx.round(2), dy.round(2), np.ones(17)], axis=1)
            dets.append(
                {
                    "image_id": img,
                    "category_id": 1,
                    "keypoints": [float(v) for v in dk.ravel()],
                    "score": float(rng.choice([0.5, *rng.random(3).round(3)])),
                }
            )
    for _ in range(n_img * 2):
        dk = np.stack(
            [rng.uniform(0, 500, 17).round(2), rng.uniform(0, 400, 17).round(2), np.ones(17)], axis=1
        )
        dets.append(
            {
                "image_id": int(rng.choice(img_ids)),
                "category_id": 1,
                "keypoints": [float(v) for v in dk.ravel()],
                "score": round(float(rng.random()), 4),
            }
        )
    gt = {
        "images": [{"id": int(i), "height": 400, "width": 500} for i in img_ids],
        "categories": [
            {"id": 1, "name": "person", "keypoints": [f"k{j}" for j in range(17)], "skeleton": []}
        ],
        "annotations": anns,
    }
    return gt, dets


def _write(tmp_path, gt, dets):
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    return tmp_path / "gt.json", tmp_path / "dt.json"


@pytest.mark.slow
@pytest.mark.parametrize("iou_type,seed", [("segm", 0), ("segm", 1), ("keypoints", 0), ("keypoints", 1)])
def test_segm_and_keypoints_on_two_cores_give_the_one_process_numbers(
    tmp_path, monkeypatch, small_thresholds, iou_type, seed
):
    gt, dets = _segm_data(seed) if iou_type == "segm" else _kp_data(seed)
    g, d = _write(tmp_path, gt, dets)
    one = _outcome(g, d, monkeypatch, "1", iou_type)
    assert not any(small_thresholds)
    small_thresholds.clear()
    used = []
    # the tail forked at once, its columns checked against the ground truth once back
    reader = "keypoints_with_tail" if iou_type == "keypoints" else "segm_with_pending_tail"
    for name in (reader, "match_on_two_cores"):
        real = getattr(coco_eval, name)
        monkeypatch.setattr(coco_eval, name, lambda *a, real=real: used.append(real(*a)) or used[-1])
    two = _outcome(g, d, monkeypatch, "", iou_type)
    # the results' tail, then the halves (categories for segm, images for keypoints' one category), both
    # taken (no fallback)
    assert small_thresholds == [True, True] and len(used) == 2 and all(u is not None for u in used)
    assert (used[1][0] is None) == (iou_type == "segm")  # a table comes back from image halves only
    _same(one, two)
    assert one[4][0] > 0.05
    params = {"max_dets": [1, 3, 20] if iou_type == "keypoints" else [1, 3, 100], "use_cats": seed == 1}
    _same(
        _outcome(g, d, monkeypatch, "1", iou_type, params=params),
        _outcome(g, d, monkeypatch, "", iou_type, params=params),
    )


def _bad_rle(seg: dict) -> dict:
    return {"size": seg["size"], "counts": seg["counts"][:-1] + "~"}


SEGM_DAMAGE = [
    ("segmentation", _bad_rle),  # a character outside '0'..'o'
    ("segmentation", lambda s: {"size": [400, 501], "counts": s["counts"]}),  # not its image's size
    ("segmentation", lambda s: {"size": s["size"], "counts": s["counts"][:-2]}),  # runs do not add up
    ("segmentation", lambda s: None),
    ("segmentation", lambda s: [[1.0, 2.0, 3.0]]),  # a polygon of 1.5 points
    ("score", lambda s: "0.5"),
    ("image_id", lambda s: 123456),
    ("category_id", lambda s: 4242),
]
KP_DAMAGE = [
    ("keypoints", lambda k: k[:-3]),
    ("keypoints", lambda k: [*k[:-1], "1"]),
    ("keypoints", lambda k: [*k[:-1], float("nan")]),
    ("keypoints", lambda k: [*k[:-1], True]),  # (the child reads keypoints without looking at each value)
    ("keypoints", lambda k: None),
    ("score", lambda k: None),
    ("image_id", lambda k: 123456),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "iou_type,key,damage",
    [("segm", k, f) for k, f in SEGM_DAMAGE] + [("keypoints", k, f) for k, f in KP_DAMAGE],
)
def test_a_bad_mask_or_keypoints_record_anywhere_gives_the_one_process_error(
    tmp_path, monkeypatch, small_thresholds, iou_type, key, damage
):
    gt, dets = _segm_data(3) if iou_type == "segm" else _kp_data(3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    n = len(dets)
    for j in (0, n // 3, n // 2, n - 1):  # the parent's head, the child's tail, the last record
        bad = [dict(d) for d in dets]
        bad[j][key] = damage(bad[j].get(key))
        if j == n // 2:  # and a second fault earlier in the child's part: the first one is named
            bad[n // 2 - 5]["image_id"] = 123457
        (tmp_path / "dt.json").write_text(json.dumps(bad, allow_nan=True))
        one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1", iou_type)
        two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "", iou_type)
        assert one[0] == "error", (j, one)
        _same(one, two)


@pytest.mark.slow
def test_segm_pieces_with_a_bad_given_box_read_as_one_file(tmp_path, monkeypatch, small_thresholds):
    """segm results whose given boxes are not all valid get NaN boxes throughout (never read by segm
    evaluation): decided over the whole file, so such a file is read in one process."""
    gt, dets = _segm_data(4)
    for d in dets[1:]:  # (the first record has none: it decides loadRes' branch, segm)
        d["bbox"] = [1.0, 2.0, 3.0, 4.0]
    dets[len(dets) * 3 // 4]["bbox"] = [1.0, 2.0]
    g, d = _write(tmp_path, gt, dets)
    one = _outcome(g, d, monkeypatch, "1", "segm")
    two = _outcome(g, d, monkeypatch, "", "segm")
    assert one[0] == "ok"
    _same(one, two)


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["segm", "keypoints"])
def test_segm_and_keypoints_children_that_die_are_replaced(tmp_path, monkeypatch, small_thresholds, iou_type):
    gt, dets = _segm_data(6) if iou_type == "segm" else _kp_data(6)
    g, d = _write(tmp_path, gt, dets)
    one = _outcome(g, d, monkeypatch, "1", iou_type)
    parent = os.getpid()

    def dying(real):
        def call(*args):
            if os.getpid() != parent:
                os.kill(os.getpid(), 9)
            return real(*args)

        return call

    for name in ("results_part", "segm_tail", "keypoints_tail", "accumulate_categories", "match_in_shards"):
        monkeypatch.setattr(coco_eval, name, dying(getattr(coco_eval, name)))
    small_thresholds.clear()
    two = _outcome(g, d, monkeypatch, "", iou_type)
    assert small_thresholds == [True, True]
    _same(one, two)


def test_a_busy_machine_keeps_one_process(monkeypatch):
    """No fork while every CPU is busy (a child would only take turns with this process), unless
    DETEVAL_PROCESSES=2; DETEVAL_PROCESSES=1 never forks."""
    if not os.path.exists("/proc/loadavg"):
        pytest.skip("Linux only")
    assert forked.cpu_idle(0) is False  # this process itself is running
    assert forked.cpu_idle(10**6) is True
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    monkeypatch.delenv(forked.ENV_PROCESSES, raising=False)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: False)
    assert not forked.can_fork() and forked.fork_call(os.getpid) is None
    monkeypatch.setenv(forked.ENV_PROCESSES, "2")
    child = forked.fork_call(os.getpid)
    assert child is not None and child.result() not in (None, os.getpid())
    monkeypatch.setenv(forked.ENV_PROCESSES, "1")
    assert not forked.can_fork()


def test_category_halves_weigh_the_detections_crowded_in_an_image():
    """A category whose detections share one image costs more than as many spread over many (all against
    all in each image): it makes a half alone; the halves always split the evaluated categories."""
    from deteval.io.coco import CocoResults

    n = 300
    img = np.concatenate([np.zeros(n, dtype=np.int64), *[np.arange(n) for _ in range(3)]])
    cat = np.repeat(np.arange(4), n)
    z = np.zeros(img.shape[0])
    r = CocoResults(img=img, cat=cat, score=z, bbox=np.zeros((img.shape[0], 4)), area=z)
    mine, theirs = coco_eval.category_halves(r.img, r.cat, np.arange(4), 4)
    assert mine.tolist() == [0] and theirs.tolist() == [1, 2, 3]
    # only some categories evaluated (positions in the selection), one of them with no detection
    r5 = CocoResults(img=img, cat=cat + 1, score=z, bbox=r.bbox, area=z)
    mine, theirs = coco_eval.category_halves(r5.img, r5.cat, np.array([0, 1, 3]), 5)
    assert sorted(mine.tolist() + theirs.tolist()) == [0, 1, 2] and mine.tolist() == [1]


def test_the_one_process_strategy_forks_nothing_and_gives_the_same_numbers(
    tmp_path, monkeypatch, small_thresholds
):
    """``strategy="one process"`` reads and matches in this process (no fork is even tried, though every
    threshold is forced small and forking is allowed): the numbers, counts and warnings of "auto" on two cores."""
    gt, dets = _data(7)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    two = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "")
    assert small_thresholds == [True, True]
    small_thresholds.clear()
    one = _outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "", strategy="one process")
    assert small_thresholds == []
    _same(two, one)
    with pytest.raises(ConfigError, match="unknown strategy"):
        evaluate_coco(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), strategy="two processes")
    with pytest.raises(ConfigError, match="runs no shards"):
        evaluate_coco(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), shards=2, strategy="one process")
