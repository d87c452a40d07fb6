"""Fuzzing the readers that go through deteval.io.guards: YOLO data.yaml (structured YAML values and damaged
bytes), predictions.json (structured records, nesting and integers), Open Images CSVs and hierarchies,
presets (TOML values of every shape) and MeanAveragePrecision state dicts. Each input gives a result or one
DetevalError naming where; never another exception. Small fixed budgets (derandomized, no deadline)."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from fuzz_mutations import fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

from deteval.errors import DetevalError

ROOT = Path(__file__).resolve().parent.parent
YOLO = ROOT / "data_samples" / "yolo"
OID = ROOT / "data_samples" / "openimages"

# YAML scalars and shapes that data.yaml values take, and ones that break readers
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["images/val", "None", "1e400", "-1", "0x10", "٥", ".inf", "~", "val2017.txt", "../x"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.integers(-3, 5), st.text(max_size=3)), inner, max_size=4),
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(["path", "train", "val", "test", "names", "nc", "kpt_shape", "validation", "download"])


def _yolo_copy(tmp: str) -> Path:
    root = Path(tmp) / "yolo"
    shutil.copytree(YOLO, root)
    return root


def _score(root: Path, preds: Path) -> None:
    from deteval.detection.yolo_eval import evaluate_yolo
    from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions

    try:
        ds = load_yolo_dataset(root / "data.yaml", duplicates="drop")
        res = evaluate_yolo(ds, load_yolo_predictions(preds, ds), "ultralytics")
    except DetevalError as exc:
        assert exc.file is not None and str(exc)
        return
    for v in res.summary.values():
        assert np.isfinite(v) and -1 <= v <= 1


@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@fuzz_settings(40)
@given(doc=st.dictionaries(KEYS, VALUES, max_size=6), keep=st.booleans())
def test_fuzz_data_yaml_values(doc: dict[str, Any], keep: bool) -> None:
    """Any YAML document of data.yaml's keys: a dataset or a DetevalError naming the yaml."""
    if keep:  # a valid split, so that names and nc are reached
        doc.setdefault("val", "images/val")
    with tempfile.TemporaryDirectory() as tmp:
        root = _yolo_copy(tmp)
        (root / "data.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
        _score(root, root / "predictions" / "labels")


@pytest.mark.filterwarnings("ignore::deteval.errors.DetevalWarning")
@fuzz_settings(40)
@given(data=st.data())
def test_fuzz_data_yaml_bytes(data: st.DataObject) -> None:
    """data.yaml damaged byte by byte (anchors, tabs, quotes, NUL, BOM): PyYAML's errors are ours."""
    original = (YOLO / "data.yaml").read_bytes() + b"base: &a [x, y]\nother: *a\n"
    with tempfile.TemporaryDirectory() as tmp:
        root = _yolo_copy(tmp)
        (root / "data.yaml").write_bytes(data.draw(mutated(original, max_ops=5)))
        _score(root, root / "predictions" / "labels")


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**400), max_value=10**400),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(["street_04", "000001", 1, 2, 3]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=10,
)
RECORD = st.fixed_dictionaries(
    {
        "image_id": st.one_of(st.sampled_from(["street_04", "street_05", 1, 3, "000002"]), JSON_VALUES),
        "category_id": st.one_of(st.integers(-2, 5), JSON_VALUES),
        "bbox": st.one_of(
            st.lists(st.one_of(st.floats(-10, 1000), JSON_VALUES), min_size=4, max_size=4), JSON_VALUES
        ),
        "score": st.one_of(st.floats(0, 1), JSON_VALUES),
    }
)


@fuzz_settings(40)
@given(records=st.lists(RECORD, max_size=6), wrap=st.integers(0, 3), dup=st.booleans())
def test_fuzz_predictions_json(records: list[dict[str, Any]], wrap: int, dup: bool) -> None:
    """Structured predictions.json: wrong types, huge integers, nesting, a repeated key."""
    text = json.dumps(records)
    text = "[" * wrap + text + "]" * wrap
    if dup and records:
        text = text.replace('"score":', '"score": 0.5, "score":', 1)
    with tempfile.TemporaryDirectory() as tmp:
        root = _yolo_copy(tmp)
        p = root / "predictions" / "predictions.json"
        p.write_text(text)
        _score(root, p)


def _oid_run(d: Path) -> None:
    from deteval.detection.openimages import evaluate_openimages

    try:
        ev = evaluate_openimages(
            d / "boxes.csv",
            d / "predictions.csv",
            labels=d / "labels.csv",
            hierarchy=d / "hierarchy.json",
            class_names=d / "classes.csv",
        )
    except DetevalError as exc:
        assert exc.file is not None and str(exc)
        return
    res = ev.to_result(per_class=True)
    res.to_json()


