"""--html: one self-contained file (no network: every image a data URI, no external reference), loaded in a
real headless Chromium when one is installed: screenshot taken, per-class table found and sorted by the
page's own script."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_voc_cli import ARGS

from deteval.cli import main

COCO = Path(__file__).resolve().parent / "data" / "coco" / "coco_fruits"
VOC_ARGS = ARGS  # the VOC sample set, as test_voc_cli runs it
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict]:
    out = tmp_path / "report.html"
    assert main([*VOC_ARGS, "--html", str(out), "--format", "json"]) == 0
    return out, json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_self_contained(tmp_path, capsys):
    out, doc = _report(tmp_path, capsys)
    text = out.read_text(encoding="utf-8")
    # nothing fetched: no URL anywhere, every src is an inline PNG, no <link>
    assert not re.search(r"(?i)(https?:|ftp:|//[a-z0-9.-]+\.[a-z]{2,}/)", text)
    srcs = re.findall(r'src="([^"]*)"', text)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "<link" not in text and "<script src" not in text
    for part in ("Per class", "error breakdown", "Confusion matrix", "reliability diagram", "Worst images"):
        assert part in text
    # the sections carry the same numbers as the JSON the same run printed
    assert f"{100 * doc['errors']['main']['miss']:.2f}" in text
    assert doc["images"]["worst"] and "picture" not in doc["images"]["worst"][0]
    for name in doc["per_class"]:
        assert f'data-v="{name}"' in text


@pytest.mark.slow
def test_coco_report_has_the_per_class_table(tmp_path, capsys):
    out = tmp_path / "coco.html"
    args = ["coco", str(COCO / "fruit_val_coco_format.json"), str(COCO / "coco_instances_results.json")]
    assert main([*args, "--html", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    stdout = capsys.readouterr().out
    assert "TIDE errors" not in stdout  # --html alone keeps the terminal output as it was
    for name in ("date", "fig", "hazelnut"):
        assert f'data-v="{name}"' in text


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}",
    ]  # fmt: skip
    assert BROWSER is not None
    return subprocess.run([BROWSER, *flags, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (Debian: apt-get install chromium)")
def test_opens_in_headless_chromium(tmp_path, capsys):
    out, doc = _report(tmp_path, capsys)
    shot = tmp_path / "shot.png"
    r = _chromium("--window-size=1200,3000", f"--screenshot={shot}", out.as_uri(), profile=tmp_path / "p1")
    assert shot.is_file(), r.stderr[-2000:]
    from PIL import Image

    im = Image.open(shot).convert("RGB")
    assert im.size == (1200, 3000)
    px = np.asarray(im.resize((60, 150))).reshape(-1, 3)
    assert len(np.unique(px, axis=0)) > 20  # rendered content, not a blank page
    dom = _chromium("--dump-dom", out.as_uri() + "#sort=-ap", profile=tmp_path / "p2").stdout
    table = re.search(r'<table class="sortable" id="per-class">(.*?)</table>', dom, re.S)
    assert table, dom[:2000]
    order = re.findall(r"<tr><td data-v=\"([^\"]+)\"", table.group(1))
    assert sorted(order) == sorted(doc["per_class"])
    aps = [doc["per_class"][c]["ap"] for c in order]
    assert aps == sorted(aps, reverse=True)  # the page's script sorted the table, descending
    assert order != list(doc["per_class"])  # (the sample lists the classes by increasing AP)


def test_docs_python_example_runs(monkeypatch):
    root = Path(__file__).resolve().parent.parent
    text = (root / "docs" / "analysis.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(root)
    ns: dict = {}
    exec(compile(code, "docs/analysis.md", "exec"), ns)
    assert set(ns["errors"].main) == {"cls", "loc", "both", "dupe", "bkg", "miss"}
    assert ns["matrix"].shape[0] == ns["matrix"].shape[1] and 0.0 <= ns["ece"] <= 1.0
    assert ns["ops"].global_threshold is not None and len(ns["worst"]) <= 5
