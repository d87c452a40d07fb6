"""A large results file read as a head and a tail, each part on its own, and put together: the
same columns, errors and messages as the one-pass loader, or None whenever that cannot be vouched for (the
caller then reads the file in one pass, which names the fault). Which part is read where is the runner's
decision (:mod:`deteval.run.coco_reading`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco.fields import index_of
from deteval.io.coco.pieces import (
    bbox_piece_bytes,
    parsed_piece,
    part_pieces,
    piece_bounds,
    piece_text,
    read_in_pieces,
)
from deteval.io.coco.results import (
    bbox_branch,
    loadres_branch,
    mapped_bbox,
    raw_bbox_columns,
    results_from_records,
)
from deteval.io.coco.tables import CocoGroundTruth, CocoResults, RawColumns, concat_results, stored_boxes
from deteval.io.coco.typed import bbox_columns


class ColumnBuffer(Protocol):
    """Where the tail's bbox columns are written as they are read (rows from ``base`` on) and the head's
    just before them, instead of being handed back (:class:`deteval.run.coco_reading.TailBuffer`: memory
    shared by two processes)."""

    #: the first row of the tail (the head's rows end there)
    base: int
    #: the rows of the tail written so far
    used: int

    def put(self, raw: RawColumns) -> RawColumns | None:
        """Write one piece's columns after the previous ones; their views, or None if they do not fit."""

    def put_head(self, parts: Sequence[CocoResults]) -> int | None:
        """Write the head's columns (ids mapped) to end at ``base``; the row where they begin, or None."""

    def columns(self, n: int, lo: int | None = None) -> RawColumns | None:
        """The first ``n`` rows of the tail, from row ``lo`` on when given; None if beyond the buffer."""

    def release_ids(self) -> None:
        """Let the memory of the id columns go (mapped to the ground truth once read)."""


#: What a child that read the tail of a bbox results file sends back (:func:`results_tail`): how many pieces it
#: read and their columns, joined into one when it read them all (the parent then takes them as they are), or
#: the number of rows it wrote into the :class:`ColumnBuffer` shared with the parent
RawTail = tuple[int, list[RawColumns] | int]


def _in_tail(data: Any, cuts: list[tuple[int, int]], i: int, start: int) -> bool:
    """Whether piece ``i`` is the child's: it begins at or after byte ``start``; the first piece only when
    ``start`` is 0 (the child then reads every piece)."""
    return start <= 0 or (i > 0 and piece_bounds(data, cuts, i)[0] >= start)


def _raw_piece(data: Any, cuts: list[tuple[int, int]], i: int, file: str) -> RawColumns | None:
    """Piece ``i``'s validated bbox columns, ids not mapped: decoded by type where that vouches for them, else
    parsed (the first piece's first record then in loadRes' bbox branch); None on any fault."""
    text = piece_text(data, cuts, i)
    raw = bbox_columns(text)
    if raw is not None:
        return raw
    records = parsed_piece(text, file)
    if records is None or (i == 0 and not bbox_branch(records[0])):
        return None
    try:
        return raw_bbox_columns(records, file)
    except DetevalError:
        return None


def results_tail(path: str | PathLike[str], start: int, shared: ColumnBuffer | None = None) -> RawTail | None:
    """The child's share: every piece that begins at or after byte ``start`` (the first one only from
    ``start`` 0, its first record then checked for loadRes' bbox branch, as the parent does), as validated
    unmapped columns (:data:`RawTail`: written into ``shared`` when every piece fits there, only their number
    of rows then sent; else joined from ``start`` 0, where the parent has no columns of its own to put first,
    or piece by piece, as the parent puts them after its own in one copy); None on any fault."""
    read = read_in_pieces(Path(path), bbox_piece_bytes())
    if read is None:
        return None
    data, cuts = read
    file = str(path)
    out: list[RawColumns] = []
    in_shared = shared is not None
    with paused():
        for i in range(len(cuts) + 1):
            if not _in_tail(data, cuts, i, start):
                continue
            raw = _raw_piece(data, cuts, i, file)
            if raw is None:
                return None
            if in_shared and shared is not None:
                # (written while the piece's columns are in cache; one that does not fit: every piece goes
                # through the pipe, those already written as views of the buffer)
                views = shared.put(raw)
                in_shared = views is not None
                raw = raw if views is None else views
            out.append(raw)
    if not out:
        return None
    if in_shared and shared is not None:
        return len(out), shared.used
    if start <= 0 and len(out) > 1:
        return len(out), [cast(RawColumns, tuple(np.concatenate(col) for col in zip(*out)))]
    return len(out), out


