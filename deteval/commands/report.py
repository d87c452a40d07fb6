"""``deteval report RESULT.json``: re-render a saved result (table, Markdown, CSV, JSON), draw its plots."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.commands.common import add_output_args, warn_on_stderr, write_text
from deteval.report.plots import add_plot_args, write_plots_from_args
from deteval.report.tables import render
from deteval.results import load_result


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    result = load_result(args.result)
    # A saved result keeps its PR curves through a JSON re-render: nothing is dropped.
    text = render(result, args.format or "table", include_curves=bool(result.curves))
    write_plots_from_args(result, args)
    write_text(text, args.output)
    warn_on_stderr(result)
    return 0


def register(command: Any) -> None:
    p = command(
        "report",
        run,
        description="Re-render a result saved with --format json. With --plots DIR, also write the figures "
        "it supports: PR curves (if it was saved with its curves) and a per-class AP bar chart.",
    )
    p.add_argument("result", metavar="RESULT.json", help="a result saved with --format json")
    add_output_args(p, curves=False)  # no --curves: it would do nothing here
    add_plot_args(p)
