"""One self-contained HTML report, in the order a person reads it: the headline numbers as the protocol prints
them (COCO's twelve lines; VOC's mAP) with the settings, the sortable per-class table, the PR curves, where the
AP goes (TIDE), the confusion matrix, F1 / precision / recall against confidence, the reliability diagram and
the worst images with their drawings. No section is empty (a section with nothing to show says why in one
sentence) and nothing is raw JSON.

Nothing is fetched: the figures are PNG data URIs (matplotlib, Agg), the table sorter is a few lines of
inline JavaScript, the style is inline CSS.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.calibration import Calibration
from deteval.analysis.confusion import Confusion
from deteval.analysis.operating import OperatingPoints
from deteval.analysis.tide import ERROR_TYPES, ErrorAnalysis
from deteval.io.guards import write_file
from deteval.report.figure import new_figure
from deteval.report.plots import pr_grid_figure
from deteval.report.stats_table import STATS_KEYS
from deteval.report.tables import display_fields, format_cell
from deteval.results import EvalResult

__all__ = ["render_html", "write_html"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f3f3f3;cursor:pointer;position:sticky;top:0}td:first-child,th:first-child{text-align:left}
pre{background:#f7f7f7;padding:1em;overflow-x:auto}.muted{color:#777}
img{max-width:100%;border:1px solid #ccc;margin:4px}
.headline{font-size:2em;margin:.3em 0}.headline small{font-size:.45em;color:#555}
table.settings td{text-align:left}
"""

