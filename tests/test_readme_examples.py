"""The README's example commands run on the bundled data_samples and print what the README shows."""

import re
import shlex
from pathlib import Path

import pytest

from deteval.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _examples():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S)
    out = []
    for i, (lang, body) in enumerate(blocks):
        if lang != "bash":
            continue
        command = body.replace("\\\n", " ").strip()
        if "\n" in command or not command.startswith("deteval ") or "data_samples/" not in command:
            continue
        shown = blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "" else None
        out.append((command, shown))
    return out


EXAMPLES = _examples()


def test_readme_has_an_example_per_protocol():
    commands = " ".join(c for c, _ in EXAMPLES)
    for sub in ("deteval voc", "deteval coco", "deteval trec", "deteval mir"):
        assert sub in commands


@pytest.mark.parametrize("command, shown", EXAMPLES, ids=[c.split()[1] for c, _ in EXAMPLES])
def test_readme_example(command, shown, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(shlex.split(command)[1:]) == 0
    printed = capsys.readouterr().out
    if shown is not None:
        assert shown.strip() in printed
