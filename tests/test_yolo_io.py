"""The YOLO dataset and prediction readers: data.yaml forms, Ultralytics' file rules, and bad input."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from _yolo_cases import write_image

from deteval.cli import main
from deteval.errors import DetevalError, DetevalWarning
from deteval.io.guards import image_size
from deteval.io.yolo import label_path, load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_yaml import read_data_yaml as read_yaml_subset


def _dataset(root: Path, labels: dict[str, str], yaml: str | None = None, size=(100, 50)) -> Path:
    for stem, text in labels.items():
        write_image(root / "images" / "val" / f"{stem}.jpg", *size)
        if text is not None:
            (root / "labels" / "val").mkdir(parents=True, exist_ok=True)
            (root / "labels" / "val" / f"{stem}.txt").write_text(text)
    y = root / "data.yaml"
    y.write_text(yaml or "val: images/val\nnames: [a, b, c]\n")
    return y


def test_yaml_forms(tmp_path: Path) -> None:
    y = tmp_path / "d.yaml"
    y.write_text(
        "# comment\npath: ../x  # root\ntrain: [a, 'b c']\nval:\n  - v1\n  - v2\nnames:\n  0: person\n  1: 'bi cycle'\n"
        "nc: 2\ndownload: |\n  import os\n  os.system('x: [y')\nroboflow:\n  workspace: w\n  deep:\n    x: 1\n"
    )
    d = read_yaml_subset(y, {"path", "train", "val", "names", "nc", "download"} - {"download"})
    assert d == {
        "path": "../x",
        "train": ["a", "b c"],
        "val": ["v1", "v2"],
        "names": {0: "person", 1: "bi cycle"},
        "nc": 2,
    }


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    """PyYAML reads nested values (Ultralytics does); a syntax error names PyYAML's line."""
    y = tmp_path / "d.yaml"
    y.write_text("val: images\nnames: [a, [b]]\n")
    assert read_yaml_subset(y, {"val", "names"}) == {"val": "images", "names": ["a", ["b"]]}
    y.write_text("val: images\nnames: [a, b\nnc: 2\n")
    with pytest.raises(DetevalError, match=r"d.yaml: line \d+: YAML syntax error"):
        read_yaml_subset(y, {"val", "names"})


def test_label_path_rule() -> None:
    p = Path("/d/images/x/images/val/a.b.jpg")
    assert label_path(p) == Path("/d/images/x/labels/val/a.b.txt")
    assert label_path(Path("/d/imgs/a.png")) == Path("/d/imgs/a.txt")


def test_images_sorted_and_missing_label_files(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"b": "0 0.5 0.5 0.2 0.2\n", "a": None, "c": ""})
    (tmp_path / "images" / "val" / "notes.txt").write_text("not an image")
    ds = load_yolo_dataset(y)
    assert [p.name for p in ds.images] == ["a.jpg", "b.jpg", "c.jpg"]
    assert ds.labels.img.tolist() == [1]
    assert ds.labels.xyxy.tolist() == [[40.0, 20.0, 60.0, 30.0]]


def test_image_list_file_and_names_dict(tmp_path: Path) -> None:
    _dataset(tmp_path, {"a": "1 0.5 0.5 0.2 0.2\n", "b": ""})
    (tmp_path / "val.txt").write_text("./images/val/b.jpg\n./images/val/a.jpg\n")
    y = tmp_path / "data.yaml"
    y.write_text("train: val.txt\nvalidation: val.txt\nnames:\n  0: x\n  1: y\n")
    ds = load_yolo_dataset(y)
    assert ds.names == ["x", "y"] and [p.name for p in ds.images] == ["a.jpg", "b.jpg"]
    assert ds.labels.cls.tolist() == [1]


def test_polygon_rows_give_their_extent(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"a": "2 0.1 0.2 0.5 0.2 0.3 0.8\n"})
    ds = load_yolo_dataset(y)
    assert np.allclose(ds.labels.xyxy, [[10.0, 10.0, 50.0, 40.0]], atol=1e-12, rtol=0)
    assert ds.labels.polygons is not None and len(ds.labels.polygons[0]) == 6


