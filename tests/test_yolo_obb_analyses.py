"""``deteval yolo --task obb``: the analyses, ``--html``, ``--plots`` and the statistics of oriented boxes.

The analyses of the coco profile match with the protocol's polygon IoU: on axis-aligned boxes written as
quadrilaterals they give what the detect task's analyses give on the same boxes (which the tidecv and
pycocotools tests prove), and on crossed thin boxes, whose extents coincide, they see the polygons. The TIDE
AP is the profile's AP50. The statistics resample with each profile's kernel (ProbIoU under the Ultralytics
eras). What a profile does not define is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _obb_cases import random_obb_split
from _yolo_cases import random_dataset, write_image

from deteval.cli import main
from deteval.detection.ultralytics import get_rules
from deteval.io.yolo import for_exif_rule
from deteval.io.yolo_obb import load_yolo_obb
from deteval.run.yolo import evaluate_yolo, probiou_pairs
from deteval.stats.ultralytics import UltralyticsUnits
from deteval.tables.quads import obb_quads

ANALYSES = ["--errors", "--confusion", "--operating-points", "--calibration", "--worst-images", "5"]


def _json(args: list[str], out: Path) -> dict:
    assert main([*args, "--format", "json", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def _as_quads(root: Path) -> None:
    """Rewrite every ``cls xc yc w h [conf]`` row under ``root`` (labels and predictions) as the rectangle's
    four corners, in place: the same boxes as a YOLO-OBB dataset."""
    for f in [*root.glob("labels/val/*.txt"), *root.glob("pred/labels/*.txt")]:
        rows = []
        for line in f.read_text().splitlines():
            v = line.split()
            xc, yc, w, h = (float(x) for x in v[1:5])
            x1, y1, x2, y2 = xc - w / 2, yc - h / 2, xc + w / 2, yc + h / 2
            corners = (x1, y1, x2, y1, x2, y2, x1, y2)
            rows.append(" ".join([v[0], *(repr(c) for c in corners), *v[5:]]) + "\n")
        f.write_text("".join(rows))


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(4))
def test_axis_aligned_quads_analyse_as_the_boxes_do(tmp_path: Path, seed: int) -> None:
    boxes, quads = tmp_path / "boxes", tmp_path / "quads"
    for root in (boxes, quads):
        root.mkdir()
        random_dataset(root, 40 + seed)
    _as_quads(quads)
    box = _json(["yolo", str(boxes / "data.yaml"), str(boxes / "pred" / "labels"), "--profile", "coco", *ANALYSES],
                tmp_path / "b.json")  # fmt: skip
    obb = _json(["yolo", str(quads / "data.yaml"), str(quads / "pred" / "labels"), "--task", "obb", "--profile",
                 "coco", *ANALYSES], tmp_path / "q.json")  # fmt: skip
    assert obb["iou_type"] == "obb" and box["iou_type"] == "bbox"
    assert obb["mAP50-95"] == pytest.approx(box["mAP50-95"], abs=1e-12, rel=0)
    e_box, e_obb = box["errors"], obb["errors"]
    assert e_obb["counts"] == e_box["counts"] and sum(e_obb["counts"].values()) > 0
    for part in ("main", "special"):
        assert e_obb[part] == pytest.approx(e_box[part], abs=1e-12, rel=0)
    assert e_obb["ap"] == pytest.approx(obb["AP50"], abs=1e-12, rel=0)  # TIDE's AP is the profile's AP50
    assert obb["confusion"]["matrix"] == box["confusion"]["matrix"]
    assert obb["operating_points"] == box["operating_points"]
    assert obb["calibration"] == box["calibration"]
    assert obb["images"] == box["images"]


def _crossed(root: Path) -> tuple[Path, Path]:
    """One image: a thin label at +45° and a thin detection at −45° on the same centre (their extents are the
    same square: box IoU 1, polygon IoU about 0.05), and a second detection on the label itself."""
    write_image(root / "images" / "val" / "a.png", 200, 200)
    (root / "labels" / "val").mkdir(parents=True)
    (root / "pred").mkdir()
    (root / "data.yaml").write_text("val: images/val\nnames: [rod, other]\n")

    def row(angle: float, conf: str = "") -> str:
        q = obb_quads(np.array([[100.0, 100.0, 120.0, 6.0, angle]]))[0, :8] / 200.0
        return "0 " + " ".join(repr(float(v)) for v in q) + conf + "\n"

    (root / "labels" / "val" / "a.txt").write_text(row(np.pi / 4))
    (root / "pred" / "a.txt").write_text(row(-np.pi / 4, " 0.9") + row(np.pi / 4, " 0.5"))
    return root / "data.yaml", root / "pred"


def test_the_analyses_see_the_polygons(tmp_path: Path) -> None:
    data, pred = _crossed(tmp_path)
    got = _json(
        ["yolo", str(data), str(pred), "--task", "obb", "--profile", "coco", *ANALYSES], tmp_path / "o.json"
    )
    # the crossed detection is a background error (its polygon IoU, about 0.05, is under the background IoU
    # 0.1; by the extents it would be a true positive), the aligned one a true positive
    assert got["errors"]["counts"]["bkg"] == 1 and got["errors"]["counts"]["loc"] == 0
    assert got["confusion"]["matrix"] == [[1, 0, 0], [0, 0, 0], [1, 0, 0]]
    assert got["operating_points"]["per_class"]["rod"]["tp"] == 1
    assert got["images"]["worst"][0]["fp"] == 1


@pytest.mark.slow
def test_html_images_and_plots_are_written(tmp_path: Path) -> None:
    data, pred = random_obb_split(tmp_path / "split", 7)
    html, pics, plots = tmp_path / "r.html", tmp_path / "pics", tmp_path / "plots"
    args = ["yolo", str(data), str(pred), "--task", "obb", "--profile", "coco", "--html", str(html)]
    assert main([*args, "--images", str(pics), "--plots", str(plots), "-o", str(tmp_path / "t.txt")]) == 0
    page = html.read_text()
    for section in (
        "error breakdown",
        "Confusion matrix",
        "Thresholds and calibration",
        "Worst images",
        "<img",
    ):
        assert section in page, section
    assert len(list(pics.glob("*.png"))) >= 1
    assert sorted(p.name for p in plots.glob("*.png")) == sorted(
        ["BoxF1_curve.png", "BoxPR_curve.png", "BoxP_curve.png", "BoxR_curve.png", "confusion_matrix.png",
         "confusion_matrix_normalized.png"]
    )  # fmt: skip
    # --plots under an Ultralytics era (its ProbIoU curves) too
    assert main(["yolo", str(data), str(pred), "--task", "obb", "--plots", str(tmp_path / "p2"), "-o",
                 str(tmp_path / "u.txt")]) == 0  # fmt: skip
    assert len(list((tmp_path / "p2").glob("*.png"))) == 6


@pytest.mark.parametrize("profile", ["coco", "ultralytics", "ultralytics-8.0"])
def test_statistics_resample_the_profile_numbers(tmp_path: Path, profile: str) -> None:
    data, pred = random_obb_split(tmp_path / "split", 11)
    plain = _json(["yolo", str(data), str(pred), "--task", "obb", "--profile", profile], tmp_path / "p.json")
    got = _json(["yolo", str(data), str(pred), "--task", "obb", "--profile", profile, "--ci", "0.9", "--bootstrap",
                 "40", "--seed", "3", "--compare-to", str(pred)], tmp_path / "s.json")  # fmt: skip
    assert got["mAP50-95"] == plain["mAP50-95"]
    key = "AP" if profile == "coco" else "mAP50-95"  # (pycocotools' names under coco)
    lo, hi = got["ci"][key]
    assert lo <= plain["mAP50-95"] <= hi and lo < hi
    row = got["comparison"][key]
    assert row["a"] == row["b"] == plain["mAP50-95"]
    assert row["delta"] == 0.0  # (the same predictions: every resample gives both the same number)


def test_ultralytics_units_match_with_probiou(tmp_path: Path) -> None:
    data, pred = random_obb_split(tmp_path, 13)
    ds, preds, _, _ = load_yolo_obb(data, pred, duplicates="drop")
    for profile in ("ultralytics-8.0", "ultralytics"):
        sized, sp = for_exif_rule(ds, preds, get_rules(profile).exif)
        units = UltralyticsUnits(
            sized.labels, [sp], ds.n_images, ds.names, profile, ious=[probiou_pairs(sized, sp)]
        )
        point = units.metric()(np.ones((1, ds.n_images), dtype=np.int64))[0]
        want = evaluate_yolo(ds, preds, profile, iou_type="obb").summary
        assert float(point[0]) == want["mAP50-95"] and float(point[1]) == want["mAP50"]
        boxes = UltralyticsUnits(sized.labels, [sp], ds.n_images, ds.names, profile)  # (the extents' box IoU)
        assert float(boxes.metric()(np.ones((1, ds.n_images), dtype=np.int64))[0, 0]) != want["mAP50-95"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--errors"], "give --profile coco (ultralytics defines none)"),
        (["--profile", "dota_devkit", "--html", "x.html"], "give --profile coco (dota_devkit defines none)"),
        (["--profile", "dota_devkit", "--ci", "0.95"], "not dota_devkit"),
        (["--profile", "coco", "--errors", "--errors-compat", "tide"], "axis-aligned boxes only"),
        (["--profile", "supervision"], "not supervision"),
        (["--iou-type", "segm"], "--task obb scores oriented boxes"),
    ],
)
def test_refusals_are_one_line(
    tmp_path: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data, pred = random_obb_split(tmp_path, 2)
    assert main(["yolo", str(data), str(pred), "--task", "obb", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_coco_obb_json_analyses_use_the_polygon_iou(tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parent.parent / "data_samples" / "obb" / "coco"
    args = ["coco", str(sample / "gt.json"), str(sample / "results.json"), "--iou-type", "obb"]
    got = _json([*args, "--errors", "--confusion", "--worst-images", "3"], tmp_path / "c.json")
    # the protocol's AP50 (crowds and all), which the TIDE decomposition starts from
    assert got["errors"]["ap"] == pytest.approx(got["stats"][1], abs=1e-12, rel=0)
    assert sum(got["errors"]["counts"].values()) > 0
    m = np.asarray(got["confusion"]["matrix"])
    assert m.shape == (3, 3) and np.trace(m) > 0
    assert got["images"]["worst"]
