"""Write the expected Ultralytics pose numbers that tests/test_yolo_pose.py compares deteval against.

As scripts/ultralytics_expected.py does for boxes, this runs Ultralytics' OWN metric code for several pinned
versions on fixed seeded cases: ``box_iou`` and ``kpt_iou`` (``ultralytics.utils.metrics``), the area
``ops.xyxy2xywh(bboxes)[:, 2:].prod(1) * 0.53`` of ``PoseValidator._process_batch``, the validator's
``match_predictions`` (once on box IoU, once on OKS), ``ap_per_class`` and ``Metric`` for the box and the pose
numbers. The sigmas are ``PoseValidator.init_metrics``' rule, read from the version's source: the dataset's
``kpt_oks_sigmas`` where that version reads them, else ``OKS_SIGMA`` for ``kpt_shape == [17, 3]``, else
``np.ones(K) / K``. It writes

* ``tests/data/ultralytics/pose-cases.json``: the inputs (numpy alone, the same in every environment);
* ``tests/data/ultralytics/pose-expected-<version>.json``: per case, what that version computes.

Run it with the Python of the Ultralytics venv and its version folders (see scripts/ultralytics_expected.py)::

    /work/venvs/ultra/bin/python scripts/ultralytics_pose_expected.py --versions-dir /work/venvs/ultra-v
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


def _f32(a: Any) -> list:
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def _pose_case(rng: np.random.Generator, name: str, kpt_shape: list[int], *, sigmas: bool = False) -> dict:
    """Images of people-like objects of 1–3 classes: labels with K keypoints (visibility 0/1/2, or, for
    ``[K, 2]``, 1 unless a coordinate is negative, as Ultralytics' loader sets it), detections near them
    (jittered boxes and keypoints, some of another class) and background detections."""
    k, ndim = kpt_shape
    n_cls = int(rng.integers(1, 4))
    images = []
    for _ in range(int(rng.integers(1, 6))):
        gt_cls, gt_xyxy, gt_kpts = [], [], []
        det_cls, det_xyxy, det_kpts = [], [], []
        for _ in range(int(rng.integers(0, 7))):
            x0, y0 = rng.uniform(0, 500, 2)
            w, h = rng.uniform(4, 160, 2)
            box = np.array([x0, y0, x0 + w, y0 + h])
            kx, ky = x0 + rng.uniform(0, w, k), y0 + rng.uniform(0, h, k)
            if ndim == 3:
                v = rng.choice([0, 1, 2], k, p=[0.25, 0.25, 0.5]) if rng.random() > 0.1 else np.zeros(k)
            else:
                v = np.ones(k)
                out = rng.random(k) < 0.1  # (a negative coordinate: not visible)
                kx[out] = -1.0
                v[out] = 0
            kp = np.stack([kx, ky, v], 1)
            kp[(v == 0) & (kx >= 0), :2] = 0
            c = int(rng.integers(0, n_cls))
            gt_cls.append(c)
            gt_xyxy.append(box)
            gt_kpts.append(kp)
            for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
                s = rng.choice([0.01, 0.04, 0.1, 0.3]) * max(w, h)
                det_xyxy.append(box + rng.normal(0, 0.3 * s, 4))
                dk = np.stack([kx + rng.normal(0, s, k), ky + rng.normal(0, s, k), rng.random(k)], 1)
                det_kpts.append(dk)
                det_cls.append(c if rng.random() < 0.85 else int(rng.integers(0, n_cls)))
        for _ in range(int(rng.integers(0, 4))):
            x0, y0 = rng.uniform(0, 500, 2)
            w, h = rng.uniform(4, 160, 2)
            det_xyxy.append(np.array([x0, y0, x0 + w, y0 + h]))
            det_kpts.append(
                np.stack([x0 + rng.uniform(0, w, k), y0 + rng.uniform(0, h, k), rng.random(k)], 1)
            )
            det_cls.append(int(rng.integers(0, n_cls)))
        conf = np.asarray(rng.uniform(0.001, 1.0, len(det_cls)), dtype=np.float32)
        order = np.argsort(-conf, kind="stable")  # NMS hands detections over in descending confidence
        d = np.asarray(det_xyxy, dtype=np.float64).reshape(-1, 4)
        d = np.concatenate([np.minimum(d[:, :2], d[:, 2:]), np.maximum(d[:, :2], d[:, 2:])], 1)[order]
        images.append(  # (coordinates to 1/100 pixel: a smaller file, the same kind of numbers)
            {
                "gt_cls": gt_cls,
                "gt_xyxy": np.round(np.asarray(gt_xyxy, dtype=np.float64).reshape(-1, 4), 2).tolist(),
                "gt_kpts": np.round(np.asarray(gt_kpts, dtype=np.float64).reshape(-1, k, 3), 2).tolist(),
                "det_cls": [int(c) for c in np.asarray(det_cls, dtype=np.int64).reshape(-1)[order]],
                "det_xyxy": np.round(d, 2).tolist(),
                "det_kpts": np.round(
                    np.asarray(det_kpts, dtype=np.float64).reshape(-1, k, 3)[order], 2
                ).tolist(),
                "conf": _f32(conf[order]),
            }
        )
    case: dict[str, Any] = {"name": name, "kpt_shape": kpt_shape, "images": images}
    if sigmas:
        case["kpt_oks_sigmas"] = [float(round(s, 4)) for s in rng.uniform(0.02, 0.11, k)]
    return case


def make_cases() -> list[dict[str, Any]]:
    """Seeded cases for skeletons of 1, 5, 17 (``[17, 3]``: COCO's sigmas; ``[17, 2]``: uniform) and 68
    points, and some with the dataset's own sigmas."""
    rng = np.random.default_rng(20261207)
    cases = []
    for shape in ([1, 3], [5, 3], [17, 3], [17, 2], [68, 3], [5, 2]):
        cases += [_pose_case(rng, f"pose_{shape[0]}x{shape[1]}_{j:02d}", shape) for j in range(8)]
    cases += [_pose_case(rng, f"pose_sigmas_{j:02d}", [5, 3], sigmas=True) for j in range(4)]
    return cases


# -------------------------------------------------------------------------- one version, in its own process
def _run_version() -> dict[str, Any]:
    import inspect
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
    import torch
    import ultralytics
    from ultralytics.models.yolo.pose import PoseValidator
    from ultralytics.utils import ops
    from ultralytics.utils.metrics import OKS_SIGMA, Metric, ap_per_class, box_iou, kpt_iou

    validator = PoseValidator.__new__(PoseValidator)
    validator.iouv = torch.linspace(0.5, 0.95, 10)  # as DetectionValidator.__init__ sets it
    reads_dataset_sigmas = "kpt_oks_sigmas" in inspect.getsource(PoseValidator.init_metrics)
    cases = json.loads((OUT / "pose-cases.json").read_text())["cases"]
    out: dict[str, Any] = {}
    for case in cases:
        nkpt = case["kpt_shape"][0]
        if case.get("kpt_oks_sigmas") and reads_dataset_sigmas:
            sigma = np.array(case["kpt_oks_sigmas"], dtype=np.float32).flatten()
        elif case.get("kpt_oks_sigmas"):
            continue  # (this version ignores the dataset's sigmas: nothing new to check)
        else:
            sigma = OKS_SIGMA if case["kpt_shape"] == [17, 3] else np.ones(nkpt) / nkpt
        tps, tps_p, confs, pcls, tcls = [], [], [], [], []
        for im in case["images"]:
            gt_cls = torch.tensor(im["gt_cls"], dtype=torch.float32)
            det_cls = torch.tensor(im["det_cls"], dtype=torch.float32)
            conf = torch.tensor(im["conf"], dtype=torch.float32)
            if len(gt_cls) == 0 or len(det_cls) == 0:  # _process_batch's early returns
                tp = np.zeros((len(det_cls), 10), dtype=bool)
                tp_p = np.zeros((len(det_cls), 10), dtype=bool)
            else:
                gt_xyxy = torch.tensor(im["gt_xyxy"], dtype=torch.float32).reshape(-1, 4)
                iou = box_iou(gt_xyxy, torch.tensor(im["det_xyxy"], dtype=torch.float32).reshape(-1, 4))
                tp = validator.match_predictions(det_cls, gt_cls, iou).cpu().numpy()
                area = ops.xyxy2xywh(gt_xyxy)[:, 2:].prod(1) * 0.53
                gk = torch.tensor(im["gt_kpts"], dtype=torch.float32).reshape(-1, nkpt, 3)
                dk = torch.tensor(im["det_kpts"], dtype=torch.float32).reshape(-1, nkpt, 3)
                oks = kpt_iou(gk, dk, sigma=sigma, area=area)
                tp_p = validator.match_predictions(det_cls, gt_cls, oks).cpu().numpy()
            tps.append(tp)
            tps_p.append(tp_p)
            confs.append(conf.numpy())
            pcls.append(det_cls.numpy())
            tcls.append(gt_cls.numpy())
        tp, tp_p, conf, pred_cls, target_cls = (np.concatenate(x, 0) for x in (tps, tps_p, confs, pcls, tcls))
        entry: dict[str, Any] = {}
        for key, t in (("box", tp), ("pose", tp_p)):
            metric = Metric()
            metric.nc = 3
            metric.update(ap_per_class(t, conf, pred_cls, target_cls, names={})[2:])
            mp, mr, map50, map5095 = (float(v) for v in metric.mean_results())
            entry[key] = {
                "tp": t.astype(int).tolist(),
                "ap_class_index": [int(c) for c in metric.ap_class_index],
                "p": [float(v) for v in metric.p],
                "r": [float(v) for v in metric.r],
                "ap": np.asarray(metric.all_ap, dtype=np.float64).tolist(),
                "precision": mp,
                "recall": mr,
                "mAP50": float(map50),
                "mAP50-95": float(map5095),
            }
        out[case["name"]] = entry
    return {
        "tool": "ultralytics",
        "version": ultralytics.__version__,
        "torch": torch.__version__,
        "reads_dataset_sigmas": reads_dataset_sigmas,
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
    (OUT / "pose-cases.json").write_text(json.dumps({"seed": 20261207, "cases": make_cases()}) + "\n")
    if args.versions_dir is None:
        return
    for folder in sorted(args.versions_dir.iterdir()):
        env = {**os.environ, "PYTHONPATH": str(folder), "YOLO_OFFLINE": "1"}
        tmp = OUT / "pose-worker.json.tmp"
        subprocess.run([sys.executable, __file__, "--worker", str(tmp)], env=env, check=True)
        data = json.loads(tmp.read_text())
        tmp.unlink()
        (OUT / f"pose-expected-{data['version']}.json").write_text(json.dumps(data) + "\n")
        print(f"ultralytics {data['version']}: {len(data['cases'])} cases")


if __name__ == "__main__":
    main()
