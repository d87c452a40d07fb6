"""Write the expected Ultralytics OBB numbers that tests/test_yolo_obb.py compares deteval against.

The OBB validator (``yolo val`` of an OBB model) scores oriented boxes ``(cx, cy, w, h, r)`` with
``batch_probiou`` (labels × predictions), then the detect validator's ``match_predictions``, ``ap_per_class``
and ``Metric``. This script runs that code of several installed versions on fixed seeded cases, and writes

* ``tests/data/ultralytics/obb-cases.json``: the inputs, made with numpy alone (float32 values, so every
  environment that writes them gets the same numbers): boxes at random angles, at exactly ±90° and 0, thin
  and zero-width boxes, duplicates, exact score ties;
* ``tests/data/ultralytics/obb-expected-<version>.json``: per case, what that version computes.

Regenerate (Ultralytics and torch in their own venv, never deteval's dependencies; see
scripts/ultralytics_expected.py for how the version folders are made)::

    /work/venvs/ultra/bin/python scripts/ultralytics_obb_expected.py --versions-dir /work/venvs/ultra-v

Each version runs in its own process with ``PYTHONPATH`` pointing at its folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "ultralytics"
SEED = 20261207


def _f32(a: Any) -> list:
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def _random_case(rng: np.random.Generator, name: str, *, ties: bool = False) -> dict[str, Any]:
    """``ties``: scores from three values only and some labels repeated exactly."""
    n_cls = int(rng.integers(1, 4))
    images = []
    for _ in range(int(rng.integers(1, 6))):
        n_gt = int(rng.integers(0, 8))
        gt = np.c_[
            rng.uniform(0, 800, (n_gt, 2)),
            rng.uniform(6, 120, (n_gt, 2)),
            rng.choice([np.pi / 2, -np.pi / 2, 0.0, 1.0], n_gt) * (rng.random(n_gt) < 0.3)
            + rng.uniform(-np.pi / 2, np.pi / 2, n_gt) * (rng.random(n_gt) >= 0.3),
        ]
        if n_gt and rng.random() < 0.3:
            gt[0, 2] = 0.0  # a zero-width box
        gt_cls = rng.integers(0, n_cls, n_gt)
        if ties and n_gt:
            twin = rng.random(n_gt) < 0.4
            gt, gt_cls = np.concatenate([gt, gt[twin]]), np.concatenate([gt_cls, gt_cls[twin]])
        dets, det_cls = [], []
        for g, c in zip(gt, gt_cls):
            for _ in range(int(rng.choice([0, 1, 1, 1, 2, 3]))):
                s = rng.choice([0.02, 0.06, 0.15])
                d = g + np.r_[rng.normal(0, s, 2) * g[2:4], rng.normal(0, s, 2) * g[2:4], rng.normal(0, s)]
                d[2:4] = np.abs(d[2:4])
                dets.append(d)
                det_cls.append(c if rng.random() < 0.85 else rng.integers(0, n_cls))
        for _ in range(int(rng.integers(0, 4))):
            dets.append(np.r_[rng.uniform(0, 800, 2), rng.uniform(6, 120, 2), rng.uniform(-np.pi, np.pi)])
            det_cls.append(rng.integers(0, n_cls))
        d = np.asarray(dets, dtype=np.float64).reshape(-1, 5)
        conf = rng.choice([0.25, 0.5, 0.75], len(d)) if ties else rng.uniform(0.001, 1.0, len(d))
        conf = np.asarray(conf, dtype=np.float32)
        order = np.argsort(-conf, kind="stable")  # NMS hands detections over in descending confidence
        images.append(
            {
                "gt_cls": [int(c) for c in gt_cls],
                "gt_xywhr": _f32(gt.reshape(-1, 5)),
                "det_cls": [int(c) for c in np.asarray(det_cls, dtype=np.int64)[order]],
                "det_xywhr": _f32(d[order]),
                "conf": _f32(conf[order]),
            }
        )
    return {"name": name, "images": images}


def make_cases() -> list[dict[str, Any]]:
    """A perfect case, 30 seeded random cases and 6 with exact ties."""
    box = [
        [100.0, 100.0, 60.0, 20.0, 0.5],
        [300.0, 200.0, 40.0, 40.0, -np.pi / 2],
        [50.0, 400.0, 80.0, 10.0, 0.0],
    ]
    one = {"gt_cls": [0, 1, 0], "gt_xywhr": _f32(box), "det_cls": [0, 1, 0], "det_xywhr": _f32(box)}
    cases: list[dict[str, Any]] = [{"name": "perfect", "images": [{**one, "conf": _f32([0.9, 0.8, 0.7])}]}]
    rng = np.random.default_rng(SEED)
    cases += [_random_case(rng, f"random_{k:02d}") for k in range(30)]
    tie_rng = np.random.default_rng(SEED + 1)
    cases += [_random_case(tie_rng, f"ties_{k:02d}", ties=True) for k in range(6)]
    return cases


def _run_version() -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ultralytics_expected import install_shims

    install_shims()  # (8.0.239 under numpy 2.4)
    import torch
    import ultralytics
    from ultralytics.models.yolo.obb import OBBValidator
    from ultralytics.utils.metrics import Metric, ap_per_class, batch_probiou

    validator = OBBValidator.__new__(OBBValidator)
    validator.iouv = torch.linspace(0.5, 0.95, 10)  # as DetectionValidator.__init__ sets it
    cases = json.loads((OUT / "obb-cases.json").read_text())["cases"]
    out: dict[str, Any] = {}
    for case in cases:
        tps, confs, pcls, tcls = [], [], [], []
        for im in case["images"]:
            gt_cls = torch.tensor(im["gt_cls"], dtype=torch.float32)
            det_cls = torch.tensor(im["det_cls"], dtype=torch.float32)
            if len(gt_cls) == 0 or len(det_cls) == 0:  # OBBValidator._process_batch's early return
                tp = np.zeros((len(det_cls), 10), dtype=bool)
            else:
                gt = torch.tensor(im["gt_xywhr"], dtype=torch.float32).reshape(-1, 5)
                det = torch.tensor(im["det_xywhr"], dtype=torch.float32).reshape(-1, 5)
                iou = batch_probiou(gt, det)  # (labels × predictions, as _process_batch)
                tp = validator.match_predictions(det_cls, gt_cls, iou).cpu().numpy()
            tps.append(tp)
            confs.append(np.asarray(im["conf"], dtype=np.float32))
            pcls.append(det_cls.numpy())
            tcls.append(gt_cls.numpy())
        tp, conf, pred_cls, target_cls = (np.concatenate(x, 0) for x in (tps, confs, pcls, tcls))
        metric = Metric()
        results = ap_per_class(tp, conf, pred_cls, target_cls, names={})
        metric.nc = 5
        metric.update(results[2:])
        mp, mr, map50, map5095 = (float(v) for v in metric.mean_results())
        out[case["name"]] = {
            "tp": tp.astype(int).tolist(),
            "ap_class_index": [int(c) for c in metric.ap_class_index],
            "p": [float(v) for v in metric.p],
            "r": [float(v) for v in metric.r],
            "ap": np.asarray(metric.all_ap, dtype=np.float64).tolist(),
            "precision": mp,
            "recall": mr,
            "mAP50": float(map50),
            "mAP75": float(metric.map75),
            "mAP50-95": float(map5095),
        }
    return {
        "tool": "ultralytics",
        "version": ultralytics.__version__,
        "torch": torch.__version__,
        "cases": out,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions-dir", type=Path, help="one folder per Ultralytics version (pip --target)")
    ap.add_argument("--versions", nargs="*", help="only these version folders")
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # write one version's numbers to this file
    args = ap.parse_args()
    if args.worker:  # a file, not stdout: some versions print their settings banner there
        args.worker.write_text(json.dumps(_run_version()))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "obb-cases.json").write_text(json.dumps({"seed": SEED, "cases": make_cases()}) + "\n")
    if args.versions_dir is None:
        return
    for folder in sorted(args.versions_dir.iterdir()):
        if args.versions and folder.name not in args.versions:
            continue
        env = {**os.environ, "PYTHONPATH": str(folder), "YOLO_OFFLINE": "1"}
        tmp = OUT / "obb-worker.json.tmp"
        subprocess.run([sys.executable, __file__, "--worker", str(tmp)], env=env, check=True)
        data = json.loads(tmp.read_text())
        tmp.unlink()
        (OUT / f"obb-expected-{data['version']}.json").write_text(json.dumps(data) + "\n")
        print(f"ultralytics {data['version']}: {len(data['cases'])} cases")


if __name__ == "__main__":
    main()
