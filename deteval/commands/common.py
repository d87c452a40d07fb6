"""Helpers shared by the subcommands: output options, preset handling, writing the result."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from deteval.analysis.options import analyses_requested
from deteval.commands.cluster import sharding_requested
from deteval.commands.options import Checker, coco, run_checker
from deteval.config import load_preset, resolve_preset
from deteval.detection.coco_params import parse_option
from deteval.errors import ConfigError
from deteval.io.guards import write_atomically
from deteval.match.boundary import BOUNDARY_PROFILES
from deteval.report import FORMATS, render
from deteval.report.progress import note
from deteval.report.warning_cap import shown_warnings
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


def add_boundary_args(parser: argparse.ArgumentParser) -> None:
    """``--dilation-ratio`` and ``--boundary-profile``, read with ``--iou-type boundary``."""
    parser.add_argument(
        "--dilation-ratio",
        default=None,
        metavar="R",
        help="boundary IoU: the boundary's width as a share of the image diagonal (default 0.02, as "
        "boundary-iou-api); d = max(1, round(R x diagonal)) pixels",
    )
    parser.add_argument(
        "--boundary-profile",
        choices=tuple(BOUNDARY_PROFILES),
        default=None,
        help="boundary IoU: whose rounding of R x diagonal to pixels: boundary-iou-api (default; vernier's, "
        "half to even), ultrafast (half away from zero) or faster-coco-eval (halves down)",
    )


def boundary_options(args: argparse.Namespace) -> dict[str, Any]:
    """``dilation_ratio`` and ``boundary_profile`` as given on the command line (read and bounded), for an
    evaluation function's keywords."""
    out: dict[str, Any] = {}
    if getattr(args, "dilation_ratio", None) is not None:
        checked = run_checker(coco("dilation_ratio"), args.dilation_ratio, cli=True, flag="--dilation-ratio")
        out["dilation_ratio"] = parse_option("dilation_ratio", checked)
    if getattr(args, "boundary_profile", None) is not None:
        out["boundary_profile"] = args.boundary_profile
    return out


def apply_preset(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    defaults: dict[str, Any],
    options: dict[str, Checker],
) -> None:
    """Fill options left unset (None) from ``--config`` and then from ``defaults``.

    Options declared with ``default=None`` are 'unset'; so a flag given on the command line always wins
    over the preset, and the preset over the built-in default. Every command-line value and every preset
    value of ``options`` (``{dest: checker}``, see :mod:`deteval.commands.options`) is type- and
    range-checked first (a ConfigError naming the flag, or the preset file and key), and a preset may set
    only those options.
    """
    flags = {a.dest: max(a.option_strings, key=len) for a in parser._actions if a.option_strings}
    for dest, checker in options.items():
        value = getattr(args, dest, None)
        if value is not None:
            setattr(args, dest, run_checker(checker, value, cli=True, flag=flags.get(dest, dest)))
    preset: dict[str, Any] = {}
    source = None
    if getattr(args, "config", None):
        source = str(resolve_preset(args.config))
        preset = load_preset(args.config)
        unknown = sorted(k for k in preset if k.replace("-", "_") not in options)
        if unknown:
            raise ConfigError(
                f"unknown option(s) in preset: {', '.join(unknown)} (a preset may set: "
                f"{', '.join(sorted(k.replace('_', '-') for k in options))})",
                file=source,
            )
    for key, value in preset.items():
        dest = key.replace("-", "_")
        value = run_checker(options[dest], value, cli=False, flag=key, file=source)
        if getattr(args, dest, None) is None:
            setattr(args, dest, value)
    for dest, value in defaults.items():
        if getattr(args, dest, None) is None:
            setattr(args, dest, value)


def write_text(text: str | Iterable[str], output: str | None) -> None:
    """Write ``text`` (or its pieces, written one after the other as they come) to the file ``output`` (a
    ConfigError naming it if that fails) or to stdout.

    The file is replaced atomically: the text goes to a temporary file in the same folder, is flushed to
    disk (fsync) and renamed over ``output``. A kill, a full disk or any error mid-write leaves the previous
    file intact and no temporary file behind. A symlink is followed (its target is replaced); an existing
    non-regular file (``/dev/stdout``, a named pipe) is written directly, as a rename cannot replace it.
    """
    pieces = [text] if isinstance(text, str) else text
    if not output:
        for piece in pieces:
            sys.stdout.write(piece)
        return
    try:
        write_atomically(Path(os.path.realpath(output)), (p.encode("utf-8") for p in pieces))
    except OSError as exc:
        raise ConfigError(f"cannot write the output: {exc.strerror or exc}", file=output) from None


def wants_per_class(args: argparse.Namespace) -> bool:
    """Whether the result rendered for ``args`` keeps its per-class rows: asked for with ``--per-class``, and
    always in JSON output."""
    return bool(getattr(args, "per_class", False)) or (getattr(args, "format", None) or "table") == "json"


def emit(result: EvalResult, args: argparse.Namespace) -> None:
    """Render ``result`` in ``args.format`` to ``args.output`` or stdout, then its warnings on stderr. The
    table leaves them to stderr alone (printed once; the file holds what the terminal shows); every other
    format keeps them as data."""
    fmt = getattr(args, "format", None) or "table"
    output = getattr(args, "output", None)
    text = render(
        result,
        fmt,
        include_curves=bool(getattr(args, "curves", False)),
        with_warnings=fmt != "table",
    )
    write_text(text, output)
    warn_on_stderr(result)


def warn_on_stderr(result: EvalResult) -> None:
    """Each warning as ``deteval: warning: ...`` on stderr, whatever the format or ``--output`` (the result
    keeps them too); silenced by ``--quiet``."""

    sys.stdout.flush()  # the result first, when both go to one terminal
    for w in shown_warnings(result.warnings):  # (skipped records: the first 20 and a count)
        note(f"deteval: warning: {w}")


def more_than_numbers(args: argparse.Namespace) -> bool:
    """Whether the options ask for more than a protocol's numbers: statistics (``--ci``, ``--compare-to``),
    an analysis, figures (``--plots``), a cluster or shards (a command's ``route`` then hands it to the module
    that loads those)."""
    return (
        args.ci is not None
        or bool(args.compare_to)
        or analyses_requested(args)
        or bool(args.plots)
        or sharding_requested(args)
    )
