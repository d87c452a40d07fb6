"""Benchmark: Pascal VOC evaluation at VOC2007-test scale, from files.

Builds a synthetic VOC-style set in a temporary directory (about 5,000 annotation XML files, 20 classes,
about 12,500 objects with ~10% difficult, about 100,000 detections in comp4 files), then measures:

* deteval, in process: annotation parse, detection parse, evaluation (per step, tracemalloc peak);
* deteval, cold: the whole `deteval voc ...` command in a fresh Python process (interpreter start and imports
  included), with the child's peak RSS;
* REFERENCE (clearly labelled): a py-faster-rcnn-style evaluation written in this script the way that port
  works (ElementTree per file, a Python loop per detection over numpy IoU rows), run on the same files in
  the same run; its APs are checked against deteval's ``py_faster_rcnn`` profile, and the speed ratio printed.

Cold runs are repeated (``--repeat``, best and median printed with the child's CPU time); they run with
bytecode caching on, into the temporary directory (as an installed package has its ``.pyc`` files), after
one uncounted run that writes the cache.

Nothing is written outside the temporary directory. Usage: python scripts/bench_voc.py [--images 5000]
[--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deteval.detection.voc import VOC_CLASSES  # noqa: E402
from deteval.io.voc import load_voc_annotations, load_voc_detections  # noqa: E402
from deteval.run.voc import evaluate_voc  # noqa: E402


def build(folder: Path, n_images: int, n_dets: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    ann = folder / "Annotations"
    ann.mkdir(parents=True)
    (folder / "ImageSets" / "Main").mkdir(parents=True)
    (folder / "results").mkdir()
    ids = [f"{i:06d}" for i in range(1, n_images + 1)]
    (folder / "ImageSets" / "Main" / "test.txt").write_text("\n".join(ids) + "\n")
    gt_rows = []  # (image index, class, x1, y1, x2, y2)
    for i, iid in enumerate(ids):
        w, h = 500, int(rng.choice([333, 375, 500]))
        parts = [
            f"<annotation><folder>VOC2007</folder><filename>{iid}.jpg</filename>"
            f"<size><width>{w}</width><height>{h}</height><depth>3</depth></size><segmented>0</segmented>"
        ]
        for _ in range(int(rng.integers(0, 6))):
            c = int(rng.integers(0, 20))
            x1, y1 = int(rng.integers(1, w - 40)), int(rng.integers(1, h - 40))
            x2, y2 = min(w, x1 + int(rng.integers(20, 250))), min(h, y1 + int(rng.integers(20, 250)))
            diff = int(rng.random() < 0.1)
            parts.append(
                f"<object><name>{VOC_CLASSES[c]}</name><pose>Unspecified</pose><truncated>0</truncated>"
                f"<difficult>{diff}</difficult><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"
                f"<xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object>"
            )
            gt_rows.append((i, c, x1, y1, x2, y2))
        parts.append("</annotation>")
        (ann / f"{iid}.xml").write_text("\n".join(parts))
    gt = np.array(gt_rows, dtype=np.float64)
    # Detections: jittered copies of ground truth (some several times) + background boxes.
    k = min(n_dets // 2, 3 * len(gt))
    src = gt[rng.integers(0, len(gt), k)]
    jit = rng.normal(0, 12, (k, 4))
    boxes = src[:, 2:] + jit
    n_bg = n_dets - k
    bx = rng.integers(1, 400, (n_bg, 2)).astype(float)
    bg_boxes = np.concatenate([bx, bx + rng.integers(10, 200, (n_bg, 2))], axis=1)
    image = np.concatenate([src[:, 0], rng.integers(0, n_images, n_bg)]).astype(int)
    cls = np.concatenate([src[:, 1], rng.integers(0, 20, n_bg)]).astype(int)
    boxes = np.concatenate([boxes, bg_boxes])
    boxes[:, 2] = np.maximum(boxes[:, 2], boxes[:, 0])
    boxes[:, 3] = np.maximum(boxes[:, 3], boxes[:, 1])
    scores = np.concatenate([rng.uniform(0.2, 1.0, k), rng.uniform(0.0, 0.8, n_bg)])
    perm = rng.permutation(len(image))
    for c, name in enumerate(VOC_CLASSES):
        rows = perm[cls[perm] == c]
        lines = [
            f"{ids[image[r]]} {scores[r]:.6f} {boxes[r, 0]:.1f} {boxes[r, 1]:.1f} {boxes[r, 2]:.1f} "
            f"{boxes[r, 3]:.1f}"
            for r in rows
        ]
        (folder / "results" / f"comp4_det_test_{name}.txt").write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------------
# REFERENCE: a py-faster-rcnn-style evaluation (per-file ElementTree parse, per-detection Python loop).
# Written here for the comparison; it follows that port's rules: argsort(-conf), IoU > thr, +1 areas,
# np.arange(0, 1.1, 0.1) levels for the 2007 metric.


def reference_py_faster_rcnn(folder: Path, use07: bool = True, thr: float = 0.5) -> dict[str, float]:
    ids = (folder / "ImageSets" / "Main" / "test.txt").read_text().split()
    recs = {}
    for iid in ids:
        root = ET.parse(folder / "Annotations" / f"{iid}.xml").getroot()
        recs[iid] = [
            {
                "name": o.find("name").text,
                "difficult": int(o.find("difficult").text),
                "bbox": [float(o.find("bndbox").find(t).text) for t in ("xmin", "ymin", "xmax", "ymax")],
            }
            for o in root.findall("object")
        ]
    aps = {}
    for cname in VOC_CLASSES:
        class_recs = {}
        npos = 0
        for iid in ids:
            objs = [o for o in recs[iid] if o["name"] == cname]
            bbox = np.array([o["bbox"] for o in objs]).reshape(-1, 4)
            diff = np.array([o["difficult"] for o in objs]).astype(bool)
            npos += int((~diff).sum())
            class_recs[iid] = {"bbox": bbox, "difficult": diff, "det": [False] * len(objs)}
        lines = (folder / "results" / f"comp4_det_test_{cname}.txt").read_text().splitlines()
        split = [x.strip().split(" ") for x in lines if x.strip()]
        image_ids = [x[0] for x in split]
        conf = np.array([float(x[1]) for x in split])
        bb_all = np.array([[float(z) for z in x[2:]] for x in split]).reshape(-1, 4)
        order = np.argsort(-conf)
        bb_all = bb_all[order]
        image_ids = [image_ids[i] for i in order]
        nd = len(image_ids)
        tp, fp = np.zeros(nd), np.zeros(nd)
        for d in range(nd):
            r = class_recs[image_ids[d]]
            bb = bb_all[d]
            ovmax = -np.inf
            g = r["bbox"]
            if g.size > 0:
                iw = np.maximum(np.minimum(g[:, 2], bb[2]) - np.maximum(g[:, 0], bb[0]) + 1.0, 0.0)
                ih = np.maximum(np.minimum(g[:, 3], bb[3]) - np.maximum(g[:, 1], bb[1]) + 1.0, 0.0)
                inters = iw * ih
                uni = (
                    (bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0)
                    + (g[:, 2] - g[:, 0] + 1.0) * (g[:, 3] - g[:, 1] + 1.0)
                    - inters
                )
                ov = inters / uni
                ovmax, jmax = np.max(ov), int(np.argmax(ov))
            if ovmax > thr:
                if not r["difficult"][jmax]:
                    if not r["det"][jmax]:
                        tp[d] = 1.0
                        r["det"][jmax] = True
                    else:
                        fp[d] = 1.0
            else:
                fp[d] = 1.0
        fp, tp = np.cumsum(fp), np.cumsum(tp)
        rec = tp / float(npos)
        prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
        if use07:
            ap = 0.0
            for t in np.arange(0.0, 1.1, 0.1):
                p = 0.0 if np.sum(rec >= t) == 0 else np.max(prec[rec >= t])
                ap += p / 11.0
        else:
            mrec = np.concatenate(([0.0], rec, [1.0]))
            mpre = np.concatenate(([0.0], prec, [0.0]))
            for i in range(mpre.size - 1, 0, -1):
                mpre[i - 1] = max(mpre[i - 1], mpre[i])
            i = np.where(mrec[1:] != mrec[:-1])[0]
            ap = float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))
        aps[cname] = float(ap)
    return aps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--detections", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5, help="cold runs (fresh processes) to time")
    ap.add_argument(
        "--other", type=Path, metavar="PATH", help="also time the cold CLI of this checkout, interleaved"
    )
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="deteval_bench_voc_") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        build(folder, opts.images, opts.detections)
        print(
            f"built {opts.images} XML files and {opts.detections} detections "
            f"in {time.perf_counter() - t0:.1f} s"
        )
        ann, iset = folder / "Annotations", folder / "ImageSets" / "Main" / "test.txt"
        pattern = str(folder / "results" / "comp4_det_test_{cls}.txt")

        # Cold: a fresh process running the CLI, end to end.
        cmd = [
            sys.executable,
            "-m",
            "deteval",
            "voc",
            "--annotations",
            str(ann),
            "--image-set",
            str(iset),
            "--detections",
            pattern,
            "--metric",
            "voc07",
            "--format",
            "json",
            "--output",
            str(folder / "out.json"),
        ]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        walls, cpus, other_walls = [], [], []
        for k in range(opts.repeat + 1):  # run 0 writes the bytecode cache
            for root in (ROOT,) if opts.other is None else (ROOT, opts.other):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
                wall = time.perf_counter() - t0
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if proc.returncode != 0:
                    print(proc.stderr)
                    return 1
                if k and root != ROOT:
                    other_walls.append(wall)
                elif k:
                    walls.append(wall)
                    cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        child_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

        # In process, step by step (timed without tracemalloc, which slows allocation several-fold).
        t0 = time.perf_counter()
        gt = load_voc_annotations(ann, iset)
        t1 = time.perf_counter()
        dets = load_voc_detections(pattern, gt.images, classes=list(VOC_CLASSES))
        t2 = time.perf_counter()
        res = evaluate_voc(gt, dets, metric="voc07", profile="py_faster_rcnn")
        t3 = time.perf_counter()
        res_devkit = evaluate_voc(gt, dets, metric="voc07")
        # Peak Python memory of the same pipeline, measured in a separate pass.
        del gt, dets
        tracemalloc.start()
        gt = load_voc_annotations(ann, iset)
        dets = load_voc_detections(pattern, gt.images, classes=list(VOC_CLASSES))
        evaluate_voc(gt, dets, metric="voc07")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        t4 = time.perf_counter()
        ref = reference_py_faster_rcnn(folder, use07=True)
        t5 = time.perf_counter()

        worst = max(abs(ref[c] - res.per_class[c]["ap"]) for c in VOC_CLASSES)
        ours = t3 - t0
        print(f"objects: {len(gt)}, detections: {len(dets)}, classes: {len(VOC_CLASSES)}")
        print(f"deteval parse annotations : {t1 - t0:7.3f} s")
        print(f"deteval parse detections  : {t2 - t1:7.3f} s")
        print(f"deteval evaluate (20 cls) : {t3 - t2:7.3f} s")
        print(f"deteval total in process  : {ours:7.3f} s   peak traced memory {peak / 2**20:.1f} MiB")
        print(
            f"deteval cold CLI process  : {min(walls):7.3f} s best, {statistics.median(walls):.3f} s median of "
            f"{len(walls)} fresh processes; CPU {min(cpus):.3f} s best; child peak RSS {child_rss_mb:.1f} MiB"
            "  (target <= 0.6 s)"
        )
        if other_walls:
            print(
                f"{opts.other} cold CLI process: {min(other_walls):7.3f} s best, "
                f"{statistics.median(other_walls):.3f} s median of {len(other_walls)} (interleaved with the above)"
            )
        print(f"REFERENCE py-faster-rcnn-style loop (this script): {t5 - t4:7.3f} s")
        print(f"speed-up vs reference (in process): {(t5 - t4) / ours:5.1f}x")
        print(f"max |AP difference| vs reference (py_faster_rcnn profile): {worst:.3g}")
        print(
            f"mAP voc07: devkit profile {res_devkit.summary['map']:.6f}, py_faster_rcnn profile "
            f"{res.summary['map']:.6f}, reference {np.mean(list(ref.values())):.6f}"
        )
        return 0 if worst <= 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
