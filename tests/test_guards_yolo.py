"""Hostile YOLO inputs (data.yaml, label files, image folders, predictions.json, images): each gives one
``deteval: error:`` line naming the file, never a traceback, a hang or a silently different number."""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from _yolo_cases import png_header, write_image
from cli_errors import cli_error

from deteval.errors import DetevalError
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_yaml import read_data_yaml

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    root = tmp_path / "yolo"
    shutil.copytree(SAMPLE, root)
    return root


def _yaml(root: Path, text: str) -> Path:
    y = root / "data.yaml"
    y.write_text(text, encoding="utf-8")
    return y


# ---------------------------------------------------------------------------------------------- data.yaml
@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("val: images/val\nnc: 1e400\n", "must be an integer"),
        ("val: images/val\nnc: .inf\n", "must be an integer"),
        ("val: images/val\nnc: 100000000000\n", "'nc' 100000000000 is outside"),
        ("val: images/val\nnc: -1\n", "at least one class"),
        ("val: images/val\nnc: 0\n", "at least one class"),
        ("val: images/val\nnames:\n  1: a\n  '1': b\n  0: c\n", "both name class 1"),
        ("val: images/val\nnames: [a, [b]]\n", "is a list, not a name"),
        ("val: images/val\nnames: a b c\n", "'names' must be a list or dict"),
        ("val: [images/val\n", "YAML syntax error"),
        ("- val\n- names\n", "not a YAML mapping"),
        ("val: images/val\nnames: " + "[" * 5000 + "]" * 5000 + "\n", "nest"),
        ("path: 7\nval: images/val\nnames: [a]\n", "'path' must be a str"),
    ],
)
def test_data_yaml_refusals(sample: Path, capsys, text: str, piece: str) -> None:
    y = _yaml(sample, text)
    cli_error(capsys, ["yolo", str(y), str(sample / "predictions" / "labels")], "data.yaml", piece)


def test_data_yaml_duplicate_int_and_str_keys_are_not_merged(sample: Path) -> None:
    """Ultralytics' ``{int(k): v}`` would keep the later of ``1`` and ``'1'`` silently."""
    y = _yaml(sample, "val: images/val\nnames: {0: person, 1: car, '1': dog, 2: x}\n")
    with pytest.raises(DetevalError, match="keys 1 and '1' both name class 1"):
        load_yolo_dataset(y)


def test_data_yaml_forms_ultralytics_reads(sample: Path) -> None:
    """Anchors, block scalars, flow mappings and a top-level 'None' string read as PyYAML reads them."""
    y = _yaml(
        sample,
        "base: &b images/val\nval: *b\ntest: None\nnames:\n  0: 'person'\n  1: \"car\"\n  2: >-\n    dog\n"
        "download: |\n  import os\n",
    )
    d = read_data_yaml(y)
    assert d["val"] == "images/val" and d["test"] is None
    assert load_yolo_dataset(y).names == ["person", "car", "dog"]


def test_data_yaml_must_be_a_yaml_file(sample: Path) -> None:
    (sample / "data.txt").write_text("val: images/val\nnames: [a]\n")
    with pytest.raises(DetevalError, match=r"\.yaml or \.yml"):
        load_yolo_dataset(sample / "data.txt")


