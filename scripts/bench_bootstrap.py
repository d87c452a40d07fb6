"""Cost of 1,000 bootstrap resamples and 1,000 randomization rounds against one evaluation (issue 16, item 4).

    python scripts/bench_bootstrap.py                  # COCO 5k (scripts/bench_coco.py's set) and VOC 5k
    python scripts/bench_bootstrap.py --resamples 200  # time 200 resamples / rounds, extrapolate to 1000
    python scripts/bench_bootstrap.py --processes 1 2  # single process, then two forked processes
    python scripts/bench_bootstrap.py --repeat 3       # best of 3 fresh processes per measurement
    python scripts/bench_bootstrap.py --skip voc

Every measurement runs in a fresh Python process on the same files, from loading the files to the last
number: (1) one evaluation (``evaluate_coco``; ``evaluate_voc`` with the VOC2007 11-point metric, files parsed);
(2) a bootstrap of every summary number and every class's AP (``CocoUnits`` / ``VOCUnits``: load, match once,
then ``bootstrap`` with B resamples); (3) COCO only, two comparisons of a second results file (the first with
every score perturbed, written beforehand) with the first: a paired bootstrap (``paired_bootstrap``, the
CLI's default ``--test``: B resamples of the difference) and a randomization test (B rounds of two mixed
systems each). The script prints wall and CPU time (the machine may be shared: CPU time is the steadier),
peak RSS, and "1,000 resamples = N x one evaluation" with the time of the setup (load, match, first
evaluation) plus 1000 times the measured time per resample, divided by the one evaluation's wall time.

The target (issue 16, item 4) is <= 10x the evaluation that the statistic replaces: a single system's
intervals against one evaluation; a comparison of two systems (paired bootstrap or randomization) against
the evaluation of both systems it compares (each file's ``evaluate_coco`` in a fresh process, their times
added): what a comparison without the statistics would cost. The comparison lines print both ratios.
By default each is timed with one process and with ``processes="auto"`` (the default of the API and CLI:
the line says what it resolved to). With ``--repeat N`` every measurement (the one evaluation too) runs N
times, each in a fresh process, and the fastest run (wall) is reported, with its CPU time. Nothing is written to the tree.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_coco import generate  # noqa: E402  (the one generator of the COCO benchmark case)
from bench_voc import build  # noqa: E402  (the VOC benchmark case)

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
# Asked of the checkout's folder, not by trying the import: an editable install of another checkout would
# answer for a package this one lacks.
HAS_RUN = os.path.isdir(os.path.join(sys.argv[1], "deteval", "run"))
mode, b, processes, files = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
processes = processes if processes == "auto" else int(processes)
t0 = time.perf_counter(); c0 = time.process_time()
t_setup = c_setup = 0.0
import numpy as np
if mode == "coco_evaluate":
    from deteval.detection.coco import evaluate_coco
    evaluate_coco(files[0], files[1])
elif mode in ("coco_bootstrap", "coco_randomization", "coco_paired"):
    from deteval.stats.coco import CocoUnits
    units = CocoUnits(files[0], files[1:])
    one = np.ones((1, units.n_units), dtype=np.int64)
    if mode == "coco_bootstrap":
        from deteval.stats.bootstrap import bootstrap
        metric = units.metric(0)
        metric(one)
        t_setup, c_setup = time.perf_counter() - t0, time.process_time() - c0
        bootstrap(metric, units.n_units, n_resamples=b, seed=0, processes=processes)
    elif mode == "coco_paired":
        from deteval.stats.bootstrap import paired_bootstrap
        mix = units.mix(0, 1)
        mix(one, 0 * one), mix(0 * one, one)  # both systems' numbers, as paired_bootstrap takes them
        t_setup, c_setup = time.perf_counter() - t0, time.process_time() - c0
        paired_bootstrap(mix, units.n_units, n_resamples=b, seed=0, processes=processes)
    else:
        from deteval.stats.tests import randomization_test
        mix = units.mix(0, 1)
        mix.rounds(0 * one)  # both systems' numbers, as randomization_test takes them
        t_setup, c_setup = time.perf_counter() - t0, time.process_time() - c0
        randomization_test(mix, units.n_units, n_rounds=b, seed=0, processes=processes)
else:
    from deteval.detection.voc import VOC_CLASSES, VOCParams
    if HAS_RUN:
        from deteval.run.voc import evaluate_voc
    else:  # (a checkout from before deteval.run, with --other)
        from deteval.detection.voc import evaluate_voc
    from deteval.io.voc import load_voc_annotations, load_voc_detections
    gt = load_voc_annotations(files[0], files[1])
    dets = load_voc_detections(files[2], gt.images, classes=list(VOC_CLASSES))
    if mode == "voc_evaluate":
        evaluate_voc(gt, dets, metric="voc07")
    else:
        from deteval.stats.bootstrap import bootstrap
        from deteval.stats.voc import VOCUnits
        units = VOCUnits(gt, [dets], VOCParams(metric="voc07"))
        metric = units.metric(0)
        t_setup, c_setup = time.perf_counter() - t0, time.process_time() - c0
        bootstrap(metric, units.n_units, n_resamples=b, seed=0, processes=processes)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
if HAS_RUN:
    from deteval.run import forked
else:  # (a checkout from before deteval.distributed became deteval.run, with --other)
    from deteval.distributed import forked
forked._reap_exited(True)  # (children whose value was read exit on their own: wait, so their CPU counts)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu += usage.ru_utime + usage.ru_stime  # forked workers
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, usage.ru_maxrss) / 1024
from deteval.stats.parallel import LAST
used = LAST["processes"]  # what the resamples or rounds ran on ("auto" resolved)
print(json.dumps({"wall": wall, "cpu": cpu, "setup": t_setup, "setup_cpu": c_setup, "rss_mb": rss, "used": used}))
"""


