"""The ``deteval`` command: one subcommand per protocol.

Every :class:`~deteval.errors.DetevalError` is printed as ``deteval: error: <file>: <record>: <reason>`` with
exit status 2; no traceback reaches the user for bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from deteval import __version__
from deteval.commands import coco, compare, lvis, mir, openimages, presets, report, trec, voc, yolo
from deteval.errors import DetevalError
from deteval.report.progress import add_progress_args, configure_from_args

# Each module contributes one subcommand through ``register(subparsers)``.
_COMMAND_MODULES = [voc, coco, lvis, openimages, trec, mir, report, compare, presets, yolo]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deteval",
        description="Score ranked predictions against ground truth: Pascal VOC, COCO, TREC retrieval, MIR.",
    )
    parser.add_argument("--version", action="version", version=f"deteval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _COMMAND_MODULES:
        module.register(sub)
    for name, subparser in sub.choices.items():
        # Every subcommand takes --quiet (and --progress where there is work to show), applied in main().
        add_progress_args(subparser, progress=name != "presets")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    configure_from_args(args)
    try:
        return int(args.func(args, args._parser) or 0)
    except DetevalError as exc:
        print(f"deteval: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `deteval ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
