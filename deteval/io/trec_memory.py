"""TREC inputs from memory: pytrec_eval-style dicts (:func:`qrels_from_dict`, :func:`run_from_dict`) and
lists of ranked and relevant documents (:func:`run_from_lists`, :func:`qrels_from_lists`), as the same
:class:`~deteval.io.trec_tables.Qrels` and :class:`~deteval.io.trec_tables.Run` the file loaders return."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError
from deteval.io.trec_tables import MAX_TOPIC_BYTES, Qrels, Run, column_width

__all__ = ["qrels_from_dict", "qrels_from_lists", "run_from_dict", "run_from_lists"]


def _key_bytes(value: object, what: str, source: str, record: str) -> bytes:
    if isinstance(value, bytes):
        b = value
    elif isinstance(value, (str, int, np.integer)) and not isinstance(value, bool):
        b = str(value).encode("utf-8")
    else:
        raise InputFormatError(
            f"{what} must be a string or an integer, got {type(value).__name__}", file=source, record=record
        )
    if not b or any(c in b for c in b" \t\r\n\v\f\x00"):
        raise InputFormatError(f"{what} {b!r} is empty or contains whitespace", file=source, record=record)
    if what == "topic id" and len(b) > MAX_TOPIC_BYTES:
        raise InputFormatError(
            f"topic id of {len(b)} bytes; deteval accepts at most {MAX_TOPIC_BYTES}",
            file=source,
            record=record,
        )
    return b


def _as_column(values: list[bytes]) -> tuple[np.ndarray, dict[int, bytes]]:
    """Docnos as an ``S`` column of :func:`column_width`, and the longer ones whole by row."""
    if not values:
        return np.zeros(0, dtype="S1"), {}
    length = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    width = column_width(length)
    long = {i: values[i] for i in np.flatnonzero(length > width).tolist()}
    return np.array(values, dtype=f"S{width}"), long


def _entries(
    d: object, source: str, outer: str, inner: str, value: Callable[[Any, str], Any]
) -> tuple[dict[str, Any], list[Any]]:
    """The columns every table has (topic, docno, entry index, source) of the entries of
    ``{qid: {docno: v}}``, in dict order, and their ``value(v, record)``; ``outer`` and ``inner`` are the
    messages for a ``d`` or a topic that is not a dict."""
    if not isinstance(d, Mapping):
        raise InputFormatError(outer, file=source)
    topics: list[bytes] = []
    docs: list[bytes] = []
    values: list[Any] = []
    for qid, entries in d.items():
        q = _key_bytes(qid, "topic id", source, f"topic {qid!r}")
        if not isinstance(entries, Mapping):
            raise InputFormatError(inner, file=source, record=f"topic {qid!r}")
        for doc, v in entries.items():
            rec = f"topic {qid!r}, document {doc!r}"
            docs.append(_key_bytes(doc, "docno", source, rec))
            values.append(value(v, rec))
            topics.append(q)
    docno, long = _as_column(docs)
    line = np.arange(len(values), dtype=np.int64)
    topic = np.array(topics, dtype="S") if topics else np.zeros(0, dtype="S1")
    columns = {"topic": topic, "docno": docno, "docno_long": long, "line": line}
    return {**columns, "source": source, "record_kind": "entry"}, values


def qrels_from_dict(
    qrels: Mapping[object, Mapping[object, int]], *, source: str = "<in-memory qrels>"
) -> Qrels:
    """Qrels from ``{qid: {docno: rel}}`` (pytrec_eval's input form). Relevance values must be integers."""

    def relevance(rel: Any, rec: str) -> int:
        if isinstance(rel, bool) or not isinstance(rel, (int, np.integer)):
            if isinstance(rel, (float, np.floating)) and float(rel).is_integer():
                rel = int(rel)
            else:
                raise ValidationError(f"relevance must be an integer, got {rel!r}", file=source, record=rec)
        if not -(2**63) <= int(rel) < 2**63:  # (the column is int64, as for qrels files)
            raise ValidationError(f"relevance {rel!r} is out of range", file=source, record=rec)
        return int(rel)

    columns, rels = _entries(
        qrels,
        source,
        "qrels must be a dict qid -> {docno: rel}",
        "judgements must be a dict docno -> rel",
        relevance,
    )
    return Qrels(**columns, rel=np.array(rels, dtype=np.int64))


def run_from_dict(
    run: Mapping[object, Mapping[object, float]], *, tag: str = "", source: str = "<in-memory run>"
) -> Run:
    """Run from ``{qid: {docno: score}}`` (pytrec_eval's input form). Scores must be finite numbers."""

    def finite(score: Any, rec: str) -> float:
        try:
            if isinstance(score, (bool, np.bool_, str, bytes)):  # float() would read True, "1" and b"1"
                raise TypeError
            s = float(score)
        except OverflowError:  # an integer beyond float range
            raise ValidationError(f"score {score!r} is not finite", file=source, record=rec) from None
        except (TypeError, ValueError):
            raise ValidationError(f"score must be a number, got {score!r}", file=source, record=rec) from None
        if not math.isfinite(s):
            raise ValidationError(f"score {s!r} is not finite", file=source, record=rec)
        return s

    columns, scores = _entries(
        run,
        source,
        "run must be a dict qid -> {docno: score}",
        "a run topic must be a dict docno -> score",
        finite,
    )
    return Run(**columns, score=np.array(scores, dtype=np.float64), tag=tag)


def run_from_lists(
    results: Sequence[Sequence[object]],
    *,
    topics: Sequence[object] | None = None,
    source: str = "<in-memory run>",
) -> Run:
    """Run from ranked lists (seed 003's ``results``): list ``i`` is topic ``i``'s documents, best first.

    The list order is the ranking: scores are ``n, n-1, ..., 1`` so that no tie rule can reorder them.
    Topic names default to ``"0"``, ``"1"``, ...
    """
    d: dict[object, dict[object, float]] = {}
    for i, (name, ranked) in enumerate(_named(results, topics, source, "ranked lists")):
        items = list(ranked)
        scores: dict[object, float] = {}
        for r, doc in enumerate(items):
            key = doc.item() if isinstance(doc, np.generic) else doc
            if key in scores:
                raise ValidationError(
                    f"document {key!r} appears twice in ranked list {i}",
                    file=source,
                    record=f"list {i}, position {r}",
                )
            scores[key] = float(len(items) - r)
        d[name] = scores
    return run_from_dict(d, source=source)


def qrels_from_lists(
    ground_truth: Sequence[Sequence[object]],
    *,
    topics: Sequence[object] | None = None,
    source: str = "<in-memory qrels>",
) -> Qrels:
    """Binary qrels from lists of relevant documents (seed 003's ``ground_truth``); each gets relevance 1."""
    d = {
        name: {(doc.item() if isinstance(doc, np.generic) else doc): 1 for doc in rel_docs}
        for name, rel_docs in _named(ground_truth, topics, source, "ground-truth lists")
    }
    return qrels_from_dict(d, source=source)


def _named(
    lists: Sequence[Sequence[object]], topics: Sequence[object] | None, source: str, what: str
) -> list[tuple[object, Sequence[object]]]:
    """Each list with its topic name (``topics[i]``, or ``"i"`` without names)."""
    if topics is not None and len(topics) != len(lists):
        raise ValidationError(f"{len(topics)} topic names for {len(lists)} {what}", file=source)
    return [(topics[i] if topics is not None else str(i), items) for i, items in enumerate(lists)]
