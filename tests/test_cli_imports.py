"""Cold start of the ``deteval`` command: only the chosen subcommand's module is imported (issue 15).

The imports are checked in a fresh interpreter (a subprocess), since this test process has imported
everything already. Nothing here is timed; scripts/bench_coco.py and ``python -X importtime`` measure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from deteval import cli

DATA = Path(__file__).parent / "data" / "coco" / "coco_fruits"
HEAVY = ("matplotlib", "scipy", "dask", "PIL", "pandas")

# Runs deteval's main with argv, then writes the top-level module names it imported to stderr as JSON.
PROBE = """
import json, sys
from deteval.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nMODULES " + json.dumps(sorted({m.split(".")[0] for m in sys.modules})) + "\\n")
sys.exit(code)
"""


def _run(*argv: str) -> tuple[int, str, set[str]]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=False)
    line = next(x for x in out.stderr.splitlines() if x.startswith("MODULES "))
    return out.returncode, out.stdout, set(json.loads(line[len("MODULES ") :]))


def test_help_imports_no_numpy_and_lists_every_command() -> None:
    code, out, modules = _run("--help")
    assert code == 0
    for name in cli._COMMANDS:
        assert f"    {name}" in out
    assert "numpy" not in modules
    assert not modules & set(HEAVY)


@pytest.mark.slow
def test_plain_coco_run_imports_nothing_heavy() -> None:
    gt, dt = DATA / "fruit_val_coco_format.json", DATA / "coco_instances_results.json"
    code, out, modules = _run("coco", str(gt), str(dt), "--format", "json")
    assert code == 0
    from deteval.detection.coco import evaluate_coco

    assert json.loads(out)["stats"] == evaluate_coco(gt, dt).stats.tolist()
    assert not modules & set(HEAVY), modules & set(HEAVY)
    assert "pycocotools" not in modules  # bbox evaluation never rasterises masks


@pytest.mark.slow
@pytest.mark.parametrize("command", ["coco", "trec", "explain"])
def test_subcommand_help_still_complete(command: str) -> None:
    code, out, _ = _run(command, "--help")
    assert code == 0
    assert f"usage: deteval {command}" in out
    assert "--quiet" in out


def test_stub_help_lines_equal_the_modules_own() -> None:
    full = cli.build_parser()
    lazy = cli.build_parser("coco", lazy=True)

    def helps(parser: object) -> dict[str, str | None]:
        sub = next(a for a in parser._actions if a.dest == "command")  # type: ignore[attr-defined]
        return {a.dest: a.help for a in sub._choices_actions}

    assert helps(full) == {name: text for name, (_, text) in cli._COMMANDS.items()}
    assert list(helps(lazy)) == list(helps(full))
    assert helps(lazy) == helps(full)


def test_command_detection() -> None:
    assert cli._command_in(["--quiet", "coco", "a", "b"]) == "coco"
    assert cli._command_in(["--help"]) is None
    assert cli._command_in(["nonsense"]) is None
    # an unknown command still fails as argparse's invalid choice, naming the commands
    code, _, _ = _run("nonsense")
    assert code == 2


def test_coco_command_imports_no_other_protocol() -> None:
    """``deteval coco``'s module loads neither the YOLO readers nor Ultralytics' rules nor YAML (the analyses'
    YOLO inputs live in their own module)."""
    probe = (
        "import json, sys; import deteval.commands.coco; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('deteval', 'yaml')))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    modules = set(json.loads(out.stdout))
    others = {"deteval.io.yolo", "deteval.run.yolo", "deteval.detection.ultralytics", "yaml"}
    assert "deteval.commands.coco" in modules
    assert not modules & others, sorted(modules & others)


def _modules_loaded(*argv: str) -> set[str]:
    """Every module (full names) ``deteval argv`` imported; the run must succeed."""
    probe = PROBE.replace('{m.split(".")[0] for m in sys.modules}', "set(sys.modules)")
    assert probe != PROBE
    out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stderr.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line[len("MODULES ") :]))


@pytest.mark.slow
def test_plain_coco_run_loads_no_analysis_statistics_or_figures_code() -> None:
    """The plain evaluation (numbers only) runs in deteval.commands.coco_plain: the module of the analyses,
    statistics, figures and clusters (deteval.commands.coco) and what it imports stay unloaded; an analysis
    option loads it."""
    gt, dt = DATA / "fruit_val_coco_format.json", DATA / "coco_instances_results.json"
    loaded = _modules_loaded
    plain = loaded("coco", str(gt), str(dt), "--format", "json")
    assert "deteval.commands.coco_plain" in plain
    later = {
        "deteval.commands.coco",
        "deteval.analysis.cli",
        "deteval.analysis.tide",
        "deteval.analysis.inputs",
        "deteval.stats.coco",
        "deteval.run.client",
    }
    assert not plain & later, sorted(plain & later)
    with_errors = loaded("coco", str(gt), str(dt), "--format", "json", "--errors")
    assert {"deteval.commands.coco", "deteval.analysis.cli", "deteval.analysis.tide"} <= with_errors


@pytest.mark.slow
def test_plain_yolo_run_loads_no_analysis_statistics_or_figures_code() -> None:
    """The plain YOLO evaluation runs in deteval.commands.yolo_plain: deteval.commands.yolo (statistics,
    analyses, figures, other tasks) and what only it imports stay unloaded; a statistics option loads it."""
    root = Path(__file__).parent.parent / "data_samples" / "yolo"
    loaded = _modules_loaded
    args = ("yolo", str(root / "data.yaml"), str(root / "predictions" / "labels"), "--format", "json")
    later = {
        "deteval.commands.yolo",
        "deteval.commands.coco",
        "deteval.analysis.cli",
        "deteval.analysis.tide",
        "deteval.stats.coco",
        "deteval.stats.ultralytics",
        "deteval.report.yolo_plots",
    }
    for profile in ("coco", "ultralytics", "supervision"):
        plain = loaded(*args, "--profile", profile)
        assert "deteval.commands.yolo_plain" in plain
        assert not plain & later, sorted(plain & later)
    with_ci = loaded(*args, "--profile", "coco", "--ci", "0.9", "--bootstrap", "5")
    assert {"deteval.commands.yolo", "deteval.stats.coco"} <= with_ci
