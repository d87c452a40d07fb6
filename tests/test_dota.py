"""DOTA annotations and Task1 detections against the DOTA devkit (pip ``dotadevkit``, its Task1 ``voc_eval``)
run live on random cases: rotated and ±90° rectangles, convex quadrilaterals, difficult objects, header
lines, exact score ties, duplicates; and the reader's refusals."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from deteval.errors import DetevalError
from deteval.io.dota import load_dota_annotations, load_dota_detections
from deteval.run.dota import evaluate_dota
from deteval.tables.quads import obb_quads

task1 = pytest.importorskip("dotadevkit.evaluate.task1")

CLASSES = ("plane", "ship", "small-vehicle")


def write_case(root: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    (root / "labelTxt").mkdir(parents=True)
    (root / "det").mkdir()
    dets: dict[str, list[str]] = {c: [] for c in CLASSES}
    names = []
    for i in range(int(rng.integers(2, 7))):
        name = f"P{i:04d}"
        names.append(name)
        n = int(rng.integers(0, 9))
        boxes = np.c_[
            rng.uniform(50, 900, (n, 2)), rng.uniform(5, 120, (n, 2)), rng.uniform(-np.pi, np.pi, n)
        ]
        boxes[: n // 3, 4] = rng.choice([np.pi / 2, -np.pi / 2, 0.0], n // 3)
        quads = obb_quads(boxes)[:, :8]
        quads[n // 2 :] += rng.normal(0, 1.0, (n - n // 2, 8))  # convex quadrilaterals, not rectangles
        cls = rng.integers(0, len(CLASSES), n)
        lines = ["imagesource:GoogleEarth", "gsd:0.146343590398"] if rng.random() < 0.5 else []
        for k in range(n):
            diff = int(rng.random() < 0.15)
            lines.append(" ".join(f"{v:.1f}" for v in quads[k]) + f" {CLASSES[cls[k]]} {diff}")
            for _ in range(int(rng.choice([0, 1, 1, 2]))):
                b = boxes[k] + np.r_[rng.normal(0, 4, 2), rng.normal(0, 4, 2), rng.normal(0, 0.2)]
                b[2:4] = np.abs(b[2:4]) + 1
                c = CLASSES[cls[k]] if rng.random() < 0.9 else CLASSES[rng.integers(0, len(CLASSES))]
                s = rng.choice([0.3, 0.6, 0.9]) if rng.random() < 0.3 else rng.uniform(0.01, 1)
                dets[c].append(f"{name} {s:.6f} " + " ".join(f"{v:.1f}" for v in obb_quads(b[None])[0, :8]))
        (root / "labelTxt" / f"{name}.txt").write_text("\n".join(lines) + "\n")
        for _ in range(int(rng.integers(0, 3))):  # background
            b = np.r_[rng.uniform(50, 900, 2), rng.uniform(5, 120, 2), rng.uniform(-3, 3)]
            dets[CLASSES[rng.integers(0, 3)]].append(
                f"{name} {rng.uniform(0, 1):.6f} " + " ".join(f"{v:.1f}" for v in obb_quads(b[None])[0, :8])
            )
    for c, rows in dets.items():
        (root / "det" / f"Task1_{c}.txt").write_text("".join(r + "\n" for r in rows))
    (root / "imageset.txt").write_text("".join(n + "\n" for n in names))


def devkit_aps(root: Path, difficult: bool) -> dict[str, float]:
    out = {}
    for c in CLASSES:
        if not (root / "det" / f"Task1_{c}.txt").read_text().strip():
            continue  # (the devkit fails on an empty file)
        with contextlib.redirect_stdout(io.StringIO()):  # (it prints its tp/fp arrays)
            _, _, ap = task1.voc_eval(
                str(root / "det" / "Task1_{:s}.txt"), str(root / "labelTxt" / "{:s}.txt"),
                str(root / "imageset.txt"), c, ovthresh=0.5, use_07_metric=True,
                version="1.0" if difficult else "1.5",
            )  # fmt: skip
        out[c] = float(ap)
    return out


@pytest.mark.parametrize("difficult", [True, False])
def test_equal_to_the_dota_devkit(tmp_path, difficult):
    compared = 0
    for seed in range(40):
        root = tmp_path / f"{seed}"
        write_case(root, seed)
        gt = load_dota_annotations(root / "labelTxt")
        dets, corners = load_dota_detections(root / "det")
        ours = evaluate_dota(gt, dets, corners, difficult=difficult)
        with np.errstate(all="ignore"):
            want = devkit_aps(root, difficult)
        for c, ap in want.items():
            row = ours.per_class.get(c)
            if row is None or row["npos"] == 0:
                continue  # (the devkit divides by npos = 0)
            assert row["ap"] == ap, (seed, c)
            compared += 1
    assert compared > 60


def test_every_part_count_gives_the_same_numbers(tmp_path):
    write_case(tmp_path, 3)
    gt = load_dota_annotations(tmp_path / "labelTxt", tmp_path / "imageset.txt")
    dets, corners = load_dota_detections(tmp_path / "det")
    one = evaluate_dota(gt, dets, corners)
    for shards in (2, 3):
        assert evaluate_dota(gt, dets, corners, shards=shards).per_class == one.per_class
    assert one.summary["profile"] == "dota_devkit" and one.protocol == "dota"
    only = evaluate_dota(gt, dets, corners, classes=["ship"])
    assert only.per_class["ship"] == one.per_class["ship"] and list(only.per_class) == ["ship"]


@pytest.mark.parametrize(
    ("line", "fault"),
    [
        ("1 2 3 4 5 6 7 8 plane 2", "difficult"),
        ("1 2 3 4 5 6 7 8", "fields"),
        ("1 2 3 4 5 6 7 plane 0", "not a number"),
        ("1 2 3 x 5 6 7 8 plane 0", "not a number"),
        ("1 2 3 nan 5 6 7 8 plane 0", "NaN"),
    ],
)
def test_bad_annotation_rows_are_named(tmp_path, line, fault):
    (tmp_path / "a.txt").write_text("imagesource:GoogleEarth\ngsd:0.1\n" + line + "\n")
    with pytest.raises(DetevalError, match=fault) as err:
        load_dota_annotations(tmp_path)
    assert "a.txt" in str(err.value) and "line 3" in str(err.value)


def test_bad_detection_rows_are_named(tmp_path):
    (tmp_path / "Task1_plane.txt").write_text("P0001 0.5 1 2 3 4 5 6 7\n")
    with pytest.raises(DetevalError, match=r"Task1_plane\.txt.*line 1"):
        load_dota_detections(tmp_path)
    with pytest.raises(DetevalError, match="Task1_"):
        load_dota_detections(tmp_path / "missing")


def test_coco_protocol_equals_hotcoco_from_dota(tmp_path):
    # the same labelTxt folder read by hotcoco's own DOTA converter; the Task1 rows given to it as obb results
    import json
    import warnings

    from deteval.tables.quads import corners_obb

    hotcoco = pytest.importorskip("hotcoco")
    compared = 0
    for seed in range(12):
        root = tmp_path / f"{seed}"
        write_case(root, seed)
        gt = load_dota_annotations(root / "labelTxt")
        dets, corners = load_dota_detections(root / "det")
        if not len(dets) or not len(gt):
            continue
        ours = evaluate_dota(gt, dets, corners, protocol="coco")
        names = list(gt.classes) + [c for c in dets.classes if c not in gt.classes]
        obb = corners_obb(corners)
        results = [
            {"image_id": gt.images.index(dets.images[int(dets.image[k])]) + 1,
             "category_id": names.index(dets.classes[int(dets.label[k])]) + 1,
             "obb": obb[k].tolist(), "score": float(dets.scores[k])}
            for k in range(len(dets))
        ]  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            coco = hotcoco.COCO.from_dota(str(root / "labelTxt"), categories=names)
            ev = hotcoco.COCOeval(coco, coco.loadRes(json.loads(json.dumps(results))), "obb")
            ev.evaluate()
            ev.accumulate()
            with contextlib.redirect_stdout(io.StringIO()):
                ev.summarize()
        assert ours.summary["stats"] == [float(v) for v in ev.stats], seed
        compared += 1
    assert compared > 8
