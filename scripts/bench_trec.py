"""Benchmark: deteval vs pytrec_eval (and ranx, trec_eval when installed) on a large TREC run, end to end.

Generates qrels and a run (default 100,000 topics x 100 documents = 10M run lines) into a temporary
directory, then times each tool in its own subprocess from the files to the averaged measures (parsing
included), reporting wall time, the ratio to deteval and the peak resident memory of that process. The
numbers of the tools are compared too (they must agree).

    python scripts/bench_trec.py [--topics 100000] [--docs 100] [--keep DIR] [--trec-eval PATH]

trec_eval (the C program, 9.0.8 or 10.0) runs when ``--trec-eval`` names it or it is on the PATH; its
peak memory is its own (``wait4``), its time includes printing the ``all`` lines.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# trec_eval's default measures plus nDCG@10 and recall (pytrec_eval syntax = trec_eval syntax)
MEASURES = [
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
    "recall",
    "ndcg_cut.10",
]


def generate(directory: Path, n_topics: int, n_docs: int, seed: int = 0) -> tuple[Path, Path]:
    import numpy as np

    rng = np.random.default_rng(seed)
    qrels_path, run_path = directory / "qrels.txt", directory / "run.txt"
    collection = 5_000_000
    with open(run_path, "w") as fr, open(qrels_path, "w") as fq:
        for start in range(0, n_topics, 1000):
            stop = min(start + 1000, n_topics)
            run_lines, qrels_lines = [], []
            for t in range(start, stop):
                docs = rng.choice(collection, n_docs + 20, replace=False)
                retrieved = docs[:n_docs]
                # 4 decimals: realistic score ties, which trec_eval breaks by docno
                scores = np.sort(np.round(rng.gamma(2.0, 3.0, n_docs), 4))[::-1]
                run_lines.extend(
                    f"{t + 1} Q0 DOC-{d:08d} {r + 1} {s:.4f} bench\n"
                    for r, (d, s) in enumerate(zip(retrieved.tolist(), scores.tolist()))
                )
                # ~15 judged per topic, graded 0-2, some judged documents not retrieved
                n_judged = int(rng.integers(5, 25))
                judged = np.concatenate(
                    (rng.choice(retrieved, n_judged - 5, replace=False), docs[n_docs : n_docs + 5])
                )
                rel = rng.choice([0, 0, 1, 1, 2], size=judged.size)
                qrels_lines.extend(
                    f"{t + 1} 0 DOC-{d:08d} {r}\n" for d, r in zip(judged.tolist(), rel.tolist())
                )
            fr.write("".join(run_lines))
            fq.write("".join(qrels_lines))
    return qrels_path, run_path


def peak_rss_mb() -> float:
    """Peak resident memory of this process. VmHWM belongs to this address space; ru_maxrss may carry the
    parent's peak over fork + exec (the parent generated the data)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker_trec_eval(qrels: str, run: str, binary: str) -> dict:
    args = [binary, *(a for m in MEASURES for a in ("-m", m)), qrels, run]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(err.decode(errors="replace"))
    summary = {}
    for line in out.decode().splitlines():
        name, topic, value = line.split()
        if topic == "all" and name not in ("runid", "num_q"):
            summary[name] = float(value)
    # the child's own peak (ru_maxrss of the waited-for children: trec_eval is the only one)
    return {"seconds": seconds, "summary": summary, "child_peak_mb": usage.ru_maxrss / 1024.0,
            "cpu": usage.ru_utime + usage.ru_stime}  # fmt: skip


def worker_deteval(qrels: str, run: str, root: str = str(ROOT)) -> dict:
    sys.path.insert(0, root)
    from deteval.io.trec import load_qrels, load_run
    from deteval.retrieval import evaluate_trec

    t0 = time.perf_counter()
    res = evaluate_trec(load_qrels(qrels), load_run(run), MEASURES)
    return {"seconds": time.perf_counter() - t0, "summary": res.summary}


def worker_pytrec_eval(qrels: str, run: str) -> dict:
    import pytrec_eval

    t0 = time.perf_counter()
    with open(qrels) as fq:
        q = pytrec_eval.parse_qrel(fq)
    with open(run) as fr:
        r = pytrec_eval.parse_run(fr)
    per_topic = pytrec_eval.RelevanceEvaluator(q, set(MEASURES)).evaluate(r)
    names = next(iter(per_topic.values())).keys()
    n = len(per_topic)
    summary = {}
    for name in names:
        vals = [row[name] for row in per_topic.values()]
        if name in ("num_ret", "num_rel", "num_rel_ret"):
            summary[name] = round(sum(vals))
        elif name == "gm_map":
            import math

            summary[name] = math.exp(sum(vals) / n)
        else:
            summary[name] = sum(vals) / n
    return {"seconds": time.perf_counter() - t0, "summary": summary}


