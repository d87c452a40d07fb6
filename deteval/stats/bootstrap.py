"""Bootstrap confidence intervals and paired bootstrap comparisons over resampling units.

A metric is a function of integer *unit weights*: ``metric(w)`` with ``w`` of shape (k, n_units) returns
(k, m) values, row r being the m metrics of the test set in which unit u appears ``w[r, u]`` times (NaN where a
metric is undefined in that resample, e.g. a class left without ground truth). All weights 1 is the test set
itself. A paired metric ``mix(w_a, w_b)`` is the metric of the system that answers unit u with system A's
outputs ``w_a[r, u]`` times and system B's ``w_b[r, u]`` times (on the same ground truth): the paired bootstrap
draws one ``w`` and evaluates A = ``mix(w, 0)`` and B = ``mix(0, w)``, the randomization test
(:mod:`deteval.stats.tests`) evaluates ``mix(1 - s, s)`` and ``mix(s, 1 - s)`` for a random swap mask ``s``.

Formulas (B resamples, level 1 − α, θ̂ the metric on the test set, θ*_b on resample b):

* resample b draws n_units units uniformly with replacement: ``w[b] = bincount(rng.integers(0, n, n))`` with
  ``rng = numpy.random.default_rng(seed)``, one row after the other.
* percentile interval: ``numpy.nanquantile(θ*, [α/2, 1 − α/2])`` (numpy's default linear interpolation).
* BCa (Efron 1987): z0 = Φ⁻¹(#{θ*_b < θ̂} / B); acceleration a = Σ(θ̄ − θ_(i))³ / (6 (Σ(θ̄ − θ_(i))²)^1.5)
  from the jackknife values θ_(i) (unit i weighted 0); the percentile interval read at
  Φ(z0 + (z0 + z_q) / (1 − a (z0 + z_q))) for q = α/2, 1 − α/2.
* standard error: the standard deviation (ddof 1) of θ*.
* paired bootstrap: δ* = A* − B* on the same resample; interval as above on δ*; two-sided p-value
  min(1, 2 (1 + min(#{δ*_b <= 0}, #{δ*_b >= 0})) / (B + 1)), the percentile p-value: it is below α
  about when the percentile interval at level 1 − α excludes 0, so the p-value and the interval agree.
* smallest detectable difference at level α and power π: (Φ⁻¹(1 − α/2) + Φ⁻¹(π)) · se(δ*).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from deteval.errors import ConfigError
from deteval.stats.parallel import Processes, evaluate_rows

__all__ = [
    "CI_METHODS",
    "BootstrapResult",
    "Metric",
    "PairMetric",
    "bootstrap",
    "bootstrap_weights",
    "check_weights",
    "min_detectable_difference",
    "paired_bootstrap",
]

#: weights (k, n_units) -> values (k, m)
Metric = Callable[[np.ndarray], np.ndarray]
#: (weights of A's outputs, weights of B's outputs), both (k, n_units) -> values (k, m)
PairMetric = Callable[[np.ndarray, np.ndarray], np.ndarray]

CI_METHODS = ("percentile", "bca")


def _check(n_units: int, n_resamples: int, level: float, method: str) -> None:
    if method not in CI_METHODS:
        raise ConfigError(f"unknown interval method {method!r}: use one of {', '.join(CI_METHODS)}")
    if n_units < 1:
        raise ConfigError("a bootstrap needs at least one resampling unit (image, topic or track)")
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ConfigError(
            f"the number of bootstrap resamples must be a positive integer, got {n_resamples!r}"
        )
    if not 0.0 < level < 1.0:
        raise ConfigError(f"the confidence level must be between 0 and 1 (e.g. 0.95), got {level!r}")


#: The most resample weights (resamples × units) held at once: 2**28 int64 counts, 2 GiB (and 1 GiB of draws).
MAX_WEIGHTS = 1 << 28


def check_weights(n_units: int, n_resamples: int) -> None:
    """Refuse (:class:`~deteval.errors.ConfigError`, saying how many resamples fit) more than
    :data:`MAX_WEIGHTS` resample weights: ``n_resamples`` × ``n_units`` int64 counts. A command that knows its
    units before evaluating calls it first, so that the refusal does not wait for the evaluation."""
    if int(n_resamples) * int(n_units) > MAX_WEIGHTS:
        fit = max(MAX_WEIGHTS // max(int(n_units), 1), 0)
        raise ConfigError(
            f"{int(n_resamples):,} resamples of {int(n_units):,} units need "
            f"{int(n_resamples) * int(n_units) * 8 / 2**30:.1f} GiB of resample weights (at most "
            f"{MAX_WEIGHTS * 8 / 2**30:.0f} GiB): use --bootstrap {fit} or fewer"
        )


def bootstrap_weights(n_units: int, n_resamples: int, seed: int = 0) -> np.ndarray:
    """(B, n_units) int64 unit counts of B resamples with replacement (module docstring), reproducible from
    ``seed``: the same seed gives the same resamples. More than :data:`MAX_WEIGHTS` counts is a
    :class:`~deteval.errors.ConfigError` saying how many resamples fit, before anything is allocated."""
    check_weights(n_units, n_resamples)
    rng = np.random.default_rng(seed)
    # int32 draws where the units fit: numpy's bounded generator draws the same values for int32 and int64
    # (both through its 32-bit Lemire path below 2**32), in half the memory
    dtype = np.int32 if n_units < 2**31 else np.int64
    draws = rng.integers(0, n_units, size=(int(n_resamples), n_units), dtype=dtype)
    out = np.empty((int(n_resamples), n_units), dtype=np.int64)
    for r, row in enumerate(draws):  # row by row: no offset copy of every draw (page faults in a new process)
        out[r] = np.bincount(row, minlength=n_units)
    return out


def _quantiles(samples: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(m, len(q)) nanquantiles per column, NaN for a column with no defined value; q may be (m, len(q))."""
    m = samples.shape[1]
    qq = np.broadcast_to(q, (m, q.shape[-1]))
    out = np.full((m, qq.shape[1]), np.nan)
    for j in range(m):
        col = samples[:, j]
        col = col[~np.isnan(col)]
        if col.size and not np.isnan(qq[j]).any():
            out[j] = np.quantile(col, qq[j])
    return out


