"""Benchmark: ``deteval explain`` against the evaluation of its two ends, each in a fresh process.

Two sets are built in a temporary directory:

* a COCO set (``scripts/bench_coco.py``'s synthetic generator, ``--images`` images): ``deteval explain GT DT
  --from coco --to voc07`` against ``deteval coco GT DT`` plus the VOC07 end (the same data in VOC form scored
  by ``evaluate_voc`` at IoU 0.5, loading included);
* a YOLO set (``scripts/bench_yolo.py``'s split, ``--images`` PNG images): ``deteval explain DATA PRED --from
  ultralytics --to coco`` against ``deteval yolo --profile ultralytics`` plus ``--profile coco``.

Each child is timed whole (imports and reading included), wall and CPU (user + system) seconds; the script
prints explain / (end A + end B), the ratio the target bounds (at most 5).
Usage (from the repository root): python scripts/bench_explain.py [--images 5000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_coco import generate  # noqa: E402
from bench_yolo import build, child  # noqa: E402

CLI = (
    "import sys, io, contextlib\nfrom deteval.cli import main\nbuf = io.StringIO()\n"
    "with contextlib.redirect_stdout(buf):\n    code = main(sys.argv[1:])\nprint(code)"
)
VOC_END = """
import sys
from deteval.explain.cross import cross_data
from deteval.run.voc import evaluate_voc
gt, dets = cross_data(sys.argv[1], sys.argv[2]).voc_tables()
print(evaluate_voc(gt, dets, iou_threshold=0.5, metric="voc07").summary["map"])
"""


def _report(name: str, explain: tuple, ends: dict[str, tuple]) -> None:
    for k, what in ((0, "wall"), (3, "CPU")):
        total = sum(v[k] for v in ends.values())
        parts = " + ".join(f"{end} {v[k]:.2f} s" for end, v in ends.items())
        print(f"{name} ({what}): explain {explain[k]:.2f} s; ends {parts} = {total:.2f} s; "
              f"ratio {explain[k] / total:.2f}x (target 5x)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=5000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "coco").mkdir()
        gt, dt, n_gt, n_dt = generate(d / "coco", args.images)
        print(f"COCO set: {args.images} images, {n_gt} objects, {n_dt} detections")
        explain = child(["explain", str(gt), str(dt), "--from", "coco", "--to", "voc07"], CLI)
        ends = {
            "coco": child(["coco", str(gt), str(dt)], CLI),
            "voc07": child([str(gt), str(dt)], VOC_END),
        }
        _report("explain --from coco --to voc07", explain, ends)
        build(d / "yolo", args.images)
        data, pred = str(d / "yolo" / "data.yaml"), str(d / "yolo" / "pred")
        print(f"YOLO set: {args.images} PNG images")
        explain = child(["explain", data, pred, "--from", "ultralytics", "--to", "coco"], CLI)
        ends = {p: child(["yolo", data, pred, "--profile", p], CLI) for p in ("ultralytics", "coco")}
        _report("explain --from ultralytics --to coco", explain, ends)


if __name__ == "__main__":
    main()
