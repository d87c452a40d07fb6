"""The vectorised VOC matcher and protocol against the plain one-detection-at-a-time references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from voc_reference import devkit_ap, devkit_outcomes, matlab_for_values, pyfrcnn_ap

from deteval.core import PY_FASTER_RCNN_LEVELS, VOC07_LEVELS
from deteval.detection.boxes import box_iou, convert_boxes, paired_iou
from deteval.detection.voc import (
    VOC_DEVKIT_LEVELS,
    VOCDetections,
    VOCGroundTruth,
    VOCParams,
    match_voc,
)
from deteval.errors import ConfigError, ValidationError
from deteval.run.voc import evaluate_voc


def random_case(seed: int, big: bool = False):
    rng = np.random.default_rng(seed)
    n_img = int(rng.integers(1, 4 if big else 7))
    n_cls = int(rng.integers(1, 4))
    gi, gl, gb, gd = [], [], [], []
    for i in range(n_img):
        for _ in range(int(rng.integers(0, 6))):  # 0 objects: an empty image
            x1, y1 = (int(v) for v in rng.integers(0, 12, 2))
            w, h = (int(v) for v in rng.integers(0, 8, 2))  # w = 0: a zero-size (one-pixel) box
            gi.append(i)
            gl.append(int(rng.integers(0, n_cls)))
            gb.append([x1, y1, x1 + w, y1 + h])
            gd.append(bool(rng.random() < 0.3))
    di, dl, db, ds = [], [], [], []
    n_det = int(rng.integers(0, 60 if big else 25))
    score_pool = np.round(rng.random(4), 2) if rng.random() < 0.7 else None  # few distinct scores: ties
    for _ in range(n_det):
        if gb and rng.random() < 0.6:
            k = int(rng.integers(0, len(gb)))
            jitter = rng.integers(-2, 3, 4) if rng.random() < 0.7 else np.zeros(4, int)  # 0: exact duplicate
            b = np.array(gb[k]) + jitter
            b[2], b[3] = max(b[2], b[0]), max(b[3], b[1])
            img, lab = gi[k], gl[k] if rng.random() < 0.9 else int(rng.integers(0, n_cls))
        else:
            x1, y1 = (int(v) for v in rng.integers(0, 14, 2))
            b = np.array([x1, y1, x1 + int(rng.integers(0, 8)), y1 + int(rng.integers(0, 8))])
            img, lab = int(rng.integers(0, n_img)), int(rng.integers(0, n_cls))
        if rng.random() < 0.2:
            b = b + 0.5  # float coordinates
        di.append(img)
        dl.append(lab)
        db.append(b.astype(float).tolist())
        ds.append(float(rng.choice(score_pool)) if score_pool is not None else float(rng.random()))
    thr = float(rng.choice([0.1, 0.3, 0.5, 0.5, 0.7]))
    return n_img, n_cls, (gi, gl, gb, gd), (di, dl, db, ds), thr


def _tables(n_img, n_cls, g, d):
    gt = VOCGroundTruth.from_arrays(
        g[0], g[1], np.array(g[2], float).reshape(-1, 4), g[3], images=n_img, classes=n_cls
    )
    dt = VOCDetections.from_arrays(
        d[0], d[1], np.array(d[2], float).reshape(-1, 4), d[3], images=n_img, classes=n_cls
    )
    return gt, dt


def _plain(c, g, d):
    pg = [(i, b, diff) for i, lab, b, diff in zip(*g) if lab == c]
    rows = [k for k, lab in enumerate(d[1]) if lab == c]
    pd = [(d[0][k], d[3][k], d[2][k]) for k in rows]
    return pg, pd, rows


@pytest.mark.parametrize("seed", range(240))
def test_devkit_profile_matches_plain_reference(seed):
    n_img, n_cls, g, d, thr = random_case(seed, big=seed % 5 == 0)
    gt, dt = _tables(n_img, n_cls, g, d)
    plus_one = seed % 7 != 3
    one = 1.0 if plus_one else 0.0
    outcome = match_voc(
        dt.image,
        dt.boxes,
        dt.scores,
        gt.image,
        gt.boxes,
        gt.difficult,
        det_label=dt.label,
        gt_label=gt.label,
        iou_threshold=thr,
        plus_one=plus_one,
    )
    for metric in ("voc07", "voc2010"):
        res = evaluate_voc(gt, dt, iou_threshold=thr, metric=metric, plus_one=plus_one)
        aps = []
        for c in range(n_cls):
            pg, pd, rows = _plain(c, g, d)
            ref_out, _ = devkit_outcomes(pg, pd, thr, one)
            assert outcome[rows].tolist() == ref_out
            ref_ap, ref_tp, ref_fp = devkit_ap(pg, pd, thr, use07=metric == "voc07", one=one)
            row = res.per_class.get(str(c))
            if row is None:  # class with neither ground truth nor detections
                assert not pg and not pd
                continue
            assert (row["tp"], row["fp"], row["ndet"]) == (ref_tp, ref_fp, len(pd))
            npos = sum(1 for x in pg if not x[2])
            assert row["npos"] == npos
            if npos == 0:
                assert row["ap"] is None
                continue
            if math.isnan(ref_ap):
                # MATLAB's max over an all-NaN precision (every detection hit a difficult box) is NaN; the
                # AP of a ranking that recalls nothing is 0. Documented deviation.
                assert all(o == -1 for o in ref_out) and row["ap"] == 0.0
            else:
                assert row["ap"] == pytest.approx(ref_ap, abs=1e-12, rel=0)
            aps.append(row["ap"])
        assert res.summary["map"] == (pytest.approx(float(np.mean(aps)), abs=1e-15) if aps else None)


@pytest.mark.parametrize("seed", range(120))
def test_py_faster_rcnn_profile_matches_plain_port(seed):
    n_img, n_cls, g, d, thr = random_case(1000 + seed, big=seed % 2 == 0)  # big: > 16 rows, introsort
    gt, dt = _tables(n_img, n_cls, g, d)
    for use07 in (True, False):
        res = evaluate_voc(
            gt, dt, iou_threshold=thr, metric="voc07" if use07 else "voc2010", profile="py_faster_rcnn"
        )
        for c in range(n_cls):
            pg, pd, _ = _plain(c, g, d)
            if not any(not x[2] for x in pg):
                continue
            ref_ap, ref_tp, ref_fp = pyfrcnn_ap(pg, pd, thr, use07=use07)
            row = res.per_class[str(c)]
            assert (row["tp"], row["fp"]) == (ref_tp, ref_fp)
            assert row["ap"] == pytest.approx(ref_ap, abs=1e-12, rel=0)


def test_ties_across_images_keep_file_order():
    # Two images, one box each; three equal-score detections. The devkit's global stable sort ranks them in
    # file order. Rows 0 and 2 both hit image 1's box: row 0 comes first in the file, so it is the TP and
    # row 2 the duplicate, although row 2 belongs to the same image and has the same score.
    gt = VOCGroundTruth.from_arrays([0, 1], [0, 0], [[0, 0, 9, 9], [0, 0, 9, 9]])
    dt = VOCDetections.from_arrays(
        [1, 0, 1], [0, 0, 0], [[0, 0, 9, 9], [0, 0, 9, 9], [0, 0, 9, 8]], [0.5, 0.5, 0.5]
    )
    out = match_voc(dt.image, dt.boxes, dt.scores, gt.image, gt.boxes)
    assert out.tolist() == [1, 1, 0]
    res = evaluate_voc(gt, dt, metric="voc2010")
    # ranks: TP, TP, FP → precision 1, 1, 2/3; recall 0.5, 1, 1 → AP 1
    assert res.curves["0"].precision.tolist() == [1.0, 1.0, 2 / 3]
    assert res.summary["map"] == 1.0
    # The later duplicate first in the file: it becomes the TP, the better box the FP.
    out2 = match_voc([1, 1], [[0, 0, 9, 8], [0, 0, 9, 9]], [0.5, 0.5], [1], [[0, 0, 9, 9]])
    assert out2.tolist() == [1, 0]


def test_first_ground_truth_wins_an_iou_tie():
    # Two identical boxes: the detection takes the first; the second detection's best is also the first
    # (taken) → duplicate FP even though an identical free box exists. That is the devkit's rule.
    out = match_voc([0, 0], [[0, 0, 9, 9], [0, 0, 9, 9]], [0.9, 0.8], [0, 0], [[0, 0, 9, 9], [0, 0, 9, 9]])
    assert out.tolist() == [1, 0]


def test_best_box_is_chosen_among_taken_and_difficult_ones():
    gtb = [[0, 0, 9, 9], [0, 0, 9, 12]]
    # det 0 takes box 0; det 1 overlaps box 0 best (IoU 1) though box 1 is free and above 0.5 → FP.
    assert match_voc([0, 0], [[0, 0, 9, 9]] * 2, [0.9, 0.8], [0, 0], gtb).tolist() == [1, 0]
    # A difficult best box makes the detection ignored even if a non-difficult box also passes.
    assert match_voc([0], [[0, 0, 9, 9]], [0.9], [0, 0], gtb, [True, False]).tolist() == [-1]


def test_threshold_is_inclusive_for_devkit_strict_for_py_faster_rcnn():
    # IoU exactly 0.5 with +1: a 10x10 box vs its left half-overlapping 10x20 → 100/200.
    gt_box, det_box = [[1, 1, 10, 20]], [[1, 1, 10, 10]]
    assert box_iou(det_box, gt_box, plus_one=True)[0, 0] == 0.5
    assert match_voc([0], det_box, [1.0], [0], gt_box).tolist() == [1]
    assert match_voc([0], det_box, [1.0], [0], gt_box, strict=True).tolist() == [0]


def test_no_overlap_never_matches_even_at_threshold_zero():
    out = match_voc([0], [[20, 20, 30, 30]], [1.0], [0], [[0, 0, 5, 5]], iou_threshold=0.0)
    assert out.tolist() == [0]
    # Touching boxes overlap by one pixel column under +1, not without it.
    assert box_iou([[0, 0, 5, 5]], [[5, 0, 9, 5]], plus_one=True)[0, 0] == pytest.approx(6 / 60)
    assert box_iou([[0, 0, 5, 5]], [[5, 0, 9, 5]], plus_one=False)[0, 0] == 0.0


def test_class_with_no_detections_and_detections_without_ground_truth():
    gt = VOCGroundTruth.from_arrays(
        [0, 0], [0, 0], [[0, 0, 9, 9], [20, 20, 29, 29]], images=["a", "b"], classes=["cat", "dog"]
    )
    dt = VOCDetections.from_arrays(
        [0, 1], [1, 1], [[0, 0, 9, 9], [0, 0, 9, 9]], [0.9, 0.8], images=["a", "b"], classes=["cat", "dog"]
    )
    res = evaluate_voc(gt, dt)
    assert res.per_class["cat"] == {
        "ap": 0.0,
        "npos": 2,
        "ndet": 0,
        "tp": 0,
        "fp": 0,
        "ignored": 0,
        "difficult": 0,
    }
    assert res.per_class["dog"]["ap"] is None and res.per_class["dog"]["fp"] == 2
    assert res.summary["map"] == 0.0 and res.summary["n_classes_averaged"] == 1
    assert any("dog (2 detections)" in w for w in res.warnings)


def test_image_with_only_difficult_objects_and_difficult_hit_at_rank_one():
    # image 0: one difficult object; image 1: one normal object.
    gt = VOCGroundTruth.from_arrays([0, 1], [0, 0], [[0, 0, 9, 9], [0, 0, 9, 9]], [True, False])
    dt = VOCDetections.from_arrays(
        [0, 1, 0], [0, 0, 0], [[0, 0, 9, 9], [0, 0, 9, 9], [50, 50, 60, 60]], [0.9, 0.8, 0.7]
    )
    # voc07: eleven times p/11 with p = 1, accumulated as the devkit does = 1.0000000000000002.
    for metric, expected in (("voc07", 1.0000000000000002), ("voc2010", 1.0)):
        res = evaluate_voc(gt, dt, metric=metric)
        row = res.per_class["0"]
        assert row["ap"] == expected and not math.isnan(row["ap"])
        assert (row["npos"], row["tp"], row["fp"], row["ignored"], row["difficult"]) == (1, 1, 1, 1, 1)
    # The reference (MATLAB semantics: NaN precision at the ignored top row, skipped by max) agrees.
    pg = [(0, [0, 0, 9, 9], True), (1, [0, 0, 9, 9], False)]
    pd = [(0, 0.9, [0, 0, 9, 9]), (1, 0.8, [0, 0, 9, 9]), (0, 0.7, [50, 50, 60, 60])]
    assert devkit_ap(pg, pd, use07=True)[0] == 1.0000000000000002 and devkit_ap(pg, pd)[0] == 1.0


def test_only_difficult_ground_truth_is_reported_not_averaged():
    gt = VOCGroundTruth.from_arrays([0], [0], [[0, 0, 9, 9]], [True])
    dt = VOCDetections.from_arrays([0], [0], [[0, 0, 9, 9]], [0.9])
    res = evaluate_voc(gt, dt)
    assert res.per_class["0"]["ap"] is None and res.summary["map"] is None
    assert res.to_dict()["map"] is None


#: The eleven values of VOCevaldet.m's ``for t=0:0.1:1`` (t = 0 + k*0.1), written out.
DEVKIT_LOOP_DOUBLES = [0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001,
                       0.8, 0.9, 1.0]  # fmt: skip


def test_devkit_levels_are_the_for_loop_doubles():
    assert VOC_DEVKIT_LEVELS.tolist() == DEVKIT_LOOP_DOUBLES
    assert VOC_DEVKIT_LEVELS.tolist() == matlab_for_values(0.0, 0.1, 1.0) == [k * 0.1 for k in range(11)]
    # One ulp above the decimals at k = 3, 6, 7 only.
    assert np.flatnonzero(VOC_DEVKIT_LEVELS != VOC07_LEVELS).tolist() == [3, 6, 7]
    for k in (3, 6, 7):
        assert VOC_DEVKIT_LEVELS[k] == np.nextafter(k / 10, 1.0)
    # py-faster-rcnn's np.arange(0, 1.1, 0.1) holds the same doubles: the two profiles agree on levels.
    assert PY_FASTER_RCNN_LEVELS.tolist() == DEVKIT_LOOP_DOUBLES
    assert np.arange(0, 1.1, 0.1).tolist() == DEVKIT_LOOP_DOUBLES
    assert (
        VOCParams(profile="voc_devkit").levels.tolist() == VOCParams(profile="py_faster_rcnn").levels.tolist()
    )


def _perfect_prefix(n_tp: int, n_obj: int):
    """``n_obj`` objects in one image, the first ``n_tp`` found exactly, ranked first, nothing else; as
    tables and as the plain reference's lists."""
    gtb = [[i * 20, 0, i * 20 + 9, 9] for i in range(n_obj)]
    scores = np.linspace(1.0, 0.5, n_tp).tolist()
    gt = VOCGroundTruth.from_arrays([0] * n_obj, [0] * n_obj, gtb)
    dt = VOCDetections.from_arrays([0] * n_tp, [0] * n_tp, gtb[:n_tp], scores)
    return gt, dt, [(0, b, False) for b in gtb], [(0, s, b) for s, b in zip(scores, gtb)]


