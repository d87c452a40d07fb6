"""The progress reporter, driven with a fake stream and a fake clock."""

from __future__ import annotations

import argparse
import io

import pytest

from deteval.report import progress as prog
from deteval.report.progress import (
    Progress,
    add_progress_args,
    configure,
    configure_from_args,
    note,
    progress,
)


class FakeStream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(autouse=True)
def _reset_switches():
    configure()
    yield
    configure()


def test_enabled_only_on_a_terminal_unless_forced_or_quiet():
    assert Progress(10, stream=FakeStream(True)).enabled
    assert not Progress(10, stream=FakeStream(False)).enabled
    assert not Progress(10, stream=io.StringIO()).enabled
    assert not Progress(10, stream=object()).enabled  # no isatty at all
    configure(force=True)
    assert Progress(10, stream=FakeStream(False)).enabled
    configure(force=True, quiet=True)  # quiet wins
    assert not Progress(10, stream=FakeStream(True)).enabled
    assert not Progress(10, stream=FakeStream(True), enabled=True).enabled
    configure()
    assert not Progress(10, stream=FakeStream(True), enabled=False).enabled


def test_disabled_writes_nothing():
    s = FakeStream(False)
    with Progress(5, "x", stream=s) as bar:
        for _ in range(5):
            bar.update()
    assert s.getvalue() == "" and bar.count == 5 and bar.redraws == 0


def test_redraws_are_throttled_and_the_last_state_is_drawn():
    s, clock = FakeStream(True), FakeClock()
    with Progress(1000, "match", stream=s, clock=clock, min_interval=0.5, width=10) as bar:
        for i in range(1000):
            clock.t = i * 0.25  # exact binary steps: a redraw every second update
            bar.update()
    assert bar.redraws == 500 + 1  # the throttled redraws and the final one
    out = s.getvalue()
    assert out.count("\r") == 501 and out.endswith("\n")
    assert out.rstrip("\n").rsplit("\r", 1)[1] == "match: 100% [##########] 1000/1000 4m09s"


def test_line_formats():
    clock = FakeClock()
    bar = Progress(4, "load", stream=FakeStream(True), clock=clock, width=4)
    bar.update(1)
    assert bar.line() == "load:  25% [#...] 1/4 0.0s"
    clock.t = 125.0
    assert bar.line().endswith("2m05s")
    assert Progress(None, "", stream=FakeStream(True), clock=clock).line() == "0 0.0s"
    over = Progress(2, "x", stream=FakeStream(True), clock=clock, width=2)
    over.update(5)  # more than announced: capped at 100 %, counter still honest
    assert over.line() == "x: 100% [##] 5/2 0.0s"


def test_shorter_line_is_padded_over_the_longer_one():
    s, clock = FakeStream(True), FakeClock()
    bar = Progress(None, "n", stream=s, clock=clock, min_interval=0.0)
    clock.t = 100.0
    bar.update()  # "n: 1 1m40s"
    clock.t = 101.0
    bar.desc = ""
    bar.update()  # "2 1m41s" plus 3 spaces of padding
    assert s.getvalue() == "\rn: 1 1m40s\r2 1m41s   "
    bar.close()
    bar.close()  # idempotent
    assert s.getvalue().count("\n") == 1


def test_iterator_wrapper_counts_items_and_uses_len():
    s, clock = FakeStream(True), FakeClock()
    items = list(progress([3, 1, 2], desc="it", stream=s, clock=clock))
    assert items == [3, 1, 2]
    assert s.getvalue().endswith("\rit: 100% [########################] 3/3 0.0s\n")
    s2 = FakeStream(True)
    assert sum(progress((i for i in range(4)), stream=s2, clock=clock)) == 6
    assert s2.getvalue().endswith("\r4 0.0s\n")  # a generator has no len(): a counter


def test_note_respects_quiet():
    s = io.StringIO()
    note("wrote 2 plots", stream=s)
    configure(quiet=True)
    note("hidden", stream=s)
    assert s.getvalue() == "wrote 2 plots\n"


def test_cli_options():
    parser = argparse.ArgumentParser()
    add_progress_args(parser)
    args = parser.parse_args(["-q"])
    assert args.quiet and not args.progress
    configure_from_args(args)
    assert prog.is_quiet()
    configure_from_args(parser.parse_args(["--progress"]))
    assert not prog.is_quiet() and Progress(1, stream=FakeStream(False)).enabled
    configure_from_args(argparse.Namespace())  # a command without the options
    assert not prog.is_quiet()
