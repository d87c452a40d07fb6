"""LVIS bbox results read on two cores (a forked child parses the file's tail while this process reads the
ground truth and the head): the numbers, counts and errors of one process."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _lvis_cases import random_lvis_case

import deteval.io.coco.pieces as coco_pieces
import deteval.run.coco_two_cores as two_cores
from deteval.detection.lvis import evaluate_lvis
from deteval.errors import DetevalError
from deteval.run import forked


@pytest.fixture
def forks(monkeypatch):
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)  # (the machine may be busy)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 512)
    monkeypatch.setattr(two_cores, "FORK_RESULTS_BYTES", 0)
    calls = []
    real = two_cores.fork_call

    def counting(fn, *args):
        child = real(fn, *args)
        calls.append(child is not None)
        return child

    monkeypatch.setattr(two_cores, "fork_call", counting)
    read = two_cores._Share.read

    def reading(self, *args):
        r = read(self, *args)
        calls.append(("read", r is not None))
        return r

    monkeypatch.setattr(two_cores._Share, "read", reading)
    return calls


def _outcome(gt, dt, monkeypatch, processes: str):
    monkeypatch.setenv(forked.ENV_PROCESSES, processes)
    try:
        e = evaluate_lvis(str(gt), str(dt), max_dets=5)
    except DetevalError as exc:
        return ("error", type(exc).__name__, str(exc.file), exc.record, exc.reason)
    return ("ok", e.precision, e.recall, e.results, e.counts, e.warnings)


def _case(tmp_path, seed: int, bad: dict | None = None):
    case = random_lvis_case(seed)
    dets = [d for d in case["dt"] if "bbox" in d] * 6  # (a file of several pieces)
    if bad is not None:
        dets[len(dets) - 3] = bad  # (in the child's tail)
    gt, dt = tmp_path / "gt.json", tmp_path / "dt.json"
    gt.write_text(json.dumps(case["gt"]))
    dt.write_text(json.dumps(dets))
    return gt, dt


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_two_cores_give_the_one_process_numbers(tmp_path, monkeypatch, forks, seed):
    gt, dt = _case(tmp_path, seed)
    one = _outcome(gt, dt, monkeypatch, "1")
    forks.clear()
    two = _outcome(gt, dt, monkeypatch, "2")
    assert forks == [True, ("read", True)]  # (the child read the tail, and its part was taken)
    assert one[0] == two[0] == "ok"
    for x, y in zip(one[1:3], two[1:3]):
        assert x.shape == y.shape and np.array_equal(x, y)
    assert one[3:] == two[3:]


def test_a_bad_record_in_the_tail_gives_the_one_process_error(tmp_path, monkeypatch, forks):
    gt, dt = _case(tmp_path, 2, {"image_id": 1, "category_id": 1, "bbox": [1, 2, 3], "score": 0.5})
    one = _outcome(gt, dt, monkeypatch, "1")
    forks.clear()
    two = _outcome(gt, dt, monkeypatch, "2")
    assert forks == [True, ("read", False)] and one[0] == "error" and one == two


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_categories_matched_and_accumulated_in_halves_give_the_one_process_numbers(
    tmp_path, monkeypatch, forks, seed
):
    """After the reading, a forked child matches and accumulates half of the categories: the arrays, results,
    counts and warnings are one process's, bit for bit."""
    monkeypatch.setattr(two_cores, "FORK_DETECTIONS", 0)
    gt, dt = _case(tmp_path, seed)
    one = _outcome(gt, dt, monkeypatch, "1")
    forks.clear()
    two = _outcome(gt, dt, monkeypatch, "2")
    halves = len(json.loads(gt.read_text())["categories"]) >= 2  # (one category: no halves)
    assert forks == [True, ("read", True)] + [True] * halves  # (the tail's child, the categories' child)
    assert one[0] == two[0] == "ok"
    for x, y in zip(one[1:3], two[1:3]):
        assert x.shape == y.shape and np.array_equal(x, y)
    assert one[3:] == two[3:]


@pytest.mark.parametrize("seed", [2, 4])
def test_segm_categories_in_halves_and_pooled_in_one_process(monkeypatch, forks, seed):
    """segm results (in memory) are matched by halves of the categories too; the pooled APs need the whole
    table, so with ``pooled=True`` no child is forked for the categories. Every number is one process's."""
    monkeypatch.setattr(two_cores, "FORK_MASKS", 0)
    case = random_lvis_case(seed, segm=True)
    outcomes = []
    for processes, pooled in (("1", False), ("2", False), ("2", True), ("1", True)):
        monkeypatch.setenv(forked.ENV_PROCESSES, processes)
        forks.clear()
        e = evaluate_lvis(case["gt"], case["dt"], iou_type="segm", max_dets=5, pooled=pooled)
        assert forks == ([True] if (processes, pooled) == ("2", False) else [])
        outcomes.append((e.precision, e.recall, e.results, e.counts, e.warnings))
    for one, two in (outcomes[:2], outcomes[2:]):
        for x, y in zip(one[:2], two[:2]):
            assert x.shape == y.shape and np.array_equal(x, y)
        assert one[2:] == two[2:]
    assert "AP-pooled-all" in outcomes[2][2] and "AP-pooled-all" not in outcomes[0][2]


@pytest.mark.parametrize("seed", [1, 4])
def test_fixed_ap_categories_in_halves(monkeypatch, forks, seed):
    """Fixed AP's per-category cut is made over all images before the categories are halved: the numbers of
    two processes are one process's."""
    monkeypatch.setattr(two_cores, "FORK_DETECTIONS", 0)
    case = random_lvis_case(seed)
    dets = [d for d in case["dt"] if "bbox" in d]
    outcomes = []
    for processes in ("1", "2"):
        monkeypatch.setenv(forked.ENV_PROCESSES, processes)
        forks.clear()
        e = evaluate_lvis(case["gt"], dets, fixed_ap=True, dets_per_cat=3)
        assert forks == ([True] if processes == "2" else [])
        outcomes.append((e.precision, e.recall, e.results, e.counts, e.warnings))
    one, two = outcomes
    for x, y in zip(one[:2], two[:2]):
        assert x.shape == y.shape and np.array_equal(x, y)
    assert one[2:] == two[2:] and one[3]["n_dt_evaluated"] < one[3]["n_dt"]