@pytest.mark.parametrize(
    ("n_tp", "n_obj", "levels_reached"),
    [(3, 10, 3), (288, 480, 6), (7, 10, 7), (6, 10, 6), (4, 10, 5), (144, 480, 3)],
)
def test_recall_exactly_on_a_tenth_misses_the_devkit_level(n_tp, n_obj, levels_reached):
    """Precision 1 up to recall n_tp/n_obj: the devkit's AP counts only the levels k*0.1 <= recall. A recall
    of exactly 0.3, 0.6 or 0.7 (3/10, 288/480 = 0.6, 7/10) is one ulp below the loop's 0.3, 0.6, 0.7."""
    gt, dt, pg, pd = _perfect_prefix(n_tp, n_obj)
    recall = n_tp / n_obj
    res = evaluate_voc(gt, dt, metric="voc07")
    assert res.curves["0"].recall[-1] == recall
    expected = 0.0
    for _ in range(levels_reached):
        expected = expected + 1.0 / 11  # the devkit's ap = ap + p/11, p = 1
    assert res.summary["map"] == expected
    assert res.summary["map"] == devkit_ap(pg, pd, use07=True)[0]
    # py-faster-rcnn (same levels) agrees; sampling the decimals would count one more level at 0.3/0.6/0.7.
    assert evaluate_voc(gt, dt, metric="voc07", profile="py_faster_rcnn").summary["map"] == expected
    decimal = evaluate_voc(gt, dt, metric="voc07", recall_levels=VOC07_LEVELS).summary["map"]
    on_a_shifted_level = recall in (0.3, 0.6, 0.7)
    assert decimal == pytest.approx((levels_reached + on_a_shifted_level) / 11, abs=1e-15)


