"""Figures say what they draw (#13.12-14, #12.7): titles and legends are checked against the plotted values by
inspecting the matplotlib Figure objects; 1,000 classes stay readable; names are drawn literally."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main
from deteval.detection.coco import evaluate_coco
from deteval.report import plots
from deteval.report.plots import figures, write_plots
from deteval.results import EvalResult, PRCurve

ROOT = Path(__file__).resolve().parent.parent
VAL = ROOT / "tests" / "data" / "coco" / "coco_val2014_100"
KPT = ROOT / "tests" / "data" / "coco" / "coco_keypoints"


def _arrays(ev):
    return {
        "precision": ev.precision,
        "iou_thrs": ev.params.iou_thrs,
        "rec_thrs": ev.params.rec_thrs,
        "names": ev.cat_names,
    }


@pytest.fixture(scope="module")
def val2014():
    ev = evaluate_coco(VAL / "instances_val2014_100.json", VAL / "instances_val2014_fakebbox100_results.json")
    return ev, figures(ev.to_result(per_class=True), coco_arrays=_arrays(ev))


def _panels(fig):
    return [ax for ax in fig.axes if ax.axison and ax.get_title()]


def _title_value(ax) -> tuple[str, float]:
    m = re.fullmatch(r"(.+?)  (AP\S*) (\d\.\d{3})", ax.get_title())
    assert m, ax.get_title()
    return m.group(1), float(m.group(3))


@pytest.mark.slow
def test_coco_pr_curves_titles_are_the_ap_at_the_iou_drawn(val2014):
    ev, figs = val2014
    fig = figs["pr_curves.png"]
    title = fig._suptitle.get_text()
    assert "at IoU 0.50" in title and "best 12 and worst 12 of 70 classes by AP@IoU.50" in title
    rows = ev.to_result().per_class
    panels = _panels(fig)
    assert len(panels) == 24
    for ax in panels:
        name, shown = _title_value(ax)
        (line,) = ax.get_lines()
        drawn = line.get_ydata()
        # the curve is pycocotools' precision at IoU 0.50 over 101 recall levels: its mean is the class AP50
        assert round(float(np.mean(drawn)), 3) == shown == round(rows[name]["ap50"], 3)
        assert ax.get_ylim()[1] > 1.0 and ax.get_xlim()[0] < 0.0  # a curve at precision 1.0 is not hidden
    ap50 = sorted((r["ap50"] for r in rows.values() if r["ap50"] >= 0), reverse=True)
    shown = [_title_value(ax)[1] for ax in panels]
    assert shown == [round(v, 3) for v in ap50[:12] + ap50[-12:]]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["interpolated precision at 101 recall levels"]


@pytest.mark.slow
def test_coco_precision_figures_agree_with_pycocotools_stats(val2014):
    ev, figs = val2014
    fig = figs["coco_precision_all.png"]
    (ax,) = fig.axes
    assert ax.get_title() == "COCO precision averaged over the 70 categories with ground truth"
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == [
        f"IoU=0.50  AP {ev.stats[1]:.3f}",
        f"IoU=0.75  AP {ev.stats[2]:.3f}",
        f"IoU=0.50:0.95  AP {ev.stats[0]:.3f}",
    ]
    for line, stat in zip(ax.get_lines(), (ev.stats[1], ev.stats[2], ev.stats[0])):
        assert np.mean(line.get_ydata()) == pytest.approx(stat, abs=1e-12)
    grid = figs["coco_precision.png"]
    assert "10 without ground truth not shown" in grid._suptitle.get_text()
    for ax in _panels(grid):
        _, shown = _title_value(ax)
        assert round(float(np.mean(ax.get_lines()[-1].get_ydata())), 3) == shown
        widths = [ln.get_linewidth() for ln in ax.get_lines()]
        assert widths == sorted(widths, reverse=True)  # equal curves stay visible under one another


def test_keypoints_say_oks():
    ev = evaluate_coco(KPT / "gt_dataset.json", KPT / "dt_dataset.json", iou_type="keypoints")
    figs = figures(ev.to_result(per_class=True), coco_arrays=_arrays(ev))
    assert "at OKS 0.50" in figs["pr_curves.png"]._suptitle.get_text()
    assert "AP@OKS.50" in _panels(figs["pr_curves.png"])[0].get_title()
    labels = [t.get_text() for t in figs["coco_precision_all.png"].axes[0].get_legend().get_texts()]
    assert labels[0].startswith("OKS=0.50") and not any("IoU" in t for t in labels)


@pytest.mark.slow
def test_voc_panels_legend_and_ap_from_the_drawn_curve(capsys):
    assert main(
        [
            "voc",
            "--annotations", str(ROOT / "data_samples/voc/Annotations"),
            "--image-set", str(ROOT / "data_samples/voc/ImageSets/Main/test.txt"),
            "--detections", str(ROOT / "data_samples/voc/results/comp4_det_test_{cls}.txt"),
            "--format", "json", "--curves",
        ]
    ) == 0  # fmt: skip
    result = EvalResult.from_json(capsys.readouterr().out)
    fig = figures(result)["pr_curves.png"]
    assert "VOC voc2010: PR curves at IoU 0.5" in fig._suptitle.get_text()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "precision at each rank",
        "interpolated: max precision at recall ≥ r",
    ]
    for ax in _panels(fig):
        name, shown = _title_value(ax)
        raw = ax.get_lines()[0]
        rec, prec = raw.get_xdata(), raw.get_ydata()
        # all-point AP (VOCap) of the solid curve: what the title says
        mrec, mpre = np.r_[0.0, rec, 1.0], np.r_[0.0, np.nan_to_num(prec), 0.0]
        mpre = np.maximum.accumulate(mpre[::-1])[::-1]
        i = np.flatnonzero(mrec[1:] != mrec[:-1])
        assert round(float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])), 3) == shown
        assert shown == round(result.per_class[name]["ap"], 3)


def _many(n: int) -> EvalResult:
    rng = np.random.default_rng(1)
    per_class, curves = {}, {}
    for k in range(n):
        rec = np.sort(rng.random(20))
        prec = np.sort(rng.random(20))[::-1]
        per_class[f"c{k}"] = {"ap": float(rng.random())}
        curves[f"c{k}"] = PRCurve(rec, prec)
    per_class["c7"]["ap"] = None
    return EvalResult("voc", {"metric": "voc2010", "iou_threshold": 0.5}, per_class, curves)


@pytest.mark.slow
def test_a_thousand_classes_stay_readable():
    result = _many(1000)
    figs = figures(result)
    assert len(_panels(figs["pr_curves.png"])) == 24
    assert "best 12 and worst 12 of 1000 classes" in figs["pr_curves.png"]._suptitle.get_text()
    (ax,) = figs["pr_overlay.png"].axes
    assert len(ax.get_legend().get_texts()) == 10 and "grey: the other 990" in ax.get_title()
    (bars,) = figs["ap_bars.png"].axes
    labels = [t.get_text() for t in bars.get_yticklabels()]
    assert len(labels) == 41 + 1 and labels[20] == "…" and labels[-1] == "c7  n/a"  # + the one n/a class
    assert "best 20 and worst 20 of 999 classes; 1 without a value" in bars.get_title()
    aps = sorted((r["ap"] for r in result.per_class.values() if r["ap"] is not None), reverse=True)
    assert [p.get_width() for p in bars.patches[:20]] == aps[:20]
    assert [float(t.split()[-1]) for t in labels[:20]] == [round(v, 3) for v in aps[:20]]  # labels = bars
    assert f"mean {np.mean(aps):.3f} over 999 classes" == bars.get_legend().get_texts()[0].get_text()


def test_delta_bars_name_the_metric_and_inputs_and_fit_the_data():
    from report_samples import voc_result

    from deteval.report.compare import compare_results

    c = compare_results(voc_result(0), voc_result(0, shift=0.05), sources=("base.json", "new.json"))
    (ax,) = figures(c)["delta_bars.png"].axes
    assert ax.get_title().startswith("per-class ap delta (B − A): B = new.json, A = base.json")
    deltas = [r["delta"] for r in c.per_class.values() if r["delta"] is not None]
    lo, hi = ax.get_xlim()
    assert lo <= min(min(deltas), 0) and hi >= max(max(deltas), 0)
    span = max(max(deltas), 0) - min(min(deltas), 0)
    assert hi - lo < 1.5 * span  # fitted to the data, not stretched to [0, 1]


@pytest.mark.slow
def test_names_with_math_markup_are_drawn_literally(tmp_path):
    names = ["$x_{$", "a$b$c", r"\frac{1}{0}$"]
    curves = {n: PRCurve([0.5, 1.0], [1.0, 0.5]) for n in names}
    result = EvalResult("voc", {}, {n: {"ap": 0.5} for n in names}, curves)
    paths = write_plots(result, tmp_path)
    assert [p.name for p in paths] == ["pr_curves.png", "pr_overlay.png", "ap_bars.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    titles = [ax.get_title() for ax in _panels(figures(result)["pr_curves.png"])]
    assert titles[0] == r"\$x_{\$  AP 0.500" and plots.literal("$x_{$") == r"\$x_{\$"


@pytest.mark.slow
def test_coco_command_with_a_math_markup_category_and_progress(tmp_path, capsys):
    gt = json.loads((ROOT / "data_samples/coco/instances_val.json").read_text())
    gt["categories"][0]["name"] = "$x_{$"
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    out = tmp_path / "figs"
    args = ["coco", str(path), str(ROOT / "data_samples/coco/results_bbox.json"), "--plots", str(out)]
    assert main([*args, "--progress"]) == 0
    err = capsys.readouterr().err
    assert "drawing pr_curves.png" in err and "drawing coco_precision_all.png" in err
    assert len(list(out.glob("*.png"))) == 5
