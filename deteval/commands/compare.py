"""``deteval compare A.json B.json``: two saved results of one protocol side by side, with deltas."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.commands.common import add_output_args, warn_on_stderr, write_text
from deteval.report.compare import SORTS, compare_results
from deteval.report.latex import render_latex
from deteval.report.tables import FORMATS, render
from deteval.results import load_result


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    a = load_result(args.a)
    b = load_result(args.b)
    result = compare_results(
        a, b, metric=args.metric, sort=args.sort, reverse=args.reverse, sources=(args.a, args.b)
    )
    text = render_latex(result) if args.format == "latex" else render(result, args.format or "table")
    write_text(text, args.output)
    warn_on_stderr(result)
    return 0


def register(command: Any) -> None:
    p = command(
        "compare",
        run,
        description="Compare two results saved with --format json. Each class gets A's and B's value of "
        "one per-class metric and the delta B - A; classes present on one side only are listed with "
        "an empty value. Numeric summary fields are compared too.",
    )
    p.add_argument("a", metavar="A.json", help="the baseline result")
    p.add_argument("b", metavar="B.json", help="the result compared against it")
    p.add_argument(
        "--metric",
        help='per-class column to compare (default: "ap" if present, else the first numeric one)',
    )
    p.add_argument(
        "--sort",
        choices=SORTS,
        default="delta",
        help="row order: delta (largest gain first, default), abs (largest change first), "
        "name, none (A's order)",
    )
    p.add_argument("--reverse", action="store_true", help="reverse the row order (e.g. largest drop first)")
    add_output_args(p, (*FORMATS, "latex"), curves=False)  # no --curves: it would do nothing here