def test_box_helpers():
    a = [[0, 0, 10, 10]]
    assert convert_boxes([[1, 2, 3, 4]], "xywh").tolist() == [[1, 2, 4, 6]]
    assert convert_boxes(convert_boxes([[1, 2, 4, 6]], "xyxy", "cxcywh"), "cxcywh").tolist() == [[1, 2, 4, 6]]
    assert paired_iou(a, a).tolist() == [1.0]
    assert box_iou(a, np.empty((0, 4))).shape == (1, 0)
    with pytest.raises(ValidationError):
        box_iou([[0, 0, 1]], a)


def test_bad_parameters_and_columns():
    gt = VOCGroundTruth.from_arrays([0], [0], [[0, 0, 9, 9]])
    dt = VOCDetections.from_arrays([0], [0], [[0, 0, 9, 9]], [0.9])
    with pytest.raises(ConfigError):
        evaluate_voc(gt, dt, metric="coco")
    with pytest.raises(ConfigError):
        evaluate_voc(gt, dt, profile="matlab")
    with pytest.raises(ConfigError):
        evaluate_voc(gt, dt, iou_threshold=1.5)
    with pytest.raises(ValidationError, match="not finite"):
        VOCDetections.from_arrays([0], [0], [[0, 0, 9, 9]], [float("nan")])
    with pytest.raises(ValidationError, match="x2 < x1"):
        VOCGroundTruth.from_arrays([0], [0], [[9, 0, 0, 9]])
    with pytest.raises(ValidationError, match="outside"):
        VOCDetections.from_arrays([3], [0], [[0, 0, 9, 9]], [0.9], images=2)
    other = VOCDetections.from_arrays([0], [0], [[0, 0, 9, 9]], [0.9], images=["zzz"])
    with pytest.raises(ValidationError, match="zzz"):
        evaluate_voc(gt, other)


