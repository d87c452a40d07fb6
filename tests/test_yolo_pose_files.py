"""YOLO pose datasets and predictions on disk: ``deteval yolo --task pose`` (inferred from ``kpt_shape``) reads
them as Ultralytics does and scores them with the pose metrics checked in tests/test_yolo_pose.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _yolo_cases import write_image

from deteval.cli import main
from deteval.detection.box_table import BoxTable
from deteval.detection.ultralytics import evaluate_ultralytics_pose, pose_sigmas
from deteval.errors import DetevalError
from deteval.io.yolo import load_yolo_dataset
from deteval.io.yolo_pose import load_pose_dataset, load_pose_predictions
from deteval.run.yolo_pose import evaluate_yolo_pose_files


def _pose_dataset(
    root: Path, seed: int, k: int, dim: int, *, sigmas: bool = False
) -> tuple[Path, Path, Path, dict]:
    """A random pose split (tiny PNGs, labels, predictions as txt and as predictions.json) and the pixel
    arrays it holds."""
    rng = np.random.default_rng(seed)
    names = ["person", "cat"]
    yaml = f"path: {root}\nval: images/val\nkpt_shape: [{k}, {dim}]\nflip_idx: {list(range(k))}\nnames: {names}\n"
    if sigmas:
        yaml += f"kpt_oks_sigmas: {[round(float(s), 3) for s in rng.uniform(0.02, 0.1, k)]}\n"
    (root / "data.yaml").write_text(yaml)
    pred_dir = root / "preds"
    pred_dir.mkdir()
    records = []
    truth: dict = {"gi": [], "gc": [], "gb": [], "gk": [], "di": [], "dc": [], "db": [], "dk": [], "conf": []}
    for i in range(5):
        w, h = int(rng.integers(60, 400)), int(rng.integers(60, 400))
        write_image(root / "images" / "val" / f"im{i}.png", w, h)
        labels, preds = [], []
        for _ in range(int(rng.integers(0, 5))):
            c = int(rng.integers(0, 2))
            xc, yc = rng.uniform(0.2, 0.8, 2)
            bw, bh = rng.uniform(0.05, 0.4, 2)
            kx, ky = xc + rng.uniform(-bw / 2, bw / 2, k), yc + rng.uniform(-bh / 2, bh / 2, k)
            v = rng.choice([0, 1, 2], k) if dim == 3 else np.ones(k)
            pts = np.stack([kx, ky, v], 1)[:, :dim]
            labels.append(
                f"{c} {xc:.6g} {yc:.6g} {bw:.6g} {bh:.6g} " + " ".join(f"{t:.6g}" for t in pts.reshape(-1))
            )
            truth["gi"].append(i)
            truth["gc"].append(c)
            xc_, yc_, bw_, bh_ = (float(f"{t:.6g}") for t in (xc, yc, bw, bh))
            truth["gb"].append(
                [(xc_ - bw_ / 2) * w, (yc_ - bh_ / 2) * h, (xc_ + bw_ / 2) * w, (yc_ + bh_ / 2) * h]
            )
            gk = np.array([[float(f"{a:.6g}") * w, float(f"{b:.6g}") * h, vv] for a, b, vv in zip(kx, ky, v)])
            truth["gk"].append(gk)
            for _ in range(int(rng.integers(0, 3))):
                s = rng.choice([0.002, 0.01, 0.05])
                dx, dy = kx + rng.normal(0, s, k), ky + rng.normal(0, s, k)
                conf = float(rng.uniform(0.01, 1))
                dc = c if rng.random() < 0.9 else 1 - c
                dxc, dyc = xc + rng.normal(0, s), yc + rng.normal(0, s)
                kc = rng.random(k)
                preds.append(
                    f"{dc} {dxc:.17g} {dyc:.17g} {bw:.17g} {bh:.17g} "
                    + " ".join(f"{a:.17g} {b:.17g} {q:.17g}" for a, b, q in zip(dx, dy, kc))
                    + f" {conf:.17g}"
                )
                box = [(dxc - bw / 2) * w, (dyc - bh / 2) * h, (dxc + bw / 2) * w, (dyc + bh / 2) * h]
                pk = np.stack([dx * w, dy * h, kc], 1)
                truth["di"].append(i)
                truth["dc"].append(dc)
                truth["db"].append(box)
                truth["dk"].append(pk)
                truth["conf"].append(conf)
                records.append(
                    {
                        "image_id": f"im{i}",
                        "category_id": dc + 1,
                        "bbox": [box[0], box[1], box[2] - box[0], box[3] - box[1]],
                        "score": conf,
                        # (a [K, 2] model's predictions.json holds x, y only)
                        "keypoints": pk[:, :dim].reshape(-1).tolist(),
                    }
                )
        (root / "labels" / "val").mkdir(parents=True, exist_ok=True)
        (root / "labels" / "val" / f"im{i}.txt").write_text("\n".join(labels) + ("\n" if labels else ""))
        (pred_dir / f"im{i}.txt").write_text("\n".join(preds) + ("\n" if preds else ""))
    (root / "predictions.json").write_text(json.dumps(records))
    return root / "data.yaml", pred_dir, root / "predictions.json", truth


@pytest.mark.parametrize(("k", "dim"), [(1, 3), (5, 3), (17, 3), (17, 2), (68, 3), (5, 2)])
@pytest.mark.parametrize("seed", range(4))
def test_files_score_as_the_arrays_they_hold(tmp_path, k, dim, seed):
    data, pred_dir, pred_json, t = _pose_dataset(tmp_path, seed, k, dim)
    gt = BoxTable.from_arrays(t["gi"], t["gc"], np.asarray(t["gb"]).reshape(-1, 4))
    dt = BoxTable.from_arrays(t["di"], t["dc"], np.asarray(t["db"]).reshape(-1, 4), t["conf"])
    gk = np.asarray(t["gk"]).reshape(-1, k, 3)
    dk = np.asarray(t["dk"]).reshape(-1, k, 3)
    box, pose = evaluate_ultralytics_pose(gt, gk, dt, dk, 5, "ultralytics", pose_sigmas((k, dim), "product"))
    for preds in (pred_dir, pred_json):
        r = evaluate_yolo_pose_files(data, preds)
        assert r.summary["mAP50-95"] == pytest.approx(box.map, abs=1e-12)
        assert r.summary["pose mAP50-95"] == pytest.approx(pose.map, abs=1e-12)
        assert r.summary["pose mAP50"] == pytest.approx(pose.map50, abs=1e-12)
        assert r.summary["pose precision"] == pytest.approx(pose.precision, abs=1e-12)


def test_the_command_infers_pose_and_prints_box_and_pose(tmp_path, capsys):
    data, pred_dir, _, _ = _pose_dataset(tmp_path, 11, 17, 3)
    assert main(["yolo", str(data), str(pred_dir)]) == 0
    out = capsys.readouterr().out
    assert "Box(P" in out and "Pose(P" in out
    out_json = tmp_path / "r.json"
    assert (
        main(["yolo", str(data), str(pred_dir), "--task", "pose", "--format", "json", "-o", str(out_json)])
        == 0
    )
    doc = json.loads(out_json.read_text())
    assert set(doc) >= {"mAP50-95", "pose mAP50-95", "pose mAP50", "pose precision", "pose recall"}
    assert doc["protocol"] == "yolo" and doc["iou_type"] == "pose"
    with pytest.raises(DetevalError, match="pose dataset"):
        load_yolo_dataset(data)  # the detect reader still refuses a pose dataset


def test_dataset_sigmas_under_the_newest_profile_only(tmp_path):
    data, pred_dir, _, _ = _pose_dataset(tmp_path, 3, 5, 3, sigmas=True)
    new = evaluate_yolo_pose_files(data, pred_dir, profile="ultralytics")
    old = evaluate_yolo_pose_files(data, pred_dir, profile="ultralytics-8.4.37")
    assert not any("kpt_oks_sigmas" in w for w in new.warnings)
    assert any("kpt_oks_sigmas" in w for w in old.warnings)
    pds = load_pose_dataset(data)
    assert pds.sigmas is not None and len(pds.sigmas) == 5
    preds, kpts = load_pose_predictions(pred_dir, pds)
    assert kpts.shape == (len(preds), 5, 3)


@pytest.mark.parametrize(
    ("yaml_extra", "row", "match"),
    [
        ("kpt_shape: [17, 4]\n", None, "kpt_shape must be"),
        ("kpt_shape: [3, 3]\nflip_idx: [0, 0, 1]\n", None, "flip_idx must be a permutation"),
        ("kpt_shape: [3, 3]\nkpt_oks_sigmas: [0.1, 0]\n", None, "kpt_oks_sigmas must be 3"),
        ("kpt_shape: [2, 3]\n", "0 0.5 0.5 0.2 0.2 0.5 0.5 2 0.5", "columns"),
        ("kpt_shape: [2, 3]\n", "0 0.5 0.5 0.2 0.2 0.5 1.2 2 0.5 0.5 1", "above 1.01"),
        ("kpt_shape: [2, 2]\n", "0 0.5 0.5 0.2 0.2 -1 -1 0.5 0.5", "tolerance"),
        ("kpt_shape: [2, 3]\n", "0 0.5 0.5 0.2 0.2 0.5 x 2 0.5 0.5 1", "not a number"),
        ("kpt_shape: [2, 3]\n", "2 0.5 0.5 0.2 0.2 0.5 0.5 2 0.5 0.5 1", "not below nc"),
    ],
)
def test_bad_pose_input_names_file_and_line(tmp_path, yaml_extra, row, match):
    write_image(tmp_path / "images" / "val" / "a.png", 20, 20)
    (tmp_path / "labels" / "val").mkdir(parents=True)
    (tmp_path / "labels" / "val" / "a.txt").write_text((row or "") + "\n")
    (tmp_path / "data.yaml").write_text(f"path: {tmp_path}\nval: images/val\nnames: [a, b]\n" + yaml_extra)
    with pytest.raises(DetevalError, match=match) as exc:
        load_pose_dataset(tmp_path / "data.yaml")
    assert ("line 1" in str(exc.value)) == (row is not None)


def test_duplicate_rows_dropped_as_ultralytics(tmp_path):
    write_image(tmp_path / "images" / "val" / "a.png", 20, 20)
    (tmp_path / "labels" / "val").mkdir(parents=True)
    rows = ["1 0.5 0.5 0.2 0.2 0.5 0.5 2", "0 0.5 0.5 0.2 0.2 0.5 0.5 2", "1 0.5 0.5 0.2 0.2 0.5 0.5 2"]
    (tmp_path / "labels" / "val" / "a.txt").write_text("\n".join(rows) + "\n")
    (tmp_path / "data.yaml").write_text(
        f"path: {tmp_path}\nval: images/val\nnames: [a, b]\nkpt_shape: [1, 3]\n"
    )
    with pytest.raises(DetevalError, match="exact duplicate of line 1"):
        load_pose_dataset(tmp_path / "data.yaml")
    with pytest.warns(Warning, match="1 duplicate labels removed"):
        pds = load_pose_dataset(tmp_path / "data.yaml", duplicates="drop")
    assert pds.ds.labels.cls.tolist() == [0, 1]  # np.unique's order, as Ultralytics keeps the rows


def test_duplicate_rows_differing_in_a_zeros_sign_are_an_error(tmp_path):
    # np.unique (Ultralytics' rule) compares values, so -0.0 equals 0.0: the rows are duplicates, an error
    # unless dropped, and never dropped silently under duplicates="error".
    write_image(tmp_path / "images" / "val" / "a.png", 20, 10)
    (tmp_path / "labels" / "val").mkdir(parents=True)
    rows = "0 0.5 0.5 0.2 0.2 0.0 0.5\n0 0.5 0.5 0.2 0.2 -0.0 0.5\n"
    (tmp_path / "labels" / "val" / "a.txt").write_text(rows)
    (tmp_path / "data.yaml").write_text(f"path: {tmp_path}\nval: images/val\nnames: [a]\nkpt_shape: [1, 2]\n")
    with pytest.raises(DetevalError, match="line 2: exact duplicate of line 1"):
        load_pose_dataset(tmp_path / "data.yaml")
    with pytest.warns(Warning, match="1 duplicate labels removed"):
        pds = load_pose_dataset(tmp_path / "data.yaml", duplicates="drop")
    assert len(pds.ds.labels.cls) == 1


@pytest.mark.parametrize(("k", "dim", "sigmas"), [(17, 3, False), (5, 3, True), (17, 2, True)])
def test_coco_profile_equals_pycocotools_on_the_converted_split(tmp_path, k, dim, sigmas):
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    from deteval.detection.coco_params import COCO_KPT_OKS_SIGMAS
    from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco

    data, pred_dir, _, _ = _pose_dataset(tmp_path, 5, k, dim, sigmas=sigmas)
    r = evaluate_yolo_pose_files(data, pred_dir, profile="coco")
    pds = load_pose_dataset(data)
    preds, kpts = load_pose_predictions(pred_dir, pds)
    gt = dataset_to_coco(pds.ds)
    for n, ann in enumerate(gt["annotations"]):
        ann["keypoints"] = pds.keypoints[n].reshape(-1).tolist()
        ann["num_keypoints"] = int((pds.keypoints[n, :, 2] > 0).sum())
    res = predictions_to_coco(pds.ds, preds)
    for n, rec in enumerate(res):
        rec["keypoints"] = kpts[n].reshape(-1).tolist()
    with contextlib.redirect_stdout(io.StringIO()):
        cg = COCO()
        cg.dataset = gt
        cg.createIndex()
        E = COCOeval(cg, cg.loadRes(res), "keypoints")
        E.params.kpt_oks_sigmas = np.array(pds.sigmas) if sigmas else COCO_KPT_OKS_SIGMAS
        E.evaluate()
        E.accumulate()
        E.summarize()
    assert [r.summary["pose mAP50-95"], r.summary["pose mAP50"], r.summary["pose mAP75"]] == E.stats[
        :3
    ].tolist()
    assert r.summary["pose mAP50-95"] > 0


def test_coco_profile_needs_sigmas_for_another_skeleton(tmp_path):
    data, pred_dir, _, _ = _pose_dataset(tmp_path, 2, 5, 3)
    with pytest.raises(DetevalError, match="needs OKS sigmas for 5 keypoints"):
        evaluate_yolo_pose_files(data, pred_dir, profile="coco")


@pytest.mark.parametrize("seed", range(3))
def test_corrupt_image_left_out_with_its_labels_and_predictions(tmp_path, seed):
    """Ultralytics' dataset check runs in every task: a pose image that fails it is left out with its labels and
    its predictions (txt files and JSON records, keypoints included), as Ultralytics leaves it out."""
    import warnings

    from deteval.errors import DetevalWarning

    k, dim = 5, 3
    data, pred_dir, pred_json, t = _pose_dataset(tmp_path, seed, k, dim)
    (tmp_path / "images" / "val" / "im2.png").write_bytes(b"")
    new = {0: 0, 1: 1, 3: 2, 4: 3}
    g = [n for n, i in enumerate(t["gi"]) if i != 2]
    d = [n for n, i in enumerate(t["di"]) if i != 2]
    gt = BoxTable.from_arrays(
        [new[t["gi"][n]] for n in g],
        [t["gc"][n] for n in g],
        np.asarray([t["gb"][n] for n in g]).reshape(-1, 4),
    )
    dt = BoxTable.from_arrays(
        [new[t["di"][n]] for n in d],
        [t["dc"][n] for n in d],
        np.asarray([t["db"][n] for n in d]).reshape(-1, 4),
        [t["conf"][n] for n in d],
    )
    gk = np.asarray([t["gk"][n] for n in g]).reshape(-1, k, 3)
    dk = np.asarray([t["dk"][n] for n in d]).reshape(-1, k, 3)
    box, pose = evaluate_ultralytics_pose(gt, gk, dt, dk, 4, "ultralytics", pose_sigmas((k, dim), "product"))
    for preds in (pred_dir, pred_json):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = evaluate_yolo_pose_files(data, preds)
        assert r.n_images == 4 and r.instances == len(g)
        assert r.summary["mAP50-95"] == pytest.approx(box.map, abs=1e-12)
        assert r.summary["pose mAP50-95"] == pytest.approx(pose.map, abs=1e-12)
        msgs = [str(x.message) for x in w if issubclass(x.category, DetevalWarning)]
        assert any("im2.png: ignoring corrupt image/label: not a readable image" in m for m in msgs)


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        # a row is checked whole (its column count with its values) before the next row
        ("0 0.5 0.5 0.2 0.2 x 0.5\n0 0.5 0.5 0.2 0.2 0.5\n", "", r"a\.txt: line 1: a value is not a number"),
        ("0 0.5 0.5 0.2 0.2 0.5\n0 0.5 0.5 0.2 0.2 x 0.5\n", "", r"a\.txt: line 1: 6 columns; a pose row"),
        ("7 0.5 0.5 0.2 0.2 1.5 0.5\n", "", r"a\.txt: line 1: class 7 is not below nc=2"),
        ("0 0.5 0.5 0.2 0.2 1.5 -0.5\n", "", r"a\.txt: line 1: keypoint coordinate above 1\.01"),
        # duplicates after every row of the file, files in order
        (
            "0 0.5 0.5 0.2 0.2 0.5 0.5\n0 0.5 0.5 0.2 0.2 0.5 0.5\n0 0.5 0.5 0.2 0.2 0.5 -1\n",
            "",
            "line 3: negative",
        ),
        (
            "0 0.5 0.5 0.2 0.2 0.5 0.5\n0 0.5 0.5 0.2 0.2 0.5 0.5\n",
            "1 nan",
            r"a\.txt: line 2: exact duplicate",
        ),
        (
            "0 0.5 0.5 0.2 0.2 0.5 0.5\n",
            "1 0.5 0.5 0.2 0.2 nan 0.5\n1 0.5",
            r"b\.txt: line 1: NaN or infinite",
        ),
    ],
)
def test_the_first_of_several_faults_is_the_one_a_row_by_row_reader_meets(tmp_path, a, b, match):
    for stem, rows in (("a", a), ("b", b)):
        write_image(tmp_path / "images" / "val" / f"{stem}.png", 20, 20)
        (tmp_path / "labels" / "val").mkdir(parents=True, exist_ok=True)
        (tmp_path / "labels" / "val" / f"{stem}.txt").write_text(rows)
    (tmp_path / "data.yaml").write_text(
        f"path: {tmp_path}\nval: images/val\nnames: [a, b]\nkpt_shape: [1, 2]\n"
    )
    with pytest.raises(DetevalError, match=match):
        load_pose_dataset(tmp_path / "data.yaml")


def test_prediction_faults_in_file_order_the_stem_before_the_rows(tmp_path):
    yaml, pred_dir, _, _ = _pose_dataset(tmp_path, 0, 2, 3)
    pds = load_pose_dataset(yaml)
    (pred_dir / "im0.txt").write_text("0 0.5 0.5 0.2 0.2 0.5 0.5 0.5 0.5 0.5 0.5 2\n0 0.5\n")
    (pred_dir / "a.txt").write_text("0 x\n")
    with pytest.raises(DetevalError, match=r"a\.txt: no image with the stem 'a'"):
        load_pose_predictions(pred_dir, pds)
    (pred_dir / "a.txt").unlink()
    with pytest.raises(DetevalError, match=r"im0\.txt: line 1: confidence 2 outside \[0, 1\]"):
        load_pose_predictions(pred_dir, pds)
