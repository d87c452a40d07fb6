"""The HTML report reads in order: the headline numbers as the protocol prints them, the settings, the
per-class table, PR curves, where the AP goes, confusion, thresholds, calibration, the worst images with
their drawings; nothing empty and nothing raw. In headless Chromium (installed from the system packages by
.ci/run): the COCO sample's report is drawn, with no console message, the same picture as docs/img/."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import numpy as np
import pytest
from test_analysis_html import VOC_ARGS

from deteval.cli import main

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("html_report_shot", ROOT / "scripts" / "html_report_shot.py")
assert _spec and _spec.loader
shot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shot)

SECTIONS = ["Summary", "Per class", "Precision-recall curves", "Where does the AP go?", "Confusion matrix",
            "Thresholds and calibration", "Worst images"]  # fmt: skip


def _html(tmp_path: Path, args: list[str]) -> str:
    out = tmp_path / "report.html"
    assert main([*args, "--html", str(out), "--quiet", "--output", str(tmp_path / "out.txt")]) == 0
    return out.read_text(encoding="utf-8")


@pytest.mark.slow  # (above a second of CPU: full suite only)
def test_voc_report_reads_in_order_with_nothing_raw(tmp_path):
    text = _html(tmp_path, VOC_ARGS)
    heads = re.findall(r"<h2>(.*?)</h2>", text)
    assert [next(h for h in heads if h.startswith(s)) for s in SECTIONS] == heads
    assert '<p class="headline">map 0.8440 <small>voc: metric voc2010, iou_threshold 0.5000</small>' in text
    assert '"map"' not in text and "0.8440000000000001" not in text and "<pre>" not in text  # no JSON dump
    assert 'alt="precision-recall curves"' in text and 'alt="error breakdown"' in text
    # the worst images that cost AP, each with its drawing; none of the images that cost nothing
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", text)
    assert [c.split(":")[0] for c in captions] == ["000023", "000021"]
    assert "AP loss 0.0000" not in text


def test_coco_report_says_why_a_section_has_no_chart(tmp_path):
    text = _html(tmp_path, shot.SAMPLE)
    # the sample's AP50 is 1.0 for every class: no error costs AP and no image loses any
    assert "<pre> Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.758" in text
    assert "params.iou_thrs</td><td>0.5:0.95:10</td>" in text and "0.8999999999999999" not in text
    assert "every dAP is 0.00" in text and 'alt="error breakdown"' not in text
    assert "No image costs any AP here" in text and text.count("<figcaption>") == 3
    assert 'alt="precision-recall curves"' in text


needs_browser = pytest.mark.skipif(
    shot.browser() is None and not os.environ.get("DETEVAL_REQUIRE_BROWSER"),
    reason="no Chromium installed (Debian: apt-get install chromium; .ci/run installs it)",
)


@pytest.mark.slow  # (above a second of CPU: full suite only)
@needs_browser
def test_coco_report_in_headless_chromium(tmp_path):
    from PIL import Image

    html = tmp_path / "report.html"
    html.write_text(_html(tmp_path, shot.SAMPLE), encoding="utf-8")
    png = tmp_path / "shot.png"
    r = shot.report_shot(html, png, tmp_path)
    assert png.is_file(), r.stderr[-2000:]
    assert shot.console_messages(r.stderr) == []
    dom = shot.chromium("--dump-dom", html.as_uri(), profile=tmp_path / "p2")
    assert 'data-ready="1"' in dom.stdout and shot.console_messages(dom.stderr) == []
    with Image.open(png) as im:
        px = np.asarray(im.convert("RGB"))
    assert px.shape[:2] == (shot.WINDOW[1], shot.WINDOW[0])
    rows = (px != 255).any(axis=(1, 2))
    assert rows[: px.shape[0] // 2].mean() > 0.5  # the upper half is drawn, not blank
    assert len(np.unique(px[::8, ::8].reshape(-1, 3), axis=0)) > 50
    docs = ROOT / "docs" / "img" / "html_report_coco.png"
    with Image.open(docs) as im:
        assert im.size == (shot.WINDOW[0], shot.WINDOW[1])
    assert "](img/html_report_coco.png)" in (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
