import subprocess
import sys

import deteval
from deteval.cli import main


def test_version_and_help(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert deteval.__version__ in capsys.readouterr().out
    out = subprocess.run([sys.executable, "-m", "deteval", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "usage: deteval" in out.stdout
