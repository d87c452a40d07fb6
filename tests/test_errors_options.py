"""Bad option values (issue 12, item 10): every numeric or list option of every subcommand is checked for
syntax (ASCII decimal notation only: no ``1_0``, no other scripts' digits), type and documented bounds,
before anything is allocated. Each is one ``deteval: error:`` line naming the flag, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cli_errors import ROOT, cli_error

from deteval.cli import main
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError
from deteval.io.voc import load_voc_detections

S = ROOT / "data_samples"
BASE = {
    "voc": [
        "voc",
        "--annotations", str(S / "voc" / "Annotations"),
        "--image-set", str(S / "voc" / "ImageSets" / "Main" / "test.txt"),
        "--detections", str(S / "voc" / "results" / "comp4_det_test_{cls}.txt"),
    ],
    "coco": ["coco", str(S / "coco" / "instances_val.json"), str(S / "coco" / "results_bbox.json")],
    "trec": ["trec", str(S / "trec" / "qrels.txt"), str(S / "trec" / "run.txt")],
    "mir": ["mir", str(S / "mir" / "ref.lab"), str(S / "mir" / "est.lab")],
}  # fmt: skip

# (subcommand, extra arguments, pieces of the one error line)
EMPTY_ITEMS = (
    "P.5,,10", "P.5,", "P.,5", "ndcg_cut.5,,10", "success.1,,5", "map_cut.5,,10", "recall.5,,10",
    "iprec_at_recall.0.1,,0.5", "Rprec_mult.0.2,,1", "utility.1,,-1,0", "ndcg.1=2,,2=3", "11pt_avg..25,,.5",
)  # fmt: skip

DUPLICATE_ITEMS = ("P.5,5", "P.5,10,5.7", "recall.10,10", "iprec_at_recall.0.5,0.50", "Rprec_mult.1,1.0")

BAD = [
    ("coco", ["--area-rng", "0,1e10,5"], ["--area-rng", "two numbers lo,hi"]),
    ("coco", ["--area-rng", "0,1e10;5"], ["--area-rng", "two numbers lo,hi", "['5']"]),
    ("coco", ["--area-rng", "0,1e10;;0,5"], ["--area-rng", "empty range"]),
    ("coco", ["--area-rng", "5,1"], ["--area-rng", "0 <= lo <= hi"]),
    ("coco", ["--area-rng", "0,inf"], ["--area-rng", "must be finite"]),
    ("coco", ["--area-rng", "0,nan"], ["--area-rng", "must be finite"]),
    ("coco", ["--area-rng", "0,1_0"], ["--area-rng", "'1_0' is not a number"]),
    (
        "coco",
        ["--area-rng", ";".join(["0,1"] * 17), "--area-lbl", ",".join("abcdefghijklmnopq")],
        ["17 ranges"],
    ),
    ("coco", ["--area-lbl", "a,a,b,c"], ["--area-lbl", "distinct"]),
    ("coco", ["--area-lbl", "a,b"], ["4 area ranges but 2 labels"]),
    ("coco", ["--iou-thrs", "0.5:0.95:100000000"], ["--iou-thrs", "100000000 values", "1 to 100"]),
    ("coco", ["--iou-thrs", "linspace(0.5, 0.95, 99999999999999999999)"], ["--iou-thrs", "1 to 100"]),
    ("coco", ["--iou-thrs", "linspace(0.5, 0.95, 1e9)"], ["--iou-thrs", "'1e9' is not a whole number"]),
    ("coco", ["--iou-thrs", "0.5:inf:10"], ["--iou-thrs", "must be finite"]),
    ("coco", ["--iou-thrs", "0.5:0.95:0"], ["--iou-thrs", "0 values"]),
    ("coco", ["--iou-thrs", "1.5"], ["--iou-thrs", "from 0 to 1", "1.5"]),
    ("coco", ["--iou-thrs=-0.1,0.5"], ["--iou-thrs", "from 0 to 1"]),
    ("coco", ["--iou-thrs", "0.5,,0.75"], ["--iou-thrs", "empty value"]),
    ("coco", ["--iou-thrs", "0.5,nan"], ["--iou-thrs", "finite"]),
    ("coco", ["--iou-thrs", "\u0660.5"], ["--iou-thrs", "is not a number"]),  # Arabic-Indic zero
    ("coco", ["--iou-thrs", "\uff10.5"], ["--iou-thrs", "is not a number"]),  # full-width zero
    ("coco", ["--iou-thrs", "0:1:100", "--rec-thrs", "0:1:10001"], ["12001200 precision values", "1000000"]),
    ("coco", ["--rec-thrs", "0:1:10002"], ["--rec-thrs", "1 to 10001"]),
    ("coco", ["--rec-thrs", "0,1e308"], ["--rec-thrs", "from -1 to 2"]),  # overflowed numpy before
    ("coco", ["--max-dets", "1.5"], ["--max-dets", "'1.5' is not a whole number"]),
    ("coco", ["--max-dets", "1_0"], ["--max-dets", "'1_0' is not a whole number"]),
    ("coco", ["--max-dets", "0"], ["--max-dets", "from 1 to 1000000000"]),
    ("coco", ["--max-dets", "99999999999"], ["--max-dets", "from 1 to 1000000000"]),
    ("coco", ["--max-dets", ",".join(str(i) for i in range(1, 18))], ["--max-dets", "17 values"]),
    ("coco", ["--kpt-oks-sigmas", "0.1,0,0.2"], ["--kpt-oks-sigmas", "positive", "keypoint 1"]),
    ("coco", ["--kpt-oks-sigmas", "-0.1"], ["--kpt-oks-sigmas", "positive"]),
    ("voc", ["--iou", "1.5"], ["--iou", ">= 0 and <= 1", "IoU threshold"]),
    ("voc", ["--iou", "-0.1"], ["--iou", ">= 0 and <= 1"]),
    ("voc", ["--iou", "nan"], ["--iou", "'nan'"]),
    ("voc", ["--iou", "inf"], ["--iou", "'inf'"]),
    ("voc", ["--iou", "1_0"], ["--iou", "must be a number"]),
    ("voc", ["--iou", "\uff10.5"], ["--iou", "must be a number"]),
    ("voc", ["--iou", "0x1"], ["--iou", "must be a number"]),
    ("voc", ["--classes", "car,,dog"], ["--classes", "non-empty names"]),
    (
        "voc",
        ["--classes", "car,dog,car"],
        ["--classes lists 'car' twice"],
    ),  # read twice: every detection double
    ("mir", ["--tau", "nan"], ["--tau", ">= 0"]),
    ("mir", ["--tau", "1e300"], ["--tau", "<= 1e+12"]),
    ("mir", ["--tau", "1_0"], ["--tau", "must be a number"]),
    ("mir", [arg for _ in range(101) for arg in ("--tau", "1")], ["--tau", "1 to 100 values"]),
    ("mir", ["--frame-rate", "0"], ["--frame-rate", "positive number"]),
    ("mir", ["--frame-rate=-10"], ["--frame-rate", "positive number"]),
    ("mir", ["--frame-rate", "1e7"], ["--frame-rate", "up to 1e+06"]),
    ("mir", ["--frame-rate", "inf"], ["--frame-rate", "positive number"]),
    ("mir", ["--frame-rate", "1_0"], ["--frame-rate", "must be a number"]),
    ("trec", ["-l", "1_0"], ["-l", "whole number"]),
    ("trec", ["-l", "\u0663"], ["-l", "whole number"]),
    ("trec", ["-l", str(2**63)], ["-l", "from 0 to"]),
    ("trec", ["-l", "-1"], ["-l", "from 0 to"]),
    ("trec", ["-M", "0"], ["-M", "from 1 to"]),
    ("trec", ["-M", "1.5"], ["-M", "whole number"]),
    ("trec", ["-m", "P.\u0663"], ["bad parameter", "P.\u0663"]),
    ("trec", ["-m", "P.1_0"], ["bad parameter '1_0'"]),
    ("trec", ["-m", "iprec_at_recall.0_5"], ["bad parameter '0_5'"]),
    # an empty item: trec_eval reads it as 0 (a cutoff list stops, a level list gains 0.00); refused
    *[("trec", ["-m", m], ["empty item", repr(m), "single commas"]) for m in EMPTY_ITEMS],
    # a repeat within one list: trec_eval stops ("duplicate cutoffs detected"); atol reads 5.7 as 5
    *[("trec", ["-m", m], ["duplicate parameter", repr(m)]) for m in DUPLICATE_ITEMS],
]


@pytest.mark.parametrize(
    ("command", "extra", "pieces"), BAD, ids=[f"{c}{' '.join(e)[:40]}" for c, e, _ in BAD]
)
def test_bad_option_values_are_one_clear_error(capsys, command, extra, pieces):
    cli_error(capsys, [*BASE[command], *extra], *pieces)


@pytest.mark.parametrize(
    "extra",
    [
        ["--iou-thrs", "0.5:0.95:100000000"],
        ["--area-rng", "0,1e10,5"],
        ["--area-rng", "0,1e10;5"],
        ["--rec-thrs", "linspace(0, 1, 999999999999)"],
    ],
)
def test_the_reported_commands_end_fast_without_a_traceback(extra):
    """The issue's commands, in a fresh interpreter with a timeout (the first used to allocate gigabytes)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "deteval", *BASE["coco"], *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("deteval: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert extra[0] in proc.stderr


