"""Memory bounds by chunking (issue 12, items 4-5): results do not depend on the chunk size.

The VOC matcher and the COCO matcher compute IoUs for (detection, ground truth) pairs in chunks of at most
``PAIR_CHUNK`` pairs; a COCO (image, category) group larger than a chunk is split into sub-blocks. Forcing
tiny chunks (down to one pair) must give exactly the unchunked result, which the differential tests tie to
the reference tools (checked here too on a few cases). The memory itself is measured by
``scripts/bench_memory.py``, not here.
"""

from __future__ import annotations

import numpy as np
import pytest
from _coco_cases import random_case, random_keypoints_case, random_segm_case, run_pycocotools

import deteval.match.coco as coco_match
import deteval.match.iou as coco_iou
from deteval.detection.coco import evaluate_coco
from deteval.detection.coco_params import CocoParams
from deteval.match.coco import _split_blocks


def _eval(case: dict, iou_type: str):
    params = CocoParams.from_options(iou_type, **dict(case.get("params", {})))
    return evaluate_coco(case["gt"], case["dt"], params=params)


def _same(a, b) -> None:
    assert np.array_equal(a.precision, b.precision)
    assert np.array_equal(a.recall, b.recall)
    assert np.array_equal(a.scores, b.scores)
    assert np.array_equal(a.stats, b.stats)


CASES = {
    "bbox": lambda s: random_case(s),
    "segm": lambda s: random_segm_case(s),
    "keypoints": lambda s: random_keypoints_case(s),
}


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("iou_type", sorted(CASES))
@pytest.mark.parametrize("seed", range(12))
def test_coco_groups_split_in_tiny_chunks_give_identical_results(iou_type, seed, monkeypatch):
    case = CASES[iou_type](seed)
    whole = _eval(case, iou_type)
    for chunk in (1, 2, 7, 64):
        monkeypatch.setattr(coco_match, "PAIR_CHUNK", chunk)
        _same(_eval(case, iou_type), whole)
    if iou_type == "bbox":  # every block as a broadcast matrix, in any chunks
        monkeypatch.setattr(coco_iou, "MATRIX_PAIRS", 1)
        for chunk in (1, 7, 10**6):
            monkeypatch.setattr(coco_match, "PAIR_CHUNK", chunk)
            _same(_eval(case, iou_type), whole)
    if seed < 3:  # and the unchunked result is pycocotools' (as in the differential tests)
        gt = case["gt"]
        if not any(a["id"] == 0 for a in gt["annotations"]):
            monkeypatch.setattr(coco_match, "PAIR_CHUNK", 3)
            stats, precision, recall, _ = run_pycocotools(gt, case["dt"], iou_type, case.get("params"))
            ours = _eval(case, iou_type)
            assert np.array_equal(ours.precision, precision) and np.array_equal(ours.recall, recall)
            assert np.array_equal(ours.stats, stats)


@pytest.mark.slow
def test_one_crowded_group_with_many_detections_and_large_max_dets(monkeypatch):
    """A single (image, category) group of 300 ground truths × 400 detections, maxDets 1000: one block of
    120k pairs, split into sub-blocks of a few hundred pairs."""
    rng = np.random.default_rng(3)
    gts, dts = [], []
    for k in range(300):
        x, y, w, h = rng.uniform(0, 900, 2).tolist() + rng.uniform(5, 60, 2).tolist()
        gts.append({"id": k + 1, "image_id": 1, "category_id": 1, "bbox": [x, y, w, h], "area": w * h,
                    "iscrowd": int(k % 37 == 0)})  # fmt: skip
    for _ in range(400):
        g = gts[int(rng.integers(0, 300))]["bbox"]
        b = [g[0] + rng.normal(0, 4), g[1] + rng.normal(0, 4), g[2] * rng.uniform(0.8, 1.2), g[3]]
        dts.append({"image_id": 1, "category_id": 1, "bbox": b, "score": float(rng.random())})
    gt = {"images": [{"id": 1, "height": 1000, "width": 1000}], "categories": [{"id": 1, "name": "x"}],
          "annotations": gts}  # fmt: skip
    case = {"gt": gt, "dt": dts, "params": {"max_dets": [1, 100, 1000]}}
    whole = _eval(case, "bbox")
    stats, precision, _, _ = run_pycocotools(gt, dts, "bbox", case["params"])
    assert np.array_equal(whole.precision, precision) and np.array_equal(whole.stats, stats)
    # (chunks of one pair: test_coco_groups_split_in_tiny_chunks_give_identical_results, on every random case;
    # here its 120k sub-blocks took most of the CPU of the suite's longest test)
    for chunk in (299, 301, 777):
        monkeypatch.setattr(coco_match, "PAIR_CHUNK", chunk)
        _same(_eval(case, "bbox"), whole)
    monkeypatch.setattr(coco_iou, "MATRIX_PAIRS", 10**12)  # every block as flat pairs
    monkeypatch.setattr(coco_match, "PAIR_CHUNK", 10**6)
    _same(_eval(case, "bbox"), whole)


