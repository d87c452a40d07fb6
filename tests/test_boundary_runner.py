"""Boundary IoU through every strategy of the runner (one process, two cores, image shards here and on a
dask cluster, LVIS shards) and the statistics: bit-identical to one process."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest
from test_boundary_coco import random_boundary_case
from test_coco_two_cores import small_thresholds  # noqa: F401 (a fixture)

import deteval.run.forked as forked
from deteval.cli import main
from deteval.detection.coco import CocoParams, evaluate_coco
from deteval.detection.lvis import evaluate_lvis

pytest.importorskip("pycocotools")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _params(ratio: float = 0.05, profile: str = "boundary-iou-api") -> CocoParams:
    p = CocoParams.default("boundary")
    p.dilation_ratio, p.boundary_profile = ratio, profile
    return p.validated()


def _case(seeds: range) -> dict:
    """Several random cases as one, images and annotations renumbered (more images to cut)."""
    gt: dict[str, Any] = {
        "images": [],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [],
    }
    dt: list[dict] = []
    for s in seeds:
        c = random_boundary_case(s)
        base = len(gt["images"])
        for im in c["gt"]["images"]:
            gt["images"].append({**im, "id": im["id"] + base})
        for a in c["gt"]["annotations"]:
            gt["annotations"].append(
                {**a, "id": len(gt["annotations"]) + 1, "image_id": a["image_id"] + base}
            )
        dt += [{**d, "image_id": d["image_id"] + base} for d in c["dt"]]
    return {"gt": gt, "dt": dt}


def _same(a: Any, b: Any) -> None:
    for name in ("precision", "recall", "scores", "stats"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.lines, a.counts, a.warnings) == (b.lines, b.counts, b.warnings)


@pytest.fixture(scope="module")
def files(tmp_path_factory: Any) -> tuple[str, list[str], dict]:
    case = _case(range(40, 52))
    folder = tmp_path_factory.mktemp("boundary")
    (folder / "gt.json").write_text(json.dumps(case["gt"]))
    ranks = [folder / f"rank{i}.json" for i in range(2)]
    ranks[0].write_text(json.dumps(case["dt"][::2]))
    ranks[1].write_text(json.dumps(case["dt"][1::2]))
    return str(folder / "gt.json"), [str(r) for r in ranks], case


def test_image_shards_give_the_one_process_numbers(files):
    gt, ranks, case = files
    one = evaluate_coco(gt, ranks, params=_params(), strategy="one process")
    assert one.stats[0] > 0.01  # (a real evaluation: some matches)
    assert np.array_equal(
        one.stats, evaluate_coco(case["gt"], case["dt"][::2] + case["dt"][1::2], params=_params()).stats
    )
    for shards in (1, 2, 5):
        _same(evaluate_coco(gt, ranks, params=_params(), shards=shards), one)


def test_two_cores_give_the_one_process_numbers(files, tmp_path, monkeypatch, small_thresholds):  # noqa: F811
    gt, _, case = files
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(case["dt"]))
    monkeypatch.setenv(forked.ENV_PROCESSES, "1")
    one = evaluate_coco(gt, str(path), params=_params(0.02, "ultrafast"))
    monkeypatch.setenv(forked.ENV_PROCESSES, "")
    two = evaluate_coco(gt, str(path), params=_params(0.02, "ultrafast"))
    assert any(small_thresholds)  # a second process took part
    _same(one, two)


@pytest.mark.slow
def test_image_shards_on_a_dask_cluster(files, dask_cluster):
    gt, ranks, _ = files
    one = evaluate_coco(gt, ranks, params=_params(), strategy="one process")
    for shards in (2, 3):
        _same(evaluate_coco(gt, ranks, params=_params(), client=dask_cluster, shards=shards), one)


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")
def test_lvis_shards_give_the_one_process_numbers(tmp_path):
    from _lvis_cases import random_lvis_case

    case = random_lvis_case(511, segm=True)
    (tmp_path / "gt.json").write_text(json.dumps(case["gt"]))
    (tmp_path / "dt.json").write_text(json.dumps(case["dt"]))
    kw: dict[str, Any] = {"iou_type": "boundary", "dilation_ratio": 0.05, "max_dets": case["max_dets"]}
    one = evaluate_lvis(copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"]), **kw)
    for shards in (1, 2, 4):
        got = evaluate_lvis(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), shards=shards, **kw)
        assert np.array_equal(got.precision, one.precision) and got.results == one.results
    segm = evaluate_lvis(
        copy.deepcopy(case["gt"]), copy.deepcopy(case["dt"]), iou_type="segm", max_dets=case["max_dets"]
    )
    assert one.results["AP"] <= segm.results["AP"]  # (boundary IoU is at most the mask IoU here: no crowd)


def test_confidence_intervals_on_boundary_iou(files, capsys):
    gt, ranks, _ = files
    args = ["coco", gt, ranks[0], "--iou-type", "boundary", "--dilation-ratio", "0.05", "--format", "json"]
    assert main([*args, "--ci", "0.9", "--bootstrap", "30"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = evaluate_coco(gt, ranks[0], params=_params())
    assert out["stats"] == want.stats.tolist()
    assert out["iou_type"] == "boundary" and out["params"]["dilation_ratio"] == 0.05
    lo, hi = out["ci"]["AP"]
    assert 0 <= lo < hi <= 1  # (a percentile interval need not hold the point estimate)


def test_the_analysis_options_refuse_boundary_as_they_refuse_segm(files, capsys):
    gt, ranks, _ = files
    assert main(["coco", gt, ranks[0], "--iou-type", "boundary", "--errors"]) == 2
    assert "bbox only" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")
def test_deteval_lvis_boundary_on_the_command_line(tmp_path, capsys):
    from _lvis_cases import random_lvis_case

    case = random_lvis_case(511, segm=True)
    (tmp_path / "gt.json").write_text(json.dumps(case["gt"]))
    (tmp_path / "dt.json").write_text(json.dumps(case["dt"]))
    args = ["lvis", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--iou-type", "boundary"]
    assert main([*args, "--dilation-ratio", "0.05", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = evaluate_lvis(case["gt"], case["dt"], iou_type="boundary", dilation_ratio=0.05)
    assert out["AP"] == want.results["AP"]
    assert main([*args, "--dilation-ratio", "abc"]) == 2
    assert "--dilation-ratio 'abc' is not a number" in capsys.readouterr().err


def test_the_html_report_of_boundary_iou_leaves_out_the_bbox_only_analyses(files, tmp_path, capsys):
    gt, ranks, _ = files
    out = tmp_path / "report.html"
    assert main(["coco", gt, ranks[0], "--iou-type", "boundary", "--html", str(out)]) == 0
    err = capsys.readouterr().err
    assert "left out of the report: the error analysis supports --iou-type bbox only" in err
    assert "left out of the report: per-image diagnostics support --iou-type bbox only" in err
    assert out.stat().st_size > 10_000 and "boundary" in out.read_text()