def test_values_at_the_bounds_are_accepted(capsys):
    ok = [
        ("coco", ["--iou-thrs", "0,1", "--max-dets", "1,1000000000", "--area-rng", "0,0;0,1e10", "--area-lbl", "a,b"]),
        ("coco", ["--iou-thrs", "0.5:0.95:100", "--rec-thrs", "0:1:101"]),
        ("coco", ["--rec-thrs=-0.5,1.5"]),  # pycocotools' sampling rule applies to any finite level
        ("coco", ["--max-dets", "10,10,100"]),  # pycocotools evaluates a repeated value (a warning says so)
        ("voc", ["--iou", "0"]),
        ("voc", ["--iou", "1"]),
        ("voc", ["--iou", " +.5e0 "]),
        ("mir", ["--tau", "0", "--frame-rate", "1e4"]),
        ("trec", ["-l", "0", "-M", str(2**63 - 1)]),
    ]  # fmt: skip
    for command, extra in ok:
        assert main([*BASE[command], *extra, "--quiet"]) == 0, capsys.readouterr().err
    capsys.readouterr()


def test_the_same_bounds_hold_in_the_api():
    with pytest.raises(ConfigError, match="classes lists 'car' twice"):
        load_voc_detections(
            str(S / "voc" / "results" / "comp4_det_test_{cls}.txt"), ["000004"], classes=["car", "car"]
        )
    with pytest.raises(ConfigError, match="kpt_oks_sigmas must be positive"):
        CocoParams.from_options("keypoints", kpt_oks_sigmas=[0.1, 0.0])
    with pytest.raises(ConfigError, match="max_dets must be whole numbers"):
        CocoParams(max_dets=(1.9, 10, 100)).validated()
    with pytest.raises(ConfigError, match="iou_thrs must be from 0 to 1"):
        CocoParams(iou_thrs=[0.5, 2.0]).validated()
    with pytest.raises(ConfigError, match="use_cats must be true or false"):
        CocoParams.from_options("bbox", use_cats="false")
    assert CocoParams.from_options("bbox", max_dets="100,1,10").max_dets == (1, 10, 100)
    assert CocoParams.from_options("bbox", max_dets="100,10,10").max_dets == (10, 10, 100)