def worker_ranx(qrels: str, run: str) -> dict:
    from ranx import Qrels, Run, evaluate

    t0 = time.perf_counter()
    q = Qrels.from_file(qrels, kind="trec")
    r = Run.from_file(run, kind="trec")
    metrics = ["map", "ndcg@10", "precision@10", "recall@10", "mrr"]
    out = evaluate(q, r, metrics)
    names = {
        "map": "map",
        "ndcg@10": "ndcg_cut_10",
        "precision@10": "P_10",
        "recall@10": "recall_10",
        "mrr": "recip_rank",
    }
    return {"seconds": time.perf_counter() - t0, "summary": {names[k]: float(v) for k, v in out.items()}}


WORKERS = {"deteval": worker_deteval, "pytrec_eval": worker_pytrec_eval, "ranx": worker_ranx}


def run_worker(name: str, qrels: Path, run: Path, extra: tuple[str, ...] = ()) -> dict | None:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", name, str(qrels), str(run), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        print(f"{name}: failed\n{proc.stderr.strip()[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, default=100_000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR (reused if the files exist)")
    ap.add_argument("--trec-eval", metavar="PATH", default=shutil.which("trec_eval"), help="trec_eval binary")
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--skip", nargs="*", default=[], help="tools to skip (pytrec_eval, ranx, trec_eval)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool, interleaved (the fastest is shown)")
    ap.add_argument(
        "--other", type=Path, metavar="PATH", help="also run the deteval of this checkout as 'deteval@other'"
    )
    args = ap.parse_args()
    if args.worker:
        tool, qrels, run, *extra = args.worker
        if tool == "trec_eval":
            out = worker_trec_eval(qrels, run, extra[0])
            out["peak_rss_mb"] = out.pop("child_peak_mb")
        else:
            out = (
                worker_deteval(qrels, run, extra[0]) if tool == "deteval@other" else WORKERS[tool](qrels, run)
            )
            out["peak_rss_mb"] = peak_rss_mb()
            times = os.times()
            out["cpu"] = times.user + times.system
        print(json.dumps(out))
        return 0

    tmp = None
    if args.keep:
        directory = Path(args.keep)
        directory.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="deteval-bench-trec-")
        directory = Path(tmp.name)
    qrels, run = directory / "qrels.txt", directory / "run.txt"
    if not (qrels.exists() and run.exists()):
        t0 = time.perf_counter()
        generate(directory, args.topics, args.docs)
        print(
            f"generated {args.topics} topics x {args.docs} docs in {time.perf_counter() - t0:.1f} s "
            f"(run {run.stat().st_size / 1e6:.0f} MB, qrels {qrels.stat().st_size / 1e6:.0f} MB)"
        )

    tools: list[tuple[str, tuple[str, ...]]] = [("deteval", ())]
    if args.other:
        tools.append(("deteval@other", (str(args.other),)))
    tools.append(("pytrec_eval", ()))
    try:
        import ranx  # noqa: F401

        tools.append(("ranx", ()))
    except ImportError:
        print("ranx: not installed, skipped")
    if args.trec_eval:
        tools.append(("trec_eval", (args.trec_eval,)))
    else:
        print("trec_eval: not found (--trec-eval PATH), skipped")
    results: dict[str, dict] = {}
    walls: dict[str, list[float]] = {}
    tools = [(t, e) for t, e in tools if t not in args.skip]
    for _ in range(max(1, args.repeat)):  # rounds over every tool: a slow spell hits them all alike
        for tool, extra in tools:
            res = run_worker(tool, qrels, run, extra)
            if res is not None:
                walls.setdefault(tool, []).append(res["seconds"])
                if tool not in results or res["seconds"] < results[tool]["seconds"]:
                    results[tool] = res
    for tool, w in walls.items():
        if len(w) > 1:
            print(f"{tool}: median {sorted(w)[len(w) // 2]:.2f} s over {len(w)} runs")

    base = results.get("deteval")
    print(
        f"\n{'tool':<12} {'seconds':>9} {'ratio':>8} {'CPU s':>7} {'peak RSS MB':>12} {'RSS ratio':>10}"
        "   (parse + evaluate + average)"
    )
    for tool, res in results.items():
        ratio = res["seconds"] / base["seconds"] if base else float("nan")
        mem = res["peak_rss_mb"] / base["peak_rss_mb"] if base else float("nan")
        print(
            f"{tool:<12} {res['seconds']:9.2f} {ratio:7.2f}x {res['cpu']:7.2f} {res['peak_rss_mb']:12.0f}"
            f" {mem:9.2f}x"
        )
    if base:
        for tool, res in results.items():
            if tool == "deteval":
                continue
            common = [k for k in res["summary"] if k in base["summary"]]
            diff = max(abs(float(base["summary"][k]) - float(res["summary"][k])) for k in common)
            print(f"max |deteval - {tool}| over {len(common)} averaged measures: {diff:.3g}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
