"""segm IoU of many (image, category) blocks per ``pycocotools.mask.iou`` call, each block's masks tagged with
a width of their own, against pycocotools called once per block (as COCOeval does): bit for bit, -1 included."""

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from deteval.detection import coco_iou
from deteval.detection.coco_iou import segm_iou_blocks


def _encode(m: np.ndarray, rng: np.random.Generator) -> dict:
    rle = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
    if rng.random() < 0.5:  # results files hold str counts, pycocotools' conversions bytes
        rle["counts"] = rle["counts"].decode("ascii")
    return rle


def _random_mask(rng: np.random.Generator, h: int, w: int) -> dict:
    kind = rng.integers(0, 7)
    m = np.zeros((h, w), dtype=bool)
    if kind == 0:
        pass  # empty: rleToBbox gives [0, 0, 0, 0]
    elif kind == 1:
        m[:] = True  # full: runs continue into the next column
    elif kind == 2:  # speckle: several runs per column
        m = rng.random((h, w)) < rng.uniform(0.05, 0.6)
    elif kind == 3:  # a column band touching top and bottom (runs over several columns)
        x0 = int(rng.integers(0, w))
        m[:, x0 : x0 + int(rng.integers(1, 4))] = True
    elif kind == 4:  # counts with zero-length interior runs (not canonical): decoded as they are
        cuts = np.sort(rng.integers(0, h * w + 1, int(rng.integers(1, 8))))
        counts = np.diff(np.r_[0, cuts, h * w]).tolist()
        rle = mask_utils.frPyObjects({"size": [h, w], "counts": counts}, h, w)
        if rng.random() < 0.5:
            rle["counts"] = rle["counts"].decode("ascii")
        return rle
    else:  # a box near the others (overlaps are the interesting case)
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        m[y0 : y0 + int(rng.integers(1, h + 1)), x0 : x0 + int(rng.integers(1, w + 1))] = True
        if kind == 6:
            m &= rng.random((h, w)) < 0.8
    return _encode(m, rng)


def _random_blocks(seed: int, mixed: float = 0.15) -> tuple:
    rng = np.random.default_rng(seed)
    drles, grles, crowd = [], [], []
    di, gi, starts, nds, ngs = [], [], [], [], []
    pairs = 0
    for _ in range(int(rng.integers(1, 40))):
        h, w = int(rng.integers(1, 12)), int(rng.integers(1, 12))
        nd, ng = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        d0, g0 = len(drles), len(grles)
        drles += [_random_mask(rng, h, w) for _ in range(nd)]
        for _ in range(ng):
            # now and then a mask of another size in the block (an image without a size): -1 where boxes overlap
            other = rng.random() < mixed
            gh, gw = (h + int(rng.integers(0, 2)), w + int(rng.integers(0, 2))) if other else (h, w)
            grles.append(_random_mask(rng, gh, gw))
            crowd.append(bool(rng.random() < 0.3))
        for a in range(nd):
            for b in range(ng):
                di.append(d0 + a)
                gi.append(g0 + b)
        starts.append(pairs)
        nds.append(nd)
        ngs.append(ng)
        pairs += nd * ng
    arr = np.asarray
    return drles, grles, arr(crowd, dtype=bool), arr(di), arr(gi), arr(starts), arr(nds), arr(ngs)


def _per_block(drles, grles, crowd, di, gi, starts, nds, ngs) -> np.ndarray:
    out = []
    for s, nd, ng in zip(starts.tolist(), nds.tolist(), ngs.tolist()):
        g = gi[s : s + ng]
        d = di[s : s + nd * ng : ng]
        m = mask_utils.iou([drles[i] for i in d], [grles[i] for i in g], crowd[g].astype(np.uint8).tolist())
        out.append(np.asarray(m, dtype=np.float64).reshape(-1))
    return np.concatenate(out)


@pytest.mark.slow
@pytest.mark.parametrize("call_pairs", [1, 10, 200, 1 << 12])
@pytest.mark.parametrize("mixed", [0.0, 0.15])
def test_batched_calls_equal_one_call_per_block(call_pairs, mixed, monkeypatch):
    """``mixed``: share of ground truths of another size than their block (such blocks are called untagged);
    without, every call of several blocks is tagged, masks with runs but no foreground pixel included."""
    monkeypatch.setattr(coco_iou, "SEGM_CALL_PAIRS", call_pairs)
    seen_minus_one = seen_between = 0
    for seed in range(40):
        case = _random_blocks(seed, mixed)
        ref = _per_block(*case)
        ours = segm_iou_blocks(*case)
        assert np.array_equal(ours, ref), seed
        seen_minus_one += int((ref == -1).sum())
        seen_between += int(((ref > 0) & (ref < 1)).sum())
    assert seen_between > 100
    assert seen_minus_one > 10 if mixed else seen_minus_one == 0


