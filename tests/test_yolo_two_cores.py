"""A YOLO split and its prediction files read on two cores (the predictions by a forked child) as in one."""

from __future__ import annotations

import numpy as np
import pytest
from _yolo_cases import random_dataset

import deteval.run.forked as forked
import deteval.run.yolo as runner
from deteval.detection.ultralytics import evaluate_ultralytics
from deteval.errors import DetevalError
from deteval.io.yolo import load_yolo_predictions
from deteval.run.yolo import load_dataset, load_split_and_predictions
from deteval.tables.boxes import BoxTable


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, per call of the runner's prediction reader, whether rows read (or read and checked) beforehand
    were handed to it."""
    given: list[bool] = []
    real = runner.load_yolo_predictions

    def spy(source, ds, *, rows=None, checked=None):
        given.append(rows is not None or checked is not None)
        return real(source, ds, rows=rows, checked=checked)

    monkeypatch.setattr(runner, "load_yolo_predictions", spy)
    return given


@pytest.mark.parametrize("processes", ["1", "2"])
@pytest.mark.parametrize("profile", ["coco", "ultralytics"])
def test_predictions_read_by_a_child_as_here(tmp_path, monkeypatch, processes, profile):
    """DETEVAL_PROCESSES=2: the child's rows are used, =1: none; the tables are those of one process."""
    monkeypatch.setenv(forked.ENV_PROCESSES, processes)
    given = _spy(monkeypatch)
    data, pred, _ = random_dataset(tmp_path, 5, n_images=9)
    ds, preds = load_split_and_predictions(str(data), str(pred), "val", profile)
    assert given == [processes == "2"]
    want_ds = load_dataset(str(data), "val", profile)
    want = load_yolo_predictions(pred, want_ds)
    assert len(preds) == len(want) > 0
    for name in ("img", "cls", "xyxy", "conf"):
        np.testing.assert_array_equal(getattr(preds, name), getattr(want, name))
    np.testing.assert_array_equal(ds.labels.xyxy, want_ds.labels.xyxy)
    # (the folder's own predict/ parent: the txt files found under labels/, by the child too)
    _, again = load_split_and_predictions(str(data), str(pred.parent), "val", profile)
    np.testing.assert_array_equal(again.xyxy, want.xyxy)


@pytest.mark.parametrize("processes", ["1", "2"])
def test_prediction_faults_raised_here_as_in_one_process(tmp_path, monkeypatch, processes):
    """A confidence outside [0, 1], an unknown stem, an unreadable entry: the one-process error, file and
    line; a fault of the split itself is raised while the child reads (and is ended)."""
    monkeypatch.setenv(forked.ENV_PROCESSES, processes)
    data, pred, _ = random_dataset(tmp_path, 6, n_images=5)
    first = sorted(pred.iterdir())[0]
    first.write_text(first.read_text() + "0 0.5 0.5 0.1 0.1 1.5\n")
    n = len(first.read_text().splitlines())
    with pytest.raises(DetevalError, match=rf"{first.name}: line {n}: .*confidence"):
        load_split_and_predictions(str(data), str(pred), "val", "coco")
    first.write_text("0 0.5 0.5 0.1 0.1 0.5\n")
    (pred / "nosuchimage.txt").write_text("0 0.5 0.5 0.1 0.1 0.5\n")
    with pytest.raises(DetevalError, match=r"nosuchimage\.txt: no image with the stem 'nosuchimage'"):
        load_split_and_predictions(str(data), str(pred), "val", "coco")
    (pred / "nosuchimage.txt").unlink()
    (pred / "folder.txt").mkdir()
    with pytest.raises(DetevalError, match=r"folder\.txt"):
        load_split_and_predictions(str(data), str(pred), "val", "coco")
    (pred / "folder.txt").rmdir()
    with pytest.raises(DetevalError, match="no 'test:' split"):
        load_split_and_predictions(str(data), str(pred), "test", "coco")


def _boxes(rng: np.random.Generator, n: int, n_images: int, conf: bool) -> BoxTable:
    """``n`` boxes of 4 classes on a coarse grid (tied IoUs), confidences of 2 decimals (tied scores)."""
    xy = rng.integers(0, 20, (n, 2)) * 8.0
    wh = rng.integers(1, 6, (n, 2)) * 8.0
    score = np.round(rng.uniform(0, 1, n), 2) if conf else np.zeros(n)
    img = np.sort(rng.integers(0, n_images, n))
    return BoxTable(img, rng.integers(0, 4, n), np.hstack([xy, xy + wh]), score)