def _bca_levels(samples: np.ndarray, point: np.ndarray, jack: np.ndarray, alpha: float) -> np.ndarray:
    """(m, 2) BCa-adjusted quantile levels (module docstring)."""
    nd = NormalDist()
    out = np.full((samples.shape[1], 2), np.nan)
    for j in range(samples.shape[1]):
        col = samples[:, j]
        col = col[~np.isnan(col)]
        jj = jack[:, j]
        jj = jj[~np.isnan(jj)]
        if not col.size or np.isnan(point[j]) or not jj.size:
            continue
        frac = np.count_nonzero(col < point[j]) / col.size
        if frac <= 0.0 or frac >= 1.0:
            continue  # every resample on one side: BCa is undefined
        z0 = nd.inv_cdf(frac)
        d = jj.mean() - jj
        den = 6.0 * float(np.sum(d**2)) ** 1.5
        a = float(np.sum(d**3)) / den if den > 0 else 0.0
        for k, q in enumerate((alpha / 2, 1 - alpha / 2)):
            zq = z0 + nd.inv_cdf(q)
            out[j, k] = nd.cdf(z0 + zq / (1 - a * zq))
    return out


@dataclass(frozen=True)
class BootstrapResult:
    """``point`` (m,) the metrics on the test set, ``samples`` (B, m) on the resamples, ``ci`` (m, 2) the
    interval at ``level``, ``se`` (m,) the bootstrap standard error, ``mdd`` (m,) the smallest difference
    from a second, independently evaluated system of equal variance detectable at α = 0.05 with power 0.8:
    :func:`min_detectable_difference` of √2 · se (a paired comparison reports its own, usually smaller)."""

    point: np.ndarray
    samples: np.ndarray
    ci: np.ndarray
    se: np.ndarray
    mdd: np.ndarray
    level: float
    method: str


