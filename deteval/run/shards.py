"""Shards of images: contiguous runs of the evaluated images (ascending id), one per task."""

from __future__ import annotations

from typing import Any

from deteval.errors import ConfigError

__all__ = ["default_shards", "shard_range"]


def shard_range(n_images: int, k: int, n_shards: int) -> tuple[int, int]:
    """Images ``[lo, hi)`` of shard ``k`` of ``n_shards``: ``lo = k·n // n_shards`` (sizes differ by at most 1).

    Every image falls in exactly one shard, so the shards' match tables are disjoint and merge exactly.
    """
    if n_shards < 1 or not 0 <= k < n_shards:
        raise ConfigError(f"shard {k} of {n_shards} does not exist")
    return k * n_images // n_shards, (k + 1) * n_images // n_shards


def default_shards(client: Any, shards: int | None) -> int:
    """The shard count: ``shards`` if given (≥ 1), else one per worker thread of ``client``."""
    if shards is not None:
        if int(shards) < 1:
            raise ConfigError(f"shards must be at least 1, got {shards}")
        return int(shards)
    threads = client.nthreads() if client is not None else {}
    return max(1, sum(threads.values()))
