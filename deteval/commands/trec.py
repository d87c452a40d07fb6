"""``deteval trec QRELS RUN``: trec_eval's measures and output, from deteval's vectorised core.

The default output is trec_eval's: ``measure<TAB>topic|all<TAB>value`` with the measure padded to 22
characters and 4 decimals, so scripts that parse trec_eval output can switch over unchanged.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import numpy as np

from deteval.commands import options as opt
from deteval.commands.cluster import add_cluster_args, refuse_with_cluster, sharding_requested
from deteval.commands.common import apply_preset, warn_on_stderr, write_text
from deteval.commands.options import Checker
from deteval.commands.stats_options import add_stats_args, stats_options
from deteval.errors import ConfigError
from deteval.io.prefs import load_prefs
from deteval.io.trec import load_qrels, load_run, load_zscores
from deteval.report import render
from deteval.report.progress import Progress
from deteval.report.stats_table import stats_lines
from deteval.retrieval.prefs import evaluate_prefs
from deteval.retrieval.trec_output import format_trec, iter_trec_lines
from deteval.retrieval.versions import DEFAULT_RECALL_LEVELS, DEFAULT_VERSION, RECALL_LEVELS, VERSIONS
from deteval.run.client import dask_client
from deteval.run.trec import evaluate_trec
from deteval.stats.bootstrap import check_weights
from deteval.stats.trec import trec_statistics

_FORMATS = ("trec", "json", "csv", "table", "markdown")


#: trec has no presets: its numeric options are checked (strict syntax, bounds) as the others' are.
OPTIONS: dict[str, Checker] = {
    "level": opt.whole(0, 2**63 - 1, "a relevance level"),
    "max_docs": opt.whole(1, 2**63 - 1, "a number of ranks"),
}


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    apply_preset(args, parser, {}, OPTIONS)
    if args.rel_format in ("prefs", "qrels_prefs"):
        return _run_prefs(args)
    with Progress(3, "deteval trec") as bar:
        bar.stage("reading qrels")
        comments = args.trec_eval_version == "10.0"  # 9.0.8 has no comment lines
        qrels = load_qrels(
            args.qrels,
            on_error=args.on_error,
            comments=comments,
            judgment_groups=args.rel_format == "qrels_jg",
        )
        bar.stage("reading run")
        results = load_run(args.run, on_error=args.on_error, comments=comments)
        bar.stage("measures")
        stats = stats_options(args)
        refuse_with_cluster(args, stats is not None, False)
        if stats is not None and stats.get("level") is not None:
            # the topics the bootstrap resamples are known now: a refusal need not wait for the evaluation
            check_weights(_evaluated_topics(qrels, results, args.complete), stats["n_resamples"])

        def evaluate(results: Any, client: Any = None) -> Any:
            return evaluate_trec(
                qrels,
                results,
                args.measures or None,
                relevance_level=args.level,
                complete=args.complete,
                per_query=(args.query and args.format != "trec")
                or args.format in ("json", "csv")
                or stats is not None,
                topic_columns=args.query,  # -q in trec format: lines streamed from arrays (iter_trec_lines)
                max_docs=args.max_docs,
                gain=args.gain,
                discount=args.discount,
                recall_denominator=args.recall_denominator,
                ap_denominator=args.ap_denominator,
                version=args.trec_eval_version,
                zscores=load_zscores(args.zscores) if args.zscores else None,
                judged_only=args.judged_only,
                recall_levels=args.recall_levels,
                num_docs=args.num_docs,
                client=client,
                shards=args.shards,
            )

        with dask_client(args.workers, args.scheduler) as client:
            result = evaluate(results, client)
        if stats is not None:
            result = _with_statistics(args, result, evaluate, comments, stats)
    return _emit(result, args, with_stats=stats is not None)


def _run_prefs(args: argparse.Namespace) -> int:
    """``-R prefs`` / ``-R qrels_prefs``: the preference measures (deteval.retrieval.prefs)."""
    if args.judged_only or args.num_docs or args.level != 1:
        raise ConfigError("-J, -N and -l do not apply to preference judgements (-R prefs / qrels_prefs)")
    if stats_options(args) is not None or sharding_requested(args):
        raise ConfigError(
            "--ci/--compare-to and --workers/--scheduler/--shards do not apply to preference judgements yet"
        )
    comments = args.trec_eval_version == "10.0"
    prefs = load_prefs(args.qrels, qrels_format=args.rel_format == "qrels_prefs", comments=comments)
    results = load_run(args.run, on_error=args.on_error, comments=comments)
    result = evaluate_prefs(
        prefs,
        results,
        args.measures or None,
        complete=args.complete,
        per_query=(args.query and args.format != "trec") or args.format in ("json", "csv"),
        max_docs=args.max_docs,
        version=args.trec_eval_version,
        zscores=load_zscores(args.zscores) if args.zscores else None,
        topic_columns=args.query,  # -q in trec format: lines streamed from arrays (iter_trec_lines)
    )
    return _emit(result, args)


def _evaluated_topics(qrels: Any, run: Any, complete: bool) -> int:
    """How many topics are evaluated: every qrels topic with ``-c``, else those of both files."""
    judged = np.unique(qrels.topic)
    return int(judged.shape[0]) if complete else int(np.intersect1d(judged, np.unique(run.topic)).shape[0])


def _emit(result: Any, args: argparse.Namespace, with_stats: bool = False) -> int:
    text: str | Iterator[str]
    if args.format == "trec" and with_stats:
        text = "\n".join(result.lines) + "\n"
    elif args.format == "trec":  # written a block of topics at a time: -q holds no line of every topic
        text = ("".join(ln + "\n" for ln in block) for block in iter_trec_lines(result, per_query=args.query))
    else:
        if args.format in ("json", "csv"):
            result.lines = []
        text = render(result, args.format)
    write_text(text, args.output)
    warn_on_stderr(result)
    return 0


def _with_statistics(
    args: argparse.Namespace, result: Any, evaluate: Any, comments: bool, stats: dict[str, Any]
) -> Any:
    """Intervals and comparisons over topics (deteval.stats); each --compare-to run is evaluated alike."""
    others = [
        (o, evaluate(load_run(o, on_error=args.on_error, comments=comments))) for o in args.compare_to or ()
    ]
    trec_lines = format_trec(result, per_query=args.query)  # before the statistics join the summary
    trec_statistics(result, others, **stats)
    if not (args.query or args.format in ("json", "csv")):
        result.per_class = {}  # evaluated per topic for the statistics only
    if args.format == "trec":
        result.lines = [*trec_lines, "", *stats_lines(result)]
    return result


def register(command: Any) -> None:
    p = command(
        "trec",
        run,
        description="Evaluate a TREC run (qid Q0 docno rank score tag) against qrels (qid 0 docno rel) "
        "with trec_eval's measures, names, conventions and output format.",
    )
    p.add_argument("qrels", metavar="QRELS", help="qrels file: qid iter docno rel")
    p.add_argument("run", metavar="RUN", help="run file: qid Q0 docno rank score tag")
    p.add_argument(
        "-m",
        dest="measures",
        action="append",
        metavar="MEASURE",
        help="measure, family or set, trec_eval syntax: map, P_10, P.5,10, ndcg_cut.10, official, "
        "all_trec (repeatable; default: official)",
    )
    p.add_argument("-q", dest="query", action="store_true", help="also print the value of every topic")
    p.add_argument(
        "-c",
        dest="complete",
        action="store_true",
        help="average over all qrels topics, counting those missing from the run as empty rankings",
    )
    p.add_argument(
        "-l",
        dest="level",
        default=1,
        metavar="N",
        help="relevance level: a judgement >= N is relevant (default 1)",
    )
    p.add_argument(
        "-M",
        dest="max_docs",
        metavar="N",
        help="evaluate only the first N ranks of each topic",
    )
    _add_conventions(p)
    p.add_argument(
        "-R",
        dest="rel_format",
        choices=("qrels", "qrels_jg", "prefs", "qrels_prefs"),
        default="qrels",
        help="qrels format: qrels (default), qrels_jg (the iter field is a judgment group; measures "
        "map_avgjg, P_avgjg, Rprec_mult_avgjg; default set qrels_jg), prefs ('qid jg jsg docno rel' "
        "preference lines) or qrels_prefs (a qrels file read as preferences): the prefs_* measures, "
        "default set all_prefs",
    )
    p.add_argument(
        "-J",
        dest="judged_only",
        action="store_true",
        help="judged documents only: documents without a judgement leave the ranking (trec_eval -J)",
    )
    p.add_argument(
        "-N",
        dest="num_docs",
        type=int,
        default=0,
        metavar="N",
        help="number of documents in the collection (only utility's fourth coefficient uses it)",
    )
    p.add_argument(
        "-Z",
        dest="zscores",
        metavar="FILE",
        help="z-scores: FILE holds 'qid measure mean stddev' lines; every per-topic value becomes "
        "(value - mean) / stddev before averaging (trec_eval -Z)",
    )
    p.add_argument(
        "--trec-eval-version",
        choices=VERSIONS,
        default=DEFAULT_VERSION,
        help="whose rules to follow: trec_eval 9.0.8 (default; scores read as float32, as pytrec_eval) "
        "or 10.0 (scores read as doubles); see docs/trec.md",
    )
    p.add_argument(
        "--recall-levels",
        choices=RECALL_LEVELS,
        default=DEFAULT_RECALL_LEVELS,
        help="iprec_at_recall / 11pt_avg levels: double (default, the version's source rule) or float32 "
        "(level held in a C float, (long)(p*R + 0.9): the binaries that printed trec_eval's test/out.test.a); "
        "see docs/trec.md",
    )
    p.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default="raise",
        help="raise (default): stop at the first bad line; skip: leave bad run/qrels lines out, each "
        "listed in the warnings and counted in skipped_records",
    )
    p.add_argument("--format", choices=_FORMATS, default="trec", help="output format (default: trec)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE instead of stdout")
    add_stats_args(p, "another run file")
    add_cluster_args(p)


def _add_conventions(p: argparse.ArgumentParser) -> None:
    """The non-trec_eval conventions (nDCG gain and discount, recall and AP denominators); each option's
    first choice, its default, is trec_eval's."""
    for flag, choices, text in (
        ("--gain", ("trec", "exp2"), "nDCG gain: the relevance value (trec_eval) or 2^rel - 1"),
        ("--discount", ("trec", "max2"), "DCG discount: log2(rank + 1) (trec_eval) or log2(max(rank, 2))"),
        ("--recall-denominator", ("R", "min_k_R"), "recall_k divides by R (trec_eval) or by min(k, R)"),
        (
            "--ap-denominator",
            ("num_rel", "num_rel_ret"),
            "AP divides by R (trec_eval) or by the relevant documents retrieved (within the cutoff)",
        ),
    ):
        p.add_argument(flag, choices=choices, default=choices[0], help=text)
