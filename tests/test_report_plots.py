"""Figures: files exist, open with Pillow at the deterministic size, and the COCO curves carry the AP."""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from report_samples import COCO_CLASSES, coco_result, mir_result, trec_result, voc_result

from deteval.errors import ConfigError, ValidationError
from deteval.report import plots
from deteval.report.plots import (
    add_plot_args,
    coco_precision_curves,
    grid_shape,
    plot_ap_bars,
    plot_coco_precision,
    plot_pr_curves,
    write_plots,
    write_plots_from_args,
)
from deteval.report.progress import configure
from deteval.results import EvalResult, PRCurve

FRUITS = Path(__file__).parent / "data" / "report" / "coco_fruits"


def _size(path: Path) -> tuple[int, int]:
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        assert im.format == "PNG"
        return im.size


def test_grid_shape():
    assert grid_shape(1) == (1, 1)
    assert grid_shape(5) == (2, 4)
    assert grid_shape(16) == (4, 4)
    assert grid_shape(20) == (4, 5)
    assert grid_shape(80) == (9, 9)
    assert grid_shape(7, ncols=3) == (3, 3)


@pytest.mark.slow
def test_pr_curves_small_multiples_and_overlay(tmp_path):
    result = voc_result()  # 5 classes: 2 rows of 4 panels
    paths = plot_pr_curves(result, tmp_path / "new" / "dir")
    assert [p.name for p in paths] == ["pr_curves.png", "pr_overlay.png"]
    assert _size(paths[0]) == (4 * 250, 2 * 250 + 80)  # + the header band (title, line legend)
    assert _size(paths[1]) == (800, 600)


@pytest.mark.slow
def test_pr_curves_handle_empty_and_nan_curves(tmp_path):
    r = EvalResult(
        "voc",
        {},
        {"a": {"ap": 0.0}},
        {"a": PRCurve([], []), "b": PRCurve([0.5, 0.5, 1.0], [np.nan, 1.0, 0.66])},
    )
    paths = plot_pr_curves(r, tmp_path, ncols=2)
    assert _size(paths[0]) == (500, 250 + 80)


def test_pr_curves_without_curves_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no PR curves"):
        plot_pr_curves(coco_result(), tmp_path)


@pytest.mark.slow
def test_ap_bars_size_grows_with_the_classes(tmp_path):
    path = plot_ap_bars(voc_result(), tmp_path)
    assert path.name == "ap_bars.png"
    assert _size(path) == (800, 250)  # 1 + 0.25 * 5 inches < 2.5: the minimum height
    many = voc_result(classes=[f"class {i}" for i in range(24)])
    assert _size(plot_ap_bars(many, tmp_path / "m")) == (800, 700)  # (1 + 0.25 * 24) * 100 px


@pytest.mark.slow
def test_ap_bars_other_keys_and_missing_values(tmp_path):
    coco = coco_result()
    coco.per_class["bicycle"]["ap50"] = -1.0  # pycocotools' "no ground truth": drawn as n/a
    assert plot_ap_bars(coco, tmp_path, key="aps").name == "aps_bars.png"  # one NaN cell
    assert plot_ap_bars(coco, tmp_path, key="ap50").exists()
    with pytest.raises(ConfigError, match="numeric columns: ap, ap50"):
        plot_ap_bars(coco, tmp_path, key="nope")


