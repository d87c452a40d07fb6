"""Segment annotations: ``.lab`` files and in-memory annotation lists, as a columnar :class:`Segments` table.

A ``.lab`` file holds one segment per line, ``start end label``, separated by whitespace (spaces or tabs);
times are in seconds. The label is everything after the second field, so labels with spaces
(``G major``) are kept whole. Blank lines and lines whose first non-blank character is ``#`` are skipped.

Decisions (each error names the file and the line, ``path: line N: reason``):

* a time that is not a number → :class:`~deteval.errors.InputFormatError`;
* a line with fewer than three fields (a missing label) → ``InputFormatError``: structure metrics need
  labels, and silently inventing one would hide a broken file;
* NaN or infinite times, negative times, ``end < start`` → :class:`~deteval.errors.ValidationError`;
* segments that overlap once sorted by start time → ``ValidationError`` (a frame would get two labels);
* a file with no segment at all (empty, or only comments) → ``InputFormatError``;
* zero-length segments (``start == end``) are allowed: they add a boundary but hold no frame;
* gaps between segments are allowed; the metrics count and report the frames they leave unlabelled;
* lines need not be in time order: segments are sorted by start time (stable), and ``records`` keeps
  each segment's line number for later messages.

Annotation lists ``[[start, end, label], ...]`` (the form used in the FMP notebooks, in frames or seconds)
go through the same checks; their records are the list indices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError


@dataclass(frozen=True)
class Segments:
    """A segment annotation as columns of equal length n, sorted by start time.

    ``starts``/``ends`` are float64, ``labels`` an object array, ``records`` the 1-based line numbers
    (``.lab`` files) or 0-based list indices (annotation lists) the segments came from, ``source`` the file
    name or a description such as ``"<annotation list>"``, ``record_kind`` ``"line"`` or ``"segment"``.
    """

    starts: np.ndarray
    ends: np.ndarray
    labels: np.ndarray
    records: np.ndarray
    source: str | None = None
    record_kind: str = "segment"

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    @property
    def duration(self) -> float:
        """The end of the last segment (0.0 when there is no segment)."""
        return float(self.ends.max()) if len(self) else 0.0

    def record_name(self, i: int) -> str | int:
        """How error messages name segment ``i`` (``"line 12"`` or the list index)."""
        rec = int(self.records[i])
        return f"line {rec}" if self.record_kind == "line" else rec

    def to_list(self) -> list[list[Any]]:
        """Back to ``[[start, end, label], ...]``."""
        return [[float(s), float(e), lab] for s, e, lab in zip(self.starts, self.ends, self.labels)]


def _record(kind: str, rec: int) -> str | int:
    return f"line {rec}" if kind == "line" else rec


def build_segments(
    starts: Sequence[float] | np.ndarray,
    ends: Sequence[float] | np.ndarray,
    labels: Sequence[Any] | np.ndarray,
    *,
    records: Sequence[int] | np.ndarray | None = None,
    source: str | None = None,
    record_kind: str = "segment",
) -> Segments:
    """Validate columns and return them as :class:`Segments` sorted by start time (see the module rules)."""
    try:
        s = np.asarray(starts, dtype=np.float64).reshape(-1)
        e = np.asarray(ends, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InputFormatError(f"segment times must be numbers ({exc})", file=source) from None
    label_list = list(labels)
    lab = np.empty(len(label_list), dtype=object)
    for i, value in enumerate(label_list):  # item by item: a tuple label must not become a 2-D array
        lab[i] = value
    rec = np.arange(s.shape[0], dtype=np.int64) if records is None else np.asarray(records, dtype=np.int64)
    if not (s.shape == e.shape == lab.shape == rec.shape):
        raise InputFormatError(
            f"starts, ends and labels differ in length ({s.shape[0]}, {e.shape[0]}, {lab.shape[0]})",
            file=source,
        )

    def where(i: int) -> str | int:
        return _record(record_kind, int(rec[i]))

    for name, col in (("start", s), ("end", e)):
        bad = np.flatnonzero(~np.isfinite(col))
        if bad.size:
            i = int(bad[0])
            reason = f"{name} time is {float(col[i])!r}; times must be finite"
            raise ValidationError(reason, file=source, record=where(i))
        bad = np.flatnonzero(col < 0)
        if bad.size:
            i = int(bad[0])
            raise ValidationError(f"{name} time {float(col[i])!r} is negative", file=source, record=where(i))
    bad = np.flatnonzero(e < s)
    if bad.size:
        i = int(bad[0])
        reason = f"end {float(e[i])!r} is before start {float(s[i])!r}"
        raise ValidationError(reason, file=source, record=where(i))
    order = np.lexsort((e, s))  # stable, by start then end (a zero-length segment sorts before its neighbour)
    s, e, lab, rec = s[order], e[order], lab[order], rec[order]  # `where` reads the sorted `rec` from here on
    bad = np.flatnonzero(s[1:] < e[:-1])
    if bad.size:
        i = int(bad[0]) + 1
        raise ValidationError(
            f"segment [{float(s[i])!r}, {float(e[i])!r}] overlaps the segment "
            f"[{float(s[i - 1])!r}, {float(e[i - 1])!r}] ({where(i - 1)}); segments must not overlap",
            file=source,
            record=where(i),
        )
    return Segments(s, e, lab, rec, source, record_kind)


def _parse_time(token: str, what: str, path: str, lineno: int) -> float:
    try:
        return float(token)
    except ValueError:
        raise InputFormatError(
            f"{what} time {token!r} is not a number", file=path, record=f"line {lineno}"
        ) from None


def parse_lab(text: str, *, source: str = "<lab text>") -> Segments:
    """Parse the text of a ``.lab`` file (see the module docstring for the format and the error rules)."""
    starts: list[float] = []
    ends: list[float] = []
    labels: list[str] = []
    lines: list[int] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(None, 2)
        if len(fields) < 3:
            raise InputFormatError(
                f"expected 'start end label', found {len(fields)} field(s): {line!r} (missing label)",
                file=source,
                record=f"line {lineno}",
            )
        start = _parse_time(fields[0], "start", source, lineno)
        end = _parse_time(fields[1], "end", source, lineno)
        starts.append(start)
        ends.append(end)
        labels.append(fields[2].strip())
        lines.append(lineno)
    if not starts:
        raise InputFormatError(
            "no segments (the file is empty or holds only comments and blank lines)", file=source
        )
    return build_segments(starts, ends, labels, records=lines, source=source, record_kind="line")


def load_lab(path: str | PathLike[str]) -> Segments:
    """Read a ``.lab`` file (``start end label`` per line, seconds) into :class:`Segments`."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFormatError("not UTF-8 text", file=str(path), record=f"line {line}") from None
    return parse_lab(text, source=str(path))


