"""segm and keypoints against pycocotools on seeded random cases: every array, bit for bit."""

import pytest
from _coco_cases import assert_same_as_reference, random_keypoints_case, random_segm_case, run_pycocotools

from deteval.detection.coco import evaluate_coco


def _check(case, iou_type, seed):
    ref = run_pycocotools(case["gt"], case["dt"], iou_type)
    assert_same_as_reference(evaluate_coco(case["gt"], case["dt"], iou_type=iou_type), ref, f"seed {seed}")


@pytest.mark.fast_cases(block=1)
@pytest.mark.parametrize("block", range(3))
def test_random_segm_cases(block):
    for seed in range(block * 20, block * 20 + 20):
        _check(random_segm_case(seed), "segm", seed)


@pytest.mark.fast_cases(block=1)
@pytest.mark.parametrize("block", range(3))
def test_random_keypoints_cases(block):
    for seed in range(block * 30, block * 30 + 30):
        _check(random_keypoints_case(seed), "keypoints", seed)
