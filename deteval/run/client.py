"""Getting a ``dask.distributed`` client: a local cluster of worker processes, or an existing scheduler."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from typing import Any

from deteval.errors import ConfigError

__all__ = ["dask_client"]


@contextlib.contextmanager
def dask_client(
    workers: int | None = None, scheduler: str | None = None, *, timeout: str = "20s"
) -> Iterator[Any]:
    """A client for ``workers`` local worker processes (one thread each, no dashboard), or for the
    scheduler at ``scheduler`` (e.g. ``tcp://10.0.0.5:8786``); None when neither is given. A local cluster
    is shut down on exit; an existing one is only disconnected from. ``timeout``: how long to try to reach
    the scheduler."""
    if workers is not None and scheduler is not None:
        raise ConfigError("give either --workers or --scheduler, not both")
    if workers is None and scheduler is None:
        yield None
        return
    try:
        import distributed
    except ImportError:
        raise ConfigError("sharded evaluation needs dask.distributed: pip install 'deteval[dask]'") from None
    logging.getLogger("distributed").setLevel(logging.ERROR)  # the cluster's chatter is not our output
    cluster = None
    if scheduler is not None:
        try:
            client = distributed.Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"cannot reach the dask scheduler at {scheduler!r}: {exc}") from None
    else:
        assert workers is not None
        if workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {workers}")
        with warnings.catch_warnings():
            # its HTTP server (dashboard off) says so when another cluster holds port 8787: not our output
            warnings.filterwarnings("ignore", message="Port 8787 is already in use")
            cluster = distributed.LocalCluster(
                n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None
            )
        client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
