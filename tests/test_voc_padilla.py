"""Published numbers from Padilla et al. (case1 and toy_cats), run through deteval's VOC path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from voc_reference import devkit_ap

from deteval.core import VOC07_LEVELS
from deteval.detection.voc import VOCDetections, VOCGroundTruth
from deteval.io.voc import load_voc_annotations, load_voc_detections
from deteval.run.voc import evaluate_voc

DATA = Path(__file__).parent / "data" / "padilla"


def _case1():
    folder = DATA / "case1"
    ids = sorted(p.stem for p in (folder / "gts").glob("*.txt"))
    gi, gb, di, db, ds = [], [], [], [], []
    for k, iid in enumerate(ids):
        for line in (folder / "gts" / f"{iid}.txt").read_text().split("\n"):
            if line.strip():
                x, y, w, h = map(float, line.split()[1:])
                gi.append(k)
                gb.append([x, y, x + w, y + h])  # the toolkit's xywh → xyxy: x2 = x + w
        for line in (folder / "dets" / f"{iid}.txt").read_text().split("\n"):
            if line.strip():
                t = line.split()
                x, y, w, h = map(float, t[2:])
                di.append(k)
                db.append([x, y, x + w, y + h])
                ds.append(float(t[1]))
    gt = VOCGroundTruth.from_arrays(gi, [0] * len(gi), gb, images=ids, classes=["object"])
    dt = VOCDetections.from_arrays(di, [0] * len(di), db, ds, images=ids, classes=["object"])
    plain_gt = [(i, b, False) for i, b in zip(gi, gb)]
    plain_dt = [(i, s, b) for i, s, b in zip(di, ds, db)]
    return gt, dt, plain_gt, plain_dt


# Published (+1 pixel-inclusive IoU): threshold → (11-point, all-point)
CASE1 = {0.10: (0.3333333333, 0.3371980676), 0.30: (0.2683982683, 0.2456866804),
         0.50: (0.0303030303, 0.0222222222), 0.75: (0.0, 0.0)}  # fmt: skip


@pytest.mark.parametrize("thr", sorted(CASE1))
def test_case1_all_point_published(thr):
    gt, dt, _, _ = _case1()
    res = evaluate_voc(gt, dt, iou_threshold=thr, metric="voc2010")
    assert res.summary["map"] == pytest.approx(CASE1[thr][1], abs=1e-10)
    assert res.per_class["object"]["npos"] == 15 and res.per_class["object"]["ndet"] == 24


@pytest.mark.parametrize("thr", sorted(CASE1))
def test_case1_eleven_point_published(thr):
    """The toolkit samples recall at np.linspace(0, 1, 11), whose 0.6 is 0.6000000000000001: at IoU 0.1
    the final recall is exactly 9/15 = 0.6 and does not reach that level. The devkit's loop
    ``for t=0:0.1:1`` gives t = 6*0.1 = 0.6000000000000001 as well, so the devkit profile reproduces the
    publication at every threshold (and the plain reference agrees); the decimal levels would not."""
    gt, dt, pg, pd = _case1()
    toolkit = evaluate_voc(gt, dt, iou_threshold=thr, metric="voc07", recall_levels=np.linspace(0, 1, 11))
    assert toolkit.summary["map"] == pytest.approx(CASE1[thr][0], abs=1e-10)
    devkit = evaluate_voc(gt, dt, iou_threshold=thr, metric="voc07")
    assert devkit.summary["map"] == devkit_ap(pg, pd, thr, use07=True)[0]
    assert devkit.summary["map"] == pytest.approx(CASE1[thr][0], abs=1e-10)
    if thr == 0.10:
        assert devkit.curves["object"].recall[-1] == 0.6
        decimal = evaluate_voc(gt, dt, iou_threshold=thr, metric="voc07", recall_levels=VOC07_LEVELS)
        assert decimal.summary["map"] == pytest.approx(0.36890645586297766, abs=1e-15)


@pytest.mark.parametrize("thr", sorted(CASE1))
@pytest.mark.parametrize("use07", [True, False])
def test_case1_without_plus_one(thr, use07):
    gt, dt, pg, pd = _case1()
    metric = "voc07" if use07 else "voc2010"
    plain = evaluate_voc(gt, dt, iou_threshold=thr, metric=metric, plus_one=False)
    ref = devkit_ap(pg, pd, thr, use07=use07, one=0.0)[0]
    assert plain.summary["map"] == pytest.approx(ref, abs=1e-12)
    with_one = evaluate_voc(gt, dt, iou_threshold=thr, metric=metric, plus_one=True)
    if thr in (0.10, 0.30) and not use07:
        assert plain.summary["map"] != pytest.approx(with_one.summary["map"], abs=1e-6)
        assert plain.summary["map"] == pytest.approx(
            {0.10: 0.2801328502415459, 0.30: 0.22539682539682537}[thr]
        )


def _toy_cats_dets(tmp_path):
    out = tmp_path / "comp4_det_test_cat.txt"
    lines = []
    for p in sorted((DATA / "toy_cats" / "dets_classname_abs_xyx2y2").glob("*.txt")):
        for line in p.read_text().splitlines():
            if line.strip():
                lines.append(" ".join([p.stem, *line.split()[1:]]))
    out.write_text("\n".join(lines) + "\n")
    return str(tmp_path / "comp4_det_test_{cls}.txt")


TOY = {(0.5, "voc07"): 0.8863636364, (0.5, "voc2010"): 0.8958333333,
       (0.75, "voc07"): 0.4924242424, (0.75, "voc2010"): 0.5097222222}  # fmt: skip


@pytest.mark.parametrize("key", sorted(TOY))
@pytest.mark.parametrize("profile", ["voc_devkit", "py_faster_rcnn"])
def test_toy_cats_published(tmp_path, key, profile):
    gt = load_voc_annotations(files=sorted((DATA / "toy_cats" / "gts_vocpascal_format").glob("*.xml")))
    assert len(gt.images) == 10 and len(gt) == 12 and gt.classes == ("cat",)
    assert np.count_nonzero(np.bincount(gt.image, minlength=10) == 0) == 1  # one image without objects
    dt = load_voc_detections(_toy_cats_dets(tmp_path), gt.images)
    thr, metric = key
    res = evaluate_voc(gt, dt, iou_threshold=thr, metric=metric, profile=profile)
    assert res.summary["map"] == pytest.approx(TOY[key], abs=1e-10)
    assert res.per_class["cat"]["npos"] == 12 and res.per_class["cat"]["ndet"] == 12
