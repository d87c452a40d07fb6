"""``evaluate_trec``: trec_eval's measures, names and averaging on deteval's vectorised core.

Measure requests use trec_eval's syntax: a name (``map``, ``P_10``, ``ndcg_cut_10``,
``iprec_at_recall_0.10``), a family with parameters (``P.5,10``, ``ndcg_cut.10``, ``success.1,5``), a bare
family (``P`` = trec_eval's default cutoffs) or a set: ``official`` (trec_eval's default output) and
``all_trec`` (every trec_eval measure deteval implements).

Averaging follows trec_eval: the mean over evaluated topics, summed one topic at a time in topic order
(trec_eval's ``sum +=``), except ``num_ret``/``num_rel``/``num_rel_ret``/``num_nonrel_judged_ret`` (sums,
printed as integers), ``num_q`` (count) and ``gm_map``/``gm_bpref`` (per topic log(max(value, 1e-5)),
averaged as exp of the mean). ``trec_eval -q`` prints no per-topic ``gm_*`` line and neither does
:func:`format_trec`; ``per_class`` keeps the per-topic logarithm (what pytrec_eval returns).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from deteval.errors import ConfigError, DetevalError, ValidationError
from deteval.io.trec import Qrels, Run, qrels_from_dict, run_from_dict
from deteval.results import EvalResult
from deteval.retrieval import measures as M
from deteval.retrieval import measures_extra as X
from deteval.retrieval.jg import compute_jg, real_topics, split_groups
from deteval.retrieval.prepare import RankedTopics, group_codes, prepare
from deteval.retrieval.topic_rows import merge_warnings, take_rows
from deteval.retrieval.versions import (
    ALL_TREC,
    DEFAULT_RECALL_LEVELS,
    DEFAULT_VERSION,
    OFFICIAL,
    QRELS_JG,
    SET,
    check_recall_levels,
    check_version,
    recall_cutoff,
)

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
IPREC_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class Family:
    """A family of measures as ``-m`` names it (``P`` for ``P_5``, ``P_10``, ...): its parameter kind and default
    cutoffs, whether trec_eval has it (and since which version), and how topics aggregate."""

    name: str
    # "" (no parameters), "int" (cutoffs), "float" (recall levels in [0, 1]), "mult" (positive floats),
    # "coef" (utility's four coefficients), "beta" (one float), "gains" (level=gain pairs)
    params: str
    default: tuple = ()
    trec: bool = True  # a trec_eval measure (False: deteval extension)
    since: str = "9.0.8"  # the first trec_eval version deteval reproduces that has it
    jg: bool = False  # a judgment-group measure: needs qrels read with judgment groups (-R qrels_jg)
    agg: str = "mean"  # mean | sum | gm | count | runid


# trec_eval's measure order (te_trec_measures in measures.c, the same in 9.0.8 and 10.0 for these):
# output follows it whatever order -m gives
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family("runid", "", agg="runid"),
        Family("num_q", "", agg="count"),
        Family("num_ret", "", agg="sum"),
        Family("num_rel", "", agg="sum"),
        Family("num_rel_ret", "", agg="sum"),
        Family("map", ""),
        Family("gm_map", "", agg="gm"),
        Family("Rprec", ""),
        Family("bpref", ""),
        Family("recip_rank", ""),
        Family("iprec_at_recall", "float", IPREC_LEVELS),
        Family("P", "int", _CUTS),
        Family("relstring", "beta", (10.0,), agg="none"),
        Family("recall", "int", _CUTS),
        Family("infAP", ""),
        Family("gm_bpref", "", agg="gm"),
        Family("Rprec_mult", "mult", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)),
        Family("utility", "coef", (1.0, -1.0, 0.0, 0.0)),
        Family("11pt_avg", "float", IPREC_LEVELS),
        Family("binG", ""),
        Family("G", "gains"),
        Family("ndcg", "gains"),
        Family("ndcg_rel", "gains"),
        Family("Rndcg", "gains"),
        Family("ndcg_cut", "int", _CUTS),
        Family("map_cut", "int", _CUTS),
        Family("relative_P", "int", _CUTS),
        Family("success", "int", (1, 5, 10)),
        Family("set_P", ""),
        Family("set_relative_P", ""),
        Family("set_recall", ""),
        Family("set_map", ""),
        Family("set_F", "beta", (1.0,)),
        Family("num_nonrel_judged_ret", "", agg="sum"),
        Family("map_avgjg", "", jg=True),
        Family("P_avgjg", "int", _CUTS, jg=True),
        Family("Rprec_mult_avgjg", "mult", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0), jg=True),
        Family("rbp", "gains", since="10.0"),
        Family("rbp_resid", "", since="10.0"),
        Family("unj", "int", (5, 10, 20), since="10.0"),
        # deteval extensions (not in trec_eval)
        Family("dcg_cut", "int", _CUTS, trec=False),
        Family("F", "int", _CUTS, trec=False),
        Family("Fmax", "", trec=False),
        Family("recip_rank_cut", "int", (1, 5, 10), trec=False),
    ]
}


def sets(version: str = DEFAULT_VERSION) -> dict[str, tuple[str, ...]]:
    """trec_eval's measure-set nicknames for that version, restricted to the measures deteval computes."""
    known = {n for n, f in FAMILIES.items() if f.trec}
    return {
        name: tuple(n for n in names if n in known)
        for name, names in (
            ("official", OFFICIAL),
            ("all_trec", ALL_TREC[version]),
            ("set", SET),
            ("qrels_jg", QRELS_JG),
        )
    }