REPEAT = 1  # fresh processes per measurement (--repeat): the fastest is reported
OTHER: Path | None = None  # --other: another checkout, run interleaved with this one


def run(mode: str, files: list[Path], b: int = 0, processes: str = "1") -> dict:
    runs: dict[Path, list[dict]] = {}
    for _ in range(REPEAT):
        for root in (ROOT,) if OTHER is None else (ROOT, OTHER):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(root), mode, str(b), processes, *map(str, files)],
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                raise SystemExit(f"{mode} failed ({root}):\n{out.stderr}")
            runs.setdefault(root, []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    res: dict = min(runs[ROOT], key=lambda r: r["wall"])
    if OTHER is not None:
        walls = {root: sorted(r["wall"] for r in rs) for root, rs in runs.items()}
        print(
            f"  [{mode} p={processes}] this checkout: fastest {walls[ROOT][0]:.2f} s, median "
            f"{walls[ROOT][len(walls[ROOT]) // 2]:.2f} s; {OTHER}: fastest {walls[OTHER][0]:.2f} s, median "
            f"{walls[OTHER][len(walls[OTHER]) // 2]:.2f} s"
        )
    return res


def report(label: str, one: dict, res: dict, b: int, what: str, pair: dict | None = None) -> None:
    """Setup plus 1000 times the measured time per resample, against one evaluation (wall and CPU); with
    ``pair`` (the evaluation of both compared systems, each in a fresh process) against that too."""
    per = (res["wall"] - res["setup"]) / b
    per_cpu = (res["cpu"] - res["setup_cpu"]) / b
    total, total_cpu = res["setup"] + 1000 * per, res["setup_cpu"] + 1000 * per_cpu
    print(
        f"{label}: setup {res['setup']:.2f} s, {per * 1e3:.1f} ms wall / {per_cpu * 1e3:.1f} ms CPU per "
        f"{what} ({b} timed), {res['rss_mb']:.0f} MB peak"
    )
    print(
        f"    1,000 {what}s = {total / one['wall']:.1f}x one evaluation (wall; {total:.1f} s), "
        f"{total_cpu / one['cpu']:.1f}x in CPU time"
    )
    if pair is not None:
        print(
            f"    = {total / pair['wall']:.1f}x the evaluation of both systems it compares ({pair['wall']:.2f} s "
            f"wall: one fresh process each), {total_cpu / pair['cpu']:.1f}x in CPU time"
        )
    base, of = (one, "one evaluation") if pair is None else (pair, "the evaluation of both systems")
    verdict = "met" if total <= 10 * base["wall"] else "NOT met"
    print(f"    target <= 10x {of}: {verdict}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument(
        "--resamples", type=int, default=1000, help="resamples / rounds timed (ratios are for 1000)"
    )
    ap.add_argument(
        "--processes", nargs="+", default=["1", "auto"], help="worker processes to time (N or auto)"
    )
    ap.add_argument("--repeat", type=int, default=1, help="fresh runs per measurement, the fastest reported")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip", nargs="*", default=[], choices=["bootstrap", "paired", "randomization", "voc"])
    ap.add_argument(
        "--other",
        type=Path,
        metavar="PATH",
        help="also run every measurement from this checkout, interleaved",
    )
    args = ap.parse_args()
    global REPEAT, OTHER
    REPEAT = max(1, args.repeat)
    OTHER = args.other
    b = args.resamples
    with tempfile.TemporaryDirectory(prefix="deteval_bench_boot_") as tmp:
        gt, dt, n_gt, n_dt = generate(Path(tmp), args.images, args.seed)
        rows = json.loads(dt.read_text())
        rng = np.random.default_rng(1)
        u = rng.uniform(0.8, 1.2, len(rows))
        dt2 = Path(tmp) / "dt2.json"
        dt2.write_text(json.dumps([dict(r, score=float(r["score"]) * float(f)) for r, f in zip(rows, u)]))
        del rows
        print(f"COCO: {args.images} images, 80 categories, {n_gt} ground truths, {n_dt} detections")
        one = run("coco_evaluate", [gt, dt])
        print(
            f"one evaluation: {one['wall']:.2f} s wall, {one['cpu']:.2f} s CPU, {one['rss_mb']:.0f} MB peak"
        )
        pair = None
        if {"paired", "randomization"} - set(args.skip):  # the baseline of a comparison: both evaluated
            two = run("coco_evaluate", [gt, dt2])
            pair = {"wall": one["wall"] + two["wall"], "cpu": one["cpu"] + two["cpu"]}
            print(f"both systems evaluated: {pair['wall']:.2f} s wall, {pair['cpu']:.2f} s CPU")
        for p in args.processes:
            if "bootstrap" not in args.skip:
                res = run("coco_bootstrap", [gt, dt], b, p)
                report(f"bootstrap, processes={p} ({res['used']})", one, res, b, "resample")
            if "paired" not in args.skip:
                res = run("coco_paired", [gt, dt, dt2], b, p)
                report(
                    f"paired bootstrap (two systems), processes={p} ({res['used']})",
                    one,
                    res,
                    b,
                    "resample",
                    pair,
                )
            if "randomization" not in args.skip:
                res = run("coco_randomization", [gt, dt, dt2], b, p)
                report(
                    f"randomization (two systems), processes={p} ({res['used']})", one, res, b, "round", pair
                )
        if "voc" in args.skip:
            return 0
        folder = Path(tmp) / "voc"
        build(folder, args.images, 100_000)
        files = [
            folder / "Annotations",
            folder / "ImageSets" / "Main" / "test.txt",
            folder / "results" / "comp4_det_test_{cls}.txt",
        ]
        print(f"VOC: {args.images} images, 20 classes, 100000 detections, VOC2007 11-point AP")
        one = run("voc_evaluate", files)
        print(
            f"one evaluation: {one['wall']:.2f} s wall, {one['cpu']:.2f} s CPU, {one['rss_mb']:.0f} MB peak"
        )
        for p in args.processes:
            res = run("voc_bootstrap", files, b, p)
            report(f"bootstrap, processes={p} ({res['used']})", one, res, b, "resample")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
