"""Many weight rows (resamples, randomization rounds) evaluated in chunks, optionally in forked processes.

Each row's values depend on that row alone, so splitting the rows changes no number: with ``processes``
p > 1 (on systems with ``os.fork``) the rows are cut into p contiguous blocks, p − 1 forked children evaluate
one block each (they inherit the evaluator, its tables and caches, copy-on-write) and send the values back
through a pipe, and the parent evaluates the first block. A child that fails is re-run in the parent, so the
result never depends on the workers.

``processes="auto"`` (the default of the resampling functions and of the CLI's ``--processes``): 2 where the
work pays for a fork (at least ``AUTO_MIN_ENTRIES`` weight entries, rows × units: COCO or VOC 5k with 1,000
resamples, not 50 TREC topics), the machine gives this process two cores or more, ``os.fork`` exists and
the process runs no other Python thread (forking a threaded process can deadlock the child); 1 otherwise.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable

import numpy as np

from deteval.errors import ConfigError

__all__ = ["AUTO_MIN_ENTRIES", "CHUNK", "Processes", "evaluate_rows", "resolve_processes"]

#: rows evaluated per call: bounds the memory of the temporaries (k × the test set's size)
CHUNK = 64
#: weight entries (rows × units) from which ``processes="auto"`` forks a second process
AUTO_MIN_ENTRIES = 1_000_000
#: a number of processes, or ``"auto"`` (module docstring)
Processes = int | str


def _cores() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def resolve_processes(processes: Processes, entries: int) -> int:
    """The number of processes for ``entries`` weight entries: ``processes`` itself (an integer >= 1), or
    the ``"auto"`` rule of the module docstring."""
    if isinstance(processes, str):
        if processes != "auto":
            raise ConfigError(f"processes must be a positive integer or 'auto', got {processes!r}")
        big = entries >= AUTO_MIN_ENTRIES
        return 2 if big and hasattr(os, "fork") and _cores() >= 2 and threading.active_count() == 1 else 1
    if isinstance(processes, bool) or int(processes) != processes or processes < 1:
        raise ConfigError(f"processes must be a positive integer or 'auto', got {processes!r}")
    return int(processes)


def _serial(fn: Callable[[np.ndarray], np.ndarray], rows: np.ndarray, chunk: int) -> np.ndarray:
    parts = [np.asarray(fn(rows[i : i + chunk]), dtype=np.float64) for i in range(0, rows.shape[0], chunk)]
    out = np.concatenate(parts, axis=0) if parts else np.zeros((0, 0))
    if out.ndim != 2 or out.shape[0] != rows.shape[0]:
        raise ValueError(f"a metric must return (k, m) values for k weight rows, got shape {out.shape}")
    return out


def _child(fn: Callable[[np.ndarray], np.ndarray], rows: np.ndarray, chunk: int, fd: int) -> None:
    code = 1
    try:
        out = _serial(fn, rows, chunk)
        with os.fdopen(fd, "wb") as f:
            np.save(f, out, allow_pickle=False)
        code = 0
    finally:
        os._exit(code)


def evaluate_rows(
    fn: Callable[[np.ndarray], np.ndarray],
    rows: np.ndarray,
    *,
    chunk: int = CHUNK,
    processes: Processes = 1,
) -> np.ndarray:
    """``fn`` (k rows → (k, m) values) on every row of ``rows``, ``chunk`` rows per call, in ``processes``
    processes (a number or ``"auto"``: module docstring); (n_rows, m) values in row order."""
    n = rows.shape[0]
    p = resolve_processes(processes, rows.size)
    p = max(1, min(p, -(-n // max(chunk, 1)))) if hasattr(os, "fork") else 1
    if p == 1:
        return _serial(fn, rows, chunk)
    bounds = np.linspace(0, n, p + 1).astype(np.int64)
    children: list[tuple[int, int, int]] = []  # (pid, read end, block)
    try:
        for i in range(1, p):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child leaves through os._exit
                os.close(r)
                _child(fn, rows[bounds[i] : bounds[i + 1]], chunk, w)
            os.close(w)
            children.append((pid, r, i))
        parts = [_serial(fn, rows[: bounds[1]], chunk)]
        while children:
            pid, r, i = children.pop(0)
            part = None
            with os.fdopen(r, "rb") as f, contextlib.suppress(ValueError, EOFError, OSError):
                part = np.load(f, allow_pickle=False)
            _, status = os.waitpid(pid, 0)
            if part is None or status != 0:  # the worker failed: its block again, here
                part = _serial(fn, rows[bounds[i] : bounds[i + 1]], chunk)
            parts.append(part)
        return np.concatenate(parts, axis=0)
    finally:
        for pid, r, _ in children:  # an error in the parent: stop the workers
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            with contextlib.suppress(OSError):
                os.close(r)
