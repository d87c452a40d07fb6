"""The ``deteval`` command: one subcommand per protocol.

Every :class:`~deteval.errors.DetevalError` is printed as ``deteval: error: <file>: <record>: <reason>`` with
exit status 2; no traceback reaches the user for bad input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TextIO

from deteval import __version__
from deteval.errors import DetevalError, DetevalWarning
from deteval.report.progress import add_progress_args, configure_from_args

# Each module (deteval.commands.<module>) contributes its subcommands through ``register(command)`` (see
# :func:`_add_command`). Only the module of the command being run is imported: `deteval --help` needs no
# numpy, and one evaluation none of the other protocols' code. A command may route its parsed options to
# another module of deteval.commands (:func:`_runner`): `deteval coco` loads its analyses, statistics and
# figures only when they are asked for. Every command's one-line help lives here, for the listing of the commands not imported.
_COMMANDS: dict[str, tuple[str, str]] = {
    "voc": (
        "voc_plain",
        "Pascal VOC mAP (VOC07 11-point or VOC2010+ all-point), as the official devkit computes it",
    ),
    "coco": (
        "coco_plain",
        "COCO detection / segmentation / keypoints evaluation (pycocotools numbers, much faster)",
    ),
    "dota": ("dota", "DOTA oriented-box mAP (Task1), as the DOTA devkit computes it"),
    "lvis": ("lvis", "LVIS federated evaluation (lvis-api numbers), Fixed AP and pooled AP"),
    "crowdpose": (
        "pose",
        "CrowdPose keypoints: AP by crowd level (faster-coco-eval's keypoints_crowd numbers)",
    ),
    "sigmas": ("pose", "estimate per-keypoint OKS sigmas from repeated annotations or a model's errors"),
    "openimages": (
        "openimages",
        "Open Images challenge detection metric (group-of boxes, image-level labels, hierarchy)",
    ),
    "trec": ("trec", "trec_eval measures for a TREC run against qrels"),
    "mir": ("mir", "music structure: pairwise frame-label and boundary P/R/F of two .lab files or folders"),
    "report": ("report", "re-render a saved JSON result (table, markdown, csv, json) and optionally plot it"),
    "compare": ("compare", "compare two saved results of the same protocol, per class, with deltas (B - A)"),
    "presets": ("presets", "list the shipped protocol presets"),
    "yolo": (
        "yolo_plain",
        "score a YOLO dataset's predictions as yolo val, pycocotools or supervision would",
    ),
    "convert": ("yolo", "convert a YOLO dataset to COCO JSON, or COCO JSON to YOLO labels"),
    "explain": ("explain", "attribute the difference between two profiles' mAP rule by rule"),
}


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand argparse will dispatch to: the first argument not starting with '-' (the top-level
    parser has only --help and --version), if it names one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in _COMMANDS else None


def build_parser(command: str | None = None, *, lazy: bool = False) -> argparse.ArgumentParser:
    """The ``deteval`` parser. ``lazy``: register only ``command``'s module in full (importing it) and every
    other subcommand as a stub that carries its one-line help; otherwise every module in full."""
    parser = argparse.ArgumentParser(
        prog="deteval",
        description="Score ranked predictions against ground truth: Pascal VOC, COCO, TREC retrieval, MIR.",
    )
    parser.add_argument("--version", action="version", version=f"deteval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = {m for name, (m, _) in _COMMANDS.items() if not lazy or name == command}
    stubs = set()
    for name, (module, help_text) in _COMMANDS.items():
        if module not in wanted:
            # (never parsed: a command that runs has its module registered in full; the stub only lists it)
            sub.add_parser(name, help=help_text, add_help=False)
            stubs.add(name)
        elif name not in sub.choices:  # (a module may register several commands)
            importlib.import_module(f"deteval.commands.{module}").register(partial(_add_command, sub))
    for name, subparser in sub.choices.items():
        # Every subcommand takes --quiet (and --progress where there is work to show), applied in main().
        if name not in stubs:
            add_progress_args(subparser, progress=name != "presets")
    return parser


def _add_command(
    sub: Any, name: str, func: Callable[..., Any], **parser_options: Any
) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` with its one-line help from :data:`_COMMANDS`, run by ``func(args,
    parser)``, and return its parser. A module's ``register`` gets it with ``sub`` bound:
    ``command(name, func, **parser_options)``."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=_COMMANDS[name][1], **parser_options)
    parser.set_defaults(func=func, _parser=parser)
    return parser


def one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Print a Python warning as one line ``deteval: warning: <Category>: <message>`` on stderr (a
    :class:`~deteval.errors.DetevalWarning` without its category): no source file, line or code, as every
    other message of the command (replaces :func:`warnings.showwarning` while the command runs)."""
    text = " ".join(str(message).split())
    kind = "" if issubclass(category, DetevalWarning) else f"{category.__name__}: "
    print(f"deteval: warning: {kind}{text}", file=sys.stderr if file is None else file)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``deteval argv`` (the process's arguments for None); the exit status. Run as the program
    (``argv`` None), Python warnings are printed by :func:`one_line_warning`; called with ``argv`` (tests,
    other programs), the caller's warning handling is left as it is."""
    if argv is None:
        with warnings.catch_warnings():
            warnings.showwarning = one_line_warning
            return _main(sys.argv[1:])
    return _main(list(argv))


def _runner(args: argparse.Namespace) -> Callable[[argparse.Namespace, argparse.ArgumentParser], Any]:
    """The function that runs the parsed command: ``args.func``, or, where the command's module routes these
    options elsewhere (``args._route(args)`` names a module of deteval.commands), that module's ``run``,
    imported only then."""
    route = getattr(args, "_route", None)
    target = route(args) if route is not None else None
    if target is None:
        return args.func
    return importlib.import_module(f"deteval.commands.{target}").run


def _main(argv: list[str]) -> int:
    parser = build_parser(_command_in(argv), lazy=True)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    configure_from_args(args)
    try:
        # loaded as the subcommands are (build_parser): --help and --version load no numpy
        options = importlib.import_module("deteval.commands.options")
        options.check_shared_options(args, args._parser)  # the bounds of the options several commands share
        options.check_outputs(args, args._parser)  # no output onto an input
        return int(_runner(args)(args, args._parser) or 0)
    except DetevalError as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `deteval ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