def test_all_detections_ignored_gives_zero_not_nan():
    # npos = 1 but the only detection hits a difficult box: the devkit's VOC07 loop takes max() over an
    # all-NaN precision and returns NaN; a ranking that recalls nothing has AP 0, which is what we report.
    pg = [(0, [0, 0, 9, 9], True), (0, [30, 30, 39, 39], False)]
    pd = [(0, 0.9, [0, 0, 9, 9])]
    assert math.isnan(devkit_ap(pg, pd, use07=True)[0]) and devkit_ap(pg, pd)[0] == 0.0
    gt = VOCGroundTruth.from_arrays([0, 0], [0, 0], [x[1] for x in pg], [True, False])
    dt = VOCDetections.from_arrays([0], [0], [[0, 0, 9, 9]], [0.9])
    for metric in ("voc07", "voc2010"):
        row = evaluate_voc(gt, dt, metric=metric).per_class["0"]
        assert row["ap"] == 0.0 and row["ignored"] == 1 and row["tp"] == row["fp"] == 0


def test_match_voc_rejects_negative_indices_and_handles_empty_inputs():
    with pytest.raises(ValidationError, match="non-negative"):
        match_voc([-1], [[0, 0, 1, 1]], [0.5], [0], [[0, 0, 1, 1]])
    assert match_voc([], np.empty((0, 4)), [], [0], [[0, 0, 1, 1]]).tolist() == []
    assert match_voc([0, 1], [[0, 0, 1, 1]] * 2, [0.5, 0.4], [], np.empty((0, 4))).tolist() == [0, 0]
    # labels keep classes apart: same image, same box, different class → no match
    out = match_voc(
        [0, 0], [[0, 0, 9, 9]] * 2, [0.9, 0.8], [0], [[0, 0, 9, 9]], det_label=[1, 0], gt_label=[0]
    )
    assert out.tolist() == [0, 1]


