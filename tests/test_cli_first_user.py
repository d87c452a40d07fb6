"""The command line as a first user meets it (#13.6-11, #12.14): warnings on stderr, --classes typos, flag
names in messages, tidy Markdown/CSV, clean --help, no options that do nothing, an xyxy-as-xywh warning,
consistent Python versions and dependencies, CSV formula injection."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
import tomllib

from deteval.cli import build_parser, main
from deteval.report.tables import render
from deteval.results import EvalResult

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "data_samples"
VOC = [
    "voc",
    "--annotations", str(S / "voc" / "Annotations"),
    "--image-set", str(S / "voc" / "ImageSets" / "Main" / "test.txt"),
    "--detections", str(S / "voc" / "results" / "comp4_det_test_{cls}.txt"),
]  # fmt: skip
COCO = ["coco", str(S / "coco" / "instances_val.json"), str(S / "coco" / "results_bbox.json")]
TREC = ["trec", str(S / "trec" / "qrels.txt"), str(S / "trec" / "run.txt")]
MIR = ["mir", str(S / "mir" / "ref.lab"), str(S / "mir" / "est.lab")]
VAL = ROOT / "tests" / "data" / "coco" / "coco_val2014_100"


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
@pytest.mark.parametrize(
    "command", [[*COCO, "--max-dets", "1,10,50"], MIR, TREC], ids=["coco-maxdets", "mir", "trec"]
)
def test_warnings_go_to_stderr_in_every_format_and_with_output(command, fmt, capsys, tmp_path):
    result = EvalResult.from_json(_run_json(command, capsys))
    assert result.warnings, "the sample must produce a warning for this test to mean anything"
    out = tmp_path / "out.txt"
    assert main([*command, "--format", fmt, "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert [f"deteval: warning: {w}" for w in result.warnings] == captured.err.strip().splitlines()[
        -len(result.warnings) :
    ]
    assert main([*command, "--format", fmt, "--output", str(out), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def _run_json(command, capsys):
    assert main([*command, "--format", "json"]) == 0
    return capsys.readouterr().out


def test_unknown_class_is_an_error_with_the_closest_match(capsys):
    assert main([*VOC, "--classes", "dog,cta"]) == 2
    err = capsys.readouterr().err
    assert "--classes names 'cta' (did you mean 'cat'?)" in err and "known classes: " in err
    assert "dog" in err.split("known classes: ")[1]
    assert main([*VOC, "--classes", "dog,cat", "--format", "json"]) == 0


def test_messages_name_cli_flags(tmp_path, capsys):
    bad = tmp_path / "comp4_det_test_dog.txt"
    bad.write_text("not_an_image 0.5 1 1 5 5\n")
    args = [*VOC[:5], "--detections", str(tmp_path / "comp4_det_test_{cls}.txt")]
    assert main(args) == 2
    assert "--unknown-images warn" in capsys.readouterr().err
    qrels = tmp_path / "qrels"
    qrels.write_text((S / "trec" / "qrels.txt").read_text() + "999 0 d1 1\n")
    assert main(["trec", str(qrels), str(S / "trec" / "run.txt")]) == 0
    err = capsys.readouterr().err
    assert "use -c (Python: complete=True)" in err


def test_coco_markdown_and_csv_are_tidy(capsys):
    assert main([*COCO, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    fields = re.findall(r"^\| ([^|]+) \| [^|]+ \|$", md, flags=re.M)
    assert not [f for f in fields if f.startswith("stats.")]  # not repeated under a second name
    assert "AP" not in fields and "AR100" not in fields  # the twelve lines above show them
    assert "params.iou_thrs" in fields and not [f for f in fields if re.search(r"\.\d+$", f)]
    assert "| params.iou_thrs | 0.5:0.95:10 |" in md and "| params.max_dets | 1,10,100 |" in md
    assert main([*COCO, "--format", "csv", "--per-class"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    blank = rows.index([])
    assert rows[0][0] == "class" and len(rows[1:blank]) == 3
    names = [r[0] for r in rows[blank + 1 :]]
    assert names[0] == "field" and "stats.0" not in names and "AP" in names
    assert not [n for n in names if re.search(r"\.\d+$", n)]


def test_mir_csv_has_no_lone_class_line_and_trec_tables_say_topic(capsys):
    assert main([*MIR, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "field,value"
    for fmt, head in (("table", "topic "), ("markdown", "| topic |"), ("csv", "topic,")):
        assert main([*TREC, "-q", "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert head in out and "class" not in out


def test_help_has_no_rest_markup_and_no_idle_options(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        text = p.format_help()
        assert not re.search(r"``|:func:|:class:|:mod:", text), name
    for command, flag in (
        (MIR, "--curves"),
        (["compare", "a", "b"], "--curves"),
        (["presets"], "--progress"),
    ):
        with pytest.raises(SystemExit) as exc:
            main([*command, flag])
        assert exc.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err
    assert main(["presets", "--quiet"]) == 0


@pytest.mark.slow
def test_xyxy_given_as_xywh_is_warned_with_the_count(tmp_path, capsys):
    res = json.loads((VAL / "instances_val2014_fakebbox100_results.json").read_text())
    for d in res:
        x, y, w, h = d["bbox"]
        d["bbox"] = [x, y, x + w, y + h]
    path = tmp_path / "xyxy.json"
    path.write_text(json.dumps(res))
    assert main(["coco", str(VAL / "instances_val2014_100.json"), str(path)]) == 0
    err = capsys.readouterr().err
    assert "deteval: warning: 521 of 734 result boxes run past their image's right or bottom border" in err
    assert "[x1, y1, x2, y2] instead of COCO's [x, y, width, height]" in err
    assert (
        main(
            [
                "coco",
                str(VAL / "instances_val2014_100.json"),
                str(VAL / "instances_val2014_fakebbox100_results.json"),
            ]
        )
        == 0
    )
    assert "border" not in capsys.readouterr().err  # the real results: no warning


def test_python_versions_and_dependencies_agree():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    low = re.fullmatch(r">=(3\.\d+)", meta["requires-python"]).group(1)
    assert f"Python {low} or newer" in (ROOT / "README.md").read_text()
    declared = {re.split(r"[<>=;\[ ]", d)[0].lower() for d in meta["dependencies"]}
    uses_pil = re.search(
        r"^\s*(import PIL|from PIL)",
        "\n".join(p.read_text() for p in (ROOT / "deteval").rglob("*.py")),
        flags=re.M,
    )
    assert ("pillow" in declared) == bool(uses_pil)  # declared exactly when deteval itself imports it


@pytest.mark.parametrize("name", ['=HYPERLINK("http://x")', "+1+2", "-cmd|' /C calc'!A0", "@SUM(A1)", "\tx"])
def test_csv_cells_cannot_run_as_formulas(name):
    result = EvalResult("voc", {"map": -0.5, "note": "=1+1"}, {name: {"ap": -0.25, "label": "-x"}},
                        warnings=["+warn"])  # fmt: skip
    rows = list(csv.reader(io.StringIO(render(result, "csv"))))
    assert rows[1][0] == "'" + name and rows[1][1] == "-0.25" and rows[1][2] == "'-x"
    cells = dict(r for r in rows if len(r) == 2)
    assert cells["map"] == "-0.5" and cells["note"] == "'=1+1" and cells["warning"] == "'+warn"
    assert float(cells["map"]) == -0.5  # a negative number stays a number
