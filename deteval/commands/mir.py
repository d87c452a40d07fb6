"""``deteval mir REF.lab EST.lab``: pairwise frame-label and boundary P/R/F of a structure annotation."""

from __future__ import annotations

import argparse
import math
from typing import Any

from deteval.commands.common import add_output_args, apply_preset, emit
from deteval.errors import ConfigError
from deteval.mir.boundary import RULES
from deteval.mir.evaluate import DEFAULT_TAUS, evaluate_mir
from deteval.mir.pairwise import GRIDS

DEFAULTS: dict[str, Any] = {
    "tau": list(DEFAULT_TAUS),
    "rule": "one_to_one",
    "frame_rate": 10.0,
    "grid": "exact",
    "trim": False,
    "case_sensitive": True,
    "on_error": "raise",
}


def _positive(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    return v


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    apply_preset(args, parser, DEFAULTS)
    taus = args.tau if isinstance(args.tau, list) else [args.tau]
    for t in taus:
        try:
            ok = math.isfinite(float(t)) and float(t) >= 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ConfigError(f"--tau must be a number >= 0, got {t!r}")
    if args.rule not in RULES:
        raise ConfigError(f"--rule must be one of {', '.join(RULES)}, got {args.rule!r}")
    if args.on_error not in ("raise", "skip"):
        raise ConfigError(f"on_error must be 'raise' or 'skip', got {args.on_error!r}")
    if args.grid not in GRIDS:
        raise ConfigError(f"--grid must be one of {', '.join(GRIDS)}, got {args.grid!r}")
    result = evaluate_mir(
        args.reference,
        args.estimate,
        taus=[t if isinstance(t, str) else str(t) for t in taus],
        rule=args.rule,
        frame_rate=_positive(args.frame_rate, "--frame-rate"),
        grid=args.grid,
        trim=bool(args.trim),
        case_sensitive=bool(args.case_sensitive),
        on_error=args.on_error,
    )
    emit(result, args)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mir",
        help="music structure: pairwise frame-label and boundary P/R/F of two .lab files",
        description=(
            "Compare an estimated structure annotation with a reference (.lab files: 'start end label' per "
            "line, seconds). Reports pairwise frame-label P/R/F and boundary P/R/F for each tolerance."
        ),
    )
    p.add_argument("reference", metavar="REF.lab", help="reference annotation")
    p.add_argument("estimate", metavar="EST.lab", help="estimated annotation")
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
        type=float,
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
    p.set_defaults(func=run, _parser=p)