def _fruits_eval():
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(FRUITS / "fruit_val_coco_format.json"))
        dt = gt.loadRes(str(FRUITS / "coco_instances_results.json"))
        ev = COCOeval(gt, dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    names = [c["name"] for c in gt.loadCats(ev.params.catIds)]
    return ev, names


def test_coco_curves_average_to_the_pycocotools_numbers():
    ev, names = _fruits_eval()
    curves = coco_precision_curves(ev.eval["precision"], ev.params.iouThrs)
    assert list(curves) == ["IoU=0.50", "IoU=0.75", "IoU=0.50:0.95"]
    assert curves["IoU=0.50"].shape == (101, 3)
    assert abs(np.nanmean(curves["IoU=0.50:0.95"]) - ev.stats[0]) < 1e-12
    assert abs(np.nanmean(curves["IoU=0.50"]) - ev.stats[1]) < 1e-12
    assert abs(np.nanmean(curves["IoU=0.75"]) - ev.stats[2]) < 1e-12
    assert round(ev.stats[0], 6) == 0.757732  # the published number
    per_cat = dict(zip(names, np.nanmean(curves["IoU=0.50:0.95"], axis=0)))
    rounded = {k: round(v, 5) for k, v in per_cat.items()}
    assert rounded == {"date": 0.79742, "fig": 0.6429, "hazelnut": 0.83287}
    # medium objects only (area index 2): APm
    medium = coco_precision_curves(ev.eval["precision"], ev.params.iouThrs, area_index=2)
    assert abs(np.nanmean(medium["IoU=0.50:0.95"]) - ev.stats[4]) < 1e-12


@pytest.mark.slow
def test_coco_precision_figures_from_pycocotools_arrays(tmp_path):
    ev, names = _fruits_eval()
    paths = plot_coco_precision(ev.eval["precision"], ev.params.iouThrs, ev.params.recThrs, names, tmp_path)
    assert [p.name for p in paths] == ["coco_precision.png", "coco_precision_all.png"]
    assert _size(paths[0]) == (3 * 250, 250 + 80)
    assert _size(paths[1]) == (800, 600)


def test_coco_precision_without_ground_truth_and_bad_shapes(tmp_path):
    prec = np.full((10, 101, 2, 4, 3), -1.0)
    prec[:, :, 0] = np.linspace(1, 0, 101)[None, :, None, None]
    curves = coco_precision_curves(prec, np.linspace(0.5, 0.95, 10))
    assert np.isnan(curves["IoU=0.50"][:, 1]).all() and curves["IoU=0.50"][0, 0] == 1.0
    assert plot_coco_precision(prec, np.linspace(0.5, 0.95, 10), np.linspace(0, 1, 101), ["a", "b"], tmp_path)
    with pytest.raises(ValidationError, match="does not match"):
        plot_coco_precision(prec, np.linspace(0.5, 0.95, 10), np.linspace(0, 1, 101), ["a"], tmp_path)
    with pytest.raises(ValidationError, match="5 axes"):
        plot_coco_precision(
            prec[..., 0], np.linspace(0.5, 0.95, 10), np.linspace(0, 1, 101), ["a", "b"], tmp_path
        )
    with pytest.raises(ConfigError, match="out of range"):
        plot_coco_precision(
            prec, np.linspace(0.5, 0.95, 10), np.linspace(0, 1, 101), ["a", "b"], tmp_path, area_index=4
        )
    # thresholds without 0.75: only the lines that exist
    assert list(coco_precision_curves(prec[:2], [0.5, 0.6])) == ["IoU=0.50", "IoU=0.50:0.60"]


@pytest.mark.slow
def test_write_plots_dispatches_on_what_the_result_has(tmp_path):
    assert [p.name for p in write_plots(voc_result(), tmp_path / "voc")] == [
        "pr_curves.png",
        "pr_overlay.png",
        "ap_bars.png",
    ]
    prec = np.sort(np.random.default_rng(0).random((10, 101, 4, 4, 3)), axis=1)[:, ::-1]
    arrays = {
        "precision": prec,
        "iou_thrs": np.linspace(0.5, 0.95, 10),
        "rec_thrs": np.linspace(0, 1, 101),
        "names": COCO_CLASSES,
    }
    assert [p.name for p in write_plots(coco_result(), tmp_path / "coco", coco_arrays=arrays)] == [
        "ap_bars.png",
        "coco_precision.png",
        "coco_precision_all.png",
    ]
    assert [p.name for p in write_plots(trec_result(), tmp_path / "trec")] == ["map_bars.png"]
    assert write_plots(mir_result(), tmp_path / "mir") == []
    with pytest.raises(ConfigError, match="lacks names"):
        write_plots(coco_result(), tmp_path, coco_arrays={"precision": prec, "iou_thrs": 1, "rec_thrs": 1})


@pytest.mark.slow
def test_plot_args_and_the_helper_for_subcommands(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_plot_args(parser)
    assert write_plots_from_args(voc_result(), parser.parse_args([])) == []
    out = tmp_path / "figs"
    paths = write_plots_from_args(voc_result(), parser.parse_args(["--plots", str(out)]))
    assert len(paths) == 3 and all(p.parent == out for p in paths)
    assert f"wrote 3 plot(s) to {out}" in capsys.readouterr().err
    write_plots_from_args(mir_result(), parser.parse_args(["--plots", str(out)]))
    assert "no plots written" in capsys.readouterr().err
    configure(quiet=True)
    try:
        write_plots_from_args(voc_result(), parser.parse_args(["--plots", str(out)]))
        assert capsys.readouterr().err == ""
    finally:
        configure()


def test_unwritable_plot_folder_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot create the plot folder"):
        write_plots(voc_result(), blocker / "sub")


@pytest.mark.slow
def test_importing_deteval_does_not_import_matplotlib():
    code = (
        "import sys, deteval, deteval.cli, deteval.report, deteval.report.plots; "
        "print(any(m.startswith('matplotlib') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.stdout.strip() == "False", out.stderr
    assert plots.DPI == 100


@pytest.mark.slow
def test_comparison_plots_its_deltas(tmp_path):
    from deteval.report.compare import compare_results

    c = compare_results(voc_result(0), voc_result(0, shift=0.2))
    assert [p.name for p in write_plots(c, tmp_path)] == ["delta_bars.png"]
