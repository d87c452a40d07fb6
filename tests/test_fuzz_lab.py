"""Fuzzing the .lab loader and the MIR measures: a DetevalError or a valid result, nothing else, no NaN."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from fuzz_mutations import assert_valid_result, fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

from deteval.errors import DetevalError
from deteval.io.lab import load_lab, parse_lab, segments_from_list
from deteval.mir import boundary_prf, evaluate_mir, onset_prf, pairwise_prf
from deteval.syntax import text_lines

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "mir"
REF = (SAMPLE / "ref.lab").read_bytes()
EST = (SAMPLE / "est.lab").read_bytes()
MODES = st.sampled_from(("raise", "skip"))


def _check_segments(segs) -> None:
    assert len(segs) > 0
    assert np.isfinite(segs.starts).all() and np.isfinite(segs.ends).all()
    assert (segs.starts >= 0).all() and (segs.ends >= segs.starts).all()
    assert (segs.starts[1:] >= segs.ends[:-1]).all()  # sorted, no overlap


@fuzz_settings(200)
@given(data=mutated(EST, max_ops=6), on_error=MODES)
def test_fuzz_lab_loader(data, on_error):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.lab"
        path.write_bytes(data)
        try:
            segs = load_lab(path, on_error=on_error)
        except DetevalError as exc:
            assert exc.file == str(path)
            return
        _check_segments(segs)
        if on_error == "raise":
            assert segs.skipped == ()
        assert all(s.startswith(f"{path}: line ") for s in segs.skipped)


@fuzz_settings(150)
@given(
    ref=mutated(REF),
    est=mutated(EST),
    on_error=MODES,
    rule=st.sampled_from(("one_to_one", "fmp")),
    frame_rate=st.sampled_from((1.0, 10.0)),
    trim=st.booleans(),
    which=st.sampled_from(("ref", "est", "both")),
)
def test_fuzz_evaluate_mir(ref, est, on_error, rule, frame_rate, trim, which):
    with tempfile.TemporaryDirectory() as tmp:
        rp, ep = Path(tmp) / "ref.lab", Path(tmp) / "est.lab"
        rp.write_bytes(ref if which in ("ref", "both") else REF)
        ep.write_bytes(est if which in ("est", "both") else EST)
        try:
            result = evaluate_mir(
                str(rp), str(ep), rule=rule, frame_rate=frame_rate, trim=trim, on_error=on_error
            )
        except DetevalError as exc:
            assert exc.file in (str(rp), str(ep)), exc
            return
        assert_valid_result(result)
        for block in (result.summary["pairwise"], *result.summary["boundary"].values()):
            for key in ("precision", "recall", "f"):
                assert 0.0 <= block[key] <= 1.0


times = st.one_of(
    st.floats(0, 300, allow_nan=False),
    st.sampled_from([0.0, 5e-324, 1e-9, 0.1, 0.3, 1e4, 1e12]),  # 1e12: beyond the frame limit
)


@st.composite
def segment_list(draw):
    cuts = sorted(draw(st.lists(times, min_size=1, max_size=12)))
    labels = draw(st.lists(st.sampled_from(["A", "B", "a", "C", ""]), min_size=len(cuts), max_size=len(cuts)))
    segs = [[0.0, cuts[0], labels[0]]]
    segs += [[cuts[i - 1], cuts[i], labels[i]] for i in range(1, len(cuts))]
    return segs


@fuzz_settings(200)
@given(
    ref=segment_list(),
    est=segment_list(),
    tau=st.sampled_from([0.0, 0.5, 3.0, 1e12]),
    rate=st.sampled_from([None, 1.0, 10.0]),
    case=st.booleans(),
)
def test_fuzz_mir_measures_on_random_segments(ref, est, tau, rate, case):
    r, e = segments_from_list(ref), segments_from_list(est)
    try:
        pw = pairwise_prf(r, e, frame_rate=rate, case_sensitive=case)
    except DetevalError as exc:
        assert "limit" in exc.reason  # only a reference too long to sample
    else:
        assert 0.0 <= pw.precision <= 1.0 and 0.0 <= pw.recall <= 1.0 and 0.0 <= pw.f <= 1.0
    for rule in ("one_to_one", "fmp"):
        b = boundary_prf(r, e, tau, rule=rule, warn=False)
        assert all(np.isfinite([b.precision, b.recall, b.f]))
        o = onset_prf(r.starts, e.starts, tau)
        assert all(np.isfinite([o.precision, o.recall, o.f]))


LAB_ALPHABET = list("0123456789.-+eE naifNI#\t\r\nAB\xa0\ufeff")  # numbers, nan/inf, separators, BOM


@fuzz_settings(200)
@given(text=st.text(alphabet=st.sampled_from(LAB_ALPHABET), max_size=200))
def test_fuzz_lab_text(text):
    for on_error in ("raise", "skip"):
        try:
            segs = parse_lab(text, source="t.lab", on_error=on_error)
        except DetevalError as exc:
            assert exc.file == "t.lab"
            continue
        _check_segments(segs)


@fuzz_settings(200)
@given(data=mutated(EST, max_ops=6))
def test_fuzz_skip_equals_the_file_without_the_skipped_lines(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.lab"
        path.write_bytes(data)
        try:
            segs = load_lab(path, on_error="skip")
        except DetevalError:
            return
        bad = {int(s.split(": line ")[1].split(":")[0]) for s in segs.skipped}
        if not bad:
            return
        if any(s.endswith("not UTF-8 text") for s in segs.skipped):
            return  # undecodable files are numbered by \n only; covered by test_errors_lab
        parts = text_lines(data.decode("utf-8"))  # the loader's numbering (a BOM stays on line 1)
        path.write_text("\n".join(p for i, p in enumerate(parts, 1) if i not in bad), "utf-8")
        clean = load_lab(path)
        np.testing.assert_array_equal(clean.starts, segs.starts)
        np.testing.assert_array_equal(clean.ends, segs.ends)
        assert clean.labels.tolist() == segs.labels.tolist()
