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


@pytest.mark.fast_cases(command=1)
@pytest.mark.parametrize("command, shown", EXAMPLES, ids=[c.split()[1] for c, _ in EXAMPLES])
def test_readme_example(command, shown, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(shlex.split(command)[1:]) == 0
    printed = capsys.readouterr().out
    if shown is not None:
        assert shown.strip() in printed


def _training_loop_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b for lang, b in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S) if lang == "python"]
    (block,) = [b for b in blocks if "MeanAveragePrecision" in b]
    return block


@pytest.mark.parametrize("protocol", ["coco", "voc"])
def test_readme_training_loop_runs_for_both_protocols(protocol, capsys):
    """The README's Python block runs as written with a toy loader and model (VOC: the protocol swapped in
    as its comment says), and prints the one-line summary and the mAP."""
    import numpy as np

    code = _training_loop_example()
    if protocol == "voc":
        code = code.replace('protocol="coco"', 'protocol="voc", metric="voc07"')
    boxes = np.array([[0.0, 0.0, 10.0, 10.0], [20.0, 20.0, 40.0, 50.0]])
    loader = [(i, [{"boxes": boxes + i, "labels": [1, 2], "image_id": i}]) for i in range(3)]

    def model(i):
        return [{"boxes": boxes + i + 1, "scores": [0.9, 0.3], "labels": [1, 2], "image_id": i}]

    ns = {"loader": loader, "model": model}
    exec(code, ns)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"MetricResult(protocol={protocol!r}") and "2 classes" in printed[0]
    mean_ap = float(printed[1].split()[0])
    summary = ns["result"].summary
    assert mean_ap == (summary["AP"] if protocol == "coco" else summary["map"]) and mean_ap > 0.5


def _doc_blocks(name: str) -> list[str]:
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    return [b for lang, b in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S) if lang == "python"]


@pytest.mark.fast_cases(index=1)
@pytest.mark.parametrize("index", range(6))
def test_docs_api_examples_run(index, capsys, monkeypatch):
    """Each Python example of docs/api.md runs from the repository root and prints something."""
    blocks = _doc_blocks("api.md")
    assert len(blocks) == 6
    monkeypatch.chdir(ROOT)
    exec(blocks[index], {})
    assert capsys.readouterr().out.strip()
