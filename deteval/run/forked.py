"""One function run in a forked child process while this process goes on: the second core, without a pool.

A forked child starts with this process's memory as it is (copy on write: nothing is pickled on the way
in) and sends its return value back, pickled, through a pipe (numpy arrays pickle as their raw bytes).
Whatever goes wrong in the child (an exception, a crash, a kill) makes :meth:`Forked.result` return None:
the caller then does the work itself, in this process, so that errors are raised here, with the messages
the one-process path gives. Forking is skipped (:func:`fork_call` returns None) where it is unavailable or
unsafe: outside Linux (no ``os.fork`` on Windows; macOS system libraries do not support a fork without
exec), one usable CPU, other threads running (a fork copies their locks in whatever state they are), or
``DETEVAL_PROCESSES=1`` in the environment; and unless ``DETEVAL_PROCESSES=2``, also when no CPU is idle at
that moment: every usable CPU already busy, a child would only take turns with this process (with the
kernel's per-session scheduling, on this process's share) and add its own costs (the copied pages, the
pickled results), so the one-process path is then faster.

This is deteval's one rule for "a second process pays": :func:`can_fork` (with :func:`usable_cpus` and
:func:`cpu_idle`) decides both the two-core evaluation (:func:`fork_call`) and the resampling's
``processes="auto"`` (:func:`deteval.stats.parallel.auto_processes`, which adds its own minimum of work).
"""

from __future__ import annotations

import atexit
import gc
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from deteval.collector import paused

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows (which never forks)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Forked", "can_fork", "cpu_idle", "fork_call", "start_child", "usable_cpus"]

#: The pipe a child's value comes through holds this much (Linux' default, 64 KB, makes a match table of a few
#: MB take dozens of turns between the child writing and this process reading). At most the system's
#: ``/proc/sys/fs/pipe-max-size``, 1 MB by default.
PIPE_BYTES = 1 << 20

#: Environment variable: ``1`` keeps every evaluation in one process; ``2`` forks even when no CPU is idle.
ENV_PROCESSES = "DETEVAL_PROCESSES"
#: How many times :func:`cpu_idle` counts the runnable tasks before it says no, and the seconds between counts
IDLE_SAMPLES = 5
IDLE_SAMPLE_GAP = 0.002


def can_fork() -> bool:
    """Whether :func:`fork_call` would fork: Linux, two usable CPUs, no other thread, not disabled, and a CPU
    idle (:func:`cpu_idle`) unless ``DETEVAL_PROCESSES=2``."""
    setting = os.environ.get(ENV_PROCESSES, "").strip()
    if not sys.platform.startswith("linux") or setting == "1":
        return False
    cpus = usable_cpus()
    if cpus < 2 or threading.active_count() != 1:
        return False
    _reap_exited()  # (our children that have exited since their value was read)
    # a child of ours whose value was read is still exiting (unmapping its memory): it is not load
    return setting == "2" or cpu_idle(cpus + len(_EXITING))


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (a container's or ``taskset``'s limit), else
    ``os.cpu_count()``."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - no affinity call on this system
        return os.cpu_count() or 1


def cpu_idle(cpus: int) -> bool:
    """Whether at most ``cpus`` tasks are runnable right now, this process included: the kernel's count of
    runnable tasks, the first number of the fourth field of ``/proc/loadavg``. True if unreadable. One other
    runnable task is allowed because the count is an instant's: a short-lived task (a waking monitor, a child
    exiting) is nearly always there, and refusing then kept even an idle 2-core machine on one process.
    :func:`can_fork` adds one per child of this
    process whose value was read and that is still exiting (:func:`_reap_exited`): runnable for a few more
    milliseconds but no load (counted, a segm evaluation's tail child exiting as the matching halves are
    forked made that second fork depend on which came first). The count is taken up to ``IDLE_SAMPLES``
    times, ``IDLE_SAMPLE_GAP`` apart, and one count at the limit is enough: tasks that run for a moment (just
    after another evaluation's process has exited) are gone milliseconds later, whereas a machine whose cores
    are taken stays over the limit at every count."""
    for i in range(IDLE_SAMPLES):
        running = _runnable()
        if running is None or running <= cpus:
            return True
        if i + 1 < IDLE_SAMPLES:
            time.sleep(IDLE_SAMPLE_GAP)
    return False


