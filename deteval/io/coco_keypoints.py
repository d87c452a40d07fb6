"""A large COCO keypoints results file read on two cores, the tail by a forked child from the start.

The child (:func:`keypoints_tail`) parses the pieces of the file from byte ``start`` on while this process reads
the ground truth and then the head (:func:`keypoints_with_tail`): the child needs nothing from the ground
truth, because every check that involves it (the ids known, the number of keypoints) is made by this process
on the child's columns once they come back. Both run the checks of the one-process path on whole pieces
(:func:`deteval.io.coco.load_coco_results`), and any fault or doubt (a bad record, a piece that does not
parse, keypoints of another width than the ground truth's, a child that fails) makes
:func:`keypoints_with_tail` return None: the caller then reads the file in one process, which raises the
error naming the record. The result is the one-process :class:`~deteval.io.coco.CocoResults`, array for
array (pycocotools' loadRes keypoints branch: ``bbox`` and ``area`` from the keypoints' extent).

The keypoints of a piece become one float64 matrix in a single ``np.array`` call, which refuses strings,
``null``, nested lists and rows of unequal length by the dtype or shape it gives; only ``true``/``false``,
which it would read as 1/0, need another test, and that one is made on the text: a part of the file without
the bytes ``true`` and ``false`` holds no boolean (else its pieces are checked value by value).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError
from deteval.io import coco as coco_io
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.run.forked import Forked

__all__ = [
    "KeypointColumns",
    "KeypointsTail",
    "keypoints_split_byte",
    "keypoints_tail",
    "keypoints_with_tail",
    "read_keypoints",
    "tail_buffer",
]

#: (image ids, category ids, scores, N×3K keypoints, 4×N bounds of the keypoints) of a part of the file,
#: checked but not yet mapped to the ground truth (bounds: :func:`deteval.io.coco.keypoint_bounds`, made
#: where a piece's keypoints are still in cache, by the process that read them)
KeypointColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: The ground truth costs about this many times as much per byte as keypoints results (its records hold
#: more fields, integers and a visibility check; read in pieces, :data:`deteval.io.coco.KEYPOINT_GT_PIECE_BYTES`),
#: measured on the bench_coco keypoints set ...
GT_BYTE_COST = 2.0
#: ... and the child about this many times as much per byte of results as this process (its objects land on
#: fresh pages, its keypoints in the shared buffer, its columns go through the pipe; this process reuses the
#: memory the ground truth's objects freed). bench_coco keypoints 5k, two processes forced, 10 runs each,
#: fastest: this process's reading (the fork to the last column) 166 ms with 1.0 and 2.6 (waiting 18 ms for
#: the child), 159 ms with 1.1 and 2.3, 165 ms with 1.2 and 2.3. Once the ground truth was read in pieces
#: (93 -> 60 ms), CPU of this process's reading against the child's, 5 runs each on a loaded machine: 153 and
#: 161 ms with 2.3, 160 and 153 ms with 1.9.
TAIL_BYTE_COST = 1.1


#: The results are parsed in pieces of about this size: each piece's objects (51 numbers a record) are made,
#: read into columns and freed while in cache, and the next piece reuses their memory; the parts' bounds also
#: fall closer to the split byte. read_keypoints of bench_coco's 25 MB keypoints results, CPU, fastest of 5
#: fresh processes: 198 ms in pieces of 1 MB, 185 of 512 KB, 166 of 256 KB, 159 of 192 KB, 162 of 128 KB,
#: 167 of 64 KB.
PIECE_BYTES = 192 << 10


def keypoints_split_byte(results_bytes: int, gt_bytes: int) -> int:
    """The byte from which the child parses the results: this process reads the ground truth and the head,
    so that both take about as long (the head keeps at least one piece: the first record decides loadRes'
    branch)."""
    head = (TAIL_BYTE_COST * results_bytes - GT_BYTE_COST * gt_bytes) / (1 + TAIL_BYTE_COST)
    return max(coco_io.CHUNK_BYTES, int(head))


def _part(path: str | PathLike[str], start: int, head: bool, backward: bool = False) -> Iterator[Any] | None:
    """For each piece of the head (pieces beginning before ``start``, and always the first) or of the tail:
    its index, its records (None if it does not parse) and whether its text holds no string but their keys
    (:func:`deteval.io.coco.only_key_strings`); ``backward``: the last piece first. Preceded by whether that
    part of the text may hold a boolean and the byte where the tail begins; None if the file is not read in
    pieces."""
    read = coco_io._read_in_pieces(Path(path), min(coco_io.CHUNK_BYTES // 4, PIECE_BYTES))
    if read is None:
        return None
    data, cuts = read
    heads = [i == 0 or coco_io._piece_bounds(data, cuts, i)[0] < start for i in range(len(cuts) + 1)]
    mine = [i for i, h in enumerate(heads) if h == head]
    tail_lo = coco_io._piece_bounds(data, cuts, heads.index(False))[0] if False in heads else len(data)
    if not mine:
        return iter([(False, tail_lo)])
    lo, hi = coco_io._piece_bounds(data, cuts, mine[0])[0], coco_io._piece_bounds(data, cuts, mine[-1])[1]
    bools = not coco_io.no_json_booleans(data, lo, hi)
    file = str(path)

    def pieces() -> Iterator[Any]:
        yield bools, tail_lo
        for i in reversed(mine) if backward else mine:
            yield i, *coco_io.parsed_number_piece(coco_io._piece_text(data, cuts, i), file)

    return pieces()


def _matrix(values: list, bools: bool, file: str, numbers: bool = False) -> np.ndarray:
    """The keypoints of a piece as an N×3K float64 matrix (3K: the piece's first record's), checked as the
    one-process path checks them (:func:`deteval.io.coco._keypoint_matrix`, which names a bad record);
    ``numbers``: the piece's text holds no string but its records' keys."""
    return coco_io._keypoint_matrix(values, file, None, "keypoints", plain=not bools, numbers=numbers)


def _piece_columns(records: list, bools: bool, file: str, numbers: bool = False) -> KeypointColumns:
    keypoints = _matrix(coco_io._field(records, "keypoints", file, None), bools, file, numbers)
    return (
        coco_io._result_ids(records, "image_id", file),
        coco_io._result_ids(records, "category_id", file),
        coco_io._floats(coco_io._field(records, "score", file, None), "score", file, None),
        keypoints,
        coco_io.keypoint_bounds(keypoints),
    )


def _columns(
    pieces: Iterator[Any], file: str, out: np.ndarray | None = None, backward: bool = False
) -> _PartColumns | None:
    """The pieces' columns concatenated, the keypoints as one matrix per piece; None on any fault (the
    file's first piece, if among them, must begin with a record that takes loadRes' keypoints branch).
    ``out``: a flat float64 buffer the keypoints are written into instead (the one matrix returned is then a
    view of it), from its start or, ``backward`` (the pieces come last first), ending at its end."""
    bools, _ = next(pieces)
    parts: list[KeypointColumns] = []
    used = 0
    with paused():
        for i, records, numbers in pieces:
            try:
                if records is None or (i == 0 and coco_io.loadres_branch(records[0], file) != "keypoints"):
                    return None
                parts.append(_piece_columns(records, bools, file, numbers))
            except DetevalError:
                return None
            del records
            mat = parts[-1][3]
            if out is not None:
                if used + mat.size > out.shape[0] or mat.shape[1] != parts[0][3].shape[1]:
                    return None
                at = out.shape[0] - used - mat.size if backward else used
                out[at : at + mat.size] = mat.ravel()
                used += mat.size
                parts[-1] = (*parts[-1][:3], np.empty((0, mat.shape[1])), parts[-1][4])  # (``out`` keeps it)
    # keypoints of two widths, or string ids next to integer ones: left to the one-process path (it says)
    if (
        not parts
        or len({p[3].shape[1] for p in parts}) > 1
        or any(_mixed([p[k] for p in parts]) for k in (0, 1))
    ):
        return None
    width = parts[0][3].shape[1]
    if backward:
        parts.reverse()
    written = None if out is None else out[out.shape[0] - used :] if backward else out[:used]
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        [p[3] for p in parts] if written is None else [written.reshape(-1, width)],
        np.concatenate([p[4] for p in parts], axis=1),
    )


def _mixed(ids: list[np.ndarray]) -> bool:
    """String ids in one array and integers in another (refused by the one-process path)."""
    return len({a.dtype.kind == "U" for a in ids if a.shape[0]}) > 1


#: A part's columns as :func:`_columns` gives them: ids, category ids, scores, the keypoints as one matrix
#: per piece (the head's, copied once to their place, :func:`keypoints_with_tail`) or one view of ``out``,
#: and their bounds.
_PartColumns = tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]

#: What the child sends back: the columns of :data:`KeypointColumns`, but for the keypoints only where they
#: begin in the buffer shared with this process and their shape (:class:`KeypointsTail`).
TailColumns = tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int], np.ndarray]


def keypoints_tail(path: str | PathLike[str], start: int, shared: mmap.mmap) -> TailColumns | None:
    """The child's share: the pieces of a keypoints results file beginning at or after byte ``start`` (the
    first piece excepted), as checked columns not yet mapped to the ground truth, the keypoints written into
    ``shared`` (:func:`tail_buffer`) from number ``lo // 2`` on, ``lo`` the byte where the tail begins (the
    head, ``lo`` bytes, holds at most that many numbers: each takes a digit and a comma or a bracket, so this
    process can write its keypoints just before: one matrix, no copy of the tail's); None on any fault."""
    pieces = _part(path, start, False)
    if pieces is None:
        return None
    first = next(pieces)
    offset = first[1] // 2

    def again() -> Iterator[Any]:
        yield first
        yield from pieces

    buf = np.frombuffer(shared, dtype=np.float64)
    cols = _columns(again(), str(path), buf[offset:])
    if cols is None:
        return None
    img_ids, cat_ids, score, (keypoints,), bounds = cols
    return img_ids, cat_ids, score, (offset, int(keypoints.shape[0]), int(keypoints.shape[1])), bounds