def _same_metrics(a, b) -> None:
    for name in ("classes", "ap", "p", "r", "n_labels"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.extra.keys() == b.extra.keys()
    for key, value in a.extra.items():
        if key == "pr_curves":
            assert len(value) == len(b.extra[key])
            for mine, theirs in zip(value, b.extra[key]):
                for x, y in zip(mine, theirs):
                    np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(value, b.extra[key])


@pytest.mark.parametrize("processes", ["1", "2", "child fails"])
@pytest.mark.parametrize("profile", ["ultralytics-8.0", "ultralytics-8.4.37", "ultralytics"])
def test_ultralytics_metrics_on_two_cores_as_in_one(monkeypatch, processes, profile):
    """The images matched in two halves and the classes integrated in two parts give every metric and curve
    of one process, bit for bit: ties of IoU (the unique matcher's redo) and of score, an image past
    max_det (its cap counted once); a child that fails leaves its part to this process."""
    monkeypatch.setattr(runner, "FORK_DETECTIONS", 1)
    monkeypatch.setenv(forked.ENV_PROCESSES, "1" if processes == "1" else "2")
    forks: list[int] = []
    real_fork = runner.fork_call

    def counting(fn, *args):
        child = real_fork(failing if processes == "child fails" else fn, *args)
        forks.append(child is not None)
        return child

    def failing(*args):
        raise RuntimeError("the child fails")

    monkeypatch.setattr(runner, "fork_call", counting)
    rng = np.random.default_rng(3)
    gt, dt = _boxes(rng, 900, 40, False), _boxes(rng, 3000, 40, True)
    crowded = _boxes(rng, 400, 1, True)  # (a 41st image of 400 detections: 100 past max_det)
    crowded.img += 40
    dt = BoxTable(
        *(np.concatenate([getattr(dt, k), getattr(crowded, k)]) for k in ("img", "cls", "xyxy", "conf"))
    )
    want = evaluate_ultralytics(gt, dt, 41, profile)
    got = runner.ultralytics_metrics(gt, dt, 41, profile)
    assert want.extra["capped"] == got.extra["capped"] == 100
    assert forks == [processes != "1"] * 2
    _same_metrics(want, got)
    assert 0 < want.map < 1


def test_unreadable_image_raised_as_in_one_process(tmp_path, monkeypatch):
    """The labelled images' sizes read while the child reads the predictions: an unreadable image met there
    is left for one process's order (the predictions' images first), which raises the same error."""
    data, pred, _ = random_dataset(tmp_path, 7, n_images=6)
    images = sorted((tmp_path / "images" / "val").iterdir())
    labelled = [p for p in images if (tmp_path / "labels" / "val" / f"{p.stem}.txt").read_text()]
    first, last = labelled[0], labelled[-1]
    (
        pred / f"{first.stem}.txt"
    ).unlink()  # (the first labelled image has no predictions: its size is read last)
    for p in (first, last):
        p.write_bytes(b"not an image")
    errors = []
    for processes in ("1", "2"):
        monkeypatch.setenv(forked.ENV_PROCESSES, processes)
        with pytest.raises(DetevalError, match="not a readable image") as e:
            load_split_and_predictions(str(data), str(pred), "val", "coco")
        errors.append(str(e.value))
    assert errors[0] == errors[1]
    assert last.name in errors[0]


def test_child_reads_the_last_headers(tmp_path, monkeypatch):
    """Under coco the child reads the headers of the split's last images after the predictions: this process
    opens fewer images, and the tables are those of one process."""
    import deteval.io.yolo as yolo_io

    data, pred, _ = random_dataset(tmp_path, 8, n_images=10)
    real = yolo_io.image_header
    opened: list[str] = []

    def spy(path, *args, **kwargs):
        opened.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(yolo_io, "image_header", spy)
    tables = []
    for processes in ("1", "2"):
        monkeypatch.setenv(forked.ENV_PROCESSES, processes)
        opened.clear()
        ds, preds = load_split_and_predictions(str(data), str(pred), "val", "coco")
        tables.append((ds.labels.xyxy, preds.xyxy, len(opened)))
    (labels1, preds1, n1), (labels2, preds2, n2) = tables
    np.testing.assert_array_equal(labels1, labels2)
    np.testing.assert_array_equal(preds1, preds2)
    assert n1 == 10
    assert n2 == 10 - int(10 * runner.CHILD_HEADERS)


@pytest.mark.parametrize("processes", ["1", "2"])
def test_child_checked_predictions_read_again_when_images_are_left_out(tmp_path, monkeypatch, processes):
    """Under an Ultralytics profile a corrupt image is left out after the child placed the predictions on the
    split as listed: its table is not used, and the predictions are those of one process (the left-out
    image's file not read, with the warning)."""
    monkeypatch.setenv(forked.ENV_PROCESSES, processes)
    data, pred, _ = random_dataset(tmp_path, 9, n_images=7)
    images = sorted((tmp_path / "images" / "val").iterdir())
    images[2].write_bytes(b"not an image")
    ds, preds = load_split_and_predictions(str(data), str(pred), "val", "ultralytics")
    monkeypatch.setenv(forked.ENV_PROCESSES, "1")
    want_ds = load_dataset(str(data), "val", "ultralytics")
    want = load_yolo_predictions(pred, want_ds)
    assert ds.n_images == want_ds.n_images == 6
    assert len(preds) == len(want) > 0
    for name in ("img", "cls", "xyxy", "conf"):
        np.testing.assert_array_equal(getattr(preds, name), getattr(want, name))
    assert ds.warnings == want_ds.warnings
    assert any("left out as corrupt" in w for w in ds.warnings)
