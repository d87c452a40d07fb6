"""A forked child's value is read whole through its (enlarged) pipe, and a child whose value was read but had
not yet exited is reaped later, by the next start_child: no child is left a zombie."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest

from deteval.run import forked

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")


def _big(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(400_000)  # 3.2 MB: several times a default 64 KB pipe


@pytest.mark.slow
def test_values_come_whole_and_every_child_is_reaped():
    pids = []
    for seed in range(4):
        child = forked.start_child(_big, seed)
        assert child is not None
        assert np.array_equal(child.result(), _big(seed))
        assert child.done
        pids.append(child.pid)
    last = forked.start_child(int, "7")  # (reaps the children that had exited since)
    assert last is not None and last.result() == 7
    pids.append(last.pid)
    for _ in range(200):  # (a child may still be unmapping its memory: wait for it, then reap)
        forked._reap_exited()
        if not forked._EXITING:
            break
        time.sleep(0.01)
    assert not forked._EXITING
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_failed_or_cancelled_child_is_reaped():
    child = forked.start_child(int, "not a number")
    assert child is not None and child.result() is None
    other = forked.start_child(time.sleep, 30)
    assert other is not None
    other.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(other.pid, os.WNOHANG)
    for _ in range(200):
        forked._reap_exited()
        if not forked._EXITING:
            break
        time.sleep(0.01)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)


def test_a_child_still_exiting_is_not_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """can_fork on two CPUs with three runnable tasks: refused, unless one of them is a child of ours whose
    value was read and that is still exiting (in _EXITING, not yet reaped)."""
    monkeypatch.delenv(forked.ENV_PROCESSES, raising=False)
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)  # earlier tests may leave threads
    monkeypatch.setattr(forked, "_runnable", lambda: 3)
    monkeypatch.setattr(forked, "_EXITING", [])
    assert not forked.can_fork()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        time.sleep(2)
        os._exit(0)
    try:
        forked._EXITING.append(pid)
        assert forked.can_fork()  # (still running: not reaped, and discounted)
        monkeypatch.setattr(forked, "_runnable", lambda: 4)
        assert not forked.can_fork()  # one exiting child excuses one task, not two
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        forked._EXITING.clear()
    monkeypatch.setattr(forked, "_runnable", lambda: 2)
    assert forked.can_fork()
    monkeypatch.setattr(forked, "_runnable", lambda: None)  # unreadable: allowed, as before
    assert forked.can_fork()


def test_a_moment_of_load_is_counted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu_idle counts the runnable tasks up to IDLE_SAMPLES times: one count at the limit allows the fork
    (a task that ran for a moment), every count over it refuses (the cores are taken)."""
    monkeypatch.setattr(forked, "IDLE_SAMPLE_GAP", 0.0)
    counts: list[int] = []

    def runnable(seq: list[int]) -> None:
        it = iter(seq)

        def count() -> int:
            counts.append(1)
            return next(it)

        monkeypatch.setattr(forked, "_runnable", count)

    runnable([3, 3, 2, 5])
    assert forked.cpu_idle(2) and len(counts) == 3
    counts.clear()
    runnable([3] * forked.IDLE_SAMPLES + [2])
    assert not forked.cpu_idle(2) and len(counts) == forked.IDLE_SAMPLES
    counts.clear()
    runnable([1])
    assert forked.cpu_idle(2) and len(counts) == 1
