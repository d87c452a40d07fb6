"""The causes scripts/hostile_replay.py found still open: COCO/LVIS arrays for very many categories with ground
truth refused above a documented bound (bounded memory, no MemoryError), devices among VOC detection files and
MIR track folders named as what they are, analysis flags named in their errors, and Python warnings printed as
one ``deteval: warning:`` line by the command."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from cli_errors import cli_error

from deteval.errors import ConfigError, DetevalWarning

ROOT = Path(__file__).resolve().parent.parent
COCO = [str(ROOT / "data_samples" / "coco" / "instances_val.json"), str(ROOT / "data_samples" / "coco" / "results_bbox.json")]  # fmt: skip


def _many_categories(tmp_path: Path, n_cats: int) -> tuple[Path, Path]:
    """COCO ground truth with ``n_cats`` categories, each with one box and one detection (100 images)."""
    cats = [{"id": k, "name": f"c{k}"} for k in range(1, n_cats + 1)]
    images = [{"id": i, "width": 640, "height": 480} for i in range(1, 101)]
    anns = [{"id": k, "image_id": 1 + k % 100, "category_id": k, "bbox": [k % 500, 10, 40, 40], "area": 1600.0,
             "iscrowd": 0} for k in range(1, n_cats + 1)]  # fmt: skip
    dets = [{"image_id": 1 + k % 100, "category_id": k, "bbox": [k % 500 + 2, 12, 40, 40], "score": 0.5}
            for k in range(1, n_cats + 1)]  # fmt: skip
    gt, res = tmp_path / "gt.json", tmp_path / "res.json"
    gt.write_text(json.dumps({"images": images, "annotations": anns, "categories": cats}))
    res.write_text(json.dumps(dets))
    return gt, res


def _sliced(monkeypatch) -> None:
    """Every evaluation with categories laid out one slice at a time (the bound of whole arrays at 0)."""
    import deteval.run.coco_two_cores as two_cores
    from deteval.detection.coco import evaluation

    monkeypatch.setattr(evaluation, "FULL_ARRAYS_BYTES", 0)
    monkeypatch.setattr(two_cores, "FULL_ARRAYS_BYTES", 0)


@pytest.mark.fast_cases(seed=0)
@pytest.mark.parametrize("seed", range(12))
def test_sliced_evaluation_gives_every_number_of_the_whole_arrays(seed: int, monkeypatch) -> None:
    """One (area range, maxDets) slice at a time: the stats, printed lines, per-class rows and curves are
    those of the whole arrays, bit for bit, and the whole arrays are never laid out for them."""
    from _coco_cases import random_case

    from deteval.detection.coco import evaluate_coco
    from deteval.detection.coco.evaluation import SlicedCocoEvaluation
    from deteval.detection.coco_params import CocoParams

    case = random_case(seed)
    p = CocoParams.from_options("bbox", **{k: v for k, v in case["params"].items() if k != "cat_ids"})
    whole = evaluate_coco(case["gt"], case["dt"], params=p)
    _sliced(monkeypatch)
    ev = evaluate_coco(case["gt"], case["dt"], params=p)
    if not p.use_cats:  # (one pooled category: never sliced)
        assert type(ev) is type(whole)
        return
    assert isinstance(ev, SlicedCocoEvaluation)
    assert np.array_equal(ev.stats, whole.stats) and ev.lines == whole.lines
    got, want = ev.to_result().to_dict(), whole.to_result().to_dict()
    assert got == want and got["per_class"]
    assert "_whole_arrays" not in ev.__dict__  # (the numbers came from slices)
    for a in (ev.precision, ev.recall, ev.scores):  # laid out when read
        assert a.shape[2 if a.ndim == 5 else 1] == ev.cat_index.shape[0]
    assert all(np.array_equal(a, b) for a, b in zip(ev.full_arrays(), whole.full_arrays()))


def test_whole_arrays_above_the_bound_are_refused_when_read(tmp_path: Path, monkeypatch) -> None:
    from deteval.detection.coco import evaluate_coco, evaluation

    gt, res = _many_categories(tmp_path, 30)
    _sliced(monkeypatch)
    monkeypatch.setattr(evaluation, "MAX_ARRAYS_BYTES", 1000)
    ev = evaluate_coco(str(gt), str(res))
    assert len(ev.per_class()) == 30 and ev.stats[0] > 0  # the numbers need no whole arrays
    with pytest.raises(
        ConfigError, match=r"^30 categories with ground truth need 0\.0 GiB of pycocotools' arr"
    ):
        ev.precision  # noqa: B018


def test_a_slice_above_its_bound_is_refused(tmp_path: Path, monkeypatch, capsys) -> None:
    from deteval.detection.coco import evaluate_coco, slices

    gt, res = _many_categories(tmp_path, 30)
    _sliced(monkeypatch)
    one = 8 * 10 * 30 * (2 * 101 + 1)  # T x K x (2R + 1) float64: precision, scores and recall of one slice
    monkeypatch.setattr(slices, "MAX_SLICE_BYTES", one)
    assert evaluate_coco(str(gt), str(res)).stats[0] > 0
    monkeypatch.setattr(slices, "MAX_SLICE_BYTES", one - 1)
    with pytest.raises(
        ConfigError, match=r"30 categories with ground truth need 0\.0 GiB for one area range"
    ):
        evaluate_coco(str(gt), str(res))
    cli_error(
        capsys,
        ["coco", str(gt), str(res)],
        "for one area range and maxDets",
        "evaluate the categories in parts",
    )


def test_lvis_arrays_bound(monkeypatch) -> None:
    from deteval.detection.coco import evaluation
    from deteval.detection.lvis import evaluate_lvis

    monkeypatch.setattr(evaluation, "MAX_ARRAYS_BYTES", 1000)
    with pytest.raises(ConfigError, match="categories with ground truth need"):
        evaluate_lvis(str(ROOT / "data_samples" / "lvis" / "lvis_val.json"), COCO[1])


def test_thresholds_grouped_by_sampled_levels_change_nothing(monkeypatch) -> None:
    """Accumulation takes the thresholds in groups bounded by items and by lists x recall levels (many
    categories); any grouping gives the same arrays."""
    from _coco_cases import random_case

    import deteval.detection.coco_accumulate as acc
    from deteval.detection.coco import evaluate_coco

    case = random_case(3)
    want = evaluate_coco(case["gt"], case["dt"], strategy="one process").full_arrays()
    monkeypatch.setattr(acc, "LIST_ITEMS", 150)  # (fewer than one threshold's lists x 101 levels)
    got = evaluate_coco(case["gt"], case["dt"], strategy="one process").full_arrays()
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


def _capped(argv: list[str], cap: int, cwd: Path) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "deteval", *argv],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=limit,
        cwd=cwd,
    )


@pytest.mark.slow
def test_ten_thousand_categories_in_bounded_memory(tmp_path: Path) -> None:
    """10,000 categories with one box each: pycocotools' arrays would take 1.8 GiB (2.6 GB peak, a MemoryError
    under a 2 GB cap); one slice at a time the evaluation and its per-class rows run under a 1.5 GB
    address-space cap (about 0.4 GB resident)."""
    gt, res = _many_categories(tmp_path, 10_000)
    proc = _capped(["coco", str(gt), str(res), "--format", "json", "-o", "out.json"], 3 << 29, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((tmp_path / "out.json").read_text())
    assert len(doc["per_class"]) == 10_000 and doc["AP50"] > 0


def test_device_as_a_voc_detection_file_is_named(tmp_path: Path, capsys) -> None:
    """/dev/zero where a comp4 file should be was reported as 'found a directory'."""
    import shutil

    voc = tmp_path / "voc"
    shutil.copytree(ROOT / "data_samples" / "voc", voc)
    det = voc / "results" / "comp4_det_test_car.txt"
    det.unlink()
    det.symlink_to("/dev/zero")
    pattern = str(voc / "results" / "comp4_det_test_{cls}.txt")
    err = cli_error(capsys, ["voc", "--annotations", str(voc / "Annotations"), "--detections", pattern],
                    "comp4_det_test_car.txt", "the detection file is a character device")  # fmt: skip
    assert "directory" not in err
    det.unlink()
    det.mkdir()
    cli_error(capsys, ["voc", "--annotations", str(voc / "Annotations"), "--detections", pattern],
              "found a directory")  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_among_mir_tracks_is_refused(tmp_path: Path, capsys) -> None:
    """A FIFO matching the pattern was left out in silence (a track fewer, other numbers)."""
    ref, est = tmp_path / "ref", tmp_path / "est"
    for d in (ref, est):
        d.mkdir()
        for name in ("a", "b"):
            (d / f"{name}.lab").write_text("0.0 10.0 A\n10.0 20.0 B\n")
    (est / "sub.lab").mkdir()  # a folder matching the pattern is still left out
    (ref / "b.lab").unlink()
    os.mkfifo(ref / "b.lab")
    cli_error(capsys, ["mir", str(ref), str(est)], "b.lab", "named pipe")


def test_python_warnings_print_as_one_line(monkeypatch, capsys) -> None:
    """Run as the program, a Python warning is one ``deteval: warning:`` line (no source file and code)."""
    import deteval.commands.presets as presets
    from deteval import cli

    real = presets.run

    def warn_then_run(*args: object) -> int:
        warnings.warn("a pillow-like\nwarning", UserWarning, stacklevel=1)
        warnings.warn("tolerated", DetevalWarning, stacklevel=1)
        return real(*args)

    monkeypatch.setattr(sys, "argv", ["deteval", "presets"])
    monkeypatch.setattr(presets, "run", warn_then_run)
    assert cli.main() == 0
    err = capsys.readouterr().err
    assert err == "deteval: warning: UserWarning: a pillow-like warning\ndeteval: warning: tolerated\n"
    with warnings.catch_warnings(record=True) as seen:  # called with argv: the caller's handling stays
        warnings.simplefilter("always")
        assert cli.main(["presets"]) == 0
    assert [str(w.message) for w in seen] == ["a pillow-like\nwarning", "tolerated"]
    assert capsys.readouterr().err == ""


def test_metric_api_numbers_from_slices(monkeypatch) -> None:
    """MeanAveragePrecision's numbers (mar_<m>, per-class AP and AR) read one slice each: those of the whole
    arrays."""
    from deteval.api import MeanAveragePrecision

    rng = np.random.default_rng(4)

    def batch() -> tuple[list[dict], list[dict]]:
        preds, targets = [], []
        for _ in range(6):
            xy = rng.uniform(0, 200, (8, 2))
            boxes = np.c_[xy, xy + rng.uniform(5, 80, (8, 2))]
            preds.append({"boxes": boxes + rng.normal(0, 4, boxes.shape), "scores": rng.uniform(0, 1, 8),
                          "labels": rng.integers(0, 5, 8)})  # fmt: skip
            targets.append({"boxes": boxes, "labels": rng.integers(0, 5, 8)})
        return preds, targets

    preds, targets = batch()
    m = MeanAveragePrecision(class_metrics=True)
    m.update(preds, targets)
    want = m.compute()
    _sliced(monkeypatch)
    m = MeanAveragePrecision(class_metrics=True)
    m.update(preds, targets)
    got = m.compute()
    assert got.metrics.keys() == want.metrics.keys() and len(want["map_per_class"]) == 5
    for key in want.metrics:
        assert np.array_equal(np.asarray(got[key]), np.asarray(want[key])), key
