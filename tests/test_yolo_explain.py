"""``deteval explain``: the steps add up to the difference, the ends are the profiles' own numbers, and each
rule's step fires on a case built to trigger it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from _yolo_cases import random_dataset, write_image

from deteval.cli import main
from deteval.explain import PROFILE_RULES, explain
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.run.yolo import evaluate_yolo

PROFILES = list(PROFILE_RULES)


def _check(ds, preds, a: str, b: str):
    e = explain(ds, preds, a, b)
    assert not any(s["rule"].startswith("residual") for s in e.steps), e.steps
    assert e.start["mAP50-95"] == evaluate_yolo(ds, preds, a).summary["mAP50-95"]
    assert e.end["mAP50"] == evaluate_yolo(ds, preds, b).summary["mAP50"]
    for key in ("mAP50-95", "mAP50"):
        total = e.end[key] - e.start[key]
        assert sum(s["delta"][key] for s in e.steps) == pytest.approx(total, abs=1e-12, rel=0)
    return e


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_steps_sum_to_the_difference_for_every_pair(tmp_path: Path, seed: int) -> None:
    data, pred, _ = random_dataset(tmp_path, 100 + seed)
    ds = load_yolo_dataset(data)
    preds = load_yolo_predictions(pred, ds)
    for a, b in itertools.permutations(PROFILES, 2):
        _check(ds, preds, a, b)


def _one_image(tmp_path: Path, labels: list[str], preds: list[str], size=(200, 100)):
    write_image(tmp_path / "images" / "val" / "a.png", *size)
    (tmp_path / "labels" / "val").mkdir(parents=True)
    (tmp_path / "labels" / "val" / "a.txt").write_text("".join(x + "\n" for x in labels))
    (tmp_path / "pred").mkdir()
    (tmp_path / "pred" / "a.txt").write_text("".join(x + "\n" for x in preds))
    (tmp_path / "data.yaml").write_text("val: images/val\nnames: [a, b]\n")
    ds = load_yolo_dataset(tmp_path / "data.yaml")
    return ds, load_yolo_predictions(tmp_path / "pred", ds)


def _box(x1: float, x2: float, w: int = 200) -> str:
    return f"{(x1 + x2) / 2 / w!r} 0.5 {(x2 - x1) / w!r} 1"


def test_matcher_step(tmp_path: Path) -> None:
    # Label 0 = [0, 100], label 1 = [40, 140]; detection 0 hugs label 0, detection 1 overlaps both and takes
    # label 0 under the unique matcher (its best IoU) but label 1 under the greedy one.
    ds, preds = _one_image(
        tmp_path,
        ["0 " + _box(0, 100), "0 " + _box(40, 140)],
        ["0 " + _box(2, 102) + " 0.9", "0 " + _box(15, 115) + " 0.8"],
    )
    e = _check(ds, preds, "ultralytics-8.4.37", "ultralytics-8.4.176")
    assert e.steps[0]["rule"] == "matcher: unique → greedy"
    assert e.steps[0]["count"] == 1 and e.steps[0]["delta"]["mAP50"] > 0


def test_cap_step(tmp_path: Path) -> None:
    rows = [f"0 {_box(i % 50, i % 50 + 60)} {0.5 + i / 1000!r}" for i in range(150)]
    ds, preds = _one_image(tmp_path, ["0 " + _box(0, 60)], rows)
    e = _check(ds, preds, "coco", "ultralytics")
    cap = next(s for s in e.steps if s["rule"].startswith("detections kept"))
    assert cap["count"] == 50


def test_class_set_counts_prediction_only_classes(tmp_path: Path) -> None:
    ds, preds = _one_image(tmp_path, ["0 " + _box(0, 60)], ["1 " + _box(0, 60) + " 0.9"])
    e = _check(ds, preds, "ultralytics", "coco")
    assert e.steps[-1]["count"] == 1 and e.steps[-1]["delta"] == {"mAP50-95": 0.0, "mAP50": 0.0}


def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, pred, _ = random_dataset(tmp_path, 7)
    assert (
        main(
            ["explain", str(data), str(pred), "--from", "ultralytics-8.0", "--to", "coco", "--format", "json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["from"]["profile"] == "ultralytics-8.0" and set(out["to"]) == {"profile", "mAP50-95", "mAP50"}
    assert all(set(s) >= {"rule", "delta", "count"} for s in out["steps"])


def _float32_flip(width: int) -> tuple[str, str]:
    """Label and detection rows whose pixel IoU is ≥ 0.65 in float64 but < float32(0.65) in float32."""
    import numpy as np

    from deteval.detection.ultralytics import box_iou

    rng = np.random.default_rng(0)
    for _ in range(200000):
        x0, wd = rng.uniform(1000, 3000), 65.0 + rng.uniform(0, 3e-4)
        g = f"0 {(x0 + 50) / width!r} 0.5 {100 / width!r} 1"
        d = f"0 {(x0 + wd / 2) / width!r} 0.5 {wd / width!r} 1"
        px = []
        for row in (g, d):
            c, s = float(row.split()[1]), float(row.split()[3])
            px.append([(c - s / 2) * width, 0.0, (c + s / 2) * width, 100.0])
        gb, db = np.array(px[:1]), np.array(px[1:])
        inter = (min(gb[0, 2], db[0, 2]) - max(gb[0, 0], db[0, 0])) * 100.0
        iou64 = inter / (((db[0, 2] - db[0, 0]) * 100.0 + (gb[0, 2] - gb[0, 0]) * 100.0) - inter)
        if iou64 >= 0.65 and box_iou(gb, db)[0, 0] < np.float32(0.65):
            return g, d + " 0.9"
    raise AssertionError("no case found")


def test_float32_step(tmp_path: Path) -> None:
    g, d = _float32_flip(4000)
    ds, preds = _one_image(tmp_path, [g], [d], size=(4000, 100))
    e = _check(ds, preds, "ultralytics", "coco")
    f = next(s for s in e.steps if s["rule"].startswith("float32"))
    assert f["count"] == 1 and f["delta"]["mAP50-95"] > 0
    assert "1 IoUs within 1e-6 of a threshold" in f["what"]


def test_ties_are_counted(tmp_path: Path) -> None:
    ds, preds = _one_image(
        tmp_path,
        ["0 " + _box(0, 60)],
        ["0 " + _box(0, 60) + " 0.5", "0 " + _box(2, 62) + " 0.5", "1 " + _box(0, 9) + " 0.5"],
    )
    e = _check(ds, preds, "ultralytics", "coco")
    step = next(s for s in e.steps if s["rule"].startswith("AP integration"))
    assert "2 detections share their class and score" in step["what"]


@pytest.mark.slow
def test_scores_equal_in_float32_only(tmp_path: Path) -> None:
    """Scores distinct in float64 but equal in float32: the ends still equal the profiles' own numbers."""
    rows = [f"0 {_box(i, i + 60)} {0.5 + i * 1e-9!r}" for i in range(6)]
    ds, preds = _one_image(tmp_path, ["0 " + _box(0, 60), "0 " + _box(3, 63)], rows)
    for a, b in itertools.permutations(PROFILES, 2):
        _check(ds, preds, a, b)


