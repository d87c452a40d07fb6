"""Pairwise IoU and OKS against pycocotools' own functions, compared bit for bit."""

import contextlib
import copy
import io

import numpy as np
from _coco_cases import random_keypoints_case
from pycocotools import mask as mask_utils

from deteval.detection.coco_iou import bb_iou, bbox_iou_pairs, numpy_pairwise_sum_rows, oks_pairs
from deteval.detection.coco_params import COCO_KPT_OKS_SIGMAS
from deteval.io.coco import keypoints as coco_kp


def test_bbox_iou_is_bit_identical_to_pycocotools_bbiou():
    rng = np.random.default_rng(0)
    for trial in range(20):
        m, n = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        scale = 10.0 ** rng.integers(-2, 4)
        d = np.abs(rng.normal(0, 1, (m, 4))) * scale
        g = np.abs(rng.normal(0, 1, (n, 4))) * scale
        if trial % 3 == 0:  # shared coordinates: exact touching edges and duplicates
            d = np.round(d)
            g = np.round(g)
            g[: min(m, n) // 2] = d[: min(m, n) // 2]
        crowd = rng.random(n) < 0.3
        ref = np.asarray(mask_utils.iou(d.tolist(), g.tolist(), crowd.astype(int).tolist()))
        di, gi = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
        ours = bbox_iou_pairs(d, g, crowd, di.ravel(), gi.ravel()).reshape(m, n)
        assert np.array_equal(ours, ref)


def test_bbox_iou_of_pairs_equals_the_broadcast_matrix_with_degenerate_boxes():
    # the pairs path (gathered columns, in-place arithmetic) against bb_iou's broadcast matrix and pycocotools:
    # zero widths and heights, boxes that only touch, crowds, repeated pairs in any order
    rng = np.random.default_rng(5)
    for trial in range(40):
        m, n = int(rng.integers(1, 40)), int(rng.integers(1, 40))
        d = np.round(np.abs(rng.normal(0, 1, (m, 4))) * 8)
        g = np.round(np.abs(rng.normal(0, 1, (n, 4))) * 8)
        d[rng.random(m) < 0.2, 2 + trial % 2] = 0.0
        g[rng.random(n) < 0.2, 3 - trial % 2] = 0.0
        crowd = rng.random(n) < 0.3
        matrix = bb_iou(d[:, None, :], g[None, :, :], crowd[None, :])
        ref = np.asarray(mask_utils.iou(d.tolist(), g.tolist(), crowd.astype(int).tolist())).reshape(m, n)
        assert np.array_equal(matrix, ref)
        di, gi = rng.integers(0, m, 3 * m * n), rng.integers(0, n, 3 * m * n)
        ours = bbox_iou_pairs(d, g, crowd, di, gi)
        assert np.array_equal(ours, matrix[di, gi])
        assert not np.signbit(ours).any()


def test_pairwise_sum_emulates_numpy_sum():
    rng = np.random.default_rng(1)
    for n in list(range(1, 40)) + [127, 128, 129, 300]:
        a = rng.random((20, n)) * 10.0 ** rng.integers(-8, 8, (20, n))
        ref = np.array([np.sum(row.copy()) for row in a])
        assert np.array_equal(numpy_pairwise_sum_rows(a), ref)


def test_oks_is_bit_identical_to_compute_oks():
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    checked = 0
    for seed in range(40):
        case = random_keypoints_case(seed)
        with contextlib.redirect_stdout(io.StringIO()):
            cg = COCO()
            cg.dataset = copy.deepcopy(case["gt"])
            cg.createIndex()
            cd = cg.loadRes(copy.deepcopy(case["dt"]))
            E = COCOeval(cg, cd, "keypoints")
            E.evaluate()
        for (img, cat), ref in E.ious.items():
            if len(ref) == 0:
                continue
            gts = E._gts[img, cat]
            dts = sorted(E._dts[img, cat], key=lambda d: -d["score"])  # stable, as computeOks
            gkp = np.array([g["keypoints"] for g in gts], dtype=float)
            dkp = np.array([d["keypoints"] for d in dts], dtype=float)
            gbox = np.array([g["bbox"] for g in gts], dtype=float)
            garea = np.array([g["area"] for g in gts], dtype=float)
            di, gi = np.meshgrid(np.arange(len(dts)), np.arange(len(gts)), indexing="ij")
            ours = oks_pairs(dkp, gkp, gbox, garea, COCO_KPT_OKS_SIGMAS, di.ravel(), gi.ravel())
            assert np.array_equal(ours.reshape(len(dts), len(gts)), np.asarray(ref)), seed
            checked += ref.size
    assert checked > 500


def _oks_by_the_rule(d, g, box, area, sigmas):
    """One pair's OKS as COCOeval.computeOks states it, on 1-D arrays (np.sum of the compacted exp)."""
    var = (sigmas * 2) ** 2
    xg, yg, vg = g[0::3], g[1::3], g[2::3]
    xd, yd = d[0::3], d[1::3]
    k1 = np.count_nonzero(vg > 0)
    if k1 > 0:
        dx, dy = xd - xg, yd - yg
    else:
        z = np.zeros(len(sigmas))
        x0, x1 = box[0] - box[2], box[0] + box[2] * 2
        y0, y1 = box[1] - box[3], box[1] + box[3] * 2
        dx = np.max((z, x0 - xd), axis=0) + np.max((z, xd - x1), axis=0)
        dy = np.max((z, y0 - yd), axis=0) + np.max((z, yd - y1), axis=0)
    e = (dx**2 + dy**2) / var / (area + np.spacing(1)) / 2
    if k1 > 0:
        e = e[vg > 0]
    return np.sum(np.exp(-e)) / e.shape[0]


def test_keypoint_oks_in_chunks_follows_the_rule_for_any_number_of_keypoints():
    """KeypointOks, built once and called on chunks of pairs in any order (as the matcher does), gives every
    pair the double of computeOks' rule: 1 to 30 keypoints, every visible count, none visible, and a few
    sets of 120 to 300 keypoints (numpy's sum splits more than 128 numbers in halves); with a floor, the pairs
    it leaves out are below it."""
    from deteval.detection.coco_iou import KeypointOks

    rng = np.random.default_rng(7)
    skipped = 0
    for trial in range(36):
        k = int(rng.integers(1, 31)) if trial < 30 else int(rng.integers(120, 301))
        sigmas = rng.uniform(0.02, 0.12, k)
        n_g, n_d = int(rng.integers(1, 40)), int(rng.integers(1, 60))
        g = np.zeros((n_g, 3 * k))
        corner, size = rng.uniform(0, 500, (n_g, 2)), rng.uniform(5, 150, (n_g, 2))  # people's boxes
        g[:, 0::3] = np.round(corner[:, :1] + rng.random((n_g, k)) * size[:, :1], int(rng.integers(0, 3)))
        g[:, 1::3] = np.round(corner[:, 1:] + rng.random((n_g, k)) * size[:, 1:], 1)
        visible = rng.random((n_g, 1)) * 1.2 > rng.random((n_g, k))  # from none to all visible
        g[:, 2::3] = np.where(visible, rng.integers(1, 3, (n_g, k)), 0)
        box = np.c_[rng.uniform(0, 300, (n_g, 2)), rng.uniform(1, 200, (n_g, 2))]
        area = rng.uniform(0, 5e4, n_g) * (rng.random(n_g) > 0.05)  # some zero areas
        d = np.zeros((n_d, 3 * k))
        near = rng.integers(0, n_g, n_d)  # each detection: a ground truth's keypoints, jittered and moved
        shift = rng.normal(0, 1, (n_d, 2)) * rng.choice([0, 5, 50, 300], (n_d, 1))
        d[:, 0::3] = g[near, 0::3] + rng.normal(0, 3, (n_d, k)) + shift[:, :1]
        d[:, 1::3] = g[near, 1::3] + rng.normal(0, 3, (n_d, k)) + shift[:, 1:]
        d[:, 2::3] = rng.random((n_d, k))
        oks = KeypointOks(d, g, box, area, sigmas)
        n = int(rng.integers(1, 400))
        di, gi = rng.integers(0, n_d, n), rng.integers(0, n_g, n)
        cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 5))))
        ours = np.concatenate([oks(a, b) for a, b in zip(np.split(di, cuts), np.split(gi, cuts))])
        ref = np.array([_oks_by_the_rule(d[i], g[j], box[j], area[j], sigmas) for i, j in zip(di, gi)])
        assert np.array_equal(ours, ref), trial
        # the same detections as rows of a larger matrix (a matching half's): the same doubles
        more = np.concatenate([rng.uniform(0, 500, (n_d, 3 * k)), d])
        rows = np.arange(n_d, 2 * n_d)
        assert np.array_equal(KeypointOks(more, g, box, area, sigmas, rows)(di, gi), ref), trial
        # the matcher's call: pairs certainly below its lowest threshold are left out (-inf), others exact
        below = float(rng.choice([0.5, 0.05, 1e-3, 1 - 1e-10, rng.random()]))
        cut = np.concatenate([oks(a, b, below) for a, b in zip(np.split(di, cuts), np.split(gi, cuts))])
        far = np.isinf(cut)
        assert (ref[far] < below).all() and np.array_equal(cut[~far], ref[~far]), trial
        skipped += int(far.sum())
    assert skipped > 1000


