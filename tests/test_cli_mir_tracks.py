"""`deteval mir REF_DIR EST_DIR`: several tracks, per-track numbers equal to mir_eval, their mean, intervals and
paired tests over tracks (equal to deteval.stats.mir and scipy), bad folders refused; mir_eval's time-span
adjustment (`--adjust`) against mir_eval.util.adjust_intervals."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main
from deteval.io.lab import build_segments, load_lab
from deteval.mir import adjust_to_reference, evaluate_mir

mir_eval = pytest.importorskip("mir_eval")
sps = pytest.importorskip("scipy.stats")

DATA = Path(__file__).resolve().parents[1] / "data_samples" / "mir" / "mirex"
REF, EST = str(DATA / "ref"), str(DATA / "est")
TRACKS = [f"seg{i:02d}" for i in range(10)]
METRICS = [f"pairwise.{k}" for k in ("precision", "recall", "f")] + [
    f"boundary.{t}.{k}" for t in ("0.5", "3.0") for k in ("precision", "recall", "f")
]
#: mir_eval.segment.evaluate's names of the same numbers
MIR_EVAL_KEYS = ["Pairwise Precision", "Pairwise Recall", "Pairwise F-measure"] + [
    f"{k}@{t}" for t in ("0.5", "3.0") for k in ("Precision", "Recall", "F-measure")
]


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["mir", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _mir_eval_scores(ref: Path, est: Path) -> dict:
    ri, rl = mir_eval.io.load_labeled_intervals(str(ref))
    ei, el = mir_eval.io.load_labeled_intervals(str(est))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mir_eval.segment.evaluate(ri, rl, ei, el)


def _baseline(folder: Path, step: float) -> Path:
    """Another system on the same tracks: a segment every ``step`` seconds, labels alternating (the
    regular-grid baseline of structure papers)."""
    folder.mkdir()
    for name in TRACKS:
        end = load_lab(DATA / "ref" / f"{name}.lab").duration
        edges = np.r_[np.arange(0.0, end, step), end]
        rows = (f"{a:.3f}\t{b:.3f}\tS{i % 2}\n" for i, (a, b) in enumerate(itertools.pairwise(edges)))
        (folder / f"{name}.lab").write_text("".join(rows), encoding="utf-8")
    return folder


@pytest.mark.slow
def test_every_track_and_the_mean_equal_mir_eval(capsys) -> None:
    doc = _json(capsys, REF, EST, "--config", "mir_eval_segment")
    assert (doc["n_tracks"], doc["average"], doc["adjust"]) == (10, "mean over tracks", True)
    assert list(doc["per_class"]) == TRACKS
    expected = {t: _mir_eval_scores(DATA / "ref" / f"{t}.lab", DATA / "est" / f"{t}.lab") for t in TRACKS}
    for t in TRACKS:  # bit for bit, every number of every track
        assert [doc["per_class"][t][m] for m in METRICS] == [float(expected[t][k]) for k in MIR_EVAL_KEYS]
    for m, k in zip(METRICS, MIR_EVAL_KEYS):
        values = [float(expected[t][k]) for t in TRACKS]
        total = 0.0
        for v in values:  # tracks summed in file-name order
            total += v
        assert doc[m] == total / len(values)
        assert doc[m] == pytest.approx(np.mean(values), rel=0, abs=1e-15)  # MIREX / mir_eval: np.mean


def test_without_adjust_boundaries_are_those_of_the_files(capsys) -> None:
    # The default scores the files as written: mir_eval.segment.detection on the raw intervals.
    doc = _json(capsys, REF, EST)
    assert doc["adjust"] is False
    for t in TRACKS:
        ri, _ = mir_eval.io.load_labeled_intervals(str(DATA / "ref" / f"{t}.lab"))
        ei, _ = mir_eval.io.load_labeled_intervals(str(DATA / "est" / f"{t}.lab"))
        for tau in ("0.5", "3.0"):
            got = tuple(doc["per_class"][t][f"boundary.{tau}.{k}"] for k in ("precision", "recall", "f"))
            assert got == mir_eval.segment.detection(ri, ei, window=float(tau))
    adjusted = _json(capsys, REF, EST, "--adjust")
    assert adjusted["per_class"]["seg00"]["boundary.0.5.f"] != doc["per_class"]["seg00"]["boundary.0.5.f"]


def test_table_shows_tracks_mean_and_intervals(capsys) -> None:
    assert main(["mir", REF, EST, "--ci", "0.95", "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"10 tracks: reference {REF}, estimate {EST} (*.lab, paired by file name)\n")
    assert "mean over tracks (each track weighs 1" in out
    assert "1000 resamples" not in out and "200 resamples of the tracks, seed 0" in out
    line = re.search(r"^  pairwise\.f +(\S+) \[(\S+), (\S+)\]  mdd (\S+)$", out, re.M)
    assert line is not None
    value, lo, hi = (float(line.group(i).rstrip(",")) for i in (1, 2, 3))
    assert lo < value < hi
    assert re.search(r"^ +pairwise +boundary\.0\.5 +boundary\.3\.0$", out, re.M)  # the column groups
    assert re.search(r"^track +precision +recall +f +precision", out, re.M)
    assert re.search(r"^seg09 +0\.3018 ", out, re.M)  # a per-track row


@pytest.mark.parametrize("taus", [["0.5", "3.0"], ["0.5", "1", "2", "3", "5", "0.25"]])
def test_per_track_table_fits_100_columns(capsys, taus: list[str]) -> None:
    """Column groups (pairwise, boundary.<tau>) named once above their precision/recall/f columns; groups
    beyond 100 characters go to a further block repeating the tracks; every cell is the JSON's value."""
    tau_args = [a for t in taus for a in ("--tau", t)]
    doc = _json(capsys, REF, EST, *tau_args)
    assert main(["mir", REF, EST, *tau_args]) == 0
    out = capsys.readouterr().out
    assert "warning:" not in out  # (on stderr only)
    table = out[out.index("\n\n      ") + 2 :].rstrip("\n")
    blocks = table.split("\n\n")
    assert len(blocks) == (1 if len(taus) == 2 else 3)
    assert max(len(line) for line in table.splitlines()) <= 100
    groups = [g for b in blocks for g in b.splitlines()[0].split()]
    assert groups == ["pairwise", *(f"boundary.{t}" for t in taus)]
    cells: dict[str, list[str]] = {t: [] for t in TRACKS}
    for b in blocks:
        lines = b.splitlines()
        assert lines[1].split()[0] == "track" and set(lines[1].split()[1:]) == {"precision", "recall", "f"}
        assert [ln.split()[0] for ln in lines[3:]] == TRACKS
        for ln in lines[3:]:
            cells[ln.split()[0]] += ln.split()[1:]
    keys = [f"{g}.{k}" for g in groups for k in ("precision", "recall", "f")]
    for t in TRACKS:
        assert cells[t] == [f"{doc['per_class'][t][k]:.4f}" for k in keys]


