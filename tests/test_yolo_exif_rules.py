"""Image sizes follow the EXIF rule of the Ultralytics version a profile reproduces: 8.4.174 and later swap
width and height for orientations 5–8 in every format (WebP and TIFF as OpenCV 5.1 decodes them), 8.4.173 and
earlier only for a JPEG with orientation 6 or 8. The sizes are those Ultralytics 8.4.190 (with OpenCV 5.1) and
8.4.173 give for the same files."""

from __future__ import annotations

from pathlib import Path

import pytest
from _yolo_cases import write_image

from deteval.io.yolo import for_exif_rule, load_yolo_dataset, load_yolo_predictions
from deteval.run.yolo import evaluate_yolo

#: (file, orientation) → (width, height) under ("swap-5-8", "jpeg-6-8"), for a 40 × 30 picture.
CASES = {
    ("a.jpg", 5): ((30, 40), (40, 30)),
    ("b.jpg", 6): ((30, 40), (30, 40)),
    ("c.jpg", 7): ((30, 40), (40, 30)),
    ("d.jpg", 8): ((30, 40), (30, 40)),
    ("e.png", 6): ((30, 40), (40, 30)),
    ("f.webp", 8): ((30, 40), (40, 30)),
    ("g.tif", 6): ((30, 40), (30, 40)),  # (pillow turns a TIFF's size itself, as OpenCV its pixels)
    ("h.jpg", 3): ((40, 30), (40, 30)),
}


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, Path]:
    pred = tmp_path / "pred"
    pred.mkdir()
    for name, orientation in CASES:
        write_image(tmp_path / "images" / "val" / name, 40, 30, orientation=orientation)
        stem = name.split(".")[0]
        (tmp_path / "labels" / "val").mkdir(parents=True, exist_ok=True)
        (tmp_path / "labels" / "val" / f"{stem}.txt").write_text("0 0.5 0.5 0.5 0.5\n")
        (pred / f"{stem}.txt").write_text("0 0.5 0.5 0.25 0.5 0.9\n")
    (tmp_path / "data.yaml").write_text("val: images/val\nnames: [a]\n")
    return tmp_path / "data.yaml", pred


def test_sizes_under_each_rule(dataset: tuple[Path, Path]) -> None:
    ds = load_yolo_dataset(dataset[0])
    names = [p.name for p in ds.images]
    old = ds.with_exif("jpeg-6-8")
    for (name, _), (new_size, old_size) in CASES.items():
        i = names.index(name)
        assert ds.image_size(i) == new_size and old.image_size(i) == old_size, name
    assert ds.exif == "swap-5-8" and ds.image_size(names.index("a.jpg")) == (30, 40)  # (the copy is apart)


def test_labels_and_txt_predictions_rescaled(dataset: tuple[Path, Path]) -> None:
    ds = load_yolo_dataset(dataset[0])
    preds = load_yolo_predictions(dataset[1], ds)
    old_ds, old_preds = for_exif_rule(ds, preds, "jpeg-6-8")
    i = [p.name for p in ds.images].index("a.jpg")
    assert ds.labels.xyxy[ds.labels.img == i].tolist() == [[7.5, 10.0, 22.5, 30.0]]
    assert old_ds.labels.xyxy[old_ds.labels.img == i].tolist() == [[10.0, 7.5, 30.0, 22.5]]
    assert preds.xyxy[preds.img == i].tolist() == [[11.25, 10.0, 18.75, 30.0]]
    assert old_preds.xyxy[old_preds.img == i].tolist() == [[15.0, 7.5, 25.0, 22.5]]


def test_profiles_use_their_rule(dataset: tuple[Path, Path]) -> None:
    """The same files: a different mAP where the rules give different sizes (the boxes' aspect changes)."""
    ds = load_yolo_dataset(dataset[0])
    preds = load_yolo_predictions(dataset[1], ds)
    new = evaluate_yolo(ds, preds, "ultralytics-8.4.176").summary["mAP50-95"]
    old = evaluate_yolo(ds, preds, "ultralytics-8.4.37").summary["mAP50-95"]
    by_hand_old = evaluate_yolo(*for_exif_rule(ds, preds, "jpeg-6-8"), "ultralytics-8.4.37").summary
    assert old == by_hand_old["mAP50-95"]
    assert new == evaluate_yolo(ds, preds, "ultralytics").summary["mAP50-95"]
    assert ds.exif == "swap-5-8"


def test_explain_walks_the_exif_rule(dataset: tuple[Path, Path]) -> None:
    """Between an old era and COCO the sizes step is shown with its count, and the steps add up."""
    from deteval.explain.yolo import explain

    ds = load_yolo_dataset(dataset[0], duplicates="drop")
    preds = load_yolo_predictions(dataset[1], ds)
    e = explain(ds, preds, "ultralytics-8.0", "coco").to_dict()
    first = e["steps"][0]
    assert (
        first["rule"].startswith("image sizes under the EXIF orientation") and first["count"] == 4
    )  # (a.jpg, c.jpg, e.png, f.webp)
    assert not any(s["rule"].startswith("residual") for s in e["steps"])
    total = sum(s["delta"]["mAP50-95"] for s in e["steps"])
    assert abs(e["from"]["mAP50-95"] + total - e["to"]["mAP50-95"]) < 1e-12
    same_rule = explain(ds, preds, "ultralytics", "coco").to_dict()
    assert not any(s["rule"].startswith("image sizes") for s in same_rule["steps"])
