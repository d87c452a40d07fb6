"""`deteval coco|voc --workers N` and `--scheduler ADDRESS` (a real `dask scheduler` and `dask worker` started
here on 127.0.0.1) print the same numbers as one process."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from deteval.cli import main
from deteval.errors import ConfigError
from deteval.run.client import dask_client

# (found, not imported: importing it here would cost every worker's collection; the tests import it)
pytestmark = [
    pytest.mark.skipif(find_spec("distributed") is None, reason="needs dask.distributed"),
    pytest.mark.usefixtures("dask_in_process"),  # (their clients: tests/conftest.py)
]

DATA = Path(__file__).parent / "data" / "coco" / "coco_val2014_100"
GT = str(DATA / "instances_val2014_100.json")
RES = str(DATA / "instances_val2014_fakebbox100_results.json")


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    dask = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")
    if dask is None:
        pytest.skip("the dask command is not installed")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], **quiet)]  # fmt: skip
    try:
        import distributed

        deadline = time.monotonic() + 60
        while True:  # the scheduler is up once a client connects
            try:
                distributed.Client(address, timeout="2s").close()
                break
            except (OSError, TimeoutError):
                if time.monotonic() > deadline or procs[0].poll() is not None:
                    pytest.fail("the dask scheduler did not start")
                time.sleep(0.5)
        procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                       "--no-dashboard", "--host", "127.0.0.1"], **quiet))  # fmt: skip
        with distributed.Client(address, timeout="10s") as c:
            c.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.mark.slow
def test_coco_scheduler_and_workers_print_one_process_numbers(
    capsys: pytest.CaptureFixture[str], scheduler: str, tmp_path: Path
) -> None:
    one = _json(capsys, ["coco", GT, RES, "--format", "json", "--per-class"])
    got = _json(capsys, ["coco", GT, RES, "--format", "json", "--per-class", "--scheduler", scheduler,
                         "--shards", "7"])  # fmt: skip
    assert got == one
    # one results file per rank, read as their concatenation
    records = json.loads(Path(RES).read_text())
    files = []
    for i in range(2):
        files.append(tmp_path / f"rank{i}.json")
        files[-1].write_text(json.dumps(records[i::2]))
    (tmp_path / "all.json").write_text(json.dumps(records[::2] + records[1::2]))
    one = _json(capsys, ["coco", GT, str(tmp_path / "all.json"), "--format", "json"])
    got = _json(capsys, ["coco", GT, *map(str, files), "--format", "json", "--scheduler", scheduler])
    assert got == one
    assert _json(capsys, ["coco", GT, *map(str, files), "--format", "json"]) == one


@pytest.mark.slow
def test_voc_scheduler(capsys: pytest.CaptureFixture[str], scheduler: str) -> None:
    root = Path(__file__).parent.parent / "data_samples" / "voc"
    if not root.exists():
        pytest.skip("no VOC sample")
    args = ["voc", "--annotations", str(root / "Annotations"), "--detections",
            str(root / "results" / "comp4_det_test_{cls}.txt"), "--format", "json"]  # fmt: skip
    one = _json(capsys, args)
    assert _json(capsys, [*args, "--scheduler", scheduler, "--shards", "3"]) == one


@pytest.mark.slow
def test_workers_option_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    one = _json(capsys, ["coco", GT, RES, "--format", "json"])
    assert _json(capsys, ["coco", GT, RES, "--format", "json", "--workers", "2"]) == one
    assert main(["coco", GT, RES, "--workers", "1", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "either --workers or --scheduler" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="cannot reach the dask scheduler"):
        with dask_client(scheduler=f"tcp://127.0.0.1:{_free_port()}", timeout="1s"):
            pass


@pytest.mark.slow
def test_trec_scheduler_and_shards(capsys: pytest.CaptureFixture[str], scheduler: str) -> None:
    root = Path(__file__).parent.parent / "data_samples" / "trec"
    qrels, run = sorted(root.glob("*qrels*"))[0], sorted(root.glob("*run*"))[0]
    args = ["trec", str(qrels), str(run), "-q", "-c", "-m", "all_trec"]
    assert main(args) == 0
    one = capsys.readouterr().out
    assert main([*args, "--shards", "3"]) == 0
    assert capsys.readouterr().out == one
    assert main([*args, "--scheduler", scheduler]) == 0
    assert capsys.readouterr().out == one


@pytest.mark.slow
def test_lvis_scheduler_with_fixed_ap_and_pooled(capsys: pytest.CaptureFixture[str], scheduler: str) -> None:
    root = Path(__file__).parent.parent / "data_samples"
    args = ["lvis", str(root / "lvis" / "lvis_val.json"), str(root / "coco" / "results_bbox.json"),
            "--format", "json", "--per-class", "--pooled"]  # fmt: skip
    for extra in ([], ["--fixed-ap"]):
        one = _json(capsys, [*args, *extra])
        assert one["AP"] > 0
        assert _json(capsys, [*args, *extra, "--scheduler", scheduler, "--shards", "7"]) == one
