"""evaluate_coco runs with the garbage collector paused (no collection walks its records) and gives the
caller's collector state back, also when it raises."""

import gc
import traceback

import pytest
from _coco_cases import random_segm_case

from deteval.collector import paused
from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError


def test_no_collection_during_an_evaluation_and_the_state_is_restored():
    case = random_segm_case(4)
    runs = []

    def count(phase, info):  # (collections inside the evaluation: one of its modules on the stack)
        if phase == "start" and any("deteval/io" in f.filename or "deteval/detection" in f.filename
                                    for f in traceback.extract_stack()):  # fmt: skip
            runs.append(info["generation"])

    gc.callbacks.append(count)
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            gc.set_threshold(1)  # (a collection at nearly every allocation, were it enabled)
            runs.clear()
            evaluate_coco(case["gt"], case["dt"] * 30, iou_type="segm")
            assert runs == [] and gc.isenabled() == enabled
            with pytest.raises(DetevalError):
                evaluate_coco(case["gt"], [{"image_id": 1}], iou_type="segm")
            assert gc.isenabled() == enabled
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(700, 10, 10)
        gc.enable()


def test_paused_nests():
    gc.enable()
    with paused():
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
