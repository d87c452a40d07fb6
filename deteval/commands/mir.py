"""``deteval mir REF.lab EST.lab``: pairwise frame-label and boundary P/R/F of a structure annotation;
``deteval mir REF_DIR EST_DIR``: of every track (files paired by name), their mean, intervals and tests."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from deteval.commands import options as opt
from deteval.commands.common import add_output_args, apply_preset, emit
from deteval.commands.options import Checker
from deteval.commands.stats_options import add_stats_args, stats_options
from deteval.errors import ConfigError
from deteval.io.lab import MAX_TIME
from deteval.mir.boundary import RULES
from deteval.mir.evaluate import DEFAULT_TAUS, evaluate_mir
from deteval.mir.pairwise import GRIDS
from deteval.report import FORMATS
from deteval.stats.mir import evaluate_mir_tracks

#: The highest frame rate accepted for the pairwise measure (frames per second).
MAX_FRAME_RATE = 1e6

DEFAULTS: dict[str, Any] = {
    "tau": list(DEFAULT_TAUS),
    "rule": "one_to_one",
    "frame_rate": 10.0,
    "grid": "exact",
    "trim": False,
    "adjust": False,
    "case_sensitive": True,
    "on_error": "raise",
}


def _tau(value: Any, cli: bool) -> str:
    """A boundary tolerance in seconds, kept as written (it names the result's block: ``boundary.0.5``)."""
    opt.number(0.0, MAX_TIME, "a tolerance in seconds")(value, cli or isinstance(value, str))
    return value.strip() if isinstance(value, str) else str(value)


OPTIONS: dict[str, Checker] = {
    "tau": opt.list_of(_tau, 100),
    "rule": opt.choice(RULES),
    "frame_rate": opt.number(0.0, MAX_FRAME_RATE, "frames per second", open_lo=True),
    "grid": opt.choice(GRIDS),
    "trim": opt.boolean,
    "adjust": opt.boolean,
    "case_sensitive": opt.boolean,
    "on_error": opt.choice(("raise", "skip")),
    "format": opt.choice(FORMATS),
}


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    apply_preset(args, parser, DEFAULTS, OPTIONS)
    # (each option of DEFAULTS, checked and completed, is a keyword of evaluate_mir; --tau's is taus)
    mir_options = {"taus" if k == "tau" else k: getattr(args, k) for k in DEFAULTS}
    stats = stats_options(args)
    folders = [Path(p).is_dir() for p in (args.reference, args.estimate)]
    if any(folders):
        if not all(folders):
            folder, other = (args.reference, args.estimate) if folders[0] else (args.estimate, args.reference)
            raise ConfigError(
                f"{folder} is a folder but {other} is not: give two .lab files (one track) or two folders "
                "(tracks paired by file name)"
            )
        result = evaluate_mir_tracks(
            args.reference,
            args.estimate,
            compare_to=args.compare_to or (),
            pattern=args.pattern or "*.lab",
            statistics=stats,
            **mir_options,
        )
    else:
        if stats is not None:
            raise ConfigError(
                "--ci and --compare-to resample the tracks: give a reference folder and an estimate folder "
                "(tracks paired by file name), not one pair of files"
            )
        if args.pattern is not None:
            raise ConfigError("--pattern selects the files of two folders; REF and EST are files")
        result = evaluate_mir(args.reference, args.estimate, **mir_options)
    emit(result, args)
    return 0


def register(command: Any) -> None:
    p = command(
        "mir",
        run,
        description=(
            "Compare an estimated structure annotation with a reference (.lab files: 'start end label' per "
            "line, seconds). Reports pairwise frame-label P/R/F and boundary P/R/F for each tolerance. "
            "Given two folders, every track (a reference and an estimate of the same file name) is "
            "evaluated, and the mean over tracks is reported with each track's numbers."
        ),
    )
    p.add_argument("reference", metavar="REF", help="reference annotation (.lab), or a folder of them")
    p.add_argument(
        "estimate", metavar="EST", help="estimated annotation (.lab), or a folder of them (same file names)"
    )
    p.add_argument(
        "--pattern",
        default=None,
        metavar="GLOB",
        help="with two folders: the annotation files to pair by name (default '*.lab')",
    )
    p.add_argument(
        "--tau",
        action="append",
        default=None,
        metavar="SECONDS",
        help="boundary tolerance; repeat for several (default: 0.5 and 3.0, as MIREX)",
    )
    p.add_argument(
        "--rule",
        choices=RULES,
        default=None,
        help="boundary hits: one_to_one = maximum matching as mir_eval (default); "
        "fmp = every estimate inside a reference window counts (FMP)",
    )
    p.add_argument(
        "--frame-rate",
        default=None,
        metavar="F",
        help="frames per second for the pairwise measure (default 10, mir_eval's 0.1 s frames)",
    )
    p.add_argument(
        "--grid",
        choices=GRIDS,
        default=None,
        help="frame times: exact = k / F (default); mir_eval = mir_eval's float32 grid, bit for bit",
    )
    p.add_argument(
        "--trim",
        action="store_true",
        default=None,
        help="ignore the first and last boundary (track start and end), as mir_eval's trim=True",
    )
    p.add_argument(
        "--adjust",
        action="store_true",
        default=None,
        help="as mir_eval.segment.evaluate: pad the reference to start at 0 ('__T_MIN') and cut or pad the "
        "estimate to the reference's span ('__T_MIN', '__T_MAX') before scoring",
    )
    p.add_argument(
        "--ignore-case",
        dest="case_sensitive",
        action="store_false",
        default=None,
        help="compare labels case-insensitively (mir_eval lower-cases labels)",
    )
    p.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default=None,
        help="a bad .lab line: raise (default: exit 2 naming file and line) or skip (left out, each listed "
        "in the warnings, counted in skipped_records)",
    )
    p.add_argument("--config", metavar="PRESET", help="a preset name or TOML file providing these options")
    # The results are nested (pairwise, one block per tolerance): table and JSON carry them all; the
    # flat CSV and Markdown renderers would show only the scalar fields.
    add_output_args(p, curves=False)  # no --curves: it would do nothing here
    add_stats_args(p, "another estimate folder, the same tracks by another system")
