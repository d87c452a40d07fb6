"""``--workers N`` / ``--scheduler ADDRESS`` / ``--shards N``: sharded evaluation on a Dask cluster."""

from __future__ import annotations

import argparse
from typing import Any


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
        default=None,
        metavar="N",
        help="evaluate on a local cluster of N processes",
    )
    g.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="evaluate on a running dask scheduler (tcp://host:port)",
    )
    g.add_argument(
        "--shards",
        type=_positive,
        default=None,
        metavar="N",
        help="image shards (default: one per worker thread)",
    )


def cluster_requested(args: argparse.Namespace) -> bool:
    return getattr(args, "workers", None) is not None or getattr(args, "scheduler", None) is not None
