"""``deteval explain`` between ``coco`` and the VOC profiles: the steps sum to the difference, both ends are
evaluate_coco's and evaluate_voc's own numbers, and each matching rule's step fires on a case built for it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deteval.cli import main
from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError
from deteval.explain.cross import CROSS_PROFILE_RULES, cross_data, explain_cross
from deteval.run.voc import evaluate_voc

ROOT = Path(__file__).resolve().parent.parent


def _random(seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Crowds, several detections per object, coarse scores (ties), whole and tenth-pixel coordinates."""
    rng = np.random.default_rng(seed)
    images = [{"id": 3 * i + 1, "width": 500, "height": 500} for i in range(8)]
    cats = [{"id": c + 1, "name": f"c{c}"} for c in range(3)]
    anns: list[dict[str, Any]] = []
    res: list[dict[str, Any]] = []
    for im in images:
        for _ in range(int(rng.integers(0, 5))):
            x, y = (rng.integers(0, 300, 2) + (rng.random(2).round(1) if seed % 2 else 0.0)).tolist()
            w, h = rng.integers(5, 120, 2).astype(float).tolist()
            c = int(rng.integers(1, 4))
            crowd = int(rng.random() < 0.15)
            anns.append({"id": len(anns) + 1, "image_id": im["id"], "category_id": c, "bbox": [x, y, w, h],
                         "area": w * h, "iscrowd": crowd})  # fmt: skip
            for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
                j = rng.integers(-8, 9, 4).tolist()
                cat = c if rng.random() < 0.9 else int(rng.integers(1, 4))
                box = [x + j[0], y + j[1], max(1.0, w + j[2]), max(1.0, h + j[3])]
                res.append({"image_id": im["id"], "category_id": cat, "bbox": box,
                            "score": float(rng.integers(1, 8)) / 8})  # fmt: skip
    return {"images": images, "categories": cats, "annotations": anns}, res


def _check(gt: Any, res: Any, a: str, b: str) -> Any:
    data = cross_data(gt, res)
    e = explain_cross(data, a, b)
    assert not any(s["rule"].startswith("residual") for s in e.steps), e.steps
    for name, end in ((a, e.start), (b, e.end)):
        if name == "coco":
            stats = evaluate_coco(gt, res).stats
            assert (end["mAP50-95"], end["mAP50"]) == (stats[0], stats[1])
        else:
            vgt, vdt = data.voc_tables()
            metric = "voc2010" if name == "voc2012" else "voc07"
            prof = "py_faster_rcnn" if name == "py_faster_rcnn" else "voc_devkit"
            assert end["mAP50"] == evaluate_voc(vgt, vdt, metric=metric, profile=prof).summary["map"]
            maps = [
                evaluate_voc(vgt, vdt, iou_threshold=t, metric=metric, profile=prof).summary["map"]
                for t in np.linspace(0.5, 0.95, 10).tolist()
            ]
            assert end["mAP50-95"] == np.mean(maps)
    for key in ("mAP50-95", "mAP50"):
        total = e.end[key] - e.start[key]
        assert sum(s["delta"][key] for s in e.steps) == pytest.approx(total, abs=1e-12, rel=0)
    return e


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_steps_sum_and_ends_for_every_pair(seed: int) -> None:
    gt, res = _random(seed)
    for a, b in itertools.permutations(CROSS_PROFILE_RULES, 2):
        _check(gt, res, a, b)


def _case(gts: list[list[float]], dets: list[list[float]], crowd: list[int] | None = None) -> tuple[Any, Any]:
    crowd = crowd or [0] * len(gts)
    anns = [{"id": i + 1, "image_id": 1, "category_id": 1, "bbox": g, "area": g[2] * g[3], "iscrowd": c}
            for i, (g, c) in enumerate(zip(gts, crowd, strict=True))]  # fmt: skip
    res = [{"image_id": 1, "category_id": 1, "bbox": d[:4], "score": d[4]} for d in dets]
    return {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}], "annotations": anns}, res


def _step(e: Any, prefix: str) -> dict[str, Any]:
    return next(s for s in e.steps if s["rule"].startswith(prefix))


def test_matcher_step() -> None:
    # The second detection's best box is taken: pycocotools gives it the other box (IoU 0.6), the devkit a FP.
    gt, res = _case([[0, 0, 100, 100], [40, 0, 100, 100]], [[0, 0, 100, 100, 0.9], [20, 0, 100, 100, 0.8]])
    e = _check(gt, res, "coco", "voc2012")
    m = _step(e, "matcher")
    assert m["count"] == 1 and m["delta"]["mAP50"] < 0


