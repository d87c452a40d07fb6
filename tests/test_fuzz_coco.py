"""Fuzzing the COCO loaders and evaluator: a DetevalError or a valid result, never another exception or a
NaN in the summary. Skipped until the COCO evaluator is present in the tree."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fuzz_mutations import assert_valid_result, fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("deteval.io.coco")

from deteval.detection.coco import evaluate_coco  # noqa: E402
from deteval.errors import DetevalError  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "coco"
GT_BYTES = (SAMPLE / "instances_val.json").read_bytes()
RES_BYTES = (SAMPLE / "results_bbox.json").read_bytes()
GT = json.loads(GT_BYTES)
RES = json.loads(RES_BYTES)


def _evaluate(gt: bytes, res: bytes, iou_type: str = "bbox", compat: str = "pycocotools") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        g, r = Path(tmp) / "gt.json", Path(tmp) / "res.json"
        g.write_bytes(gt)
        r.write_bytes(res)
        try:
            ev = evaluate_coco(str(g), str(r), iou_type=iou_type, compat=compat)
        except DetevalError as exc:
            assert exc.file in (str(g), str(r)) or exc.file is None, exc
            return
        assert np.isfinite(ev.stats).all()
        assert ((ev.stats >= 0) & (ev.stats <= 1) | (ev.stats == -1)).all()
        assert_valid_result(ev.to_result())


@fuzz_settings(100)
@given(res=mutated(RES_BYTES, max_ops=4), compat=st.sampled_from(("pycocotools", "fixed")))
def test_fuzz_results_bytes(res, compat):
    _evaluate(GT_BYTES, res, compat=compat)


@fuzz_settings(100)
@given(gt=mutated(GT_BYTES, max_ops=4))
def test_fuzz_ground_truth_bytes(gt):
    _evaluate(gt, RES_BYTES)


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**6),
    st.sampled_from([0, -1, 1, 2, 10**18, 1e308, -0.0, 5e-324]),
    st.floats(-1e3, 1e3, allow_nan=False),
    st.text(max_size=4),
    st.lists(st.floats(-10, 700, allow_nan=False), max_size=6),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@fuzz_settings(300)
@given(
    side=st.sampled_from(("res", "ann", "image", "category")),
    data=st.data(),
    value=values,
    iou_type=st.sampled_from(("bbox", "bbox", "segm")),
)
def test_fuzz_wrong_values(side, data, value, iou_type):
    """Valid JSON whose fields take arbitrary values (wrong types, ids, extremes)."""
    gt, res = copy.deepcopy(GT), copy.deepcopy(RES)
    if side == "res":
        rec = res[data.draw(st.integers(0, len(res) - 1))]
        keys = ["image_id", "category_id", "bbox", "score", "segmentation", "area", "id"]
    else:
        table = {"ann": "annotations", "image": "images", "category": "categories"}[side]
        rec = gt[table][data.draw(st.integers(0, len(gt[table]) - 1))]
        keys = list(rec) + ["id", "iscrowd", "ignore"]
    key = data.draw(st.sampled_from(keys))
    if data.draw(st.booleans()):
        rec[key] = value
    else:
        rec.pop(key, None)
    _evaluate(json.dumps(gt).encode(), json.dumps(res).encode(), iou_type=iou_type)
