"""A bad mask met in image-sharded segm matching is named as one process names it: the file and the record's
index in it. Ground-truth masks are converted when matching needs them, so a shard's ground truth keeps each
annotation's index in the file (``CocoGroundTruth.file_rows``); a shard used to name its own position
(``annotations[2]`` for the file's ``annotations[6]``). A result's mask is validated while the results are
read (loadRes converts every one), so a bad one is refused before any matching, sharded or not."""

from __future__ import annotations

import copy
import json

import pytest
from _coco_cases import random_segm_case

from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.run.coco import evaluate_coco_sharded

_GT_FAULTS = {
    "odd polygon": [[1, 2, 3, 4, 5]],
    "text in a polygon": [[1, 2, "3", 4, 5, 6]],
    "RLE of another size": {"size": [80, 100], "counts": [5, 3]},
    "corrupt compressed RLE": {"size": [80, 100], "counts": "0"},
}
_DT_FAULTS = {
    "RLE string ends inside a value": {"size": [80, 100], "counts": "PP"},
    "character outside 0..o": {"size": [80, 100], "counts": "1~2"},
    "RLE of another size": {"size": [10, 10], "counts": "4"},
    "RLE runs short of the image": {"size": [80, 100], "counts": "0`0"},
    "short polygon": [[1, 2, 3, 4]],
    "polygon far outside": [[0, 0, 1e9, 0, 0, 1e9]],
}


def _case() -> tuple[dict, int]:
    """A segm case with ground truth in two or more images and an annotation of a later image whose image
    and category have detections (so its mask is converted), which is not the first annotation of the file;
    and that annotation's index."""
    for seed in range(200):
        case = random_segm_case(seed)
        anns = case["gt"]["annotations"]
        dets = {(d["image_id"], d["category_id"]) for d in case["dt"]}
        first_img = min(a["image_id"] for a in anns) if anns else None
        late = [
            i
            for i, a in enumerate(anns)
            if a["image_id"] != first_img and (a["image_id"], a["category_id"]) in dets and not a["iscrowd"]
        ]
        if late and len({a["image_id"] for a in anns}) >= 2 and late[-1] > 1:
            return case, late[-1]
    raise AssertionError("no suitable case")


def _errors(tmp_path, gt: dict, dt: list) -> list[str]:
    g, d = tmp_path / "gt.json", tmp_path / "dt.json"
    g.write_text(json.dumps(gt))
    d.write_text(json.dumps(dt))
    out = []
    runs = [lambda: evaluate_coco(g, d, iou_type="segm")]
    for shards in (2, 3):
        for range_bytes in (300, 1 << 20):
            runs.append(
                lambda s=shards, b=range_bytes: evaluate_coco_sharded(
                    g, d, shards=s, iou_type="segm", range_bytes=b
                )
            )
    for run in runs:
        with pytest.raises(DetevalError) as err:
            run()
        out.append(str(err.value))
    return out


@pytest.mark.parametrize("fault", list(_GT_FAULTS))
def test_ground_truth_mask_named_by_its_index_in_the_file(tmp_path, fault):
    case, target = _case()
    gt = copy.deepcopy(case["gt"])
    gt["annotations"][target]["segmentation"] = _GT_FAULTS[fault]
    one, *sharded = _errors(tmp_path, gt, case["dt"])
    assert f"annotations[{target}]" in one
    assert sharded == [one] * len(sharded)


@pytest.mark.parametrize("fault", list(_DT_FAULTS))
def test_result_mask_refused_while_reading(tmp_path, fault):
    case, _ = _case()
    dt = copy.deepcopy(case["dt"])
    k = len(dt) - 1
    dt[k]["segmentation"] = _DT_FAULTS[fault]
    one, *sharded = _errors(tmp_path, case["gt"], dt)
    assert f": record {k}: " in one
    assert sharded == [one] * len(sharded)
    g = load_coco_gt(case["gt"], keep_segmentation=True)
    with pytest.raises(DetevalError) as err:  # (the same error, from reading alone: no matching involved)
        load_coco_results(str(tmp_path / "dt.json"), g, iou_type="segm")
    assert str(err.value) == one
