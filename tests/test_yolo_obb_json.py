"""``yolo val save_json``'s predictions.json of an OBB model (``rbox`` [cx, cy, w, h, angle] and ``poly``, in
pixels) as ``deteval yolo --task obb`` and ``deteval explain --task obb`` predictions: the same numbers as the
txt files of the same boxes under every profile, and bad records refused through the shared JSON guards."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from _obb_cases import random_obb_split

from deteval.cli import main
from deteval.errors import DetevalError
from deteval.explain import explain_obb
from deteval.io.yolo_obb import load_yolo_obb
from deteval.run.yolo import evaluate_yolo
from deteval.tables.quads import corners_obb

PROFILES = ("coco", "ultralytics-8.0", "ultralytics", "dota_devkit")


def _write_json(data: Path, pred: Path, out: Path, form: str) -> None:
    """The txt predictions as Ultralytics' records (``form``: both keys, ``rbox`` only or ``poly`` only);
    image_id as Ultralytics writes it (int(stem) for a numeric stem), file_name only in the newer form."""
    ds, preds, _, corners = load_yolo_obb(data, pred)
    rbox = corners_obb(corners)
    records = []
    for k in range(len(preds)):
        image = ds.images[int(preds.img[k])]
        r = {
            "image_id": int(image.stem) if image.stem.isnumeric() else image.stem,
            "category_id": int(preds.cls[k]) + 1,
            "score": float(preds.conf[k]),
        }
        if form != "poly":
            r["rbox"] = rbox[k].tolist()
        if form != "rbox":
            r["poly"] = corners[k].tolist()
        if form == "both":
            r["file_name"] = image.name
        records.append(r)
    out.write_text(json.dumps(records))


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(4))
def test_json_scores_as_the_txt_files(tmp_path: Path, seed: int) -> None:
    data, pred = random_obb_split(tmp_path / "split", 700 + seed)
    ds, preds, _, corners = load_yolo_obb(data, pred)
    for form in ("both", "poly"):
        js = tmp_path / f"{form}.json"
        _write_json(data, pred, js, form)
        ds2, preds2, _, corners2 = load_yolo_obb(data, js)
        assert np.array_equal(preds2.img, preds.img) and np.array_equal(preds2.cls, preds.cls)
        if form == "poly":  # the same corners, the same doubles
            assert np.array_equal(corners2, corners)
        else:  # rbox's corners: the rectangle the txt corners hold, to rounding
            np.testing.assert_allclose(corners2, corners, rtol=0, atol=1e-9)
        for profile in PROFILES:
            want = evaluate_yolo(ds, preds, profile, iou_type="obb").summary
            got = evaluate_yolo(ds2, preds2, profile, iou_type="obb").summary
            for key in ("mAP50-95", "mAP50", "mAP75"):
                assert got[key] == pytest.approx(want[key], abs=1e-12, rel=0), (form, profile, key)


@pytest.mark.slow
def test_cli_reads_the_json_with_its_tools(tmp_path: Path) -> None:
    data, pred = random_obb_split(tmp_path / "split", 5)
    js = tmp_path / "predictions.json"
    _write_json(data, pred, js, "rbox")

    def run(*args: str) -> dict:
        out = tmp_path / "o.json"
        assert main([*args, "--format", "json", "-o", str(out)]) == 0
        return json.loads(out.read_text())

    txt = run("yolo", str(data), str(pred), "--task", "obb", "--profile", "coco")
    got = run(
        "yolo",
        str(data),
        str(js),
        "--task",
        "obb",
        "--profile",
        "coco",
        "--errors",
        "--compare-to",
        str(pred),
    )
    assert got["mAP50-95"] == pytest.approx(txt["mAP50-95"], abs=1e-12, rel=0)
    assert got["errors"]["ap"] == pytest.approx(got["AP50"], abs=1e-12, rel=0)
    assert got["comparison"]["AP"]["delta"] == pytest.approx(0.0, abs=1e-12)
    ds, preds, _, _ = load_yolo_obb(data, js)
    e = explain_obb(ds, preds, "ultralytics", "dota_devkit")
    assert e.end["mAP50"] == evaluate_yolo(ds, preds, "dota_devkit", iou_type="obb").summary["mAP50"]


RECORD = {"image_id": "im0", "category_id": 1, "score": 0.5, "rbox": [50.0, 60.0, 20.0, 10.0, 0.3]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[{"image_id": "im0", "image_id": "im0", "category_id": 1, "score": 0.5, "rbox": [1, 1, 1, 1, 0]}]',
            "duplicate",
        ),
        (json.dumps({"predictions": [RECORD]}), "expected a JSON list"),
        (json.dumps([{**RECORD, "rbox": [1, 2, 3, 4]}]), "rbox must be a list of 5 numbers"),
        (json.dumps([{**RECORD, "rbox": [1, 2, -3, 4, 0]}]), "negative width"),
        (json.dumps([{k: v for k, v in RECORD.items() if k != "rbox"}]), "missing 'rbox'"),
        (
            json.dumps([{**RECORD, "poly": [1, 2, 3, True, 5, 6, 7, 8]}]).replace('"rbox"', '"x"'),
            "poly must be",
        ),
        (json.dumps([{**RECORD, "category_id": 9}]), "category_id 9 is not class + 1"),
        (json.dumps([{**RECORD, "image_id": "nope"}]), "is not the stem of an image"),
        (json.dumps([{**RECORD, "score": "0.5"}]), "score must be a finite number"),
        (
            '[{"image_id": "im0", "category_id": 1, "score": 0.5, "rbox": [1, 2, 3, 4, NaN]}]',
            "non-finite value",
        ),
    ],
)
def test_bad_records_are_refused(
    tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = random_obb_split(tmp_path / "split", 1)
    js = tmp_path / "predictions.json"
    js.write_text(text)
    with pytest.raises(DetevalError, match=re.escape(message)):
        load_yolo_obb(data, js)
    assert main(["yolo", str(data), str(js), "--task", "obb"]) == 2
    err = capsys.readouterr().err.strip()
    assert str(js) in err and len(err.splitlines()) == 1
