"""Write the confusion matrices Ultralytics' own ``ConfusionMatrix`` computes, for
tests/test_yolo_confusion_ultralytics.py.

For each Ultralytics version in ``--versions-dir`` (one folder per version, ``pip install --no-deps --target``;
the environment and the commands are those of scripts/ultralytics_expected.py's docstring), in its own
process with ``PYTHONPATH`` at that folder, this runs ``ultralytics.utils.metrics.ConfusionMatrix`` as that
version's ``DetectionValidator`` drives it, on

* every case of ``tests/data/ultralytics/cases.json`` (scripts/ultralytics_expected.py writes it), and
* the cases this script writes to ``tests/data/ultralytics/confusion-cases.json`` (made with numpy alone): an
  IoU of exactly float32(0.45), a confidence of exactly 0.25, a cross-class match, a label with only distant
  detections, detections in an image without labels, a lower-ranked detection of higher IoU, 310 detections
  in one image (``max_det`` = 300),

under ``yolo val --conf`` unset (the validator's 0.001) and 0.1, 0.25, 0.5, and writes
``tests/data/ultralytics/confusion-expected.json``: per version, per case, per ``--conf``, the matrix
(rows predicted, columns true, background last), and per case the arrays that ``ConfusionMatrix.plot`` hands
to the drawing call (normalized and not; NaN as null), captured there; for three versions also the normalized
array it draws of a seeded matrix of 100 classes (``large_matrix``), which 8.3.x and later thin out.

What is Ultralytics' own and what is this script's:

* the validator's part is reproduced, from its source: NMS keeps ``conf > --conf`` (float32), at most 300 per
  image, in descending confidence; ``--conf`` unset is 0.001 (``BaseValidator``); the matrix receives
  ``--conf`` where the validator passes it (``ConfusionMatrix(nc, conf=args.conf)`` up to 8.3.x,
  ``process_batch(..., conf=args.conf)`` after); up to 8.3.54 the validator calls ``process_batch`` only for
  images with labels (read from ``DetectionValidator.update_metrics``'s source and recorded as
  ``labelled_only``);
* ``box_iou``, the confidence cut, the matching, the counting and the normalization are the version's own
  code. Boxes are the cases' pixel coordinates (``yolo val`` hands it letterboxed ones; both sides of the
  test use the same).

Run (the venv of scripts/ultralytics_expected.py; the versions are the confusion-matrix eras' first and last,
8.3.29/8.3.30, 8.3.54/8.3.55, 8.4.102/8.4.103 and 8.4.183/8.4.184 being where the source changes)::

    for v in 8.0.239 8.3.29 8.3.30 8.3.54 8.3.55 8.3.253 8.4.36 8.4.37 8.4.102 8.4.103 8.4.175 8.4.176 \\
             8.4.183 8.4.184 8.4.190; do
        pip download --no-deps ultralytics==$v
        pip install --no-deps --target /work/venvs/ultra-v/$v ultralytics-$v-py3-none-any.whl; done
    /work/venvs/ultra/bin/python scripts/ultralytics_confusion_expected.py --versions-dir /work/venvs/ultra-v
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "ultralytics"
N_CLASSES = 5
#: ``yolo val --conf`` values run (None: unset, the validator's 0.001)
CONFS: list[float | None] = [None, 0.1, 0.25, 0.5]
MAX_DET = 300
#: A matrix of 100 classes drawn too (from 8.3.x on ``plot`` keeps every other class from 100 on), its
#: normalized array recorded for these versions (seaborn's era and two of imshow's)
LARGE = 100
LARGE_PLOT_VERSIONS = ("8.0.239", "8.3.253", "8.4.190")


# ----------------------------------------------------------------------------------------------- the cases
def _image(gt_cls: Any, gt_xyxy: Any, det_cls: Any, det_xyxy: Any, conf: Any) -> dict[str, Any]:
    """One image, detections in descending confidence (file order on ties), confidences rounded to float32."""
    conf32 = np.asarray(conf, dtype=np.float32)
    order = np.argsort(-conf32, kind="stable")
    return {
        "gt_cls": [int(c) for c in gt_cls],
        "gt_xyxy": np.asarray(gt_xyxy, dtype=np.float64).reshape(-1, 4).tolist(),
        "det_cls": [int(c) for c in np.asarray(det_cls, dtype=np.int64)[order]],
        "det_xyxy": np.asarray(det_xyxy, dtype=np.float64).reshape(-1, 4)[order].tolist(),
        "conf": conf32[order].astype(np.float64).tolist(),
    }


def make_cases() -> list[dict[str, Any]]:
    """The targeted cases (module docstring)."""
    box = [0.0, 0.0, 100.0, 100.0]
    far = [300.0, 300.0, 360.0, 380.0]
    rng = np.random.default_rng(45)
    many = rng.uniform(200, 400, (310, 2))
    crowd = np.concatenate([many, many + 30], 1)
    crowd[-1] = box  # the lowest-ranked of 310 is the only one on the label: cut by max_det
    return [
        # IoU 4500 / (10000 + 1e-7) is float32(0.45) exactly: not above the 0.45 threshold
        {"name": "iou_exactly_0.45", "images": [_image([0], [box], [0], [[0, 0, 45, 100]], [0.9])]},
        {
            "name": "conf_exactly_0.25",
            "images": [_image([0, 1], [box, far], [0, 1], [box, far], [0.25, 0.9])],
        },
        {"name": "cross_class", "images": [_image([0, 1], [box, far], [1, 1], [box, far], [0.9, 0.8])]},
        {
            "name": "no_pair_above_0.45",
            "images": [_image([0], [box], [2, 1], [far, [0, 0, 30, 30]], [0.9, 0.6])],
        },
        {
            "name": "image_without_labels",
            "images": [_image([0], [box], [0], [box], [0.9]), _image([], [], [1, 3], [box, far], [0.8, 0.3])],
        },
        {
            # ranked first: IoU 0.6, class 1; second: IoU 0.9, class 0 (unique takes the IoU, greedy the rank)
            "name": "rank_against_iou",
            "images": [_image([0], [box], [1, 0], [[0, 0, 60, 100], [0, 0, 90, 100]], [0.9, 0.8])],
        },
        {
            "name": "two_labels_one_detection",
            "images": [_image([0, 1], [box, [0, 0, 100, 90]], [1], [[0, 0, 100, 95]], [0.7])],
        },
        {
            "name": "max_det_300",
            "images": [_image([0], [box], [0] * 310, crowd, np.linspace(0.99, 0.3, 310))],
        },
    ]


def large_matrix() -> np.ndarray:
    """Counts 0 … 3 (a quarter of the cells empty) over 100 classes and the background, seeded."""
    return np.random.default_rng(LARGE).integers(0, 4, (LARGE + 1, LARGE + 1))


# -------------------------------------------------------------------------- one version, in its own process
def _plot_arrays(cm: Any) -> dict[str, Any]:
    """The arrays ``ConfusionMatrix.plot`` draws (normalized and not), taken from the call that draws them
    (seaborn's ``heatmap`` up to 8.3.x, ``Axes.imshow`` after); drawing stops there."""
    import types

    import matplotlib.axes

    seen: list[np.ndarray] = []

    class Captured(Exception):
        pass

    def grab(*args: Any, **kwargs: Any) -> Any:
        seen.append(np.array(args[1] if isinstance(args[0], matplotlib.axes.Axes) else args[0], dtype=float))
        raise Captured

    stub = types.ModuleType("seaborn")
    stub.set = stub.set_theme = lambda *a, **k: None  # type: ignore[attr-defined]
    stub.heatmap = grab  # type: ignore[attr-defined]
    sys.modules["seaborn"] = stub
    original = matplotlib.axes.Axes.imshow
    matplotlib.axes.Axes.imshow = grab  # type: ignore[method-assign]
    out = {}
    try:
        for normalize in (False, True):
            seen.clear()
            params = inspect.signature(cm.plot).parameters
            kwargs: dict[str, Any] = {"normalize": normalize, "save_dir": "/nonexistent"}
            if "names" in params:
                kwargs["names"] = tuple(str(i) for i in range(cm.nc))
            cm.plot(**kwargs)  # (TryExcept reports the stop and returns)
            if len(seen) != 1:
                raise RuntimeError(f"ConfusionMatrix.plot drew {len(seen)} arrays, not one")
            a = seen[0]
            out["normalized" if normalize else "raw"] = [[None if math.isnan(v) else v for v in r] for r in a]
    finally:
        matplotlib.axes.Axes.imshow = original  # type: ignore[method-assign]
        import matplotlib.pyplot as plt

        plt.close("all")
    return out


def _run_version() -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ultralytics_expected import install_shims

    install_shims()
    import torch
    import ultralytics
    from ultralytics.models.yolo.detect import DetectionValidator
    from ultralytics.utils import LOGGER
    from ultralytics.utils.metrics import ConfusionMatrix

    LOGGER.disabled = not os.environ.get("DEBUG_PLOT")  # (the TryExcept note on each captured plot)
    old_api = "gt_bboxes" in inspect.signature(ConfusionMatrix.process_batch).parameters
    source = inspect.getsource(DetectionValidator)
    # Up to 8.3.54 the call with detections sits under ``if nl:`` (images with labels only).
    update = inspect.getsource(DetectionValidator.update_metrics).splitlines()
    call = next(i for i, line in enumerate(update) if "confusion_matrix.process_batch(predn" in line)
    labelled_only, indent = False, len(update[call]) - len(update[call].lstrip())
    for line in reversed(update[:call]):  # the blocks around the call, innermost first
        depth = len(line) - len(line.lstrip())
        if line.strip() and depth < indent:
            labelled_only |= line.strip() == "if nl:"
            indent = depth
    if old_api:
        assert "ConfusionMatrix(nc=self.nc, conf=self.args.conf)" in source
    else:
        assert "self.confusion_matrix.process_batch(predn, pbatch, conf=self.args.conf)" in source

    cases = json.loads((OUT / "cases.json").read_text())["cases"]
    cases += json.loads((OUT / "confusion-cases.json").read_text())["cases"]
    out: dict[str, Any] = {}
    plots: dict[str, Any] = {}
    for case in cases:
        per_conf = {}
        for val_conf in CONFS:
            conf_arg = 0.001 if val_conf is None else val_conf  # BaseValidator: args.conf None -> 0.001
            if old_api:
                cm = ConfusionMatrix(nc=N_CLASSES, conf=conf_arg)
            else:
                cm = ConfusionMatrix(names={i: str(i) for i in range(N_CLASSES)})
            for im in case["images"]:
                gt_cls = torch.tensor(im["gt_cls"], dtype=torch.float32)
                gt_box = torch.tensor(im["gt_xyxy"], dtype=torch.float32).reshape(-1, 4)
                conf = torch.tensor(im["conf"], dtype=torch.float32)
                box = torch.tensor(im["det_xyxy"], dtype=torch.float32).reshape(-1, 4)
                cls = torch.tensor(im["det_cls"], dtype=torch.float32)
                keep = torch.nonzero(conf > conf_arg).flatten()[:MAX_DET]  # NMS: conf > args.conf, max_det
                conf, box, cls = conf[keep], box[keep], cls[keep]
                if old_api:
                    if len(conf) == 0:
                        if len(gt_cls):
                            cm.process_batch(detections=None, gt_bboxes=gt_box, gt_cls=gt_cls)
                    elif len(gt_cls) or not labelled_only:
                        predn = torch.cat([box, conf[:, None], cls[:, None]], 1)
                        cm.process_batch(predn, gt_box, gt_cls)
                else:
                    cm.process_batch(
                        {"bboxes": box, "conf": conf, "cls": cls},
                        {"bboxes": gt_box, "cls": gt_cls},
                        conf=conf_arg,
                    )
            counts = np.asarray(cm.matrix)
            assert (counts == np.round(counts)).all()  # (float64 counts: written as integers)
            per_conf["default" if val_conf is None else repr(val_conf)] = counts.astype(int).tolist()
            if val_conf is None:
                plots[case["name"]] = _plot_arrays(cm)
        out[case["name"]] = per_conf
    if ultralytics.__version__ in LARGE_PLOT_VERSIONS:
        if old_api:
            cm = ConfusionMatrix(nc=LARGE)
        else:
            cm = ConfusionMatrix(names={i: str(i) for i in range(LARGE)})
        cm.matrix = large_matrix().astype(float)
        drawn = _plot_arrays(cm)["normalized"]
        # (the whole array only where it is thinned out: the full one is the 5-class cases' arithmetic)
        shape = [len(drawn), len(drawn[0])]
        plots["large"] = {"shape": shape, "normalized": drawn if shape[0] <= LARGE else None}
    return {
        "version": ultralytics.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "labelled_only": labelled_only,
        "cases": out,
        "plot": plots,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions-dir", type=Path, help="one folder per Ultralytics version (pip --target)")
    # (the worker writes one version's matrices to this file)
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:  # a file, not stdout: some versions print their settings banner there
        args.worker.write_text(json.dumps(_run_version()))
        return
    (OUT / "confusion-cases.json").write_text(json.dumps({"cases": make_cases()}) + "\n")
    if args.versions_dir is None:
        return
    versions: dict[str, Any] = {}
    folders = sorted(args.versions_dir.iterdir(), key=lambda p: tuple(int(x) for x in p.name.split(".")))
    for folder in folders:
        env = {**os.environ, "PYTHONPATH": str(folder), "YOLO_OFFLINE": "1", "MPLBACKEND": "Agg"}
        tmp = OUT / "confusion-worker.json.tmp"
        subprocess.run([sys.executable, __file__, "--worker", str(tmp)], env=env, check=True)
        data = json.loads(tmp.read_text())
        tmp.unlink()
        versions[data.pop("version")] = data
        print(f"ultralytics {folder.name}: {len(data['cases'])} cases, labelled_only={data['labelled_only']}")
    doc = {
        "tool": "ultralytics",
        "what": "ConfusionMatrix.matrix (rows predicted, columns true, background last) as DetectionValidator "
        "drives it, per yolo val --conf ('default': unset)",
        "n_classes": N_CLASSES,
        "large_matrix": large_matrix().tolist(),
        "confs": ["default" if c is None else repr(c) for c in CONFS],
        "versions": versions,
    }
    (OUT / "confusion-expected.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
