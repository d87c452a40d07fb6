"""The two profiles of the suite.

``python -m pytest -n auto`` runs every test and every case, one process per core (CI and the README's test
command). ``python -m pytest -m "not slow"`` is the contributors' profile for iteration: every oracle still
runs, on a few of its seeded cases, and every other test runs unless it is marked ``slow`` (CONTRIBUTING.md
says what each profile costs).

Two markers select what the fast profile leaves out (both are registered in ``pyproject.toml``):

* ``@pytest.mark.slow``: the whole test runs only in the full suite (a fuzz test's hundreds of examples, a
  subprocess round trip that another fast test already covers).
* ``@pytest.mark.fast_cases(seed=2)``: of a parametrized test, the cases whose ``seed`` is one of the first two
  values of its list run in both profiles; every other case is marked ``slow``. Other parameters of the test
  are not restricted, so the fast profile still sees each of their values. Several names may be given
  (``fast_cases(seed=1, block=1)``): a case is fast when it is within the count for each of them.

The modules in ``SLOW_MODULES`` are slow as a whole (fuzz and property searches of hundreds of examples per
test, matplotlib figures), without a marker in their files.

The tests that run on a real dask LocalCluster ask for the ``dask_cluster`` fixture: one cluster of 2 worker
processes serves the tests that follow one another and ask for it, and it is shut down before any other test
runs. A dask client leaves a thread behind in its process (distributed's offload pool), and a process with
another thread never forks, so every test that starts a client in this process (``dask_cluster``, or
``dask_in_process`` for one that starts its own, as ``--workers``) runs at the end of the session, after the
tests that fork; the ``dask_cluster`` ones last, together.
"""

from __future__ import annotations

from typing import Any

import pytest

# fuzz tests (damaged files, hostile values), hypothesis properties of the core, the one test of
# test_coco_alone (pycocotools on large random cases; other pycocotools oracle tests stay in the fast profile)
# and the figures drawn by `--plots` (matplotlib; the figures' numbers are also checked in test_plots_truthful)
SLOW_MODULES = (
    "test_fuzz_*.py",
    "test_core_properties.py",
    "test_coco_alone.py",
    "test_cli_plots_progress.py",
)


@pytest.hookimpl(tryfirst=True)  # before the ``-m`` selection reads the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # a stable sort (each keeps its order), the same in every xdist worker: the dask tests at the end
    items.sort(key=_dask_rank)
    for item in items:
        if any(item.path.match(pattern) for pattern in SLOW_MODULES):
            item.add_marker(pytest.mark.slow)
        marker = item.get_closest_marker("fast_cases")
        if marker is None:
            continue
        if marker.args or not marker.kwargs:
            raise pytest.UsageError(f"{item.nodeid}: fast_cases takes parameter names, as fast_cases(seed=2)")
        indices = getattr(getattr(item, "callspec", None), "indices", {})
        for name, count in marker.kwargs.items():
            if name not in indices:
                raise pytest.UsageError(
                    f"{item.nodeid}: fast_cases names {name!r}, which it is not parametrized by"
                )
            if indices[name] >= count:
                item.add_marker(pytest.mark.slow)
                break


@pytest.fixture
def read_only(tmp_path):  # type: ignore[no-untyped-def]
    """``read_only(folder)`` makes ``folder`` (created if missing) a folder nobody may write into, root
    included: ``chmod 0o500`` for a user; for root (who writes into any mode) the ext2/3/4 immutable attribute
    (``chattr +i``). Lifted again after the test. Skips the test where neither holds (root on a file system
    without that attribute)."""
    import os
    import shutil
    import subprocess
    from pathlib import Path

    chattr = shutil.which("chattr")
    made: list[Path] = []

    def make(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            folder.chmod(0o500)
        elif chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode:
            pytest.skip("root writes into read-only folders, and chattr +i is not available here")
        made.append(folder)
        probe = folder / ".probe"
        try:
            probe.touch()
        except OSError:
            return folder
        probe.unlink()
        pytest.skip("this folder stays writable (root on a file system without chattr +i)")

    yield make
    for folder in made:
        if os.geteuid() != 0:
            folder.chmod(0o700)
        else:
            subprocess.run([chattr, "-i", str(folder)], capture_output=True)


@pytest.fixture
def read_only_dir(tmp_path, read_only):  # type: ignore[no-untyped-def]
    """An empty folder nobody may write into (:func:`read_only`)."""
    return read_only(tmp_path / "ro")


def _dask_rank(item: pytest.Item) -> int:
    names = getattr(item, "fixturenames", ())
    return 2 if "dask_cluster" in names else 1 if "dask_in_process" in names else 0


_CLUSTER: list[Any] = []  # the running (cluster, client), while consecutive tests ask for it


@pytest.fixture
def dask_in_process() -> None:
    """Says that the test starts a dask client in this process (it runs after the tests that fork)."""


@pytest.fixture
def dask_cluster(dask_in_process: None) -> Any:
    """A client of a dask LocalCluster of 2 worker processes (one thread each, no dashboard, on 127.0.0.1),
    started for the first test that asks for it and kept for the tests that follow and ask for it too."""
    if not _CLUSTER:
        distributed = pytest.importorskip("distributed")
        cluster = distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, host="127.0.0.1"
        )
        _CLUSTER.append((cluster, distributed.Client(cluster)))
    return _CLUSTER[0][1]


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if _CLUSTER and (nextitem is None or "dask_cluster" not in getattr(nextitem, "fixturenames", ())):
        cluster, client = _CLUSTER.pop()
        client.close()
        cluster.close()
