"""Run a protocol's parts: one after the other in this process, or as tasks on a ``dask.distributed`` client.

A protocol that can be cut into independent parts (COCO, LVIS and VOC: runs of whole images; TREC: runs of
topics) exposes its steps as plain functions: it cuts its inputs into parts, matches one part alone
(``match_part``) and merges the parts' tables into the table one process would build. This module is the one
place that decides where each part runs; the protocols hold no scheduling code. The merge is the protocol's,
and is exact for any number of parts, so every strategy gives the one-process numbers bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

__all__ = ["gather", "map_parts", "scatter"]

T = TypeVar("T")


def map_parts(
    fn: Callable[..., T], tasks: Iterable[Sequence[Any]], client: Any = None, *, keep: bool = False
) -> list[Any]:
    """``[fn(*task) for task in tasks]``, in task order: here, one after the other, or on ``client``.

    Parameters
    ----------
    fn
        The protocol's step for one part (a module-level function, so that Dask can send it by name).
    tasks
        The arguments of each call (an iterator is consumed one task at a time here, so that a part's inputs
        can be made as it is reached). On a client, an argument may be a value left on the workers by an
        earlier call (``keep``) or by :func:`scatter`, or a list of them: Dask hands the task the value.
    client
        A ``dask.distributed.Client`` (each task submitted with ``pure=False``), or None to run every task in
        this process.
    keep
        On a client, leave the values on the workers and return their futures, for later tasks to take as
        arguments (a value then travels from worker to worker, never through this process); without a
        client, the values themselves.

    Returns
    -------
    list
        The value of each call (with ``keep`` on a client, its future), in the order of ``tasks``.
    """
    if client is None:
        return [fn(*task) for task in tasks]
    futures = [client.submit(fn, *task, pure=False) for task in tasks]
    return futures if keep else gather(futures, client)


def gather(futures: Sequence[Any], client: Any = None) -> list[Any]:
    """The values of ``futures`` (of ``map_parts(..., keep=True)``), in order; the first failed task in list
    order raises its error, as one process running the tasks in that order would. Without a client the
    values are already at hand."""
    if client is None:
        return list(futures)
    from distributed import wait  # (dask: an optional dependency, there whenever a client is)

    wait(futures)
    for f in futures:
        if f.status == "error":
            raise f.exception()
    return list(client.gather(futures))


def scatter(value: T, client: Any = None, *, broadcast: bool = False) -> Any:
    """``value`` sent once to the workers of ``client`` (to every one with ``broadcast``), for tasks of
    :func:`map_parts` to take as an argument without it travelling with each task; without a client,
    ``value`` itself."""
    if client is None:
        return value
    return client.scatter([value], broadcast=broadcast, hash=False)[0]  # (a list: one value)
