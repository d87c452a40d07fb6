"""COCO ground truth (a path, a parsed dict or a pycocotools ``COCO``) → a columnar
:class:`~deteval.io.coco.tables.CocoGroundTruth`, checked as pycocotools reads it."""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import DetevalError, InputFormatError, ValidationError, first_true
from deteval.io.coco.annotations import ANN_RECORD, ann_columns
from deteval.io.coco.fields import MAX_COORD, field_values, finite_floats, id_array, index_of, unique_ids
from deteval.io.coco.gt_pieces import GtHead, gt_in_pieces
from deteval.io.coco.json_text import (
    exact_on_doubt,
    file_without_booleans,
    of_file_text,
    read_json,
    read_json_exact,
    wide_integers,
)
from deteval.io.coco.masks import MAX_MASK_PIXELS
from deteval.io.coco.tables import CocoGroundTruth, is_coco_object
from deteval.io.skipping import check_on_error as _check_on_error
from deteval.io.skipping import load_skipping


def _image_size(images: list, key: str, file: str) -> np.ndarray:
    """Image heights or widths (needed to rasterise polygons): whole numbers >= 0, -1 when absent."""
    arr = finite_floats(field_values(images, key, file, "images", default=-1), key, file, "images")
    if (i := first_true((arr != np.round(arr)) | (arr < -1) | (arr > MAX_COORD))) >= 0:
        raise ValidationError(
            f"{key} must be a whole number of pixels, got {arr[i]!r}", file=file, record=f"images[{i}]"
        )
    return arr.astype(np.int64)


def load_coco_gt(
    source: Any,
    *,
    keep_segmentation: bool = False,
    need_keypoints: bool = False,
    on_error: str = "raise",
    crowd_optional: bool = False,
) -> CocoGroundTruth:
    """Load COCO ground truth (path, parsed dict or pycocotools ``COCO``) into a :class:`CocoGroundTruth`.

    Required per annotation: ``id``, ``image_id``, ``category_id``, ``bbox``, ``area``, ``iscrowd`` (pycocotools
    reads all of them; ``crowd_optional=True`` reads a missing ``iscrowd`` as 0, as LVIS files have none);
    ``segmentation`` for segm, ``keypoints`` and ``num_keypoints`` for keypoints. A large
    file's ``annotations`` array is parsed in pieces (bounded memory), with the same result.

    ``on_error="skip"``: a bad annotation is left out (listed in ``warnings``, counted in ``skipped``), the
    rest loaded exactly as the file without it; bad images or categories, duplicate ids still raise.
    """
    _check_on_error(on_error)
    if isinstance(source, CocoGroundTruth):
        return source
    try:
        return _load_gt(source, keep_segmentation, need_keypoints, crowd_optional=crowd_optional)
    except DetevalError as exc:
        if on_error == "raise" or not (isinstance(exc.record, str) and ANN_RECORD.match(exc.record)):
            raise
    if is_coco_object(source):
        data, file = source.dataset, "<pycocotools COCO ground truth>"
    elif isinstance(source, (str, PathLike)):
        data, file = read_json_exact(Path(source)), str(source)
    else:
        data, file = source, "<in-memory ground truth>"
    anns = data["annotations"]

    def load(idx: np.ndarray) -> CocoGroundTruth:
        sub = {**data, "annotations": [anns[i] for i in idx.tolist()]}
        return _load_gt(sub, keep_segmentation, need_keypoints, file=file, crowd_optional=crowd_optional)

    def local(exc: DetevalError) -> int | None:
        m = ANN_RECORD.match(exc.record) if isinstance(exc.record, str) else None
        return int(m.group(1)) if m else None

    g, bad, _ = load_skipping(len(anns), load, local, lambda i: f"annotations[{i}]")
    g.skipped = len(bad)
    g.warnings = [f"skipped bad record: {exc}" for exc in bad.values()] + g.warnings
    return g


def load_gt_with_head(path: str | PathLike[str], head: GtHead) -> CocoGroundTruth:
    """:func:`load_coco_gt` of a bbox ground-truth file (``on_error="raise"``) whose first annotation pieces
    a forked child reads (``head``, see :func:`gt_in_pieces`); the same table, errors and messages."""
    return _load_gt(path, False, False, head=head)


def _load_gt(
    source: Any,
    keep_segmentation: bool,
    need_keypoints: bool,
    file: str | None = None,
    crowd_optional: bool = False,
    head: GtHead | None = None,
) -> CocoGroundTruth:
    """:func:`_gt_table`, a file read again exactly where it may hold an integer beyond 64 bits
    (:func:`exact_on_doubt`: an error, or an area of 2**63 or more)."""
    args = (keep_segmentation, need_keypoints)
    if not isinstance(source, (str, PathLike)):
        return _gt_table(source, *args, file, crowd_optional, head)
    path = Path(source)
    return exact_on_doubt(
        lambda: _gt_table(source, *args, file, crowd_optional, head),
        lambda g: g.area,
        lambda: of_file_text(path, wide_integers),
        lambda: _gt_table(read_json_exact(path), *args, str(source), crowd_optional),
    )


