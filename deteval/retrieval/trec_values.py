"""Per-topic values of the requested trec_eval measures (:func:`compute`), the conventions that select
them (:class:`Options`), and trec_eval's z-scores (``-Z``) and score precision per version."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from deteval.errors import ConfigError
from deteval.io.trec_tables import Run
from deteval.retrieval import measures as M
from deteval.retrieval import measures_extra as X
from deteval.retrieval.prepare import RankedTopics
from deteval.retrieval.trec_measures import Family, param_name, printed_name
from deteval.retrieval.trec_output import ZSCORES_MISSING
from deteval.retrieval.versions import DEFAULT_RECALL_LEVELS, DEFAULT_VERSION, RECALL_LEVELS, recall_cutoff


@dataclass(frozen=True)
class Options:
    """Non-trec_eval conventions (seed 002 / 003); the defaults reproduce trec_eval."""

    gain: str = "trec"  # "trec": gain = relevance value; "exp2": 2^rel - 1
    discount: str = "trec"  # "trec": log2(rank + 1); "max2": log2(max(rank, 2))
    recall_denominator: str = "R"  # "R" (trec_eval) or "min_k_R" (seed 003)
    ap_denominator: str = "num_rel"  # map/map_cut: "num_rel" (trec_eval) or "num_rel_ret" (seed 003)
    version: str = DEFAULT_VERSION  # the trec_eval release whose rules apply (deteval.retrieval.versions)
    recall_levels: str = DEFAULT_RECALL_LEVELS  # "float32": the float-level binaries (versions.recall_cutoff)
    judged_only: bool = False  # -J (trec_eval's own convention; read by the measures of -c's empty rankings)

    def check(self) -> None:
        for name, value, allowed in [
            ("recall_levels", self.recall_levels, RECALL_LEVELS),
            ("gain", self.gain, ("trec", "exp2")),
            ("discount", self.discount, ("trec", "max2")),
            ("recall_denominator", self.recall_denominator, ("R", "min_k_R")),
            ("ap_denominator", self.ap_denominator, ("num_rel", "num_rel_ret")),
        ]:
            if value not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")

    def non_default(self) -> list[str]:
        d = Options()
        return [
            f"{k}={getattr(self, k)}"
            for k in ("gain", "discount", "recall_denominator", "ap_denominator")
            if getattr(self, k) != getattr(d, k)
        ]


def compute(
    rt: RankedTopics, requested: Sequence[tuple[Family, tuple]], opts: Options = Options(), num_docs: int = 0
) -> dict[str, tuple[np.ndarray, str]]:
    """Per-topic values of every requested measure: ``{printed name: (values, aggregation)}``."""
    c = M.Cache(rt)
    out: dict[str, tuple[np.ndarray, str]] = {}

    bogus = bogus_topics(rt, opts)

    def added(p: tuple) -> np.ndarray | None:
        # 10.0 resets a measure on those topics by its exact name: asked with parameters, it keeps their value
        return bogus if getattr(p, "text", "") else None

    def utility(p: tuple) -> np.ndarray:
        # a topic -c adds scores 0 (9.0.8 never evaluates it; 10.0 resets "utility" by that name), but in 10.0
        # utility_<coefficients> keeps what it computed there (the one document, or -J's empty ranking)
        kept = rt.in_run | (opts.version == "10.0" and bool(getattr(p, "text", "")))
        return np.where(kept, X.utility(c, p, int(num_docs), added(p)), 0.0)

    simple: dict[str, Callable[[], np.ndarray]] = {
        "num_q": lambda: np.ones(rt.n_topics),
        "num_ret": lambda: M.num_ret(c),
        "num_rel": lambda: M.num_rel(c),
        "num_rel_ret": lambda: M.num_rel_ret(c),
        "map": lambda: M.average_precision(c, None, opts.ap_denominator),
        "gm_map": lambda: M.gm_map_per_topic(c, opts.ap_denominator),
        "Rprec": lambda: M.r_precision(c),
        "bpref": lambda: M.bpref(c),
        "recip_rank": lambda: M.recip_rank(c),
        "binG": lambda: X.bin_g(c),
        "infAP": lambda: X.inf_ap(c),
        "set_P": lambda: M.safe_div(M.num_rel_ret(c), rt.num_ret),
        "set_recall": lambda: M.safe_div(M.num_rel_ret(c), rt.num_rel),
        "set_relative_P": lambda: M.safe_div(M.num_rel_ret(c), np.minimum(rt.num_ret, rt.num_rel)),
        # m_set_map.c: num_rel_ret**2 / (num_ret * num_rel), each product in doubles (0 if either is 0)
        "set_map": lambda: M.safe_div(M.num_rel_ret(c) ** 2, M.num_ret(c) * M.num_rel(c)),
        "num_nonrel_judged_ret": lambda: M.num_nonrel_judged_ret(c),
        "gm_bpref": lambda: np.log(np.maximum(M.bpref(c), M.MIN_GEO_MEAN)),
        "Fmax": lambda: M.f_max(c),
    }
    whole: dict[str, Callable[[tuple], np.ndarray]] = {
        "ndcg": lambda p: X.gain_measure(c, "ndcg", p) if p else M.ndcg(c, None, opts.gain, opts.discount),
        "ndcg_rel": lambda p: X.gain_measure(c, "ndcg_rel", p),
        "Rndcg": lambda p: X.gain_measure(c, "Rndcg", p),
        "G": lambda p: X.gain_measure(c, "G", p),
        "rbp": lambda p: X.rbp(c, p),
        "utility": utility,
        "set_F": lambda p: X.set_f(c, p[0]),
        "relstring": lambda p: np.array(X.relstring(c, int(p[0]), added(p)), dtype=object),
        "rbp_resid": lambda p: X.rbp_resid(c, p, added(p)),
    }
    per_k: dict[str, Callable[[int], np.ndarray]] = {
        "P": lambda k: M.precision_at(c, k),
        "recall": lambda k: M.recall_at(c, k, opts.recall_denominator),
        "relative_P": lambda k: M.recall_at(c, k, "min_k_R"),
        "ndcg_cut": lambda k: M.ndcg(c, k, opts.gain, opts.discount),
        "map_cut": lambda k: M.average_precision(c, k, opts.ap_denominator),
        "success": lambda k: M.success_at(c, k),
        "dcg_cut": lambda k: M.dcg(c, k, opts.gain, opts.discount),
        "F": lambda k: M.f_at(c, k, opts.recall_denominator),
        "recip_rank_cut": lambda k: M.recip_rank(c, k),
        "unj": lambda k: X.unjudged_at(c, k),
    }
    per_x: dict[str, Callable[[float], np.ndarray]] = {"Rprec_mult": lambda x: X.rprec_mult(c, x)}
    for fam, params in requested:
        if fam.name == "runid":
            continue
        if fam.name in whole:
            out[printed_name(fam, params)] = (whole[fam.name](params), fam.agg)
        elif fam.name in simple:
            out[fam.name] = (simple[fam.name](), fam.agg)
        elif fam.name in per_k:
            for k in params:
                out[param_name(fam, k)] = (per_k[fam.name](int(k)), fam.agg)
        elif fam.name in per_x:
            for x in params:
                out[param_name(fam, x)] = (per_x[fam.name](float(x)), fam.agg)
        elif fam.name == "iprec_at_recall":
            vals = _iprec(c, params, opts)
            for j, x in enumerate(params):
                out[param_name(fam, x)] = (vals[:, j], fam.agg)
        elif fam.name == "11pt_avg":
            vals = _iprec(c, params, opts)
            # m_11pt_avg.c adds the levels from the highest down, one at a time
            total = np.zeros(rt.n_topics)
            for j in range(len(params) - 1, -1, -1):
                total += vals[:, j]
            out[printed_name(fam, params)] = (total / len(params), fam.agg)
    return out


def bogus_topics(rt: RankedTopics, opts: Options) -> np.ndarray:
    """The qrels topics ``-c`` adds that trec_eval 10.0 scores as a ranking of one document not in the pool
    (trec_eval.c's ``bogus_ranking``, docno ``ceci_nest_pas_un_docno``, which ``-J`` removes again), as a
    bool per topic.

    10.0 then resets the measures it names exactly (``num_ret``, ``utility``, ``relstring``, ``unj*``,
    ``rbp_resid``): those read as an empty ranking. A measure asked with parameters prints under another
    name (``utility_1,-2,0,0``, ``relstring_5``, ``rbp_resid_p=0.5``) and keeps the one document's value;
    9.0.8 never evaluates these topics."""
    if opts.version != "10.0" or opts.judged_only:
        return np.zeros(rt.n_topics, dtype=bool)
    return ~rt.in_run


#: The NaN that 0.0 / 0.0 gives on x86-64 (sign bit set: glibc prints it "-nan"), as trec_eval's measures
#: compute it.
NAN_0_0 = -np.nan


def _iprec(c: M.Cache, params: tuple, opts: Options) -> np.ndarray:
    """iprec_at_recall at the levels, with trec_eval's NaN: a run topic left with nothing retrieved (-J
    removed every document) starts from precision 0/0, and every level that maps to 0 relevant documents
    takes that NaN (m_iprec_at_recall.c, m_11pt_avg.c; pytrec_eval agrees). The empty rankings of -c
    give 0 there (trec_eval's test/out.test.aqc), except in 10.0 with -J: 10.0 scores a missing topic as a
    ranking of one unjudged document (trec_eval.c's ``bogus_ranking``), which -J empties, so the NaN is
    there too; 9.0.8 does not evaluate those topics."""
    rt = c.rt
    levels = np.asarray(params, dtype=np.float64)
    vals = M.iprec_at_recall(c, levels, opts.version, opts.recall_levels)
    scored = rt.in_run | (opts.version == "10.0" and opts.judged_only)
    empty = (rt.num_ret == 0) & scored
    if empty.any():
        for j, x in enumerate(levels.tolist()):
            cut = recall_cutoff(x, rt.num_rel, opts.version, opts.recall_levels)
            vals[empty & (cut == 0), j] = NAN_0_0
    return vals


MISSING_ZSCORE_VALUE = -1000000.0


def to_zscores(
    values: dict[str, tuple[np.ndarray, str]],
    topics: list[str],
    zscores: Mapping[tuple[str, str], tuple[float, float]],
    convert: np.ndarray | None = None,
) -> tuple[dict[str, tuple[np.ndarray, str]], int]:
    """Per-topic values as z-scores (trec_eval -Z, convert_zscores.c): (value - mean) / stddev with the
    topic's and measure's mean and stddev; with stddev 0, 0 if value == mean; -1000000 where the file has
    no entry or the stddev is 0 and the value is not the mean (trec_eval's MISSING_ZSCORE_VALUE). A NaN mean
    or stddev (``nan`` in the file) gives NaN, as in C. ``num_q`` (a count) and ``relstring`` keep their
    values, and so do the topics where ``convert`` (a bool per topic) is False: :func:`zscore_topics`.

    Returns the values and how many of them are -1000000 that way (:func:`missing_zscores_note`)."""
    out = {}
    missing = 0
    past_end = entries_past_the_end(zscores)
    for name, (vals, agg) in values.items():
        if name == "num_q" or agg == "none":
            out[name] = (vals, agg)
            continue
        z = np.empty(len(topics), dtype=np.float64)
        for i, topic in enumerate(topics):
            ms = zscores.get((topic, name)) or past_end.get((topic, name))
            v = float(vals[i])
            if convert is not None and not convert[i]:
                z[i] = v
            elif ms is None or (not ms[1] and v != ms[0]):
                z[i] = MISSING_ZSCORE_VALUE
                missing += 1
            elif ms[1]:
                z[i] = (v - ms[0]) / ms[1]
            else:
                z[i] = 0.0
        out[name] = (z, agg)
    return out, missing


def entries_past_the_end(
    zscores: Mapping[tuple[str, str], tuple[float, float]],
) -> dict[tuple[str, str], tuple[float, float]]:
    """The (topic, measure) lines trec_eval finds for a topic that lacks them.

    convert_zscores.c's binary search over a topic's lines (sorted by measure name, strcmp) starts with
    ``end = num_zscores``, one past the last line. A measure name above all of the topic's names is therefore
    compared, last, with the line after them: get_zscores.c keeps every line in one pool sorted by (qid,
    measure), so that is the next topic's first line, and when its measure is the one looked for trec_eval
    uses its mean and stddev. Both versions have it. For the file's last topic the line after is past the
    pool (undefined: such a lookup stays missing here)."""
    by_topic: dict[str, list[str]] = {}
    for topic, measure in zscores:
        by_topic.setdefault(topic, []).append(measure)

    def c_order(name: str) -> bytes:  # strcmp's order
        return name.encode("utf-8", "surrogateescape")

    out = {}
    for topic, following in itertools.pairwise(sorted(by_topic, key=c_order)):
        first = min(by_topic[following], key=c_order)
        if c_order(first) > c_order(max(by_topic[topic], key=c_order)):
            out[topic, first] = zscores[following, first]
    return out


def missing_zscores_note(n: int) -> str:
    """The warning for ``n`` per-topic values that ``-Z`` could not convert (:func:`to_zscores`)."""
    return (
        f"-Z: {n} per-topic value{'s' if n != 1 else ''} had no (topic, measure) line in the z-score file, or "
        "a stddev of 0 with a value other than the mean: set to -1000000 as trec_eval sets them (they dominate "
        f"the averages); counted in {ZSCORES_MISSING}"
    )


def zscore_topics(in_run: np.ndarray, version: str) -> np.ndarray:
    """The topics whose values -Z converts: all of them in 10.0; in 9.0.8 only those in the run, because
    9.0.8 never evaluates the qrels topics ``-c`` adds (it divides by their number): they add their
    empty-ranking value unconverted (0; log(1e-5) for ``gm_*``, trec_eval's MIN_GEO_MEAN)."""
    return in_run if version == "9.0.8" else np.ones(in_run.shape[0], dtype=bool)


def as_read_by(run: Run, version: str) -> Run:
    """The run's scores as that trec_eval version holds them.

    trec_eval 9.0.x stores each score in a C ``float`` (``atof`` then a double-to-float conversion, round to
    nearest): scores equal in float32 tie and the tie is broken by docno. 10.0 keeps the double. numpy's
    float64 -> float32 cast rounds the same way. A score beyond float32's range becomes +-inf, as in C.
    """
    if version != "9.0.8":
        return run
    with np.errstate(over="ignore"):
        score = run.score.astype(np.float32)  # ranked as float32: half the memory of a float64 copy
    return replace(run, score=score)
