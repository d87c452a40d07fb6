"""The columnar COCO tables every loader returns: :class:`CocoGroundTruth` and :class:`CocoResults` (its
``bbox`` column computed from the masks when first read), and results put together from parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

import numpy as np

from deteval.errors import ValidationError
from deteval.io.coco.keypoints import stack_keypoints
from deteval.io.coco.masks import mask_boxes


@dataclass
class CocoGroundTruth:
    """Columnar COCO ground truth. Images and categories are sorted by id (pycocotools' order).

    Annotation arrays (length N, in file order): ``ann_id``, ``img`` (index into ``image_ids``), ``cat``
    (index into ``cat_ids``), ``bbox`` (N×4 xywh), ``area``, ``iscrowd``, ``ignore`` (the user's ``ignore``
    flag, False when absent), ``num_keypoints`` (-1 when absent), ``keypoints`` (N×3K or None),
    ``segmentation`` (the raw objects, kept only when asked for).
    """

    image_ids: np.ndarray
    image_hw: np.ndarray
    cat_ids: np.ndarray
    cat_names: list[str]
    ann_id: np.ndarray
    img: np.ndarray
    cat: np.ndarray
    bbox: np.ndarray
    area: np.ndarray
    iscrowd: np.ndarray
    ignore: np.ndarray
    num_keypoints: np.ndarray
    keypoints: np.ndarray | None = None
    segmentation: list | None = None
    source: str = "<in-memory ground truth>"
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    #: the file's ``images`` and ``categories`` lists as read (file order), for protocols that need more
    #: fields than COCO's (LVIS: ``neg_category_ids``, ``not_exhaustive_category_ids``, ``frequency``)
    image_records: list | None = None
    category_records: list | None = None
    #: the file's ``images`` list as indices into ``image_ids`` (tidecv walks images in file order)
    image_file_order: np.ndarray | None = None
    #: a subset of the file's annotations (an image shard's): each one's index in the file's ``annotations``,
    #: which errors name; None: all of them, in file order
    file_rows: np.ndarray | None = None
    #: oriented boxes (the COCO-style OBB protocol, :mod:`deteval.io.coco_obb`): N×9 rows of four corners and
    #: the area the IoU's union uses (:mod:`deteval.match.rotated`); None otherwise
    obb: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.ann_id.shape[0])


class MaskBoxes:
    """``toBbox`` of validated, converted RLEs, computed when first needed (:class:`BoxColumn`)."""

    def __init__(self, rles: list, file: str) -> None:
        self.rles, self.file = rles, file

    def compute(self) -> np.ndarray:
        return mask_boxes(self.rles, self.file)


class BoxColumn:
    """The ``bbox`` field of :class:`CocoResults`: an N×4 array, or a :class:`MaskBoxes` that is computed (once)
    when the field is first read. loadRes gives every segm result without a ``bbox`` its mask's box, which
    segm evaluation never reads (``toBbox`` of every mask); only what reads the field pays for it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> np.ndarray:
        if obj is None:
            raise AttributeError(self.slot)  # (a dataclass field without a default)
        value = obj.__dict__[self.slot]
        if isinstance(value, MaskBoxes):
            value = obj.__dict__[self.slot] = value.compute()
        return value

    def __set__(self, obj: Any, value: np.ndarray | MaskBoxes) -> None:
        obj.__dict__[self.slot] = value


def stored_boxes(r: CocoResults) -> np.ndarray | MaskBoxes:
    """``r.bbox`` as stored: a :class:`MaskBoxes` not yet computed stays so."""
    value: np.ndarray | MaskBoxes = r.__dict__["_bbox"]
    return value


def concat_boxes(parts: Sequence[CocoResults]) -> np.ndarray | MaskBoxes:
    """The ``bbox`` columns of ``parts`` one after the other; still to be computed if all of them are."""
    stored = [stored_boxes(p) for p in parts]
    if stored and all(isinstance(b, MaskBoxes) for b in stored):
        lazy = [b for b in stored if isinstance(b, MaskBoxes)]
        return MaskBoxes(list(chain.from_iterable(b.rles for b in lazy)), lazy[0].file)
    return np.concatenate([p.bbox for p in parts])


@dataclass
class CocoResults:
    """Columnar COCO results (length N, in input order; ``det_id`` = 1..N as loadRes assigns).

    ``kind``: the loadRes branch (``"bbox"``, ``"segm"``, ``"keypoints"``) or ``"loaded"`` (read from a
    pycocotools ``COCO``). ``bbox`` is NaN where segm/keypoints evaluation, which never reads it, got no box;
    segm results without boxes get their masks' boxes, computed when ``bbox`` is first read (:class:`BoxColumn`).
    A copy with other values is :meth:`replace`, which leaves them so: ``dataclasses.replace`` reads every field
    it is not given, ``bbox`` too, and so computes them.
    """

    img: np.ndarray
    cat: np.ndarray
    score: np.ndarray
    bbox: BoxColumn = BoxColumn()
    area: np.ndarray  # type: ignore[misc]  # (bbox has no default: BoxColumn raises on class access)
    keypoints: np.ndarray | None = None
    segmentation: list | None = None
    kind: str = "bbox"
    source: str = "<in-memory results>"
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    #: segm branch: every mask as a pycocotools RLE, validated and converted at load (the matcher reads these
    #: instead of validating ``segmentation`` again); also the bbox branch's compressed RLEs when read by the
    #: fast readers (:mod:`~deteval.io.coco.segm_tail`, validated there); None otherwise
    rles: list | None = None
    #: segm masks validated but not made into dicts (their places in ``segmentation`` and ``rles`` hold None):
    #: a :class:`~deteval.io.coco.segm_tail.PendingMasks` whose texts the matcher reads them from; set by
    #: :func:`~deteval.detection.coco.evaluate_coco` on results it read itself
    lazy_masks: Any = None
    #: oriented boxes, as :attr:`CocoGroundTruth.obb`
    obb: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.score.shape[0])

    def replace(self, **changes: Any) -> CocoResults:
        """``dataclasses.replace(self, **changes)``, the masks' boxes still to be computed if they are (the
        stored ``bbox`` is passed on unless ``changes`` has one)."""
        changes.setdefault("bbox", stored_boxes(self))
        return replace(self, **changes)