def test_path_resolution_is_named(tmp_path: Path, sample: Path, monkeypatch) -> None:
    """``path: .`` resolves against the current directory (Ultralytics): the error says so, and from where."""
    y = _yaml(sample, "path: .\nval: images/val\nnames: [person, car, dog]\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DetevalError, match=r"'path: \.' resolved against the current directory") as err:
        load_yolo_dataset(y)
    assert str(tmp_path) in str(err.value)
    monkeypatch.chdir(sample)
    assert load_yolo_dataset(y).n_images == 5
    y = _yaml(sample, "path: nowhere\nval: images/val\nnames: [person, car, dog]\n")
    with pytest.raises(DetevalError, match="resolved against the yaml's folder"):
        load_yolo_dataset(y)


def test_convert_round_trips_hostile_names(tmp_path: Path, capsys) -> None:
    """Names with quotes, backslashes and line breaks are written so that the yaml reader reads them back."""
    import json

    gt = json.loads(
        (Path(__file__).parent.parent / "data_samples" / "coco" / "instances_val.json").read_text()
    )
    gt["categories"][0]["name"] = 'a "quoted"\\ name\nwith a break: [x] # y'
    src = tmp_path / "gt.json"
    src.write_text(json.dumps(gt))
    from deteval.io.yolo_coco import coco_to_yolo

    y = coco_to_yolo(src, tmp_path / "out")
    assert read_data_yaml(y)["names"][0] == gt["categories"][0]["name"]
    gt["images"][0]["file_name"] = "a\nb.jpg"
    src.write_text(json.dumps(gt))
    cli_error(capsys, ["convert", str(src), "-o", str(tmp_path / "out2")], "line break")


def test_convert_output_faults(tmp_path: Path, capsys) -> None:
    src = Path(__file__).parent.parent / "data_samples" / "coco" / "instances_val.json"
    (tmp_path / "file").write_text("x")
    cli_error(capsys, ["convert", str(src), "-o", str(tmp_path / "file")], "not a folder")


@pytest.mark.parametrize("where", ["parent", "labels"])
def test_convert_into_a_read_only_folder(tmp_path: Path, read_only, capsys, where: str) -> None:
    """OUT inside a read-only folder, or an OUT whose labels/ is read-only: one clear error, nothing written."""
    src = Path(__file__).parent.parent / "data_samples" / "coco" / "instances_val.json"
    out = tmp_path / "ro" / "out" if where == "parent" else tmp_path / "out"
    locked = read_only(out.parent if where == "parent" else out / "labels")
    cli_error(capsys, ["convert", str(src), "-o", str(out)], "cannot")
    assert not any(locked.iterdir())


# ------------------------------------------------------------------------------------------ label files
def test_label_file_that_is_a_folder_or_dangling_link(sample: Path, capsys) -> None:
    lp = sample / "labels" / "val" / "street_04.txt"
    lp.unlink()
    lp.mkdir()
    cli_error(capsys, ["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels")], "a folder")
    lp.rmdir()
    lp.symlink_to(sample / "nowhere.txt")
    cli_error(capsys, ["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels")], "dangling")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("which", ["label", "prediction", "image"])
def test_a_fifo_is_refused_unopened(sample: Path, capsys, which: str) -> None:
    path = {
        "label": sample / "labels" / "val" / "street_04.txt",
        "prediction": sample / "predictions" / "labels" / "street_04.txt",
        "image": sample / "images" / "val" / "street_04.jpg",
    }[which]
    path.unlink()
    os.mkfifo(path)
    cli_error(capsys, ["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels")], "FIFO")


def test_dev_zero_as_a_label_file(sample: Path, capsys) -> None:
    lp = sample / "labels" / "val" / "street_04.txt"
    lp.unlink()
    lp.symlink_to("/dev/zero")
    cli_error(
        capsys,
        ["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels")],
        "character device",
    )


def test_symlink_loops_in_the_image_folder_end(sample: Path) -> None:
    """Two links to the folder itself: glob(**) would follow them until the path is too long."""
    val = sample / "images" / "val"
    (val / "loop1").symlink_to(val)
    (val / "loop2").symlink_to(val)
    ds = load_yolo_dataset(sample / "data.yaml")
    assert ds.n_images == 5


# ---------------------------------------------------------------------------------------------- images
def _left_out(capsys, sample: Path, *pieces: str) -> None:
    """Under the Ultralytics profiles the image is left out (with its labels and predictions), warned."""
    from deteval.cli import main

    assert main(["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels")]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for piece in ("000003.png: ignoring corrupt image/label", *pieces):
        assert piece in err, (piece, err)


