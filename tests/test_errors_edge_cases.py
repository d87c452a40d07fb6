"""Smaller edge cases of issue 12, item 15: line separators inside a line, flattened keys that collide,
a frame rate that samples no frame pair, and a keypoint sigma of 0."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest
from cli_errors import ROOT, cli_error
from test_errors_voc import SAMPLE as VOC_SAMPLE

from deteval.cli import main
from deteval.detection.coco import evaluate_coco
from deteval.errors import ConfigError, InputFormatError, ValidationError
from deteval.io.lab import load_lab, parse_lab
from deteval.io.voc import read_image_set
from deteval.mir import evaluate_mir
from deteval.mir.pairwise import pairwise_prf
from deteval.report.compare import compare_results
from deteval.report.tables import FORMATS, render
from deteval.results import EvalResult, load_result

LAB = ROOT / "data_samples" / "mir"
SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x1c", "\x1d", "\x1e"]  # str.splitlines() splits at all of them


@pytest.mark.parametrize("sep", SEPARATORS)
def test_unicode_line_separators_stay_inside_a_lab_line(tmp_path, sep):
    text = f"0.0 1.0 A{sep}B\n1.0 2.0 C\n2.0 x D\n"
    path = tmp_path / "x.lab"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError) as info:
        load_lab(path)
    assert info.value.record == "line 3"  # str.splitlines() would have said line 4
    segs = parse_lab(text.replace(" x ", " 3.0 "))
    assert list(segs.labels) == [f"A{sep}B", "C", "D"] and list(segs.records) == [1, 2, 3]


@pytest.mark.parametrize("sep", ["\u2028", "\u0085", "\u00a0", "\u3000"])
def test_unicode_separators_are_not_field_separators_in_a_lab_line(sep):
    # Only ASCII whitespace separates fields, as in the byte-parsed VOC and TREC files.
    with pytest.raises(InputFormatError, match="found 2 field"):
        parse_lab(f"0.0{sep}1.0 A\n")
    with pytest.raises(InputFormatError) as info:
        parse_lab(f"0.0{sep}1.0 2.0 A\n")
    assert f"start time {'0.0' + sep + '1.0'!r} is not a number" in str(info.value)
    assert list(parse_lab(f"0.0 1.0 A{sep}B\n").labels) == [f"A{sep}B"]


@pytest.mark.parametrize("sep", SEPARATORS)
def test_unicode_line_separators_stay_inside_an_image_set_line(tmp_path, sep):
    path = tmp_path / "set.txt"
    path.write_text(f"000004\n000006{sep}zz\n000006\n", encoding="utf-8")
    # str.splitlines() would read '000006' twice (lines 2 and 4) and refuse a list that has no repeat.
    assert read_image_set(path) == ["000004", f"000006{sep}zz", "000006"]


def test_image_set_ids_and_line_numbers_with_unicode_separators(tmp_path, capsys):
    path = tmp_path / "set.txt"
    path.write_text("000004\n000006\u2028x\n000004\n", encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        read_image_set(path)
    assert info.value.record == "line 3" and "listed twice (first on line 1)" in info.value.reason
    path.write_text("000004\n000006\u2028x\n", encoding="utf-8")
    assert read_image_set(path) == ["000004", "000006\u2028x"]
    root = tmp_path / "voc"
    shutil.copytree(VOC_SAMPLE, root)
    cli_error(
        capsys,
        ["voc", "--annotations", str(root / "Annotations"), "--image-set", str(path),
         "--detections", str(root / "results" / "comp4_det_test_{cls}.txt")],
        "annotation file for image '000006\\u2028x' not found",
    )  # fmt: skip


COLLIDING = [
    {"protocol": "voc", "per_class": {"a": {"x.y": 1, "x": {"y": 2}}}},
    {"protocol": "voc", "per_class": {"a": {"x": {"y": 2}, "x.y": 1}}},
    {"protocol": "voc", "x.y": 1, "x": {"y": 2}, "per_class": {}},
    {"protocol": "voc", "stats": [1, 2], "stats.0": 3},
]


@pytest.mark.parametrize("doc", COLLIDING)
def test_keys_that_flatten_to_one_column_are_refused(tmp_path, capsys, doc):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputFormatError, match="two fields flatten to the same column") as info:
        load_result(path)
    assert info.value.file == str(path)
    cli_error(capsys, ["report", str(path)], str(path), "flatten to the same column")
    cli_error(capsys, ["compare", str(path), str(path)], str(path), "flatten to the same column")
    result = EvalResult.from_dict(doc)  # in memory: the renderers and compare refuse it too
    for fmt in ("table", "csv", "markdown"):
        with pytest.raises(InputFormatError, match="flatten to the same column"):
            render(result, fmt)
    with pytest.raises(InputFormatError, match="flatten to the same column"):
        compare_results(result, result)


def test_dotted_keys_without_a_clash_still_render():
    doc = {"protocol": "mir", "boundary": {"0.5": {"f": 0.5}, "3.0": {"f": 0.7}}, "per_class": {}}
    result = EvalResult.from_json(json.dumps(doc))
    assert "boundary.0.5.f" in render(result, "csv") and "boundary.3.0.f" in render(result, "csv")
    assert all(render(result, f) for f in FORMATS)


@pytest.mark.parametrize("rate", ["0.001", "0.006", "1e-9"])
def test_a_frame_rate_giving_no_frame_pair_is_reported(capsys, rate):
    code = main(["mir", str(LAB / "ref.lab"), str(LAB / "est.lab"), "--frame-rate", rate, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    pw = doc["pairwise"]
    assert pw["n_frames"] < 2 and (pw["precision"], pw["recall"], pw["f"]) == (0.0, 0.0, 0.0)
    msg = [w for w in doc["warnings"] if "no pair of frames" in w]
    assert len(msg) == 1 and f"gives {pw['n_frames']} frame(s)" in msg[0] and "not measured" in msg[0]


def test_two_frames_are_measured_without_that_warning():
    r = pairwise_prf([[0, 2, "A"]], [[0, 2, "A"]])
    assert r.n_frames == 2 and r.tp == 1 and not any("no pair" in w for w in r.warnings)
    r = pairwise_prf([[0, 1, "A"]], [[0, 1, "A"]])
    assert r.n_frames == 1 and any("no pair of frames" in w for w in r.warnings)
    r = evaluate_mir([[0.0, 0.0, "A"]], [[0.0, 1.0, "B"]], frame_rate=10)
    assert r.summary["pairwise"]["n_frames"] == 0 and any("no pair of frames" in w for w in r.warnings)


KP = ROOT / "tests" / "data" / "coco" / "coco_keypoints"


@pytest.mark.parametrize("bad", [0.0, -0.05, float("nan")])
def test_a_keypoint_sigma_of_zero_is_refused_by_name(bad):
    sigmas = np.full(17, 0.05)
    sigmas[4] = bad
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning leaks
        with pytest.raises(ConfigError, match="kpt_oks_sigmas") as info:
            evaluate_coco(
                str(KP / "gt_dataset.json"),
                str(KP / "dt_dataset.json"),
                params={"iou_type": "keypoints", "kpt_oks_sigmas": sigmas},
            )
    assert "keypoint 4" in str(info.value) or "finite" in str(info.value)


def test_a_keypoint_sigma_of_zero_on_the_command_line(capsys):
    sigmas = ",".join(["0.05"] * 16 + ["0"])
    cli_error(
        capsys,
        ["coco", str(KP / "gt_dataset.json"), str(KP / "dt_dataset.json"), "--iou-type", "keypoints",
         "--kpt-oks-sigmas", sigmas],
        "--kpt-oks-sigmas must be positive", "keypoint 16",
    )  # fmt: skip
