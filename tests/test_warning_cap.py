"""``--on-error skip``: printed output (stderr, the text table, Markdown) shows the first 20 skipped-record
warnings and one line counting the rest; JSON (and CSV) keep every one, and ``skipped_records`` the count."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from deteval.cli import main
from deteval.report.warning_cap import SKIPPED_SHOWN, shown_warnings

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "voc"


def test_shown_warnings_keeps_the_first_and_every_other_warning():
    skipped = [f"skipped bad record: f.txt: line {i}: bad" for i in range(1, 31)]
    warnings = ["first", *skipped[:25], "middle", *skipped[25:], "last"]
    shown = shown_warnings(warnings)
    assert shown == [
        "first", *skipped[:SKIPPED_SHOWN],
        "... and 10 more skipped bad records (all listed in the JSON output)", "middle", "last",
    ]  # fmt: skip
    assert shown_warnings(warnings[:21]) == warnings[:21]  # 20 or fewer skipped: all shown
    assert shown_warnings(["A: skipped bad record: x", "A: skipped bad record: y"], limit=1) == [
        "A: skipped bad record: x",
        "... and 1 more skipped bad records (all listed in the JSON output)",
    ]


@pytest.fixture
def voc(tmp_path):
    root = tmp_path / "voc"
    shutil.copytree(SAMPLE, root)
    car = root / "results" / "comp4_det_test_car.txt"
    car.write_text(car.read_text() + "".join(f"000004 bad{i} 1 2 3 4\n" for i in range(50)))
    return root


def _argv(root: Path, *extra: str) -> list[str]:
    return [
        "voc", "--annotations", str(root / "Annotations"), "--image-set",
        str(root / "ImageSets" / "Main" / "test.txt"), "--detections",
        str(root / "results" / "comp4_det_test_{cls}.txt"), "--on-error", "skip", *extra,
    ]  # fmt: skip


def test_printed_warnings_are_capped_json_keeps_all(voc, capsys, tmp_path):
    assert main(_argv(voc, "--format", "json")) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["skipped_records"] == 50
    assert sum(w.startswith("skipped bad record:") for w in doc["warnings"]) == 50
    more = "... and 30 more skipped bad records (all listed in the JSON output)"
    assert err.count("deteval: warning: skipped bad record:") == SKIPPED_SHOWN
    assert f"deteval: warning: {more}\n" in err
    assert "'bad19'" in err and "'bad20'" not in err  # the first 20, in file order
    assert main(_argv(voc, "--format", "markdown")) == 0
    out = capsys.readouterr().out
    assert out.count("> warning: skipped bad record:") == SKIPPED_SHOWN
    assert f"> warning: {more}" in out
    # the table leaves the warnings to stderr (printed once); a table written to a file is what stdout shows
    assert main(_argv(voc)) == 0
    out, err = capsys.readouterr()
    assert "warning:" not in out and err.count("deteval: warning: skipped bad record:") == SKIPPED_SHOWN
    table = tmp_path / "table.txt"
    assert main(_argv(voc, "-o", str(table))) == 0
    assert table.read_text() == out
    assert capsys.readouterr().err.count("deteval: warning: skipped bad record:") == SKIPPED_SHOWN
    assert main(_argv(voc, "--format", "csv")) == 0
    assert capsys.readouterr().out.count("warning,skipped bad record:") == 50