def is_coco_object(obj: Any) -> bool:
    """Whether ``obj`` is a pycocotools ``COCO``; one whose index (``anns``, ``imgs``, ``cats``) no longer
    counts what its ``dataset`` holds (appended to without ``createIndex()``) is refused: pycocotools would
    evaluate the index, deteval reads ``dataset``, and the two would differ."""
    if not (hasattr(obj, "dataset") and hasattr(obj, "createIndex") and isinstance(obj.dataset, dict)):
        return False
    for index, key in (("anns", "annotations"), ("imgs", "images"), ("cats", "categories")):
        held, listed = getattr(obj, index, None), obj.dataset.get(key)
        if isinstance(held, dict) and isinstance(listed, list) and len(held) != len(listed):
            raise ValidationError(
                f"the COCO object's index holds {len(held)} {key} but its dataset {len(listed)}: call "
                "createIndex() after changing dataset (pycocotools evaluates the index)",
                file="<pycocotools COCO>",
            )
    return True


def concat_results(parts: Sequence[CocoResults], source: str | None = None) -> CocoResults:
    """Results read one after the other (pieces of one file, or several files), as one.

    The columns of the non-empty parts in order (an empty part's keypoint matrix may have no width); the
    ``bbox`` columns still to be computed if every such part's are (:func:`concat_boxes`); ``rles`` only if
    every such part has them; the warnings and skipped counts of all parts. ``source``: the result's source
    (default: the parts' sources joined by ", "). The other fields (``kind``) are the first non-empty part's.
    """
    if not parts:
        raise ValueError("no results to put together")
    full = [p for p in parts if len(p)] or [parts[0]]
    first = full[0]
    return replace(
        first,
        img=np.concatenate([p.img for p in full]),
        cat=np.concatenate([p.cat for p in full]),
        score=np.concatenate([p.score for p in full]),
        bbox=concat_boxes(full),
        area=np.concatenate([p.area for p in full]),
        keypoints=None
        if first.keypoints is None
        else stack_keypoints([p.keypoints for p in full if p.keypoints is not None]),
        obb=None if first.obb is None else np.concatenate([p.obb for p in full if p.obb is not None]),
        segmentation=None
        if first.segmentation is None
        else [s for p in full for s in (p.segmentation or [])],
        rles=None if any(p.rles is None for p in full) else [x for p in full for x in (p.rles or [])],
        source=", ".join(p.source for p in parts) if source is None else source,
        warnings=[w for p in parts for w in p.warnings],
        skipped=sum(p.skipped for p in parts),
    )


#: (image ids, category ids, scores, N×4 boxes) of one piece, validated but not yet mapped to the ground truth
RawColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