def tail_buffer(path: str | PathLike[str]) -> mmap.mmap | None:
    """Memory shared with a child (anonymous, mapped before the fork) that holds the keypoints of the whole
    file, the tail's written by the child, the head's by this process (:func:`keypoints_tail`): a number
    takes at least two bytes of text (a digit and a comma or bracket), so four times the file's bytes as
    float64. Only the pages written take memory; the rest is address space. Returning the matrix through the
    child's pipe instead costs this process about 20 ms per 10 MB (copied into the pipe and out again), and
    putting the head and the tail together in fresh memory 4 ms for 24 MB, and 4 ms more to unmap the tail."""
    try:
        size = os.stat(path).st_size
        return mmap.mmap(-1, (4 * max(size, 0) // mmap.PAGESIZE + 1) * mmap.PAGESIZE)
    except (OSError, ValueError, OverflowError):
        return None


class KeypointsTail:
    """A forked child running :func:`keypoints_tail` and the buffer it writes the keypoints into;
    :meth:`head_buffer` is where this process writes the head's keypoints, meanwhile, :meth:`result` gives
    the child's :data:`KeypointColumns` (None if it failed), :meth:`joined` the whole matrix, :meth:`cancel`
    ends it."""

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
        the byte where the tail begins: :func:`keypoints_tail`): the head's keypoints are written so as to
        end there (:func:`_columns` ``backward``), while the child reads, with no copy afterwards."""
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
        try:
            self.shared.close()
        except BufferError:
            pass


def keypoints_with_tail(
    path: str | PathLike[str],
    gt: CocoGroundTruth,
    start: int,
    tail: Callable[[], KeypointColumns | None],
    shared: KeypointsTail | None = None,
) -> CocoResults | None:
    """The head read here, then the child's tail (``tail()``: what :func:`keypoints_tail` returned), both
    mapped to ``gt``: the :class:`CocoResults` of the one-process path; None on any fault. ``shared``: the
    child's buffer, where the head's keypoints are written just before the tail's (default: the head's
    matrices and the tail's concatenated)."""
    if gt.keypoints is None or not len(gt):
        return None
    pieces = _part(path, start, True, backward=shared is not None)
    if pieces is None:
        return None
    file = str(path)
    bools, tail_lo = next(pieces)

    def again() -> Iterator[Any]:
        yield bools, tail_lo
        yield from pieces

    # (alone: one fresh buffer, of which only the pages written take memory, instead of a copy of every
    # piece's matrix into one at the end)
    try:
        out = np.empty(tail_lo // 2) if shared is None else shared.head_buffer(tail_lo)
    except MemoryError:  # (no such address space: the pieces' matrices concatenated at the end)
        out = None
    head = _columns(again(), file, out, backward=shared is not None)
    if head is None:
        return None
    rest = tail()
    if rest is None:
        return None
    width = gt.keypoints.shape[1]
    if head[3][0].shape[1] != width or (rest[3].shape[0] and rest[3].shape[1] != width):
        return None
    if _mixed([head[0], rest[0]]) or _mixed([head[1], rest[1]]):
        return None
    try:
        img = coco_io._index_of(np.concatenate([head[0], rest[0]]), gt.image_ids, "image_id", file, None)
        cat = coco_io._index_of(np.concatenate([head[1], rest[1]]), gt.cat_ids, "category_id", file, None)
    except DetevalError:
        return None
    if shared is not None:
        keypoints = shared.joined(tail_lo, head[3][0], rest[3])
    else:
        keypoints = (
            np.concatenate([*head[3], rest[3]]) if len(head[3]) > 1 or rest[3].shape[0] else head[3][0]
        )
    if keypoints is None:
        return None
    bbox, area = coco_io.boxes_from_bounds(np.concatenate([head[4], rest[4]], axis=1))
    return CocoResults(
        img=img,
        cat=cat,
        score=np.concatenate([head[2], rest[2]]),
        bbox=bbox,
        area=area,
        keypoints=keypoints,
        kind="keypoints",
        source=file,
    )


def read_keypoints(path: str | PathLike[str], gt: CocoGroundTruth) -> CocoResults | None:
    """The whole file read by this process (one process: the keypoints matrices built as the two-core reader
    builds them, faster than record by record); None where that does not apply or on any fault."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    width = gt.keypoints.shape[1] if gt.keypoints is not None else 0
    empty = (
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
        np.zeros(0),
        np.zeros((0, width)),
        np.zeros((4, 0)),
    )
    return keypoints_with_tail(path, gt, size + 1, lambda: empty)
