"""Preset files are type- and range-checked (issue 12, item 11): a value of the wrong type is refused, not
coerced (``iou = true`` is not IoU 1.0, ``use-cats = "false"`` and ``trim = "false"`` are not true,
``max-dets = [1.9, 10.7, 100]`` is not [1, 10, 100]); the error names the preset file and the key."""

from __future__ import annotations

import pytest
from cli_errors import cli_error, subprocess_error
from test_errors_options import BASE

from deteval.cli import main

# (subcommand, TOML text, pieces of the error after "<file>: key '<key>': ")
BAD = [
    ("voc", "iou = true", "iou", ["must be a number", "True"]),
    ("voc", 'iou = "0.5"', "iou", ["must be a number", "'0.5'"]),
    ("voc", "iou = 1.5", "iou", [">= 0 and <= 1"]),
    ("voc", "iou = nan", "iou", [">= 0 and <= 1"]),
    ("voc", "iou = [0.5]", "iou", ["must be a number"]),
    ("voc", "plus_one = 1", "plus_one", ["true or false"]),
    ("voc", 'plus_one = "false"', "plus_one", ["true or false"]),
    ("voc", "metric = 2007", "metric", ["must be one of voc07, voc2010"]),
    ("voc", 'metric = "VOC07"', "metric", ["must be one of"]),
    ("voc", "classes = [1, 2]", "classes", ["list of strings"]),
    ("voc", 'classes = ["car", ""]', "classes", ["non-empty names"]),
    ("voc", 'classes = ["car", "car"]', "classes", ["lists 'car' twice"]),
    ("voc", "on-error = true", "on-error", ["must be one of raise, skip"]),
    ("voc", "layout = {single = 1}", "layout", ["must be one of comp4, single"]),
    ("voc", "format = 1979-05-27", "format", ["must be one of"]),
    ("coco", 'use-cats = "false"', "use-cats", ["true or false", "'false'"]),
    ("coco", "use-cats = 0", "use-cats", ["true or false"]),
    ("coco", "per-class = 1", "per-class", ["true or false"]),
    ("coco", "max-dets = [1.9, 10.7, 100]", "max-dets", ["whole number", "1.9"]),
    ("coco", "max-dets = [true, 10]", "max-dets", ["whole number"]),
    ("coco", "max-dets = 0", "max-dets", ["from 1 to"]),
    ("coco", "iou-thrs = true", "iou-thrs", ["expected numbers"]),
    ("coco", "iou-thrs = [0.5, true]", "iou-thrs", ["expected a number"]),
    ("coco", 'iou-thrs = "0.5:0.95:100000000"', "iou-thrs", ["1 to 100"]),
    ("coco", "iou-thrs = [1.5]", "iou-thrs", ["from 0 to 1"]),
    ("coco", 'rec-thrs = ["0.5", "x"]', "rec-thrs", ["'x' is not a number"]),
    ("coco", "area-rng = [[0, 1e10, 5]]", "area-rng", ["two numbers"]),
    ("coco", 'area-rng = "0,1e10;5"', "area-rng", ["two numbers"]),
    ("coco", "area-rng = [[0, inf]]", "area-rng", ["finite"]),
    ("coco", "area-rng = [[true, 5]]", "area-rng", ["expected a number"]),
    ("coco", "area-rng = 5", "area-rng", ["[lo, hi] pairs"]),
    ("coco", "area-lbl = [1, 2, 3, 4]", "area-lbl", ["strings"]),
    ("coco", "kpt-oks-sigmas = [0.1, 0.0]", "kpt-oks-sigmas", ["positive", "keypoint 1"]),
    ("coco", 'iou-type = "box"', "iou-type", ["must be one of bbox, segm, keypoints"]),
    ("coco", 'compat = ["fixed"]', "compat", ["must be one of"]),
    ("mir", 'trim = "false"', "trim", ["true or false", "'false'"]),
    ("mir", "case-sensitive = 0", "case-sensitive", ["true or false"]),
    ("mir", "tau = [true]", "tau", ["must be a number"]),
    ("mir", 'tau = ["nan"]', "tau", [">= 0"]),
    ("mir", "tau = []", "tau", ["1 to 100 values"]),
    ("mir", 'frame-rate = "10"', "frame-rate", ["must be a number", "'10'"]),
    ("mir", "frame-rate = 0", "frame-rate", ["positive number"]),
    ("mir", "frame-rate = -inf", "frame-rate", ["positive number"]),
    ("mir", 'rule = "FMP"', "rule", ["must be one of"]),
]


