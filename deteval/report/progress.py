"""A tiny progress reporter for long loads and evaluations, on stderr, with no dependency.

Shown only when it helps and never in the way of the result:

* on by default only when stderr is an interactive terminal (a pipe or a CI log gets nothing);
* ``--progress`` forces it on (e.g. to watch a job's log), ``--quiet`` silences it and every other
  informational message (:func:`note`): only the result (and errors) are printed;
* redraws are throttled (at most one every ``min_interval`` seconds) so that a tight loop pays almost nothing.

Usage::

    with Progress(total=len(images), desc="matching") as bar:
        for img in images:
            ...
            bar.update()

    for img in progress(images, desc="loading"):
        ...

The switches are module state set once per command by :func:`configure` (or :func:`configure_from_args`
for the parsed CLI options).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO, TypeVar

T = TypeVar("T")

_state = {"quiet": False, "force": False}


def configure(*, quiet: bool = False, force: bool = False) -> None:
    """Set the global switches: ``quiet`` silences bars and notes and wins over ``force`` (show bars)."""
    _state["quiet"] = bool(quiet)
    _state["force"] = bool(force)


def is_quiet() -> bool:
    """True when only the result may be printed."""
    return _state["quiet"]


def bar_shown(stream: TextIO | None = None) -> bool:
    """Whether a :class:`Progress` on ``stream`` (default stderr) would draw: asked for with ``--progress``, or
    a terminal, and not ``--quiet``."""
    return not _state["quiet"] and (_state["force"] or _isatty(stream if stream is not None else sys.stderr))


def add_progress_args(parser: argparse.ArgumentParser, *, progress: bool = True) -> None:
    """Add ``--progress`` (unless the subcommand has nothing to show progress of) and ``--quiet/-q``."""
    group = parser.add_argument_group("progress and messages")
    if progress:
        group.add_argument(
            "--progress",
            action="store_true",
            help="show progress bars on stderr even when it is not a terminal",
        )
    # trec_eval's -q means "per query": a subcommand that owns -q keeps it and gets only --quiet.
    flags = ("--quiet",) if "-q" in parser._option_string_actions else ("--quiet", "-q")
    group.add_argument(
        *flags, action="store_true", help="print nothing but the result (no progress bars, no notes)"
    )


def configure_from_args(args: argparse.Namespace) -> None:
    """Apply the parsed ``--progress`` / ``--quiet`` options (missing attributes count as off)."""
    configure(quiet=bool(getattr(args, "quiet", False)), force=bool(getattr(args, "progress", False)))


def note(message: str, *, stream: TextIO | None = None) -> None:
    """An informational line on stderr (e.g. "wrote 3 plots to out/"), silenced by ``--quiet``."""
    if not _state["quiet"]:
        print(message, file=stream if stream is not None else sys.stderr)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


class Progress:
    """A single-line progress bar redrawn in place with ``\\r``; a context manager.

    ``enabled=None`` decides from the global switches and the stream: off when quiet, on when forced,
    otherwise on only if ``stream.isatty()``. ``total=None`` shows a plain counter. ``clock`` is injectable
    for tests.
    """

    def __init__(
        self,
        total: int | None = None,
        desc: str = "",
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        min_interval: float = 0.1,
        width: int = 24,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = None if total is None else max(int(total), 0)
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        # --quiet wins over an explicit ``enabled`` (bar_shown checks it too)
        self.enabled = bar_shown(self.stream) if enabled is None else bool(enabled) and not _state["quiet"]
        self.min_interval = min_interval
        self.width = width
        self.clock = clock
        self.count = 0
        self.redraws = 0
        self._start = clock()
        self._last_draw: float | None = None
        self._last_len = 0
        self._closed = False
        self._base_desc = desc
        self._stage: str | None = None

    def line(self) -> str:
        """The text of the bar as it would be drawn now."""
        elapsed = _duration(self.clock() - self._start)
        prefix = f"{self.desc}: " if self.desc else ""
        if self.total:
            frac = min(self.count / self.total, 1.0)
            filled = round(frac * self.width)
            bar = "#" * filled + "." * (self.width - filled)
            return f"{prefix}{frac * 100:3.0f}% [{bar}] {self.count}/{self.total} {elapsed}"
        return f"{prefix}{self.count} {elapsed}"

    def _draw(self, final: bool = False) -> None:
        text = self.line()
        # Pad with spaces so a shorter line fully covers the previous one.
        pad = " " * max(self._last_len - len(text), 0)
        self.stream.write("\r" + text + pad + ("\n" if final else ""))
        self.stream.flush()
        self._last_len = len(text)
        self._last_draw = self.clock()
        self.redraws += 1

    def update(self, n: int = 1) -> None:
        """Advance by ``n``; redraw if at least ``min_interval`` seconds passed since the last redraw."""
        self.count += n
        if not self.enabled or self._closed:
            return
        now = self.clock()
        if self._last_draw is None or now - self._last_draw >= self.min_interval:
            self._draw()

    def stage(self, label: str) -> None:
        """Start the named stage of a staged job (``total`` = number of stages): the previous stage counts
        as done, and the bar is redrawn at once so a long stage shows what it is doing while it runs."""
        if self._stage is not None:
            self.count += 1
        self._stage = label
        self.desc = f"{self._base_desc}: {label}" if self._base_desc else label
        if self.enabled and not self._closed:
            self._draw()

    def close(self) -> None:
        """Draw the final state and end the line (once); a running stage counts as done."""
        if self._closed:
            return
        if self._stage is not None:
            self.count += 1
            self._stage = None
            self.desc = self._base_desc
        self._closed = True
        if self.enabled:
            self._draw(final=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(
    iterable: Iterable[T],
    *,
    total: int | None = None,
    desc: str = "",
    **options: Any,
) -> Iterator[T]:
    """Yield from ``iterable`` while advancing a :class:`Progress` (``total`` defaults to ``len()``)."""
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with Progress(total, desc, **options) as bar:
        for item in iterable:
            yield item
            bar.update()