def segments_from_list(annotation: Any, *, source: str = "<annotation list>") -> Segments:
    """``[[start, end, label], ...]`` (frames or seconds) → :class:`Segments`; records are list indices."""
    if isinstance(annotation, Segments):
        return annotation
    if isinstance(annotation, (str, bytes)) or not isinstance(annotation, (Sequence, np.ndarray)):
        raise InputFormatError(
            f"expected a list of [start, end, label], got {type(annotation).__name__}", file=source
        )
    starts: list[float] = []
    ends: list[float] = []
    labels: list[Any] = []
    for i, seg in enumerate(annotation):
        if isinstance(seg, (str, bytes)) or not isinstance(seg, (Sequence, np.ndarray)) or len(seg) != 3:
            raise InputFormatError(f"expected [start, end, label], got {seg!r}", file=source, record=i)
        times = []
        for what, value in (("start", seg[0]), ("end", seg[1])):
            is_number = isinstance(value, (int, float, np.integer, np.floating))
            if isinstance(value, (bool, np.bool_)) or not is_number:
                raise InputFormatError(f"{what} time {value!r} is not a number", file=source, record=i)
            times.append(float(value))
        if any(math.isnan(t) for t in times):
            raise ValidationError("segment time is NaN", file=source, record=i)
        starts.append(times[0])
        ends.append(times[1])
        labels.append(seg[2])
    return build_segments(starts, ends, labels, source=source, record_kind="segment")


def as_segments(annotation: Any, *, source: str | None = None) -> Segments:
    """Accept :class:`Segments`, a ``.lab`` path (str or Path) or an annotation list."""
    if isinstance(annotation, Segments):
        return annotation
    if isinstance(annotation, (str, PathLike)):
        return load_lab(annotation)
    return segments_from_list(annotation, source=source or "<annotation list>")
