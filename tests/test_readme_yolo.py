"""The README's YOLO walkthrough (``deteval yolo`` → ``--html`` → ``--compare-to`` → ``deteval explain``) runs
on the bundled sample and prints what the README shows: each ``console`` block is ``$ deteval ...`` and an
excerpt of its output, whose pieces (split at ``...`` lines) appear in that order."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from deteval.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _walkthrough() -> list[tuple[str, list[str]]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## YOLO datasets") :]
    section = section[: section.index("\n## ", 1)]
    out = []
    for body in re.findall(r"```console\n(.*?)```", section, flags=re.S):
        first, _, rest = body.partition("\n")
        assert first.startswith("$ deteval ")
        pieces = [p.strip("\n") for p in re.split(r"^\.\.\.\n", rest, flags=re.M)]
        out.append((first[2:], [p for p in pieces if p]))
    return out


WALKTHROUGH = _walkthrough()


def test_the_walkthrough_goes_through_the_toolkit() -> None:
    commands = [c for c, _ in WALKTHROUGH]
    assert len(commands) == 3
    assert (
        "--html" in commands[0]
        and "--compare-to" in commands[1]
        and commands[2].startswith("deteval explain")
    )


@pytest.mark.parametrize("command, pieces", WALKTHROUGH, ids=["html", "compare-to", "explain"])
def test_readme_yolo_walkthrough(
    command: str, pieces: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    (tmp_path / "data_samples").symlink_to(ROOT / "data_samples")  # outputs (report.html) land in tmp_path
    monkeypatch.chdir(tmp_path)
    assert main(shlex.split(command)[1:]) == 0
    printed = capsys.readouterr().out
    at = 0
    for piece in pieces:
        found = printed.find(piece, at)
        assert found >= 0, f"not printed (in this order): {piece!r}"
        at = found + len(piece)
    if "--html" in command:
        assert "Worst images" in (tmp_path / "report.html").read_text(encoding="utf-8")
