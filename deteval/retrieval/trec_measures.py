"""trec_eval's measures as ``-m`` names them: the families, their parameters and output order, the set
nicknames (``official``, ``all_trec``, ...), and the parsing of measure requests.

Measure requests use trec_eval's syntax: a name (``map``, ``P_10``, ``ndcg_cut_10``,
``iprec_at_recall_0.10``), a family with parameters (``P.5,10``, ``ndcg_cut.10``, ``success.1,5``), a bare
family (``P`` = trec_eval's default cutoffs) or a set: ``official`` (trec_eval's default output) and
``all_trec`` (every trec_eval measure deteval implements).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from deteval.errors import ConfigError
from deteval.retrieval.versions import ALL_TREC, DEFAULT_VERSION, OFFICIAL, QRELS_JG, SET

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
        Family("rbp_resid", "gains", since="10.0"),  # rbp's parameters; only p= is read
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


def param_name(fam: Family, value: float) -> str:
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
    out: list[tuple[Family, Params]] = []
    for name, fam in FAMILIES.items():  # (trec_eval's output order)
        if name not in marked and name not in given and name not in extra:
            continue
        if fam.since == "10.0" and version != "10.0":
            raise ConfigError(
                f"{name} is a trec_eval 10.0 measure; ask for it with version 10.0 (--trec-eval-version 10.0)"
            )
        text = ""
        if name in given:
            base = given[name][0]
            if _single(fam):  # (trec_eval names those after the parameters as written)
                text = given[name][1].partition(".")[2]
        else:
            base = list(fam.default) if name in marked else []
        if _single(fam):
            values = base if name in given or name not in extra else extra[name]
        else:
            values = base + [v for v in extra.get(name, []) if v not in base]
        params = Params(values if fam.params in _WHOLE else sorted(values))
        params.text = text
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
            named_p = fam.name in ("rbp", "rbp_resid") and level == "p"  # the persistence, rbp.p=0.8
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


def check_rel_format(requested: Sequence[tuple[Family, tuple]], jg_mode: bool) -> None:
    """Judgment-group measures need qrels with groups, and the other measures plain qrels (trec_eval's
    measures check the rel_info format the same way)."""
    for fam, _ in requested:
        if fam.name in ("runid", "num_q"):
            continue
        if fam.jg and not jg_mode:
            raise ConfigError(f"{fam.name} needs qrels read with judgment groups (-R qrels_jg)")
        if jg_mode and not fam.jg:
            raise ConfigError(f"{fam.name} cannot be computed from qrels with judgment groups (-R qrels_jg)")