def test_intervals_reproducible_and_equal_to_the_api(capsys) -> None:
    from deteval.stats.mir import mir_collection

    args = [REF, EST, "--ci", "0.9", "--bootstrap", "300", "--seed", "7", "--ci-method", "bca"]
    first, again = _json(capsys, *args), _json(capsys, *args)
    assert first["ci"] == again["ci"] and first["mdd"] == again["mdd"]
    assert first["bootstrap"] == {"resamples": 300, "seed": 7, "unit": "track"}
    assert (first["ci_level"], first["ci_method"]) == (0.9, "bca")
    other_seed = _json(capsys, *args[:-4], "--seed", "8")
    assert other_seed["ci"] != first["ci"]
    tracks = [evaluate_mir(DATA / "ref" / f"{t}.lab", DATA / "est" / f"{t}.lab") for t in TRACKS]
    api = mir_collection(tracks, names=TRACKS, level=0.9, n_resamples=300, seed=7, method="bca")
    assert first["ci"] == api.summary["ci"] and first["mdd"] == api.summary["mdd"]
    assert [first[m] for m in METRICS] == [api.summary[m] for m in METRICS]
    assert set(first["ci"]) == set(METRICS)


@pytest.mark.fast_cases(test=1)
@pytest.mark.parametrize("test", ["t", "wilcoxon"])
def test_comparison_tests_equal_scipy_on_the_tracks(capsys, tmp_path: Path, test: str) -> None:
    other = _baseline(tmp_path / "grid20", 20.0)
    a = _json(capsys, REF, EST)
    b = _json(capsys, REF, str(other))
    doc = _json(capsys, REF, EST, "--compare-to", str(other), "--test", test, "--bootstrap", "200")
    assert (doc["test"], doc["correction"], doc["compare_to"]) == (test, "holm", [str(other)])
    assert "ci" not in doc  # --compare-to alone gives no intervals of the system itself
    scipy_test = sps.ttest_rel if test == "t" else sps.wilcoxon
    p_values = []
    for m in METRICS:
        va = [a["per_class"][t][m] for t in TRACKS]
        vb = [b["per_class"][t][m] for t in TRACKS]
        c = doc["comparison"][m]
        assert (c["a"], c["b"]) == (a[m], b[m]) and c["delta"] == c["a"] - c["b"]
        assert c["p_value"] == float(scipy_test(va, vb).pvalue)
        lo, hi = c["ci"]
        assert lo <= c["delta"] <= hi and c["mdd"] > 0
        p_values.append(c["p_value"])
    # Holm over the nine metrics: the smallest p-value times 9
    smallest = METRICS[int(np.argmin(p_values))]
    assert doc["comparison"][smallest]["p_adjusted"] == pytest.approx(min(1.0, 9 * min(p_values)), rel=1e-12)