@pytest.mark.fast_cases(command=1)
@pytest.mark.parametrize(("command", "toml", "key", "pieces"), BAD, ids=[f"{c}-{t}" for c, t, _, _ in BAD])
def test_bad_preset_values_name_the_file_and_key(tmp_path, capsys, command, toml, key, pieces):
    preset = tmp_path / "bad.toml"
    preset.write_text(f"# a preset\n{toml}\n", encoding="utf-8")
    err = cli_error(capsys, [*BASE[command], "--config", str(preset)], f"{preset}: key '{key}': ", *pieces)
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("command", "toml"),
    [
        ("voc", "output = 'x.txt'"),  # a preset describes a protocol, not where the files are
        ("voc", "annotations = 'x'"),
        ("voc", "help = true"),
        ("voc", "config = 'voc07'"),
        ("coco", "[coco]\nmax-dets = [1]"),
        ("mir", "frame_rate_hz = 10"),
    ],
)
def test_unknown_keys_are_refused_listing_the_known_ones(tmp_path, capsys, command, toml):
    preset = tmp_path / "p.toml"
    preset.write_text(toml + "\n", encoding="utf-8")
    cli_error(
        capsys,
        [*BASE[command], "--config", str(preset)],
        str(preset),
        "unknown option(s) in preset",
        "may set",
    )


def _json(capsys, argv):
    assert main([*argv, "--format", "json"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "toml", "flags"),
    [
        ("voc", 'iou = 0.7\nmetric = "voc07"\nplus_one = false\nclasses = ["car", "dog"]',
         ["--iou", "0.7", "--metric", "voc07", "--no-plus-one", "--classes", "car,dog"]),
        ("voc", "iou = 1", ["--iou", "1"]),  # a TOML integer is a number
        ("coco", 'max-dets = [100, 1, 10]\niou-thrs = "0.5:0.95:10"\nuse-cats = false\narea-rng = [[0, 1e10], [0, 1024]]'
         '\narea-lbl = ["all", "small"]',
         ["--max-dets", "1,10,100", "--use-cats", "false", "--area-rng", "0,1e10;0,1024", "--area-lbl", "all,small"]),
        ("mir", 'tau = ["0.5", 3.0]\nframe-rate = 20\ntrim = true\ncase-sensitive = false',
         ["--tau", "0.5", "--tau", "3.0", "--frame-rate", "20", "--trim", "--ignore-case"]),
    ],
)  # fmt: skip
def test_well_typed_presets_equal_the_same_flags(tmp_path, capsys, command, toml, flags):
    preset = tmp_path / "good.toml"
    preset.write_text(toml + "\n", encoding="utf-8")
    assert _json(capsys, [*BASE[command], "--config", str(preset)]) == _json(capsys, [*BASE[command], *flags])


def test_shipped_presets_still_load(capsys):
    for command, name in [
        ("voc", "voc07"),
        ("voc", "py_faster_rcnn"),
        ("coco", "coco_fixed"),
        ("mir", "fmp_boundary"),
    ]:
        assert main([*BASE[command], "--config", name, "--quiet"]) == 0
    capsys.readouterr()


@pytest.mark.slow
def test_through_a_subprocess(tmp_path):
    preset = tmp_path / "bad.toml"
    preset.write_text("iou = true\n", encoding="utf-8")
    subprocess_error([*BASE["voc"], "--config", str(preset)], f"{preset}: key 'iou': ", "must be a number")


def test_a_preset_that_is_not_utf8_is_one_clear_error(tmp_path, capsys):
    preset = tmp_path / "latin1.toml"
    preset.write_bytes(b'# caf\xe9\nmetric = "voc07"\n')  # found by test_fuzz_options (a UnicodeDecodeError)
    cli_error(capsys, [*BASE["voc"], "--config", str(preset)], str(preset), "not UTF-8 text")
