"""A large segm results file read on two cores from the start (deteval.io.coco.segm_tail): the child's tail,
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

import deteval.run.coco_two_cores as coco_eval
from deteval.detection.coco_params import CocoParams
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import segm_tail as coco_segm_tail
from deteval.io.coco import typed as coco_typed
from deteval.io.coco.segm_tail import _lean_head, segm_tail, segm_with_pending_tail, segm_with_tail
from deteval.run import forked


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)


def _files(tmp_path, gt: dict, dets: list[dict]):
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    return str(tmp_path / "gt.json"), str(tmp_path / "dt.json")


@pytest.mark.slow
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
        assert (len(tail[0]) > 0) == (start < size)  # (a start past the end: the head is the whole file)
        # the head read as the child reads the tail (lean_head), its masks made from the texts as well
        lean = segm_with_pending_tail(d_path, g, start, lambda tail=tail: tail, True)
        assert lean is not None and lean[1].rows.shape[0] == len(one)
        assert _lean_head(d_path, g, start) is not None
        lean[1].fill(lean[0])
        for f in ("img", "cat", "score", "area"):
            a, b = getattr(one, f), getattr(lean[0], f)
            assert a.dtype == b.dtype and np.array_equal(a, b), f
        assert lean[0].segmentation == one.segmentation and lean[0].rles == one.rles


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


def _not_ascii(d: dict) -> None:
    d["segmentation"] = {"size": [400, 500], "counts": d["segmentation"]["counts"][:-1] + "\u00e9"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "change,valid",
    [
        (_given_box, True),
        (_polygon, True),
        (_uncompressed, True),
        (_other_size, False),
        (_unknown_image, False),
        (_bad_runs, False),
        (_not_ascii, False),
    ],
)
@pytest.mark.parametrize("where", ["tail", "head"])
def test_what_the_tail_does_not_read_is_declined(tmp_path, monkeypatch, small_pieces, change, valid, where):
    """... nor in the head, read as the tail is where it can (lean_head) and else by results_part."""
    gt, dets = _segm_data(2)
    change(dets[-3] if where == "tail" else dets[2])  # (in the child's tail, or this process's head)
    g_path, d_path = _files(tmp_path, gt, dets)
    g = load_coco_gt(g_path, keep_segmentation=True)
    start = (tmp_path / "dt.json").stat().st_size // 2
    tail = segm_tail(d_path, start)
    if where == "tail":
        assert tail is None or segm_with_tail(d_path, g, start, lambda: tail) is None
    else:
        assert tail is not None and _lean_head(d_path, g, start) is None
        lean = segm_with_pending_tail(d_path, g, start, lambda: tail, True)
        assert valid or lean is None  # (a valid one may be read by results_part, the tail's masks pending)
        if lean is not None:
            assert lean[1].rows.shape[0] < len(lean[0])
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


@pytest.mark.fast_cases(iou_type=1)
@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_category_halves_written_in_shared_memory_with_other_params(tmp_path, monkeypatch, iou_type):
    """The halves of the categories write their precision, recall and scores into memory shared with the
    child (coco_two_cores._shared_arrays, segm; bbox sends the child's through the pipe): shaped from the parameters,
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


@pytest.mark.slow
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


def _pending_read(tmp_path, seed: int):
    """The ground truth, the one-process results, and the results read with a third of the file as the tail
    (its masks pending) of a segm set."""
    g_path, d_path = _files(tmp_path, *_segm_data(seed))
    g = load_coco_gt(g_path, keep_segmentation=True)
    one = load_coco_results(d_path, g, iou_type="segm")
    start = (tmp_path / "dt.json").stat().st_size // 3
    tail = segm_tail(d_path, start)
    got = segm_with_pending_tail(d_path, g, start, lambda: tail)
    assert got is not None
    return (g, one, *got)


@pytest.mark.slow
def test_pending_masks_made_per_category_then_all(tmp_path, small_pieces):
    """The tail's mask dicts left to make (segm_with_pending_tail): a half of the categories makes only its
    records' (where None stood), the rest then make the one-process columns."""
    g, one, res, pending = _pending_read(tmp_path, 8)
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


def _lazy_spy(monkeypatch) -> list[int]:
    """Records, for every detection table given masks to read from the tail's text, how many."""
    from deteval.detection import coco_rles

    lazy: list[int] = []
    real = coco_rles.RleTable.set_lazy

    def spy(self, source, index):
        lazy.append(int((index >= 0).sum()))
        return real(self, source, index)

    monkeypatch.setattr(coco_rles.RleTable, "set_lazy", spy)
    return lazy


def _never_filled(monkeypatch) -> None:
    def refuse(self, res, categories=None):
        raise AssertionError("the tail's mask dicts were made")

    monkeypatch.setattr(coco_eval.PendingMasks, "fill", refuse)


@pytest.mark.slow
def test_a_matching_child_that_dies_leaves_the_masks_to_read_here(tmp_path, monkeypatch, small_pieces):
    """The tail's masks are read from the child's text by each half of the categories, no dict made; when
    the matching child fails, this process matches everything itself, reading them the same way: the
    one-process numbers."""
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    monkeypatch.setattr(coco_eval, "FORK_MASKS", 0)
    gt, dets = _segm_data(9)
    g_path, d_path = _files(tmp_path, gt, dets)
    one = _outcome(g_path, d_path, monkeypatch, "1", "segm")
    parent = os.getpid()
    real_half = coco_eval.accumulate_categories

    def dying(*args):
        if os.getpid() != parent:
            os.kill(os.getpid(), 9)
        return real_half(*args)

    monkeypatch.setattr(coco_eval, "accumulate_categories", dying)
    _never_filled(monkeypatch)
    lazy = _lazy_spy(monkeypatch)
    two = _outcome(g_path, d_path, monkeypatch, "", "segm")
    # this half's masks, then all of them once the child failed (one shard: every detection in one table)
    assert len(lazy) == 2 and 0 < lazy[0] < lazy[1], lazy
    _same(one, two)


@pytest.mark.slow
@pytest.mark.parametrize("untagged", ["every call", "one call in two"])
def test_masks_read_from_the_text_where_calls_are_untagged(tmp_path, monkeypatch, small_pieces, untagged):
    """Where ``mask.iou`` calls cannot be tagged by block (masks of mixed sizes, sizes not known), the masks
    read from the tail's text are made into RLE dicts for those calls: the same numbers."""
    from deteval.detection import coco_iou

    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    monkeypatch.setattr(coco_iou, "SEGM_CALL_PAIRS", 64)  # (many calls)
    gt, dets = _segm_data(10)
    g_path, d_path = _files(tmp_path, gt, dets)
    one = _outcome(g_path, d_path, monkeypatch, "1", "segm")
    if untagged == "every call":
        monkeypatch.setattr(coco_iou._Tags, "of", classmethod(lambda cls, *a: None))
    else:
        real = coco_iou._Tags.masks
        calls = []

        def every_other(self, *a):
            calls.append(1)
            return real(self, *a) if len(calls) % 2 else None

        monkeypatch.setattr(coco_iou._Tags, "masks", every_other)
    _never_filled(monkeypatch)
    lazy = _lazy_spy(monkeypatch)
    two = _outcome(g_path, d_path, monkeypatch, "", "segm")
    assert lazy and all(n > 0 for n in lazy)
    _same(one, two)
    assert one[4][0] > 0.05


@pytest.mark.slow
def test_a_mask_read_from_the_text_is_the_one_process_mask(tmp_path, small_pieces):
    """An RleTable entry read from the tail's text gives the mask the one-process loader makes (its counts as
    the ASCII bytes of the string), and the entries made from JSON stay as they are."""
    from deteval.detection.coco_rles import LAZY, dt_rles

    g, one, res, pending = _pending_read(tmp_path, 11)
    res.lazy_masks = pending
    keep = np.arange(1, len(res), 2)
    table = dt_rles(res, keep, g)
    lazy = set(np.flatnonzero(np.isin(keep, pending.rows)).tolist())
    assert lazy and len(lazy) < keep.shape[0]
    for j, i in enumerate(keep.tolist()):
        assert (table.cache[j] is LAZY) == (j in lazy)
        mask = table[j]
        expect = one.rles[i]
        if j in lazy:
            assert mask["size"] == expect["size"] and mask["counts"] == expect["counts"].encode("ascii")
        else:
            assert mask is res.rles[i] and mask == expect


def _tail_columns(tail):
    pieces, texts = tail
    return [np.concatenate([p[k] for p in pieces]) for k in range(6)], b"".join(texts)


@pytest.mark.parametrize("seed", [0, 3])
def test_pieces_decoded_by_type_are_the_parsed_pieces(tmp_path, monkeypatch, small_pieces, seed):
    """segm results decoded by type (msgspec: no dict per record or mask) give the columns and counts text of
    the pieces parsed by orjson; the typed decoder vouches for every piece of a plain file."""
    gt, dets = _segm_data(seed)
    _, d_path = _files(tmp_path, gt, dets)
    typed = segm_tail(d_path, 0)
    calls = []
    real = coco_typed.segm_columns
    monkeypatch.setattr(coco_segm_tail, "segm_columns", lambda text: calls.append(real(text)) or calls[-1])
    assert segm_tail(d_path, 0) is not None and calls and all(c is not None for c in calls)
    monkeypatch.setattr(coco_segm_tail, "segm_columns", lambda text: None)
    parsed = segm_tail(d_path, 0)
    assert typed is not None and parsed is not None
    (a, text_a), (b, text_b) = _tail_columns(typed), _tail_columns(parsed)
    assert text_a == text_b
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and np.array_equal(x, y)


_PLAIN = b'{"image_id": 1, "category_id": 2, "segmentation": {"size": [4, 5], "counts": "0d0"}, "score": 0.5}'


@pytest.mark.parametrize(
    "record",
    [
        _PLAIN.replace(b'"score"', b'"image_id": 3, "score"'),  # a repeated key
        _PLAIN.replace(b'"counts"', b'"size": [4, 5], "counts"'),  # ... in the mask
        _PLAIN.replace(b'"score"', b'"bbox": [1, 2, 3, 4], "score"'),  # a box: loadRes' bbox branch
        _PLAIN.replace(b'"score"', b'"id": 7, "score"'),
        _PLAIN.replace(b"[4, 5]", b"[4.0, 5]"),
        _PLAIN.replace(b"[4, 5]", b"[4, 5, 6]"),
        _PLAIN.replace(b'"image_id": 1', b'"image_id": "1"'),
        _PLAIN.replace(b'"image_id": 1', b'"image_id": true'),
        _PLAIN.replace(b'"image_id": 1', b'"image_id": 1.0'),
        _PLAIN.replace(b'"image_id": 1', b'"image_id": 18446744073709551615'),
        _PLAIN.replace(b"0.5", b"1e300"),
        _PLAIN.replace(b"0.5", b"NaN"),
        _PLAIN.replace(b"0.5", b"null"),
        _PLAIN.replace(b'"0d0"', b'"0d\\u00e9"'),
        _PLAIN.replace(b'"0d0"', b'"0d\\"0"'),  # an escaped quote (no counts string holds one)
        _PLAIN.replace(b'"0d0"', b"[0, 20]"),
        _PLAIN.replace(b'{"size": [4, 5], "counts": "0d0"}', b"[[1, 2, 3, 4, 5, 6]]"),
    ],
)
def test_what_the_typed_decoder_cannot_vouch_for_is_parsed(record):
    assert coco_typed.segm_columns(b"[" + _PLAIN + b"]") is not None
    assert coco_typed.segm_columns(b"[" + _PLAIN + b", " + record + b"]") is None


def test_typed_columns_of_a_plain_list():
    text = b"[" + _PLAIN + b", " + _PLAIN.replace(b'"0d0"', b'"1\\\\"').replace(b"0.5", b"3") + b"]"
    img, cat, score, hw, joined, lengths = coco_typed.segm_columns(text)
    assert img.tolist() == [1, 1] and cat.tolist() == [2, 2] and score.tolist() == [0.5, 3.0]
    assert hw.tolist() == [[4, 5], [4, 5]] and joined == b"0d01\\" and lengths.tolist() == [3, 2]
    assert img.dtype == cat.dtype == hw.dtype == np.int64 and score.dtype == np.float64


@pytest.mark.parametrize("valid", [True, False])
def test_one_process_reads_a_segm_file_as_the_child_reads_a_tail(tmp_path, monkeypatch, small_pieces, valid):
    """Without a second process, the evaluation reads a segm results file as the child reads a tail, its
    masks left in the text for the matcher (segm_pending): the numbers of the results given as dicts, or the
    error the loader gives."""
    gt, dets = _segm_data(4)
    if not valid:
        _bad_runs(dets[len(dets) // 2])
    g_path, d_path = _files(tmp_path, gt, dets)
    read = []
    real = coco_eval.segm_pending
    monkeypatch.setattr(coco_eval, "segm_pending", lambda *a: read.append(real(*a)) or read[-1])
    one = _outcome(g_path, d_path, monkeypatch, "1", "segm")
    assert len(read) == 1 and (read[0] is not None) == valid
    monkeypatch.setattr(coco_eval, "segm_pending", lambda *a: None)
    loaded = _outcome(g_path, d_path, monkeypatch, "1", "segm")
    _same(one, loaded)
    assert (one[0] == "ok") == valid
