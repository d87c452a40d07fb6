"""Many weight rows (resamples, randomization rounds) evaluated in chunks, optionally in forked processes.

Each row's values depend on that row alone, so splitting the rows changes no number: with ``processes``
p > 1 (on systems with ``os.fork``) the rows are cut into p contiguous blocks, p − 1 forked children
(:func:`deteval.run.forked.start_child`) evaluate one block each (they inherit the evaluator, its
tables and caches, copy-on-write) and send the values back through a pipe, and the parent evaluates the first
block. A child that fails is re-run in the parent, so the
result never depends on the workers.

``processes="auto"`` (the default of the resampling functions and of the CLI's ``--processes``): the first
row is evaluated here and timed (``AUTO_PROBE`` rows: whatever runs before the fork delays the child's
block, so the probe is kept short; one call's overheads only make the estimate larger); the rest goes to 2
processes where that pays for a fork: the rest would take at least ``AUTO_MIN_SECONDS`` at the first row's
pace (COCO 5k with 1,000 resamples, not VOC nor 50 TREC topics) and :func:`deteval.run.forked.can_fork` allows a fork, the rule the two-core evaluation
follows too (Linux, two usable CPUs, no other Python thread, one CPU idle by the kernel's count of runnable
tasks: on a busy machine a second process only competes for the same cores; ``DETEVAL_PROCESSES=1`` or
``2`` in the environment never or always allows it); 1 otherwise. ``LAST["processes"]`` records the last
choice (for benchmarks).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from deteval.errors import ConfigError
from deteval.run.forked import Forked, can_fork, start_child

__all__ = ["AUTO_MIN_SECONDS", "AUTO_PROBE", "CHUNK", "LAST", "Processes", "auto_processes", "evaluate_rows"]

#: rows evaluated per call: bounds the memory of the temporaries (k × the test set's size)
CHUNK = 64
#: estimated seconds of work left from which ``processes="auto"`` forks a second process
AUTO_MIN_SECONDS = 2.0
#: rows that ``processes="auto"`` times before it decides (more rows cost the time of a row each before the
#: fork, half of it on the two processes' wall time)
AUTO_PROBE = 1
#: the number of processes of the last :func:`evaluate_rows` (``"auto"`` resolved)
LAST: dict[str, int] = {"processes": 1}
#: a number of processes, or ``"auto"`` (module docstring)
Processes = int | str


def auto_processes(seconds_left: float) -> int:
    """The ``"auto"`` rule (module docstring) for work estimated at ``seconds_left`` seconds in one process."""
    return 2 if seconds_left >= AUTO_MIN_SECONDS and can_fork() else 1


def _check(processes: Processes) -> None:
    if isinstance(processes, str):
        if processes != "auto":
            raise ConfigError(f"processes must be a positive integer or 'auto', got {processes!r}")
    elif isinstance(processes, bool) or int(processes) != processes or processes < 1:
        raise ConfigError(f"processes must be a positive integer or 'auto', got {processes!r}")


def _serial(fn: Callable[[np.ndarray], np.ndarray], rows: np.ndarray, chunk: int) -> np.ndarray:
    parts = [np.asarray(fn(rows[i : i + chunk]), dtype=np.float64) for i in range(0, rows.shape[0], chunk)]
    out = np.concatenate(parts, axis=0) if parts else np.zeros((0, 0))
    if out.ndim != 2 or out.shape[0] != rows.shape[0]:
        raise ValueError(f"a metric must return (k, m) values for k weight rows, got shape {out.shape}")
    return out


def evaluate_rows(
    fn: Callable[[np.ndarray], np.ndarray],
    rows: np.ndarray,
    *,
    chunk: int = CHUNK,
    processes: Processes = 1,
) -> np.ndarray:
    """``fn`` (k rows → (k, m) values) on every row of ``rows``, ``chunk`` rows per call, in ``processes``
    processes (a number or ``"auto"``: module docstring); (n_rows, m) values in row order."""
    _check(processes)
    n, chunk = rows.shape[0], max(1, chunk)
    if isinstance(processes, str):  # "auto": the first rows here, timed, decide for the rest
        probe = AUTO_PROBE  # (rows done here before the fork are not shared)
        t0 = time.perf_counter()
        first = _serial(fn, rows[:probe], chunk)
        if n <= probe:
            LAST["processes"] = 1
            return first
        p = auto_processes((time.perf_counter() - t0) * (n - probe) / probe)
        return np.concatenate([first, evaluate_rows(fn, rows[probe:], chunk=chunk, processes=p)], axis=0)
    LAST["processes"] = p = max(1, min(int(processes), -(-n // max(chunk, 1)))) if hasattr(os, "fork") else 1
    if p == 1:
        return _serial(fn, rows, chunk)
    bounds = np.linspace(0, n, p + 1).astype(np.int64)
    children: list[tuple[Forked | None, int]] = []  # (worker or None if the fork failed, block)
    try:
        for i in range(1, p):
            children.append((start_child(_serial, fn, rows[bounds[i] : bounds[i + 1]], chunk), i))
        parts = [_serial(fn, rows[: bounds[1]], chunk)]
        for child, i in children:
            part = None if child is None else child.result()
            if part is None:  # the worker failed: its block again, here
                part = _serial(fn, rows[bounds[i] : bounds[i + 1]], chunk)
            parts.append(part)
        return np.concatenate(parts, axis=0)
    finally:
        for child, _ in children:  # an error in the parent: stop the workers (no-op for finished ones)
            if child is not None:
                child.cancel()