def test_cli_leaves_a_corrupt_image_out_as_its_ultralytics_end(tmp_path: Path, capsys) -> None:
    """With an Ultralytics end, explain reads the split as that end's yolo val does: a corrupt image left out
    with its labels and predictions (for both ends, as duplicate labels); the Ultralytics end's mAP is then
    deteval yolo's."""
    import shutil

    (tmp_path / "a").mkdir()
    data, pred, _ = random_dataset(tmp_path / "a", 11, n_images=6)
    images = sorted((tmp_path / "a" / "images" / "val").iterdir())
    images[1].write_bytes(b"")
    args = ["--format", "json"]
    assert main(["explain", str(data), str(pred), "--from", "ultralytics", "--to", "coco", *args]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert f"{images[1].name}: ignoring corrupt image/label" in out.err
    assert main(["yolo", str(data), str(pred), "--profile", "ultralytics", *args]) == 0
    assert doc["from"]["mAP50-95"] == json.loads(capsys.readouterr().out)["mAP50-95"]
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    b = tmp_path / "b"
    for p in [
        *(b / "images" / "val").glob(f"{images[1].stem}.*"),
        b / "labels" / "val" / f"{images[1].stem}.txt",
    ]:
        p.unlink(missing_ok=True)
    (b / "pred" / "labels" / f"{images[1].stem}.txt").unlink(missing_ok=True)
    (b / "data.yaml").write_text((b / "data.yaml").read_text().replace(str(tmp_path / "a"), str(b)))
    preds_b = b / pred.relative_to(tmp_path / "a")
    assert main(["yolo", str(b / "data.yaml"), str(preds_b), "--profile", "coco", *args]) == 0
    assert doc["to"]["mAP50-95"] == json.loads(capsys.readouterr().out)["mAP50-95"]


def test_cli_refuses_two_eras_whose_image_checks_differ(tmp_path: Path, capsys) -> None:
    """ultralytics-8.0 leaves a JPEG 2000 image out, 8.4 keeps it: one split cannot be both ends' split."""
    import io

    from PIL import Image

    data, pred, _ = random_dataset(tmp_path, 12, n_images=4)
    images = sorted((tmp_path / "images" / "val").iterdir())
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), 3).save(buf, "JPEG2000")
    images[0].write_bytes(buf.getvalue())
    cmd = ["explain", str(data), str(pred), "--from", "ultralytics-8.0", "--to", "ultralytics"]
    assert main(cmd) == 2
    assert "image check of ultralytics-8.0 and ultralytics differ" in capsys.readouterr().err
    assert main([*cmd[:3], "--from", "ultralytics-8.4.37", "--to", "ultralytics", "--format", "json"]) == 0
