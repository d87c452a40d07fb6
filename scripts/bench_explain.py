"""Benchmark: ``deteval explain`` against the evaluation of its two ends, each in a fresh process.

Three sets are built in a temporary directory (``--images`` images each):

* a COCO set (``scripts/bench_coco.py``'s synthetic generator): ``deteval explain GT DT --from A --to B``
  between coco and a VOC profile. The coco end is ``deteval coco GT DT``; a VOC end is the same data in VOC
  form scored by ``evaluate_voc`` at IoU 0.5 under that profile (no CLI reads a COCO pair as VOC), loading
  included;
* a VOC set (``scripts/bench_voc.py``'s annotation XML and comp4 files): explain between two VOC profiles
  (it reads VOC files only), each end ``deteval voc`` under that profile; and between coco and a VOC profile
  (the coco end: the files read and converted as explain reads them, then ``evaluate_coco``: no CLI scores
  VOC files as COCO);
* a YOLO set (``scripts/bench_yolo.py``'s split, PNG images): explain between coco, supervision and the
  Ultralytics eras (each end ``deteval yolo --profile P``), and between coco and voc07 (the voc07 end: the
  split read and converted as explain reads it, then ``evaluate_voc``).

``--pairs default`` measures the two pairs the target was first stated on (COCO set coco → voc07, YOLO set
ultralytics → coco); ``--pairs all`` every pair explain accepts on each set, both directions (a walk visits
other intermediate points one way than the other), oriented boxes left out; or name pairs as ``SET:A:B``
(e.g. ``coco:coco:py_faster_rcnn yolo:supervision:ultralytics-8.0``).

Each child is timed whole (imports and reading included), wall and CPU (user + system) seconds. ``--repeat N``
runs N rounds, each running every command once in the same order (a burst of load on the shared machine
hits the rounds' commands alike; the first round also meets the files outside the page cache); each
command's fastest wall and fastest CPU time are kept. The script prints explain / (end A + end B), the ratio
the target bounds (at most 5), for wall and CPU, and the load average before and after.
Usage (from the repository root): python scripts/bench_explain.py [--images 5000] [--pairs all] [--repeat 3]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_coco import generate  # noqa: E402
from bench_voc import build as build_voc  # noqa: E402
from bench_yolo import build, child  # noqa: E402

CLI = (
    "import sys, io, contextlib\nfrom deteval.cli import main\nbuf = io.StringIO()\n"
    "with contextlib.redirect_stdout(buf):\n    code = main(sys.argv[1:])\nprint(code)"
)
#: A VOC profile's end on a COCO pair: the data in VOC form, scored at IoU 0.5 (argv: GT, DT, metric, profile).
VOC_END = """
import sys
from deteval.explain.cross import cross_data
from deteval.run.voc import evaluate_voc
gt, dets = cross_data(sys.argv[1], sys.argv[2]).voc_tables()
print(evaluate_voc(gt, dets, iou_threshold=0.5, metric=sys.argv[3], profile=sys.argv[4]).summary["map"])
"""
#: The same on a YOLO split (argv: data.yaml, predictions, metric, profile), read as explain reads it.
YOLO_VOC_END = """
import sys
from deteval.explain.cross import cross_data
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_coco import dataset_to_coco, predictions_to_coco
from deteval.run.voc import evaluate_voc
ds = load_yolo_dataset(sys.argv[1])
preds = load_yolo_predictions(sys.argv[2], ds)
gt, dets = cross_data(dataset_to_coco(ds), predictions_to_coco(ds, preds)).voc_tables()
print(evaluate_voc(gt, dets, iou_threshold=0.5, metric=sys.argv[3], profile=sys.argv[4]).summary["map"])
"""
#: The coco end on VOC files (argv: Annotations, comp4 pattern, image set), read as explain reads them.
VOC_COCO_END = """
import sys
from deteval.explain.cross import cross_data_from_voc
from deteval.io.voc import discover_detection_classes, load_voc_annotations, load_voc_detections
from deteval.run.coco import evaluate_coco
gt = load_voc_annotations(sys.argv[1], sys.argv[3])
names = sorted({gt.classes[i] for i in set(gt.label.tolist())} | set(discover_detection_classes(sys.argv[2])))
d = cross_data_from_voc(gt, load_voc_detections(sys.argv[2], gt.images, classes=names))
print(evaluate_coco(d.coco_gt, d.coco_res).stats[0])
"""
VOC = {"voc07": ("voc07", "voc_devkit"), "voc2012": ("voc2010", "voc_devkit"),
       "py_faster_rcnn": ("voc07", "py_faster_rcnn")}  # fmt: skip
YOLO_PROFILES = ("coco", "supervision", "ultralytics-8.0", "ultralytics-8.4.37", "ultralytics-8.4.176")
DEFAULT = ("coco:coco:voc07", "yolo:ultralytics:coco")


def all_pairs() -> list[str]:
    """Every pair explain accepts on each set (detect only), both directions."""
    out = [f"coco:{a}:{b}" for v in VOC for a, b in (("coco", v), (v, "coco"))]
    out += [f"voc:{a}:{b}" for a, b in itertools.permutations(VOC, 2)]
    out += [f"voc:{a}:{b}" for v in VOC for a, b in (("coco", v), (v, "coco"))]
    out += [f"yolo:{a}:{b}" for a, b in itertools.permutations(YOLO_PROFILES, 2)]
    return out + ["yolo:coco:voc07", "yolo:voc07:coco"]


def commands(kind: str, d: Path, a: str, b: str) -> tuple[list[str], dict[str, tuple[list[str], str]]]:
    """The explain command (argv of the CLI) and its two ends (name → argv, child code) on set ``kind``."""
    if kind == "coco":
        gt, dt = str(d / "coco" / "gt.json"), str(d / "coco" / "dt.json")

        def end(p: str) -> tuple[list[str], str]:
            return (["coco", gt, dt], CLI) if p == "coco" else ([gt, dt, *VOC[p]], VOC_END)

        return ["explain", gt, dt, "--from", a, "--to", b], {p: end(p) for p in (a, b)}
    if kind == "voc":
        v = d / "voc"
        ann, iset = str(v / "Annotations"), str(v / "ImageSets" / "Main" / "test.txt")
        pattern = str(v / "results" / "comp4_det_test_{cls}.txt")
        ends = {
            p: (["voc", "--annotations", ann, "--image-set", iset, "--detections", pattern, "--metric",
                 VOC[p][0], "--profile", VOC[p][1]], CLI) if p != "coco" else ([ann, pattern, iset], VOC_COCO_END)
            for p in (a, b)
        }  # fmt: skip
        return ["explain", ann, pattern, "--image-set", iset, "--from", a, "--to", b], ends
    data, pred = str(d / "yolo" / "data.yaml"), str(d / "yolo" / "pred")

    def yend(p: str) -> tuple[list[str], str]:
        return (
            (["yolo", data, pred, "--profile", p], CLI)
            if p not in VOC
            else ([data, pred, *VOC[p]], YOLO_VOC_END)
        )

    return ["explain", data, pred, "--from", a, "--to", b], {p: yend(p) for p in (a, b)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--pairs", nargs="*", default=["default"], help="default, all, or SET:A:B items")
    ap.add_argument("--repeat", type=int, default=1, help="rounds; each command's fastest is kept")
    args = ap.parse_args()
    pairs: list[str] = []
    for p in args.pairs:
        pairs += list(DEFAULT) if p == "default" else all_pairs() if p == "all" else [p]
    pairs = list(dict.fromkeys(pairs))
    sets = {p.split(":")[0] for p in pairs}
    if not sets <= {"coco", "voc", "yolo"}:
        ap.error(f"unknown set in {pairs}: SET is coco, voc or yolo")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if "coco" in sets:
            (d / "coco").mkdir()
            _, _, n_gt, n_dt = generate(d / "coco", args.images)
            print(f"COCO set: {args.images} images, {n_gt} objects, {n_dt} detections")
        if "voc" in sets:
            build_voc(d / "voc", args.images, 20 * args.images)
            print(f"VOC set: {args.images} XML files, {20 * args.images} detections in comp4 files")
        if "yolo" in sets:
            build(d / "yolo", args.images)
            print(f"YOLO set: {args.images} PNG images")
        # Every distinct command once per round, in a fixed order: the ends shared by several pairs run once.
        todo: dict[tuple[str, ...], tuple[list[str], str]] = {}
        plan = []
        for p in pairs:
            kind, a, b = p.split(":")
            ex, ends = commands(kind, d, a, b)
            todo[(kind, "explain", a, b)] = (ex, CLI)
            for name, cmd in ends.items():
                todo[(kind, "end", name)] = cmd
            plan.append((p, (kind, "explain", a, b), [(kind, "end", a), (kind, "end", b)]))
        runs: dict[tuple[str, ...], list[tuple[float, float]]] = {k: [] for k in todo}
        for r in range(args.repeat):
            for key, (argv, code) in todo.items():
                wall, _, _, cpu = child(argv, code)
                runs[key].append((wall, cpu))
            print(
                f"round {r + 1} done; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
                flush=True,
            )
    best = {k: (min(w for w, _ in v), min(c for _, c in v)) for k, v in runs.items()}
    print(
        f"\nfastest of {args.repeat} rounds (wall and CPU each the minimum); ratio = explain / (end A + end B)"
    )
    print(f"{'set:from:to':44}{'explain':>9}{'end A':>8}{'end B':>8}{'ratio':>7}   "
          f"{'explain':>9}{'end A':>8}{'end B':>8}{'ratio':>7}")  # fmt: skip
    print(f"{'':44}{'wall s':>32}   {'CPU s':>32}")
    for name, ex, (ea, eb) in plan:
        row = f"{name:44}"
        for k in (0, 1):
            e, a, b = best[ex][k], best[ea][k], best[eb][k]
            ratio = e / (a + b)
            row += f"{e:9.2f}{a:8.2f}{b:8.2f}{ratio:7.2f}{' *' if ratio > 4.5 else '  '} "
        print(row)
    print(f"(* above 4.5x; target 5x) load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
