"""`deteval voc` end to end: JSON values against the plain reference, presets, options, exit codes."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from voc_reference import devkit_ap, pyfrcnn_ap

from deteval.cli import main

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "voc"
ARGS = [
    "voc",
    "--annotations", str(SAMPLE / "Annotations"),
    "--image-set", str(SAMPLE / "ImageSets" / "Main" / "test.txt"),
    "--detections", str(SAMPLE / "results" / "comp4_det_test_{cls}.txt"),
]  # fmt: skip


def _run(capsys, *extra):
    code = main([*ARGS, "--format", "json", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def _plain_sample(cls):
    """Plain parse of the sample set for one class (independent of deteval.io)."""
    gts = []
    for iid in (SAMPLE / "ImageSets" / "Main" / "test.txt").read_text().split():
        root = ET.parse(SAMPLE / "Annotations" / f"{iid}.xml").getroot()
        for obj in root.findall("object"):
            if obj.findtext("name") == cls:
                bb = [float(obj.find("bndbox").findtext(t)) for t in ("xmin", "ymin", "xmax", "ymax")]
                gts.append((iid, bb, obj.findtext("difficult", "0").strip() == "1"))
    dets = []
    for line in (SAMPLE / "results" / f"comp4_det_test_{cls}.txt").read_text().splitlines():
        t = line.split()
        dets.append((t[0], float(t[1]), [float(v) for v in t[2:]]))
    return gts, dets


CLASSES = ["bicycle", "car", "cat", "dog", "person"]


@pytest.mark.parametrize("metric", ["voc07", "voc2010"])
@pytest.mark.parametrize("iou", ["0.5", "0.7"])
def test_quick_start_json_matches_plain_reference(capsys, metric, iou):
    code, doc, _ = _run(capsys, "--metric", metric, "--iou", iou)
    assert code == 0
    assert doc["protocol"] == "voc" and doc["metric"] == metric and doc["iou_threshold"] == float(iou)
    assert list(doc["per_class"]) == CLASSES
    aps = []
    for cls in CLASSES:
        gts, dets = _plain_sample(cls)
        ap, tp, fp = devkit_ap(gts, dets, float(iou), use07=metric == "voc07")
        row = doc["per_class"][cls]
        assert row["ap"] == pytest.approx(ap, abs=1e-12)
        assert (row["tp"], row["fp"], row["ndet"], row["npos"]) == (
            tp, fp, len(dets), sum(1 for g in gts if not g[2]))  # fmt: skip
        aps.append(ap)
    assert doc["map"] == pytest.approx(sum(aps) / len(aps), abs=1e-12)
    assert doc["warnings"] == []


def test_default_is_all_point_and_the_sample_numbers_are_pinned(capsys):
    code, doc, _ = _run(capsys)
    assert code == 0 and doc["metric"] == "voc2010" and doc["profile"] == "voc_devkit"
    assert doc["per_class"]["car"]["ap"] == pytest.approx(0.72, abs=1e-12)
    assert doc["per_class"]["bicycle"]["ignored"] == 2 and doc["per_class"]["bicycle"]["difficult"] == 1


def test_presets_and_flags_override_them(capsys):
    code, doc, _ = _run(capsys, "--config", "voc07")
    assert code == 0 and doc["metric"] == "voc07" and doc["iou_threshold"] == 0.5
    code, doc2, _ = _run(capsys, "--config", "voc07", "--metric", "voc2010")
    assert doc2["metric"] == "voc2010"
    code, doc3, _ = _run(capsys, "--config", "py_faster_rcnn")
    assert doc3["profile"] == "py_faster_rcnn" and doc3["metric"] == "voc07"
    for cls in CLASSES:
        gts, dets = _plain_sample(cls)
        assert doc3["per_class"][cls]["ap"] == pytest.approx(pyfrcnn_ap(gts, dets, 0.5, True)[0], abs=1e-12)
    code, doc4, _ = _run(capsys, "--config", "voc2012")
    assert doc4["metric"] == "voc2010"
    main(["presets"])
    listed = capsys.readouterr().out
    assert "voc07" in listed and "voc2012" in listed and "py_faster_rcnn" in listed


def test_classes_option_and_no_plus_one(capsys):
    code, doc, _ = _run(capsys, "--classes", "dog,cat")
    assert code == 0 and list(doc["per_class"]) == ["dog", "cat"]
    assert any("not evaluated" in w for w in doc["warnings"])
    code, doc2, _ = _run(capsys, "--no-plus-one", "--classes", "bicycle")
    gts, dets = _plain_sample("bicycle")
    assert doc2["plus_one"] is False
    assert doc2["per_class"]["bicycle"]["ap"] == pytest.approx(devkit_ap(gts, dets, one=0.0)[0], abs=1e-12)


def test_detection_file_for_a_class_without_ground_truth_is_reported(tmp_path, capsys):
    res = tmp_path / "results"
    shutil.copytree(SAMPLE / "results", res)
    (res / "comp4_det_test_sheep.txt").write_text("000004 0.9 1 1 50 50\n000006 0.4 1 1 50 50\n")
    code = main([*ARGS[:-1], str(res / "comp4_det_test_{cls}.txt"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["per_class"]["sheep"] == {
        "ap": None,
        "npos": 0,
        "ndet": 2,
        "tp": 0,
        "fp": 2,
        "ignored": 0,
        "difficult": 0,
    }
    assert doc["n_classes_averaged"] == 5 and any("sheep (2 detections)" in w for w in doc["warnings"])
    # A ground-truth class whose detection file is missing: scored with 0 detections and a warning.
    (res / "comp4_det_test_cat.txt").unlink()
    code = main([*ARGS[:-1], str(res / "comp4_det_test_{cls}.txt"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["per_class"]["cat"]["ap"] == 0.0 and any(
        "no detection file" in w and "cat" in w for w in doc["warnings"]
    )


def test_unknown_image_exit_code_and_warn_option(tmp_path, capsys):
    res = tmp_path / "results"
    shutil.copytree(SAMPLE / "results", res)
    with (res / "comp4_det_test_dog.txt").open("a") as fh:
        fh.write("999999 0.5 1 1 20 20\n")
    pat = str(res / "comp4_det_test_{cls}.txt")
    n_lines = len((res / "comp4_det_test_dog.txt").read_text().splitlines())
    code = main([*ARGS[:-1], pat])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("deteval: error: ") and "comp4_det_test_dog.txt" in err and f"line {n_lines}" in err
    code = main([*ARGS[:-1], pat, "--unknown-images", "warn", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and any(
        w.startswith("1 detection(s) for images not in the image set") for w in doc["warnings"]
    )


def test_other_formats_and_output_file(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main([*ARGS, "--format", "csv", "--output", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("class,ap,npos,ndet,tp,fp") and "map," in text
    assert main([*ARGS, "--format", "markdown"]) == 0
    assert "| car |" in capsys.readouterr().out
    assert main(ARGS) == 0
    table = capsys.readouterr().out
    assert "map: 0.8440" in table and "person" in table


def test_bad_options_exit_2(tmp_path, capsys):
    assert main([*ARGS, "--iou", "1.5"]) == 2
    assert "IoU threshold" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text('# bad\nmetric = "voc2099"\n')
    assert main([*ARGS, "--config", str(bad)]) == 2
    assert "voc2099" in capsys.readouterr().err
    bad.write_text('# bad\nmetrics = "voc07"\n')
    assert main([*ARGS, "--config", str(bad)]) == 2
    assert "unknown option" in capsys.readouterr().err
    assert main(["voc", "--annotations", str(tmp_path / "none"), "--detections", "x_{cls}.txt"]) == 2
    assert "annotations folder not found" in capsys.readouterr().err


def test_single_file_layout_and_no_image_set(tmp_path, capsys):
    rows = []
    for cls in CLASSES:
        for line in (SAMPLE / "results" / f"comp4_det_test_{cls}.txt").read_text().splitlines():
            iid, rest = line.split(" ", 1)
            rows.append(f"{iid} {cls} {rest}")
    single = tmp_path / "all.txt"
    single.write_text("\n".join(rows) + "\n")
    code = main(["voc", "--annotations", str(SAMPLE / "Annotations"), "--detections", str(single),
                 "--layout", "single", "--format", "json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    code2, ref, _ = _run(capsys)
    assert code == code2 == 0
    assert doc["n_images"] == 10 and doc["map"] == ref["map"] and doc["per_class"] == ref["per_class"]
