"""Corrupt images of a YOLO split: left out, with their labels and predictions, under the Ultralytics profiles
(as Ultralytics' dataset check leaves them out), an error under coco and supervision where a size is needed."""

from __future__ import annotations

import io
import json
import shutil
import warnings
from pathlib import Path

import pytest
from _yolo_cases import random_dataset
from PIL import Image

from deteval.cli import main
from deteval.errors import DetevalError, DetevalWarning
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_images import image_check
from deteval.run.yolo import evaluate_yolo, evaluate_yolo_files


def _jpeg(w: int = 64, h: int = 48) -> bytes:
    buf = io.BytesIO()
    Image.effect_noise((w, h), 40).convert("RGB").save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _png(w: int = 64, h: int = 48) -> bytes:
    buf = io.BytesIO()
    Image.effect_noise((w, h), 40).save(buf, "PNG")
    return buf.getvalue()


def _gif() -> bytes:
    buf = io.BytesIO()
    Image.new("L", (64, 48), 7).save(buf, "GIF")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("data", "fault"),
    [
        (b"", "not a readable image"),
        (_jpeg()[:300], "not a readable image"),  # cut inside the header: pillow cannot open it
        (_jpeg(256, 256)[:4000], "image file is truncated"),  # cut inside the scan: pillow cannot decode it
        (_png()[:-40], "Truncated File Read"),  # cut inside the image data: pillow's verify fails
        (_jpeg(9, 48), "image size (48, 9) <10 pixels"),
        (_gif(), "invalid image format GIF"),
    ],
)
def test_image_check_faults(tmp_path: Path, data: bytes, fault: str) -> None:
    p = tmp_path / "x.jpg"
    p.write_bytes(data)
    _, got, note = image_check(p, "8.4")
    assert got is not None and fault in got
    assert note is None


def test_png_cut_after_its_data_is_pillows_verify(tmp_path: Path) -> None:
    png = _png()
    p = tmp_path / "x.png"
    p.write_bytes(png[:-12])  # the IEND chunk missing: pillow's verify reads past the end
    header, fault, _ = image_check(p, "8.4")
    assert header is not None and header[:3] == ("PNG", 64, 48)
    assert fault is not None
    p.write_bytes(png + b"trailing bytes")  # after IEND: pillow's verify stops at IEND, the image is good
    assert image_check(p, "8.4")[1:] == (None, None)


def test_jpeg_without_end_marker_that_decodes_is_kept_with_a_note(tmp_path: Path) -> None:
    p = tmp_path / "x.jpg"
    p.write_bytes(_jpeg() + b"\x00\x00")  # decodes whole; Ultralytics would rewrite it
    header, fault, note = image_check(p, "8.4")
    assert header is not None and header[:3] == ("JPEG", 64, 48)
    assert fault is None
    assert note is not None and "restores it and writes it back" in note
    p.write_bytes(_jpeg())
    assert image_check(p, "8.4") == (("JPEG", 64, 48, None), None, None)


def test_formats_per_era(tmp_path: Path) -> None:
    """A JPEG 2000 file (named .jpg): 8.0.239's IMG_FORMATS lacks it, 8.4.37's has it; WebP is in both."""
    for fmt, ok80 in (("JPEG2000", False), ("WEBP", True)):
        buf = io.BytesIO()
        Image.new("RGB", (32, 32), 3).save(buf, fmt)
        p = tmp_path / "x.jpg"
        p.write_bytes(buf.getvalue())
        assert image_check(p, "8.4")[1] is None
        assert (image_check(p, "8.0")[1] is None) == ok80
        if not ok80:
            assert image_check(p, "8.0")[1] == "invalid image format JPEG2000"


def _split_with_bad_image(root: Path, bad: bytes) -> tuple[Path, Path, Path, str]:
    """A random split with its first image replaced by ``bad`` bytes (its labels and predictions kept)."""
    data, pred, pj = random_dataset(root, 3, n_images=6)
    images = sorted((root / "images" / "val").iterdir())
    victim = images[1]  # (a numeric stem, "0001", with labels and predictions)
    victim.write_bytes(bad)
    return data, pred, pj, victim.stem


def _without(root: Path, stem: str, dest: Path) -> tuple[Path, Path]:
    """The same split with the image ``stem``, its labels and its predictions removed."""
    shutil.copytree(root, dest)
    for p in [*(dest / "images" / "val").glob(f"{stem}.*"), *(dest / "labels" / "val").glob(f"{stem}.txt"),
              *(dest / "pred" / "labels").glob(f"{stem}.txt")]:  # fmt: skip
        p.unlink()
    y = dest / "data.yaml"
    y.write_text(y.read_text().replace(str(root), str(dest)))
    return y, dest / "pred" / "labels"


@pytest.mark.parametrize("profile", ["ultralytics", "ultralytics-8.4.37", "ultralytics-8.0"])
def test_corrupt_image_left_out_with_labels_and_predictions(tmp_path: Path, profile: str) -> None:
    root = tmp_path / "a"
    root.mkdir()
    data, pred, _, stem = _split_with_bad_image(root, b"")
    y2, pred2 = _without(root, stem, tmp_path / "b")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = evaluate_yolo_files(data, pred, profile=profile)
    expected = evaluate_yolo_files(y2, pred2, profile=profile)
    assert r.summary == expected.summary
    assert r.per_class == expected.per_class
    assert r.n_images == 5 and r.instances == expected.instances
    msgs = [str(x.message) for x in w if issubclass(x.category, DetevalWarning)]
    assert any(f"{stem}.png: ignoring corrupt image/label: not a readable image" in m for m in msgs)
    assert any("1 prediction file(s) of images left out as corrupt" in m for m in msgs)
    assert any("ignoring corrupt image/label" in m for m in r.warnings)


def test_corrupt_image_json_predictions_left_out(tmp_path: Path) -> None:
    data, _, pj, stem = _split_with_bad_image(tmp_path, _jpeg(256, 256)[:4000])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DetevalWarning)
        ds = load_yolo_dataset(data, duplicates="drop", check_images="8.4")
        preds = load_yolo_predictions(pj, ds)
    assert [p.stem for p in ds.dropped_images] == [stem]
    n_all = len(json.loads(pj.read_text()))
    n_bad = sum(1 for r in json.loads(pj.read_text()) if r["image_id"] == int(stem))
    assert n_bad > 0 and len(preds) == n_all - n_bad
    assert any("prediction(s) of images left out as corrupt" in m for m in ds.warnings)
    assert evaluate_yolo(ds, preds).n_images == 5


def test_corrupt_image_under_coco_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    data, pred, _, stem = _split_with_bad_image(tmp_path, b"")
    with pytest.raises(DetevalError, match="not a readable image"):
        evaluate_yolo_files(data, pred, profile="coco")
    assert main(["yolo", str(data), str(pred), "--profile", "supervision"]) == 2
    assert f"{stem}.png" in capsys.readouterr().err


def test_cli_prints_the_warning(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data, pred, _, stem = _split_with_bad_image(tmp_path, _gif())
    assert main(["yolo", str(data), str(pred), "--format", "json"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert doc["images"] == 5
    assert f"{stem}.png: ignoring corrupt image/label: invalid image format GIF" in out.err
