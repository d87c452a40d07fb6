"""``--workers N`` / ``--scheduler ADDRESS`` / ``--shards N``: sharded evaluation on a Dask cluster."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.errors import ConfigError


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def add_cluster_args(p: Any) -> None:
    """The options of sharded evaluation (dask.distributed, ``pip install 'deteval[dask]'``)."""
    g = p.add_argument_group("sharded evaluation (bit-identical; needs pip install 'deteval[dask]')")
    g.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="evaluate on a local cluster of N processes",
    )
    g.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="evaluate on a running dask scheduler (tcp://host:port)",
    )
    g.add_argument(
        "--shards",
        type=_positive,
        metavar="N",
        help="image shards (default: one per worker thread)",
    )


def sharding_requested(args: argparse.Namespace) -> bool:
    """Whether ``--workers``, ``--scheduler`` or ``--shards`` is given."""
    return any(getattr(args, dest, None) is not None for dest in ("workers", "scheduler", "shards"))


def refuse_with_cluster(args: argparse.Namespace, stats_asked: bool, analyses_asked: bool) -> None:
    """Intervals, comparisons and error analyses need every image's matches in one process: they are refused
    with ``--workers``/``--scheduler``/``--shards`` rather than silently left out."""
    if not sharding_requested(args):
        return
    what = [
        w for w, on in (("--ci/--compare-to", stats_asked), ("the analysis options", analyses_asked)) if on
    ]
    if what:
        raise ConfigError(
            f"{' and '.join(what)} run in one process: drop --workers, --scheduler and --shards to use them"
        )