def test_row_extents_in_blocks_equal_the_row_min_and_max(monkeypatch):
    """row_extents (OKS pruning and loadRes' keypoint boxes), block by block (blocks forced small), is each
    row's min and max over its masked columns (+inf and −inf where none), bit for bit; keypoint_bounds the x
    and y extents of every record."""
    import deteval.io.coco as coco_io

    rng = np.random.default_rng(2)
    for rows in (1, 7):
        monkeypatch.setattr(coco_kp, "_EXTENT_ROWS", rows)
        for _ in range(30):
            n, k = int(rng.integers(0, 40)), int(rng.integers(1, 20))
            a = np.round(rng.normal(0, 100, (n, k)), 2)
            mask = rng.random((n, k)) < 0.6
            lo, hi = coco_io.row_extents(a)
            assert np.array_equal(lo, a.min(axis=1, initial=np.inf))
            assert np.array_equal(hi, a.max(axis=1, initial=-np.inf))
            lo, hi = coco_io.row_extents(a, mask.T.copy())
            assert np.array_equal(lo, np.where(mask, a, np.inf).min(axis=1, initial=np.inf))
            assert np.array_equal(hi, np.where(mask, a, -np.inf).max(axis=1, initial=-np.inf))
            kp = np.round(rng.normal(0, 100, (n, 3 * k)), 2)
            x, y = kp[:, 0::3], kp[:, 1::3]
            expected = [
                x.min(axis=1, initial=np.inf),
                y.min(axis=1, initial=np.inf),
                x.max(axis=1, initial=-np.inf),
                y.max(axis=1, initial=-np.inf),
            ]
            assert np.array_equal(coco_io.keypoint_bounds(kp), np.stack(expected).reshape(4, n))


def test_compacted_column_sums_equal_numpy_sums():
    """Rows zero-padded past their count c, sorted by group and transposed: np.sum(row[:c]) / c, bit for bit,
    for every c from 1 to 300 (numpy's pairwise sum splits past 128)."""
    from deteval.detection.coco_iou import _compacted_column_sums, _sum_groups

    rng = np.random.default_rng(4)
    for k in (1, 7, 17, 30, 300):
        n = 500
        count = rng.integers(1, k + 1, n)
        a = rng.exponential(1.0, (n, k)) * (np.arange(k) < count[:, None])
        group = _sum_groups(count)
        perm = np.argsort(group, kind="stable")
        got = np.empty(n)
        got[perm] = _compacted_column_sums(np.ascontiguousarray(a[perm].T), count[perm], group[perm])
        ref = np.array([np.sum(a[i, : count[i]]) / count[i] for i in range(n)])
        assert np.array_equal(got, ref), k
