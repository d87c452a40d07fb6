"""Sharded evaluation on a real dask.distributed LocalCluster (2 worker processes): COCO (bbox, segm,
keypoints, several result files) and VOC with 1, 2 and 7 shards, bit-identical to one process."""

from __future__ import annotations

import copy
import json
from importlib.util import find_spec
from typing import Any

import numpy as np
import pytest
from _coco_cases import random_case, random_keypoints_case, random_segm_case

from deteval.detection.coco import evaluate_coco
from deteval.run.voc import evaluate_voc

# (found, not imported: importing it here would cost every worker's collection; the tests import it)
pytestmark = pytest.mark.skipif(find_spec("distributed") is None, reason="needs dask.distributed")


@pytest.fixture
def client(dask_cluster: Any) -> Any:
    """The 2-worker LocalCluster of tests/conftest.py, shared with the other modules' cluster tests."""
    return dask_cluster


def _same(a: Any, b: Any) -> None:
    for name in ("precision", "recall", "scores", "stats"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.lines, a.counts, a.warnings) == (b.lines, b.counts, b.warnings)


@pytest.mark.slow
def test_coco_files_on_the_cluster(client: Any, tmp_path: Any) -> None:
    cases = {"bbox": random_case(5), "segm": random_segm_case(2), "keypoints": random_keypoints_case(1)}
    for iou_type, case in cases.items():
        gt_path = tmp_path / f"gt_{iou_type}.json"
        gt_path.write_text(json.dumps(case["gt"]))
        dt = case["dt"]
        files = [tmp_path / f"{iou_type}_rank{i}.json" for i in range(2)]
        files[0].write_text(json.dumps(dt[::2]))  # one file per rank: images interleaved across the files
        files[1].write_text(json.dumps(dt[1::2]))
        kw: dict[str, Any] = {"iou_type": iou_type, "params": case.get("params")}
        one = evaluate_coco(str(gt_path), copy.deepcopy(dt[::2] + dt[1::2]), **kw)
        for shards in (1, 2, 7):
            _same(
                evaluate_coco(str(gt_path), [str(f) for f in files], client=client, shards=shards, **kw), one
            )


@pytest.mark.slow
def test_coco_in_memory_inputs_and_default_shards(client: Any) -> None:
    case = random_case(8)
    one = evaluate_coco(copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"]), params=case["params"])
    got = evaluate_coco(case["gt"], case["dt"], params=case["params"], client=client)
    _same(got, one)


@pytest.mark.slow
def test_voc_on_the_cluster(client: Any) -> None:
    from test_distributed_merge import random_voc

    gt, dets = random_voc(11)
    for profile in ("voc_devkit", "py_faster_rcnn"):
        one = evaluate_voc(gt, dets, profile=profile)
        for shards in (1, 2, 7):
            assert (
                evaluate_voc(gt, dets, profile=profile, client=client, shards=shards).to_dict()
                == one.to_dict()
            )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bbox", "segm"])
def test_coco_val2014_sample_on_the_cluster(client: Any, kind: str) -> None:
    from pathlib import Path

    root = Path(__file__).parent / "data" / "coco" / "coco_val2014_100"
    gt = str(root / "instances_val2014_100.json")
    res = str(root / f"instances_val2014_fake{kind}100_results.json")
    one = evaluate_coco(gt, res, iou_type=kind)
    for shards in (2, 7):
        _same(evaluate_coco(gt, res, iou_type=kind, client=client, shards=shards), one)