def test_decompression_bomb_header(sample: Path, capsys) -> None:
    img = sample / "images" / "val" / "000003.png"
    png_header(img, 30000, 30000)
    cli_error(
        capsys,
        ["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels"), "--profile", "coco"],
        "000003.png",
        "pixels",
    )
    _left_out(capsys, sample, "pixels")


def test_not_an_image(sample: Path, capsys) -> None:
    (sample / "images" / "val" / "000003.png").write_text("not an image")
    cli_error(
        capsys,
        ["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels"), "--profile", "coco"],
        "000003.png",
        "not a readable image",
    )
    _left_out(capsys, sample, "not a readable image")


def test_image_size_reads_orientation(tmp_path: Path) -> None:
    from deteval.io.guards import image_size

    write_image(tmp_path / "a.jpg", 40, 30, orientation=6)
    assert image_size(tmp_path / "a.jpg") == (30, 40)
    assert image_size(tmp_path / "a.jpg", exif=False) == (40, 30)


# ------------------------------------------------------------------------------------- predictions.json
@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("[" * 100_000, "nested too deeply"),
        (
            '[{"image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2], "score": ' + "9" * 5000 + "}]",
            "5000 digits",
        ),
        (
            '[{"image_id": "street_04", "category_id": 1, "bbox": [1, 1, 2, 2], "score": 0.5, "score": 0.1}]',
            "duplicate key 'score'",
        ),
        ("", "empty file"),
    ],
)
def test_predictions_json_refusals(sample: Path, capsys, text: str, piece: str) -> None:
    p = sample / "predictions" / "predictions.json"
    p.write_text(text)
    cli_error(capsys, ["yolo", str(sample / "data.yaml"), str(p)], "predictions.json", piece)
    cli_error(
        capsys,
        ["explain", str(sample / "data.yaml"), str(p), "--from", "ultralytics", "--to", "coco"],
        "predictions.json",
        piece,
    )


def test_predictions_json_with_a_bom_reads(sample: Path) -> None:
    p = sample / "predictions" / "predictions.json"
    ds = load_yolo_dataset(sample / "data.yaml")
    plain = load_yolo_predictions(p, ds)
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    assert np.array_equal(load_yolo_predictions(p, ds).xyxy, plain.xyxy)


# --------------------------------------------------------------------------------------------- outputs
@pytest.mark.parametrize("flag", ["--output", "-o"])
def test_output_onto_an_input_is_refused(sample: Path, capsys, flag: str) -> None:
    y = sample / "data.yaml"
    before = y.read_bytes()
    cli_error(capsys, ["yolo", str(y), str(sample / "predictions" / "labels"), flag, str(y)], "is an input")
    assert y.read_bytes() == before


