"""A large segm results file on two cores from the start: a forked child reads the tail without the ground truth.

The usual segm results (compressed RLE masks, no ``bbox``) need the ground truth for three things only: the
ids' positions in it, each mask's size against its image's, and polygons (which need an image size). The
child (:func:`segm_tail`) therefore starts before the ground truth is read and does everything else on its
records, as the one-process loader does (:func:`~deteval.io.coco.results.results_from_records`): the ids and scores
checked, every mask's structure checked and its runs decoded and checked (:func:`~deteval.io.rle.check_rles`,
which gives the areas). It sends back compact columns (the counts strings joined into one text: no dict per
record to pickle). The parent reads the ground truth and the head (:func:`~deteval.io.coco.results_part`),
then maps the child's ids, compares the sizes with the images' and rebuilds the RLE dicts
(:func:`segm_with_tail`).

The same holds for results with a ``bbox`` in every record (detectron2's and mmdetection's, the box head's box
next to each mask): loadRes reads every record in its bbox branch then (the file's first record has a box),
its area the box's ``w * h``, its mask kept as given (and checked as above), so the pieces also carry the
checked boxes (:data:`RawMasks`) and become results of kind ``"bbox"``. Every piece must be of one form, with
boxes or without: a file where only some records carry a box is left to the one-process path (loadRes' rule
then depends on the first record).

Anything else (some records with a ``bbox`` and others without, a polygon or an uncompressed RLE, a size that
is not its image's, an unknown id, any error) makes these return None: the caller then reads the file in one
process, which names the fault, so the messages and which fault is reported first are those of the
one-process path.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from itertools import repeat
from operator import contains, itemgetter
from os import PathLike
from typing import Any

import numpy as np

from deteval.collector import paused
from deteval.errors import DetevalError
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco.fields import field_values, finite_floats, index_of, xywh_boxes
from deteval.io.coco.head_tail import results_part
from deteval.io.coco.masks import plain_rle_sizes, rle_sizes_fit
from deteval.io.coco.pieces import parsed_piece, part_texts
from deteval.io.coco.results import result_ids
from deteval.io.coco.tables import CocoGroundTruth, CocoResults, MaskBoxes, concat_results, stored_boxes
from deteval.io.coco.typed import SegmColumns, segm_bbox_columns, segm_columns
from deteval.io.rle import check_rle_text, text_slices

__all__ = [
    "PendingMasks",
    "RawMasks",
    "segm_pending",
    "segm_tail",
    "segm_with_pending_tail",
    "segm_with_tail",
]

#: One piece of the tail: image ids, category ids, scores (not yet mapped to the ground truth), each mask's
#: ``[height, width]``, its area, the length of its ``counts`` string, and the records' N×4 ``bbox`` (checked as
#: the loader checks boxes) when every record of the piece has one, else None.
RawMasks = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]
#: The child's tail: its pieces, and for each the ``counts`` strings of its masks laid end to end (ASCII: a
#: checked counts string holds only ``'0'..'o'``), one bytes object rather than a string per mask.
SegmTail = tuple[list[RawMasks], list[bytes]]


def segm_tail(path: str | PathLike[str], start: int) -> SegmTail | None:
    """The child's share: every piece of ``path`` beginning at or after byte ``start`` (never the first), read
    as :func:`_raw_piece`; None on any fault or doubt."""
    return _raw_pieces(path, start, False)


def _raw_pieces(path: str | PathLike[str], start: int, head: bool) -> SegmTail | None:
    """The pieces of ``path`` beginning before byte ``start`` (``head``) or the others, each read as
    :func:`_raw_piece`; None on any fault or doubt."""
    # cut as :func:`~deteval.io.coco.results_part` cuts them (quarter pieces), so that the parts fit together
    pieces = part_texts(path, start, head, coco_pieces.CHUNK_BYTES // 4)
    if pieces is None:
        return None
    file = str(path)
    out: list[RawMasks] = []
    texts: list[bytes] = []
    with paused():  # (tens of thousands of objects per piece, no cycles)
        for text in pieces:
            try:
                raw = _raw_piece(text, file)
            except DetevalError:
                return None
            # (every piece of one form, boxes or none: see the module's docstring)
            if raw is None or (out and (raw[0][6] is None) != (out[0][6] is None)):
                return None
            out.append(raw[0])
            texts.append(raw[1])
    return out, texts


def _raw_piece(text: bytes, file: str) -> tuple[RawMasks, bytes] | None:
    """The masks' columns of one piece's text (:data:`RawMasks`), their runs checked, decoded by type where
    that vouches for the columns (:func:`~deteval.io.coco.typed.segm_columns`,
    :func:`~deteval.io.coco.typed.segm_bbox_columns` with a box in every record: no dict per record or mask),
    else parsed."""
    typed = segm_columns(text)
    boxes = None
    if typed is None:
        boxed: tuple[SegmColumns, np.ndarray | None] | None = segm_bbox_columns(text)
        if boxed is None:
            records = parsed_piece(text, file)
            # (unreadable; an empty one is left to the one-process path)
            boxed = None if not records else _raw_masks(records, file)
            if boxed is None:
                return None
        typed, boxes = boxed
    img_ids, cat_ids, score, hw, joined, lengths = typed
    if not rle_sizes_fit(hw):
        return None
    # (check_rles' checks of these strings, on the text already laid end to end)
    area = check_rle_text(
        np.frombuffer(joined, dtype=np.uint8), lengths, hw[:, 0] * hw[:, 1], file, range(len(lengths))
    )
    return (img_ids, cat_ids, score, hw, area, lengths, boxes), joined


def _raw_masks(records: list, file: str) -> tuple[SegmColumns, np.ndarray | None] | None:
    """The columns and boxes of results whose masks are all compressed RLE dicts and which have no ``bbox``
    (loadRes' segm branch: every box taken from the mask) or a ``bbox`` in every record (its bbox branch, if
    the file's first record is one of them), checked as the one-process loader checks them but for what needs
    the ground truth and the runs (:func:`_raw_piece`); None if the records are not such (the one-process
    path decides)."""
    if set(map(type, records)) != {dict}:
        return None
    given = sum(map(contains, records, repeat("bbox")))
    if given not in (0, len(records)):
        return None
    img_ids = result_ids(records, "image_id", file)
    cat_ids = result_ids(records, "category_id", file)
    score = finite_floats(field_values(records, "score", file, None), "score", file, None)
    # (the loader's box check: 4 numbers, finite, within ±2**53, no negative width or height)
    boxes = xywh_boxes(field_values(records, "bbox", file, None), file, None) if given else None
    try:
        segs = list(map(itemgetter("segmentation"), records))
    except KeyError:
        return None
    hw = plain_rle_sizes(segs)  # (the comparison with the images' sizes is the parent's)
    if hw is None:
        return None
    counts = list(map(itemgetter("counts"), segs))  # (strings: plain_rle_sizes checked)
    try:
        text = "".join(counts).encode("ascii")
    except UnicodeEncodeError:
        return None
    lengths = np.fromiter(map(len, counts), dtype=np.int64, count=len(counts))
    return (img_ids, cat_ids, score, hw, text, lengths), boxes


def segm_with_tail(
    path: str | PathLike[str], gt: CocoGroundTruth, start: int, tail: Callable[[], SegmTail | None]
) -> CocoResults | None:
    """The head read here against ``gt`` (:func:`~deteval.io.coco.results_part`), then the child's pieces
    (``tail()``: what :func:`segm_tail` returned) mapped to ``gt`` and appended: the columns the one-process
    loader gives; None on any fault or doubt (the caller then reads the file in one process)."""
    got = segm_with_pending_tail(path, gt, start, tail)
    if got is None:
        return None
    res, pending = got
    pending.fill(res)
    return res


def segm_with_pending_tail(
    path: str | PathLike[str],
    gt: CocoGroundTruth,
    start: int,
    tail: Callable[[], SegmTail | None],
    lean_head: bool = False,
) -> tuple[CocoResults, PendingMasks] | None:
    """:func:`segm_with_tail` with the tail's mask dicts not made yet: their places in ``segmentation``,
    ``rles`` (and the boxes still to compute) hold None until :meth:`PendingMasks.fill` makes them, or for
    good when the matcher reads them from the texts (:attr:`~deteval.io.coco.CocoResults.lazy_masks`);
    everything else (the ids, the sizes) is checked here. ``lean_head``: the head read as the child reads
    the tail where it can (:func:`_lean_head`), its masks pending too (for a caller that only matches: a
    segmentation dict's keys other than ``size`` and ``counts`` are not kept)."""
    head = _lean_head(path, gt, start) if lean_head else None
    parts = results_part(path, gt, "segm", start, True) if head is None else head[0]
    if parts is None:
        return None
    got = tail()
    if got is None:
        return None
    raw, texts = got
    file = str(path)
    offset = sum(len(q) for q in parts)
    first = offset
    with paused():
        for piece in raw:
            part = _mapped(piece, gt, file)
            # (the head's form, boxes or none: a file of both is left to the one-process path)
            if part is None or part.kind != parts[0].kind:
                return None
            parts.append(part)
            offset += len(part)
        res = concat_results(parts, file)
    pending = PendingMasks.of(np.arange(first, offset, dtype=np.int64), raw, texts)
    if pending is None or head is None:
        return None if pending is None else (res, pending)
    return res, PendingMasks.joined(head[1], pending)


def segm_pending(path: str | PathLike[str], gt: CocoGroundTruth) -> tuple[CocoResults, PendingMasks] | None:
    """The whole results file ``path`` read in this process as the child reads a tail (:func:`_lean_head` of
    every piece), its masks pending (:class:`PendingMasks`): the columns the one-process loader gives, for a
    caller that only matches; None on any fault or doubt (the caller then reads it with the loader)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    got = _lean_head(path, gt, size + 1)
    if got is None:
        return None
    parts, pending = got
    with paused():
        res = concat_results(parts, str(path))
    return res, pending


def _lean_head(
    path: str | PathLike[str], gt: CocoGroundTruth, start: int
) -> tuple[list[CocoResults], PendingMasks] | None:
    """The pieces of the head (those :func:`~deteval.io.coco.results_part` reads) read as the child reads the
    tail (:func:`_raw_piece`, :func:`_mapped`: the one-process columns, in less time), their masks pending;
    None where a piece is not such (``results_part`` then reads the head)."""
    got = _raw_pieces(path, start, True)
    if got is None:
        return None
    file = str(path)
    parts = []
    with paused():
        for piece in got[0]:
            part = _mapped(piece, gt, file)
            if part is None:
                return None
            parts.append(part)
    pending = PendingMasks.of(np.arange(sum(map(len, parts)), dtype=np.int64), *got)
    return None if pending is None else (parts, pending)


def _mapped(piece: RawMasks, gt: CocoGroundTruth, file: str) -> CocoResults | None:
    """One piece of the tail against ``gt``: the ids mapped, every mask of its image's size (checked), its
    masks None for now (see :class:`PendingMasks`); None if an id is unknown or a size differs. A piece with
    boxes is read as loadRes' bbox branch reads it: kind ``"bbox"``, the boxes as given, the area ``w * h``
    of each (as :func:`~deteval.io.coco.results.results_from_records` computes it; pycocotools' ``bb[2] *
    bb[3]``), the masks as given (the matcher reads them as they are: compressed RLEs)."""
    img_ids, cat_ids, score, hw, area, lengths, boxes = piece
    try:
        img = index_of(img_ids, gt.image_ids, "image_id", file, None)
        cat = index_of(cat_ids, gt.cat_ids, "category_id", file, None)
    except DetevalError:
        return None
    if lengths.shape[0] != img.shape[0] or not np.array_equal(hw, gt.image_hw[img]):
        return None
    masks: list[Any] = [None] * lengths.shape[0]
    return CocoResults(
        img=img,
        cat=cat,
        score=score,
        bbox=MaskBoxes(masks, file) if boxes is None else boxes,
        area=area if boxes is None else boxes[:, 2] * boxes[:, 3],
        segmentation=masks,
        kind="segm" if boxes is None else "bbox",
        source=file,
        rles=list(masks),
    )


class PendingMasks:
    """The masks of a :class:`~deteval.io.coco.CocoResults` whose RLE dicts are made when asked for: ``rows``
    (their positions), their ``[height, width]``, and their ``counts`` strings, laid end to end in ``texts``
    (ASCII; the texts of the file's pieces are joined into one): mask ``k``'s is
    ``texts[which[k]][starts[k]:ends[k]]``."""

    def __init__(
        self,
        rows: np.ndarray,
        hw: np.ndarray,
        texts: list[bytes],
        which: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
    ) -> None:
        if len(texts) > 1:
            # one text: a mask's counts are then cut from it with no pass per text (the matcher cuts a block's
            # masks at each call, and a block's detections come from pieces all over the file)
            offsets = np.cumsum([0, *map(len, texts[:-1])])[which]
            texts, which = [b"".join(texts)], np.zeros_like(which)
            starts, ends = starts + offsets, ends + offsets
        self.rows, self.hw, self.texts = rows, hw, texts
        self.which, self.starts, self.ends = which, starts, ends
        self.done = np.zeros(rows.shape[0], dtype=bool)
        self._index: np.ndarray | None = None

    @classmethod
    def of(cls, rows: np.ndarray, raw: list[RawMasks], texts: list[bytes]) -> PendingMasks | None:
        """The masks of the pieces ``raw`` (their sizes and lengths), piece ``i``'s counts in ``texts[i]``, at
        ``rows``; None if a text is not its masks' counts end to end."""
        if len(raw) != len(texts) or rows.shape[0] != sum(p[5].shape[0] for p in raw):
            return None
        empty = np.zeros(0, dtype=np.int64)
        ends = [np.cumsum(p[5]) for p in raw]
        if any(int(e[-1] if e.size else 0) != len(t) for e, t in zip(ends, texts)):
            return None
        ends_all = np.concatenate(ends) if ends else empty
        lengths = np.concatenate([p[5] for p in raw]) if raw else empty
        which = np.repeat(np.arange(len(raw), dtype=np.int64), [p[5].shape[0] for p in raw])
        hw = np.concatenate([p[3] for p in raw]) if raw else empty.reshape(0, 2)
        return cls(rows, hw, list(texts), which, ends_all - lengths, ends_all)

    @classmethod
    def joined(cls, first: PendingMasks, second: PendingMasks) -> PendingMasks:
        """The masks of both (``first``'s rows before ``second``'s)."""
        return cls(
            np.concatenate([first.rows, second.rows]),
            np.concatenate([first.hw, second.hw]),
            first.texts + second.texts,
            np.concatenate([first.which, second.which + len(first.texts)]),
            np.concatenate([first.starts, second.starts]),
            np.concatenate([first.ends, second.ends]),
        )

    def index(self, n: int) -> np.ndarray:
        """For each of the ``n`` rows of the results, its mask's number here; -1 for the rows not here."""
        if self._index is None or self._index.shape[0] != n:
            self._index = np.full(n, -1, dtype=np.int64)
            self._index[self.rows] = np.arange(self.rows.shape[0], dtype=np.int64)
        return self._index

    def fill(self, res: CocoResults, categories: np.ndarray | None = None) -> None:
        """Make the dicts (as JSON gives them) of the masks not made yet, of every record or (``categories``,
        a mask over the ground truth's categories) of those records whose category it holds, and put each in
        its place in ``segmentation``, ``rles`` and the boxes still to compute (the same dict in each)."""
        todo = ~self.done
        if categories is not None:
            todo &= categories[res.cat[self.rows]]
        idx = np.flatnonzero(todo)
        if not idx.size:
            return
        self.done[idx] = True
        cut = text_slices(self.texts, self.which[idx], self.starts[idx], self.ends[idx])
        counts = map(bytes.decode, cut)  # (ASCII: checked)
        # (each size list made by numpy's tolist, in C)
        masks = [{"size": size, "counts": c} for size, c in zip(self.hw[idx].tolist(), counts)]
        rows = self.rows[idx].tolist()
        boxes = stored_boxes(res)
        for column in (res.segmentation, res.rles, boxes.rles if isinstance(boxes, MaskBoxes) else None):
            if column is not None:
                deque(map(column.__setitem__, rows, masks), maxlen=0)  # (column[row] = mask, in C)
