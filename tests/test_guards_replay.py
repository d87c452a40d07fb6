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


def test_arrays_bound_is_checked_before_accumulating(tmp_path: Path, monkeypatch, capsys) -> None:
    """Above MAX_ARRAYS_BYTES the evaluation is refused naming the size; at or below it, it runs."""
    from deteval.detection.coco import evaluate_coco, evaluation
    from deteval.detection.coco.evaluation import full_arrays_bytes
    from deteval.detection.coco_params import CocoParams

    gt, res = _many_categories(tmp_path, 30)
    need = full_arrays_bytes(CocoParams.from_options("bbox"), 30)
    assert need == 30 * 8 * 10 * 4 * 3 * (2 * 101 + 1)
    monkeypatch.setattr(evaluation, "MAX_ARRAYS_BYTES", need)
    ev = evaluate_coco(str(gt), str(res), strategy="one process")
    assert ev.precision.shape == (10, 101, 30, 4, 3) and ev.stats[0] > 0
    monkeypatch.setattr(evaluation, "MAX_ARRAYS_BYTES", need - 1)
    with pytest.raises(
        ConfigError, match=r"^30 categories with ground truth need 0\.0 GiB of pycocotools' arr"
    ):
        evaluate_coco(str(gt), str(res), strategy="one process")
    cli_error(
        capsys,
        ["coco", str(gt), str(res)],
        "30 categories with ground truth",
        "evaluate the categories in parts",
    )


def test_arrays_bound_counts_only_categories_with_ground_truth(tmp_path: Path, monkeypatch) -> None:
    """Declared categories without ground truth are never laid out (FULL_ARRAYS_BYTES), so they do not count
    against the bound: 30 declared, 3 with boxes, a bound that only 3 fit in."""
    from deteval.detection.coco import evaluate_coco, evaluation
    from deteval.detection.coco.evaluation import full_arrays_bytes
    from deteval.detection.coco_params import CocoParams

    gt, res = _many_categories(tmp_path, 3)
    data = json.loads(gt.read_text())
    data["categories"] += [{"id": k, "name": f"c{k}"} for k in range(4, 31)]
    gt.write_text(json.dumps(data))
    fit = full_arrays_bytes(CocoParams.from_options("bbox"), 3)
    monkeypatch.setattr(evaluation, "FULL_ARRAYS_BYTES", fit)
    monkeypatch.setattr(evaluation, "MAX_ARRAYS_BYTES", fit)
    ev = evaluate_coco(str(gt), str(res), strategy="one process")
    assert ev.cat_index is not None and ev.cat_index.tolist() == [0, 1, 2]
    assert len(ev.per_class()) == 30


def test_lvis_arrays_bound(tmp_path: Path, monkeypatch) -> None:
    from deteval.detection.coco import evaluation
    from deteval.detection.lvis import evaluate_lvis

    monkeypatch.setattr(evaluation, "MAX_ARRAYS_BYTES", 1000)
    with pytest.raises(ConfigError, match="categories with ground truth need"):
        evaluate_lvis(str(ROOT / "data_samples" / "lvis" / "lvis_val.json"), COCO[1])


@pytest.mark.slow
def test_ten_thousand_categories_refused_in_bounded_memory(tmp_path: Path) -> None:
    """10,000 categories with one box each: pycocotools' arrays would take 1.8 GiB (2.6 GB peak, 12 s of CPU);
    refused with one line under a 1 GiB address-space cap, no MemoryError."""
    gt, res = _many_categories(tmp_path, 10_000)
    cap = 1 << 30

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "deteval", "coco", str(gt), str(res)],
        capture_output=True, text=True, env=env, preexec_fn=limit, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith("deteval: error: 10,000 categories with ground truth need 1.8 GiB")
    assert proc.stderr.count("\n") == 1


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