SETS = sets()


def _param_name(fam: Family, value: float) -> str:
    return f"{fam.name}_{value:.2f}" if fam.params in ("float", "mult") else f"{fam.name}_{int(value)}"


_WHOLE = ("coef", "beta", "gains")  # kept in the order given (not sorted)


class Params(tuple):
    """A measure's parameters; ``text`` keeps them as written on the command line, because trec_eval
    names a single-valued measure with explicit parameters after that text (``utility_2,-1,0,0``,
    ``11pt_avg_.25,.5,.75``, ``ndcg_1=3,2=9,4=4.5``; test/out.test.meas_params)."""

    text: str = ""


def _single(fam: Family) -> bool:
    """One printed value however many parameters (their text then goes into the name)."""
    return fam.params in _WHOLE or fam.name == "11pt_avg"


def printed_name(fam: Family, params: tuple) -> str:
    """The name trec_eval prints for a single-valued measure: ``name`` or ``name_<parameters as given>``."""
    text = getattr(params, "text", "")
    return f"{fam.name}_{text}" if text else fam.name


def parse_measures(
    specs: Iterable[str] | str | None, version: str = DEFAULT_VERSION
) -> list[tuple[Family, Params]]:
    """Requested measures as (family, parameters) in trec_eval's output order; see the module docstring.
    ``version`` decides what the set nicknames (``all_trec``) stand for."""
    named_sets = sets(version)
    if specs is None:
        specs = ["official"]
    if isinstance(specs, str):
        specs = [specs]
    # trec_eval's and pytrec_eval's rule (trec_eval.c mark_measure, meas_init.c): a set or a bare family marks
    # measures, which take their default parameters; a request with parameters (P.5,10) replaces those
    # defaults. Several such requests are merged as pytrec_eval merges them (trec_eval silently uses only the
    # first); for a measure printed as one value (utility, 11pt_avg...) a different second one is refused.
    # deteval's P_10 form adds single values to whatever the family has.
    marked: set[str] = set()
    given: dict[str, tuple[list, str]] = {}  # family -> (parameters, spec) of its request with parameters
    extra: dict[str, list] = {}

    for raw in specs:
        for spec in [s for s in str(raw).split() if s]:
            if spec in named_sets:
                marked.update(named_sets[spec])
                continue
            name, dot, rest = spec.partition(".")
            if name in FAMILIES and dot:
                fam = FAMILIES[name]
                if not fam.params:
                    raise ConfigError(f"measure {name!r} takes no parameters (got {spec!r})")
                values = _parse_params(fam, rest, spec)
                if name in given and _single(fam) and given[name][1] != spec:
                    raise ConfigError(
                        f"measure {name!r} is given parameters twice ({given[name][1]!r} and {spec!r}); "
                        "it prints one value: give one list"
                    )
                if name in given:  # pytrec_eval's rule (trec_eval would use only the first list)
                    values = given[name][0] + [v for v in values if v not in given[name][0]]
                    spec = given[name][1]
                given[name] = (values, spec)
                continue
            if name in FAMILIES:
                marked.add(name)
                continue
            head, _, tail = spec.rpartition("_")
            if head in FAMILIES and FAMILIES[head].params:
                lst = extra.setdefault(head, [])
                lst.extend(v for v in _parse_params(FAMILIES[head], tail, spec) if v not in lst)
                continue
            known = ", ".join(list(named_sets) + list(FAMILIES))
            raise ConfigError(f"unknown measure {spec!r}; known: {known}")
    wanted: dict[str, list] = {}
    texts: dict[str, str] = {}
    for name in marked | set(given) | set(extra):
        fam = FAMILIES[name]
        if name in given:
            base = given[name][0]
            if _single(fam):  # (trec_eval names those after the parameters as written)
                texts[name] = given[name][1].partition(".")[2]
        else:
            base = list(fam.default) if name in marked else []
        if _single(fam):
            wanted[name] = base if name in given or name not in extra else extra[name]
        else:
            wanted[name] = base + [v for v in extra.get(name, []) if v not in base]
    order = list(FAMILIES)
    out: list[tuple[Family, Params]] = []
    for name in sorted(wanted, key=order.index):
        fam = FAMILIES[name]
        if fam.since == "10.0" and version != "10.0":
            raise ConfigError(
                f"{name} is a trec_eval 10.0 measure; ask for it with version 10.0 (--trec-eval-version 10.0)"
            )
        params = Params(wanted[name] if fam.params in _WHOLE else sorted(wanted[name]))
        params.text = texts.get(name, "")
        out.append((fam, params))
    return out