_box = st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 6), st.integers(0, 6)).map(
    lambda t: [t[0], t[1], t[0] + t[2], t[1] + t[3]]
)


@settings(max_examples=150, deadline=None)
@given(
    gts=st.lists(st.tuples(st.integers(0, 2), _box, st.booleans()), max_size=8),
    dets=st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0.2, 0.5, 0.5, 0.9]), _box), max_size=14),
    thr=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
)
def test_hypothesis_one_class_matches_reference(gts, dets, thr):
    outcome = match_voc(
        [d[0] for d in dets],
        np.array([d[2] for d in dets], float).reshape(-1, 4),
        [d[1] for d in dets],
        [g[0] for g in gts],
        np.array([g[1] for g in gts], float).reshape(-1, 4),
        [g[2] for g in gts],
        iou_threshold=thr,
    )
    assert outcome.tolist() == devkit_outcomes(gts, dets, thr)[0]


@pytest.mark.parametrize("seed", range(60))
def test_pairs_in_small_chunks_give_identical_outcomes(seed, monkeypatch):
    """The (detection, box) pairs are processed in chunks of at most ``pair_chunk`` (bounded memory on a
    crowded image): any chunk size, down to one pair, gives the plain reference's outcomes and the same
    result."""
    import deteval.detection.voc as voc

    n_img, n_cls, g, d, thr = random_case(seed, big=True)
    gt, dt = _tables(n_img, n_cls, g, d)
    args = (dt.image, dt.boxes, dt.scores, gt.image, gt.boxes, gt.difficult)
    kw = {"det_label": dt.label, "gt_label": gt.label, "iou_threshold": thr}
    whole = match_voc(*args, **kw)
    for broadcast in (1, 3, 10**9):  # detections facing this many boxes or more take the matrix path
        monkeypatch.setattr(voc, "_BROADCAST_BOXES", broadcast)
        for chunk in (1, 2, 3, 7, 50):
            assert match_voc(*args, **kw, pair_chunk=chunk).tolist() == whole.tolist()
    for c in range(n_cls):
        pg, pd, rows = _plain(c, g, d)
        assert whole[rows].tolist() == devkit_outcomes(pg, pd, thr, 1.0)[0]
    full = evaluate_voc(gt, dt, iou_threshold=thr).to_dict()
    monkeypatch.setattr(voc, "PAIR_CHUNK", 3)
    assert evaluate_voc(gt, dt, iou_threshold=thr).to_dict() == full
    with pytest.raises(ConfigError, match="pair_chunk"):
        match_voc(*args, **kw, pair_chunk=0)


def test_crowded_image_matches_plain_reference_in_any_chunks():
    """One image with 300 objects and 400 detections (each detection faces 300 boxes: the matrix path),
    integer boxes so that IoU ties between boxes occur: the devkit loop's outcomes for any chunk size."""
    rng = np.random.default_rng(11)
    gb = np.c_[rng.integers(0, 200, (300, 2)), np.zeros((300, 2))]
    gb[:, 2:] = gb[:, :2] + rng.integers(0, 12, (300, 2))
    src = gb[rng.integers(0, 300, 400)] + rng.integers(-1, 2, (400, 4))
    src[:, 2:] = np.maximum(src[:, 2:], src[:, :2])
    diff = rng.random(300) < 0.1
    scores = np.round(rng.random(400), 2)
    pg = [(0, b.tolist(), bool(x)) for b, x in zip(gb, diff)]
    pd = [(0, float(sc), b.tolist()) for sc, b in zip(scores, src)]
    ref, _ = devkit_outcomes(pg, pd, 0.5, 1.0)
    for chunk in (None, 1, 299, 301, 5000):
        out = match_voc(np.zeros(400, int), src, scores, np.zeros(300, int), gb, diff, pair_chunk=chunk)
        assert out.tolist() == ref
