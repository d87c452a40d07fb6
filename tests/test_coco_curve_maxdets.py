"""The PR curve of a class is the curve its per-class ap50 averages: at the maxDets pycocotools' summary reads
(maxDets[2] when more than three are given), not always at the last one."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.detection.coco_params import CocoParams
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.run.coco import evaluate_coco


def _sets(rng: np.random.Generator) -> tuple[dict, list[dict]]:
    images = [{"id": i, "width": 200, "height": 200} for i in range(1, 6)]
    cats = [{"id": c, "name": f"c{c}"} for c in (1, 2)]
    anns, dets = [], []
    for img in images:
        for c in (1, 2):
            for _ in range(3):
                x, y = rng.uniform(0, 150, 2)
                anns.append({"id": len(anns) + 1, "image_id": img["id"], "category_id": c,
                             "bbox": [x, y, 30.0, 30.0], "area": 900.0, "iscrowd": 0})  # fmt: skip
                # two hits per object, scored below every background box: a limit of 20 keeps background only
                for _ in range(2):
                    j = rng.normal(0, 3, 2)
                    dets.append({"image_id": img["id"], "category_id": c, "score": float(rng.uniform(0, 0.5)),
                                 "bbox": [x + j[0], y + j[1], 30.0, 30.0]})  # fmt: skip
            for _ in range(25):
                x, y = rng.uniform(0, 190, 2)
                dets.append({"image_id": img["id"], "category_id": c, "score": float(rng.uniform(0.5, 1)),
                             "bbox": [x, y, 8.0, 8.0]})  # fmt: skip
    return {"images": images, "categories": cats, "annotations": anns}, dets


@pytest.mark.parametrize(("max_dets", "compat", "column"), [
    ((1, 5, 20), "pycocotools", 2),
    ((1, 5, 20, 300), "pycocotools", 2),
    ((1, 5, 20, 300), "fixed", 3),
])  # fmt: skip
def test_curve_is_the_per_class_ap50s(max_dets: tuple[int, ...], compat: str, column: int) -> None:
    gt_doc, dets = _sets(np.random.default_rng(3))
    gt = load_coco_gt(gt_doc)
    ev = evaluate_coco(gt, load_coco_results(dets, gt), params=CocoParams(max_dets=max_dets), compat=compat)
    res = ev.to_result(per_class=True)
    t50 = int(np.flatnonzero(ev.params.iou_thrs == 0.5)[0])
    for k, name in enumerate(ev.cat_names):
        curve = res.curves[name]
        np.testing.assert_array_equal(curve.precision, ev.precision[t50, :, k, 0, column])
        assert float(np.mean(curve.precision)) == res.per_class[name]["ap50"]
    # 20 and 300 differ here, so reading the other one would be seen
    assert len(max_dets) == 3 or not np.array_equal(
        ev.precision[t50, :, :, 0, 2], ev.precision[t50, :, :, 0, -1]
    )
