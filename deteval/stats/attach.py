"""Intervals and comparisons as fields of an :class:`~deteval.results.EvalResult` (the JSON the CLI writes).

* ``summary["ci"] = {metric: [lo, hi]}`` keyed like the summary (``map``; ``AP``, ``AP50``, ...; measure
  names), ``summary["ci_level"]``, ``summary["ci_method"]``, ``summary["bootstrap"]`` (resamples, seed,
  unit) and ``summary["mdd"] = {metric: d}``, the smallest difference detectable at α = 0.05, power 0.8;
* a ``"ci"`` in each per-class row (its AP);
* ``summary["comparison"] = {metric: {"a", "b", "delta", "ci", "p_value", "p_adjusted", "mdd"}}`` against one
  other system; against several, ``{other: {metric: {...}}}`` keyed by the other system's name. p-values are
  adjusted across all systems × metrics (``summary["correction"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.results import EvalResult
from deteval.stats.bootstrap import BootstrapResult, PairMetric, bootstrap, paired_bootstrap
from deteval.stats.correction import adjust_pvalues
from deteval.stats.parallel import Processes
from deteval.stats.tests import TESTS, paired_t, randomization_test, wilcoxon

__all__ = ["attach_ci", "attach_comparisons", "compare"]


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _pair(lo: float, hi: float) -> list[float | None] | None:
    return None if np.isnan(lo) or np.isnan(hi) else [float(lo), float(hi)]


def attach_ci(
    result: EvalResult,
    names: Sequence[str],
    boot: BootstrapResult,
    *,
    n_resamples: int,
    seed: int,
    unit: str,
    row_of: dict[str, str] | None = None,
) -> None:
    """Add the intervals of ``names`` (the columns of ``boot``) to ``result``; ``row_of`` maps a metric
    column to the per-class row whose ``"ci"`` it is (its AP)."""
    ci: dict[str, Any] = {}
    mdd: dict[str, Any] = {}
    for j, name in enumerate(names):
        if row_of and name in row_of:
            result.per_class[row_of[name]]["ci"] = _pair(*boot.ci[j])
            continue
        ci[name] = _pair(*boot.ci[j])
        mdd[name] = _num(boot.mdd[j])
    result.summary["ci"] = ci
    result.summary["mdd"] = mdd
    result.summary["ci_level"] = boot.level
    result.summary["ci_method"] = boot.method
    result.summary["bootstrap"] = {"resamples": int(n_resamples), "seed": int(seed), "unit": unit}


def compare(
    names: Sequence[str],
    mix: PairMetric,
    n_units: int,
    *,
    test: str = "bootstrap",
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    per_unit: tuple[np.ndarray, np.ndarray] | None = None,
    processes: Processes = "auto",
) -> dict[str, dict[str, Any]]:
    """One comparison A − B per metric: values, delta, the paired-bootstrap interval of the delta, its
    smallest detectable difference and the p-value of ``test`` (``bootstrap``, ``randomization`` with
    ``n_resamples`` rounds, or ``t`` / ``wilcoxon`` on ``per_unit`` = (A's, B's) (n_units, m) values);
    resamples and rounds in ``processes`` processes (:mod:`deteval.stats.parallel`)."""
    if test not in TESTS:
        raise ConfigError(f"unknown test {test!r}: use one of {', '.join(TESTS)}")
    if test in ("t", "wilcoxon") and per_unit is None:
        raise ConfigError(
            f"the {test} test needs per-unit values of a mean over units (TREC measures); mAP and AP are "
            "not means over images: use --test bootstrap or --test randomization"
        )
    pb = paired_bootstrap(mix, n_units, n_resamples=n_resamples, seed=seed, level=level, processes=processes)
    if test == "randomization":
        p = randomization_test(mix, n_units, n_rounds=n_resamples, seed=seed, processes=processes).p_value
    elif test in ("t", "wilcoxon") and per_unit is not None:
        fn = paired_t if test == "t" else wilcoxon
        p = np.array([fn(per_unit[0][:, j], per_unit[1][:, j]) for j in range(len(names))])
    else:
        p = pb.p_value
    return {
        name: {
            "a": _num(pb.a[j]),
            "b": _num(pb.b[j]),
            "delta": _num(pb.delta[j]),
            "ci": _pair(*pb.ci[j]),
            "p_value": _num(p[j]),
            "mdd": _num(pb.mdd[j]),
        }
        for j, name in enumerate(names)
    }


def attach_comparisons(
    result: EvalResult, comparisons: dict[str, dict[str, dict[str, Any]]], *, test: str, correction: str
) -> None:
    """Adjust every p-value (all systems × metrics) and store the comparisons (module docstring)."""
    cells = [c for comp in comparisons.values() for c in comp.values()]
    raw = np.array([np.nan if c["p_value"] is None else c["p_value"] for c in cells], dtype=np.float64)
    for c, q in zip(cells, adjust_pvalues(raw, correction).tolist()):
        c["p_adjusted"] = None if np.isnan(q) else q
    result.summary["comparison"] = next(iter(comparisons.values())) if len(comparisons) == 1 else comparisons
    result.summary["test"] = test
    result.summary["correction"] = correction


def add_statistics(
    result: EvalResult,
    names: Sequence[str],
    metric: Any,
    n_units: int,
    unit: str,
    *,
    level: float | None = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    method: str = "percentile",
    others: Sequence[tuple[str, PairMetric, tuple[np.ndarray, np.ndarray] | None, int]] = (),
    test: str = "bootstrap",
    correction: str = "holm",
    row_of: dict[str, str] | None = None,
    processes: Processes = "auto",
) -> None:
    """Intervals (when ``level`` is set) of ``metric`` over ``n_units`` units, and comparisons with
    ``others`` = (name, mix, per-unit values or None, number of units the mix takes); resamples and rounds
    in ``processes`` processes (:mod:`deteval.stats.parallel`; the numbers do not depend on it)."""

    if level is not None:
        boot = bootstrap(
            metric,
            n_units,
            n_resamples=n_resamples,
            seed=seed,
            level=level,
            method=method,
            processes=processes,
        )
        attach_ci(result, names, boot, n_resamples=n_resamples, seed=seed, unit=unit, row_of=row_of)
    if others:
        comparisons = {
            name: compare(
                names,
                mix,
                n,
                test=test,
                n_resamples=n_resamples,
                seed=seed,
                level=0.95 if level is None else level,
                per_unit=per_unit,
                processes=processes,
            )
            for name, mix, per_unit, n in others
        }
        attach_comparisons(result, comparisons, test=test, correction=correction)
        result.summary["compare_to"] = [o[0] for o in others]
