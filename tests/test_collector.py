"""evaluate_coco runs with the garbage collector paused (no collection walks its records) and gives the
caller's collector state back, also when it raises; a forked child's value is unpickled with it paused (in
this file, which runs before the tests that leave threads behind and so stop forking)."""

import gc
import traceback

import pytest
from _coco_cases import random_segm_case

from deteval.collector import paused
from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError
from deteval.run import forked


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


def _many_dicts(n: int) -> list:
    return [{"size": [4, 5], "counts": str(i)} for i in range(n)]


@pytest.mark.parametrize("enabled", [True, False])
def test_result_unpickles_with_the_collector_paused_and_restored(monkeypatch, enabled):
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    seen = []
    real_load = forked.pickle.load

    def load(f):
        seen.append(gc.isenabled())
        return real_load(f)

    monkeypatch.setattr(forked.pickle, "load", load)
    (gc.enable if enabled else gc.disable)()
    try:
        child = forked.fork_call(_many_dicts, 20_000)
        assert child is not None
        assert child.result() == _many_dicts(20_000)
        assert seen == [False] and gc.isenabled() == enabled
    finally:
        gc.enable()