@fuzz_settings(40)
@given(
    data=st.data(),
    target=st.sampled_from(["boxes.csv", "predictions.csv", "labels.csv", "classes.csv", "hierarchy.json"]),
)
def test_fuzz_openimages_files(data: st.DataObject, target: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "oid"
        shutil.copytree(OID, d)
        (d / target).write_bytes(data.draw(mutated((OID / target).read_bytes(), max_ops=5)))
        _oid_run(d)


NAMES = st.sampled_from(["/m/entity", "/m/fruit", "/m/date", "/m/fig", "/m/hazelnut", "/m/x"])
TREES = st.recursive(
    st.builds(lambda n: {"LabelName": n}, NAMES),
    lambda inner: st.builds(
        lambda n, s: {"LabelName": n, "Subcategory": s}, NAMES, st.lists(inner, max_size=3)
    ),
    max_leaves=10,
)


@fuzz_settings(40)
@given(tree=TREES)
def test_fuzz_openimages_hierarchy_shapes(tree: dict[str, Any]) -> None:
    """Random hierarchies over the sample's labels (repeats, cycles by name, missing classes)."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "oid"
        shutil.copytree(OID, d)
        (d / "hierarchy.json").write_text(json.dumps(tree))
        _oid_run(d)


TOML_VALUES = st.recursive(
    st.one_of(
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=10),
    ),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=8,
)
PRESET_KEYS = st.sampled_from(
    [
        "iou-thrs",
        "rec-thrs",
        "max-dets",
        "area-rng",
        "area-lbl",
        "use-cats",
        "iou-type",
        "compat",
        "per-class",
        "x",
    ]
)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(v), repr(v))
    if isinstance(v, str):
        return json.dumps(v)
    return "[" + ", ".join(_toml_value(x) for x in v) + "]"


@fuzz_settings(40)
@given(doc=st.dictionaries(PRESET_KEYS, TOML_VALUES, max_size=4), deep=st.integers(0, 3))
def test_fuzz_presets(doc: dict[str, Any], deep: int) -> None:
    """Preset values of every TOML shape (and nested arrays up to 30,000 deep): exit 0 or one error line."""
    import contextlib
    import io

    from deteval.cli import main

    text = "".join(f"{k} = {_toml_value(v)}\n" for k, v in doc.items())
    if deep:
        n = 10 ** (deep + 1) * 3
        text += "deep = " + "[" * n + "]" * n + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "p.toml"
        p.write_text(text)
        gt, res = (
            ROOT / "data_samples" / "coco" / "instances_val.json",
            ROOT / "data_samples" / "coco" / "results_bbox.json",
        )
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["coco", str(gt), str(res), "--config", str(p)])
        assert code in (0, 2), err.getvalue()
        if code == 2:
            assert err.getvalue().startswith("deteval: error: ") and "Traceback" not in err.getvalue()


def _base_state(protocol: str) -> tuple[Any, dict[str, Any]]:
    from deteval.api import MeanAveragePrecision

    m = MeanAveragePrecision(protocol=protocol)
    boxes = np.array([[0, 0, 10, 10.0], [20, 20, 30, 30], [5, 5, 12, 12]])
    m.update(
        [{"boxes": boxes, "scores": np.array([0.9, 0.3, 0.6]), "labels": np.array([1, 2, 1])}],
        [{"boxes": boxes[:2], "labels": np.array([1, 1])}],
    )
    return m, m.state_dict()


_STATES = {p: _base_state(p)[1] for p in ("coco", "voc")}
REPLACEMENTS = st.one_of(
    st.none(),
    st.integers(-3, 10**13),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.just(KeyError),
    st.builds(np.array, st.lists(st.integers(-2, 5), max_size=4)),
    st.builds(np.array, st.lists(st.floats(allow_nan=True), max_size=4)),
    st.builds(lambda n: np.zeros((n, 4)), st.integers(0, 4)),
    st.builds(lambda n: np.ones((4, 10, n), dtype=bool), st.integers(0, 4)),
    st.lists(st.integers(-1, 3), max_size=3),
)


def _paths(state: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(state, dict):
        for k, v in state.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(state, list):
        for i, v in enumerate(state[:2]):
            out += _paths(v, (*prefix, i))
    return out


@fuzz_settings(60)
@given(protocol=st.sampled_from(["coco", "voc"]), data=st.data())
def test_fuzz_state_dicts(protocol: str, data: st.DataObject) -> None:
    """A state with one entry replaced or removed: refused naming it, or it computes finite numbers."""
    from deteval.api import MeanAveragePrecision

    state = copy.deepcopy(_STATES[protocol])
    paths = [p for p in _paths(state) if p[0] not in ("deteval_state", "config")]
    for _ in range(data.draw(st.integers(1, 2))):
        path = data.draw(st.sampled_from(paths))
        node = state
        try:
            for key in path[:-1]:
                node = node[key]
            value = data.draw(REPLACEMENTS)
            if value is KeyError:
                del node[path[-1]]
            else:
                node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    m = MeanAveragePrecision(protocol=protocol)
    try:
        m.load_state_dict(state)
        result = m.compute()
    except DetevalError as exc:
        assert str(exc)
        return
    for v in result.summary.values():
        assert not isinstance(v, float) or np.isfinite(v) or np.isnan(v)
