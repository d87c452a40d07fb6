"""`deteval yolo` with the rest of the toolkit: the common result, the analyses and statistics, yolo val's
plots, --conf, the warning channel and `deteval convert` placing the images."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.results import load_result
from deteval.run.yolo import evaluate_yolo

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"
DATA, TXT, MODEL_B = SAMPLE / "data.yaml", SAMPLE / "predictions" / "labels", SAMPLE / "model_b" / "labels"
PROFILES = ["coco", "supervision", "ultralytics-8.0", "ultralytics-8.4.37", "ultralytics"]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["yolo", str(DATA), *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("profile", PROFILES)
def test_json_is_the_common_result_under_every_profile(
    profile: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _json(capsys, str(TXT), "--profile", profile)
    ds = load_yolo_dataset(DATA, duplicates="drop")
    want = evaluate_yolo(ds, load_yolo_predictions(TXT, ds), profile)
    assert doc["protocol"] == "yolo" and doc["profile"] == profile and doc["images"] == 5
    assert doc["mAP50-95"] == want.summary["mAP50-95"] and doc["mAP50"] == want.summary["mAP50"]
    assert list(doc["per_class"]) == ["person", "car", "dog"]
    for name, row in doc["per_class"].items():  # per-class P and R under every profile
        assert 0.0 <= row["P"] <= 1.0 and 0.0 <= row["R"] <= 1.0
        assert row["AP50-95"] == want.per_class[name]["AP50-95"]
    saved = tmp_path / "y.json"
    saved.write_text(json.dumps(doc))
    back = load_result(saved)  # what compare and report read
    assert back.protocol == "yolo" and back.summary["mAP50"] == doc["mAP50"]


def test_compare_and_report_read_yolo_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for preds, out in ((TXT, a), (MODEL_B, b)):
        assert (
            main(["yolo", str(DATA), str(preds), "--profile", "coco", "--format", "json", "-o", str(out)])
            == 0
        )
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    comp = json.loads(capsys.readouterr().out)
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    person = comp["per_class"]["person"]
    assert person["delta"] == pytest.approx(
        rb["per_class"]["person"]["AP50-95"] - ra["per_class"]["person"]["AP50-95"]
    )
    assert main(["report", str(a)]) == 0
    assert "person" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["csv", "markdown", "latex"])
def test_other_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["yolo", str(DATA), str(TXT), "--profile", "coco", "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "person" in out and "dog" in out


@pytest.mark.slow  # (above a second of CPU: full suite only)
def test_analyses_under_the_coco_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    html = tmp_path / "r.html"
    doc = _json(
        capsys,
        str(TXT),
        "--profile",
        "coco",
        "--errors",
        "--confusion",
        "--operating-points",
        "--calibration",
        "--worst-images",
        "3",
        "--images",
        str(tmp_path / "worst"),
        "--html",
        str(html),
    )
    confusion = np.array(doc["confusion"]["matrix"])
    assert doc["confusion"]["labels"] == ["person", "car", "dog", "background"]
    assert confusion[:3].sum(1).tolist() == [3, 3, 4]  # each class's labels
    assert doc["errors"]["ap"] == pytest.approx(doc["AP50"]) and set(doc["errors"]["main"]) >= {
        "cls",
        "bkg",
    }
    assert doc["operating_points"]["per_class"].keys() == {"person", "car", "dog"}
    assert "ece" in doc["calibration"]
    assert len(doc["images"]["worst"]) <= 3
    drawn = sorted(p.name for p in (tmp_path / "worst").iterdir())
    assert len(drawn) == len(doc["images"]["worst"]) > 0 and html.read_text().count("data:image/png") >= 3


def test_worst_images_are_drawn_on_the_dataset_pictures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from PIL import Image

    out = tmp_path / "worst"
    _json(capsys, str(TXT), "--profile", "coco", "--worst-images", "5", "--images", str(out))
    drawn = list(out.iterdir())
    assert drawn
    for p in drawn:  # the sample's pictures are grey (120, 120, 120); the stand-in canvas is (200, 200, 200)
        im = Image.open(p).convert("RGB")
        assert im.getpixel((5, im.size[1] // 2)) in ((120, 120, 120), (121, 121, 121))  # (JPEG)


@pytest.mark.slow  # (above a second of CPU: full suite only)
def test_compare_to_gives_a_paired_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, str(TXT), "--profile", "coco", "--compare-to", str(MODEL_B), "--ci", "0.95")
    ap = doc["comparison"]["AP"]
    assert ap["a"] == doc["AP"] and ap["delta"] > 0 and ap["p_adjusted"] < 0.05
    assert doc["ci"]["AP"][0] <= doc["AP"] <= doc["ci"]["AP"][1]
    assert all(len(row["ci"]) == 2 for row in doc["per_class"].values())


@pytest.mark.parametrize("profile", ["ultralytics", "ultralytics-8.0"])
def test_statistics_under_the_ultralytics_profiles(profile: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(TXT), "--profile", profile, "--compare-to", str(MODEL_B), "--ci", "0.9", "--bootstrap", "200"]
    doc = _json(capsys, *argv)
    ds = load_yolo_dataset(DATA, duplicates="drop")
    a = evaluate_yolo(ds, load_yolo_predictions(TXT, ds), profile)
    b = evaluate_yolo(ds, load_yolo_predictions(MODEL_B, ds), profile)
    for key in ("mAP50-95", "mAP50", "precision", "recall"):  # the resamples start from yolo val's numbers
        assert doc["comparison"][key]["a"] == a.summary[key] and doc["comparison"][key]["b"] == b.summary[key]
        lo, hi = doc["ci"][key]
        assert lo <= a.summary[key] <= hi
    assert doc["comparison"]["ap:car"]["b"] == b.per_class["car"]["AP50-95"]
    assert doc["comparison"]["mAP50-95"]["delta"] > 0 and 0 < doc["comparison"]["mAP50-95"]["p_adjusted"] <= 1
    assert all(len(row["ci"]) == 2 for row in doc["per_class"].values())


def test_statistics_are_refused_under_supervision(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["yolo", str(DATA), str(TXT), "--profile", "supervision", "--ci", "0.95"]) == 2
    assert "not supervision" in capsys.readouterr().err


def test_plots_are_yolo_vals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["yolo", str(DATA), str(TXT), "--plots", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "BoxF1_curve.png",
        "BoxPR_curve.png",
        "BoxP_curve.png",
        "BoxR_curve.png",
        "confusion_matrix.png",
        "confusion_matrix_normalized.png",
    ]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in tmp_path.iterdir())


def test_conf_floor_changes_p_r_and_the_confusion(capsys: pytest.CaptureFixture[str]) -> None:
    ds = load_yolo_dataset(DATA)
    preds = load_yolo_predictions(TXT, ds)
    floor = float(np.median(preds.conf))
    base = _json(capsys, str(TXT), "--profile", "coco", "--confusion", "--score-threshold", "0")
    cut = _json(
        capsys, str(TXT), "--profile", "coco", "--confusion", "--score-threshold", "0", "--conf", str(floor)
    )
    want = evaluate_yolo(ds, preds.take(preds.conf > floor), "coco")
    assert cut["mAP50-95"] == want.summary["mAP50-95"] != base["mAP50-95"]
    assert cut["precision"] != base["precision"] or cut["recall"] != base["recall"]
    kept = np.array(cut["confusion"]["matrix"]).sum() - np.array(cut["confusion"]["matrix"])[:3, 3].sum()
    assert kept == int((preds.conf > floor).sum())  # every kept prediction lands in one cell


def test_conf_must_be_finite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["yolo", str(DATA), str(TXT), "--conf", "nan"]) == 2
    assert "--conf must be a finite confidence" in capsys.readouterr().err


def test_explain_warns_through_the_common_channel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    root = tmp_path / "yolo"
    shutil.copytree(SAMPLE, root)
    lp = root / "labels" / "val" / "street_04.txt"
    lp.write_text(lp.read_text() + lp.read_text().splitlines()[0] + "\n")
    argv = ["explain", str(root / "data.yaml"), str(root / "predictions" / "labels"), "--from", "ultralytics"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([*argv, "--to", "coco"]) == 0
    assert [str(w.message) for w in caught] == []  # no raw Python warning (with its source line)
    err = capsys.readouterr().err
    assert err == f"deteval: warning: {lp}: 1 duplicate labels removed (as Ultralytics does)\n"


def test_convert_links_the_images_so_yolo_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gt = tmp_path / "gt.json"
    assert main(["convert", str(DATA), "-o", str(gt)]) == 0
    out = tmp_path / "yolo"
    assert main(["convert", str(gt), "-o", str(out), "--image-root", str(SAMPLE)]) == 0
    assert all((out / "images" / p.name).is_symlink() for p in (SAMPLE / "images" / "val").iterdir())
    capsys.readouterr()
    assert main(["yolo", str(out / "data.yaml"), str(TXT), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["mAP50-95"] == _json(capsys, str(TXT))["mAP50-95"]
    copied = tmp_path / "copied"
    assert main(["convert", str(gt), "-o", str(copied), "--image-root", str(SAMPLE), "--copy-images"]) == 0
    assert not any(p.is_symlink() for p in (copied / "images").iterdir())


def test_convert_says_where_missing_images_go(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    coco = SAMPLE.parent / "coco" / "instances_val.json"
    assert main(["convert", str(coco), "-o", str(tmp_path / "y")]) == 0
    err = capsys.readouterr().err
    assert "not found" in err and str(tmp_path / "y" / "images") in err and "7.jpg" in err
    assert not (tmp_path / "y" / "images").exists()
