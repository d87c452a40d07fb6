"""Two results of one protocol side by side: per-class values of one metric, their deltas, summary deltas.

``compare_results(a, b)`` returns an :class:`~deteval.results.EvalResult` (protocol ``"compare"``) so every
exporter renders it. Its rows are ``{class: {"a": value, "b": value, "delta": b - a, "present": ...}}``
with ``present`` one of ``"both"``, ``"A only"``, ``"B only"``: a class missing on one side is listed with a
null value and a null delta, never dropped. Its summary holds the compared protocol, the metric, the two
sources, the mean of the metric over the classes both sides score, and every numeric summary field of the
two results with its delta (``fields``). String summary fields that differ (e.g. ``metric: voc07`` against
``voc2012``) are reported as warnings because the numbers may then not be comparable.

COCO writes -1 for "no ground truth": such a value is not a score. A class that is -1 (or absent) on both
sides is left out of the rows, the means and the counts (``classes.no_ground_truth`` says how many, a warning
names them); a -1 on one side is an empty value, like a missing class.
"""

from __future__ import annotations

import math
from typing import Any

from deteval.errors import ConfigError, ValidationError
from deteval.report.marks import ALPHA, DELTA_IS, significance
from deteval.report.stats_table import STATS_KEYS
from deteval.report.tables import class_rows, pick_metric, summary_fields
from deteval.results import MAX_INT, EvalResult

SORTS: tuple[str, ...] = ("delta", "abs", "name", "none")


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        # math.isfinite would raise OverflowError beyond the float range; load_result refuses these too.
        if abs(value) >= MAX_INT:
            raise ValidationError(
                f"integer {str(value)[:20]}... is beyond ±2**63: not comparable as a number"
            )
        return value
    return value if math.isfinite(value) else None


def _undefined(protocol: str, value: Any) -> bool:
    """COCO writes -1 where a value is undefined (no ground truth in the class or area range)."""
    return protocol == "coco" and _number(value) is not None and value == -1


def _triple(va: Any, vb: Any) -> dict[str, Any]:
    na, nb = _number(va), _number(vb)
    return {"a": na, "b": nb, "delta": None if na is None or nb is None else nb - na}


def _compare_rows(
    protocol_a: str,
    protocol_b: str,
    table_a: dict[str, dict[str, Any]],
    table_b: dict[str, dict[str, Any]],
    key: str,
    names: list[str],
    rows: dict[str, dict[str, Any]],
) -> list[str]:
    """Fill ``rows`` with each class's (a, b, delta, present) on the per-class field ``key`` (empty: no
    rows); the classes with no ground truth on either side are taken out of ``names`` and returned."""
    no_truth: list[str] = []
    for name in list(names):
        va, vb = table_a.get(name, {}).get(key), table_b.get(name, {}).get(key)
        undefined_a, undefined_b = _undefined(protocol_a, va), _undefined(protocol_b, vb)
        if (undefined_a or name not in table_a) and (undefined_b or name not in table_b):
            # COCO's -1 is "no ground truth", not a score: such a class is in no mean, count or plot
            no_truth.append(name)
            names.remove(name)
            continue
        row = _triple(None if undefined_a else va, None if undefined_b else vb)
        row["present"] = (
            "both" if name in table_a and name in table_b else ("A only" if name in table_a else "B only")
        )
        rows[name] = row
    return no_truth


def _row_order(
    rows: dict[str, dict[str, Any]],
    names: list[str],
    with_delta: list[str],
    without: list[str],
    sort: str,
    reverse: bool,
) -> list[str]:
    """The classes in the order ``sort`` and ``reverse`` ask for (see :func:`compare_results`); sorts
    ``with_delta`` (and, by name, ``without``) in place."""
    if sort == "delta":
        with_delta.sort(key=lambda n: rows[n]["delta"], reverse=True)
    elif sort == "abs":
        with_delta.sort(key=lambda n: abs(rows[n]["delta"]), reverse=True)
    elif sort == "name":
        with_delta.sort()
        without.sort()
    order = names if sort == "none" else with_delta + without
    if reverse:
        order = order[::-1] if sort == "none" else with_delta[::-1] + without
    return order