def test_comparison_step() -> None:
    # IoU exactly 0.5 in both conventions: a match for >= (coco, devkit), not for > (py-faster-rcnn).
    gt, res = _case([[0, 0, 100, 100]], [[0, 0, 50, 100, 0.9]])
    e = _check(gt, res, "coco", "py_faster_rcnn")
    c = _step(e, "IoU comparison")
    assert c["count"] == 1 and c["delta"]["mAP50"] == pytest.approx(-1.0, abs=1e-15)


def test_crowd_step() -> None:
    # A detection inside a crowd: ignored by pycocotools (IoU over its own area is 1), a FP for the devkit
    # (ordinary IoU 0.25 with the difficult box).
    gt, res = _case(
        [[0, 0, 100, 100], [200, 0, 50, 50]], [[0, 0, 50, 50, 0.9], [200, 0, 50, 50, 0.8]], [1, 0]
    )
    e = _check(gt, res, "coco", "voc07")
    c = _step(e, "IoU with a crowd")
    assert c["count"] == 1 and c["delta"]["mAP50"] < 0


def test_cap_step() -> None:
    dets = [[float(i % 40), 0, 60, 60, 0.5 + i / 1000] for i in range(130)]
    gt, res = _case([[0, 0, 60, 60]], dets)
    assert _step(_check(gt, res, "coco", "voc2012"), "detections kept")["count"] == 30


def test_sub_pixel_box_is_refused() -> None:
    gt, res = _case([[0, 0, 0.5, 10]], [])
    with pytest.raises(DetevalError, match="under one pixel"):
        cross_data(gt, res)


