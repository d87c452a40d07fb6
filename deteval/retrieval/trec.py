"""trec_eval as a protocol of public steps; :func:`deteval.run.trec.evaluate_trec` chains them.

1. :func:`start` checks the options and the inputs and returns a :class:`TrecTask`;
2. the task's topics are cut into parts, each a (qrels, run) pair holding whole topics:
   :meth:`TrecTask.whole` (one part), :func:`piece_parts` (runs of about ``rows`` run rows, to bound the
   temporaries of a large run) or :func:`shard_parts` (``n`` parts with at least one evaluated topic each);
3. :func:`part_values` computes one part's per-topic values (a topic's values depend on its own rows alone);
4. :func:`merge` puts the parts' values back in topic order: exactly the table of one part;
5. :func:`finish` applies ``-Z``, aggregates the ``all`` values and builds the :class:`TrecResult`.

What each measure computes is in :mod:`~deteval.retrieval.trec_measures` (names, parameters),
:mod:`~deteval.retrieval.trec_values` (per-topic values) and :mod:`~deteval.retrieval.trec_output`
(aggregates and printed lines). Where the parts run is the runner's business.

>>> task = start({"q1": {"d1": 1, "d2": 0, "d3": 2}}, {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1}}, ["map", "P.2"])
>>> finish(task, merge(task, [part_values(task.spec, *task.whole())])).summary
{'map': 0.8333333333333333, 'P_2': 0.5}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import numpy as np

from deteval.errors import ConfigError, ValidationError
from deteval.io.trec_memory import qrels_from_dict, run_from_dict
from deteval.io.trec_tables import Qrels, Run
from deteval.retrieval.jg import compute_jg, real_topics, split_groups
from deteval.retrieval.prepare import group_codes, prepare
from deteval.retrieval.topic_rows import merge_warnings, take_rows
from deteval.retrieval.trec_measures import Family, check_rel_format, parse_measures
from deteval.retrieval.trec_output import (
    ZSCORES_MISSING,
    TrecResult,
    format_trec,
    per_topic_rows,
    summary_and_columns,
)
from deteval.retrieval.trec_values import (
    Options,
    as_read_by,
    compute,
    missing_zscores_note,
    to_zscores,
    zscore_topics,
)
from deteval.retrieval.versions import DEFAULT_RECALL_LEVELS, DEFAULT_VERSION, check_version

__all__ = [
    "PartSpec",
    "TopicValues",
    "TrecOptions",
    "TrecTask",
    "check_topics_in_run",
    "complete_num_rel",
    "finish",
    "merge",
    "no_topic_error",
    "part_values",
    "piece_parts",
    "shard_parts",
    "start",
    "trec_result",
]

Part = tuple[Qrels, Run]


@dataclass(frozen=True)
class PartSpec:
    """What every part is evaluated with (small: sent with each part to wherever it runs)."""

    requested: tuple[tuple[Family, tuple], ...]
    opts: Options
    prep: Mapping[str, Any]  # prepare()'s relevance_level, complete, max_docs, judged_only
    num_docs: int
    jg_mode: bool = False


@dataclass
class TopicValues:
    """One part's (or the merged) per-topic table: topic names (bytes, in topic order), whether each is in
    the run, each measure's ``(values, aggregation)`` and the warnings of the join."""

    topics: np.ndarray
    names: list[str]
    in_run: np.ndarray
    values: dict[str, tuple[np.ndarray, str]]
    warnings: list[str]


@dataclass
class TrecTask:
    """The checked inputs and options of one evaluation (:func:`start`)."""

    qrels: Qrels  # as given (what -c counts and errors name)
    run: Run  # scores as the chosen version reads them
    spec: PartSpec
    zscores: Mapping[tuple[str, str], tuple[float, float]] | None
    per_query: bool
    topic_columns: bool

    def whole(self) -> Part:
        """All topics as one part (judgment groups split into their pseudo-topics)."""
        if self.spec.jg_mode:
            return split_groups(self.qrels, self.run)
        return self.qrels, self.run


class TrecOptions(TypedDict, total=False):
    """The options of :func:`start` (and so of :func:`deteval.run.trec.evaluate_trec`), as keywords that
    callers pass through unchanged; their defaults and meaning are :func:`start`'s."""

    relevance_level: int
    complete: bool
    per_query: bool
    max_docs: int | None
    gain: str
    discount: str
    recall_denominator: str
    ap_denominator: str
    version: str
    zscores: Mapping[tuple[str, str], tuple[float, float]] | None
    judged_only: bool
    recall_levels: str
    num_docs: int
    topic_columns: bool


