"""Sharded LVIS evaluation on a real dask.distributed LocalCluster (2 worker processes): federated bbox and
segm, the per-image cap, Fixed AP (the per-category cut over all images, on the driver) and pooled AP with 1,
2 and 7 shards, bit-identical to one process and equal to lvis-api 0.5.3's numbers."""

from __future__ import annotations

import copy
import json
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import test_distributed_dask
from _lvis_cases import random_lvis_case, run_lvis_api

from deteval.cli import main
from deteval.detection.lvis import LvisEvaluation, evaluate_lvis

pytest.importorskip("lvis")
# (found, not imported: importing it here would cost every worker's collection; the tests import it)
pytestmark = [
    pytest.mark.skipif(find_spec("distributed") is None, reason="needs dask.distributed"),
    pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning"),
]
client = test_distributed_dask.client  # the shared 2-worker LocalCluster (tests/conftest.py)
SAMPLES = Path(__file__).resolve().parent.parent / "data_samples"


def _same(a: LvisEvaluation, b: LvisEvaluation, what: Any) -> None:
    assert np.array_equal(a.precision, b.precision), what
    assert np.array_equal(a.recall, b.recall), what
    assert list(a.results.items()) == list(b.results.items()), what
    assert (a.lines, a.counts, a.warnings) == (b.lines, b.counts, b.warnings), what
    for name in ("pooled_precision", "pooled_recall"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None and y is None) or np.array_equal(x, y), (what, name)


def _as_lvis_api(ev: LvisEvaluation, res: dict, precision: np.ndarray, recall: np.ndarray, what: Any) -> None:
    assert np.array_equal(ev.precision, precision), what
    assert np.array_equal(ev.recall, recall), what
    assert {k: v for k, v in ev.results.items() if "pooled" not in k} == {
        k: float(v) for k, v in res.items()
    }, what


def _usable(case: dict) -> bool:
    # deteval matches annotation id 0; lvis-api counts that match as unmatched (documented difference)
    return not any(a["id"] == 0 for a in case["gt"]["annotations"])


@pytest.mark.slow
def test_random_federated_cases_on_the_cluster(client: Any) -> None:
    checked = 0
    for seed, segm in [(s, False) for s in range(8)] + [(s, True) for s in range(500, 504)]:
        case = random_lvis_case(seed, segm=segm)
        if not _usable(case):
            continue
        iou_type = "segm" if segm else "bbox"
        try:
            ref = run_lvis_api(case["gt"], case["dt"], iou_type, case["max_dets"])
        except KeyError:  # lvis-api's bbox branch met a survivor without a bbox (it crashes there)
            continue
        kw: dict[str, Any] = {"iou_type": iou_type, "max_dets": case["max_dets"], "pooled": True}
        one = evaluate_lvis(copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"]), **kw)
        _as_lvis_api(one, *ref, seed)
        for shards in (1, 2, 7):
            got = evaluate_lvis(case["gt"], case["dt"], client=client, shards=shards, **kw)
            _same(got, one, (seed, shards))
        checked += int((one.precision > 0).any())
    assert checked >= 6


@pytest.mark.slow
def test_fixed_ap_cut_spans_all_shards(client: Any) -> None:
    """The top-K-per-category cut is taken over every image on the driver before sharding: with K small, the
    cut removes detections from images in other shards than the category's best ones."""
    checked = 0
    for seed in range(700, 712):
        case = random_lvis_case(seed)
        if not _usable(case):
            continue
        k = 2
        by_cat: dict = {}
        for d in case["dt"]:
            by_cat.setdefault(d["category_id"], []).append(d)
        top = [d for v in by_cat.values() for d in sorted(v, key=lambda x: x["score"], reverse=True)[:k]]
        ref = run_lvis_api(case["gt"], top, "bbox", -1)
        one = evaluate_lvis(case["gt"], case["dt"], max_dets=None, dets_per_cat=k, pooled=True)
        _as_lvis_api(one, *ref, seed)
        for shards in (1, 2, 7):
            got = evaluate_lvis(
                case["gt"],
                case["dt"],
                max_dets=None,
                dets_per_cat=k,
                pooled=True,
                client=client,
                shards=shards,
            )
            _same(got, one, (seed, shards))
        checked += int(len(top) < len(case["dt"]))
    assert checked >= 6


@pytest.mark.slow
def test_data_sample_and_default_shards(client: Any) -> None:
    gt = json.loads((SAMPLES / "lvis" / "lvis_val.json").read_text())
    dt = json.loads((SAMPLES / "coco" / "results_bbox.json").read_text())
    ref = run_lvis_api(gt, dt, "bbox")
    one = evaluate_lvis(gt, dt)
    _as_lvis_api(one, *ref, "data sample")
    _same(evaluate_lvis(gt, dt, client=client), one, "default shards")
    for shards in (2, 7):
        _same(evaluate_lvis(gt, dt, client=client, shards=shards), one, shards)
    fixed = evaluate_lvis(gt, dt, fixed_ap=True, pooled=True)
    _same(evaluate_lvis(gt, dt, fixed_ap=True, pooled=True, client=client, shards=7), fixed, "fixed ap")


@pytest.mark.slow
def test_shards_without_a_client_run_here() -> None:
    for seed in range(20, 40):
        case = random_lvis_case(seed)
        one = evaluate_lvis(case["gt"], case["dt"], max_dets=case["max_dets"])
        for shards in (2, 3, 7):
            _same(evaluate_lvis(case["gt"], case["dt"], max_dets=case["max_dets"], shards=shards), one, seed)


@pytest.mark.slow
@pytest.mark.usefixtures("dask_in_process")  # (--workers: a client here; tests/conftest.py)
def test_cli_workers_and_shards(capsys: pytest.CaptureFixture[str]) -> None:
    gt, res = str(SAMPLES / "lvis" / "lvis_val.json"), str(SAMPLES / "coco" / "results_bbox.json")

    def run(*extra: str) -> dict:
        assert main(["lvis", gt, res, "--format", "json", "--fixed-ap", *extra]) == 0
        return dict(json.loads(capsys.readouterr().out))

    one = run()
    assert one["AP"] > 0 and one["n_dt_evaluated"] > 0
    assert run("--shards", "3") == one
    assert run("--workers", "2", "--shards", "7") == one
