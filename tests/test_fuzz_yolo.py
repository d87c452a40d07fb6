"""Fuzzing the YOLO readers: damaged label files, prediction files, data.yaml and predictions.json give a
DetevalError naming the file, or a valid table and finite scores; never another exception."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fuzz_mutations import fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

from deteval.errors import DetevalError
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.run.yolo import evaluate_yolo

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"
LABEL = (SAMPLE / "labels" / "val" / "street_04.txt").read_bytes()
POLY = (SAMPLE / "labels" / "val" / "000003.txt").read_bytes()
PRED = (SAMPLE / "predictions" / "labels" / "street_05.txt").read_bytes()
YAML = (SAMPLE / "data.yaml").read_bytes()
JSON = (SAMPLE / "predictions" / "predictions.json").read_bytes()


def _run(target: str, data: bytes, profile: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "yolo"
        shutil.copytree(SAMPLE, root)
        path = {
            "label": root / "labels" / "val" / "street_04.txt",
            "poly": root / "labels" / "val" / "000003.txt",
            "pred": root / "predictions" / "labels" / "street_05.txt",
            "yaml": root / "data.yaml",
            "json": root / "predictions" / "predictions.json",
        }[target]
        path.write_bytes(data)
        preds_src = root / "predictions" / ("predictions.json" if target == "json" else "labels")
        try:
            ds = load_yolo_dataset(root / "data.yaml", duplicates="drop" if profile != "coco" else "error")
            preds = load_yolo_predictions(preds_src, ds)
            res = evaluate_yolo(ds, preds, profile)
        except DetevalError as exc:
            assert exc.file is not None and str(exc)
            return
        assert np.isfinite(ds.labels.xyxy).all() and np.isfinite(preds.conf).all()
        for v in res.summary.values():
            assert np.isfinite(v) and -1 <= v <= 1


PROFILES = st.sampled_from(("coco", "ultralytics", "supervision"))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")  # duplicated lines: dropped, counted
@fuzz_settings(60)
@given(data=st.data(), profile=PROFILES, target=st.sampled_from(("label", "poly", "pred", "yaml", "json")))
def test_fuzz_yolo_files(data, profile, target):
    original = {"label": LABEL, "poly": POLY, "pred": PRED, "yaml": YAML, "json": JSON}[target]
    _run(target, data.draw(mutated(original, max_ops=5)), profile)