@pytest.mark.slow
def test_several_other_systems_and_the_table(capsys, tmp_path: Path) -> None:
    b = _baseline(tmp_path / "grid20", 20.0)
    c = _baseline(tmp_path / "grid10", 10.0)
    args = ["mir", REF, EST, "--compare-to", str(b), "--compare-to", str(c), "--bootstrap", "100"]
    assert main([*args, "--test", "randomization"]) == 0
    out = capsys.readouterr().out
    assert f"comparison with {b} (test randomization, correction holm)" in out
    assert f"comparison with {c} (test randomization, correction holm)" in out
    assert re.search(
        r"^  pairwise\.precision +\S+ vs \S+  delta \S+ \[\S+, \S+\]  p \S+  p_adj \S+  mdd", out, re.M
    )
    doc = _json(capsys, *args[1:])
    assert set(doc["comparison"]) == {str(b), str(c)}
    # the same numbers as the API on per-track results (deteval.stats.mir)
    from deteval.stats.mir import mir_collection

    def run(folder: Path) -> list:
        return [evaluate_mir(DATA / "ref" / f"{t}.lab", folder / f"{t}.lab") for t in TRACKS]

    api = mir_collection(run(DATA / "est"), [(str(b), run(b)), (str(c), run(c))], level=None, n_resamples=100)
    assert doc["comparison"] == json.loads(json.dumps(api.summary["comparison"]))


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    ref, est = tmp_path / "ref", tmp_path / "est"
    shutil.copytree(DATA / "ref", ref)
    shutil.copytree(DATA / "est", est)
    return ref, est


