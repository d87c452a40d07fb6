"""Fuzzing saved results: ``load_result`` then every renderer, ``compare`` and the plots give a DetevalError
or output, never another exception, and never a NaN in a reported value."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fuzz_mutations import assert_valid_result, fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

from deteval.errors import DetevalError
from deteval.io.voc import load_voc_annotations, load_voc_detections
from deteval.mir import evaluate_mir
from deteval.report.compare import compare_results
from deteval.report.plots import write_plots
from deteval.report.tables import FORMATS, render
from deteval.results import EvalResult, load_result
from deteval.run.voc import evaluate_voc

ROOT = Path(__file__).resolve().parent.parent / "data_samples"


def _voc() -> EvalResult:
    voc = ROOT / "voc"
    gt = load_voc_annotations(voc / "Annotations", voc / "ImageSets" / "Main" / "test.txt")
    dets = load_voc_detections(str(voc / "results" / "comp4_det_test_{cls}.txt"), gt.images)
    return evaluate_voc(gt, dets, classes=["car", "dog", "person"])


VOC = _voc()
MIR = evaluate_mir(str(ROOT / "mir" / "ref.lab"), str(ROOT / "mir" / "est.lab"))
DOCS = {
    "voc": VOC.to_json(include_curves=True).encode(),
    "voc_compact": VOC.to_json(indent=None).encode(),
    "mir": MIR.to_json().encode(),
}


def _load(data: bytes) -> EvalResult | None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.json"
        path.write_bytes(data)
        try:
            return load_result(path)
        except DetevalError as exc:
            assert exc.file == str(path)
            return None


def _exercise(result: EvalResult, base: EvalResult) -> None:
    assert_valid_result(result)
    for fmt in FORMATS:
        text = render(result, fmt, include_curves=bool(result.curves))
        assert isinstance(text, str)
        text.encode("utf-8")  # printable: no unpaired surrogate reaches stdout
    for a, b in ((result, base), (base, result)):
        try:
            cmp = compare_results(a, b)
        except DetevalError:
            continue
        assert_valid_result(cmp)
        for fmt in FORMATS:
            render(cmp, fmt)


@fuzz_settings(200)
@given(name=st.sampled_from(sorted(DOCS)), data=st.data())
def test_fuzz_saved_result(name, data):
    doc = data.draw(mutated(DOCS[name], max_ops=5))
    result = _load(doc)
    if result is not None:
        _exercise(result, MIR if name == "mir" else VOC)


@fuzz_settings(20)
@given(data=mutated(DOCS["voc"], max_ops=3))
def test_fuzz_saved_result_plots(data):
    result = _load(data)
    if result is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        try:
            paths = write_plots(result, tmp)
        except DetevalError:
            return
        assert all(p.exists() for p in paths)


def test_round_trip_of_the_unmutated_documents():
    for name, data in DOCS.items():
        result = _load(data)
        assert result is not None
        curves = name == "voc"
        expected = (MIR if name == "mir" else VOC).to_dict(include_curves=curves)
        assert result.to_dict(include_curves=curves) == expected


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)


@fuzz_settings(300)
@given(
    name=st.sampled_from(sorted(DOCS)),
    path=st.sampled_from(["top", "row", "cell", "curve", "curve_field", "boundary"]),
    key=st.text(max_size=6),
    value=json_values,
    data=st.data(),
)
def test_fuzz_result_of_the_wrong_shape(name, path, key, value, data):
    """Valid JSON whose values are replaced by arbitrary JSON values: an error or a renderable result."""
    import json

    doc = json.loads(DOCS[name])
    rows = list(doc.get("per_class") or {}) or ["x"]
    row = data.draw(st.sampled_from(rows))
    if path == "top":
        doc[data.draw(st.sampled_from([*doc, key]))] = value
    elif path == "row":
        doc.setdefault("per_class", {})[row] = value
    elif path == "cell":
        target = doc.setdefault("per_class", {}).setdefault(row, {})
        target[data.draw(st.sampled_from([*target, key]))] = value
    elif path in ("curve", "curve_field"):
        curves = doc.setdefault("curves", {})
        if path == "curve":
            curves[row] = value
        else:
            c = curves.setdefault(row, {"recall": [0.5], "precision": [1.0]})
            c[data.draw(st.sampled_from(["recall", "precision", "scores", key]))] = value
    else:
        doc.setdefault("boundary", {})[key] = value
    result = _load(json.dumps(doc).encode())
    if result is not None:
        _exercise(result, MIR if name == "mir" else VOC)
