"""COCO bbox, segm and keypoints evaluation import no ``numpy.ma``: numpy 2's ``np.unique`` imports it on first
use (5-10 ms in a fresh process or forked child), so the evaluation paths use ``sorted_unique`` (or no unique
at all on valid input). Checked in a fresh process over the one-process path, the image-sharded matching of
large inputs, the reading in pieces and the two-core readers' functions (run here in one process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from deteval.core.sorting import sorted_unique

DATA = Path(__file__).parent / "data" / "coco"

_SCRIPT = """
import os, sys
from pathlib import Path
from deteval.run import forked
os.environ[forked.ENV_PROCESSES] = "1"
from deteval.detection import coco as coco_eval
from deteval.detection.coco import parts as coco_parts
from deteval.io import coco as coco_io
from deteval.io.coco import load_coco_gt
from deteval.io.coco import pieces as coco_pieces
assert "numpy.ma" not in sys.modules
V, K = Path(sys.argv[1]) / "coco_val2014_100", Path(sys.argv[1]) / "coco_keypoints"
gt = V / "instances_val2014_100.json"
cases = [
    (gt, V / "instances_val2014_fakebbox100_results.json", "bbox"),
    (gt, V / "instances_val2014_fakesegm100_results.json", "segm"),
    (K / "gt_dataset.json", K / "dt_dataset.json", "keypoints"),
]
stats = []
for shard, chunk in ((coco_parts.SHARD_DETECTIONS, coco_pieces.CHUNK_BYTES), (40, 4096)):
    coco_parts.SHARD_DETECTIONS, coco_pieces.CHUNK_BYTES = shard, chunk  # (sharded matching, reading in pieces)
    for g, d, iou_type in cases:
        stats.append(coco_eval.evaluate_coco(g, d, iou_type=iou_type).stats[0])
# the two-core readers (the pieces of 4096 bytes), each part read here (these keypoints results have boxes:
# loadRes' bbox branch, which the keypoints two-core reader leaves to one process)
for g_path, d, iou_type in cases[:2]:
    g = load_coco_gt(g_path, keep_segmentation=iou_type == "segm")
    start = os.path.getsize(d) // 2
    if iou_type == "bbox":
        r = coco_io.results_with_tail(d, g, start, lambda: coco_io.results_tail(d, start))
    else:
        r = coco_io.results_two_parts(d, g, iou_type, start, lambda: coco_io.results_part(d, g, iou_type, start, False))
    assert r is not None and len(r) > 0, iou_type
print("numpy.ma" in sys.modules, *stats)
"""


@pytest.mark.slow
def test_coco_evaluation_imports_no_numpy_ma():
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(DATA)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "False"
    values = [float(v) for v in out[1:]]
    assert values[:3] == values[3:] and all(v > 0 for v in values)  # (both ways evaluated, alike)


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32])
def test_sorted_unique_is_np_unique_of_sorted_input(dtype):
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 7, 100, 1000):
        values = np.sort(rng.integers(-5, 6, size=n).astype(dtype))
        if dtype is np.float64 and n:
            values[values == 0] = -0.0  # (-0.0 and 0.0 are one value for both)
            values[-1:] = 0.0
            values.sort()
        got = sorted_unique(values)
        assert got.dtype == values.dtype
        assert np.array_equal(got, np.unique(values))


_YOLO = """
import contextlib, io, sys
from deteval.cli import main
for profile in ("ultralytics", "ultralytics-8.0", "coco", "supervision"):
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["yolo", sys.argv[1] + "/data.yaml", sys.argv[1] + "/predictions/labels", "--profile", profile]) == 0
print("numpy.ma" in sys.modules)
"""


def test_yolo_evaluation_imports_no_numpy_ma():
    sample = Path(__file__).parent.parent / "data_samples" / "yolo"
    out = subprocess.run(
        [sys.executable, "-c", _YOLO, str(sample)], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False"]


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.float32])
def test_distinct_is_np_unique(dtype):
    from deteval.core.sorting import distinct, distinct_counts

    rng = np.random.default_rng(1)
    for n in (0, 1, 2, 50, 1000):
        x = rng.integers(-3, 7, n).astype(dtype)
        if n >= 2 and dtype != np.int64:
            x[:2] = [-0.0, 0.0]
        u, c = np.unique(x, return_counts=True)
        u2, c2 = distinct_counts(x)
        assert u2.dtype == u.dtype and c2.dtype == c.dtype
        assert u2.tolist() == u.tolist() and c2.tolist() == c.tolist()
        assert np.signbit(distinct(x)).tolist() == np.signbit(np.unique(x)).tolist()
