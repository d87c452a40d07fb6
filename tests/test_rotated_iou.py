"""The rotated-box IoU kernel (deteval.match.rotated) against shapely's exact polygon geometry, on random
boxes and on the edge cases: ±90° angles, zero-area boxes, identical boxes, containment, crowd regions,
quadrilaterals given clockwise or counter-clockwise."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.match.rotated import quad_iou_matrix, quad_iou_pairs
from deteval.tables.quads import obb_quads, polygon_quads

shapely = pytest.importorskip("shapely")
from shapely.geometry import Polygon  # noqa: E402


def shapely_iou(a: np.ndarray, b: np.ndarray, crowd: bool = False) -> float:
    pa, pb = Polygon(a[:8].reshape(4, 2)), Polygon(b[:8].reshape(4, 2))
    if pa.area <= 0 or pb.area <= 0:
        return 0.0
    inter = pa.intersection(pb).area
    return inter / (pa.area if crowd else pa.area + pb.area - inter)


def random_pairs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = np.c_[
        rng.uniform(0, 100, n),
        rng.uniform(0, 100, n),
        rng.uniform(0.5, 40, n),
        rng.uniform(0.5, 40, n),
        rng.uniform(-np.pi, np.pi, n),
    ]
    a[: n // 8, 4] = np.pi / 2
    a[n // 8 : n // 4, 4] = -np.pi / 2
    b = a.copy()
    b[:, :2] += rng.normal(0, 8, (n, 2))
    b[:, 2:4] *= rng.uniform(0.3, 1.7, (n, 2))
    b[:, 4] += rng.choice([0.0, np.pi / 2, -np.pi / 2, 0.3], n) + rng.normal(0, 0.2, n)
    return a, b


@pytest.mark.parametrize("seed", range(4))
def test_random_boxes_equal_shapely(seed):
    a, b = random_pairs(seed, 200)
    qa, qb = obb_quads(a), obb_quads(b)
    got = quad_iou_pairs(qa, qb, np.zeros(200, bool), np.arange(200), np.arange(200))
    want = np.array([shapely_iou(qa[i], qb[i]) for i in range(200)])
    assert (got > 0).sum() > 100  # most pairs overlap: the clipping is exercised
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_crowd_divides_by_the_detection_area():
    a, b = random_pairs(7, 100)
    qa, qb = obb_quads(a), obb_quads(b)
    got = quad_iou_pairs(qa, qb, np.ones(100, bool), np.arange(100), np.arange(100))
    want = np.array([shapely_iou(qa[i], qb[i], crowd=True) for i in range(100)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_matrix_equals_pairs():
    a, b = random_pairs(3, 30)
    qa, qb = obb_quads(a), obb_quads(b[:17])
    m = quad_iou_matrix(qa, qb)
    assert m.shape == (30, 17)
    want = np.array([[shapely_iou(qa[i], qb[j]) for j in range(17)] for i in range(30)])
    np.testing.assert_allclose(m, want, rtol=0, atol=1e-12)


def test_identical_boxes_give_exactly_one():
    a, _ = random_pairs(11, 50)
    q = obb_quads(a)
    got = quad_iou_pairs(q, q, np.zeros(50, bool), np.arange(50), np.arange(50))
    np.testing.assert_allclose(got, 1.0, rtol=0, atol=1e-12)
    axis = obb_quads(np.array([[5.0, 5.0, 4.0, 2.0, 0.0], [5.0, 5.0, 4.0, 2.0, np.pi / 2]]))
    assert quad_iou_matrix(axis[:1], axis[:1])[0, 0] == 1.0


def test_ninety_degrees_swaps_width_and_height():
    boxes = [[0.0, 0.0, 10.0, 4.0, np.pi / 2], [0.0, 0.0, 4.0, 10.0, 0.0], [0.0, 0.0, 10.0, 4.0, -np.pi / 2]]
    q = obb_quads(np.array(boxes + [[0.0, 0.0, 10.0, 4.0, 0.0]]))
    m = quad_iou_matrix(q, q)
    np.testing.assert_allclose(m[:3, :3], 1.0, rtol=0, atol=1e-12)
    # the unrotated 10×4 box crosses the others in a 4×4 square: 16 / (40 + 40 − 16)
    np.testing.assert_allclose(m[3, :3], 16.0 / 64.0, rtol=0, atol=1e-12)


def test_containment_is_the_area_ratio():
    q = obb_quads(np.array([[10.0, 10.0, 8.0, 6.0, 0.7], [10.0, 10.0, 2.0, 3.0, 0.1]]))
    assert quad_iou_matrix(q[:1], q[1:])[0, 0] == pytest.approx(6.0 / 48.0, abs=1e-14)
    assert quad_iou_matrix(q[1:], q[:1])[0, 0] == pytest.approx(6.0 / 48.0, abs=1e-14)
    # a crowd region holding the detection: intersection over the detection's area
    assert quad_iou_matrix(q[1:], q[:1], np.array([True]))[0, 0] == pytest.approx(1.0, abs=1e-14)


def test_zero_area_and_disjoint_boxes_give_zero():
    q = obb_quads(
        np.array(
            [
                [0.0, 0.0, 0.0, 5.0, 0.3],
                [0.0, 0.0, 5.0, 0.0, 1.0],
                [0.0, 0.0, 5.0, 5.0, 0.0],
                [50.0, 50.0, 5.0, 5.0, 0.2],
            ]
        )
    )
    m = quad_iou_matrix(q, q)
    assert m[0].tolist() == [0.0] * 4 and m[:, 1].tolist() == [0.0] * 4
    assert m[2, 3] == 0.0 and m[3, 2] == 0.0
    assert m[2, 2] == 1.0


def test_quadrilaterals_in_either_orientation():
    a, b = random_pairs(5, 60)
    qa, qb = obb_quads(a), obb_quads(b)
    cw = qa[:, :8].reshape(-1, 4, 2)[:, ::-1].reshape(-1, 8)  # the same boxes, clockwise
    pa, pb = polygon_quads(cw), polygon_quads(qb[:, :8])
    np.testing.assert_allclose(pa[:, 8], a[:, 2] * a[:, 3], rtol=1e-12)
    got = quad_iou_pairs(pa, pb, np.zeros(60, bool), np.arange(60), np.arange(60))
    want = np.array([shapely_iou(qa[i], qb[i]) for i in range(60)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_empty_inputs():
    q = obb_quads(np.zeros((0, 5)))
    assert quad_iou_matrix(q, obb_quads(np.ones((3, 5)))).shape == (0, 3)
    assert quad_iou_pairs(q, q, np.zeros(0, bool), np.zeros(0, int), np.zeros(0, int)).shape == (0,)
