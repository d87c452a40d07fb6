"""Layout of the figures people look at: on a small-multiples grid, the legend and the title do not overlap;
the lowest panel of every column shows its x tick numbers (shared axes hid them above an empty cell)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deteval.detection.coco import evaluate_coco
from deteval.report.plots import figures

pytest.importorskip("matplotlib")
S = Path(__file__).resolve().parent.parent / "data_samples"


def _coco_figures():
    ev = evaluate_coco(str(S / "coco" / "instances_val.json"), str(S / "coco" / "results_bbox.json"))
    arrays = {"precision": ev.precision, "iou_thrs": ev.params.iou_thrs, "rec_thrs": ev.params.rec_thrs,
              "names": ev.cat_names}  # fmt: skip
    return figures(ev.to_result(per_class=True), coco_arrays=arrays)


def _voc_figures():
    from deteval.io.voc import load_voc_annotations, load_voc_detections
    from deteval.run.voc import evaluate_voc

    v = S / "voc"
    gt = load_voc_annotations(str(v / "Annotations"), str(v / "ImageSets" / "Main" / "test.txt"))
    dets = load_voc_detections(str(v / "results" / "comp4_det_test_{cls}.txt"), gt.images, classes=gt.classes)
    return figures(evaluate_voc(gt, dets))


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("name", ["pr_curves.png", "coco_precision.png"])
def test_grid_legend_does_not_cover_the_title_or_a_panel(name):
    fig = _coco_figures()[name]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(r)
    (legend,) = fig.legends
    box = legend.get_window_extent(r)
    assert not _overlap(title, box), (title, box)
    for ax in fig.axes:
        if ax.get_visible() and ax.axison:
            assert not _overlap(box, ax.title.get_window_extent(r)), ax.get_title()
            assert box.y0 >= ax.get_window_extent(r).y1


def test_every_column_shows_its_x_numbers():
    fig = _voc_figures()["pr_curves.png"]
    fig.canvas.draw()
    shown = [ax for ax in fig.axes if ax.axison]
    cols = {round(ax.get_position().x0, 3) for ax in shown}
    assert len(shown) == 5 and len(cols) == 4  # 5 classes on a 4-wide grid: 3 columns end in the top row
    for x in cols:
        lowest = min(
            (ax for ax in shown if round(ax.get_position().x0, 3) == x), key=lambda a: a.get_position().y0
        )
        labels = [t.get_text() for t in lowest.get_xticklabels() if t.get_visible()]
        assert labels == ["0.0", "0.5", "1.0"], (x, labels)


def test_labels_of_a_drawing_never_cover_each_other():
    from deteval.analysis.images import place_labels

    rng = np.random.default_rng(0)
    anchors = [(float(x), float(y)) for x, y in rng.integers(0, 60, (30, 2))]  # a crowded corner
    sizes = [(int(w), 14) for w in rng.integers(20, 70, 30)]
    rects = place_labels(sizes, anchors, (400, 300))
    for i, a in enumerate(rects):
        assert 0 <= a[0] and a[2] <= 400 and 0 <= a[1] and a[3] <= 300
        assert (a[2] - a[0], a[3] - a[1]) == sizes[i]
        for b in rects[:i]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


def test_worst_image_drawing_has_a_title_and_the_colour_key(tmp_path, capsys):
    from PIL import Image

    from deteval.cli import main

    coco = ["coco", str(S / "coco" / "instances_val.json"), str(S / "coco" / "results_bbox.json")]
    assert main([*coco, "--images", str(tmp_path), "--worst-images", "1", "-q"]) == 0
    (path,) = tmp_path.iterdir()
    with Image.open(path) as im:
        rgb = np.asarray(im.convert("RGB"))
    assert rgb.shape[:2] == (600 + 44, 800)  # the 800 x 600 image, a title band above, the key below
    title, key = rgb[:22], rgb[-22:]
    assert (title < 100).all(axis=2).sum() > 300  # black title text on white
    for colour in [(0, 170, 0), (255, 140, 0), (120, 120, 120), (30, 90, 255), (230, 0, 0)]:
        assert (key == colour).all(axis=2).sum() > 20, colour


def test_coco_curve_is_labelled_with_its_own_ap():
    """With more than three maxDets, pycocotools' rule reads the per-class AP50 at maxDets[2] while the curve
    is drawn at maxDets[-1]: the number beside a curve is the mean of the curve drawn (its AP50 there)."""
    from deteval.results import EvalResult, PRCurve

    levels = np.linspace(0, 1, 101)
    curve = PRCurve(recall=levels, precision=np.where(levels <= 0.5, 1.0, 0.0), scores=levels)
    params = {"max_dets": [1, 10, 100, 300]}
    r = EvalResult(
        "coco", {"iou_type": "bbox", "params": params}, {"cat": {"ap50": 0.25}}, curves={"cat": curve}
    )
    ax = next(a for a in figures(r)["pr_curves.png"].axes if a.axison)
    assert ax.get_title() == f"cat  AP@IoU.50 {np.mean(curve.precision):.3f}" == "cat  AP@IoU.50 0.505"