_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)", re.ASCII)  # ASCII digits only, no 1_0


def _parts(text: str, spec: str) -> list[str]:
    """The comma-separated items of a parameter list; an empty item (``P.5,,10``, ``P.5,``) is refused:
    trec_eval reads it as 0 (``atol``/``atof`` of ""), so a cutoff list stops with "Negative cutoff detected",
    iprec_at_recall and Rprec_mult gain a 0.00 level and utility a 0 coefficient (never what was meant), and
    gain maps stop as malformed pairs."""
    parts = text.split(",") if text else []
    if "" in parts:
        raise ConfigError(
            f"empty item in the parameters of measure {spec!r}: separate the values by single commas "
            "(trec_eval would read an empty item as 0 or stop)"
        )
    return parts


#: The largest cutoff read (a C int: trec_eval's ``atol`` has no meaning beyond a long).
_MAX_CUTOFF = 2**31 - 1


def _parse_params(fam: Family, text: str, spec: str) -> list:
    if fam.params in ("coef", "beta", "gains"):
        return _parse_whole(fam, text, spec)
    vals: list = []
    for part in _parts(text, spec):
        if not _DECIMAL.fullmatch(part):
            raise ConfigError(f"bad parameter {part!r} in measure {spec!r}")
        # trec_eval reads cutoffs with atol: "23.4" is cutoff 23; beyond a C long (or inf) it has no meaning
        f = float(part)
        if not math.isfinite(f) or (fam.params == "int" and abs(f) > _MAX_CUTOFF):
            raise ConfigError(f"parameter {part[:40]!r} in measure {spec[:60]!r} is beyond {_MAX_CUTOFF}")
        v = f if fam.params in ("float", "mult") else int(f)
        if fam.params == "int" and v < 1:
            raise ConfigError(f"cutoffs must be positive in measure {spec!r}")
        if fam.params == "mult" and v <= 0:
            raise ConfigError(f"multiples of R must be positive in measure {spec!r}")
        if fam.params == "float" and not 0.0 <= v <= 1.0:
            raise ConfigError(f"recall levels must be in [0, 1] in measure {spec!r}")
        if v in vals:
            # trec_eval sorts the list and stops on an equal neighbour ("duplicate cutoffs detected"); a
            # second request with parameters for the family is refused in parse_measures
            raise ConfigError(f"duplicate parameter {part!r} in measure {spec!r} (trec_eval refuses it too)")
        vals.append(v)
    if not vals:
        raise ConfigError(f"no parameters in measure {spec!r}")
    return vals


def _parse_whole(fam: Family, text: str, spec: str) -> list:
    """utility's four coefficients, set_F's beta, or ``level=gain`` pairs (gain maps)."""
    parts = _parts(text, spec)
    if fam.params == "gains":
        pairs = []
        for part in parts:
            level, eq, gain = part.partition("=")
            named_p = fam.name == "rbp" and level == "p"  # rbp's persistence, rbp.p=0.8
            if not eq or not (named_p or re.fullmatch(r"[+-]?\d+", level)) or not _DECIMAL.fullmatch(gain):
                raise ConfigError(f"bad gain {part!r} in measure {spec!r} (expected level=gain, e.g. 2=9.5)")
            pairs.append((level if named_p else int(level), float(gain)))
        if not pairs:
            raise ConfigError(f"no parameters in measure {spec!r}")
        return pairs
    if not all(_DECIMAL.fullmatch(p) for p in parts):
        raise ConfigError(f"bad parameter in measure {spec!r}")
    want = 4 if fam.params == "coef" else 1
    if len(parts) != want:
        raise ConfigError(f"measure {spec!r} takes {want} number(s), got {len(parts)}")
    return [float(p) for p in parts]


