"""Segment annotations: ``.lab`` files and in-memory annotation lists, as a columnar :class:`Segments` table.

A ``.lab`` file holds one segment per line, ``start end label``, separated by whitespace (spaces or tabs);
times are in seconds. The label is everything after the second field, so labels with spaces
(``G major``) are kept whole. Blank lines and lines whose first non-blank character is ``#`` are skipped.

Decisions (each error names the file and the line, ``path: line N: reason``):

* a time that is not a number in ASCII decimal notation (``1_0``, ``٥``, ``0x10`` are not) →
  :class:`~deteval.errors.InputFormatError`;
* a line with fewer than three fields (a missing label) → ``InputFormatError``: structure metrics need
  labels, and silently inventing one would hide a broken file;
* NaN or infinite times, negative times, times above :data:`MAX_TIME`, ``end < start`` →
  :class:`~deteval.errors.ValidationError`;
* segments that overlap once sorted by start time → ``ValidationError`` (a frame would get two labels);
* a file with no segment at all (empty, or only comments) → ``InputFormatError``;
* zero-length segments (``start == end``) are allowed: they add a boundary but hold no frame;
* gaps between segments are allowed; the metrics count and report the frames they leave unlabelled;
* lines need not be in time order: segments are sorted by start time (stable), and ``records`` keeps
  each segment's line number for later messages;
* a UTF-8 byte-order mark, Windows (CRLF) or old Mac (CR) line ends, tabs and repeated spaces are accepted;
  bytes that are not UTF-8 → ``InputFormatError`` naming the line.

``on_error="skip"`` leaves out every bad *line* (not a number, missing label, NaN/inf/negative times,
``end < start``, not UTF-8) instead of raising, and lists it in ``Segments.skipped`` as
``"<file>: line N: reason"``; the segments are then exactly those of the file without those lines.
Overlaps (a fault of two lines together) and a file without any valid segment still raise.

Annotation lists ``[[start, end, label], ...]`` (the form used in the FMP notebooks, in frames or seconds)
go through the same checks; their records are the list indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Any

from deteval.errors import ConfigError, InputFormatError, ValidationError
from deteval.io.guards import refuse_special
from deteval.syntax import ASCII_SPACE, fields, parse_decimal, text_lines
from deteval.tables.segments import MAX_TIME, Segments, build_segments, segments_from_list, time_fault

__all__ = [
    "MAX_TIME",
    "Segments",
    "as_segments",
    "build_segments",
    "load_lab",
    "parse_lab",
    "segments_from_list",
]


def _parse_time(token: str, what: str, path: str, lineno: int) -> float:
    try:  # ASCII notation only: float() would read '1_0' as 10 and accept other scripts' digits
        return parse_decimal(token)
    except ValueError:
        raise InputFormatError(
            f"{what} time {token!r} is not a number", file=path, record=f"line {lineno}"
        ) from None


def parse_lab(
    text: str,
    *,
    source: str = "<lab text>",
    on_error: str = "raise",
    skipped: Sequence[str] = (),
) -> Segments:
    """Parse the text of a ``.lab`` file (see the module docstring for the format and the error rules).

    ``on_error="skip"`` leaves out bad lines and lists them in ``Segments.skipped`` (after ``skipped``,
    the records a caller already left out).
    """
    if on_error not in ("raise", "skip"):
        raise ConfigError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    skip = on_error == "skip"
    bad: list[str] = list(skipped)
    starts: list[float] = []
    ends: list[float] = []
    labels: list[str] = []
    lines: list[int] = []
    # Lines end at \n, \r\n, \r only and fields are split at ASCII whitespace only: U+2028 or U+0085 in a
    # label must neither start a new line (shifting every line number) nor split the label.
    for lineno, raw in enumerate(text_lines(text), start=1):
        line = raw.strip(ASCII_SPACE)
        if not line or line.startswith("#"):
            continue
        try:
            parts = fields(line, 2)
            if len(parts) < 3:
                raise InputFormatError(
                    f"expected 'start end label', found {len(parts)} field(s): {line!r} (missing label)",
                    file=source,
                    record=f"line {lineno}",
                )
            start = _parse_time(parts[0], "start", source, lineno)
            end = _parse_time(parts[1], "end", source, lineno)
            if skip and (reason := time_fault(start, end)):
                raise ValidationError(reason, file=source, record=f"line {lineno}")
        except (InputFormatError, ValidationError) as exc:
            if not skip:
                raise
            bad.append(str(exc))
            continue
        starts.append(start)
        ends.append(end)
        labels.append(parts[2].strip(ASCII_SPACE))
        lines.append(lineno)
    if not starts:
        reason = (
            f"no valid segment: all {len(bad)} segment line(s) were bad and skipped"
            if bad
            else "no segments (the file is empty or holds only comments and blank lines)"
        )
        raise InputFormatError(reason, file=source)
    segs = build_segments(starts, ends, labels, records=lines, source=source, record_kind="line")
    return replace(segs, skipped=tuple(bad)) if bad else segs


def load_lab(path: str | PathLike[str], *, on_error: str = "raise") -> Segments:
    """Read a ``.lab`` file (``start end label`` per line, seconds) into :class:`Segments`.

    ``on_error="skip"``: bad lines are left out and listed in ``Segments.skipped`` (module docstring).
    """
    if on_error not in ("raise", "skip"):
        raise ConfigError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    p = Path(path)
    refuse_special(p, ".lab file")  # (a pipe would block the open, /dev/zero never end)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    skipped: list[str] = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        if on_error != "skip":
            raise InputFormatError("not UTF-8 text", file=str(path), record=f"line {line}") from None
        # Line by line (lines split on \n only, so the numbering is that of the whole-file decode).
        parts = []
        for lineno, raw in enumerate(data.split(b"\n"), 1):
            try:
                parts.append(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
            except UnicodeDecodeError:
                skipped.append(f"{path}: line {lineno}: not UTF-8 text")
                parts.append("")
        text = "\n".join(parts)
    return parse_lab(text, source=str(path), on_error=on_error, skipped=skipped)


def as_segments(annotation: Any, *, source: str | None = None, on_error: str = "raise") -> Segments:
    """Accept :class:`Segments`, a ``.lab`` path (str or Path) or an annotation list.

    ``on_error`` applies to ``.lab`` files (see :func:`load_lab`)."""
    if isinstance(annotation, Segments):
        return annotation
    if isinstance(annotation, (str, PathLike)):
        return load_lab(annotation, on_error=on_error)
    return segments_from_list(annotation, source=source or "<annotation list>")