def test_exif_orientation_swaps_the_size(tmp_path: Path) -> None:
    write_image(tmp_path / "r.jpg", 40, 30, orientation=6)
    write_image(tmp_path / "n.jpg", 40, 30, orientation=1)
    assert image_size(tmp_path / "r.jpg") == (30, 40)
    assert image_size(tmp_path / "n.jpg") == (40, 30)


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2\n", 2, "4 columns"),
        ("0 0.5 0.5 0.2 0.2 0.9\n", 1, "6 columns"),
        ("0 0.5 abc 0.2 0.2\n", 1, "'abc' is not a number"),
        ("1.5 0.5 0.5 0.2 0.2\n", 1, "not a non-negative integer"),
        ("3 0.5 0.5 0.2 0.2\n", 1, "not below nc=3"),
        ("0 0.5 0.5 1.2 0.2\n", 1, "above 1.01"),
        ("0 -0.02 0.5 0.2 0.2\n", 1, "negative coordinate"),
        ("0 0.5 0.5 nan 0.2\n", 1, "NaN"),
        ("0 0.5 0.5 0.2 0.2\n\n1 0.1 0.1 0.2 0.1 0.3 0.3\n", 3, "mixes box rows and polygon rows"),
        ("0 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2\n", 3, "exact duplicate of line 1"),
    ],
)
def test_bad_label_rows(tmp_path: Path, text: str, line: int, reason: str) -> None:
    y = _dataset(tmp_path, {"a": text})
    with pytest.raises(DetevalError) as exc:
        load_yolo_dataset(y)
    msg = str(exc.value)
    assert f"a.txt: line {line}: " in msg and reason in msg


def test_tolerances_ultralytics_accepts(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"a": "0 1.005 0.5 0.2 0.2\n0 -0.005 0.5 0.2 0.2\n"})
    assert len(load_yolo_dataset(y).labels) == 2


def test_duplicates_dropped_with_a_warning_in_numpy_unique_order(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"a": "1 0.5 0.5 0.2 0.2\n0 0.3 0.3 0.1 0.1\n1 0.5 0.5 0.2 0.2\n"})
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ds = load_yolo_dataset(y, duplicates="drop")
    assert any(
        issubclass(x.category, DetevalWarning) and "1 duplicate labels removed" in str(x.message) for x in w
    )
    assert ds.labels.cls.tolist() == [0, 1]  # np.unique sorts the rows, as Ultralytics' labels end up
    assert ds.duplicates_dropped == 1


def test_pose_dataset_refused(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"a": ""}, yaml="val: images/val\nkpt_shape: [17, 3]\nnames: [p]\n")
    with pytest.raises(DetevalError, match="pose dataset"):
        load_yolo_dataset(y)


def test_names_and_nc_must_agree(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"a": ""}, yaml="val: images/val\nnc: 2\nnames: [a, b, c]\n")
    with pytest.raises(DetevalError, match="'names' length 3 and 'nc: 2' must match"):
        load_yolo_dataset(y)


def test_prediction_rows_need_a_confidence(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"a": "0 0.5 0.5 0.2 0.2\n"})
    ds = load_yolo_dataset(y)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "a.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    with pytest.raises(DetevalError, match=r"a.txt: line 1: 5 columns: a prediction row needs a confidence"):
        load_yolo_predictions(pred, ds)
    (pred / "a.txt").write_text("0 0.5 0.5 0.2 0.2 0.9\n")
    (pred / "zzz.txt").write_text("0 0.5 0.5 0.2 0.2 0.9\n")
    with pytest.raises(DetevalError, match="no image with the stem 'zzz'"):
        load_yolo_predictions(pred, ds)


def test_json_prediction_ids(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"0007": "0 0.5 0.5 0.2 0.2\n", "b": ""})
    ds = load_yolo_dataset(y)
    pj = tmp_path / "p.json"
    pj.write_text(
        '[{"image_id": 7, "category_id": 1, "bbox": [40, 20, 20, 10], "score": 0.5},'
        ' {"image_id": "b", "category_id": 3, "bbox": [0, 0, 1, 1], "score": 0.4}]'
    )
    p = load_yolo_predictions(pj, ds)
    assert p.img.tolist() == [0, 1] and p.cls.tolist() == [0, 2]
    pj.write_text('[{"image_id": 7, "category_id": 4, "bbox": [40, 20, 20, 10], "score": 0.5}]')
    with pytest.raises(DetevalError, match=r"p.json: record 0: category_id 4 is not class \+ 1 in 1..3"):
        load_yolo_predictions(pj, ds)


def test_cli_bad_row_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    y = _dataset(tmp_path, {"a": "0 0.5 0.5 0.2 x\n"})
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "a.txt").write_text("0 0.5 0.5 0.2 0.2 0.9\n")
    assert main(["yolo", str(y), str(pred)]) == 2
    assert "a.txt: line 1: 'x' is not a number" in capsys.readouterr().err


def test_bom_crlf_and_blank_lines_read_as_the_plain_file(tmp_path: Path) -> None:
    plain = _dataset(tmp_path / "a", {"a": "0 0.5 0.5 0.2 0.2\n1 0.3 0.3 0.1 0.1\n"})
    odd = _dataset(tmp_path / "b", {"a": "\ufeff0 0.5 0.5 0.2 0.2\r\n\r\n1\t0.3  0.3 0.1 0.1\r\n"})
    a, b = load_yolo_dataset(plain).labels, load_yolo_dataset(odd).labels
    assert a.cls.tolist() == b.cls.tolist() and a.xyxy.tolist() == b.xyxy.tolist()


