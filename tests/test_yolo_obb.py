"""YOLO-OBB under the Ultralytics profiles against the numbers Ultralytics' own OBB code computed
(scripts/ultralytics_obb_expected.py: ``batch_probiou`` + ``match_predictions`` + ``ap_per_class`` +
``Metric`` of each version, on tests/data/ultralytics/obb-cases.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deteval.detection.box_table import BoxTable
from deteval.detection.ultralytics import evaluate_ultralytics, obb_pair_iou

DATA = Path(__file__).parent / "data" / "ultralytics"
CASES = {c["name"]: c for c in json.loads((DATA / "obb-cases.json").read_text())["cases"]}
VERSION_PROFILE = {
    "8.0.239": "ultralytics-8.0",
    "8.4.36": "ultralytics-8.0",
    "8.4.37": "ultralytics-8.4.37",
    "8.4.175": "ultralytics-8.4.37",
    "8.4.176": "ultralytics-8.4.176",
    "8.4.190": "ultralytics",
}


def obb_tables(case: dict) -> tuple[BoxTable, BoxTable, np.ndarray, np.ndarray, int]:
    gi, gc, gb, di, dc, db, dconf = [], [], [], [], [], [], []
    for i, im in enumerate(case["images"]):
        gi += [i] * len(im["gt_cls"])
        gc += im["gt_cls"]
        gb += im["gt_xywhr"]
        di += [i] * len(im["det_cls"])
        dc += im["det_cls"]
        db += im["det_xywhr"]
        dconf += im["conf"]
    g, d = np.asarray(gb, float).reshape(-1, 5), np.asarray(db, float).reshape(-1, 5)
    gt = BoxTable.from_arrays(gi, gc, np.c_[g[:, :2] - 1, g[:, :2] + 1])  # (boxes unused: the IoU is ProbIoU)
    dt = BoxTable.from_arrays(di, dc, np.c_[d[:, :2] - 1, d[:, :2] + 1], dconf)
    return gt, dt, g, d, len(case["images"])


@pytest.mark.parametrize("version", list(VERSION_PROFILE))
def test_every_obb_case_equals_ultralytics(version: str) -> None:
    data = json.loads((DATA / f"obb-expected-{version}.json").read_text())
    assert data["version"] == version and len(data["cases"]) == len(CASES)
    for name, want in data["cases"].items():
        gt, dt, g, d, n = obb_tables(CASES[name])
        got = evaluate_ultralytics(gt, dt, n, VERSION_PROFILE[version], iou=obb_pair_iou(g, d))
        assert got.classes.tolist() == want["ap_class_index"], name
        # Bit for bit (so within the 1e-12 asked of the profile): the same float64 values.
        assert got.ap.tolist() == want["ap"], name
        assert got.p.tolist() == want["p"], name
        assert got.r.tolist() == want["r"], name
        assert got.map == want["mAP50-95"], name
        assert got.map50 == want["mAP50"], name
        assert got.map75 == want["mAP75"], name
        assert got.precision == want["precision"], name
        assert got.recall == want["recall"], name


def test_the_cases_hold_what_they_claim() -> None:
    angles = np.concatenate(
        [np.asarray(im["gt_xywhr"]).reshape(-1, 5)[:, 4] for c in CASES.values() for im in c["images"]]
    )
    assert (np.abs(np.abs(angles) - np.float32(np.pi / 2)) < 1e-6).sum() > 5  # ±90°
    widths = np.concatenate(
        [np.asarray(im["gt_xywhr"]).reshape(-1, 5)[:, 2] for c in CASES.values() for im in c["images"]]
    )
    assert (widths == 0).sum() > 3  # zero-width boxes
    want = json.loads((DATA / "obb-expected-8.4.190.json").read_text())["cases"]
    assert sum(w["mAP50"] > 0 for w in want.values()) > 25  # the cases are not trivial


# ------------------------------------------------------------------------------- files: deteval yolo --task obb
def write_obb_split(root: Path, seed: int) -> tuple[list[tuple[int, int]], list, list]:
    """A YOLO-OBB dataset (images/val/*.png, labels/val/*.txt) and predictions (pred/*.txt); returns the image
    sizes and per image the label rows and prediction rows in pixels ((cls, corners) and (cls, corners, conf))."""
    from PIL import Image

    from deteval.tables.quads import obb_quads

    rng = np.random.default_rng(seed)
    (root / "images" / "val").mkdir(parents=True)
    (root / "labels" / "val").mkdir(parents=True)
    (root / "pred").mkdir()
    (root / "data.yaml").write_text("val: images/val\nnames:\n  0: plane\n  1: ship\n")
    sizes, labels, preds = [], [], []
    for i in range(4):
        w, h = int(rng.integers(200, 400)), int(rng.integers(200, 400))
        Image.new("L", (w, h)).save(root / "images" / "val" / f"im{i}.png")
        n = int(rng.integers(1, 6))
        boxes = np.c_[
            rng.uniform(40, w - 40, n),
            rng.uniform(40, h - 40, n),
            rng.uniform(8, 60, (n, 2)),
            rng.uniform(-np.pi, np.pi, n),
        ]
        boxes[0, 4] = np.pi / 2
        cls = rng.integers(0, 2, n)
        corners = obb_quads(boxes)[:, :8]
        lab, pr = [], []
        for k in range(n):
            lab.append((int(cls[k]), corners[k]))
            for _ in range(int(rng.integers(0, 3))):
                b = boxes[k] + np.r_[rng.normal(0, 3, 2), rng.normal(0, 3, 2), rng.normal(0, 0.15)]
                b[2:4] = np.abs(b[2:4])
                pr.append((int(cls[k]), obb_quads(b[None])[0, :8], float(np.round(rng.uniform(0.01, 1), 4))))
        scale = np.tile([w, h], 4)
        (root / "labels" / "val" / f"im{i}.txt").write_text(
            "".join(f"{c} " + " ".join(f"{v:.6f}" for v in q / scale) + "\n" for c, q in lab)
        )
        (root / "pred" / f"im{i}.txt").write_text(
            "".join(f"{c} " + " ".join(f"{v:.6f}" for v in q / scale) + f" {s}\n" for c, q, s in pr)
        )
        sizes.append((w, h))
        labels.append(lab)
        preds.append(pr)
    return sizes, labels, preds


def test_yolo_obb_files_under_coco_equal_hotcoco(tmp_path):
    import contextlib
    import io
    import warnings

    from deteval.io.yolo_obb import load_yolo_obb
    from deteval.run.yolo import evaluate_yolo_files
    from deteval.tables.quads import corners_obb

    hotcoco = pytest.importorskip("hotcoco")
    write_obb_split(tmp_path, 3)
    got = evaluate_yolo_files(tmp_path / "data.yaml", tmp_path / "pred", profile="coco", task="obb")
    # the same corners (as deteval read them from the files) given to hotcoco as its obb JSON
    ds, preds, g, d = load_yolo_obb(tmp_path / "data.yaml", tmp_path / "pred")
    go, do = corners_obb(g), corners_obb(d)
    gt = {
        "images": [{"id": i + 1} for i in range(ds.n_images)],
        "categories": [{"id": 1, "name": "plane"}, {"id": 2, "name": "ship"}],
        "annotations": [
            {"id": k + 1, "image_id": int(ds.labels.img[k]) + 1, "category_id": int(ds.labels.cls[k]) + 1,
             "obb": go[k].tolist(), "area": float(go[k, 2] * go[k, 3]), "iscrowd": 0}
            for k in range(len(go))
        ],
    }  # fmt: skip
    dts = [
        {"image_id": int(preds.img[k]) + 1, "category_id": int(preds.cls[k]) + 1, "obb": do[k].tolist(),
         "score": float(preds.conf[k])}
        for k in range(len(do))
    ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coco = hotcoco.COCO(gt)
        ev = hotcoco.COCOeval(coco, coco.loadRes(dts), "obb")
        ev.evaluate()
        ev.accumulate()
        with contextlib.redirect_stdout(io.StringIO()):
            ev.summarize()
    assert got.stats == [float(v) for v in ev.stats]
    assert got.summary["mAP50"] > 0.3


def test_yolo_obb_files_under_ultralytics_read_the_rectangles(tmp_path):
    from deteval.run.yolo import evaluate_yolo_files

    _, labels, preds = write_obb_split(tmp_path, 5)
    got = evaluate_yolo_files(tmp_path / "data.yaml", tmp_path / "pred", profile="ultralytics", task="obb")
    # the rows as (cx, cy, w, h, r): ProbIoU depends on the rectangle, not on its corner order or angle form
    gt_rows = [(i, c, q) for i, lab in enumerate(labels) for c, q in lab]
    dt_rows = [(i, c, q, s) for i, pr in enumerate(preds) for c, q, s in pr]

    def xywhr(q: np.ndarray) -> list[float]:
        p = q.reshape(4, 2)
        e1, e2 = p[1] - p[0], p[2] - p[1]
        return [*p.mean(0), np.hypot(*e1), np.hypot(*e2), np.arctan2(e1[1], e1[0])]

    g = np.array([xywhr(q) for _, _, q in gt_rows])
    d = np.array([xywhr(q) for _, _, q, _ in dt_rows])
    gt = BoxTable.from_arrays([r[0] for r in gt_rows], [r[1] for r in gt_rows], np.c_[g[:, :2], g[:, :2] + 1])
    dt = BoxTable.from_arrays(
        [r[0] for r in dt_rows],
        [r[1] for r in dt_rows],
        np.c_[d[:, :2], d[:, :2] + 1],
        [r[3] for r in dt_rows],
    )
    want = evaluate_ultralytics(gt, dt, 4, "ultralytics", iou=obb_pair_iou(g, d))
    assert abs(got.summary["mAP50-95"] - want.map) < 1e-4  # (the files hold 6 decimals of each corner)
    assert got.summary["mAP50"] > 0.3


def test_yolo_obb_refuses_box_rows_and_supervision(tmp_path):
    from deteval.errors import ConfigError, ValidationError
    from deteval.run.yolo import evaluate_yolo_files

    write_obb_split(tmp_path, 2)
    with pytest.raises(ConfigError, match="oriented"):
        evaluate_yolo_files(tmp_path / "data.yaml", tmp_path / "pred", iou_type="segm", task="obb")
    with pytest.raises(ConfigError, match="supervision"):
        evaluate_yolo_files(tmp_path / "data.yaml", tmp_path / "pred", profile="supervision", task="obb")
    (tmp_path / "labels" / "val" / "im1.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    with pytest.raises(ValidationError, match=r"im1\.txt.*a box row"):
        evaluate_yolo_files(tmp_path / "data.yaml", tmp_path / "pred", task="obb")


@pytest.mark.parametrize("profile", ["ultralytics", "ultralytics-8.0"])
def test_yolo_obb_leaves_a_corrupt_image_out_under_ultralytics(tmp_path, profile, capsys):
    """Ultralytics' dataset check runs in every task: an OBB image that fails it is left out with its labels
    and predictions (the same numbers as the split without it), with the warning; under coco an error."""
    import shutil
    import warnings

    from deteval.cli import main
    from deteval.errors import DetevalError, DetevalWarning
    from deteval.run.yolo import evaluate_yolo_files

    a, b = tmp_path / "a", tmp_path / "b"
    write_obb_split(a, 6)
    shutil.copytree(a, b)
    for p in (b / "images" / "val" / "im2.png", b / "labels" / "val" / "im2.txt", b / "pred" / "im2.txt"):
        p.unlink()
    (a / "images" / "val" / "im2.png").write_bytes(b"")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = evaluate_yolo_files(a / "data.yaml", a / "pred", profile=profile, task="obb")
    want = evaluate_yolo_files(b / "data.yaml", b / "pred", profile=profile, task="obb")
    assert got.summary == want.summary and got.per_class == want.per_class and got.n_images == 3
    msgs = [str(x.message) for x in w if issubclass(x.category, DetevalWarning)]
    assert any("im2.png: ignoring corrupt image/label: not a readable image" in m for m in msgs)
    with pytest.raises(DetevalError, match="not a readable image"):
        evaluate_yolo_files(a / "data.yaml", a / "pred", profile="coco", task="obb")
    args = ["yolo", str(a / "data.yaml"), str(a / "pred"), "--task", "obb", "--profile", profile]
    assert main([*args, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["mAP50-95"] == want.summary["mAP50-95"]
    assert "im2.png: ignoring corrupt image/label" in out.err
