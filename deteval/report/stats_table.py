"""Plain-text lines of the intervals and comparisons that :mod:`deteval.stats.attach` stores in a result:
``value [lo, hi]`` per metric, the smallest detectable difference next to it, and each comparison."""

from __future__ import annotations

from typing import Any

from deteval.report.marks import ALPHA, DELTA_IS, system_letters
from deteval.results import EvalResult

#: summary keys written by deteval.stats.attach; shown by :func:`stats_lines`, not as plain fields
STATS_KEYS = (
    "ci",
    "mdd",
    "ci_level",
    "ci_method",
    "bootstrap",
    "comparison",
    "test",
    "correction",
    "compare_to",
    "significance",
)


def _f(x: Any) -> str:
    if x is None:
        return "-"
    text = f"{x:.4f}"
    return "0.0000" if text == "-0.0000" else text  # a delta of -1e-17 is zero to the reader


def _ci(pair: Any) -> str:
    return "[-]" if not pair else f"[{_f(pair[0])}, {_f(pair[1])}]"


def with_ci(value: Any, pair: Any) -> str:
    """``value [lo, hi]``."""
    return f"{_f(value)} {_ci(pair)}"


def _comparison_lines(comp: dict[str, Any], letter: str) -> list[str]:

    width = max(len(k) for k in comp) if comp else 0

    def mark(c: dict[str, Any]) -> str:
        p = c.get("p_adjusted")
        return f"  ^{letter}" if isinstance(p, (int, float)) and p < ALPHA else ""

    return [
        f"  {name:<{width}}  {_f(c['a'])} vs {_f(c['b'])}  delta {with_ci(c['delta'], c['ci'])}  "
        f"p {_f(c['p_value'])}  p_adj {_f(c.get('p_adjusted'))}  mdd {_f(c['mdd'])}{mark(c)}"
        for name, c in comp.items()
    ]


def stats_lines(result: EvalResult) -> list[str]:
    """The statistics block of the plain-text table (empty when the result has none)."""
    s = result.summary
    out: list[str] = []
    if isinstance(s.get("ci"), dict):
        boot = s.get("bootstrap") or {}
        level = s.get("ci_level")  # (a summary read back from any JSON may lack it)
        pct = (
            f"{100 * float(level):g}% "
            if isinstance(level, (int, float)) and not isinstance(level, bool)
            else ""
        )
        out.append(
            f"{pct}confidence intervals ({s.get('ci_method')} bootstrap, "
            f"{boot.get('resamples')} resamples of the {boot.get('unit')}s, seed {boot.get('seed')}); "
            "mdd: smallest difference detectable at alpha 0.05, power 0.8"
        )
        width = max((len(k) for k in s["ci"]), default=0)
        for name, pair in s["ci"].items():
            value = s.get(name)
            mdd = (s.get("mdd") or {}).get(name)
            out.append(
                f"  {name:<{width}}  {with_ci(value if isinstance(value, float) else None, pair)}  mdd {_f(mdd)}"
            )
    comp = s.get("comparison")
    if isinstance(comp, dict) and comp:
        others = s.get("compare_to") or []
        how = f"test {s.get('test')}, correction {s.get('correction')}"
        groups = {others[0]: comp} if len(others) == 1 else comp
        for i, (other, c) in enumerate(groups.items()):
            delta = DELTA_IS.format(candidate="a", baseline="b")
            out.append(f"comparison with {other} ({how}): a = this system, b = {other}; delta = {delta}")
            out.extend(
                _comparison_lines(c, system_letters(result).get(other, "abcdefghijklmnopqrstuvwxyz"[i % 26]))
            )
    return out
