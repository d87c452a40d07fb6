"""The bundled YOLO sample, the CLI outputs, and YOLO ↔ COCO conversion."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from deteval.cli import main
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.run.yolo import evaluate_yolo

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"
DATA, TXT, JSON = (
    SAMPLE / "data.yaml",
    SAMPLE / "predictions" / "labels",
    SAMPLE / "predictions" / "predictions.json",
)


def test_sample_reads_as_ultralytics_would() -> None:
    ds = load_yolo_dataset(DATA)
    assert [p.name for p in ds.images] == [
        "000001.jpg",
        "000002.jpg",
        "000003.png",
        "street_04.jpg",
        "street_05.jpg",
    ]
    assert ds.image_size(1) == (480, 640)  # EXIF orientation 6: stored 640×480, seen 480×640
    assert ds.labels.polygons is not None and sum(p is not None for p in ds.labels.polygons) == 2


def test_txt_and_predictions_json_agree_to_their_rounding() -> None:
    """The txt files hold %g (6 digits), the JSON 3 decimals: the scores differ only by that rounding."""
    ds = load_yolo_dataset(DATA)
    a = evaluate_yolo(ds, load_yolo_predictions(TXT, ds), "coco").summary
    b = evaluate_yolo(ds, load_yolo_predictions(JSON, ds), "coco").summary
    assert a == pytest.approx(b, abs=2e-3)


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "table"])
def test_cli_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["yolo", str(DATA), str(TXT), "--profile", "ultralytics", "--format", fmt]) == 0
    out = capsys.readouterr().out
    ds = load_yolo_dataset(DATA, duplicates="drop")
    want = evaluate_yolo(ds, load_yolo_predictions(TXT, ds), "ultralytics")
    if fmt == "json":
        got = json.loads(out)  # the common result document: the summary fields at the top level
        assert got["protocol"] == "yolo" and {k: got[k] for k in want.summary} == want.summary
        assert list(got["per_class"]) == ["person", "car", "dog"]
        assert set(got["per_class"]["person"]) >= {"AP50", "AP50-95", "P", "R", "images", "instances"}
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows[0]["class"] == "all" and float(rows[0]["AP50-95"]) == want.summary["mAP50-95"]
    else:
        assert "person" in out and f"{want.summary['mAP50']:.3g}" in out


def test_coco_json_has_the_twelve_stats(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["yolo", str(DATA), str(TXT), "--profile", "coco", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    stats = [
        got[n]
        for n in ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
    ]
    assert len(stats) == 12 and stats[0] == got["mAP50-95"]


def test_convert_to_coco_then_deteval_coco(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gt, res = tmp_path / "gt.json", tmp_path / "res.json"
    assert (
        main(["convert", str(DATA), "-o", str(gt), "--predictions", str(TXT), "--predictions-out", str(res)])
        == 0
    )
    assert main(["coco", str(gt), str(res), "--format", "json"]) == 0
    stats = json.loads(capsys.readouterr().out)["stats"]
    ds = load_yolo_dataset(DATA)
    want = evaluate_yolo(ds, load_yolo_predictions(TXT, ds), "coco")
    data = json.loads(gt.read_text())
    assert [im["file_name"] for im in data["images"]][1] == "images/val/000002.jpg"
    assert data["images"][1]["width"] == 480
    assert stats == want.stats  # the converted files give the coco profile's numbers, bit for bit


def test_convert_coco_to_yolo_round_trip(tmp_path: Path) -> None:
    gt = tmp_path / "gt.json"
    assert main(["convert", str(DATA), "-o", str(gt)]) == 0
    out = tmp_path / "yolo"
    assert main(["convert", str(gt), "-o", str(out)]) == 0
    (out / "images").mkdir()
    for p in (SAMPLE / "images" / "val").iterdir():
        (out / "images" / p.name).write_bytes(p.read_bytes())
    back = load_yolo_dataset(out / "data.yaml")
    ds = load_yolo_dataset(DATA)
    assert back.names == ds.names
    assert back.labels.cls.tolist() == ds.labels.cls.tolist()
    assert back.labels.xyxy == pytest.approx(ds.labels.xyxy, abs=1e-9)


def test_docs_explain_outputs_are_current(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/yolo.md shows `$ deteval explain …` runs on the sample: they print exactly what is shown."""
    import re
    import shlex

    root = SAMPLE.parent.parent
    monkeypatch.chdir(root)
    blocks = re.findall(
        r"```\n\$ (deteval [^\n]+)\n(.*?)```", (root / "docs" / "yolo.md").read_text(), flags=re.S
    )
    assert len(blocks) == 2
    for command, shown in blocks:
        assert main(shlex.split(command)[1:]) == 0
        assert capsys.readouterr().out == shown


def test_a_predict_run_folder_means_its_labels(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["yolo", str(DATA), str(SAMPLE / "predictions"), "--format", "json"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["yolo", str(DATA), str(TXT), "--format", "json"]) == 0
    assert a == json.loads(capsys.readouterr().out)


def test_api_docstring_example(monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest

    import deteval.run.yolo as mod

    monkeypatch.chdir(SAMPLE.parent.parent)
    result = doctest.testmod(mod, raise_on_error=False)
    assert result.attempted >= 2 and result.failed == 0


def test_converted_results_read_back_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gt, res = tmp_path / "gt.json", tmp_path / "res.json"
    assert (
        main(["convert", str(DATA), "-o", str(gt), "--predictions", str(TXT), "--predictions-out", str(res)])
        == 0
    )
    capsys.readouterr()
    for profile in ("coco", "ultralytics"):
        assert main(["yolo", str(DATA), str(res), "--profile", profile, "--format", "json"]) == 0
        a = json.loads(capsys.readouterr().out)
        assert main(["yolo", str(DATA), str(TXT), "--profile", profile, "--format", "json"]) == 0
        assert a == json.loads(capsys.readouterr().out)


def test_numeric_stems_become_coco_ids(tmp_path: Path) -> None:
    from _yolo_cases import write_image

    from deteval.io.yolo_coco import dataset_to_coco

    for stem in ("000000000139", "000000000285"):
        write_image(tmp_path / "images" / f"{stem}.jpg", 32, 32)
    (tmp_path / "d.yaml").write_text("val: images\nnames: [a]\n")
    assert [im["id"] for im in dataset_to_coco(load_yolo_dataset(tmp_path / "d.yaml"))["images"]] == [
        139,
        285,
    ]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["annotations"][0].update(iscrowd=1), "a crowd annotation has no YOLO form"),
        (lambda d: d["images"][0].pop("width"), "images[0]: an image needs a positive width and height"),
        (lambda d: d["images"][1].update(file_name="x/000001.png"), "two images share the stem '000001'"),
        (lambda d: d["annotations"][0].update(bbox=[1, 2, 3]), "bbox must have 4 numbers"),
    ],
)
def test_coco_to_yolo_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit, message: str) -> None:
    gt = tmp_path / "gt.json"
    assert main(["convert", str(DATA), "-o", str(gt)]) == 0
    data = json.loads(gt.read_text())
    edit(data)
    gt.write_text(json.dumps(data))
    assert main(["convert", str(gt), "-o", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
