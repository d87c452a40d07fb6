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

__all__ = ["map_parts"]

T = TypeVar("T")


def map_parts(fn: Callable[..., T], tasks: Iterable[Sequence[Any]], client: Any = None) -> list[T]:
    """``[fn(*task) for task in tasks]``, in task order: here, one after the other, or on ``client``.

    Parameters
    ----------
    fn
        The protocol's step for one part (a module-level function, so that Dask can send it by name).
    tasks
        The arguments of each call (an iterator is consumed one task at a time here, so that a part's inputs
        can be made as it is reached).
    client
        A ``dask.distributed.Client`` (each task submitted with ``pure=False`` and gathered in order), or None
        to run every task in this process.

    Returns
    -------
    list
        The value of each call, in the order of ``tasks``.
    """
    if client is None:
        return [fn(*task) for task in tasks]
    return list(client.gather([client.submit(fn, *task, pure=False) for task in tasks]))
