"""Screenshot of the HTML report of the COCO sample in headless Chromium: docs/img/html_report_coco.png.

    python scripts/html_report_shot.py            # writes docs/img/html_report_coco.png

tests/test_html_report.py renders the same report with the same function and checks it (a page drawn, no
console error); a Chromium from the system packages is needed (Debian: ``apt-get install chromium``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = [
    "coco",
    str(ROOT / "data_samples/coco/instances_val.json"),
    str(ROOT / "data_samples/coco/results_bbox.json"),
]
#: The window the report is drawn in (pixels): the whole COCO sample report fits in it.
WINDOW = (1200, 4000)
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--hide-scrollbars",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--enable-logging=stderr",
    "--v=0",
]  # fmt: skip


def browser() -> str | None:
    """The Chromium on PATH, if any."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a throw-away profile; its console messages are in ``stderr``."""
    exe = browser()
    if exe is None:
        raise RuntimeError("no Chromium on PATH (Debian: apt-get install chromium)")
    cmd = [exe, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


def console_messages(stderr: str) -> list[str]:
    """The page's console messages in Chromium's log (uncaught exceptions among them; Chromium logs every
    level as INFO, so the report, which writes none, must have none)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def report_shot(html: Path, png: Path, work: Path) -> subprocess.CompletedProcess[str]:
    """Screenshot ``html`` into ``png`` at :data:`WINDOW`."""
    size = f"--window-size={WINDOW[0]},{WINDOW[1]}"
    return chromium(size, f"--screenshot={png}", html.resolve().as_uri(), profile=work / "profile")


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from deteval.cli import main as deteval

    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        if deteval([*SAMPLE, "--html", str(html), "--quiet", "--output", str(Path(tmp) / "out.txt")]) != 0:
            return 1
        out = ROOT / "docs" / "img" / "html_report_coco.png"
        r = report_shot(html, out, Path(tmp))
        errors = console_messages(r.stderr)
        if not out.is_file() or errors:
            print(r.stderr[-2000:], *errors, sep="\n", file=sys.stderr)
            return 1
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