def _runnable() -> int | None:
    """The kernel's count of runnable tasks now (``/proc/loadavg``), or None if unreadable."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


class Forked:
    """A running child; :meth:`result` waits for its value (None if it failed), :meth:`cancel` ends it."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self.done = False

    def result(self) -> Any | None:
        """The child's return value, or None if it raised, crashed or sent nothing readable."""
        if self.done:
            return None
        # the collector paused while unpickling: tens of thousands of small objects (a segm child's masks)
        # would set it off hundreds of times, each pass over every object so far (most of the unpickling time)
        try:
            with paused(), os.fdopen(self.fd, "rb") as f:
                ok, value = pickle.load(f)
        except Exception:
            ok, value = False, None
        finally:
            self._reap(wait=False)
        return value if ok else None

    def cancel(self) -> None:
        """End the child (its result is no longer wanted)."""
        if self.done:
            return
        with suppress(OSError):  # (already gone)
            os.kill(self.pid, signal.SIGKILL)
        with suppress(OSError):
            os.close(self.fd)
        self._reap()

    def _reap(self, wait: bool = True) -> None:
        """Collect the child's exit status; ``wait=False``: only if it has exited, else later
        (:func:`_reap_exited`): its value read, the child still unmaps its memory as it exits (a few ms for a
        matching half), on the other core, while this process goes on."""
        self.done = True
        try:
            if os.waitpid(self.pid, 0 if wait else os.WNOHANG) == (0, 0):
                if not _EXITING:
                    atexit.register(_reap_exited, True)
                _EXITING.append(self.pid)
        except ChildProcessError:  # pragma: no cover - reaped elsewhere
            pass


#: Children whose value was read but that had not yet exited then: reaped by the next :func:`start_child`, or
#: at exit (so that their CPU time is counted as this process's children's, as a benchmark reads it).
_EXITING: list[int] = []


def _reap_exited(wait: bool = False) -> None:
    for pid in list(_EXITING):
        try:
            if os.waitpid(pid, 0 if wait else os.WNOHANG) == (0, 0):
                continue
        except ChildProcessError:  # pragma: no cover - reaped elsewhere
            pass
        _EXITING.remove(pid)
    if not _EXITING:
        atexit.unregister(_reap_exited)


def fork_call(fn: Callable[..., Any], *args: Any) -> Forked | None:
    """Start ``fn(*args)`` in a forked child (None: not forked, see :func:`can_fork`)."""
    return start_child(fn, *args) if can_fork() else None


def start_child(fn: Callable[..., Any], *args: Any) -> Forked | None:
    """Start ``fn(*args)`` in a forked child now, for callers that decided themselves that a fork pays
    (``deteval.stats.parallel``); None if the fork fails."""
    _reap_exited()
    r, w = os.pipe()
    # (Linux: the value comes in a few large writes, not 64 KB at a time)
    if fcntl is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with suppress(OSError):  # (above /proc/sys/fs/pipe-max-size)
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    try:
        pid = os.fork()
    except OSError:  # pragma: no cover - out of processes or memory
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # pragma: no cover - the child (coverage is not collected there)
        status = 1
        try:
            os.close(r)
            # the collector would write to every object's header, copying the parent's pages for nothing
            gc.disable()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            try:
                out: tuple[bool, Any] = (True, fn(*args))
            except BaseException:
                out = (False, None)
            with os.fdopen(w, "wb") as f:
                pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
            status = 0
        finally:
            os._exit(status)
    os.close(w)
    return Forked(pid, r)
