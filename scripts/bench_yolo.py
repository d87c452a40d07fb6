"""Benchmark: a YOLO dataset scored by deteval's profiles and by the reference tools, each in a fresh process.

Builds a synthetic YOLO split in a temporary directory (``--images`` grey PNGs of 640×480 or 480×640, about
7 labels and 25 predictions per image, 20 classes), converts it once to COCO JSON and to pixel arrays, then
runs, each in its own Python process (imports and file reading included), timing the whole child and reading
its peak RSS:

* ``deteval yolo --profile coco`` / ``--profile ultralytics`` / ``--profile supervision`` (the CLI);
* pycocotools ``COCOeval`` on the converted JSON (the ``coco`` profile's reference);
* supervision ``MeanAveragePrecision`` on the pixel arrays (the ``supervision`` profile's reference);
* with ``--ultralytics-python PY`` (a Python with ultralytics and torch, see scripts/ultralytics_expected.py):
  Ultralytics' own ``box_iou`` + ``match_predictions`` + ``ap_per_class`` on the same arrays.

Every child prints its mAP50-95; the script checks the pairs agree and prints time and memory ratios. deteval's
children read the YOLO files themselves (image headers, label and prediction txt); the references get the
already converted JSON or arrays, so the comparison is tilted their way.
Usage: python scripts/bench_yolo.py [--images 2000] [--ultralytics-python /work/venvs/ultra/bin/python]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PEAK = (
    "import resource, sys; print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
)

PYCOCOTOOLS = """
import contextlib, io, sys
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(sys.argv[1]); dt = gt.loadRes(sys.argv[2])
    ev = COCOeval(gt, dt, "bbox"); ev.evaluate(); ev.accumulate(); ev.summarize()
print(ev.stats[0])
"""

SUPERVISION = """
import sys, warnings
import numpy as np
warnings.simplefilter("ignore")
import supervision as sv
a = np.load(sys.argv[1])
n = int(a["n"]); preds, targets = [], []
for i in range(n):
    g, d = a["gi"] == i, a["di"] == i
    targets.append(sv.Detections(xyxy=a["gb"][g].reshape(-1, 4), class_id=a["gc"][g]))
    preds.append(sv.Detections(xyxy=a["db"][d].reshape(-1, 4), class_id=a["dc"][d], confidence=a["ds"][d]))
print(sv.metrics.MeanAveragePrecision().update(preds, targets).compute().map50_95)
"""

ULTRALYTICS = """
import sys, numpy as np, torch
from ultralytics.models.yolo.detect import DetectionValidator
from ultralytics.utils.metrics import Metric, ap_per_class, box_iou
a = np.load(sys.argv[1]); n = int(a["n"])
v = DetectionValidator.__new__(DetectionValidator); v.iouv = torch.linspace(0.5, 0.95, 10)
tps, conf, pc, tc = [], [], [], []
for i in range(n):
    g, d = a["gi"] == i, a["di"] == i
    o = np.argsort(-a["ds"][d], kind="stable")
    db, dc, ds = a["db"][d][o], a["dc"][d][o], a["ds"][d][o]
    gcls, dcls = torch.tensor(a["gc"][g], dtype=torch.float32), torch.tensor(dc, dtype=torch.float32)
    if len(gcls) and len(dcls):
        tp = v.match_predictions(dcls, gcls, box_iou(torch.tensor(a["gb"][g]), torch.tensor(db))).numpy()
    else:
        tp = np.zeros((len(dcls), 10), dtype=bool)
    tps.append(tp); conf.append(ds.astype(np.float32)); pc.append(dc); tc.append(a["gc"][g])