def start(
    qrels: Qrels | Mapping[Any, Mapping[Any, int]],
    run: Run | Mapping[Any, Mapping[Any, float]],
    measures: Sequence[str] | str | None = None,
    *,
    relevance_level: int = 1,
    complete: bool = False,
    per_query: bool = False,
    max_docs: int | None = None,
    gain: str = "trec",
    discount: str = "trec",
    recall_denominator: str = "R",
    ap_denominator: str = "num_rel",
    version: str = DEFAULT_VERSION,
    zscores: Mapping[tuple[str, str], tuple[float, float]] | None = None,
    judged_only: bool = False,
    recall_levels: str = DEFAULT_RECALL_LEVELS,
    num_docs: int = 0,
    topic_columns: bool = False,
) -> TrecTask:
    """Check the options and inputs of an evaluation (the options as
    :func:`deteval.run.trec.evaluate_trec` documents them) and return the task the other steps take.

    Raises :class:`~deteval.errors.ConfigError` for a bad option and
    :class:`~deteval.errors.ValidationError` for inputs trec_eval 10.0 refuses (:func:`check_topics_in_run`).
    """
    check_version(version)
    opts = Options(gain, discount, recall_denominator, ap_denominator, version, recall_levels, judged_only)
    opts.check()
    if int(relevance_level) != relevance_level or relevance_level < 0:
        # negative levels would make unjudged documents (-1 inside trec_eval) relevant
        raise ConfigError(f"relevance_level must be a non-negative integer, got {relevance_level!r}")
    q = qrels if isinstance(qrels, Qrels) else qrels_from_dict(qrels)
    r = as_read_by(run if isinstance(run, Run) else run_from_dict(run), version)
    if measures is None and q.group is not None:
        measures = ["qrels_jg"]  # trec_eval's measures for judgment groups
    requested = parse_measures(measures, version)
    if max_docs is not None and (int(max_docs) != max_docs or max_docs < 1):
        raise ConfigError(f"max_docs must be a positive integer, got {max_docs!r}")
    if int(num_docs) != num_docs or num_docs < 0:
        raise ConfigError(f"num_docs must be a non-negative integer, got {num_docs!r}")
    jg_mode = q.group is not None
    check_rel_format(requested, jg_mode)
    check_topics_in_run(q.topic, r.topic, version, complete, f"{r.source} vs {q.source}")
    prep = {"relevance_level": int(relevance_level), "complete": complete, "max_docs": max_docs,
            "judged_only": judged_only}  # fmt: skip
    spec = PartSpec(tuple(requested), opts, prep, int(num_docs), jg_mode)
    return TrecTask(q, r, spec, zscores, per_query, topic_columns)


def part_values(spec: PartSpec, q: Qrels, r: Run) -> TopicValues:
    """The per-topic values of one part's topics (none when the part evaluates no topic)."""
    rt = prepare(q, r, **spec.prep)
    if rt.n_topics == 0:
        return TopicValues(rt.topics, [], rt.in_run, {}, rt.warnings)
    if spec.jg_mode:  # one part only: its pseudo-topics (one per judgment group) fold back into topics
        index, counts, names, in_run = real_topics(rt)
        values = compute_jg(rt, list(spec.requested), index, counts)
        return TopicValues(
            np.array([n.encode() for n in names], dtype=bytes), names, in_run, values, rt.warnings
        )
    values = compute(rt, spec.requested, spec.opts, spec.num_docs)
    return TopicValues(rt.topics, rt.topic_names(), rt.in_run, values, rt.warnings)


def merge(task: TrecTask, parts: Sequence[TopicValues]) -> TopicValues:
    """The parts' tables as one, in topic order (bytewise, trec_eval's ``strcmp`` order): for parts cut by
    :func:`piece_parts` or :func:`shard_parts`, bit for bit the table of :meth:`TrecTask.whole`. Raises
    :func:`no_topic_error` when no part evaluated a topic. One part is returned as it is (its warnings
    already include the inputs'): a task cut into one part is evaluated as :meth:`TrecTask.whole`."""
    full = [p for p in parts if p.names]
    if not full:
        raise no_topic_error(task.qrels, task.run)
    if len(parts) == 1:
        return parts[0]
    topics = np.concatenate([p.topics for p in full])
    order = np.argsort(topics, kind="stable")
    values = {
        key: (np.concatenate([p.values[key][0] for p in full])[order], agg)
        for key, (_, agg) in full[0].values.items()
    }
    names = [n for p in full for n in p.names]
    warnings = (
        list(task.qrels.warnings) + list(task.run.warnings) + merge_warnings([p.warnings for p in parts])
    )
    return TopicValues(
        topics[order],
        [names[i] for i in order.tolist()],
        np.concatenate([p.in_run for p in full])[order],
        values,
        warnings,
    )