def test_cli_on_the_coco_sample(capsys: pytest.CaptureFixture[str]) -> None:
    sample = ROOT / "data_samples" / "coco"
    args = ["explain", str(sample / "instances_val.json"), str(sample / "results_bbox.json")]
    assert main([*args, "--from", "coco", "--to", "py_faster_rcnn", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["from"] == {"profile": "coco", "mAP50-95": pytest.approx(0.757732, abs=5e-7), "mAP50": 1.0}
    assert [s["rule"].split(":")[0] for s in out["steps"]] == [
        "matcher", "IoU with a crowd/difficult box", "IoU pixel convention", "IoU comparison with the threshold",
        "detections kept per image and class", "ranking of tied scores", "AP integration",
    ]  # fmt: skip


def test_cli_on_a_yolo_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    sample = ROOT / "data_samples" / "yolo"
    args = ["explain", str(sample / "data.yaml"), str(sample / "predictions" / "labels")]
    assert main([*args, "--from", "voc07", "--to", "coco", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main(["yolo", *args[1:], "--profile", "coco", "--format", "json"]) == 0
    coco = json.loads(capsys.readouterr().out)  # the common result: the summary at the top level
    assert out["to"]["mAP50-95"] == coco["mAP50-95"] and out["to"]["mAP50"] == coco["mAP50"]


def test_cli_refuses_other_data_for_coco(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gt.txt").write_text("")
    assert main(["explain", str(tmp_path / "gt.txt"), "x", "--from", "voc07", "--to", "coco"]) == 2
    assert "COCO ground-truth .json" in capsys.readouterr().err


def test_docs_outputs_are_current(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/explain.md shows `$ deteval explain …` runs on the samples: they print exactly what is shown."""
    import re
    import shlex

    monkeypatch.chdir(ROOT)
    text = (ROOT / "docs" / "explain.md").read_text()
    blocks = re.findall(r"```\n\$ (deteval [^\n]+)\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2
    for command, shown in blocks:
        assert main(shlex.split(command)[1:]) == 0
        assert capsys.readouterr().out == shown


def test_docs_python_example(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT / "data_samples" / "coco")
    text = (ROOT / "docs" / "explain.md").read_text()
    code = text.split("Python:\n```python\n")[1].split("```")[0]
    code = code.replace('"results.json"', '"results_bbox.json"')
    exec(compile(code, "docs/explain.md", "exec"), {})
    assert capsys.readouterr().out.startswith(" " * 66 + "mAP50-95")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_voc_input_ends_are_the_voc_and_pycocotools_numbers(seed: int) -> None:
    """VOC tables in: the VOC end is evaluate_voc on the tables as read, the COCO end pycocotools (live) on
    their COCO form (x = x1 − 1, w = x2 − x1 + 1, difficult as iscrowd)."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    from test_explain_voc import _random as random_voc

    from deteval.explain.cross import cross_data_from_voc

    gt, dets = random_voc(seed)
    data = cross_data_from_voc(gt, dets)
    coco = COCO()
    coco.dataset = {
        "images": [{"id": int(i)} for i in data.coco_gt.image_ids],
        "categories": [{"id": int(c)} for c in data.coco_gt.cat_ids],
        "annotations": [
            {"id": n + 1, "image_id": int(data.coco_gt.image_ids[data.g_img[n]]),
             "category_id": int(data.coco_gt.cat_ids[data.g_cls[n]]), "bbox": data.g_xywh[n].tolist(),
             "area": float(data.coco_gt.area[n]), "iscrowd": int(data.g_crowd[n])}
            for n in range(len(data.g_img))
        ],
    }  # fmt: skip
    results = [
        {"image_id": int(data.coco_gt.image_ids[data.d_img[n]]), "category_id": int(data.coco_gt.cat_ids[data.d_cls[n]]),
         "bbox": data.d_xywh[n].tolist(), "score": float(data.d_score[n])}
        for n in range(len(data.d_img))
    ]  # fmt: skip
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
        ev = COCOeval(coco, coco.loadRes(results), "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    for a, b in itertools.permutations(CROSS_PROFILE_RULES, 2):
        e = explain_cross(data, a, b)
        assert not any(s["rule"].startswith("residual") for s in e.steps), e.steps
        for name, end in ((a, e.start), (b, e.end)):
            if name == "coco":
                assert (end["mAP50-95"], end["mAP50"]) == (ev.stats[0], ev.stats[1])
            else:
                metric = "voc2010" if name == "voc2012" else "voc07"
                prof = "py_faster_rcnn" if name == "py_faster_rcnn" else "voc_devkit"
                assert end["mAP50"] == evaluate_voc(gt, dets, metric=metric, profile=prof).summary["map"]
        for key in ("mAP50-95", "mAP50"):
            total = e.end[key] - e.start[key]
            assert sum(s["delta"][key] for s in e.steps) == pytest.approx(total, abs=1e-12, rel=0)


def test_cli_on_the_voc_sample(capsys: pytest.CaptureFixture[str]) -> None:
    voc = ROOT / "data_samples" / "voc"
    args = ["explain", str(voc / "Annotations"), str(voc / "results" / "comp4_det_test_{cls}.txt")]
    args += ["--image-set", str(voc / "ImageSets" / "Main" / "test.txt"), "--from", "voc07", "--to", "coco"]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    voc_args = ["--annotations", args[1], "--detections", args[2], "--image-set", args[4]]
    assert main(["voc", *voc_args, "--metric", "voc07", "--format", "json"]) == 0
    voc07 = json.loads(capsys.readouterr().out)
    assert out["from"]["mAP50"] == voc07["map"]
    crowd = next(s for s in out["steps"] if s["rule"].startswith("IoU with a crowd"))
    assert "5 crowd/difficult boxes" in crowd["what"]


@pytest.mark.parametrize("crowd", [None, [1, 1]])
def test_coco_end_without_regular_objects_is_pycocotools_minus_one(crowd: list[int] | None) -> None:
    """No regular object (none at all, or crowds only): pycocotools' summary is −1 ("undefined") and so is the
    walk's coco end and every state under COCO's AP; the VOC end has no mAP (None), and the AP step into or
    out of it has no difference."""
    gts = [[10.0, 10.0, 50.0, 40.0], [100.0, 80.0, 30.0, 30.0]] if crowd else []
    gt, res = _case(gts, [[12.0, 11.0, 48.0, 40.0, 0.9], [200.0, 200.0, 20.0, 20.0, 0.5]], crowd)
    assert evaluate_coco(gt, res).stats[:2].tolist() == [-1.0, -1.0]
    data = cross_data(gt, res)
    for voc in ("voc07", "voc2012", "py_faster_rcnn"):
        for a, b in ((voc, "coco"), ("coco", voc)):
            e = explain_cross(data, a, b)
            coco_end, voc_end = (e.end, e.start) if b == "coco" else (e.start, e.end)
            assert (coco_end["mAP50-95"], coco_end["mAP50"]) == (-1.0, -1.0)
            assert (voc_end["mAP50-95"], voc_end["mAP50"]) == (None, None)
            ap_step = _step(e, "AP integration")
            assert ap_step["delta"] == {"mAP50-95": None, "mAP50": None}
            before_ap = e.steps[: e.steps.index(ap_step)] if a == "coco" else []
            assert all(s["delta"] == {"mAP50-95": 0.0, "mAP50": 0.0} for s in before_ap), before_ap
            assert not any(s["rule"].startswith("residual") for s in e.steps)
