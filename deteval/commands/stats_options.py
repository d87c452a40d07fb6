"""The statistics options shared by ``voc``, ``coco`` and ``trec``: intervals and comparisons."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.errors import ConfigError
from deteval.stats.correction import CORRECTIONS
from deteval.stats.tests import TESTS


def add_stats_args(p: argparse.ArgumentParser, other: str) -> None:
    """``--ci``, ``--bootstrap``, ``--seed``, ``--ci-method``, ``--compare-to`` (``other`` says what it takes),
    ``--test``, ``--processes``, ``--correction``."""
    g = p.add_argument_group("confidence intervals and significance (deteval.stats)")
    g.add_argument(
        "--ci", type=float, metavar="LEVEL", help="bootstrap confidence intervals at LEVEL (e.g. 0.95)"
    )
    g.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="B",
        help="bootstrap resamples / randomization rounds (default 1000)",
    )
    g.add_argument(
        "--seed", type=int, default=0, metavar="N", help="random seed of the resamples (default 0)"
    )
    g.add_argument(
        "--ci-method",
        choices=("percentile", "bca"),
        default="percentile",
        help="interval method (default percentile)",
    )
    g.add_argument(
        "--compare-to",
        action="append",
        metavar="OTHER",
        help=f"compare with another system: {other} (repeatable)",
    )
    g.add_argument(
        "--test",
        choices=TESTS,
        default="bootstrap",
        help="significance test of a comparison (default bootstrap; t and wilcoxon for per-topic measures)",
    )
    g.add_argument(
        "--processes",
        type=_processes,
        default="auto",
        metavar="N|auto",
        help="resamples and rounds in N forked processes; auto (default): a second process when the rest "
        "would take 2 s or more and a core is idle, else 1 (the numbers do not depend on it)",
    )
    g.add_argument("--correction", choices=CORRECTIONS, default="holm", help="multiple-comparison correction across systems x metrics (default holm)")  # fmt: skip


def _processes(text: str) -> int | str:
    """``--processes``: a positive integer or ``auto``."""
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"a positive number of processes or 'auto', not {text!r}")
    return n


def stats_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The keyword options of :func:`deteval.stats.attach.add_statistics`, or None when neither ``--ci`` nor
    ``--compare-to`` was given."""
    if args.ci is None and not args.compare_to:
        return None
    if args.ci is not None and not 0.0 < args.ci < 1.0:
        raise ConfigError(f"--ci must be a level between 0 and 1 (e.g. 0.95), got {args.ci}")
    if args.bootstrap < 1:
        raise ConfigError(f"--bootstrap must be a positive number of resamples, got {args.bootstrap}")
    return {
        "level": args.ci,
        "n_resamples": args.bootstrap,
        "seed": args.seed,
        "method": args.ci_method,
        "test": args.test,
        "correction": args.correction,
        "processes": args.processes,
    }
