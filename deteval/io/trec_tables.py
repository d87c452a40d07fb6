"""The columnar types the TREC loaders return, :class:`Qrels` and :class:`Run`, and the width rule of their
byte-string columns (:func:`column_width`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["MAX_TOPIC_BYTES", "Qrels", "Run", "column_width"]


@dataclass
class Qrels:
    """Relevance judgements, one row per (topic, document): byte-string ``topic`` and ``docno``, int ``rel``.

    ``line`` holds the 1-based source line of each row (for in-memory input: the 0-based entry index, and
    ``record_kind`` is ``"entry"``) so that later checks (duplicates) can still name the record.

    ``docno_long``: the few docnos much longer than the rest, by row (``docno`` holds only their first
    bytes), so that the column's width, and memory, follow the typical docno and not the longest one.
    """

    topic: np.ndarray
    docno: np.ndarray
    rel: np.ndarray
    line: np.ndarray
    source: str = "<in-memory qrels>"
    record_kind: str = "line"
    blank_lines: int = 0
    warnings: list[str] = field(default_factory=list)
    skipped: int | None = None  # bad lines left out with on_error="skip" (None: not asked for)
    docno_long: dict[int, bytes] = field(default_factory=dict)
    group: np.ndarray | None = None  # the judgment group (iter field) of each row, for -R qrels_jg

    def __len__(self) -> int:
        return int(self.topic.shape[0])


@dataclass
class Run:
    """A ranked run, one row per retrieved document: byte-string ``topic`` and ``docno``, float ``score``.

    ``tag`` is the run tag of the last line (trec_eval's ``runid``); ``line``/``record_kind``/``docno_long``
    as in :class:`Qrels`.
    """

    topic: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    line: np.ndarray
    tag: str = ""
    source: str = "<in-memory run>"
    record_kind: str = "line"
    blank_lines: int = 0
    warnings: list[str] = field(default_factory=list)
    skipped: int | None = None
    docno_long: dict[int, bytes] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.topic.shape[0])


_LONG_COST = 128  # bytes that one token kept as a Python bytes object (and its dict entry) costs


def column_width(length: np.ndarray) -> int:
    """Width of a fixed-width column for tokens of these lengths: the longest, unless that makes the
    column mostly padding; then the width w minimising ``n*w + sum(len + overhead)`` over the tokens
    longer than w (those are kept apart, whole). Memory then grows with the tokens' total size, not with
    the number of rows times the longest token (one 20 KB docno in 500k rows would need 10 GB)."""
    n = length.shape[0]
    widest = int(length.max(initial=0))
    if widest * n <= 2 * int(length.sum()) + 64 * n:
        return widest
    u, c = np.unique(length, return_counts=True)
    above = np.cumsum((c * (u + _LONG_COST))[::-1])[::-1]  # cost of the tokens of length >= u[k]
    cost = n * u + np.append(above[1:], 0)
    return int(u[int(np.argmin(cost))])


MAX_TOPIC_BYTES = 256  # longer topic ids are refused (no test collection comes close; bounds memory)
