"""torchmetrics' numbers for tests/data/torchmetrics/random_boxes.json (run where torch and torchmetrics are
installed; the tests read the file and need neither).

    python scripts/torchmetrics_expected.py      # torchmetrics 1.9.0, torch 2.13.0 (CPU), pycocotools

Random boxes (seeded numpy, xyxy, 3 classes, 40 images) scored by ``torchmetrics.detection.MeanAveragePrecision``
with its defaults (backend pycocotools, IoU thresholds ``torch.linspace(0.5, 0.95, 10)`` in float32, the
boxes as float32 tensors); then with the IoU thresholds given as the doubles pycocotools uses (``np.linspace``);
then also the recall thresholds as doubles (``np.linspace(0, 1, 101)``); then also with float64 boxes: which
isolates what each float32 rounding changes. torchmetrics' default thresholds are written too. The result keys, the inputs and the versions are written, so that tests/test_api_parity.py
can say exactly where deteval (pycocotools' numbers) and torchmetrics differ, and why."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "torchmetrics" / "random_boxes.json"


def random_case(seed: int = 0, images: int = 40) -> tuple[list[dict], list[dict]]:
    """(predictions, targets) as plain lists: xyxy boxes of all sizes (small, medium and large areas)."""
    rng = np.random.default_rng(seed)
    preds, targets = [], []
    for _ in range(images):
        m = int(rng.integers(1, 8))
        xy = rng.uniform(0, 400, (m, 2))
        wh = rng.uniform(4, 160, (m, 2))
        gt = np.round(np.c_[xy, xy + wh], 2)
        labels = rng.integers(0, 3, m)
        keep = rng.random(m) < 0.8
        det = gt[keep] + rng.normal(0, 6, (int(keep.sum()), 4))
        extra = int(rng.integers(0, 4))
        exy = rng.uniform(0, 400, (extra, 2))
        det = np.round(np.r_[det, np.c_[exy, exy + rng.uniform(4, 120, (extra, 2))]], 2)
        det[:, 2:] = np.maximum(det[:, 2:], det[:, :2] + 1)
        dlab = np.r_[labels[keep], rng.integers(0, 3, extra)]
        scores = np.round(rng.random(det.shape[0]), 4)
        preds.append({"boxes": det.tolist(), "scores": scores.tolist(), "labels": dlab.tolist()})
        targets.append({"boxes": gt.tolist(), "labels": labels.tolist()})
    return preds, targets


def _torchvision_box_convert() -> None:
    """torchmetrics needs torchvision only for ``box_convert`` (xyxy to xywh) on the pycocotools backend. Where
    torchvision cannot load (its PyPI wheel against a CPU-only torch), its arithmetic is supplied: ``x1, y1,
    x2 - x1, y2 - y1`` in the boxes' dtype, as ``torchvision.ops.boxes._box_xyxy_to_xywh``."""
    import sys
    import types

    try:
        import torchvision.ops  # noqa: F401

        return
    except Exception:  # any failure to load it: supply box_convert
        pass
    import torch
    import torchmetrics.detection.mean_ap as mean_ap

    def box_convert(boxes: torch.Tensor, in_fmt: str, out_fmt: str) -> torch.Tensor:
        assert (in_fmt, out_fmt) == ("xyxy", "xywh"), (in_fmt, out_fmt)
        x1, y1, x2, y2 = boxes.unbind(-1)
        return torch.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)

    ops = types.ModuleType("torchvision.ops")
    ops.box_convert = box_convert  # type: ignore[attr-defined]
    pkg = types.ModuleType("torchvision")
    pkg.ops = ops  # type: ignore[attr-defined]
    sys.modules.update({"torchvision": pkg, "torchvision.ops": ops})
    mean_ap._TORCHVISION_AVAILABLE = True


def _torchmetrics(
    preds: list[dict], targets: list[dict], dtype: str = "float32", **kw: object
) -> dict[str, float]:
    import torch
    from torchmetrics.detection.mean_ap import (
        MeanAveragePrecision,
    )  # (the package exports it only with torchvision)

    _torchvision_box_convert()
    m = MeanAveragePrecision(**kw)
    floats = getattr(torch, dtype)
    m.update(
        [{k: torch.tensor(v, dtype=floats if k != "labels" else None) for k, v in p.items()} for p in preds],
        [
            {k: torch.tensor(v, dtype=floats if k != "labels" else None) for k, v in t.items()}
            for t in targets
        ],
    )
    r = m.compute()
    return {k: float(v) for k, v in r.items() if k != "classes" and v.ndim == 0}


def _default_thresholds() -> dict[str, list[float]]:
    """torchmetrics' default IoU and recall thresholds, as it hands them to pycocotools."""
    from torchmetrics.detection.mean_ap import MeanAveragePrecision

    _torchvision_box_convert()
    m = MeanAveragePrecision()
    return {"iou_thresholds": list(m.iou_thresholds), "rec_thresholds": list(m.rec_thresholds)}


def main() -> None:
    import pycocotools
    import torch
    import torchmetrics

    preds, targets = random_case()
    doc = {
        "versions": {
            "torchmetrics": torchmetrics.__version__,
            "torch": torch.__version__,
            "pycocotools": getattr(pycocotools, "__version__", "2.0"),
        },
        "preds": preds,
        "targets": targets,
        "torchmetrics": _torchmetrics(preds, targets),
        "torchmetrics_double_iou_thresholds": _torchmetrics(
            preds, targets, iou_thresholds=np.linspace(0.5, 0.95, 10).tolist()
        ),
        "torchmetrics_double_thresholds": _torchmetrics(
            preds,
            targets,
            iou_thresholds=np.linspace(0.5, 0.95, 10).tolist(),
            rec_thresholds=np.linspace(0.0, 1.0, 101).tolist(),
        ),
        "torchmetrics_float64_boxes_double_thresholds": _torchmetrics(
            preds,
            targets,
            "float64",
            iou_thresholds=np.linspace(0.5, 0.95, 10).tolist(),
            rec_thresholds=np.linspace(0.0, 1.0, 101).tolist(),
        ),
        "default_thresholds": _default_thresholds(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
