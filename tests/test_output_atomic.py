"""``--output`` replaces the file atomically (issue 12, item 6): a failure or a kill mid-write leaves the
previous file intact, and a failed write leaves no temporary file behind. Every subcommand writes through
the one helper ``deteval.commands.common.write_text``; each is exercised here."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_errors import ROOT, cli_error

from deteval.cli import main
from deteval.commands import common

SAMPLES = ROOT / "data_samples"
VOC = SAMPLES / "voc"
COMMANDS = {
    "voc": [
        "voc",
        "--annotations", str(VOC / "Annotations"),
        "--image-set", str(VOC / "ImageSets" / "Main" / "test.txt"),
        "--detections", str(VOC / "results" / "comp4_det_test_{cls}.txt"),
    ],
    "coco": ["coco", str(SAMPLES / "coco" / "instances_val.json"), str(SAMPLES / "coco" / "results_bbox.json")],
    "trec": ["trec", str(SAMPLES / "trec" / "qrels.txt"), str(SAMPLES / "trec" / "run.txt")],
    "mir": ["mir", str(SAMPLES / "mir" / "ref.lab"), str(SAMPLES / "mir" / "est.lab")],
}  # fmt: skip
OLD = b"the previous, good result\n"


@pytest.fixture
def saved(tmp_path, capsys):
    """A saved MIR result for ``report`` and ``compare``."""
    path = tmp_path / "saved.json"
    assert main([*COMMANDS["mir"], "--format", "json", "-o", str(path)]) == 0
    capsys.readouterr()
    return path


def _argv(name: str, saved: Path) -> list[str]:
    if name == "report":
        return ["report", str(saved)]
    if name == "compare":
        return ["compare", str(saved), str(saved)]
    return COMMANDS[name]


class _DiskFull:
    """A file object whose write stores half of the data and then fails as a full disk does."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, data: bytes) -> int:
        self._fh.write(data[: len(data) // 2])
        self._fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


NAMES = ["voc", "coco", "trec", "mir", "report", "compare"]


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", NAMES)
def test_a_failing_write_leaves_the_old_file_and_no_temporary(tmp_path, capsys, monkeypatch, saved, name):
    out = tmp_path / "out" / "result.txt"
    out.parent.mkdir()
    out.write_bytes(OLD)
    real_fdopen = os.fdopen
    monkeypatch.setattr(common.os, "fdopen", lambda fd, *a, **k: _DiskFull(real_fdopen(fd, *a, **k)))
    cli_error(capsys, [*_argv(name, saved), "--output", str(out)], str(out), "No space left on device")
    assert out.read_bytes() == OLD
    assert sorted(p.name for p in out.parent.iterdir()) == ["result.txt"]


def test_a_failing_fsync_leaves_the_old_file(tmp_path, capsys, monkeypatch, saved):
    out = tmp_path / "result.json"
    out.write_bytes(OLD)

    def fail(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(common.os, "fsync", fail)
    cli_error(capsys, ["report", str(saved), "--format", "json", "-o", str(out)], "Input/output error")
    assert out.read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json", "saved.json"]


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", NAMES)
def test_a_good_write_replaces_the_file_keeping_its_mode(tmp_path, capsys, saved, name):
    out = tmp_path / "result.txt"
    out.write_bytes(OLD)
    out.chmod(0o640)
    assert main([*_argv(name, saved), "--output", str(out)]) == 0
    capsys.readouterr()
    assert main(_argv(name, saved)) == 0
    stdout, _ = capsys.readouterr()
    assert out.read_text(encoding="utf-8") == stdout
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.txt", "saved.json"]


def test_a_new_file_gets_the_usual_mode_and_a_symlink_is_followed(tmp_path, capsys, saved):
    umask = os.umask(0o022)
    try:
        out = tmp_path / "new.json"
        assert main(["report", str(saved), "-o", str(out)]) == 0
        assert out.stat().st_mode & 0o777 == 0o644
        link = tmp_path / "link.json"
        target = tmp_path / "target.json"
        target.write_bytes(OLD)
        link.symlink_to(target)
        assert main(["report", str(saved), "-o", str(link)]) == 0
        assert link.is_symlink() and target.read_bytes() == out.read_bytes()
    finally:
        os.umask(umask)
    capsys.readouterr()


@pytest.mark.slow
def test_a_kill_mid_write_leaves_the_old_file(tmp_path, saved):
    """SIGKILL while half of the output is written: the old file is untouched (the temporary file that a
    killed process cannot remove is the only trace)."""
    out = tmp_path / "result.json"
    out.write_bytes(OLD)
    script = f"""
import os, sys, time
from deteval.commands import common
from deteval.cli import main
real = os.fdopen
class Slow:
    def __init__(self, fh): self.fh = fh
    def write(self, data):
        self.fh.write(data[: len(data) // 2]); self.fh.flush()
        print("half", flush=True); time.sleep(60)
    def __getattr__(self, name): return getattr(self.fh, name)
    def __enter__(self): return self
    def __exit__(self, *exc): self.fh.close()
common.os.fdopen = lambda fd, *a, **k: Slow(real(fd, *a, **k))
main(["report", {str(saved)!r}, "--format", "json", "-o", {str(out)!r}])
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout.readline() == "half\n"
        tmps = [p for p in tmp_path.iterdir() if p.name.startswith(".result.json.")]
        assert len(tmps) == 1 and tmps[0].stat().st_size > 0  # the half-written temporary file
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert out.read_bytes() == OLD