@dataclass(frozen=True)
class Options:
    """Non-trec_eval conventions (seed 002 / 003); the defaults reproduce trec_eval."""

    gain: str = "trec"  # "trec": gain = relevance value; "exp2": 2^rel - 1
    discount: str = "trec"  # "trec": log2(rank + 1); "max2": log2(max(rank, 2))
    recall_denominator: str = "R"  # "R" (trec_eval) or "min_k_R" (seed 003)
    ap_denominator: str = "num_rel"  # map/map_cut: "num_rel" (trec_eval) or "num_rel_ret" (seed 003)
    version: str = DEFAULT_VERSION  # the trec_eval release whose rules apply (deteval.retrieval.versions)
    recall_levels: str = DEFAULT_RECALL_LEVELS  # "float32": the float-level binaries (versions.recall_cutoff)

    def check(self) -> None:
        check_recall_levels(self.recall_levels)
        for name, value, allowed in [
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
        "rbp_resid": lambda: X.rbp_resid(c),
        "set_P": lambda: M.safe_div(M.num_rel_ret(c), rt.num_ret),
        "set_recall": lambda: M.safe_div(M.num_rel_ret(c), rt.num_rel),
        "set_relative_P": lambda: M.safe_div(M.num_rel_ret(c), np.minimum(rt.num_ret, rt.num_rel)),
        "set_map": lambda: _set_map(c),
        "num_nonrel_judged_ret": lambda: M.num_nonrel_judged_ret(c),
        "gm_bpref": lambda: np.log(np.maximum(M.bpref(c), M.MIN_GEO_MEAN)),
        "Fmax": lambda: M.f_max(c),
    }
    whole: dict[str, Callable[[tuple], np.ndarray]] = {
        "ndcg": lambda p: X.ndcg_gains(c, p) if p else M.ndcg(c, None, opts.gain, opts.discount),
        "ndcg_rel": lambda p: X.ndcg_rel(c, p),
        "Rndcg": lambda p: X.rndcg(c, p),
        "G": lambda p: X.g_measure(c, p),
        "rbp": lambda p: X.rbp(c, p),
        # an empty ranking of -c scores 0 (10.0 resets it; 9.0.8 never evaluates such a topic)
        "utility": lambda p: np.where(rt.in_run, X.utility(c, p, int(num_docs)), 0.0),
        "set_F": lambda p: X.set_f(c, p[0]),
        "relstring": lambda p: np.array(X.relstring(c, int(p[0])), dtype=object),
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
                out[_param_name(fam, k)] = (per_k[fam.name](int(k)), fam.agg)
        elif fam.name in per_x:
            for x in params:
                out[_param_name(fam, x)] = (per_x[fam.name](float(x)), fam.agg)
        elif fam.name == "iprec_at_recall":
            vals = _iprec(c, params, opts)
            for j, x in enumerate(params):
                out[_param_name(fam, x)] = (vals[:, j], fam.agg)
        elif fam.name == "11pt_avg":
            vals = _iprec(c, params, opts)
            # m_11pt_avg.c adds the levels from the highest down, one at a time
            total = np.zeros(rt.n_topics)
            for j in range(len(params) - 1, -1, -1):
                total += vals[:, j]
            out[printed_name(fam, params)] = (total / len(params), fam.agg)
    return out


def _iprec(c: M.Cache, params: tuple, opts: Options) -> np.ndarray:
    """iprec_at_recall at the levels, with trec_eval's NaN: a run topic left with nothing retrieved (-J
    removed every document) starts from precision 0/0, and every level that maps to 0 relevant documents
    takes that NaN (m_iprec_at_recall.c, m_11pt_avg.c; pytrec_eval agrees). The empty rankings of -c
    give 0 there (trec_eval's test/out.test.aqc)."""
    rt = c.rt
    levels = np.asarray(params, dtype=np.float64)
    vals = M.iprec_at_recall(c, levels, opts.version, opts.recall_levels)
    empty = (rt.num_ret == 0) & rt.in_run
    if empty.any():
        for j, x in enumerate(levels.tolist()):
            cut = recall_cutoff(x, rt.num_rel, opts.version, opts.recall_levels)
            vals[empty & (cut == 0), j] = np.nan
    return vals


def _set_map(c: M.Cache) -> np.ndarray:
    """m_set_map.c: num_rel_ret**2 / (num_ret * num_rel), each product in doubles (0 if either is 0)."""
    nrr = M.num_rel_ret(c)
    return M.safe_div(nrr * nrr, M.num_ret(c) * M.num_rel(c))


MISSING_ZSCORE_VALUE = -1000000.0


def to_zscores(
    values: dict[str, tuple[np.ndarray, str]],
    topics: list[str],
    zscores: Mapping[tuple[str, str], tuple[float, float]],
) -> dict[str, tuple[np.ndarray, str]]:
    """Per-topic values as z-scores (trec_eval -Z, convert_zscores.c): (value - mean) / stddev with the
    topic's and measure's mean and stddev; with stddev 0, 0 if value == mean; -1000000 where the file has
    no entry (trec_eval's MISSING_ZSCORE_VALUE). ``num_q`` (a count) and ``relstring`` keep their values."""
    out = {}
    for name, (vals, agg) in values.items():
        if name == "num_q" or agg == "none":
            out[name] = (vals, agg)
            continue
        z = np.empty(len(topics), dtype=np.float64)
        for i, topic in enumerate(topics):
            ms = zscores.get((topic, name))
            v = float(vals[i])
            if ms is None:
                z[i] = MISSING_ZSCORE_VALUE
            elif ms[1]:
                z[i] = (v - ms[0]) / ms[1]
            else:
                z[i] = 0.0 if v == ms[0] else MISSING_ZSCORE_VALUE
        out[name] = (z, agg)
    return out


def sequential_sum(values: np.ndarray) -> float:
    """``sum += v`` over the values in order, as trec_eval accumulates topics (numpy's pairwise sum can
    differ in the last bits, enough to flip a printed fourth decimal)."""
    return float(np.cumsum(values)[-1]) if values.shape[0] else 0.0


def aggregate(values: np.ndarray, agg: str) -> float | int:
    """trec_eval's ``all`` value of one measure from its per-topic values (in topic order)."""
    n = values.shape[0]
    if agg == "sum":
        return int(sequential_sum(values))  # printed as a C long: (long) truncates
    if agg == "count":
        return n
    if n == 0:
        return 0.0
    if agg == "gm":
        return float(np.exp(sequential_sum(values) / n))
    return sequential_sum(values) / n


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


@dataclass
class TrecResult(EvalResult):
    """:class:`EvalResult` plus what :func:`format_trec` needs to print ``-q`` as the chosen trec_eval
    version does: ``unprinted_topics`` are evaluated (``-c``, topics missing from the run) and in
    ``per_class`` but trec_eval 9.0.8 prints no per-topic line for them (10.0 does)."""

    unprinted_topics: list[str] = field(default_factory=list)
    zscores: bool = False  # -Z: printed as trec_eval prints z-scores (format_trec)
    #: ``evaluate_trec(topic_columns=True)``: the topic names and each measure's per-topic values as arrays
    #: (8 bytes a value), which :func:`iter_trec_lines` prints without building ``per_class``'s dicts
    topic_columns: tuple[list[str], dict[str, np.ndarray]] | None = None


def _check_rel_format(requested: Sequence[tuple[Family, tuple]], jg_mode: bool) -> None:
    """Judgment-group measures need qrels with groups, and the other measures plain qrels (trec_eval's
    measures check the rel_info format the same way)."""
    for fam, _ in requested:
        if fam.name in ("runid", "num_q"):
            continue
        if fam.jg and not jg_mode:
            raise ConfigError(f"{fam.name} needs qrels read with judgment groups (-R qrels_jg)")
        if jg_mode and not fam.jg:
            raise ConfigError(f"{fam.name} cannot be computed from qrels with judgment groups (-R qrels_jg)")


def _as_qrels(q: Qrels | Mapping) -> Qrels:
    return q if isinstance(q, Qrels) else qrels_from_dict(q)


def _as_run(r: Run | Mapping) -> Run:
    return r if isinstance(r, Run) else run_from_dict(r)


def evaluate_trec(
    qrels: Qrels | Mapping[Any, Mapping[Any, int]],
    run: Run | Mapping[Any, Mapping[Any, float]],
    measures: Sequence[str] | str | None = None,
    *,
    relevance_level: int = 1,
    complete: bool = False,
    per_query: bool = False,
    max_docs: int | None = None,
    gain: str = "trec",
    discount: str = "trec",
    recall_denominator: str = "R",
    ap_denominator: str = "num_rel",
    version: str = DEFAULT_VERSION,
    zscores: Mapping[tuple[str, str], tuple[float, float]] | None = None,
    judged_only: bool = False,
    recall_levels: str = DEFAULT_RECALL_LEVELS,
    num_docs: int = 0,
    client: Any = None,
    shards: int | None = None,
    topic_columns: bool = False,
) -> EvalResult:
    """Evaluate a run against qrels like ``trec_eval [-q] [-c] [-l N] -m ...``.

    ``qrels``/``run``: loaded files (:func:`deteval.io.trec.load_qrels`, :func:`~deteval.io.trec.load_run`)
    or pytrec_eval-style dicts. ``measures``: trec_eval names/families/sets (default ``official``).
    ``complete`` (``-c``): qrels topics missing from the run count as empty rankings. ``max_docs`` (``-M``):
    only the first ``max_docs`` ranks of each topic are evaluated. The options ``gain``,
    ``discount``, ``recall_denominator`` and ``ap_denominator`` select the non-trec_eval conventions of
    seeds 002/003 (see :mod:`deteval.retrieval.measures`). ``version`` selects the trec_eval release whose
    rules apply, ``"9.0.8"`` (default: pytrec_eval and most published numbers) or ``"10.0"``; see
    :mod:`deteval.retrieval.versions` and docs/trec.md. ``zscores`` (``-Z``, from
    :func:`deteval.io.trec.load_zscores`): every per-topic value becomes (value - mean) / stddev before
    averaging, as convert_zscores.c does. ``judged_only`` (``-J``): documents without a judgement leave the
    ranking. ``num_docs`` (``-N``): the collection size, used only by ``utility``'s fourth coefficient.
    ``recall_levels`` (``iprec_at_recall``, ``11pt_avg``): ``"double"`` (default, the version's rule as its
    source has it) or ``"float32"`` (the level held in a C float, ``(long)(levelf * R + 0.9)``, as the
    binaries that printed trec_eval's ``test/out.test.a`` did; :func:`deteval.retrieval.versions.recall_cutoff`).

    ``client`` (a ``dask.distributed`` Client) and/or ``shards``: the topics are split into shards evaluated
    on their own (:mod:`deteval.run.trec`); every value is bit-identical to one process.

    Returns an :class:`EvalResult` (protocol ``"trec"``): ``summary`` = the ``all`` values by measure name
    (plus ``runid``), ``per_class`` = one row per topic when ``per_query``; ``lines`` = trec_eval's ``all``
    lines (:func:`format_trec` renders the per-topic lines too). ``topic_columns``: the per-topic values are
    also kept as arrays (``result.topic_columns``), from which :func:`iter_trec_lines` prints ``-q`` output
    a block of topics at a time (a dict per topic costs ~25 times the memory of its values).

    >>> qrels = {"q1": {"d1": 1, "d2": 0, "d3": 2}}
    >>> run = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1}}
    >>> evaluate_trec(qrels, run, ["map", "P.2", "recip_rank"]).summary
    {'map': 0.8333333333333333, 'recip_rank': 1.0, 'P_2': 0.5}
    """
    check_version(version)
    opts = Options(gain, discount, recall_denominator, ap_denominator, version, recall_levels)
    opts.check()
    if int(relevance_level) != relevance_level or relevance_level < 0:
        # negative levels would make unjudged documents (-1 inside trec_eval) relevant
        raise ConfigError(f"relevance_level must be a non-negative integer, got {relevance_level!r}")
    q, r = _as_qrels(qrels), as_read_by(_as_run(run), version)
    if measures is None and q.group is not None:
        measures = ["qrels_jg"]  # trec_eval's measures for judgment groups
    requested = parse_measures(measures, version)
    if max_docs is not None and (int(max_docs) != max_docs or max_docs < 1):
        raise ConfigError(f"max_docs must be a positive integer, got {max_docs!r}")
    if int(num_docs) != num_docs or num_docs < 0:
        raise ConfigError(f"num_docs must be a non-negative integer, got {num_docs!r}")
    jg_mode = q.group is not None
    _check_rel_format(requested, jg_mode)
    if jg_mode:
        q_eval, r_eval = split_groups(q, r)
    else:
        q_eval, r_eval = q, r
    prep = {"relevance_level": int(relevance_level), "complete": complete, "max_docs": max_docs,
            "judged_only": judged_only}  # fmt: skip
    if client is not None or shards is not None:
        if jg_mode:
            raise ConfigError(
                "judgment groups (-R qrels_jg) are evaluated in one process: drop client/shards"
            )
        from deteval.run.trec import topic_values_sharded

        names, in_run, values, rt_warnings = topic_values_sharded(
            q, r, requested, opts, prep, int(num_docs), client, shards
        )
    else:
        names, in_run, values, rt_warnings = topic_values(
            q_eval, r_eval, requested, opts, prep, int(num_docs), (q, r), jg_mode
        )
    if zscores is not None:
        values = to_zscores(values, names, zscores)
    warnings = list(rt_warnings)
    if non := opts.non_default():
        warnings.append("non-trec_eval conventions in effect: " + ", ".join(non))
    summary: dict[str, Any] = {}
    want_runid = any(f.name == "runid" for f, _ in requested)
    if want_runid:
        summary["runid"] = r.tag
    # -c: the qrels topics missing from the run are evaluated as empty rankings and summed too (trec_eval's
    # test/out.test.aqc, 9.0.x and 10.0 alike: num_rel includes the missing topic's relevant documents)
    all_values, arrays = summary_and_columns(values, zscores is not None)
    summary.update(all_values)
    if q.skipped is not None or r.skipped is not None:  # asked for on_error="skip"
        summary["skipped_records"] = (q.skipped or 0) + (r.skipped or 0)
    per_class: dict[str, dict[str, Any]] = {}
    if per_query:
        per_class = per_topic_rows(names, arrays)
    unprinted = [t for t, r in zip(names, in_run.tolist()) if not r] if version == "9.0.8" else []
    result = TrecResult(
        protocol="trec",
        summary=summary,
        per_class=per_class,
        warnings=warnings,
        unprinted_topics=unprinted,
        zscores=zscores is not None,
        topic_columns=(list(names), arrays) if topic_columns else None,
    )
    result.lines = format_trec(result)
    return result


def summary_and_columns(
    values: Mapping[str, tuple[np.ndarray, str]], zscores: bool
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The ``all`` value of every measure (:func:`aggregate`; ``relstring`` has none) and the per-topic
    arrays ``-q`` prints (``num_q``, like ``runid``, has none; sums and counts as integers). With -Z
    (``zscores``) the values are z-scores: a summed measure's ``all`` value is the sum of its z-scores and
    stays a double, as do its per-topic values (trec_eval's test/out.test.aqZ)."""
    summary: dict[str, Any] = {}
    for name, (vals, agg) in values.items():
        if agg != "none":  # relstring: per topic only
            summary[name] = sequential_sum(vals) if zscores and agg == "sum" else aggregate(vals, agg)
    arrays = {
        n: (v.astype(np.int64) if agg in ("sum", "count") and not zscores else v)
        for n, (v, agg) in values.items()
        if n != "num_q"
    }
    return summary, arrays


def per_topic_rows(names: Sequence[str], arrays: Mapping[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """``{topic: {measure: value}}`` (``per_class``) from per-topic value arrays (numpy scalars as Python
    ones)."""
    cols = {n: v.tolist() for n, v in arrays.items()}
    return {topic: {n: col[i] for n, col in cols.items()} for i, topic in enumerate(names)}


def no_topic_error(q: Qrels, r: Run) -> ValidationError:
    """trec_eval stops when no topic is evaluated; averages over no topic would be meaningless zeros."""
    return ValidationError(
        f"no topic has both results and judgements ({len(r)} run rows, {len(q)} qrels rows)",
        file=f"{r.source} vs {q.source}",
    )


def topic_values(
    q: Qrels,
    r: Run,
    requested: Sequence[tuple[Family, tuple]],
    opts: Options,
    prep: Mapping[str, Any],
    num_docs: int,
    inputs: tuple[Qrels, Run],
    jg_mode: bool = False,
) -> tuple[list[str], np.ndarray, dict[str, tuple[np.ndarray, str]], list[str]]:
    """Topic names, in-run flags, per-topic values of every measure and the warnings of the join
    (``inputs``: the qrels and run as given, named by the error when no topic is evaluated)."""
    if not jg_mode and len(r) > PIECE_ROWS:
        pieces = _topic_values_in_pieces(q, r, requested, opts, prep, num_docs, inputs)
        if pieces is not None:
            return pieces
    rt = prepare(q, r, **prep)
    if rt.n_topics == 0:
        raise no_topic_error(*inputs)
    if jg_mode:
        index, counts, names, in_run = real_topics(rt)
        return names, in_run, compute_jg(rt, list(requested), index, counts), rt.warnings
    return rt.topic_names(), rt.in_run, compute(rt, requested, opts, num_docs), rt.warnings


def _fmt_value(name: str, value: Any) -> str:
    if name == "relstring" or name.startswith("relstring_"):  # relstring.20 prints as relstring_20
        return f"'{value}'"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    if math.isnan(value):
        return "  -nan"  # glibc's printf of the NaN that 0.0/0.0 gives on x86-64, where trec_eval runs
    return f"{float(value):6.4f}"


def format_trec(result: EvalResult, *, per_query: bool = False) -> list[str]:
    """trec_eval's three-column output: ``measure`` padded to 22, tab, topic or ``all``, tab, value.

    With ``-Z`` trec_eval prints every measure but ``runid`` and ``relstring`` as ``Z%-22s`` and its value
    as ``%6.4f``, counts and sums included (``Znum_ret  301  -2.7605``, ``Znum_q  all  3.0000``; its
    ``test/out.test.aqZ``)."""
    return [ln for block in iter_trec_lines(result, per_query=per_query) for ln in block]


#: Topics whose ``-q`` lines :func:`iter_trec_lines` yields at once (bounds the lines held in memory).
TOPIC_BLOCK = 2048


def iter_trec_lines(result: EvalResult, *, per_query: bool = False) -> Iterator[list[str]]:
    """:func:`format_trec`'s lines in blocks, the per-topic ones :data:`TOPIC_BLOCK` topics at a time, in
    topic order: from ``result.topic_columns`` when it is kept (no per-topic dict is ever built), else from
    ``per_class``. Written block by block, ``-q`` output costs memory for one block of lines only."""
    z = isinstance(result, TrecResult) and result.zscores

    def line(name: str, topic: str, value: Any) -> str:
        if z and name != "runid" and not name.startswith("relstring"):
            return f"Z{name:<22s}\t{topic}\t{float(value):6.4f}"
        return f"{name:<22s}\t{topic}\t{_fmt_value(name, value)}"

    if per_query:
        hidden = set(result.unprinted_topics) if isinstance(result, TrecResult) else set()
        table = result.topic_columns if isinstance(result, TrecResult) else None
        if table is not None:
            names, arrays = table
            printed = [n for n in arrays if not n.startswith("gm_")]  # trec_eval -q prints no gm_* per topic
            for lo in range(0, len(names), TOPIC_BLOCK):
                cols = [(n, arrays[n][lo : lo + TOPIC_BLOCK].tolist()) for n in printed]
                yield [
                    line(name, topic, col[i])
                    for i, topic in enumerate(names[lo : lo + TOPIC_BLOCK])
                    if topic not in hidden
                    for name, col in cols
                ]
        else:
            rows = [(t, row) for t, row in result.per_class.items() if t not in hidden]
            for lo in range(0, len(rows), TOPIC_BLOCK):
                yield [
                    line(name, topic, value)
                    for topic, row in rows[lo : lo + TOPIC_BLOCK]
                    for name, value in row.items()
                    if not name.startswith("gm_")
                ]
    yield [
        line(name, "all", value)
        for name, value in result.summary.items()
        if name != "skipped_records"  # not a trec_eval measure: in the warnings and the other formats
    ]


PIECE_ROWS = 1 << 18  # run rows joined and scored at once: bounds the temporaries of a large run


def _topic_values_in_pieces(
    q: Qrels,
    r: Run,
    requested: Sequence[tuple[Family, tuple]],
    opts: Options,
    prep: Mapping[str, Any],
    num_docs: int,
    inputs: tuple[Qrels, Run],
) -> tuple[list[str], np.ndarray, dict[str, tuple[np.ndarray, str]], list[str]] | None:
    """:func:`topic_values` of a large run, evaluated a few hundred thousand rows at a time.

    A topic's values depend on its own rows alone (the argument of :mod:`deteval.run.trec`), so
    cutting the run between topic blocks into pieces of about ``PIECE_ROWS`` rows, each with its topics'
    qrels rows (qrels topics absent from the run go with the first piece), and putting the per-topic values
    back in topic order gives the one-piece table exactly, with temporaries bounded by the piece. A run
    written topic by topic is cut into zero-copy slices; otherwise a piece gathers its topics' rows, in file
    order. Returns None (the caller evaluates in one piece) when a piece raises, so that the error is the one
    a single pass reports first.
    """
    n = len(r)
    heads = np.concatenate(([0], np.flatnonzero(r.topic[1:] != r.topic[:-1]) + 1))
    names = r.topic[heads]
    by_name = np.argsort(names)
    sorted_names = names[by_name]
    ordered = None  # the rows topic by topic, when some topic's rows are not contiguous in the file
    if (sorted_names[1:] == sorted_names[:-1]).any():
        names, codes = group_codes(r.topic)
        ordered = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=names.shape[0])
        del codes
        heads = np.cumsum(counts) - counts
        by_name, sorted_names = np.arange(names.shape[0]), names
    cuts = heads[np.searchsorted(heads, np.arange(PIECE_ROWS, n, PIECE_ROWS), side="right") - 1]
    cuts = np.unique(np.concatenate(([0], cuts, [n])))
    block_piece = np.searchsorted(cuts, heads, side="right") - 1
    q_names, q_inverse = group_codes(q.topic)
    pos = np.minimum(np.searchsorted(sorted_names, q_names), sorted_names.shape[0] - 1)
    found = sorted_names[pos] == q_names
    q_piece = np.where(found, block_piece[by_name[pos]], 0)[q_inverse]
    q_order = np.argsort(q_piece, kind="stable")  # each piece's qrels rows stay in file order
    q_cuts = np.searchsorted(q_piece[q_order], np.arange(cuts.shape[0]))
    topics, in_run, tables, warnings = [], [], [], []
    try:
        for k in range(cuts.shape[0] - 1):
            a, b = int(cuts[k]), int(cuts[k + 1])
            qk = take_rows(q, q_order[q_cuts[k] : q_cuts[k + 1]])
            if ordered is None:
                long = {i - a: v for i, v in r.docno_long.items() if a <= i < b}
                cols = {c: getattr(r, c)[a:b] for c in ("topic", "docno", "score", "line")}
                rk = replace(r, **cols, warnings=[], docno_long=long)
            else:
                rk = take_rows(r, np.sort(ordered[a:b]))
            rt = prepare(qk, rk, **prep)
            warnings.append(rt.warnings)
            if rt.n_topics:
                topics.append(rt.topics)
                in_run.append(rt.in_run)
                tables.append(compute(rt, requested, opts, num_docs))
            del rt, qk, rk
    except DetevalError:
        return None
    if not tables:
        raise no_topic_error(*inputs)
    all_topics = np.concatenate(topics)
    order = np.argsort(all_topics, kind="stable")
    values = {
        key: (np.concatenate([t[key][0] for t in tables])[order], agg) for key, (_, agg) in tables[0].items()
    }
    names_out = [t.decode("utf-8", "backslashreplace") for t in all_topics[order].tolist()]
    merged = list(q.warnings) + list(r.warnings) + merge_warnings(warnings)
    return names_out, np.concatenate(in_run)[order], values, merged
