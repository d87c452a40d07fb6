"""The number of processes of the resampling (``processes=``, ``--processes N|auto``) changes no number."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from test_coco_two_cores import _data
from test_stats import VOC_ARGS, _cli_json, _coco_case

import deteval.run.coco_two_cores as coco_eval
from deteval.detection.coco import CocoEvaluation
from deteval.errors import ConfigError
from deteval.io.coco import pieces as coco_pieces
from deteval.run import forked
from deteval.stats import parallel
from deteval.stats.bootstrap import bootstrap_weights
from deteval.stats.coco import CocoUnits
from deteval.stats.parallel import AUTO_MIN_SECONDS, auto_processes, evaluate_rows


@pytest.mark.slow
def test_cli_json_equal_for_any_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """coco (intervals, then a randomization test against a second file) and voc (intervals, paired
    bootstrap): the JSON of --processes 1, 2 and auto is the same, byte for byte."""
    gt, dets = _coco_case(5, 12)
    dets_b = [{**d, "score": d["score"] ** 3} for d in dets[1::2] + dets[::4]]
    paths = []
    for name, data in (("gt", gt), ("a", dets), ("b", dets_b)):
        paths.append(str(tmp_path / f"{name}.json"))
        Path(paths[-1]).write_text(json.dumps(data))
    other = tmp_path / "voc"
    other.mkdir()
    root = Path(__file__).resolve().parents[1]
    for f in (root / "data_samples/voc/results").glob("*.txt"):  # system B: every other detection
        (other / f.name).write_text("".join(x + "\n" for x in f.read_text().splitlines()[::2]))
    runs = [
        ["coco", *paths[:2], "--ci", "0.9", "--bootstrap", "150", "--compare-to", paths[2]],
        ["coco", *paths[:2], "--compare-to", paths[2], "--test", "randomization", "--bootstrap", "150"],
        [
            *VOC_ARGS,
            "--ci",
            "0.95",
            "--bootstrap",
            "150",
            "--compare-to",
            str(other / "comp4_det_test_{cls}.txt"),
        ],
    ]
    monkeypatch.chdir(root)
    for args in runs:
        docs = [json.dumps(_cli_json([*args, "--processes", p], capsys)) for p in ("1", "2", "auto")]
        assert docs[0] == docs[1] == docs[2]
        assert "comparison" in docs[0]
    from deteval.cli import main

    with pytest.raises(SystemExit) as exc:
        main([*runs[0], "--processes", "0"])
    assert exc.value.code == 2 and "'auto'" in capsys.readouterr().err


def test_auto_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """auto: 2 for work estimated at AUTO_MIN_SECONDS or more where the evaluation's fork rule allows a fork
    (forked.can_fork: two usable CPUs, one of them idle, no other thread, DETEVAL_PROCESSES), else 1; the
    first rows (a quarter chunk) decide; numbers pass through; bad values are refused."""
    if not sys.platform.startswith("linux"):
        pytest.skip("forks on Linux only")
    monkeypatch.delenv(forked.ENV_PROCESSES, raising=False)
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)  # earlier tests may leave threads
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    assert auto_processes(AUTO_MIN_SECONDS) == 2
    assert auto_processes(AUTO_MIN_SECONDS / 2) == 1
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: False)  # every core busy
    assert auto_processes(AUTO_MIN_SECONDS) == 1
    monkeypatch.setenv(forked.ENV_PROCESSES, "2")  # ... unless forced
    assert auto_processes(AUTO_MIN_SECONDS) == 2
    monkeypatch.setenv(forked.ENV_PROCESSES, "1")
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)
    assert auto_processes(AUTO_MIN_SECONDS) == 1
    monkeypatch.delenv(forked.ENV_PROCESSES)
    monkeypatch.setattr(forked.threading, "active_count", lambda: 2)
    assert auto_processes(AUTO_MIN_SECONDS) == 1
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)
    monkeypatch.setattr(forked, "usable_cpus", lambda: 1)
    assert auto_processes(10 * AUTO_MIN_SECONDS) == 1
    monkeypatch.setattr(forked, "usable_cpus", lambda: 2)

    def slow(w: np.ndarray) -> np.ndarray:  # one chunk "takes" AUTO_MIN_SECONDS: the rest is forked
        clock[0] += AUTO_MIN_SECONDS
        return w * 2.0

    clock = [0.0]
    monkeypatch.setattr(parallel.time, "perf_counter", lambda: clock[0])
    rows = np.arange(300).reshape(150, 2)
    assert np.array_equal(evaluate_rows(slow, rows, chunk=50, processes="auto"), rows * 2.0)
    assert parallel.LAST["processes"] == 2
    assert np.array_equal(evaluate_rows(lambda w: w * 2.0, rows, chunk=50, processes="auto"), rows * 2.0)
    assert parallel.LAST["processes"] == 1
    for bad in (0, -1, "two", 1.5, True):
        with pytest.raises(ConfigError):
            evaluate_rows(slow, rows, processes=bad)  # type: ignore[arg-type]


@pytest.mark.slow
def test_coco_units_read_and_match_on_two_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CocoUnits parses each large results file with a forked child (the tail) and matches half of the
    images there, as evaluate_coco does: the match tables, the evaluations and the resampled metrics equal
    those of one process, bit for bit; each system's evaluation is made when first asked for."""
    if not sys.platform.startswith("linux"):
        pytest.skip("forks on Linux only")
    gt, dets = _data(3, n_img=30)
    paths = [tmp_path / "gt.json", tmp_path / "a.json", tmp_path / "b.json"]
    for path, data in zip(paths, (gt, dets, [{**d, "score": d["score"] ** 2} for d in dets[::2]])):
        path.write_text(json.dumps(data))
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)  # (the machine may be busy)
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    monkeypatch.setattr(coco_eval, "FORK_DETECTIONS", 0)
    forks = []
    real = coco_eval.fork_call
    monkeypatch.setattr(coco_eval, "fork_call", lambda fn, *a: forks.append(real(fn, *a)) or forks[-1])
    runs = []
    for setting in ("1", "2"):
        monkeypatch.setenv(forked.ENV_PROCESSES, setting)
        runs.append(CocoUnits(str(paths[0]), [str(p) for p in paths[1:]]))
    assert [f is not None for f in forks] == [False] * 4 + [True] * 4  # tail, matching; per system
    one, two = runs
    assert [isinstance(e, CocoEvaluation) for e in two._evaluations] == [False, False]  # made when asked for
    for t1, t2 in zip(one.tables, two.tables):  # the same rows (in another order: image halves appended)
        assert len(t1) == len(t2) and np.array_equal(t1.npig, t2.npig)
        k1 = np.lexsort((t1.rank, t1.img, t1.cat))
        k2 = np.lexsort((t2.rank, t2.img, t2.cat))
        for f in ("cat", "img", "score", "rank", "tp", "ig"):
            assert np.array_equal(getattr(t1, f)[..., k1], getattr(t2, f)[..., k2]), f
    for e1, e2 in zip(one.evaluations, two.evaluations):
        assert np.array_equal(e1.precision, e2.precision) and np.array_equal(e1.stats, e2.stats)
        assert e1.counts == e2.counts and e1.warnings == e2.warnings
    w = bootstrap_weights(one.n_units, 5, 1)
    assert np.array_equal(one.metric(0)(w), two.metric(0)(w), equal_nan=True)
    swap = np.random.default_rng(2).integers(0, 2, (4, one.n_units))
    for x, y in zip(one.mix(0, 1).rounds(swap), two.mix(0, 1).rounds(swap)):  # type: ignore[attr-defined]
        assert np.array_equal(x, y, equal_nan=True)


def test_cpu_idle_reads_the_instant_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """forked.cpu_idle: a CPU is free when at most ``cpus`` tasks run now (this one included), whatever the
    load averages; an unreadable /proc/loadavg does not refuse."""
    import io
    from collections.abc import Callable

    def loadavg(text: bytes) -> Callable[..., io.BytesIO]:
        return lambda *a, **k: io.BytesIO(text)

    cases = [
        (b"0.20 0.30 0.40 2/100 123\n", True),
        (b"3.30 3.00 2.00 2/120 123\n", True),  # an instant's count only
        (b"0.20 0.30 0.40 3/100 123\n", False),  # both CPUs taken right now
        (b"garbage\n", True),
    ]
    for text, idle in cases:
        monkeypatch.setattr(forked, "open", loadavg(text), raising=False)
        assert forked.cpu_idle(2) is idle, text
