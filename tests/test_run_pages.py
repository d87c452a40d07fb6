"""deteval.run.pages: numpy's huge-page request off inside an evaluation, restored after, unless the process
was started with NUMPY_MADVISE_HUGEPAGE set."""

from __future__ import annotations

import pytest

from deteval.run import pages

switch = pages._switch()
pytestmark = pytest.mark.skipif(switch is None, reason="this numpy has no huge-page switch")


def _current() -> bool:
    assert switch is not None
    value = switch(True)  # (the setter returns the previous value)
    switch(value)
    return value


@pytest.mark.parametrize("before", [True, False])
def test_the_request_is_off_inside_and_restored_after(monkeypatch, before):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    assert switch is not None
    old = switch(before)
    try:
        with pages.small_pages():
            assert _current() is False
        assert _current() is before
        with pytest.raises(RuntimeError), pages.small_pages():
            raise RuntimeError("restored on the way out")
        assert _current() is before
    finally:
        switch(old)


def test_a_process_setting_of_its_own_is_kept(monkeypatch):
    monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
    assert switch is not None
    old = switch(True)
    try:
        assert pages.small_pages()(_current)() is True  # (as a decorator)
    finally:
        switch(old)