def _error(capsys, *args: str) -> str:
    assert main(["mir", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_a_track_without_its_partner_is_refused(capsys, tmp_path: Path) -> None:
    ref, est = _copy(tmp_path)
    (est / "seg03.lab").unlink()
    (est / "seg10.lab").write_text("0 10 A\n", encoding="utf-8")
    err = _error(capsys, str(ref), str(est))
    assert err.startswith(
        f"deteval: error: {est}: the reference and estimate folders do not hold the same tracks"
    )
    assert f"no estimate (same file name) for {ref / 'seg03.lab'}" in err
    assert f"no reference (same file name) for {est / 'seg10.lab'}" in err
    # the same check for every --compare-to folder
    other = tmp_path / "other"
    shutil.copytree(DATA / "est", other)
    (other / "seg07.lab").unlink()
    err = _error(capsys, str(ref), str(ref), "--compare-to", str(other))
    assert f"no estimate (same file name) for {ref / 'seg07.lab'}" in err


def test_empty_or_mixed_inputs_are_refused(capsys, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not an annotation\n", encoding="utf-8")
    err = _error(capsys, REF, str(empty))
    assert err == f"deteval: error: {empty}: no annotation files (pattern '*.lab') in this folder\n"
    err = _error(capsys, REF, str(DATA / "est" / "seg00.lab"))
    assert f"{REF} is a folder but {DATA / 'est' / 'seg00.lab'} is not" in err
    err = _error(capsys, REF, str(tmp_path / "missing"))
    assert f"{REF} is a folder but {tmp_path / 'missing'} is not" in err
    ref_file, est_file = str(DATA / "ref" / "seg00.lab"), str(DATA / "est" / "seg00.lab")
    assert "give a reference folder and an estimate folder" in _error(
        capsys, ref_file, est_file, "--ci", "0.95"
    )
    assert "--pattern selects the files of two folders" in _error(
        capsys, ref_file, est_file, "--pattern", "*"
    )
    one_ref, one_est = tmp_path / "one_ref", tmp_path / "one_est"
    one_ref.mkdir()
    one_est.mkdir()
    shutil.copy(ref_file, one_ref)
    shutil.copy(est_file, one_est)
    assert main(["mir", str(one_ref), str(one_est), "--format", "json"]) == 0  # one track: its numbers
    assert json.loads(capsys.readouterr().out)["n_tracks"] == 1
    err = _error(capsys, str(one_ref), str(one_est), "--ci", "0.95")
    assert f"{one_ref} and {one_est} hold one track: give at least two" in err


def test_a_bad_file_in_a_folder_names_file_and_line(capsys, tmp_path: Path) -> None:
    ref, est = _copy(tmp_path)
    (est / "seg05.lab").write_text("0 10 A\n10 x B\n", encoding="utf-8")
    err = _error(capsys, str(ref), str(est))
    assert err == f"deteval: error: {est / 'seg05.lab'}: line 2: end time 'x' is not a number\n"


def test_pattern_selects_the_files(capsys, tmp_path: Path) -> None:
    ref, est = tmp_path / "ref", tmp_path / "est"
    ref.mkdir()
    est.mkdir()
    for t in TRACKS[:3]:
        shutil.copy(DATA / "ref" / f"{t}.lab", ref / f"{t}.txt")
        shutil.copy(DATA / "est" / f"{t}.lab", est / f"{t}.txt")
    (est / "README.md").write_text("not a track\n", encoding="utf-8")
    doc = _json(capsys, str(ref), str(est), "--pattern", "*.txt")
    assert doc["n_tracks"] == 3 and list(doc["per_class"]) == TRACKS[:3]
    assert doc["per_class"]["seg01"] == _json(capsys, REF, EST)["per_class"]["seg01"]


# ------------------------------------------------------------ mir_eval.segment.evaluate's time spans
def _random_annotation(rng: np.random.Generator, start: float, end: float, n: int) -> tuple:
    edges = np.r_[start, np.sort(rng.uniform(start, end, n - 1)), end].round(3)
    intervals = np.stack([edges[:-1], edges[1:]], axis=1)
    return intervals, [f"L{k}" for k in rng.integers(0, 4, n)]


@pytest.mark.parametrize("seed", range(60))
def test_adjust_equals_mir_eval_adjust_intervals(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ref_start = float(rng.choice([0.0, rng.uniform(0, 5)]))
    ref_end = float(rng.uniform(20, 200))
    est_start = float(rng.choice([0.0, rng.uniform(0, 5)]))
    est_end = float(rng.choice([ref_end, ref_end + rng.uniform(-10, 10), ref_end * rng.uniform(0.2, 3)]))
    ri, rl = _random_annotation(rng, ref_start, ref_end, int(rng.integers(1, 12)))
    ei, el = _random_annotation(rng, est_start, est_end, int(rng.integers(1, 20)))
    ari, arl = mir_eval.util.adjust_intervals(ri, labels=list(rl), t_min=0.0)
    aei, ael = mir_eval.util.adjust_intervals(ei, labels=list(el), t_min=0.0, t_max=ari.max())
    ref, est = adjust_to_reference(
        build_segments(ri[:, 0], ri[:, 1], rl), build_segments(ei[:, 0], ei[:, 1], el)
    )
    assert np.array_equal(np.stack([ref.starts, ref.ends], axis=1), ari) and ref.labels.tolist() == arl
    assert np.array_equal(np.stack([est.starts, est.ends], axis=1), aei) and est.labels.tolist() == ael


def test_skipped_lines_are_counted_per_track(capsys, tmp_path: Path) -> None:
    ref, est = _copy(tmp_path)
    with (est / "seg02.lab").open("a", encoding="utf-8") as fh:
        fh.write("400 oops X\n")
    doc = _json(capsys, str(ref), str(est), "--on-error", "skip")
    assert doc["skipped_records"] == 1
    skipped = [w for w in doc["warnings"] if "skipped bad record" in w]
    assert skipped == [
        f"seg02: skipped bad record: {est / 'seg02.lab'}: line 23: end time 'oops' is not a number"
    ]
    assert doc["per_class"]["seg02"] == _json(capsys, REF, EST)["per_class"]["seg02"]


def test_two_files_of_one_track_are_refused(capsys, tmp_path: Path) -> None:
    ref, est = _copy(tmp_path)
    shutil.copy(est / "seg04.lab", est / "seg04.txt")
    err = _error(capsys, str(ref), str(est), "--pattern", "*")
    assert f"{est}: two files for track 'seg04': seg04.lab and seg04.txt (pattern '*')" in err
