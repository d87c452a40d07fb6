"""Bugs that the type check (mypy on deteval/) found, each pinned by a test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import deteval.detection.coco as coco
from deteval.cli import main
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
COCO = ROOT / "data_samples" / "coco"


def test_area_ranges_read_as_pairs():
    p = CocoParams.from_options("bbox", area_rng="0,1e10; 0,1024", area_lbl="all,small")
    assert p.area_rng == ((0.0, 1e10), (0.0, 1024.0))
    p = CocoParams.from_options("bbox", area_rng=[[0, 5], [5, 7.5]], area_lbl=["a", "b"])
    assert p.area_rng == ((0.0, 5.0), (5.0, 7.5))


# A string range of one or three numbers was passed on as a tuple of that length and failed later, in
# CocoParams.validated(), with a bare "too many values to unpack" traceback.
@pytest.mark.parametrize("value", ["0,1e10,5", "0", "0,1;2,3,4"])
def test_area_range_string_of_other_than_two_numbers_is_refused(value):
    with pytest.raises(ConfigError, match=r"area_rng: each range must be two numbers lo,hi"):
        CocoParams.from_options("bbox", area_rng=value, area_lbl=",".join("ab"[: value.count(";") + 1]))


@pytest.mark.parametrize("value", [[[0, 1, 2]], [[0]], [5]])
def test_area_range_list_of_other_than_pairs_is_refused(value):
    with pytest.raises(ConfigError, match=r"area_rng: each range must be two numbers lo,hi"):
        CocoParams.from_options("bbox", area_rng=value, area_lbl="all")


def test_cli_bad_area_range_exits_2(capsys):
    args = ["coco", str(COCO / "instances_val.json"), str(COCO / "results_bbox.json")]
    assert main([*args, "--area-rng", "0,1e10,5", "--area-lbl", "all"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deteval: error:") and "--area-rng each range must be two numbers lo,hi" in err


# Results of more than SHARD_DETECTIONS detections are matched image shard by image shard; an empty image
# selection gave no shard and failed with "ValueError: no tables to merge" instead of the one-pass result.
def test_sharded_match_with_no_image_selected_equals_one_pass(monkeypatch):
    gt, res = COCO / "instances_val.json", COCO / "results_bbox.json"
    params = CocoParams.from_options("bbox", img_ids=[])
    one_pass = coco.evaluate_coco(gt, res, params=params)
    monkeypatch.setattr(coco.parts, "SHARD_DETECTIONS", 2)
    sharded = coco.evaluate_coco(gt, res, params=params)
    assert one_pass.stats.tolist() == sharded.stats.tolist() == [-1.0] * 12
    np.testing.assert_array_equal(one_pass.precision, sharded.precision)
    np.testing.assert_array_equal(one_pass.recall, sharded.recall)
