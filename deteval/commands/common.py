"""Helpers shared by the subcommands: output options, preset handling, writing the result."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from deteval.config import load_preset
from deteval.errors import ConfigError
from deteval.report import FORMATS, render
from deteval.report.progress import note
from deteval.results import EvalResult


def add_output_args(
    parser: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS, *, curves: bool = True
) -> None:
    """``--format``, ``--output`` and, for the subcommands whose results have PR curves, ``--curves``."""
    parser.add_argument("--format", choices=formats, default=None, help="output format (default: table)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE instead of stdout")
    if curves:
        parser.add_argument(
            "--curves",
            action="store_true",
            help="include the per-class PR curves in JSON output (for `deteval report --plots` later)",
        )


def apply_preset(args: argparse.Namespace, parser: argparse.ArgumentParser, defaults: dict[str, Any]) -> None:
    """Fill options left unset (None) from ``--config`` and then from ``defaults``.

    Options declared with ``default=None`` are 'unset'; so a flag given on the command line always wins
    over the preset, and the preset over the built-in default.
    """
    preset: dict[str, Any] = {}
    if getattr(args, "config", None):
        preset = load_preset(args.config)
        known = {a.dest for a in parser._actions}
        unknown = sorted(k for k in preset if k.replace("-", "_") not in known)
        if unknown:
            raise ConfigError(f"unknown option(s) in preset: {', '.join(unknown)}", file=args.config)
    for key, value in preset.items():
        dest = key.replace("-", "_")
        if getattr(args, dest, None) is None:
            setattr(args, dest, value)
    for dest, value in defaults.items():
        if getattr(args, dest, None) is None:
            setattr(args, dest, value)


def write_text(text: str, output: str | None) -> None:
    """Write ``text`` to the file ``output`` (a ConfigError naming it if that fails) or to stdout."""
    if not output:
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the output: {exc.strerror or exc}", file=output) from None


def emit(result: EvalResult, args: argparse.Namespace) -> None:
    """Render ``result`` in ``args.format`` to ``args.output`` or stdout, then its warnings on stderr."""
    fmt = getattr(args, "format", None) or "table"
    text = render(result, fmt, include_curves=bool(getattr(args, "curves", False)))
    write_text(text, getattr(args, "output", None))
    warn_on_stderr(result)


def warn_on_stderr(result: EvalResult) -> None:
    """Each warning as ``deteval: warning: ...`` on stderr, whatever the format or ``--output`` (the result
    keeps them too); silenced by ``--quiet``."""
    sys.stdout.flush()  # the result first, when both go to one terminal
    for w in result.warnings:
        note(f"deteval: warning: {w}")
