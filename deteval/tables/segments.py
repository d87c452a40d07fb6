"""Segment annotations as a columnar table (MIR): start and end times, labels, and the records they came from.

:func:`build_segments` validates columns (each fault names the source and the record): NaN or infinite,
negative or implausibly large times (above :data:`MAX_TIME`), ``end < start`` and segments that overlap once
sorted by start time are refused; zero-length segments and gaps are allowed. :func:`segments_from_list`
reads annotation lists ``[[start, end, label], ...]`` (the form used in the FMP notebooks, in frames or
seconds) with the same checks; their records are the list indices. The ``.lab`` file reader is
:func:`deteval.io.lab.load_lab`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError, first_true

__all__ = ["MAX_TIME", "Segments", "build_segments", "segments_from_list", "time_fault"]

#: The largest time accepted (1e12: 31 700 years in seconds, 260 days in samples at 44.1 kHz). Larger
#: values are broken files, and would overflow the 5-decimal rounding of boundary times.
MAX_TIME: float = 1e12


@dataclass(frozen=True)
class Segments:
    """A segment annotation as columns of equal length n, sorted by start time.

    ``starts``/``ends`` are float64, ``labels`` an object array, ``records`` the 1-based line numbers
    (``.lab`` files) or 0-based list indices (annotation lists) the segments came from, ``source`` the file
    name or a description such as ``"<annotation list>"``, ``record_kind`` ``"line"`` or ``"segment"``.
    ``skipped`` lists the bad lines left out under ``on_error="skip"`` (``"<file>: line N: reason"``).
    """

    starts: np.ndarray
    ends: np.ndarray
    labels: np.ndarray
    records: np.ndarray
    source: str | None = None
    record_kind: str = "segment"
    skipped: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    @property
    def duration(self) -> float:
        """The end of the last segment (0.0 when there is no segment)."""
        return float(self.ends.max()) if len(self) else 0.0

    def record_name(self, i: int) -> str | int:
        """How error messages name segment ``i`` (``"line 12"`` or the list index)."""
        return _record(self.record_kind, int(self.records[i]))

    def to_list(self) -> list[list[Any]]:
        """Back to ``[[start, end, label], ...]``."""
        return [[float(s), float(e), lab] for s, e, lab in zip(self.starts, self.ends, self.labels)]


def _record(kind: str, rec: int) -> str | int:
    return f"line {rec}" if kind == "line" else rec


def time_fault(start: float, end: float) -> str:
    """Why one segment's times are refused (:func:`build_segments`' checks in order: each time finite, not
    negative, at most :data:`MAX_TIME`, then ``end >= start``), or ``""`` when they are valid."""
    for name, t in (("start", start), ("end", end)):
        if not math.isfinite(t):
            return f"{name} time is {t!r}; times must be finite"
        if t < 0:
            return f"{name} time {t!r} is negative"
        if t > MAX_TIME:
            return f"{name} time {t!r} is implausibly large (above {MAX_TIME:g})"
    return f"end {end!r} is before start {start!r}" if end < start else ""


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

    # time_fault's checks in its order, each over every segment: the first that fails names its first segment
    for bad in (~np.isfinite(s), s < 0, s > MAX_TIME, ~np.isfinite(e), e < 0, e > MAX_TIME, e < s):
        if (i := first_true(bad)) >= 0:
            raise ValidationError(time_fault(float(s[i]), float(e[i])), file=source, record=where(i))
    order = np.lexsort((e, s))  # stable, by start then end (a zero-length segment sorts before its neighbour)
    s, e, lab, rec = s[order], e[order], lab[order], rec[order]  # `where` reads the sorted `rec` from here on
    if (i := first_true(s[1:] < e[:-1])) >= 0:
        i = i + 1
        raise ValidationError(
            f"segment [{float(s[i])!r}, {float(e[i])!r}] overlaps the segment "
            f"[{float(s[i - 1])!r}, {float(e[i - 1])!r}] ({where(i - 1)}); segments must not overlap",
            file=source,
            record=where(i),
        )
    return Segments(s, e, lab, rec, source, record_kind)


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
            try:
                times.append(float(value))
            except OverflowError:  # an integer beyond float range: refused below as too large
                times.append(math.inf)
        if isinstance(seg[2], (bool, np.bool_)) or seg[2] is None:  # (True would be the same label as 1)
            raise InputFormatError(f"label {seg[2]!r} is not a label", file=source, record=i)
        if any(math.isnan(t) for t in times):
            raise ValidationError("segment time is NaN", file=source, record=i)
        starts.append(times[0])
        ends.append(times[1])
        labels.append(seg[2])
    return build_segments(starts, ends, labels, source=source, record_kind="segment")
