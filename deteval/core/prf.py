"""Precision, recall and F-beta from counts.

P = TP / (TP + FP), R = TP / (TP + FN), F_beta = (1 + beta²) P R / (beta² P + R).

Zero denominators get a defined value, never a ZeroDivisionError or a NaN: P (no estimate) and R (no
reference) take ``zero_division`` (default 0.0, as mir_eval and scikit-learn), and F is 0 when
beta² P + R = 0. Pass ``zero_division=1.0`` for the convention that an empty estimate of an empty
reference is perfect.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from deteval.errors import ValidationError


class PRF(NamedTuple):
    """Precision, recall and F-measure (floats, or arrays when the counts were arrays)."""

    precision: float | np.ndarray
    recall: float | np.ndarray
    f: float | np.ndarray


def _ratio(num: np.ndarray, den: np.ndarray, fill: float) -> np.ndarray:
    out = np.full(np.broadcast(num, den).shape, fill, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def f_beta(precision: ArrayLike, recall: ArrayLike, beta: float = 1.0) -> float | np.ndarray:
    """F_beta = (1 + beta²) P R / (beta² P + R); 0 where the denominator is 0."""
    if not beta > 0 or not np.isfinite(beta):
        raise ValidationError(f"beta must be a positive finite number, got {beta!r}")
    p = np.asarray(precision, dtype=np.float64)
    r = np.asarray(recall, dtype=np.float64)
    b2 = beta * beta
    f = _ratio((1.0 + b2) * p * r, b2 * p + r, 0.0)
    return float(f) if f.ndim == 0 else f


# Counts given as Python or numpy scalars take the scalar path (plain floats out).
_SCALAR = (int, float, np.integer, np.floating)


def _prf_scalar(tp: float, fp: float, fn: float, beta: float, zero_division: float) -> PRF:
    # Same IEEE operations in the same order as the array path, without numpy's per-call overhead: MIR
    # calls this once per annotation pair, thousands of times in a sweep.
    for name, x in (("tp", tp), ("fp", fp), ("fn", fn)):
        if not math.isfinite(x) or x < 0:
            raise ValidationError(f"{name} must be finite, non-negative counts")
    if not beta > 0 or not math.isfinite(beta):
        raise ValidationError(f"beta must be a positive finite number, got {beta!r}")
    precision = tp / (tp + fp) if tp + fp != 0 else float(zero_division)
    recall = tp / (tp + fn) if tp + fn != 0 else float(zero_division)
    b2 = beta * beta
    den = b2 * precision + recall
    f = (1.0 + b2) * precision * recall / den if den != 0 else 0.0
    return PRF(precision, recall, f)


def precision_recall_f(
    tp: ArrayLike, fp: ArrayLike, fn: ArrayLike, *, beta: float = 1.0, zero_division: float = 0.0
) -> PRF:
    """P, R and F_beta from TP, FP and FN counts (scalars or arrays of equal shape).

    >>> precision_recall_f(10, 3, 14)
    PRF(precision=0.7692307692307693, recall=0.4166666666666667, f=0.5405405405405406)
    """
    if isinstance(tp, _SCALAR) and isinstance(fp, _SCALAR) and isinstance(fn, _SCALAR):
        return _prf_scalar(float(tp), float(fp), float(fn), beta, zero_division)
    t = np.asarray(tp, dtype=np.float64)
    p_ = np.asarray(fp, dtype=np.float64)
    n_ = np.asarray(fn, dtype=np.float64)
    for name, arr in (("tp", t), ("fp", p_), ("fn", n_)):
        if np.any(~np.isfinite(arr)) or np.any(arr < 0):
            raise ValidationError(f"{name} must be finite, non-negative counts")
    precision = _ratio(t, t + p_, zero_division)
    recall = _ratio(t, t + n_, zero_division)
    f = np.asarray(f_beta(precision, recall, beta))
    if precision.ndim == 0:
        return PRF(float(precision), float(recall), float(f))
    return PRF(precision, recall, f)
