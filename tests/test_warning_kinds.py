"""Warnings of one kind repeated over the rows of a result are printed once with a count: the README's
multi-track MIR example warned about close boundaries 33 times on stdout and again on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from deteval.cli import main
from deteval.report.warning_cap import grouped_warnings, shown_warnings

MIREX = Path(__file__).resolve().parent.parent / "data_samples" / "mir" / "mirex"
ARGS = ["mir", str(MIREX / "ref"), str(MIREX / "est"), "--config", "mir_eval_segment"]


def test_a_kind_repeated_over_rows_is_shown_once_with_its_count():
    warnings = [
        "seg1: tau 0.5: 2 pair(s) close (closest: 0 and 0.3)",
        "other warning",
        "seg2: tau 0.5: 1 pair(s) close (closest: 4 and 4.1)",
        "seg2: tau 3.0: 7 pair(s) close (closest: 4 and 4.1)",
        "seg3: only here 1",
        "seg1: skipped bad record: x",
        "seg2: skipped bad record: x",
    ]
    assert grouped_warnings(warnings) == [
        "seg1: tau 0.5: 2 pair(s) close (closest: 0 and 0.3) (and 2 more like it on 2 rows: seg1, seg2; "
        "all listed in the JSON output)",
        "other warning",
        "seg3: only here 1",
        "seg1: skipped bad record: x",
        "seg2: skipped bad record: x",
    ]
    # one row's warnings (a single track) are all kept, whatever their numbers
    one = ["seg1: tau 0.5: 2 pair(s)", "seg1: tau 3.0: 5 pair(s)", "tau 0.5: x", "tau 3.0: x"]
    assert grouped_warnings(one) == one == shown_warnings(one)


def test_multi_track_mir_warns_once_per_kind(capsys):
    assert main([*ARGS, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["warnings"]) == 33  # the result keeps every one
    assert main(ARGS) == 0
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("deteval: warning: seg00: boundary tau") for line in lines)
    assert "(and 17 more like it on 9 rows: seg00, seg01, seg02, seg03, seg05, ...;" in lines[0]
    assert "(and 14 more like it on 9 rows:" in lines[1]
    # on stderr only: the terminal's table leaves them out
    assert out.count("warning:") == 0 and len(out.splitlines()) < 40
