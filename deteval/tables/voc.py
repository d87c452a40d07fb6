"""Pascal VOC tables: ground-truth boxes and detections as columns, and the checks every path to the matcher
shares.

* :class:`VOCGroundTruth`: image index, class index, box ``x1, y1, x2, y2`` (the file's pixel convention,
  1-based inclusive in VOC), ``difficult``; plus the image and class names the indices refer to.
* :class:`VOCDetections`: image index, class index, box, score. Row order is the tie order: for equal
  scores the devkit's stable sort keeps file order, so keep rows in file order.

The loaders in :mod:`deteval.io.voc` return these tables; a training loop can build them directly
(``VOCGroundTruth.from_arrays`` / ``VOCDetections.from_arrays``). Every check refuses what would be scored
wrongly if read as numbers: strings and booleans, non-finite or inverted boxes, coordinates beyond ±2**53
(:data:`~deteval.tables.arrays.MAX_COORD`), indices outside their names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from deteval.errors import ValidationError, first_true
from deteval.tables.arrays import as_boxes, numeric_array, rows_beyond_exact

__all__ = [
    "VOCDetections",
    "VOCGroundTruth",
    "check_boxes",
    "difficult_flags",
    "float_column",
    "index_column",
]


def float_column(values: ArrayLike, what: str, *, bools: bool = False) -> np.ndarray:
    """A float64 array; strings (and booleans unless ``bools``) are refused, not read as numbers."""
    try:
        return numeric_array(values, np.float64, bools=bools)
    except TypeError as exc:
        raise ValidationError(f"{what} {exc}") from None


def difficult_flags(values: ArrayLike) -> np.ndarray:
    """Difficult flags as booleans: 0/1 or true/false only (``astype(bool)`` would read 2, 0.5 and the string
    "0" as difficult)."""
    flags = float_column(values, "difficult", bools=True).reshape(-1)
    if (i := first_true(~np.isin(flags, (0.0, 1.0)))) >= 0:
        raise ValidationError(f"difficult must be 0/1 or true/false, got {flags[i].item():g}", record=i)
    return flags != 0


def index_column(values: ArrayLike, n: int, what: str) -> np.ndarray:
    """``values`` as a 1-D int64 array of length ``n``; fractional numbers, strings and booleans are refused
    (``what`` names the column in the message)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf":  # (a string or boolean index would be read as a number)
        float_column(values, what)
        arr = arr.astype(np.float64)
    if arr.size == 0:
        arr = arr.reshape(0)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValidationError(f"{what} must be 1-D of length {n}, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        as_int = arr.astype(np.int64)
        if not np.array_equal(as_int, arr):
            raise ValidationError(f"{what} must hold integer indices")
        arr = as_int
    return arr.astype(np.int64, copy=False)


def _given_row(given: ArrayLike, i: int) -> list[Any]:
    """Row ``i`` of the boxes as the caller gave them (an integer beyond 2**53 not yet rounded)."""
    if isinstance(given, (list, tuple)):
        return list(given[i])
    return list(np.asarray(given)[i].tolist())


def check_boxes(boxes: np.ndarray, what: str, given: ArrayLike) -> None:
    """Finite, within ±2**53 as given (``given``: the input ``boxes`` was read from), x2 >= x1, y2 >= y1."""
    if (i := first_true(~np.isfinite(boxes).all(axis=1))) >= 0:
        raise ValidationError(f"{what} box {boxes[i].tolist()} has a non-finite coordinate", record=i)
    big = rows_beyond_exact(boxes, lambda i: _given_row(given, i))
    if big.size:
        i = int(big[0])
        raise ValidationError(f"{what} box {_given_row(given, i)} has a coordinate beyond ±2**53", record=i)
    if (i := first_true((boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1]))) >= 0:
        raise ValidationError(f"{what} box {boxes[i].tolist()} has x2 < x1 or y2 < y1", record=i)


def _check_index(idx: np.ndarray, n: int, what: str) -> None:
    if (i := first_true((idx < 0) | (idx >= n))) >= 0:
        raise ValidationError(f"{what} index {int(idx[i])} is outside 0..{n - 1}", record=i)