def _gt_table(
    source: Any,
    keep_segmentation: bool,
    need_keypoints: bool,
    file: str | None = None,
    crowd_optional: bool = False,
    head: GtHead | None = None,
) -> CocoGroundTruth:
    """The ground-truth table of ``source``: a large file's annotations read as columns in pieces
    (:func:`~deteval.io.coco.gt_pieces.gt_in_pieces`), else from the parsed document, keypoints as one matrix
    where its text holds no ``true``/``false``."""
    cols = None
    plain = False
    if is_coco_object(source):
        data, file = source.dataset, "<pycocotools COCO ground truth>"
    elif isinstance(source, (str, PathLike)):
        file = str(source)
        pieces = None
        if head is not None:
            pieces = gt_in_pieces(Path(source), keep_segmentation, need_keypoints, crowd_optional, head)
        if pieces is None:
            pieces = gt_in_pieces(Path(source), keep_segmentation, need_keypoints, crowd_optional)
        if pieces is not None:
            data, cols = pieces
        else:
            data = read_json(source)
            plain = need_keypoints and file_without_booleans(Path(source))
    elif isinstance(source, dict):
        data, file = source, file or "<in-memory ground truth>"
    else:
        raise InputFormatError(
            f"ground truth must be a path, a dict or a pycocotools COCO, not {type(source).__name__}"
        )
    if not isinstance(data, dict):
        raise InputFormatError(
            "ground truth JSON must be an object with images, categories, annotations", file=file
        )
    for key in ("images", "categories"):
        if not isinstance(data.get(key), list):
            raise InputFormatError(f"missing or invalid {key!r} list", file=file)
    if cols is None:
        anns = data.get("annotations", [])
        if not isinstance(anns, list):
            raise InputFormatError("'annotations' must be a list", file=file)
        cols = ann_columns(
            anns, file, keep_segmentation, need_keypoints, crowd_optional=crowd_optional, plain=plain
        )
    return gt_from_columns(data, cols, file, keep_segmentation)


def gt_from_columns(
    data: dict, cols: dict[str, Any], file: str, keep_segmentation: bool = False
) -> CocoGroundTruth:
    """The ground-truth table of a document's ``images`` and ``categories`` lists and its annotations read
    into columns (:func:`~deteval.io.coco.annotations.ann_columns`' dict, ids not yet mapped): the image and
    category ids checked and sorted, the annotation ids checked unique, each annotation's ids mapped."""
    images, cats = data["images"], data["categories"]

    img_ids_file = id_array(field_values(images, "id", file, "images"), "image id", file, "images")
    image_ids = unique_ids(img_ids_file, "image id", file, "images")
    order = np.argsort(img_ids_file, kind="stable")
    hw = _image_sizes(images, file, keep_segmentation)
    image_hw = hw[order]

    cat_ids_file = id_array(field_values(cats, "id", file, "categories"), "category id", file, "categories")
    cat_ids = unique_ids(cat_ids_file, "category id", file, "categories")
    names_file = [str(c.get("name", c["id"])) for c in cats]
    corder = np.argsort(cat_ids_file, kind="stable")
    cat_names = [names_file[i] for i in corder]

    where = "annotations"
    unique_ids(cols["ann_id"], "annotation id", file, where)
    img = index_of(cols["image_id"], image_ids, "image_id", file, where)
    cat = index_of(cols["category_id"], cat_ids, "category_id", file, where)
    return CocoGroundTruth(
        image_ids=image_ids,
        image_hw=image_hw,
        cat_ids=cat_ids,
        cat_names=cat_names,
        ann_id=cols["ann_id"],
        img=img,
        cat=cat,
        bbox=cols["bbox"],
        area=cols["area"],
        iscrowd=cols["iscrowd"],
        ignore=cols["ignore"],
        num_keypoints=cols["num_keypoints"],
        keypoints=cols["keypoints"],
        segmentation=cols["segmentation"],
        source=file,
        image_records=images,
        category_records=cats,
        image_file_order=np.argsort(order, kind="stable"),
    )


def _image_sizes(images: list, file: str, keep_segmentation: bool) -> np.ndarray:
    """Each image's ``[height, width]`` in file order (-1 where absent). Segm evaluation needs them (checked,
    below the 2**32 pixels pycocotools' masks hold); otherwise they are read only to flag boxes past the
    border (a likely xyxy/xywh mix-up), and sizes that fail the checks are taken as absent."""
    if not keep_segmentation:
        try:
            return np.stack([_image_size(images, k, file) for k in ("height", "width")], axis=1)
        except DetevalError:
            return np.full((len(images), 2), -1, dtype=np.int64)
    hw = np.stack([_image_size(images, k, file) for k in ("height", "width")], axis=1)
    big = hw[:, 0].astype(np.float64) * hw[:, 1] >= MAX_MASK_PIXELS  # (in floats: no int64 wrap)
    if (i := first_true(big)) >= 0:
        raise ValidationError(
            f"an image of {int(hw[i, 0])}x{int(hw[i, 1])} pixels is beyond the 2**32 pixels pycocotools' "
            "masks can hold (its sizes are 32-bit)",
            file=file,
            record=f"images[{i}]",
        )
    return hw
