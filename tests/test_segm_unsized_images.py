"""segm evaluation of masks (polygons or RLEs, ground truth or results) in an image without ``height`` and
``width``: pycocotools' ``annToRLE`` reads them for every mask it evaluates and fails (``KeyError: 'height'``);
deteval refuses the first such record clearly (an RLE there was checked only against its own size, and one
of another size than the image's other masks silently never matched). bbox evaluation, which converts no
mask, and images left out of the evaluation are read as pycocotools reads them."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from _coco_cases import run_pycocotools
from pycocotools import mask as mask_utils

from deteval.detection.coco import evaluate_coco
from deteval.errors import InputFormatError


def _rle(h: int, w: int, y: int, x: int) -> dict[str, Any]:
    m = np.zeros((h, w), dtype=np.uint8, order="F")
    m[y : y + 20, x : x + 30] = 1
    r = mask_utils.encode(m)
    return {"size": [h, w], "counts": r["counts"].decode("ascii")}


def _case(gt_in_unsized: bool) -> tuple[dict, list]:
    images = [{"id": 1, "height": 60, "width": 80}, {"id": 2, "height": 60, "width": 80}, {"id": 3}]
    anns = []
    for k, img in enumerate((1, 2, 3, 1)):
        if img == 3 and not gt_in_unsized:
            continue
        seg = _rle(60, 80, 5 + k, 10 + k) if k % 2 else [[10.0, 5.0, 40.0, 5.0, 40.0, 25.0, 10.0, 25.0]]
        anns.append(
            {"id": k + 1, "image_id": img, "category_id": 1, "segmentation": seg, "area": 600.0,
             "bbox": [10.0 + k, 5.0 + k, 30.0, 20.0], "iscrowd": 0}
        )  # fmt: skip
    dts = [
        {"image_id": img, "category_id": 1, "segmentation": _rle(h, 80, 6, 11), "score": s}
        for img, h, s in ((1, 60, 0.9), (2, 60, 0.8), (3, 70, 0.7), (1, 60, 0.6))
    ]
    gt = {"images": images, "categories": [{"id": 1, "name": "a"}], "annotations": anns}
    return gt, dts


@pytest.mark.parametrize("gt_in_unsized", [True, False])
def test_a_mask_of_an_image_without_a_size_is_refused_where_pycocotools_fails(gt_in_unsized: bool) -> None:
    gt, dts = _case(gt_in_unsized)
    with pytest.raises(KeyError, match="height"):
        run_pycocotools(copy.deepcopy(gt), copy.deepcopy(dts), "segm")
    with pytest.raises(InputFormatError) as exc:
        evaluate_coco(copy.deepcopy(gt), copy.deepcopy(dts), iou_type="segm")
    assert "image 3 has no height/width, which pycocotools reads for every mask" in exc.value.reason
    # the first record there: the ground truth's (pycocotools converts it first), else the result's
    assert exc.value.record == ("annotations[2]" if gt_in_unsized else 2)
    assert exc.value.file == ("<in-memory ground truth>" if gt_in_unsized else "<in-memory results>")


def test_bbox_evaluation_and_images_left_out_read_as_pycocotools() -> None:
    gt, dts = _case(True)
    bbox_ref = run_pycocotools(copy.deepcopy(gt), copy.deepcopy(dts), "bbox")
    bbox = evaluate_coco(copy.deepcopy(gt), copy.deepcopy(dts), iou_type="bbox")
    assert np.array_equal(bbox.stats, bbox_ref[0])
    params = {"img_ids": [1, 2]}
    segm_ref = run_pycocotools(copy.deepcopy(gt), copy.deepcopy(dts), "segm", params)
    segm = evaluate_coco(copy.deepcopy(gt), copy.deepcopy(dts), iou_type="segm", params=params)
    assert np.array_equal(segm.stats, segm_ref[0]) and segm.stats[0] > 0
