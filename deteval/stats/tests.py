"""Significance tests of a difference between two systems on the same units.

* :func:`randomization_test`: approximate randomization (Fisher's randomization test, as in Smucker et al.,
  CIKM 2007): under the null the two systems are exchangeable on every unit, so each of R rounds swaps the
  two systems' outputs on the units where a fair coin says so (``s = rng.integers(0, 2, (R, n))`` with
  ``rng = numpy.random.default_rng(seed)``) and recomputes the metric of both pseudo-systems; two-sided
  p = (1 + #{|A*_r − B*_r| >= |Â − B̂|}) / (R + 1). Valid for any metric, decomposable or not (mAP).
* :func:`paired_t` and :func:`wilcoxon`: for per-topic measures, ``scipy.stats.ttest_rel(a, b)`` and
  ``scipy.stats.wilcoxon(a, b)`` with scipy's defaults, called on the per-unit values (two-sided).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deteval.errors import ConfigError
from deteval.stats.bootstrap import PairMetric
from deteval.stats.parallel import CHUNK, Processes, evaluate_rows

__all__ = ["TESTS", "RandomizationResult", "SwapMix", "paired_t", "randomization_test", "wilcoxon"]

TESTS = ("bootstrap", "randomization", "t", "wilcoxon")


@dataclass(frozen=True)
class RandomizationResult:
    """``a``, ``b`` (m,) the systems' metrics, ``delta`` = a − b, ``p_value`` (m,) two-sided."""

    a: np.ndarray
    b: np.ndarray
    delta: np.ndarray
    p_value: np.ndarray


@dataclass(frozen=True)
class SwapMix:
    """A paired metric (``mix(w_a, w_b)``) that also evaluates a round's two pseudo-systems at once:
    ``rounds(s)`` = (``mix(1 - s, s)``, ``mix(s, 1 - s)``), the same numbers, cheaper where the second's
    counts follow from the first's (COCO: :meth:`~deteval.stats.coco_batch.CocoBatch.complements`)."""

    mix: PairMetric
    rounds: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]

    def __call__(self, wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
        return self.mix(wa, wb)


def _round_deltas(mix: PairMetric) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """|A* − B*| of swap masks, and the rows per call (a :class:`SwapMix` holds both systems' values)."""
    if isinstance(mix, SwapMix):
        rounds = mix.rounds

        def both(s: np.ndarray) -> np.ndarray:
            a, b = rounds(s)
            return np.abs(np.asarray(a) - np.asarray(b))

        return both, max(1, CHUNK // 2)
    return lambda s: np.abs(np.asarray(mix(1 - s, s)) - np.asarray(mix(s, 1 - s))), CHUNK


def randomization_test(
    mix: PairMetric, n_units: int, *, n_rounds: int = 1000, seed: int = 0, processes: Processes = "auto"
) -> RandomizationResult:
    """Approximate randomization test of A − B (module docstring); ``mix`` as in
    :mod:`deteval.stats.bootstrap`; ``processes``: rounds evaluated in that many forked processes
    (:mod:`deteval.stats.parallel`; the p-values do not depend on it)."""
    if n_units < 1:
        raise ConfigError("a randomization test needs at least one unit (image, topic or track)")
    if int(n_rounds) != n_rounds or n_rounds < 1:
        raise ConfigError(f"the number of randomization rounds must be a positive integer, got {n_rounds!r}")
    one = np.ones((1, n_units), dtype=np.int64)
    zero = np.zeros_like(one)
    # the round that swaps nothing: A and B (a SwapMix's from the one merged evaluation)
    pair = mix.rounds(zero) if isinstance(mix, SwapMix) else (mix(one, zero), mix(zero, one))
    a, b = (np.asarray(x, dtype=np.float64)[0] for x in pair)
    d_hat = np.abs(a - b)
    swap = np.random.default_rng(seed).integers(0, 2, size=(int(n_rounds), n_units)).astype(np.int64)
    deltas, chunk = _round_deltas(mix)
    d = evaluate_rows(deltas, swap, chunk=chunk, processes=processes)
    defined = ~np.isnan(d)
    n_def = np.count_nonzero(defined, axis=0)
    # a relative tolerance: a swap that reproduces the observed split must count as "as extreme" even when
    # the two sums round differently
    with np.errstate(invalid="ignore"):
        count = np.count_nonzero(defined & (d >= d_hat - 1e-12 * np.maximum(1.0, d_hat)), axis=0)
    p = np.where(n_def > 0, (1.0 + count) / (n_def + 1.0), np.nan)
    return RandomizationResult(a, b, a - b, p)


def _scipy_stats() -> Any:
    """scipy.stats, loaded on first use (through importlib: scipy ships no type stubs)."""
    return importlib.import_module("scipy.stats")


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ConfigError(f"paired tests need per-unit values of equal length, got {x.shape} and {y.shape}")
    return x, y


def paired_t(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sided p-value of ``scipy.stats.ttest_rel(a, b)`` (NaN when every difference is equal)."""
    stats = _scipy_stats()
    x, y = _pair(a, b)
    return float(stats.ttest_rel(x, y).pvalue)


def wilcoxon(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sided p-value of ``scipy.stats.wilcoxon(a, b)`` with scipy's defaults (zero differences:
    ``"wilcox"``; NaN when every difference is zero, where scipy refuses)."""
    stats = _scipy_stats()
    x, y = _pair(a, b)
    if not np.any(x != y):
        return float("nan")
    return float(stats.wilcoxon(x, y).pvalue)