m = Metric(); m.update(ap_per_class(*(np.concatenate(x) for x in (tps, conf, pc, tc)), names={})[2:])
print(m.map)
"""


def build(folder: Path, n_images: int, seed: int = 0) -> None:
    from PIL import Image

    rng = np.random.default_rng(seed)
    (folder / "images" / "val").mkdir(parents=True)
    (folder / "labels" / "val").mkdir(parents=True)
    (folder / "pred").mkdir()
    sizes = {(640, 480): None, (480, 640): None}
    for wh in sizes:
        buf = folder / f"tmpl_{wh[0]}.png"
        Image.new("L", wh, 100).save(buf)
        sizes[wh] = buf.read_bytes()  # type: ignore[assignment]
    (folder / "data.yaml").write_text(
        "val: images/val\nnames:\n" + "".join(f"  {k}: c{k}\n" for k in range(20))
    )
    for i in range(n_images):
        wh = (640, 480) if rng.random() < 0.7 else (480, 640)
        (folder / "images" / "val" / f"{i:06d}.png").write_bytes(sizes[wh])  # type: ignore[arg-type]
        n = int(rng.integers(0, 15))
        c = rng.uniform(0.1, 0.9, (n, 2))
        s = rng.uniform(0.02, 0.3, (n, 2))
        k = rng.integers(0, 20, n)
        (folder / "labels" / "val" / f"{i:06d}.txt").write_text(
            "".join(f"{a} {x:.6f} {y:.6f} {w:.6f} {h:.6f}\n" for a, (x, y), (w, h) in zip(k, c, s))
        )
        rows = []
        for j in range(n):
            for _ in range(int(rng.integers(0, 4))):
                jc = np.clip(c[j] + rng.normal(0, 0.01, 2), 0, 1)
                js = np.clip(s[j] * rng.uniform(0.8, 1.2, 2), 0.001, 1)
                rows.append((k[j] if rng.random() < 0.9 else rng.integers(0, 20), *jc, *js))
        for _ in range(int(rng.integers(0, 10))):
            rows.append((rng.integers(0, 20), *rng.uniform(0.1, 0.9, 2), *rng.uniform(0.02, 0.2, 2)))
        (folder / "pred" / f"{i:06d}.txt").write_text(
            "".join(f"{r[0]} {r[1]:g} {r[2]:g} {r[3]:g} {r[4]:g} {rng.uniform(0.001, 1):.6f}\n" for r in rows)
        )


def child(args: list[str], code: str | None = None, python: str = sys.executable) -> tuple[float, float, str]:
    cmd = [python, "-c", code + "\n" + PEAK, *args] if code else [python, "-c", _cli(), *args]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - t
    peak = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK"))
    return elapsed, peak / 1024, proc.stdout.strip().splitlines()[-1]


def _cli() -> str:
    return (
        "import sys, json, io, contextlib\nfrom deteval.cli import main\nbuf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n    main(sys.argv[1:])\n"
        "print(json.loads(buf.getvalue())['summary']['mAP50-95'])\n" + PEAK
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--ultralytics-python", default=None)
    args = ap.parse_args()
    from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
    from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        build(d, args.images)
        ds = load_yolo_dataset(d / "data.yaml")
        preds = load_yolo_predictions(d / "pred", ds)
        (d / "gt.json").write_text(json.dumps(dataset_to_coco(ds)))
        (d / "res.json").write_text(json.dumps(predictions_to_coco(ds, preds)))
        L = ds.labels
        np.savez(d / "arrays.npz", n=ds.n_images, gi=L.img, gc=L.cls, gb=L.xyxy, di=preds.img, dc=preds.cls,
                 db=preds.xyxy, ds=preds.conf)  # fmt: skip
        print(f"{ds.n_images} images, {len(L)} labels, {len(preds)} predictions, 20 classes\n")
        base = [str(d / "data.yaml"), str(d / "pred"), "--format", "json"]
        runs = {
            "deteval --profile coco": child(["yolo", *base, "--profile", "coco"]),
            "pycocotools COCOeval": child([str(d / "gt.json"), str(d / "res.json")], PYCOCOTOOLS),
            "deteval --profile supervision": child(["yolo", *base, "--profile", "supervision"]),
            "supervision MeanAveragePrecision": child([str(d / "arrays.npz")], SUPERVISION),
            "deteval --profile ultralytics": child(["yolo", *base, "--profile", "ultralytics"]),
        }
        if args.ultralytics_python:
            runs["ultralytics (own metric code)"] = child(
                [str(d / "arrays.npz")], ULTRALYTICS, args.ultralytics_python
            )
        print(f"{'':36}{'seconds':>10}{'peak MB':>10}  mAP50-95")
        for name, (t, mb, value) in runs.items():
            print(f"{name:36}{t:10.2f}{mb:10.0f}  {value}")
        pairs = [("deteval --profile coco", "pycocotools COCOeval"),
                 ("deteval --profile supervision", "supervision MeanAveragePrecision"),
                 ("deteval --profile ultralytics", "ultralytics (own metric code)")]  # fmt: skip
        print()
        for a, b in pairs:
            if b in runs:
                ta, ma, va = runs[a]
                tb, mb, vb = runs[b]
                same = "same mAP" if float(va) == float(vb) else f"DIFFERENT mAP ({va} vs {vb})"
                print(
                    f"{a} vs {b}: deteval {tb / ta:.1f}x faster, the reference uses {mb / ma:.1f}x the memory; {same}"
                )


if __name__ == "__main__":
    main()