_JS = """
function sortBy(th, col){
  var table = th.closest('table'), body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var asc = th.getAttribute('data-order') !== 'asc';
  rows.sort(function(a, b){
    var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
    var nx = parseFloat(x), ny = parseFloat(y);
    var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
    return asc ? c : -c;
  });
  rows.forEach(function(r){ body.appendChild(r); });
  table.querySelectorAll('th').forEach(function(h){ h.removeAttribute('data-order'); });
  th.setAttribute('data-order', asc ? 'asc' : 'desc');
}
document.body.setAttribute('data-ready', '1');  // the script ran to here without an error
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){ sortBy(th, col); });
  });
});
// report.html#sort=<column> opens the per-class table sorted by that column, #sort=-<column> descending
var m = /^#sort=(-?)(.+)$/.exec(decodeURIComponent(location.hash));
if (m) {
  document.querySelectorAll('#per-class th').forEach(function(th, col){
    if (th.textContent === m[2]) { sortBy(th, col); if (m[1]) { sortBy(th, col); } }
  });
}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "" if v is None else str(v)
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return _data_uri(buf.getvalue())


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _class_table(result: EvalResult) -> str:
    rows = result.per_class
    if not rows:
        return "<p>The result has no per-class rows (categories pooled: use_cats off).</p>"
    cols = list(
        dict.fromkeys(k for r in rows.values() for k, v in r.items() if not isinstance(v, (dict, list)))
    )
    head = "".join(f"<th>{_e(c)}</th>" for c in ["class", *cols])
    body = []
    for name, r in rows.items():
        cells = [f'<td data-v="{_e(name)}">{_e(name)}</td>']
        for c in cols:
            v = r.get(c)
            key = "" if v is None else (repr(float(v)) if isinstance(v, (int, float)) else str(v))
            cells.append(f'<td data-v="{_e(key)}">{_e(_num(v))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="sortable" id="per-class"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _errors_section(e: ErrorAnalysis) -> str:
    d = e.to_dict()
    rows = "".join(
        f"<tr><td>{k}</td><td>{100 * d['main'][k]:.2f}</td><td>{d['counts'][k]}</td>"
        + "".join(f"<td>{100 * d['by_size'][s][k]:.2f}</td>" for s in ("small", "medium", "large"))
        + "</tr>"
        for k in ERROR_TYPES
    )
    table = (
        "<table><thead><tr><th>error</th><th>dAP</th><th>count</th><th>small</th><th>medium</th><th>large</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )
    text = (
        f"<p>TIDE ({_e(e.compat)}), foreground IoU {e.pos_threshold:g}, background IoU {e.bg_threshold:g}: "
        f"AP {100 * d['ap']:.2f}; fixing every false positive would add {100 * d['special']['fp']:.2f}, "
        f"every false negative {100 * d['special']['fn']:.2f} AP points.</p>"
    )
    values = [100 * d["main"][k] for k in ERROR_TYPES] + [100 * d["special"][k] for k in ("fp", "fn")]
    if not any(abs(v) >= 0.005 for v in values):  # a chart of zero bars says nothing
        return (
            text + "<p>No error type costs any AP here (every dAP is 0.00); the counts are below.</p>" + table
        )
    fig = new_figure(9.0, 2.8)
    ax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 1]})
    ax[0].bar(list(ERROR_TYPES), [100 * d["main"][k] for k in ERROR_TYPES], color="#c0504d")
    ax[0].set_ylabel("dAP (AP points)")
    ax[0].set_title("main errors")
    ax[1].bar(["fp", "fn"], [100 * d["special"]["fp"], 100 * d["special"]["fn"]], color="#4f81bd")
    ax[1].set_title("special")
    for a in ax:
        a.set_ylim(bottom=0.0)
    return text + f'<img alt="error breakdown" src="{_png(fig)}">{table}'


def _confusion_section(c: Confusion) -> str:
    m = c.matrix
    top = max(int(m.max()), 1)
    head = "".join(f"<th>{_e(n)}</th>" for n in c.labels)
    body = []
    for name, row in zip(c.labels, m.tolist()):
        cells = "".join(f'<td style="background:rgba(192,80,77,{0.85 * v / top:.3f})">{v}</td>' for v in row)
        body.append(f"<tr><td>{_e(name)}</td>{cells}</tr>")
    if c.rule:
        how = f"{_e(c.rule)}: IoU &gt; {c.iou:g}, conf &gt; {c.score_threshold:g}"
    else:
        how = f"IoU {c.iou:g}, score &ge; {c.score_threshold:g}"
    return (
        f"<p>{how}. Rows: ground truth (last: detections that match "
        f"nothing); columns: predicted (last: missed). {c.ignored} ignored detections.</p>"
        f'<table id="confusion"><thead><tr><th>gt \\ pred</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def _curves_section(ops: OperatingPoints | None, cal: Calibration | None) -> str:
    parts = []
    if ops is not None:
        fig = new_figure(12.0, 3.2)
        ax = fig.subplots(1, 3)
        for name, cur in ops.curves.items():
            if cur.thresholds.size == 0 or cur.n_gt == 0:
                continue
            for a, y in zip(ax, (cur.f1, cur.precision, cur.recall)):
                a.plot(cur.thresholds, y, lw=1, label=name)
        unit = all(
            c.thresholds.size == 0 or (c.thresholds.min() >= 0 and c.thresholds.max() <= 1)
            for c in ops.curves.values()
        )
        for a, t in zip(ax, ("F1", "precision", "recall")):
            a.set_xlabel("confidence threshold")
            a.set_title(t)
            if unit:
                a.set_xlim(0, 1)
            if ops.global_threshold is not None:
                a.axvline(ops.global_threshold, color="k", ls=":", lw=1)
        drawn = sum(1 for c in ops.curves.values() if c.n_gt and c.thresholds.size)
        if 0 < drawn <= 12:
            ax[0].legend(fontsize=7)
        parts.append(f'<img alt="F1, precision and recall against confidence" src="{_png(fig)}">')
        rows = "".join(
            f"<tr><td>{_e(n)}</td><td>{_num(b['threshold'])}</td><td>{b['f1']:.4f}</td>"
            f"<td>{b['precision']:.4f}</td><td>{b['recall']:.4f}</td></tr>"
            for n, b in ops.best.items()
        )
        g = "none" if ops.global_threshold is None else f"{ops.global_threshold:.4g}"
        parts.append(
            f"<p>One threshold for all classes: <b>{g}</b> (mean F1 {ops.global_mean_f1:.4f}).</p>"
            '<table class="sortable" id="operating"><thead><tr><th>class</th><th>best threshold</th><th>F1</th>'
            f"<th>precision</th><th>recall</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    if cal is not None:
        fig = new_figure(4.0, 4.0)
        ax = fig.subplots()
        centers = (cal.edges[:-1] + cal.edges[1:]) / 2
        acc = [np.nan if v is None else v for v in cal.accuracy]
        ax.bar(centers, acc, width=np.diff(cal.edges), edgecolor="k", color="#4f81bd", label="accuracy")
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
        ax.set_xlabel("confidence")
        ax.set_ylabel(f"fraction of true positives (IoU {cal.iou:g})")
        ax.set_title(f"reliability: ECE {cal.ece:.4f}")
        ax.legend(fontsize=7)
        parts.append(f'<img alt="reliability diagram" src="{_png(fig)}">')
    return "".join(parts)


_HEADLINE_WITH = ("metric", "iou_threshold")  # said beside the headline number


def _main_key(result: EvalResult) -> str | None:
    """The summary field a protocol without printed lines is known by (VOC: ``map``)."""
    s = result.summary
    return next((k for k in ("map", "AP", "mAP50-95", "f") if isinstance(s.get(k), (int, float))), None)


def _headline(result: EvalResult) -> str:
    """The protocol's own printed lines (COCO's twelve), or its main number (VOC's mAP) in large type."""
    s = result.summary
    if result.lines:
        return f"<pre>{_e(chr(10).join(result.lines))}</pre>"
    main = _main_key(result)
    if main is None:
        return ""
    what = ", ".join(f"{k} {_e(format_cell(s[k], False))}" for k in _HEADLINE_WITH if k in s)
    return f'<p class="headline">{_e(main)} {s[main]:.4f} <small>{_e(result.protocol)}: {what}</small></p>'


def _settings(result: EvalResult) -> str:
    """The summary's other fields as the table output shows them (4 decimals, parameters as the command
    line spells them), the analyses' own sections left out."""
    skip = ("errors", "confusion", "operating_points", "calibration", "images", "stats", *STATS_KEYS)
    main = _main_key(result)
    if result.lines:  # the printed lines show the named stats (COCO's AP, AP50, ...)
        shown = {k for k, v in result.summary.items() if isinstance(v, float) and k[:1].isupper()}
    else:  # said in the headline
        shown = {main, *_HEADLINE_WITH} if main is not None else set()
    rows = [
        f"<tr><td>{_e(k)}</td><td>{_e(format_cell(v, False))}</td></tr>"
        for k, v in display_fields(result)
        if k.split(".")[0] not in skip and k not in shown
    ]
    return f'<table class="settings"><tbody>{"".join(rows)}</tbody></table>' if rows else ""


def _pr_section(result: EvalResult) -> str:
    if not result.curves:
        return "<p>The result holds no PR curve (no class has ground truth at the curves' threshold).</p>"
    return f'<img alt="precision-recall curves" src="{_png(pr_grid_figure(result))}">'


def _worst_section(worst: Sequence[tuple[dict[str, Any], bytes]]) -> str:
    costly = [(r, p) for r, p in worst if r["ap_loss"] > 0]
    parts = []
    if not costly:
        parts.append(
            "<p>No image costs any AP here (its false positives rank below every true positive of their "
            "class); below, the images with the most false positives and missed objects.</p>"
        )
    for row, png in costly or worst:
        cap = (
            f"{_e(row['image'])}: {row['fp']} false positives, {row['missed']} missed, "
            f"AP loss {row['ap_loss']:.4f} ({100 * row['share']:.1f}% of the loss)"
        )
        parts.append(
            f'<figure><img alt="{cap}" src="{_data_uri(png)}"><figcaption>{cap}</figcaption></figure>'
        )
    return "".join(parts)


def render_html(
    result: EvalResult,
    *,
    title: str = "deteval report",
    errors: ErrorAnalysis | None = None,
    confusion: Confusion | None = None,
    operating: OperatingPoints | None = None,
    calibration: Calibration | None = None,
    worst: Sequence[tuple[dict[str, Any], bytes]] = (),
) -> str:
    """The report as one HTML string (see the module docstring); ``worst``: (row, PNG bytes) per image."""
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        "<h2>Summary</h2>",
        _headline(result),
        _settings(result),
        "<h2>Per class</h2><p class='muted'>Click a column to sort.</p>",
        _class_table(result),
        "<h2>Precision-recall curves</h2>",
        _pr_section(result),
    ]
    if errors is not None:
        parts += ["<h2>Where does the AP go? (error breakdown)</h2>", _errors_section(errors)]
    if confusion is not None:
        parts += ["<h2>Confusion matrix</h2>", _confusion_section(confusion)]
    if operating is not None or calibration is not None:
        parts += ["<h2>Thresholds and calibration</h2>", _curves_section(operating, calibration)]
    if worst:
        parts += ["<h2>Worst images</h2>", _worst_section(worst)]
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts)


def write_html(path: str | Path, result: EvalResult, **kwargs: Any) -> Path:
    """Write :func:`render_html` to ``path`` (UTF-8, atomically: :func:`deteval.io.guards.write_file`)."""
    return write_file(path, render_html(result, **kwargs), "HTML report")
