"""Helpers for the bad-input tests: run the CLI in process and as ``python -m deteval``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deteval.cli import main

ROOT = Path(__file__).resolve().parent.parent


def insert_line(path: Path, lineno: int, line: bytes) -> None:
    """Insert ``line`` into the text file ``path`` so that it becomes line ``lineno`` (1-based)."""
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(lineno - 1, line + b"\n")
    path.write_bytes(b"".join(lines))


def cli_error(capsys, argv: list[str], *pieces: str) -> str:
    """Run ``deteval argv`` in process; assert exit 2, one ``deteval: error:`` line naming every piece."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert "Traceback" not in err
    assert err.startswith("deteval: error: ") and err.count("\n") == 1, err
    for piece in pieces:
        assert piece in err, (piece, err)
    return err


def subprocess_error(argv: list[str], *pieces: str) -> str:
    """The same through ``python -m deteval`` in a fresh interpreter (what a user's shell sees)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "deteval", *argv], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("deteval: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    for piece in pieces:
        assert piece in proc.stderr, (piece, proc.stderr)
    return proc.stderr