def _compare_fields(a: EvalResult, b: EvalResult) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The summary fields of both sides as (a, b, delta) where either is a number; a warning for each other
    field that differs. The statistics of deteval.stats (intervals, each side's own comparison) are not
    fields to subtract: a side's comparison is shown as marks on its values (``summary["significance"]``)."""
    stats = tuple(f"{k}." for k in STATS_KEYS)
    fa, fb = (
        {k: v for k, v in summary_fields(r) if k not in STATS_KEYS and not k.startswith(stats)}
        for r in (a, b)
    )
    fields: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for key in list(fa) + [k for k in fb if k not in fa]:
        va, vb = fa.get(key), fb.get(key)
        va, vb = (None if _undefined(a.protocol, va) else va), (None if _undefined(b.protocol, vb) else vb)
        if _number(va) is not None or _number(vb) is not None:
            fields[key] = _triple(va, vb)
        elif va != vb:
            warnings.append(
                f"summary field {key!r} differs (A: {va}, B: {vb}); the numbers may not be comparable"
            )
    return fields, warnings


def compare_results(
    a: EvalResult,
    b: EvalResult,
    *,
    metric: str | None = None,
    sort: str = "delta",
    reverse: bool = False,
    sources: tuple[str, str] = ("A", "B"),
) -> EvalResult:
    """Compare ``b`` against ``a`` (delta = b − a: the result under test minus the baseline, as everywhere
    in deteval, :data:`DELTA_IS`; ``summary["delta"]`` says so) on the per-class ``metric``.

    ``metric`` defaults to ``"ap"`` when the rows have it, else the first numeric column of the rows.
    ``sort``: ``"delta"`` (largest gain first), ``"abs"`` (largest change first), ``"name"`` or ``"none"``
    (A's order, then B's new classes, kept as is); ``reverse`` flips it. With the other sorts, rows
    without a delta come last.
    ``sources`` names the two sides in the summary (e.g. the file names).
    Raises :class:`ValidationError` for results of different protocols, :class:`ConfigError` for an
    unknown metric or sort.
    """
    if a.protocol != b.protocol:
        raise ValidationError(
            f"cannot compare a {a.protocol!r} result with a {b.protocol!r} result: "
            "both files must come from the same protocol",
            file=sources[1],
        )
    if sort not in SORTS:
        raise ConfigError(f"unknown sort {sort!r}; choose one of {', '.join(SORTS)}")
    _, rows_a = class_rows(a)
    _, rows_b = class_rows(b)
    has_rows = bool(rows_a or rows_b)
    if not has_rows and metric is not None:
        raise ConfigError(f"cannot compare per-class {metric!r}: neither result has per-class rows")

    table_a, table_b = dict(rows_a), dict(rows_b)
    names = list(table_a) + [n for n in table_b if n not in table_a]
    rows: dict[str, dict[str, Any]] = {}
    if has_rows:
        metric = pick_metric(a, b, metric=metric)
    no_truth = _compare_rows(a.protocol, b.protocol, table_a, table_b, metric or "", names, rows)
    with_delta = [n for n in names if rows[n]["delta"] is not None]
    without = [n for n in names if rows[n]["delta"] is None]
    per_class = {n: rows[n] for n in _row_order(rows, names, with_delta, without, sort, reverse)}
    fields, warnings = _compare_fields(a, b)

    summary: dict[str, Any] = {"compared": a.protocol, "a": sources[0], "b": sources[1]}
    # deteval's one sign convention: a delta is the system under test minus its baseline (here B − A;
    # --compare-to OTHER: this system − OTHER), said in every output
    summary["delta"] = DELTA_IS.format(candidate=f"B ({sources[1]})", baseline=f"A ({sources[0]})")
    if has_rows:
        both = [n for n in with_delta if rows[n]["present"] == "both"]
        mean_a = sum(rows[n]["a"] for n in both) / len(both) if both else None
        mean_b = sum(rows[n]["b"] for n in both) / len(both) if both else None
        summary["metric"] = metric
        summary["classes"] = {
            "both": sum(r["present"] == "both" for r in rows.values()),
            "a_only": sum(r["present"] == "A only" for r in rows.values()),
            "b_only": sum(r["present"] == "B only" for r in rows.values()),
            "with_delta": len(both),
        }
        if "coco" in (a.protocol, b.protocol):
            summary["classes"]["no_ground_truth"] = len(no_truth)
        summary["mean_over_common"] = {
            "a": mean_a,
            "b": mean_b,
            "delta": None if mean_a is None else mean_b - mean_a,
        }
        for side, label in (("A only", "A"), ("B only", "B")):
            only = [n for n in names if rows[n]["present"] == side]
            if only:
                warnings.append(f"{len(only)} class(es) only in {label}: {', '.join(only)}")
        if no_truth:
            warnings.append(
                f"{len(no_truth)} class(es) left out of every mean, count and plot: no ground truth "
                f"(COCO's -1) on either side: {', '.join(no_truth)}"
            )
        missing = [n for n in names if rows[n]["present"] == "both" and rows[n]["delta"] is None]
        if missing:
            warnings.append(
                f"{len(missing)} class(es) without a {metric} value on one side: {', '.join(missing)}"
            )
    summary["fields"] = fields
    sig = {"a": significance(a, baseline=b), "b": significance(b, baseline=a)}  # marks against the other side
    if any(sig.values()):
        # each side's own --compare-to comparison, as marks on its values (deteval.report.marks)
        summary["significance"] = {"alpha": ALPHA, **{k: v for k, v in sig.items() if v}}
    warnings += [f"A: {w}" for w in a.warnings] + [f"B: {w}" for w in b.warnings]
    return EvalResult("compare", summary, per_class, warnings=warnings)
