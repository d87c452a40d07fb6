"""trec_eval's ``all`` values and output: the aggregate of each measure over the topics, the result type,
and the three-column lines (``-q`` per topic, ``-Z`` z-scores).

Averaging follows trec_eval: the mean over evaluated topics, summed one topic at a time in topic order
(trec_eval's ``sum +=``), except ``num_ret``/``num_rel``/``num_rel_ret``/``num_nonrel_judged_ret`` (sums,
printed as integers), ``num_q`` (count) and ``gm_map``/``gm_bpref`` (per topic log(max(value, 1e-5)),
averaged as exp of the mean). ``trec_eval -q`` prints no per-topic ``gm_*`` line and neither does
:func:`format_trec`; ``per_class`` keeps the per-topic logarithm (what pytrec_eval returns).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.results import EvalResult


def sequential_sum(values: np.ndarray) -> float:
    """``sum += v`` over the values in order from ``sum = 0.0``, as trec_eval accumulates topics (numpy's
    pairwise sum can differ in the last bits, enough to flip a printed fourth decimal). The final ``+ 0.0``
    is that starting zero: a sum of -0.0 values is +0.0 in C (printed ``0.0000``, not ``-0.0000``)."""
    return float(np.cumsum(values)[-1]) + 0.0 if values.shape[0] else 0.0


def aggregate(values: np.ndarray, agg: str) -> float | int:
    """trec_eval's ``all`` value of one measure from its per-topic values (in topic order)."""
    n = values.shape[0]
    if agg == "sum":
        return int(sequential_sum(values))  # printed as a C long: (long) truncates
    if agg == "count":
        return n
    if n == 0:
        return 0.0
    if agg == "gm":
        return float(np.exp(sequential_sum(values) / n))
    return sequential_sum(values) / n


def summary_and_columns(
    values: Mapping[str, tuple[np.ndarray, str]], zscores: bool
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The ``all`` value of every measure (:func:`aggregate`; ``relstring`` has none) and the per-topic
    arrays ``-q`` prints (``num_q``, like ``runid``, has none; sums and counts as integers). With -Z
    (``zscores``) the values are z-scores: a summed measure's ``all`` value is the sum of its z-scores and
    stays a double, as do its per-topic values (trec_eval's test/out.test.aqZ)."""
    summary: dict[str, Any] = {}
    for name, (vals, agg) in values.items():
        if agg != "none":  # relstring: per topic only
            summary[name] = sequential_sum(vals) if zscores and agg == "sum" else aggregate(vals, agg)
    arrays = {
        n: (v.astype(np.int64) if agg in ("sum", "count") and not zscores else v)
        for n, (v, agg) in values.items()
        if n != "num_q"
    }
    return summary, arrays


def per_topic_rows(names: Sequence[str], arrays: Mapping[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """``{topic: {measure: value}}`` (``per_class``) from per-topic value arrays (numpy scalars as Python
    ones)."""
    cols = {n: v.tolist() for n, v in arrays.items()}
    return {topic: {n: col[i] for n, col in cols.items()} for i, topic in enumerate(names)}


#: The summary key counting the per-topic values ``-Z`` set to -1000000 (not a trec_eval measure: never
#: printed among trec_eval's lines; in the JSON, CSV and table outputs, with a warning).
ZSCORES_MISSING = "zscores_missing"


@dataclass
class TrecResult(EvalResult):
    """:class:`EvalResult` plus what :func:`format_trec` needs to print ``-q`` as the chosen trec_eval
    version does: ``unprinted_topics`` are evaluated (``-c``, topics missing from the run) and in
    ``per_class`` but trec_eval 9.0.8 prints no per-topic line for them (10.0 does)."""

    unprinted_topics: list[str] = field(default_factory=list)
    zscores: bool = False  # -Z: printed as trec_eval prints z-scores (format_trec)
    #: ``evaluate_trec(topic_columns=True)``: the topic names and each measure's per-topic values as arrays
    #: (8 bytes a value), which :func:`iter_trec_lines` prints without building ``per_class``'s dicts
    topic_columns: tuple[list[str], dict[str, np.ndarray]] | None = None


def _fmt_value(name: str, value: Any) -> str:
    if name == "relstring" or name.startswith("relstring_"):  # relstring.20 prints as relstring_20
        return f"'{value}'"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    if math.isnan(value):
        return "  -nan"  # glibc's printf of the NaN that 0.0/0.0 gives on x86-64, where trec_eval runs
    return f"{float(value):6.4f}"


def printf_6_4f(value: float) -> str:
    """C's ``printf("%6.4f", value)`` with glibc: as Python's format, except that a NaN keeps its sign
    (``-nan`` for the NaN of 0.0/0.0, ``nan`` for one read from a file, as trec_eval -Z prints both)."""
    if math.isnan(value):
        return ("-nan" if math.copysign(1.0, value) < 0 else "nan").rjust(6)
    return f"{value:6.4f}"


def format_trec(result: EvalResult, *, per_query: bool = False) -> list[str]:
    """trec_eval's three-column output: ``measure`` padded to 22, tab, topic or ``all``, tab, value.

    With ``-Z`` trec_eval prints every measure but ``runid`` and ``relstring`` as ``Z%-22s`` and its value
    as ``%6.4f``, counts and sums included (``Znum_ret  301  -2.7605``, ``Znum_q  all  3.0000``; its
    ``test/out.test.aqZ``)."""
    return [ln for block in iter_trec_lines(result, per_query=per_query) for ln in block]


#: Topics whose ``-q`` lines :func:`iter_trec_lines` yields at once (bounds the lines held in memory).
TOPIC_BLOCK = 2048


def iter_trec_lines(result: EvalResult, *, per_query: bool = False) -> Iterator[list[str]]:
    """:func:`format_trec`'s lines in blocks, the per-topic ones :data:`TOPIC_BLOCK` topics at a time, in
    topic order: from ``result.topic_columns`` when it is kept (no per-topic dict is ever built), else from
    ``per_class``. Written block by block, ``-q`` output costs memory for one block of lines only."""
    z = isinstance(result, TrecResult) and result.zscores

    def line(name: str, topic: str, value: Any) -> str:
        if z and name != "runid" and not name.startswith("relstring"):
            return f"Z{name:<22s}\t{topic}\t{printf_6_4f(float(value))}"
        return f"{name:<22s}\t{topic}\t{_fmt_value(name, value)}"

    if per_query:
        hidden = set(result.unprinted_topics) if isinstance(result, TrecResult) else set()
        table = result.topic_columns if isinstance(result, TrecResult) else None
        if table is not None:
            names, arrays = table
            printed = [n for n in arrays if not n.startswith("gm_")]  # trec_eval -q prints no gm_* per topic
            for lo in range(0, len(names), TOPIC_BLOCK):
                cols = [(n, arrays[n][lo : lo + TOPIC_BLOCK].tolist()) for n in printed]
                yield [
                    line(name, topic, col[i])
                    for i, topic in enumerate(names[lo : lo + TOPIC_BLOCK])
                    if topic not in hidden
                    for name, col in cols
                ]
        else:
            rows = [(t, row) for t, row in result.per_class.items() if t not in hidden]
            for lo in range(0, len(rows), TOPIC_BLOCK):
                yield [
                    line(name, topic, value)
                    for topic, row in rows[lo : lo + TOPIC_BLOCK]
                    for name, value in row.items()
                    if not name.startswith("gm_")
                ]
    yield [
        line(name, "all", value)
        for name, value in result.summary.items()
        if name not in ("skipped_records", ZSCORES_MISSING)  # not trec_eval measures: in the warnings and the
        # other formats
    ]