def test_csv_and_markdown_output_neutralise_names(sample: Path, capsys) -> None:
    from deteval.cli import main

    y = _yaml(
        sample, "val: images/val\nnames: [\"=cmd|' /C calc'!A0\", '<img src=x onerror=alert(1)>', 'a|b']\n"
    )
    assert main(["yolo", str(y), str(sample / "predictions" / "labels"), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "\n'=cmd|' /C calc'!A0," in out
    assert main(["yolo", str(y), str(sample / "predictions" / "labels"), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "<img" not in out and "&lt;img src=x onerror=alert(1)>" in out and "a\\|b" in out


def _png_with_exif(path: Path, before_data: bool) -> None:
    """A 40 x 30 PNG whose ``eXIf`` chunk (orientation 6) comes before or after its image data."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (40, 30), 128).save(buf, format="PNG")
    png, pos, chunks = buf.getvalue(), 8, []
    while pos < len(png):
        n = struct.unpack(">I", png[pos : pos + 4])[0]
        chunks.append((png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + n]))
        pos += 12 + n
    exif = Image.Exif()
    exif[274] = 6
    body = exif.tobytes()
    body = body[6:] if body.startswith(b"Exif\x00\x00") else body

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    out = b"\x89PNG\r\n\x1a\n"
    for kind, data in chunks:
        if kind == (b"IDAT" if before_data else b"IEND"):
            out += chunk(b"eXIf", body)
        out += chunk(kind, data)
    path.write_bytes(out)


def test_png_exif_read_from_the_header_as_ultralytics(tmp_path: Path, monkeypatch) -> None:
    """Ultralytics 8.4.190 (``Image.open``, ``verify()``, ``exif_size``) swaps for an ``eXIf`` chunk before the
    image data and not for one after it (its load after verify fails); no pixel is decoded here."""
    from PIL import PngImagePlugin

    from deteval.io.guards import image_size

    _png_with_exif(tmp_path / "before.png", True)
    _png_with_exif(tmp_path / "after.png", False)

    def no_decode(self, *a, **k):
        raise AssertionError("pixels decoded")

    monkeypatch.setattr(PngImagePlugin.PngImageFile, "load", no_decode)
    assert image_size(tmp_path / "before.png") == (30, 40)
    assert image_size(tmp_path / "after.png") == (40, 30)


def test_dropped_duplicates_are_warned_through_the_common_channel(sample: Path, capsys) -> None:
    from deteval.cli import main

    lp = sample / "labels" / "val" / "street_04.txt"
    lp.write_text(lp.read_text() + lp.read_text().splitlines()[0] + "\n")
    assert (
        main(["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels"), "--format", "json"])
        == 0
    )
    err = capsys.readouterr().err
    assert err == f"deteval: warning: {lp}: 1 duplicate labels removed (as Ultralytics does)\n"


def test_huge_class_number_is_not_printed_whole(sample: Path, capsys) -> None:
    lp = sample / "labels" / "val" / "street_04.txt"
    lp.write_text("1" + "0" * 300 + " 0.5 0.5 0.1 0.1\n")
    err = cli_error(
        capsys, ["yolo", str(sample / "data.yaml"), str(sample / "predictions" / "labels")], "1e+300"
    )
    assert len(err) < 300


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_read_listed_reads_as_read_regular(tmp_path: Path) -> None:
    """A file read as listed regular gives read_regular's bytes; whatever was put at its path since the
    listing (a FIFO, a folder, a link, nothing, a device) gives read_regular's bytes or error, bounded."""
    from deteval.io.guards import LISTED_READ, read_ends, read_listed, read_regular

    small, big, empty = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    small.write_bytes(b"0 0.5 0.5 0.1 0.1\n")
    big.write_bytes(b"1" * (LISTED_READ + 7))
    empty.write_bytes(b"")
    for p in (small, big, empty):
        assert read_listed(p, "label file") == read_regular(p, "label file") == p.read_bytes()
    assert read_listed(big, "image", limit=100) == b"1" * 100
    big.write_bytes(b"1" * 200 + b"END")
    for p in (small, big, empty):
        for limit in (8, 1 << 13):
            want = read_ends(p, "image", limit=limit, tail=4)
            assert read_ends(p, "image", limit=limit, tail=4, listed=True) == want
    assert read_ends(big, "image", limit=8, tail=4, listed=True) == (b"1" * 8, b"1END")
    fifo, link, folder = tmp_path / "f.txt", tmp_path / "l.txt", tmp_path / "d.txt"
    os.mkfifo(fifo)
    link.symlink_to(small)
    folder.mkdir()
    assert read_listed(link, "label file") == small.read_bytes()
    for p, kind in ((fifo, "a named pipe"), (folder, "a folder"), (tmp_path / "gone.txt", "no such file")):
        for limit in (None, 100):
            with pytest.raises(DetevalError, match=kind):
                read_listed(p, "label file", limit=limit)
        with pytest.raises(DetevalError, match=kind):
            read_ends(p, "image", limit=100, tail=4, listed=True)
    if os.path.exists("/dev/zero"):
        with pytest.raises(DetevalError, match="a character device"):
            read_listed("/dev/zero", "label file")
        with pytest.raises(DetevalError, match="a character device"):
            read_listed("/dev/null", "label file")