def test_one_call_holds_blocks_whose_masks_would_overlap(monkeypatch):
    """Two blocks of one image size with the same masks: untagged, one call would compare them across blocks;
    tagged, the cross-block pairs are -1 and never read, and the block pairs keep their IoU."""
    calls = []
    real = mask_utils.iou

    def spy(d, g, c):
        calls.append((len(d), len(g)))
        return real(d, g, c)

    monkeypatch.setattr(mask_utils, "iou", spy)
    rng = np.random.default_rng(5)
    m = np.zeros((6, 7), dtype=bool)
    m[1:5, 2:6] = True
    a, b = _encode(m, rng), _encode(np.roll(m, 1, axis=0), rng)
    drles, grles = [a, a], [b, b]
    out = segm_iou_blocks(
        drles, grles, np.zeros(2, bool), np.array([0, 1]), np.array([0, 1]), np.array([0, 1]),
        np.array([1, 1]), np.array([1, 1]),
    )  # fmt: skip
    ref = float(np.asarray(real([a], [b], [0]))[0, 0])
    assert calls == [(2, 2)] and ref == 12 / 20
    assert out.tolist() == [ref, ref]


def test_evaluation_tags_from_image_sizes_and_reads_mask_sizes_where_an_image_has_none(monkeypatch):
    """Through evaluate_coco: masks of images with a size are tagged from those sizes (the masks were checked to
    have them), as pycocotools; an image without a size has masks of any size, read from the masks, -1 where
    they differ from a detection's, as one mask.iou call per block."""
    from _coco_cases import assert_same_as_reference, random_segm_case, run_pycocotools

    from deteval.detection.coco import evaluate_coco

    sources = []
    real = coco_iou._table_sizes
    monkeypatch.setattr(
        coco_iou, "_table_sizes", lambda t, rows: sources.append(real(t, rows)) or sources[-1]
    )
    monkeypatch.setattr(coco_iou, "SEGM_CALL_PAIRS", 64)  # (several blocks per call even in small cases)
    for seed in range(6):
        case = random_segm_case(seed)
        ref = run_pycocotools(case["gt"], case["dt"], "segm")
        assert_same_as_reference(evaluate_coco(case["gt"], case["dt"], iou_type="segm"), ref, f"seed {seed}")
    assert sources and all(s is not None for s in sources)
    # image 1 without a size: its crowd RLEs and results may have any size
    rng = np.random.default_rng(0)
    case = random_segm_case(3)
    gt, dt = case["gt"], case["dt"]
    del gt["images"][0]["height"], gt["images"][0]["width"]
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] != 1]
    dt = [d for d in dt if d["image_id"] != 1]
    for k in range(6):
        h, w = (80, 100) if k % 2 else (80 + k, 100 - k)
        m = np.zeros((h, w), dtype=bool)
        m[10 + k : 40, 20 : 60 + k] = True
        gt["annotations"].append(
            {"id": 1000 + k, "image_id": 1, "category_id": 1, "segmentation": _encode(m, rng), "area": 100.0,
             "bbox": [20, 10, 40, 30], "iscrowd": k % 3 == 0}
        )  # fmt: skip
        for j in range(2):
            d = np.roll(m, 2 * j + k, axis=1)
            dt.append(
                {"image_id": 1, "category_id": 1, "segmentation": _encode(d, rng), "score": 0.1 * (k + j)}
            )
    for a in gt["annotations"]:
        if isinstance(a["segmentation"], dict) and isinstance(a["segmentation"]["counts"], bytes):
            a["segmentation"]["counts"] = a["segmentation"]["counts"].decode("ascii")
    for d in dt:
        if isinstance(d["segmentation"]["counts"], bytes):
            d["segmentation"]["counts"] = d["segmentation"]["counts"].decode("ascii")
    sources.clear()
    # (pycocotools cannot read an image without a size: the reference is one mask.iou call per block; a
    # threshold of 0 makes a pair of IoU 0 a candidate and one of -1 not)
    params = {"iou_thrs": np.array([0.0, 0.5])}
    batched = evaluate_coco(gt, dt, iou_type="segm", params=params)
    monkeypatch.setattr(coco_iou, "SEGM_CALL_PAIRS", 1)
    per_block = evaluate_coco(gt, dt, iou_type="segm", params=params)
    assert None in sources
    for a, b in ((batched.precision, per_block.precision), (batched.recall, per_block.recall)):
        assert np.array_equal(a, b)
    assert batched.stats[0] > 0
