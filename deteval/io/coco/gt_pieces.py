"""A large ground-truth file read with its ``annotations`` array in pieces (bounded memory), its first pieces
optionally by another process (:func:`gt_head`): the same table, errors and messages as the whole file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any

from deteval.collector import paused
from deteval.errors import DetevalError, InputFormatError
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco.annotations import ANN_RECORD, ann_columns, concat_columns
from deteval.io.coco.json_text import (
    loads_piece,
    loads_plain_piece,
    mapped_file,
    no_json_booleans,
    orjson_available,
)
from deteval.io.coco.pieces import RECORD_BOUNDARY, bbox_piece_bytes
from deteval.io.coco.typed import gt_annotations, gt_box_columns, typed_decoding
from deteval.io.guards import refuse_special
from deteval.io.jsonkeys import unique_keys

_ANNOTATIONS_KEY = re.compile(rb'"annotations"\s*:\s*\[')


def _same_id_kinds(
    parts: list[dict[str, Any]], starts: list[int], file: str, failed: str | None = None
) -> None:
    """The rule of :func:`~deteval.io.coco.fields.id_array` across pieces (piece k from ``annotations[starts[k]]``): ids
    all integers or all strings. A piece holds one kind (else it raised on its own); a mix of pieces is refused naming
    the file's first string id, as the whole-file path does: the first record of the first piece of strings. ``failed``:
    the id a piece just refused for a mix inside it (refused again here if a string came before)."""
    for key in ("image_id", "category_id"):
        kinds = [p[key].dtype.kind == "U" for p in parts]
        if (key == failed and any(kinds)) or (kinds and min(kinds) != max(kinds)):
            k = kinds.index(True)
            raise InputFormatError(
                f"{key} must be an integer within ±2**63 (or all ids strings), got {parts[k][key][0].item()!r}",
                file=file,
                record=f"annotations[{starts[k]}]",
            )


_OBJECT_LIST_END = re.compile(rb"\}\s*\]")


def _last_piece(
    data: Any, lo: int, file: str, typed: bool = False, boxes: _Boxes = None
) -> tuple[list | _BoxPiece | None, int]:
    """The records from ``lo`` to the end of the annotations array (and the byte just past its ``]``) when the
    first ``}]`` after ``lo`` closes it, parsed by orjson; (None, -1) otherwise (the caller then lets Python's
    ``raw_decode`` find the end). A text that parses as one array up to that ``]`` is the array ``raw_decode``
    reads: a JSON value ends where its own brackets close."""
    m = _OBJECT_LIST_END.search(data, lo)
    if m is None or not orjson_available():
        return None, -1
    try:
        records = _ann_piece(b"[" + data[lo : m.end()], file, typed, boxes)
    except (ValueError, DetevalError):  # (a repeated key: named by the path below, as before)
        return None, -1
    return records, m.end()


#: The child's share of a ground truth read on two cores: the bytes of the annotations array it reads (from
#: the array's start) and the function that returns what it read (:func:`gt_head`), None on any fault.
GtHead = tuple[int, Callable[[], "tuple[list[dict[str, Any]], int] | None"]]


def _head_pieces(data: Any, lo: int, end: int, piece: int) -> tuple[list[tuple[int, int]], int] | None:
    """The annotation pieces :func:`gt_in_pieces` cuts from byte ``lo`` (every ``piece`` bytes) that begin
    before byte ``end``, as (start, end) byte ranges, and the start of the next piece; found without parsing
    (None: no cut left)."""
    pieces = []
    while lo < end:
        cut = RECORD_BOUNDARY.search(data, lo + piece)
        if cut is None:
            return None
        pieces.append((lo, cut.start() + 1))
        lo = cut.end() - 1
    return pieces, lo


def gt_head(
    path: str | PathLike[str], length: int, keep_segmentation: bool = False, need_keypoints: bool = False
) -> tuple[list[dict[str, Any]], int] | None:
    """A forked child's share of a large ground-truth file: the columns (ids not yet mapped) of the
    annotation pieces :func:`gt_in_pieces` would cut in the first ``length`` bytes of the annotations
    array, and the byte where the next piece starts; None on any fault (the parent then reads them itself)."""
    file = str(path)
    refuse_special(path, "JSON file")  # (a pipe would block the open, /dev/zero never end)
    data = mapped_file(path)
    if data is None:
        return None
    m = _ANNOTATIONS_KEY.search(data)
    typed, boxes = _decoding(keep_segmentation, need_keypoints, False)
    cut = None if m is None else _head_pieces(data, m.end(), m.end() + length, _gt_piece_bytes(boxes))
    if cut is None:
        return None
    parts: list[dict[str, Any]] = []
    for lo, hi in cut[0]:
        try:
            with memoryview(data) as view:  # one copy: the piece with its brackets
                text = b"".join((b"[", view[lo:hi], b"]"))
            records = _ann_piece(text, file, typed, boxes)
            del text
            if not isinstance(records, (list, _BoxPiece)):
                return None
            parts.append(_piece_columns(records, file, keep_segmentation, need_keypoints, _kp_width(parts)))
        except (ValueError, DetevalError):
            return None
        del records
    return parts, cut[1]


#: A keypoints ground truth from twice this size on is parsed in pieces of about this size: each piece's
#: objects (51 numbers an annotation) are made, read into columns and freed while in cache, and the next
#: piece reuses their memory (fewer page faults than the whole file's objects; smaller pieces pay more for the
#: cuts than they save).
KEYPOINT_GT_PIECE_BYTES = 256 << 10


#: Whether those pieces are decoded by type (:mod:`deteval.io.coco.typed`) where msgspec is installed: no: for
#: keypoints it is slower than orjson, even with msgspec already imported.
KEYPOINT_GT_TYPED = False


def gt_in_pieces(
    path: Path,
    keep_segmentation: bool,
    need_keypoints: bool,
    crowd_optional: bool = False,
    head: GtHead | None = None,
) -> tuple[dict, dict] | None:
    """Parse a large ground-truth file with its ``annotations`` array in pieces of about
    :data:`~deteval.io.coco.pieces.CHUNK_BYTES`
    (bbox: :func:`_gt_piece_bytes`; keypoints: :data:`KEYPOINT_GT_PIECE_BYTES`, parsed by orjson, not by
    type).

    Only one piece's Python objects exist at a time: each is reduced to columns at once. The pieces are cut
    between records (``}, {``); the piece that runs past the end of the array is read with
    ``json.JSONDecoder.raw_decode``, which reports where the array ends; the rest of the document is parsed
    with an empty annotations list. Returns None whenever this does not apply, and the caller parses the whole
    file (which also gives the precise error message).

    ``head``: the first pieces are read by a forked child (:data:`GtHead`, :func:`gt_head`) while this
    process reads the others; any fault, here or there, gives None (the caller then reads the file alone,
    which names the first fault as one process does).
    """
    step = (
        min(coco_pieces.CHUNK_BYTES, KEYPOINT_GT_PIECE_BYTES) if need_keypoints else coco_pieces.CHUNK_BYTES
    )
    refuse_special(path, "JSON file")  # (a pipe would block the open, /dev/zero never end)
    found = _annotations_array(path, step)
    if found is None:
        return None
    data, m = found
    del found
    file = str(path)
    plain = need_keypoints and no_json_booleans(data)
    typed, boxes = _decoding(keep_segmentation, need_keypoints, crowd_optional)
    piece = step if need_keypoints else _gt_piece_bytes(boxes)
    parts: list[dict[str, Any]] = []
    starts: list[int] = []  # each part's first annotation index
    offset = 0
    lo = m.end()
    if head is not None:  # the child reads the pieces before byte ``lo`` (the same cuts, found here unparsed)
        skipped = _head_pieces(data, lo, lo + head[0], piece)
        if skipped is None or not skipped[0]:
            return None
        lo = skipped[1]
    first_lo = lo
    ann_end = -1
    with paused():
        try:
            while ann_end < 0:
                got = _next_records(data, lo, piece, file, plain, typed, boxes)
                if got is None:
                    return None
                records, numbers, nxt, ann_end = got
                if not isinstance(records, (list, _BoxPiece)):
                    return None
                try:
                    parts.append(
                        _piece_columns(
                            records,
                            file,
                            keep_segmentation,
                            need_keypoints,
                            _kp_width(parts),
                            crowd_optional=crowd_optional,
                            plain=plain,
                            numbers=numbers,
                        )
                    )
                except DetevalError as exc:
                    if head is not None:  # (its record index depends on the child's count)
                        return None
                    raise _file_fault(exc, parts, starts, offset, file) from None
                starts.append(offset)
                if head is None:
                    _same_id_kinds(parts, starts, file)
                offset += len(records)
                del records, got
                lo = nxt
            rest = loads_piece(data[: m.start()] + b'"annotations": []' + data[ann_end:], file)
            del data  # (before the child's share comes in: the peak memory)
        except ValueError:
            return None
    if not isinstance(rest, dict) or rest.get("annotations") != []:
        return None
    if head is not None:
        joined = _joined_with_head(head, parts, first_lo, file)
        if joined is None:
            return None
        parts = joined
    return rest, concat_columns(parts)


def _annotations_array(path: Path, step: int) -> tuple[Any, re.Match[bytes]] | None:
    """A ground-truth file mapped read-only (:func:`~deteval.io.coco.json_text.mapped_file`, as the results) and where
    its ``"annotations": [`` is; None if it is smaller than two pieces of ``step`` bytes, unreadable, or does not hold
    that key exactly once (the whole-file path then reads it)."""
    data = mapped_file(path, 2 * step)
    if data is None:
        return None
    first = data.find(b'"annotations"')
    if first < 0 or data.find(b'"annotations"', first + 1) >= 0:  # (exactly one: else the whole-file path)
        return None
    m = _ANNOTATIONS_KEY.search(data)
    return None if m is None else (data, m)


def _next_records(
    data: Any, lo: int, piece: int, file: str, plain: bool, typed: bool, boxes: _Boxes
) -> tuple[Any, bool, int, int] | None:
    """The annotation records of the piece from byte ``lo`` (about ``piece`` bytes, cut between records),
    whether its text holds no string but their keys, the byte where the next piece starts and, for the last
    piece, the byte just past the array's closing ``]`` (-1 for the others); None if the last piece does not
    parse."""
    cut = RECORD_BOUNDARY.search(data, lo + piece)
    records = None
    numbers = False  # (the piece's text holds no string but its records' keys)
    ann_end = -1
    if cut is not None:
        nxt = cut.end() - 1
        try:
            text = b"[" + data[lo : cut.start() + 1] + b"]"
            if plain and not typed and boxes is None:
                records, numbers = loads_plain_piece(text, file)
            else:
                records = _ann_piece(text, file, typed, boxes)
            del text
        except ValueError:
            records = None  # this piece runs past the end of the annotations array
    if records is None:  # the last piece: it ends at the array's closing bracket
        records, ann_end = _last_piece(data, lo, file, typed, boxes)
        nxt = ann_end
    if records is None:  # raw_decode stops at the array's closing bracket
        try:
            tail = "[" + data[lo:].decode("utf-8")
            records, end = json.JSONDecoder(object_pairs_hook=unique_keys).raw_decode(tail)
        except (ValueError, UnicodeDecodeError):
            return None
        # the byte offset just past the closing "]"
        ann_end = lo + len(tail[:end].encode("utf-8")) - 1
        del tail
        nxt = ann_end
    return records, numbers, nxt, ann_end


def _kp_width(parts: list[dict[str, Any]]) -> int | None:
    """The 3K of the first part's keypoints, which every later piece must have (None: no keypoints read)."""
    return parts[0]["keypoints"].shape[1] if parts and parts[0]["keypoints"] is not None else None


def _file_fault(
    exc: DetevalError, parts: list[dict[str, Any]], starts: list[int], offset: int, file: str
) -> DetevalError:
    """The fault ``exc`` of the piece whose records begin at annotation ``offset``, as the whole file's path
    names it: ids of two kinds across the pieces read so far first (:func:`_same_id_kinds` raises), else
    ``exc`` with its record numbered in the file."""
    ids = ("image_id", "category_id")
    failed = next((k for k in ids if exc.reason.startswith(f"{k} must be an integer")), None)
    _same_id_kinds(parts, starts, file, failed)
    rec = exc.record
    mm = ANN_RECORD.match(rec) if isinstance(rec, str) else None
    if mm:
        rec = f"annotations[{int(mm.group(1)) + offset}]"
    return type(exc)(exc.reason, file=exc.file, record=rec)


def _joined_with_head(
    head: GtHead, parts: list[dict[str, Any]], first_lo: int, file: str
) -> list[dict[str, Any]] | None:
    """The child's parts (``head``, which must end at byte ``first_lo``, where this process began) before
    ``parts``; None if the child failed or ids of two kinds meet (the whole file then names the fault)."""
    got = head[1]()
    if got is None or got[1] != first_lo:
        return None
    joined = got[0] + parts
    lengths = [len(part["ann_id"]) for part in joined]
    try:
        _same_id_kinds(joined, [sum(lengths[:k]) for k in range(len(joined))], file)
    except DetevalError:
        return None
    return joined


def _ann_piece(text: bytes, file: str, typed: bool, boxes: _Boxes = None) -> Any:
    """The annotation records of one piece of a large ground truth: decoded by type when ``typed`` (an
    evaluation that reads no segmentation) and :func:`deteval.io.coco.typed.gt_annotations` vouches for the
    text, else :func:`loads_piece`. ``boxes`` (a bbox evaluation: whether ``iscrowd`` is optional): first
    its columns straight from the text (:class:`_BoxPiece`) where :func:`~deteval.io.coco.typed.gt_box_columns`
    vouches for them."""
    if boxes is not None:
        columns = gt_box_columns(text, boxes)
        if columns is not None:
            return _BoxPiece(columns)
    records = gt_annotations(text) if typed else None
    return loads_piece(text, file) if records is None else records


#: ``_ann_piece``'s ``boxes``: None, or a bbox evaluation's ``crowd_optional``
_Boxes = bool | None


class _BoxPiece:
    """A piece of annotations read straight to the columns a bbox evaluation uses, in place of its records
    (:func:`_piece_columns` hands them on; ``len`` is the records')."""

    def __init__(self, columns: dict[str, Any]) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns["ann_id"])


def _gt_piece_bytes(boxes: _Boxes) -> int:
    """The size of a large ground truth's annotation pieces: :func:`bbox_piece_bytes` for bbox (``boxes``),
    else ``coco_pieces.CHUNK_BYTES``."""
    return coco_pieces.CHUNK_BYTES if boxes is None else bbox_piece_bytes()


def _decoding(keep_segmentation: bool, need_keypoints: bool, crowd_optional: bool) -> tuple[bool, _Boxes]:
    """Whether the annotation pieces are decoded by type (no segmentation read; keypoints only if
    ``KEYPOINT_GT_TYPED``), and ``_ann_piece``'s ``boxes``: ``crowd_optional`` for bbox (typed, no keypoints)."""
    typed = not keep_segmentation and (KEYPOINT_GT_TYPED or not need_keypoints) and typed_decoding()
    return typed, (crowd_optional if typed and not need_keypoints else None)


def _piece_columns(records: Any, file: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`ann_columns` of a piece's records (a :class:`_BoxPiece`: its columns)."""
    if isinstance(records, _BoxPiece):
        return records.columns
    return ann_columns(records, file, *args, **kwargs)
