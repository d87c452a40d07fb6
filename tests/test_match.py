"""deteval.match: the box IoU kernels agree with each other where their conventions meet, and the greedy
walks keep their tools' opposite tie rules."""

import numpy as np
import pytest

from deteval.match.greedy import greedy_match
from deteval.match.iou import bb_iou, iou_ioa_yxyx, xyxy_ioa, xyxy_iou


def _integer_boxes(rng, n):
    xy = rng.integers(0, 30, (n, 2)).astype(np.float64)
    wh = rng.integers(1, 15, (n, 2)).astype(np.float64)
    return np.c_[xy, xy + wh]


def test_box_kernels_agree_on_integer_boxes():
    # integer coordinates: every intersection, area and union is exact, so the kernels give the same doubles
    rng = np.random.default_rng(3)
    a, b = _integer_boxes(rng, 40), _integer_boxes(rng, 30)
    plain = xyxy_iou(a[:, None, :], b[None, :, :])
    xywh = lambda x: np.c_[x[:, :2], x[:, 2:] - x[:, :2]]  # noqa: E731
    coco = bb_iou(xywh(a)[:, None, :], xywh(b)[None, :, :], np.zeros((1, 30), dtype=bool))
    assert np.array_equal(plain, coco)
    ii, jj = np.meshgrid(np.arange(40), np.arange(30), indexing="ij")
    yx = lambda x: x[:, [1, 0, 3, 2]]  # noqa: E731
    oi_iou, oi_ioa = iou_ioa_yxyx(yx(a)[ii.ravel()], yx(b)[jj.ravel()])
    assert np.array_equal(oi_iou.reshape(40, 30), plain)
    assert np.array_equal(oi_ioa.reshape(40, 30), xyxy_ioa(b[None, :, :], a[:, None, :]))
    assert 0 < (plain > 0).mean() < 1  # both overlapping and disjoint pairs were compared


def test_plus_one_and_crowd_rules():
    a = np.array([[1.0, 1.0, 10.0, 10.0]])
    b = np.array([[6.0, 1.0, 15.0, 10.0]])
    assert xyxy_iou(a, b, 1.0).tolist() == [50 / 150]  # 5x10 of two 10x10 pixel boxes
    assert xyxy_ioa(a, b, 1.0).tolist() == [0.5]
    # a crowd ground truth divides by the detection's area (pycocotools' bbIou)
    d, g = np.array([[0.0, 0.0, 2.0, 2.0]]), np.array([[1.0, 0.0, 4.0, 4.0]])
    assert bb_iou(d, g, np.array([True])).tolist() == [0.5]
    assert bb_iou(d, g, np.array([False])).tolist() == [2 / 18]
    assert xyxy_iou(a, a + 20.0, 1.0, no_overlap=-np.inf).tolist() == [-np.inf]


def test_greedy_tie_rules_are_opposite():
    # two ground truths at the same IoU: pycocotools' walk takes the last, the devkit's the first
    iou = np.array([[0.6], [0.6]])
    crowd = np.zeros(2, dtype=bool)
    t = np.array([0.5])
    out_c, m_c = greedy_match(iou, crowd, t, "coco")
    out_v, m_v = greedy_match(iou, crowd, t, "voc")
    assert (out_c.tolist(), m_c.tolist()) == ([[1]], [[1]])
    assert (out_v.tolist(), m_v.tolist()) == ([[1]], [[0]])


def test_greedy_duplicates_crowds_and_strict_thresholds():
    # ground truth 0 overlaps both detections best; ground truth 1 only detection 1, less
    iou = np.array([[0.9, 0.8], [0.0, 0.55]])
    crowd = np.zeros(2, dtype=bool)
    t = np.array([0.5, 0.6])
    out_c, m_c = greedy_match(iou, crowd, t, "coco")
    assert out_c.tolist() == [[1, 1], [1, 0]]  # COCO: the second takes the free box if it reaches t
    assert m_c.tolist() == [[0, 1], [0, -1]]
    out_v, _ = greedy_match(iou, crowd, t, "voc")
    assert out_v.tolist() == [[1, 0], [1, 0]]  # VOC: the best box is taken: a duplicate
    # a crowd/difficult best box: ignored under both rules
    iou = np.array([[0.7], [0.3]])
    flags = np.array([True, False])
    assert greedy_match(iou, flags, np.array([0.5]), "coco")[0].tolist() == [[-1]]
    assert greedy_match(iou, flags, np.array([0.5]), "voc")[0].tolist() == [[-1]]
    # an IoU equal to the threshold: a match for >=, not for > (py-faster-rcnn)
    iou = np.array([[0.5]])
    assert greedy_match(iou, np.zeros(1, dtype=bool), np.array([0.5]), "voc")[0].tolist() == [[1]]
    assert greedy_match(iou, np.zeros(1, dtype=bool), np.array([0.5]), "voc", strict=True)[0].tolist() == [
        [0]
    ]


@pytest.mark.parametrize("rule", ["coco", "voc"])
def test_greedy_without_ground_truth(rule):
    out, m = greedy_match(np.zeros((0, 3)), np.zeros(0, dtype=bool), np.array([0.5, 0.75]), rule)
    assert out.tolist() == [[0, 0, 0], [0, 0, 0]] and m.tolist() == [[-1, -1, -1], [-1, -1, -1]]
