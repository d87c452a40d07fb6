"""The masks of results checked against their images and converted as loadRes' ``annToRLE`` converts them."""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.errors import InputFormatError
from deteval.io.coco.masks import check_rle_size, check_segmentation, mask_areas, plain_rle_sizes, to_rle
from deteval.io.coco.tables import CocoGroundTruth
from deteval.io.rle import check_rles


def _image_hw(gt: CocoGroundTruth, img: int, file: str, record: Any) -> tuple[int, int]:
    h, w = (int(v) for v in gt.image_hw[img])
    if h < 0 or w < 0:
        raise InputFormatError(
            f"image {gt.image_ids[img]!r} has no height/width (needed for polygons)", file=file, record=record
        )
    return h, w


def checked_rles(
    segmentation: list, img: np.ndarray, gt: CocoGroundTruth, file: str
) -> tuple[list, np.ndarray]:
    """Every mask validated and converted as loadRes' ``annToRLE`` would, and its ``area`` (read from the
    runs decoded in the validation for compressed RLEs; from pycocotools for the converted ones)."""
    # every entry a compressed RLE dict (string ``counts``, ``size`` two ints) of its image's size: what
    # check_segmentation and check_rle_size accept, checked in a few C-level passes; else only "not sure": the
    # record-by-record checks run and name the bad record
    hw = plain_rle_sizes(segmentation)
    plain = hw is not None and bool((hw == gt.image_hw[img]).all())
    if not plain:
        for i, s in enumerate(segmentation):
            if s is None:
                raise InputFormatError("missing field 'segmentation'", file=file, record=i)
            check_segmentation(s, file, i)
            check_rle_size(s, gt.image_hw[int(img[i])], file, i)
    pixels = hw[:, 0] * hw[:, 1] if plain and hw is not None else None  # (each mask's image's size)
    area = check_rles(segmentation, file, range(len(segmentation)), pixels=pixels)
    if plain:  # compressed RLEs, used as they are
        return list(segmentation), area
    out = [
        s
        if isinstance(s, dict) and not isinstance(s.get("counts"), list)
        else to_rle(s, *_image_hw(gt, int(img[i]), file, i), file, i)
        for i, s in enumerate(segmentation)
    ]
    converted = np.flatnonzero(np.isnan(area))
    if converted.size:
        area[converted] = mask_areas([out[i] for i in converted.tolist()], file)
    return out, area


def check_given_segmentations(segmentation: list, img: np.ndarray, gt: CocoGroundTruth, file: str) -> None:
    """Check the segmentations results carry (None: absent) at load, so that a bad one can be skipped."""
    given = [i for i, s in enumerate(segmentation) if s is not None]
    for i in given:
        check_segmentation(segmentation[i], file, i)
        check_rle_size(segmentation[i], gt.image_hw[int(img[i])], file, i)
    check_rles([segmentation[i] for i in given], file, given)