def _summarize(
    point: np.ndarray,
    samples: np.ndarray,
    level: float,
    method: str,
    jack: Callable[[], np.ndarray] | None,
    mdd_factor: float,
) -> BootstrapResult:
    alpha = 1.0 - level
    if method == "bca" and jack is not None:
        q = _bca_levels(samples, point, jack(), alpha)
    else:
        q = np.array([alpha / 2, 1 - alpha / 2])
    ci = _quantiles(samples, q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a metric undefined in every resample: se NaN
        se = np.nanstd(samples, axis=0, ddof=1) if samples.shape[0] > 1 else np.full(point.shape, np.nan)
    return BootstrapResult(point, samples, ci, se, min_detectable_difference(se * mdd_factor), level, method)


def _jackknife(metric: Metric, n_units: int, processes: Processes = 1) -> np.ndarray:
    w = np.ones((n_units, n_units), dtype=np.int64)
    np.fill_diagonal(w, 0)
    return evaluate_rows(metric, w, processes=processes)


def bootstrap(
    metric: Metric,
    n_units: int,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    method: str = "percentile",
    processes: Processes = "auto",
) -> BootstrapResult:
    """Bootstrap interval of every metric ``metric`` returns, resampling ``n_units`` units (module docstring).

    ``method``: ``"percentile"`` (default) or ``"bca"`` (costs n_units extra evaluations, the jackknife).
    ``processes``: resamples evaluated in that many forked processes, or ``"auto"`` (2 where it pays:
    :mod:`deteval.stats.parallel`); the numbers do not depend on it.

    >>> v = np.array([[0.1], [0.4], [0.5], [0.9]])
    >>> r = bootstrap(lambda w: w @ v / w.sum(1, keepdims=True), 4, n_resamples=200, seed=1)
    >>> float(r.point[0]), bool(r.ci[0, 0] < 0.475 < r.ci[0, 1])
    (0.475, True)
    """
    _check(n_units, n_resamples, level, method)
    point = evaluate_rows(metric, np.ones((1, n_units), dtype=np.int64))[0]
    samples = evaluate_rows(metric, bootstrap_weights(n_units, n_resamples, seed), processes=processes)
    return _summarize(
        point, samples, level, method, lambda: _jackknife(metric, n_units, processes), float(np.sqrt(2.0))
    )


@dataclass(frozen=True)
class PairedResult:
    """A paired bootstrap: ``a``, ``b`` (m,) the two systems' metrics, ``delta`` = a − b, ``ci`` (m, 2) of
    the delta, ``p_value`` (m,) two-sided, ``se`` and ``mdd`` of the delta, ``samples`` (B, m) of δ*."""

    a: np.ndarray
    b: np.ndarray
    delta: np.ndarray
    ci: np.ndarray
    p_value: np.ndarray
    se: np.ndarray
    mdd: np.ndarray
    samples: np.ndarray


def paired_bootstrap(
    mix: PairMetric,
    n_units: int,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    method: str = "percentile",
    processes: Processes = "auto",
) -> PairedResult:
    """Paired bootstrap of A − B: both systems see the same resampled units (module docstring);
    ``processes`` as :func:`bootstrap`."""
    _check(n_units, n_resamples, level, method)
    one = np.ones((1, n_units), dtype=np.int64)
    a = evaluate_rows(lambda w: mix(w, np.zeros_like(w)), one)[0]
    b = evaluate_rows(lambda w: mix(np.zeros_like(w), w), one)[0]

    def delta(w: np.ndarray) -> np.ndarray:
        z = np.zeros_like(w)
        return np.asarray(mix(w, z)) - np.asarray(mix(z, w))

    d_hat = a - b
    samples = evaluate_rows(delta, bootstrap_weights(n_units, n_resamples, seed), processes=processes)
    res = _summarize(d_hat, samples, level, method, lambda: _jackknife(delta, n_units, processes), 1.0)
    with np.errstate(invalid="ignore"):
        below = np.count_nonzero(samples <= 0, axis=0)
        above = np.count_nonzero(samples >= 0, axis=0)
    n_def = np.count_nonzero(~np.isnan(samples), axis=0)
    tail = 2.0 * (np.minimum(below, above) + 1.0) / (n_def + 1.0)
    p = np.where(n_def > 0, np.minimum(1.0, tail), np.nan)
    return PairedResult(a, b, d_hat, res.ci, p, res.se, res.mdd, samples)


def min_detectable_difference(
    se: np.ndarray | float, *, alpha: float = 0.05, power: float = 0.8
) -> np.ndarray:
    """(Φ⁻¹(1 − α/2) + Φ⁻¹(power)) · se: the smallest true difference a two-sided test at level α detects
    with the given power when the estimate's standard error is ``se`` (normal approximation; 2.80 · se at
    α = 0.05, power 0.8). For a single system's se, pass √2 · se for a second system of equal variance
    evaluated independently (a paired test on the same units is usually more sensitive)."""
    nd = NormalDist()
    return (nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)) * np.asarray(se, dtype=np.float64)
