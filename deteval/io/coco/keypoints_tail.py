"""A large COCO keypoints results file read on two cores, the tail by a forked child from the start.

The child (:func:`keypoints_tail`) parses the pieces of the file from byte ``start`` on while this process reads
the ground truth and then the head (:func:`keypoints_with_tail`): the child needs nothing from the ground
truth, because every check that involves it (the ids known, the number of keypoints) is made by this process
on the child's columns once they come back. Both run the checks of the one-process path on whole pieces
(:func:`deteval.io.coco.load_coco_results`), and any fault or doubt (a bad record, a piece that does not
parse, keypoints of another width than the ground truth's, a child that fails) makes
:func:`keypoints_with_tail` return None: the caller then reads the file in one process, which raises the
error naming the record. The result is the one-process :class:`~deteval.io.coco.CocoResults`, array for
array: in pycocotools' loadRes keypoints branch ``bbox`` and ``area`` from the keypoints' extent; in its bbox
branch (the file's first record has a ``bbox``, as detectron2's keypoint results do) each record's own box,
checked, and its area ``w·h``.

The keypoints of a piece become one float64 matrix in a single ``np.array`` call, which refuses strings,
``null``, nested lists and rows of unequal length by the dtype or shape it gives; only ``true``/``false``,
which it would read as 1/0, need another test, and that one is made on the text: a part of the file without
the bytes ``true`` and ``false`` holds no boolean (else its pieces are checked value by value).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from itertools import chain
from os import PathLike
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco.fields import field_values, finite_floats, index_of, xywh_boxes
from deteval.io.coco.json_text import no_json_booleans
from deteval.io.coco.keypoints import boxes_from_bounds, keypoint_bounds, keypoint_matrix
from deteval.io.coco.pieces import parsed_number_piece, piece_bounds, piece_text, read_in_pieces
from deteval.io.coco.results import loadres_branch, result_ids
from deteval.io.coco.tables import CocoGroundTruth, CocoResults

__all__ = ["KeypointBuffer", "KeypointColumns", "keypoints_tail", "keypoints_with_tail", "read_keypoints"]

#: (image ids, category ids, scores, N×3K keypoints, 4×N bounds of the keypoints) of a part of the file,
#: checked but not yet mapped to the ground truth (bounds: :func:`deteval.io.coco.keypoint_bounds`, made
#: where a piece's keypoints are still in cache, by the process that read them; in loadRes' bbox branch the
#: records' own ``[x, y, w, h]`` boxes instead, 4×N)
KeypointColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: The results are parsed in pieces of about this size: each piece's objects (51 numbers a record) are made,
#: read into columns and freed while in cache, and the next piece reuses their memory; the parts' bounds also
#: fall closer to the split byte (measured: the fastest size; smaller pieces pay more for the cuts).
PIECE_BYTES = 192 << 10


def _part(path: str | PathLike[str], start: int, head: bool, backward: bool = False) -> Iterator[Any] | None:
    """For each piece of the head (pieces beginning before ``start``, and always the first) or of the tail:
    its index, its records (None if it does not parse) and whether its text holds no string but their keys
    (:func:`deteval.io.coco.only_key_strings`); ``backward``: the last piece first. Preceded by whether that
    part of the text may hold a boolean, the byte where the tail begins and loadRes' branch for the file
    (:func:`_branch`); None if the file is not read in pieces or takes another branch."""
    read = read_in_pieces(Path(path), min(coco_pieces.CHUNK_BYTES // 4, PIECE_BYTES))
    if read is None:
        return None
    data, cuts = read
    heads = [i == 0 or piece_bounds(data, cuts, i)[0] < start for i in range(len(cuts) + 1)]
    mine = [i for i, h in enumerate(heads) if h == head]
    tail_lo = piece_bounds(data, cuts, heads.index(False))[0] if False in heads else len(data)
    if not mine:
        return iter([(False, tail_lo, None)])
    lo, hi = piece_bounds(data, cuts, mine[0])[0], piece_bounds(data, cuts, mine[-1])[1]
    bools = not no_json_booleans(data, lo, hi)
    file = str(path)
    kind = _branch(data, cuts, file)
    if kind is None:
        return None

    def pieces() -> Iterator[Any]:
        yield bools, tail_lo, kind
        for i in reversed(mine) if backward else mine:
            yield i, *parsed_number_piece(piece_text(data, cuts, i), file)

    return pieces()


def _branch(data: Any, cuts: list[tuple[int, int]], file: str) -> str | None:
    """loadRes' branch for the whole file, from its first record (the first piece parsed: a tail's reader
    has not read it otherwise): ``"keypoints"`` or ``"bbox"`` (a result with a box and keypoints, as
    detectron2 writes them); None for any other (the one-process path reads those)."""
    records, _ = parsed_number_piece(piece_text(data, cuts, 0), file)
    if records is None:
        return None
    try:
        kind = loadres_branch(records[0], file)
    except DetevalError:
        return None
    return kind if kind in ("keypoints", "bbox") else None


def _piece_columns(
    records: list, bools: bool, file: str, numbers: bool = False, kind: str = "keypoints"
) -> KeypointColumns:
    """A piece's columns; the last: the keypoints' bounds in loadRes' keypoints branch, the records' own
    boxes (4×N, checked as the one-process path checks them) in its bbox branch."""
    # (an N×3K float64 matrix checked as the one-process path checks it; ``numbers``: the piece's text holds no
    # string but its records' keys)
    values = field_values(records, "keypoints", file, None)
    keypoints = keypoint_matrix(values, file, None, "keypoints", plain=not bools, numbers=numbers)
    if kind == "bbox":
        boxes = xywh_boxes(field_values(records, "bbox", file, None), file, None).T
    else:
        boxes = keypoint_bounds(keypoints)
    return (
        result_ids(records, "image_id", file),
        result_ids(records, "category_id", file),
        finite_floats(field_values(records, "score", file, None), "score", file, None),
        keypoints,
        boxes,
    )


def _columns(
    pieces: Iterator[Any], file: str, out: np.ndarray | None = None, backward: bool = False
) -> _PartColumns | None:
    """The pieces' columns concatenated, the keypoints as one matrix per piece; None on any fault (the
    file's first piece, if among them, must begin with a record that takes loadRes' keypoints branch).
    ``out``: a flat float64 buffer the keypoints are written into instead (the one matrix returned is then a
    view of it), from its start or, ``backward`` (the pieces come last first), ending at its end."""
    bools, _, kind = next(pieces)
    parts: list[KeypointColumns] = []
    used = 0
    with paused():
        for _, records, numbers in pieces:
            try:
                if records is None:
                    return None
                parts.append(_piece_columns(records, bools, file, numbers, kind))
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
#: begin in the buffer shared with this process and their shape (:class:`deteval.run.coco_reading.KeypointsTail`).
TailColumns = tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int], np.ndarray]


def keypoints_tail(path: str | PathLike[str], start: int, shared: Any) -> TailColumns | None:
    """The child's share: the pieces of a keypoints results file beginning at or after byte ``start`` (the first piece
    excepted), as checked columns not yet mapped to the ground truth, the keypoints written into ``shared`` (a writable
    buffer, :func:`deteval.run.coco_reading.tail_buffer`) from number ``lo // 2`` on, ``lo`` the byte where the tail
    begins (the head, ``lo`` bytes, holds at most that many numbers: each takes a digit and a comma or a bracket, so
    this process can write its keypoints just before: one matrix, no copy of the tail's); None on any fault."""
    pieces = _part(path, start, False)
    if pieces is None:
        return None
    first = next(pieces)
    offset = first[1] // 2
    buf = np.frombuffer(shared, dtype=np.float64)
    cols = _columns(chain([first], pieces), str(path), buf[offset:])
    if cols is None:
        return None
    img_ids, cat_ids, score, (keypoints,), bounds = cols
    return img_ids, cat_ids, score, (offset, int(keypoints.shape[0]), int(keypoints.shape[1])), bounds


class KeypointBuffer(Protocol):
    """The buffer the tail's keypoints were written into (:func:`keypoints_tail`), where the head's are
    written just before them (:class:`deteval.run.coco_reading.KeypointsTail`: memory shared by two
    processes)."""

    def head_buffer(self, tail_lo: int) -> np.ndarray:
        """The numbers before the tail's, which begin at number ``tail_lo // 2``."""

    def joined(self, tail_lo: int, head: np.ndarray, tail: np.ndarray) -> np.ndarray | None:
        """The head's rows and the tail's as one matrix viewing the buffer; None if not contiguous."""


def keypoints_with_tail(
    path: str | PathLike[str],
    gt: CocoGroundTruth,
    start: int,
    tail: Callable[[], KeypointColumns | None],
    shared: KeypointBuffer | None = None,
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
    first = next(pieces)
    tail_lo, kind = first[1:]
    # (alone: one fresh buffer, of which only the pages written take memory, instead of a copy of every
    # piece's matrix into one at the end)
    try:
        out = np.empty(tail_lo // 2) if shared is None else shared.head_buffer(tail_lo)
    except MemoryError:  # (no such address space: the pieces' matrices concatenated at the end)
        out = None
    head = _columns(chain([first], pieces), file, out, backward=shared is not None)
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
        img = index_of(np.concatenate([head[0], rest[0]]), gt.image_ids, "image_id", file, None)
        cat = index_of(np.concatenate([head[1], rest[1]]), gt.cat_ids, "category_id", file, None)
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
    if kind == "bbox":  # (loadRes' bbox branch: each record's box, its area w·h)
        bbox = np.concatenate([head[4], rest[4]], axis=1).T.copy()
        area = bbox[:, 2] * bbox[:, 3]
    else:
        bbox, area = boxes_from_bounds(np.concatenate([head[4], rest[4]], axis=1))
    return CocoResults(
        img=img,
        cat=cat,
        score=np.concatenate([head[2], rest[2]]),
        bbox=bbox,
        area=area,
        keypoints=keypoints,
        kind=kind,
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