def test_split_blocks_cover_every_pair_once():
    rng = np.random.default_rng(0)
    nd, ng = rng.integers(1, 30, 40), rng.integers(1, 30, 40)
    ds = np.r_[0, np.cumsum(nd)[:-1]]
    gs = np.r_[0, np.cumsum(ng)[:-1]]
    want = sorted(
        (d, g) for s, n, t, m in zip(ds, nd, gs, ng) for d in range(s, s + n) for g in range(t, t + m)
    )
    for chunk in (1, 2, 5, 29, 31, 100, 10**6):
        bd, bn, bg, bm = _split_blocks(ds, nd, gs, ng, chunk)
        assert (bn * bm <= max(chunk, 1)).all() and (bn >= 1).all() and (bm >= 1).all()
        got = sorted(
            (d, g) for s, n, t, m in zip(bd, bn, bg, bm) for d in range(s, s + n) for g in range(t, t + m)
        )
        assert got == want


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("iou_type", sorted(CASES))
@pytest.mark.parametrize("seed", range(8))
def test_coco_greedy_steps_split_in_tiny_pieces_give_identical_results(iou_type, seed, monkeypatch):
    """A greedy step (one detection rank) cut into pieces of a few candidate pairs (issue 15: bounded step
    temporaries); a detection's pairs are never cut, so a piece may exceed the bound."""
    case = CASES[iou_type](seed)
    whole = _eval(case, iou_type)
    for step in (1, 2, 5):
        monkeypatch.setattr(coco_match, "STEP_PAIRS", step)
        _same(_eval(case, iou_type), whole)


def test_greedy_steps_cover_every_pair_once_and_cut_only_between_detections():
    rng = np.random.default_rng(0)
    for _ in range(50):
        seg_len = rng.integers(1, 9, rng.integers(1, 40))
        seg_start = np.r_[0, np.cumsum(seg_len)[:-1]]
        n_pairs = int(seg_len.sum())
        seg_id = np.repeat(np.arange(seg_len.shape[0]), seg_len)
        ranks = np.sort(rng.integers(0, 4, seg_len.shape[0]))  # each detection's rank, pairs grouped by rank
        bounds = np.searchsorted(np.repeat(ranks, seg_len), np.arange(5))
        for step in (1, 3, 10, 1000):
            coco_match.STEP_PAIRS = step
            try:
                pieces = list(coco_match._steps(bounds, seg_start, seg_id, seg_start.shape[0], n_pairs))
            finally:
                coco_match.STEP_PAIRS = 4096
            assert [s for s, _ in pieces] == [0] + [e for _, e in pieces[:-1]]
            assert pieces[-1][1] == n_pairs
            assert set(bounds.tolist()) - {n_pairs} <= {s for s, _ in pieces}  # no piece spans two ranks
            assert all(s in set(seg_start.tolist()) for s, _ in pieces)
            assert all(e - s <= max(step, int(seg_len.max())) for s, e in pieces)


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("iou_type", sorted(CASES))
@pytest.mark.parametrize("seed", range(6))
def test_coco_accumulation_in_threshold_groups_and_from_shards_gives_identical_results(
    iou_type, seed, monkeypatch
):
    """Accumulation over a few thresholds at a time (LIST_ITEMS), and over a table of merged shards (rows not
    in (category, image, rank) order: the full four-key ranking) equals the one-pass result (issue 15)."""
    import deteval.detection.coco.parts as coco
    import deteval.detection.coco_accumulate as coco_accumulate

    case = CASES[iou_type](seed)
    whole = _eval(case, iou_type)
    for items in (1, 5, 40):
        monkeypatch.setattr(coco_accumulate, "LIST_ITEMS", items)
        _same(_eval(case, iou_type), whole)
    monkeypatch.setattr(coco, "SHARD_DETECTIONS", 7)
    _same(_eval(case, iou_type), whole)