@dataclass(frozen=True)
class VOCGroundTruth:
    """Ground-truth boxes as columns. ``image[i]`` indexes ``images``, ``label[i]`` indexes ``classes``.

    ``meta`` holds optional per-object columns (``truncated``, ``occluded``: int8 with -1 for missing;
    ``pose``: str array) and ``image_meta`` per-image ones (``width``, ``height``, ``depth``, ``filename``,
    ``source``): kept for reports, not used by the metric. ``skipped`` lists the bad objects the loader
    left out under ``on_error="skip"`` (``"<file>: object N (name): reason"``).
    """

    images: tuple[str, ...]
    classes: tuple[str, ...]
    image: np.ndarray
    label: np.ndarray
    boxes: np.ndarray
    difficult: np.ndarray
    meta: dict[str, np.ndarray] = field(default_factory=dict)
    image_meta: dict[str, np.ndarray] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.image.shape[0])

    @classmethod
    def from_arrays(
        cls,
        image: ArrayLike,
        label: ArrayLike,
        boxes: ArrayLike,
        difficult: ArrayLike | None = None,
        *,
        images: Sequence[str] | int | None = None,
        classes: Sequence[str] | int | None = None,
    ) -> VOCGroundTruth:
        """Validate and wrap columns. ``images`` / ``classes`` are the names (or counts, named "0", "1",
        ...); by default, as many as the largest index + 1. Boxes are ``xyxy`` with x2 >= x1, y2 >= y1."""
        b, img, lab, img_names, cls_names = _indexed_boxes(
            image, label, boxes, images, classes, "ground-truth"
        )
        n = b.shape[0]
        diff = np.zeros(n, dtype=bool) if difficult is None else difficult_flags(difficult)
        if diff.shape[0] != n:
            raise ValidationError(f"difficult must have length {n}, got {diff.shape[0]}")
        return cls(img_names, cls_names, img, lab, b, diff)


@dataclass(frozen=True)
class VOCDetections:
    """Detections as columns, in file order (the tie order). ``image`` indexes ``images``, ``label``
    indexes ``classes``; ``warnings`` carries what the loader tolerated (e.g. unknown image ids dropped),
    ``skipped`` the bad records left out under ``on_error="skip"`` (``"<file>: line N: reason"``) and
    ``dropped_unknown_images`` how many detections named an image outside the image set."""

    images: tuple[str, ...]
    classes: tuple[str, ...]
    image: np.ndarray
    label: np.ndarray
    boxes: np.ndarray
    scores: np.ndarray
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    dropped_unknown_images: int = 0

    def __len__(self) -> int:
        return int(self.image.shape[0])

    @classmethod
    def from_arrays(
        cls,
        image: ArrayLike,
        label: ArrayLike,
        boxes: ArrayLike,
        scores: ArrayLike,
        *,
        images: Sequence[str] | int | None = None,
        classes: Sequence[str] | int | None = None,
    ) -> VOCDetections:
        """Validate and wrap columns (finite scores and boxes, x2 >= x1, y2 >= y1, indices in range)."""
        b, img, lab, img_names, cls_names = _indexed_boxes(image, label, boxes, images, classes, "detection")
        n = b.shape[0]
        sc = float_column(scores, "scores").reshape(-1)
        if sc.shape[0] != n:
            raise ValidationError(f"scores must have length {n}, got {sc.shape[0]}")
        if (i := first_true(~np.isfinite(sc))) >= 0:
            raise ValidationError(f"detection score {sc[i]!r} is not finite", record=i)
        return cls(img_names, cls_names, img, lab, b, sc)


def _indexed_boxes(
    image: ArrayLike,
    label: ArrayLike,
    boxes: ArrayLike,
    images: Sequence[str] | int | None,
    classes: Sequence[str] | int | None,
    what: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...], tuple[str, ...]]:
    """The validation both tables share: N×4 boxes, integer image and label columns in range of their
    names, finite boxes with x2 >= x1 and y2 >= y1."""
    b = as_boxes(boxes, f"{what} boxes")
    n = b.shape[0]
    img = index_column(image, n, f"{what} image")
    lab = index_column(label, n, f"{what} label")
    img_names = _names(images, img)
    cls_names = _names(classes, lab)
    _check_index(img, len(img_names), f"{what} image")
    _check_index(lab, len(cls_names), f"{what} label")
    check_boxes(b, what, boxes)
    return b, img, lab, img_names, cls_names


def _names(names: Sequence[str] | int | None, idx: np.ndarray) -> tuple[str, ...]:
    if names is None:
        names = int(idx.max()) + 1 if idx.size else 0
    if isinstance(names, (int, np.integer)):
        return tuple(str(i) for i in range(int(names)))
    out = tuple(str(s) for s in names)
    if len(set(out)) != len(out):
        raise ValidationError("names must be unique")
    return out
