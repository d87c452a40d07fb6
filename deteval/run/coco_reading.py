"""How the reading of a large COCO file is shared by two processes: where to split it, and the memory
shared with the child that reads the tail (:class:`TailBuffer`).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from contextlib import suppress
from os import PathLike
from typing import cast

import numpy as np

from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco.keypoints_tail import KeypointColumns
from deteval.io.coco.pieces import bbox_piece_bytes
from deteval.io.coco.tables import CocoResults, RawColumns, stored_boxes
from deteval.io.coco.typed import typed_decoding
from deteval.run.forked import Forked


def results_byte_cost(gt_bytes: int = 0) -> float:
    """Parse time of a byte of bbox results relative to a byte of a ground truth of ``gt_bytes``: about 1 with
    orjson or json; with msgspec (:mod:`deteval.io.coco.typed`) 0.5 against a ground truth read whole by
    orjson, and about 1 again against one read in pieces (from ``2 * CHUNK_BYTES``), whose annotations are
    decoded by type too (measured ratios)."""
    if not typed_decoding():
        return 1.0
    return 1.0 if gt_bytes >= 2 * coco_pieces.CHUNK_BYTES else 0.5


#: The parent's cost of taking in the child's results (unpickling and mapping their ids; they come joined),
#: per byte of results parsed by the child, in bytes of ground truth parsed (:func:`split_reading`): measured,
#: the value with the shortest wall time (above it the parent waits; at 0 it waits for the child's value).
HANDOVER_COST = 0.3


#: When the parent reads the whole ground truth and the head of the results, a byte of results weighs this many
#: times :func:`results_byte_cost` in the split (:func:`split_reading`), on both sides: the parent maps the
#: head's ids to the ground truth as it parses them, and the child writes its columns into a
#: :class:`TailBuffer` that the parent then maps and copies (measured: at 1.0 the parent waits for the child,
#: at 1.3 the child for the parent). Not in the choice of the split: a ground truth that weighs more than its
#: results reads its first pieces in the child instead, which is faster than the whole ground truth here.
HEAD_SPLIT_COST = 1.2


def split_reading(results_bytes: int, gt_bytes: int, results_cost: float | None = None) -> tuple[int, int]:
    """(the byte from which the child parses the results, the bytes of the ground truth's annotations array
    it parses first): both processes then take about as long, a byte of results costing ``results_cost``
    bytes of ground truth (default :func:`results_byte_cost`; ``HEAD_SPLIT_COST`` times that when the parent
    reads the whole ground truth and the head). A ground truth that costs less than the
    results stays whole with the parent, which also parses the head of the results; a costlier one gives its
    first pieces to the child, which then parses all the results (checking the first record's loadRes branch
    as the parent would; a results file too small to cut stays whole with the parent). The parent also takes
    in the child's results (:data:`HANDOVER_COST`), which counts on its side. ``gt_bytes`` 0: a ground truth
    in memory."""
    w = results_byte_cost(gt_bytes) if results_cost is None else results_cost
    if gt_bytes <= w * results_bytes or gt_bytes < 2 * coco_pieces.CHUNK_BYTES:
        h = w * HEAD_SPLIT_COST
        return max(coco_pieces.CHUNK_BYTES, int((h * results_bytes - gt_bytes) / (2 * h))), 0
    theirs = results_bytes if results_bytes >= 2 * coco_pieces.CHUNK_BYTES else 0
    ours = results_bytes - theirs
    head = int(gt_bytes + w * (ours - theirs) + int(theirs * HANDOVER_COST)) // 2
    return (0 if theirs else coco_pieces.CHUNK_BYTES), max(
        0, min(head, gt_bytes - 2 * coco_pieces.CHUNK_BYTES)
    )


#: The fewest bytes of text a bbox result record takes (``{"image_id":1,"category_id":1,"bbox":[1,1,1,1],
#: "score":1}`` and a comma: 58), with room to spare: a :class:`TailBuffer` for a tail of n bytes holds
#: n // this many rows (a record it cannot hold only sends the columns through the pipe, as before).
MIN_BBOX_RECORD_BYTES = 48


class TailBuffer:
    """Memory shared with the child that reads the tail of a bbox results file (anonymous, mapped before the fork): the
    child writes each piece's columns into it as it reads them (:meth:`put`) and this process reads them in place once
    the child is done (:meth:`columns`), instead of the columns coming pickled through the pipe (copied into the pipe
    and out of it after the child has finished, while this process waits). With ``head_bytes`` (the byte where the tail
    begins), room for the rows of the head of the file (this process's share) is left before the tail's: this process
    writes its columns there (:meth:`put_head`) while the child reads, maps the tail's ids in place, and the results'
    columns are the buffer's, not a concatenation of both parts. Only the pages written take memory; the rest is address
    space."""

    def __init__(self, tail_bytes: int, head_bytes: int = 0) -> None:
        # (this process's pieces begin before byte ``head_bytes`` and end within two pieces of it)
        head = head_bytes + 2 * bbox_piece_bytes() if head_bytes > 0 else 0
        self.base = head // MIN_BBOX_RECORD_BYTES + 1 if head else 0
        self.rows = self.base + max(0, tail_bytes) // MIN_BBOX_RECORD_BYTES + 1
        self.map = mmap.mmap(-1, 56 * self.rows)
        self.used = 0  # (rows the child wrote, from row ``base``)

    def _views(self) -> RawColumns:
        n = self.rows
        return (
            np.frombuffer(self.map, dtype=np.int64, count=n),
            np.frombuffer(self.map, dtype=np.int64, count=n, offset=8 * n),
            np.frombuffer(self.map, dtype=np.float64, count=n, offset=16 * n),
            np.frombuffer(self.map, dtype=np.float64, count=4 * n, offset=24 * n).reshape(n, 4),
        )

    def _populate(self, advice: int, lo: int, hi: int) -> None:
        """Map the pages of rows [lo, hi) of every column in one call each (Linux 5.14+: MADV_POPULATE_*),
        not one page fault per 4 KB (elsewhere: nothing, the pages fault in as they are touched)."""
        for at, width in ((0, 8), (8, 8), (16, 8), (24, 32)):
            a = (at * self.rows + width * lo) // mmap.PAGESIZE * mmap.PAGESIZE
            try:
                self.map.madvise(advice, a, at * self.rows + width * hi - a)
            except (OSError, ValueError):
                return

    def put(self, raw: RawColumns) -> RawColumns | None:
        """(the child) Write one piece's columns after the previous ones; their views in the buffer, or None if
        they do not fit or are not the typed columns (int64 ids, float64 scores and N×4 boxes)."""
        n = raw[0].shape[0]
        lo = self.base + self.used
        if not self._fits(raw, lo):
            return None
        views = self._write(raw, lo)
        self.used += n
        return views

    def _fits(self, raw: RawColumns, lo: int, hi: int | None = None) -> bool:
        """Whether ``raw`` (typed columns: int64 ids, float64 scores and N×4 boxes) fits in rows [lo, hi)."""
        img, cat, score, bbox = raw
        n = img.shape[0]
        return (
            lo + n <= (self.rows if hi is None else hi)
            and (img.dtype, cat.dtype, score.dtype, bbox.dtype) == (_I8, _I8, _F8, _F8)
            and cat.shape == score.shape == (n,)
            and bbox.shape == (n, 4)
        )

    def _write(self, raw: RawColumns, lo: int) -> RawColumns:
        hi = lo + raw[0].shape[0]
        self._populate(MADV_POPULATE_WRITE, lo, hi)
        views = tuple(v[lo:hi] for v in self._views())
        for v, col in zip(views, raw):
            v[...] = col
        return cast(RawColumns, views)

    def put_head(self, parts: Sequence[CocoResults]) -> int | None:
        """(this process) Write the head's columns (ids mapped) so that they end where the tail's rows begin;
        the row where they begin, or None if they do not fit or are not plain typed bbox columns."""
        lo = self.base - sum(len(p) for p in parts)
        if lo < 0:
            return None
        raws: list[RawColumns] = []
        at = lo
        for p in parts:
            boxes = stored_boxes(p)
            if p.warnings or p.skipped or not isinstance(boxes, np.ndarray):
                return None
            raw = (p.img, p.cat, p.score, boxes)
            if not self._fits(raw, at, self.base):
                return None
            raws.append(raw)
            at += len(p)
        at = lo
        for raw in raws:
            self._write(raw, at)
            at += raw[0].shape[0]
        return lo

    def release_ids(self) -> None:
        """Free the pages of the image and category id columns (mapped to the ground truth once read): the
        scores and boxes the results keep as views hold the buffer, and with it those pages, until they go
        (Linux' MADV_REMOVE; elsewhere nothing)."""
        with suppress(AttributeError, OSError, ValueError):
            self.map.madvise(mmap.MADV_REMOVE, 0, 16 * self.rows // mmap.PAGESIZE * mmap.PAGESIZE)

    def columns(self, n: int, lo: int | None = None) -> RawColumns | None:
        """(this process) The first ``n`` rows the child wrote, from row ``lo`` on when given (the head's,
        :meth:`put_head`); None if it claims more than the buffer holds."""
        if not 0 <= n <= self.rows - self.base:
            return None
        self._populate(MADV_POPULATE_READ, self.base, self.base + n)
        first = self.base if lo is None else lo
        return cast(RawColumns, tuple(v[first : self.base + n] for v in self._views()))


_I8, _F8 = np.dtype(np.int64), np.dtype(np.float64)


#: Linux' madvise flags that map a range's pages at once, to read or to write (not in Python's mmap module
#: before 3.13)
MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)


MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)


#: The ground truth costs about this many times as much per byte as keypoints results (its records hold
#: more fields, integers and a visibility check; read in pieces, :data:`deteval.io.coco.KEYPOINT_GT_PIECE_BYTES`),
#: measured ...
GT_BYTE_COST = 2.0
#: ... and the child about this many times as much per byte of results as this process (its objects land on
#: fresh pages, its keypoints in the shared buffer, its columns go through the pipe; this process reuses the
#: memory the ground truth's objects freed): measured, the pair with the shortest reading.
TAIL_BYTE_COST = 1.1


def keypoints_split_byte(results_bytes: int, gt_bytes: int) -> int:
    """The byte from which the child parses the results: this process reads the ground truth and the head,
    so that both take about as long (the head keeps at least one piece: the first record decides loadRes'
    branch)."""
    head = (TAIL_BYTE_COST * results_bytes - GT_BYTE_COST * gt_bytes) / (1 + TAIL_BYTE_COST)
    return max(coco_pieces.CHUNK_BYTES, int(head))


def tail_buffer(path: str | PathLike[str]) -> mmap.mmap | None:
    """Memory shared with a child (anonymous, mapped before the fork) that holds the keypoints of the whole file, the
    tail's written by the child, the head's by this process (:func:`~deteval.io.coco.keypoints_tail.keypoints_tail`): a
    number takes at least two bytes of text (a digit and a comma or bracket), so four times the file's bytes as float64.
    Only the pages written take memory; the rest is address space. Returning the matrix through the child's pipe instead
    would copy it into the pipe and out again, and the head and the tail would then be put together in fresh memory."""
    try:
        size = os.stat(path).st_size
        return mmap.mmap(-1, (4 * max(size, 0) // mmap.PAGESIZE + 1) * mmap.PAGESIZE)
    except (OSError, ValueError, OverflowError):
        return None


class KeypointsTail:
    """A forked child running :func:`~deteval.io.coco.keypoints_tail.keypoints_tail` and the buffer it writes
    the keypoints into; :meth:`head_buffer` is where this process writes the head's keypoints, meanwhile,
    :meth:`result` gives the child's :data:`KeypointColumns` (None if it failed), :meth:`joined` the whole
    matrix, :meth:`cancel` ends it."""

    def __init__(self, child: Forked, shared: mmap.mmap) -> None:
        self.child, self.shared = child, shared
        self.offset = 0

    def result(self) -> KeypointColumns | None:
        got = self.child.result()
        if got is None:
            return None
        img_ids, cat_ids, score, (offset, n, width), bounds = got
        self.offset = offset
        keypoints = np.frombuffer(self.shared, dtype=np.float64, count=n * width, offset=8 * offset)
        return img_ids, cat_ids, score, keypoints.reshape(n, width), bounds

    def head_buffer(self, tail_lo: int) -> np.ndarray:
        """The numbers of the buffer before the child's (which begin at number ``tail_lo // 2``, ``tail_lo``
        the byte where the tail begins: :func:`~deteval.io.coco.keypoints_tail.keypoints_tail`): the head's
        keypoints are written so as to end there (read backward), while the child reads, with no copy
        afterwards."""
        return np.frombuffer(self.shared, dtype=np.float64, count=tail_lo // 2)

    def joined(self, tail_lo: int, head: np.ndarray, tail: np.ndarray) -> np.ndarray | None:
        """The head's rows (``head``, a view ending at the end of :meth:`head_buffer`) and the tail's (from
        :meth:`result`) as one matrix viewing the buffer; None if they are not contiguous there."""
        if tail_lo // 2 != self.offset or head.shape[1] != tail.shape[1]:
            return None
        flat = np.frombuffer(self.shared, dtype=np.float64)
        return flat[self.offset - head.size : self.offset + tail.size].reshape(-1, tail.shape[1])

    def cancel(self) -> None:
        """End the child and unmap the buffer, unless the keypoints read from it are still in use (they live
        there: unmapped when they go)."""
        self.child.cancel()
        with suppress(BufferError):
            self.shared.close()