def piece_parts(q: Qrels, r: Run, rows: int) -> Iterator[Part]:
    """The run cut between topic blocks into parts of about ``rows`` run rows, each with its topics'
    qrels rows (qrels topics absent from the run go with the first part; every part's qrels rows stay in
    file order), made one at a time so that only one part's copies exist at once. A run written topic by
    topic is cut into zero-copy slices; otherwise a part gathers its topics' rows, in file order."""
    n = len(r)
    heads = np.concatenate(([0], np.flatnonzero(r.topic[1:] != r.topic[:-1]) + 1))
    names = r.topic[heads]
    by_name = np.argsort(names)
    sorted_names = names[by_name]
    ordered = None  # the rows topic by topic, when some topic's rows are not contiguous in the file
    if (sorted_names[1:] == sorted_names[:-1]).any():
        names, codes = group_codes(r.topic)
        ordered = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=names.shape[0])
        del codes
        heads = np.cumsum(counts) - counts
        by_name, sorted_names = np.arange(names.shape[0]), names
    cuts = heads[np.searchsorted(heads, np.arange(rows, n, rows), side="right") - 1]
    cuts = np.unique(np.concatenate(([0], cuts, [n])))
    block_part = np.searchsorted(cuts, heads, side="right") - 1
    q_names, q_inverse = group_codes(q.topic)
    pos = np.minimum(np.searchsorted(sorted_names, q_names), sorted_names.shape[0] - 1)
    found = sorted_names[pos] == q_names
    q_part = np.where(found, block_part[by_name[pos]], 0)[q_inverse]
    q_order = np.argsort(q_part, kind="stable")
    q_cuts = np.searchsorted(q_part[q_order], np.arange(cuts.shape[0]))
    for k in range(cuts.shape[0] - 1):
        a, b = int(cuts[k]), int(cuts[k + 1])
        qk = take_rows(q, q_order[q_cuts[k] : q_cuts[k + 1]])
        if ordered is None:
            long = {i - a: v for i, v in r.docno_long.items() if a <= i < b}
            cols = {c: getattr(r, c)[a:b] for c in ("topic", "docno", "score", "line")}
            yield qk, replace(r, **cols, warnings=[], docno_long=long)
        else:
            yield qk, take_rows(r, np.sort(ordered[a:b]))


