"""The ranking primitive and AP methods on hand-computed cases and edge cases."""

import numpy as np
import pytest

from deteval.core import (
    PY_FASTER_RCNN_LEVELS,
    VOC07_LEVELS,
    ap_all_points,
    average_precision,
    interpolated_precision,
    precision_recall_f,
    rank,
)
from deteval.errors import DetevalError, ValidationError


def test_cumulative_counts_and_ignored_items_take_no_rank():
    r = rank([0.9, 0.95, 0.5, 0.7], [0, -1, 1, 1], n_pos=3)
    assert r.order.tolist() == [0, 3, 2]
    assert r.tp.tolist() == [0, 1, 2]
    assert r.fp.tolist() == [1, 1, 1]
    assert r.precision().tolist() == [0.0, 0.5, 2 / 3]
    assert r.recall().tolist() == [0.0, 1 / 3, 2 / 3]


def test_tie_policies():
    scores = [0.5, 0.5, 0.5]
    assert rank(scores, [1, 0, 0]).order.tolist() == [0, 1, 2]
    assert rank(scores, [1, 0, 0], tiebreak=[2, 0, 1]).order.tolist() == [1, 2, 0]
    assert rank(None, [0, 1], ties="presorted").relevant.tolist() == [False, True]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores_rejected(bad):
    with pytest.raises(ValidationError, match="finite"):
        rank([0.1, bad], [1, 0])


def test_invalid_outcomes_and_npos():
    with pytest.raises(ValidationError):
        rank([0.1, 0.2], [1, 2])
    with pytest.raises(ValidationError, match="n_pos"):
        rank([0.1, 0.2], [1, 1], n_pos=1)
    with pytest.raises(DetevalError):
        rank([0.1, 0.2], [1])


def test_empty_and_all_ignored():
    r = rank([], [], n_pos=2)
    assert len(r) == 0
    for m in ("voc07", "all_points", "coco101", "uninterpolated"):
        assert average_precision(r, m) == 0.0
    r = rank([0.3, 0.2], [-1, -1], n_pos=2)
    assert len(r) == 0 and average_precision(r, "all_points") == 0.0


def test_no_positives_value_is_explicit():
    r = rank([0.3, 0.2], [0, 0], n_pos=0)
    assert r.recall().tolist() == [0.0, 0.0]
    assert average_precision(r, "coco101", if_no_positives=-1.0) == -1.0
    assert average_precision(r, "all_points") == 0.0


def test_ap_methods_hand_computed():
    # ranks: R N R N, n_pos = 3 → P = 1, .5, 2/3, .5 ; R = 1/3, 1/3, 2/3, 2/3
    r = rank([4, 3, 2, 1], [1, 0, 1, 0], n_pos=3)
    assert average_precision(r, "uninterpolated") == pytest.approx((1 + 2 / 3) / 3, abs=1e-15)
    assert average_precision(r, "all_points") == pytest.approx(1 / 3 + (1 / 3) * (2 / 3), abs=1e-15)
    # 11-point: t=0..0.3 → 1 (4 levels), t=0.4..0.6 → 2/3 (3 levels), t>=0.7 → 0
    assert average_precision(r, "voc07") == pytest.approx((4 + 3 * 2 / 3) / 11, abs=1e-15)
    eps = np.spacing(1)
    p1, p3 = 1 / (1 + eps), 2 / (3 + eps)
    # 101 levels: 0..0.33 (34 levels) → p1, 0.34..0.66 (33 levels) → p3
    assert average_precision(r, "coco101") == pytest.approx((34 * p1 + 33 * p3) / 101, abs=1e-15)


def test_voc07_levels_are_exact_decimals():
    assert VOC07_LEVELS.tolist() == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert PY_FASTER_RCNN_LEVELS[3] > 0.3 and PY_FASTER_RCNN_LEVELS[3] == np.nextafter(0.3, 1)


def test_interpolated_precision():
    rec = np.array([0.25, 0.5, 0.5, 0.75])
    prec = np.array([1.0, 0.5, 0.6, 0.3])
    assert interpolated_precision(rec, prec, [0.0, 0.5, 0.6, 1.0]).tolist() == [1.0, 0.6, 0.3, 0.0]


def test_all_points_rejects_nan_and_unsorted():
    with pytest.raises(ValidationError):
        ap_all_points([0.1, 0.0], [1.0, 1.0])
    with pytest.raises(ValidationError):
        ap_all_points([0.1, 0.2], [np.nan, 1.0])


def test_prf_zero_denominators():
    assert precision_recall_f(0, 0, 0) == (0.0, 0.0, 0.0)
    assert precision_recall_f(0, 0, 0, zero_division=1.0) == (1.0, 1.0, 1.0)
    assert precision_recall_f(0, 5, 0).recall == 0.0
    p, r, f = precision_recall_f(np.array([1, 0]), np.array([1, 0]), np.array([0, 0]))
    assert p.tolist() == [0.5, 0.0] and r.tolist() == [1.0, 0.0] and f.tolist() == [2 / 3, 0.0]
    assert precision_recall_f(1, 1, 3, beta=2).f == pytest.approx(5 * 0.5 * 0.25 / (4 * 0.5 + 0.25))


def test_prf_scalar_path_equals_array_path():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 20, size=(500, 3))
    p, r, f = precision_recall_f(counts[:, 0], counts[:, 1], counts[:, 2], beta=0.5)
    for i, (tp, fp, fn) in enumerate(counts.tolist()):
        assert precision_recall_f(tp, fp, fn, beta=0.5) == (p[i], r[i], f[i])
    with pytest.raises(ValidationError):
        precision_recall_f(-1, 0, 0)
    with pytest.raises(ValidationError):
        precision_recall_f(1.0, float("nan"), 0)
