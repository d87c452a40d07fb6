"""A forked child's value is unpickled with the garbage collector paused, and its state is restored."""

import gc

import pytest

from deteval.distributed import forked


def _many_dicts(n: int) -> list:
    return [{"size": [4, 5], "counts": str(i)} for i in range(n)]


@pytest.mark.parametrize("enabled", [True, False])
def test_result_unpickles_with_the_collector_paused_and_restored(monkeypatch, enabled):
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    seen = []
    real_load = forked.pickle.load

    def load(f):
        seen.append(gc.isenabled())
        return real_load(f)

    monkeypatch.setattr(forked.pickle, "load", load)
    (gc.enable if enabled else gc.disable)()
    try:
        child = forked.fork_call(_many_dicts, 20_000)
        assert child is not None
        assert child.result() == _many_dicts(20_000)
        assert seen == [False] and gc.isenabled() == enabled
    finally:
        gc.enable()