def test_split_paths_relative_to_the_root_and_the_dotdot_retry(tmp_path: Path) -> None:
    _dataset(tmp_path / "ds", {"a": "0 0.5 0.5 0.2 0.2\n"})
    y = tmp_path / "ds" / "data.yaml"
    y.write_text("train: ../images/val\nval: ../images/val\nnames: [a, b, c]\n")  # Roboflow's layout
    assert len(load_yolo_dataset(y).labels) == 1
    (tmp_path / "elsewhere").mkdir()
    y2 = tmp_path / "elsewhere" / "d.yaml"
    y2.write_text(f"path: {tmp_path / 'ds'}\nval: images/val\nnames: [a, b, c]\n")
    assert len(load_yolo_dataset(y2).labels) == 1
    y2.write_text(
        "path: ../ds\nval: images/val\nnames: [a, b, c]\n"
    )  # relative to the yaml (no such dir in cwd)
    assert len(load_yolo_dataset(y2).labels) == 1


def test_listed_image_missing_and_underscore_numbers(tmp_path: Path) -> None:
    y = _dataset(tmp_path, {"a": "0 0.5 0.5 0.2 0.2\n"})
    (tmp_path / "val.txt").write_text("./images/val/a.jpg\n./images/val/gone.jpg\n")
    y.write_text("val: val.txt\nnames: [a, b, c]\n")
    with pytest.raises(DetevalError, match=r"val.txt: line 2: the listed image .*gone.jpg' does not exist"):
        load_yolo_dataset(y)
    y.write_text("val: images/val\nnames: [a, b, c]\n")
    (tmp_path / "labels" / "val" / "a.txt").write_text("0 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2 0_2\n")
    with pytest.raises(DetevalError, match=r"a.txt: line 2: '0_2' is not a number"):
        load_yolo_dataset(y)


def test_coco_dataset_detection_uses_the_resolved_path(tmp_path: Path) -> None:
    root = tmp_path / "coco"
    write_image(root / "images" / "val2017" / "000000000139.jpg", 64, 48)
    (root / "val2017.txt").write_text("./images/val2017/000000000139.jpg\n")
    (root / "coco.yaml").write_text(f"path: {root}\nval: val2017.txt\nnc: 80\n")
    ds = load_yolo_dataset(root / "coco.yaml")
    assert ds.is_coco
    pj = tmp_path / "p.json"
    pj.write_text('[{"image_id": 139, "category_id": 90, "bbox": [1, 1, 5, 5], "score": 0.5}]')
    assert load_yolo_predictions(pj, ds).cls.tolist() == [79]  # COCO-91 id 90 = toothbrush, class 79


def test_txt_files_and_stems_are_pathlibs(tmp_path: Path) -> None:
    from deteval.io.yolo import name_stem, txt_entries

    for name in ("b.txt", "a.txt", ".txt", ".hidden.txt", "B.txt", "a.TXT", "x.txt.bak", "10.txt", "9.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "d.txt").mkdir()
    got = [Path(f) for f in txt_entries(tmp_path)[0]]
    assert got == sorted(tmp_path.glob("*.txt"))
    assert [p.name for p in got] == [
        ".hidden.txt",
        ".txt",
        "10.txt",
        "9.txt",
        "B.txt",
        "a.txt",
        "b.txt",
        "d.txt",
    ]
    for name in ("a.txt", ".txt", "a.", ".a.b", "a.b.c", "a", "..", "x..txt", ".hidden"):
        assert name_stem(name) == Path(name).stem


def test_path_strings_are_those_of_pathlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The readers keep image and prediction paths as strings: each must be ``str`` of its Path."""
    from deteval.io.yolo import child_path, file_name, list_image_files, txt_entries

    for folder in (".", "/", "a", "a/b", "a/b/", "./a", "/a//b/", "a/./b"):
        for name in ("x.txt", ".x.txt", "x"):
            assert child_path(Path(folder), name) == str(Path(folder) / name)
            assert file_name(str(Path(folder) / name)) == Path(folder, name).name
    monkeypatch.chdir(tmp_path)
    (tmp_path / "images" / "sub").mkdir(parents=True)
    for name in ("b.jpg", "a.png", "sub/c.jpg", "sub/d.txt"):
        (tmp_path / "images" / name).write_bytes(b"")
    (tmp_path / "list.txt").write_text(
        "./images//b.jpg\nimages/./sub/c.jpg\n" + str(tmp_path / "images/a.png")
    )
    got = list_image_files([tmp_path / "images", tmp_path / "list.txt"], "the split")
    old = sorted(str(tmp_path / "images" / n) for n in ("b.jpg", "a.png", "sub/c.jpg")) + [
        str(tmp_path / "images/a.png"),
        "images/./sub/c.jpg",
        str(tmp_path) + "/images//b.jpg",
    ]
    assert got == [str(Path(x)) for x in sorted(old)]
    assert all("//" not in x and "/./" not in x for x in got)
    assert txt_entries(Path("."))[0] == [str(p) for p in sorted(Path(".").glob("*.txt"))] == ["list.txt"]