def results_with_tail(
    path: str | PathLike[str],
    gt: CocoGroundTruth,
    start: int,
    tail: Callable[[], RawTail | None],
    shared: ColumnBuffer | None = None,
) -> CocoResults | None:
    """The parent's share (the pieces before byte ``start``, mapped to ``gt`` as they are parsed; none from
    ``start`` 0), then the child's (``tail()``: what :func:`results_tail` returned, its columns in ``shared``
    when it says so) mapped and appended; None on any fault."""
    read = read_in_pieces(Path(path), bbox_piece_bytes())
    if read is None:
        return None
    data, cuts = read
    file = str(path)
    parts: list[CocoResults] = []
    n_tail = 0
    with paused():
        for i in range(len(cuts) + 1):
            if _in_tail(data, cuts, i, start):
                n_tail += 1
                continue
            raw = _raw_piece(data, cuts, i, file)
            if raw is None:
                return None
            try:
                parts.append(mapped_bbox(raw, gt, file))
            except DetevalError:
                return None
        del data, read  # (the mapping is closed: the tail comes from the child)
        # (while the child reads: the head's columns written into the buffer, just before the tail's rows)
        head_lo = shared.put_head(parts) if shared is not None and shared.base and parts else None
        got = tail()
        if got is None or got[0] != n_tail:
            return None
        columns_in = got[1]
        in_buffer = isinstance(columns_in, int)
        if isinstance(columns_in, int) and head_lo is not None and shared is not None:
            return _joined_in_buffer(shared, columns_in, head_lo, parts[0], gt, file)
        if isinstance(columns_in, int):
            one = None if shared is None else shared.columns(columns_in)
            if one is None:
                return None
            columns_in = [one]
        for columns in columns_in:
            try:
                parts.append(mapped_bbox(columns, gt, file))
            except DetevalError:
                return None
        del got, columns_in
        if in_buffer and shared is not None:
            shared.release_ids()  # (mapped: the scores and boxes may stay in the buffer, the ids need not)
    # (the child's columns alone: taken as they are, not copied once more)
    return parts[0] if len(parts) == 1 else concat_results(parts, file)


def _joined_in_buffer(
    shared: ColumnBuffer, n: int, lo: int, first: CocoResults, gt: CocoGroundTruth, file: str
) -> CocoResults | None:
    """The results from the buffer's rows: the head's from row ``lo`` (:meth:`ColumnBuffer.put_head`), then the
    ``n`` the child wrote, their ids mapped to ``gt`` in place; the columns are views of the buffer, with
    ``first``'s other fields (the head's first part: plain bbox columns, as every part). None if an id is
    unknown (the one-process path then names it)."""
    tail = shared.columns(n)
    whole = shared.columns(n, lo)
    if tail is None or whole is None:
        return None
    try:
        img = index_of(tail[0], gt.image_ids, "image_id", file, None)
        cat = index_of(tail[1], gt.cat_ids, "category_id", file, None)
    except DetevalError:
        return None
    tail[0][...], tail[1][...] = img, cat
    bbox = whole[3]
    return replace(first, img=whole[0], cat=whole[1], score=whole[2], bbox=bbox, area=bbox[:, 2] * bbox[:, 3])


def results_part(
    path: str | PathLike[str], gt: CocoGroundTruth, iou_type: str, start: int, head: bool
) -> list[CocoResults] | None:
    """The pieces of a segm or keypoints results file that begin before byte ``start`` (``head``; always the
    first) or the others, read against ``gt`` as the one-process path reads them; None on any fault, or if a
    piece's first record is not in the loadRes branch of ``iou_type`` (the file's first record decides the
    branch of every record)."""
    if iou_type == "keypoints" and (gt.keypoints is None or not len(gt)):
        return None
    # quarter pieces: the two parts then end within a megabyte of ``start`` (the parts balanced)
    pieces = part_pieces(path, start, head, coco_pieces.CHUNK_BYTES // 4)
    if pieces is None:
        return None
    file = str(path)
    parts: list[CocoResults] = []
    with paused():
        for records in pieces:
            if records is None:
                return None
            try:
                if loadres_branch(records[0], file) != iou_type:
                    return None
                part = results_from_records(records, file, False, gt, iou_type, kind=iou_type)
            except DetevalError:
                return None
            # segm: a piece whose given boxes are not all valid gets NaN boxes throughout, as the whole
            # file would only if it held no valid box column at all: left to the one-process path
            boxes = stored_boxes(part)  # (boxes made from masks are never NaN)
            if (isinstance(boxes, np.ndarray) and np.isnan(boxes).any()) or part.warnings:
                return None
            parts.append(part)
            del records
    return parts


def results_two_parts(
    path: str | PathLike[str],
    gt: CocoGroundTruth,
    iou_type: str,
    start: int,
    tail: Callable[[], list[CocoResults] | None],
) -> CocoResults | None:
    """The head read here (:func:`results_part`), then the tail (``tail()``: the child's) appended; None on
    any fault (the caller then reads the file in one process, which names it)."""
    parts = results_part(path, gt, iou_type, start, True)
    if parts is None:
        return None
    rest = tail()
    if rest is None:
        return None
    return concat_results(parts + rest, str(path))
