"""Write the expected Ultralytics numbers that tests/test_yolo_ultralytics.py compares deteval against.

Ultralytics pulls in torch (~6 GB), so it is not a test dependency. This script runs Ultralytics' OWN metric
code (``ultralytics.utils.metrics.box_iou``, ``DetectionValidator.match_predictions``, ``ap_per_class`` and
``Metric``) for several pinned versions on fixed cases, and writes

* ``tests/data/ultralytics/cases.json``: the inputs (seeded random cases and the worked examples of issue 23),
  made with numpy alone, so they are the same whichever environment writes them;
* ``tests/data/ultralytics/expected-<version>.json``: per case, what that version computes.

Regenerate (x86_64, Python 3.11; torch comes from the local disk)::

    python3 -m venv /work/venvs/ultra && . /work/venvs/ultra/bin/activate
    pip install torch==2.14.1 torchvision==0.29.1 && pip install ultralytics tqdm pandas
    mkdir -p wheels && cd wheels && for v in 8.0.239 8.4.36 8.4.37 8.4.175 8.4.176 8.4.190; do
        pip download --no-deps ultralytics==$v
        pip install --no-deps --target /work/venvs/ultra-v/$v ultralytics-$v-py3-none-any.whl; done
    python scripts/ultralytics_expected.py --versions-dir /work/venvs/ultra-v

Each version runs in its own process with ``PYTHONPATH`` pointing at its folder. For 8.0.239 under numpy 2.4
two shims are installed before the import, neither touching the metric code: ``np.trapz = np.trapezoid``
(numpy removed the old name; the function is the same) and an empty ``hub_sdk`` module (a login client that
8.0 imports at start-up).
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


# ----------------------------------------------------------------------------------------------- the cases
def _f32(a: Any) -> list:
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def _image(gt_cls: Any, gt_xyxy: Any, det_cls: Any, det_xyxy: Any, conf: Any) -> dict[str, Any]:
    conf = np.asarray(conf, dtype=np.float32)
    order = np.argsort(-conf, kind="stable")  # NMS hands detections over in descending confidence
    # Coordinates stay float64 (Ultralytics rounds them to float32 itself), so that a float64 evaluator sees
    # the values a file would give it.
    det_xyxy = np.asarray(det_xyxy, dtype=np.float64).reshape(-1, 4)[order]
    return {
        "gt_cls": [int(c) for c in gt_cls],
        "gt_xyxy": np.asarray(gt_xyxy, dtype=np.float64).reshape(-1, 4).tolist(),
        "det_cls": [int(c) for c in np.asarray(det_cls, dtype=np.int64)[order]],
        "det_xyxy": det_xyxy.tolist(),
        "conf": _f32(conf[order]),
    }


def _random_case(rng: np.random.Generator, name: str, *, ties: bool = False) -> dict[str, Any]:
    """``ties``: scores from three values only, and some labels repeated exactly (equal IoUs)."""
    n_cls = int(rng.integers(1, 5))
    images = []
    for _ in range(int(rng.integers(1, 7))):
        n_gt = int(rng.integers(0, 9))
        xy = rng.uniform(0, 500, (n_gt, 2))
        wh = rng.uniform(8, 140, (n_gt, 2))
        gt = np.concatenate([xy, xy + wh], 1).astype(np.float32)
        gt_cls = rng.integers(0, n_cls, n_gt)
        if ties and n_gt:
            twin = rng.random(n_gt) < 0.4
            gt, gt_cls = np.concatenate([gt, gt[twin]]), np.concatenate([gt_cls, gt_cls[twin]])
        dets, det_cls = [], []
        for g, c in zip(gt, gt_cls):
            for _ in range(int(rng.choice([0, 1, 1, 1, 2, 3]))):  # misses, hits and duplicates
                size = np.array([g[2] - g[0], g[3] - g[1], g[2] - g[0], g[3] - g[1]])
                dets.append(g + rng.normal(0, rng.choice([0.02, 0.06, 0.15]), 4) * size)
                det_cls.append(c if rng.random() < 0.85 else rng.integers(0, n_cls))
        for _ in range(int(rng.integers(0, 5))):  # background false positives
            xy0 = rng.uniform(0, 500, 2)
            dets.append(np.concatenate([xy0, xy0 + rng.uniform(8, 140, 2)]))
            det_cls.append(rng.integers(0, n_cls))
        d = np.asarray(dets, dtype=np.float64).reshape(-1, 4)
        d = np.concatenate([np.minimum(d[:, :2], d[:, 2:]), np.maximum(d[:, :2], d[:, 2:])], 1)
        conf = rng.choice([0.25, 0.5, 0.75], len(d)) if ties else rng.uniform(0.001, 1.0, len(d))
        images.append(_image(gt_cls, gt, det_cls, d, conf))
    return {"name": name, "images": images}


def _float32_threshold_case() -> dict[str, Any]:
    """One label and one detection whose IoU is >= 0.65 in float64 but < float32(0.65) in float32.

    Far from the origin, float32 rounds the corners by ~2e-4 pixels, enough to move a 100-pixel box's IoU
    across the threshold.
    """
    t32 = np.float32(0.65)
    rng = np.random.default_rng(0)
    for _ in range(200000):
        x0 = rng.uniform(1000, 8000)
        gt = np.array([x0, 0.0, x0 + 100.0, 100.0])
        det = np.array([x0, 0.0, x0 + 65.0 + rng.uniform(0, 3e-4), 100.0])
        inter64 = (det[2] - det[0]) * 100.0
        iou64 = inter64 / ((gt[2] - gt[0]) * 100.0 + inter64 - inter64)
        a, b = gt.astype(np.float32), det.astype(np.float32)
        inter = (b[2] - b[0]) * (b[3] - b[1])
        iou32 = inter / ((a[2] - a[0]) * (a[3] - a[1]) + inter - inter + np.float32(1e-7))
        if iou64 >= 0.65 and iou32 < t32:
            return {
                "name": "iou_0.65_float64_above_float32_below",
                "images": [_image([0], [gt], [0], [det], [0.9])],
            }
    raise RuntimeError("no float32/float64 disagreement found near 0.65")


def make_cases() -> list[dict[str, Any]]:
    """The worked examples of issue 23, 24 seeded random cases, and 6 with exact score and IoU ties."""
    box = [[10, 10, 60, 80], [100, 40, 180, 90], [200, 200, 260, 300]]
    cases: list[dict[str, Any]] = [
        {"name": "perfect", "images": [_image([0, 1, 0], box, [0, 1, 0], box, [0.9, 0.8, 0.7])]},
        {"name": "recall_half_precision_one", "images": [_image([0, 0], box[:2], [0], box[:1], [0.9])]},
        {
            # IoU (label x detection) given directly: [[0.9, 0.8], [0.0, 0.7]], detection 0 ranked first.
            "name": "iou_matrix_0.9_0.8_0_0.7",
            "iou": [[0.9, 0.8], [0.0, 0.7]],
            "images": [_image([0, 0], [[0, 0, 1, 1]] * 2, [0, 0], [[0, 0, 1, 1]] * 2, [0.9, 0.8])],
        },
        _float32_threshold_case(),
        {"name": "no_detections", "images": [_image([0, 1], box[:2], [], np.zeros((0, 4)), [])]},
        {
            "name": "prediction_only_class",
            "images": [_image([0], box[:1], [0, 2], box[:1] + box[2:], [0.9, 0.95])],
        },
    ]
    rng = np.random.default_rng(20261124)
    cases += [_random_case(rng, f"random_{k:02d}") for k in range(24)]
    # Exact ties, stated: deteval ranks them with the same numpy sort on the same float32 array.
    tie_rng = np.random.default_rng(7)
    cases += [_random_case(tie_rng, f"ties_{k:02d}", ties=True) for k in range(6)]
    return cases


# -------------------------------------------------------------------------- one version, in its own process
def install_shims() -> None:
    """What 8.0.239 needs under numpy 2.4 before its import (neither touches the metric code)."""
    import types

    if not hasattr(np, "trapz"):
        np.trapz = np.trapezoid  # type: ignore[attr-defined]
    try:
        import hub_sdk  # noqa: F401
    except ImportError:
        stub, cfg = types.ModuleType("hub_sdk"), types.ModuleType("hub_sdk.config")
        cfg.HUB_WEB_ROOT = cfg.HUB_API_ROOT = "unused"  # type: ignore[attr-defined]
        stub.config, stub.HUBClient = cfg, object  # type: ignore[attr-defined]
        sys.modules["hub_sdk"], sys.modules["hub_sdk.config"] = stub, cfg


def _run_version() -> dict[str, Any]:
    install_shims()
    import torch
    import ultralytics
    from ultralytics.models.yolo.detect import DetectionValidator
    from ultralytics.utils.metrics import Metric, ap_per_class, box_iou

    validator = DetectionValidator.__new__(DetectionValidator)
    validator.iouv = torch.linspace(0.5, 0.95, 10)  # as DetectionValidator.__init__ sets it
    cases = json.loads((OUT / "cases.json").read_text())["cases"]
    out: dict[str, Any] = {}
    for case in cases:
        tps, confs, pcls, tcls = [], [], [], []
        for im in case["images"]:
            gt_cls = torch.tensor(im["gt_cls"], dtype=torch.float32)
            det_cls = torch.tensor(im["det_cls"], dtype=torch.float32)
            conf = torch.tensor(im["conf"], dtype=torch.float32)
            if "iou" in case:
                iou = torch.tensor(case["iou"], dtype=torch.float32)
            else:
                iou = box_iou(
                    torch.tensor(im["gt_xyxy"]).reshape(-1, 4), torch.tensor(im["det_xyxy"]).reshape(-1, 4)
                )
            if len(gt_cls) == 0 or len(det_cls) == 0:  # DetectionValidator._process_batch's early return
                tp = np.zeros((len(det_cls), 10), dtype=bool)
            else:
                tp = validator.match_predictions(det_cls, gt_cls, iou).cpu().numpy()
            tps.append(tp)
            confs.append(conf.numpy())
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
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # write one version's numbers to this file
    args = ap.parse_args()
    if args.worker:  # a file, not stdout: some versions print their settings banner there
        args.worker.write_text(json.dumps(_run_version()))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cases.json").write_text(json.dumps({"seed": 20261124, "cases": make_cases()}) + "\n")
    if args.versions_dir is None:
        return
    for folder in sorted(args.versions_dir.iterdir()):
        env = {**os.environ, "PYTHONPATH": str(folder), "YOLO_OFFLINE": "1"}
        tmp = OUT / "worker.json.tmp"
        subprocess.run([sys.executable, __file__, "--worker", str(tmp)], env=env, check=True)
        data = json.loads(tmp.read_text())
        tmp.unlink()
        (OUT / f"expected-{data['version']}.json").write_text(json.dumps(data) + "\n")
        print(f"ultralytics {data['version']}: {len(data['cases'])} cases")


if __name__ == "__main__":
    main()