def shard_parts(q: Qrels, r: Run, complete: bool, n: int) -> list[Part]:
    """The sorted topic names cut into at most ``n`` runs with at least one evaluated topic each (topics
    that are not evaluated travel with their neighbours, so that duplicate checks see every row)."""
    names = np.union1d(np.unique(q.topic), np.unique(r.topic))
    has_q = np.isin(names, q.topic)
    has_r = np.isin(names, r.topic)
    evaluated = np.flatnonzero(has_q & (has_r | complete))
    if evaluated.size == 0:
        raise no_topic_error(q, r)
    n = min(n, int(evaluated.size))
    first = evaluated[[k * evaluated.size // n for k in range(n)]]
    first[0] = 0
    q_shard = np.searchsorted(first, np.searchsorted(names, q.topic), side="right") - 1
    r_shard = np.searchsorted(first, np.searchsorted(names, r.topic), side="right") - 1
    return [
        (take_rows(q, np.flatnonzero(q_shard == k)), take_rows(r, np.flatnonzero(r_shard == k)))
        for k in range(n)
    ]


def finish(task: TrecTask, table: TopicValues) -> TrecResult:
    """The result of the merged per-topic table: ``-Z`` z-scores, the ``all`` values (``-c``'s
    ``num_rel`` recount included), ``per_class`` or ``topic_columns``, and trec_eval's ``all`` lines."""
    spec, q, r = task.spec, task.qrels, task.run
    extra: dict[str, Any] = {}
    # -c: the qrels topics missing from the run are evaluated as empty rankings and summed too (trec_eval's
    # test/out.test.aqc, 9.0.x and 10.0 alike)
    if spec.prep["complete"] and "num_rel" in table.values:
        extra["num_rel"] = complete_num_rel(q, task.zscores is not None)
    if q.skipped is not None or r.skipped is not None:  # asked for on_error="skip"
        extra["skipped_records"] = (q.skipped or 0) + (r.skipped or 0)
    result = trec_result(
        table.values,
        table.names,
        table.in_run,
        spec.opts.version,
        task.zscores,
        runid=r.tag if any(f.name == "runid" for f, _ in spec.requested) else None,
        warnings=table.warnings,
        per_query=task.per_query,
        topic_columns=task.topic_columns,
        extra=extra,
    )
    if non := spec.opts.non_default():
        result.warnings.append("non-trec_eval conventions in effect: " + ", ".join(non))
    return result


def trec_result(
    values: dict[str, tuple[np.ndarray, str]],
    names: list[str],
    in_run: np.ndarray,
    version: str,
    zscores: Mapping[tuple[str, str], tuple[float, float]] | None,
    *,
    runid: str | None,
    warnings: Sequence[str],
    per_query: bool,
    topic_columns: bool,
    extra: Mapping[str, Any] | None = None,
) -> TrecResult:
    """trec_eval's result of per-topic values (``names`` in topic order, ``in_run``: in the run or added by
    ``-c``): ``-Z`` z-scores (with a note on those it cannot convert), the summary (``runid`` unless None,
    the ``all`` values, the count of unconverted z-scores, then ``extra``: a key already there keeps its
    place), ``per_class`` or ``topic_columns``, and the ``all`` lines."""
    missing = 0
    if zscores is not None:
        values, missing = to_zscores(values, names, zscores, zscore_topics(in_run, version))
    warnings = list(warnings)
    if missing:
        warnings.append(missing_zscores_note(missing))
    summary: dict[str, Any] = {} if runid is None else {"runid": runid}
    all_values, arrays = summary_and_columns(values, zscores is not None)
    summary.update(all_values)
    if zscores is not None:
        summary[ZSCORES_MISSING] = missing
    summary.update(extra or {})
    unprinted = [t for t, ok in zip(names, in_run.tolist()) if not ok] if version == "9.0.8" else []
    result = TrecResult(
        protocol="trec",
        summary=summary,
        per_class=per_topic_rows(names, arrays) if per_query else {},
        warnings=warnings,
        unprinted_topics=unprinted,
        zscores=zscores is not None,
        topic_columns=(list(names), arrays) if topic_columns else None,
    )
    result.lines = format_trec(result)
    return result


def check_topics_in_run(
    qrels_topics: np.ndarray, run_topics: np.ndarray, version: str, complete: bool, file: str
) -> None:
    """trec_eval 10.0 without ``-c`` stops (status 4) at the first qrels topic, in topic order, that has no
    results in the run (trec_eval.c; its message, "result qid 'X' not found in qrels", names that topic).
    9.0.8 evaluates the topics the two files share, and ``-c`` scores the missing ones as empty rankings."""
    if version != "10.0" or complete:
        return
    q_names = np.unique(qrels_topics)
    missing = q_names[~np.isin(q_names, run_topics)]
    if missing.size:
        topic = bytes(missing[0]).decode("utf-8", "backslashreplace")
        raise ValidationError(
            f"qrels topic '{topic}' has no results in the run: trec_eval 10.0 stops here (\"result qid "
            f"'{topic}' not found in qrels\"); use -c to score it as an empty ranking, or version 9.0.8 to "
            "evaluate only the topics both files have",
            file=file,
        )


def no_topic_error(q: Qrels, r: Run) -> ValidationError:
    """trec_eval stops when no topic is evaluated; averages over no topic would be meaningless zeros."""
    return ValidationError(
        f"no topic has both results and judgements ({len(r)} run rows, {len(q)} qrels rows)",
        file=f"{r.source} vs {q.source}",
    )


def complete_num_rel(q: Qrels, zscores: bool) -> float | int:
    """``num_rel``'s ``all`` value under ``-c`` (m_num_rel.c, te_calc_avg_num_rel, 9.0.8 and 10.0): the
    number of qrels rows with rel > 0 over every qrels topic, whatever the relevance level (``-l``),
    ``-J``, ``-M`` or ``-Z`` (it replaces the sum of z-scores); a double under -Z."""
    n = int(np.count_nonzero(q.rel > 0))
    return float(n) if zscores else n
