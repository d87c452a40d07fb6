"""trec_eval's preference measures (``-R prefs`` / ``-R qrels_prefs``, the ``prefs_*`` family).

Per topic, as form_prefs_counts.c does: the run is ranked by score (descending, ties by docno
*ascending*, comp_sim_docno) and cut at ``-M``; the judged documents it retrieved get ids 0, 1, ... in
rank order (NJR of them), the judged ones it missed follow in docno order. A judgment group (jg) with one
sub-group is a set of equivalence classes (one per rel_level, highest first: every document of a class is
preferred to every document of a lower class, a document in two classes of the group is an error); a group
with several sub-groups is a preference matrix, each sub-group's level order plus the transitive closure
(a preference cycle is an error). A preference A > B (ids a, b) is *fulfilled retrieved* if a < b < NJR,
*possible retrieved* if both < NJR, *fulfilled implied* if a < NJR <= b, *possible implied* if exactly one
is retrieved, *not occurring* if neither is. The measures (m_prefs_*.c):

* ``prefs_num_prefs_poss`` = all preferences, ``prefs_num_prefs_ful`` = fulfilled (retrieved + implied),
  ``prefs_num_prefs_ful_ret`` = fulfilled retrieved (summed over topics, not averaged);
* ``prefs_simp`` = ful / poss; ``_ret`` counts only pairs both retrieved; ``_imp`` ignores pairs neither
  retrieved; 0 when nothing is possible;
* ``prefs_pair``: over document pairs with a preference in some group, the mean of
  prefs(a > b) / (prefs(a > b) + prefs(b > a)) with a the better-ranked (retrieved) one, pairs neither
  retrieved scoring 0 (``_imp``: such pairs left out, ``_ret``: only pairs both retrieved);
* ``prefs_avgjg`` = mean over groups of ful_jg / poss_jg (a group with nothing possible adds 0), 0 unless
  the sum is positive; ``_ret`` / ``_imp`` as above;
* ``prefs_avgjg_Rnonrel``: as ``prefs_avgjg`` with the number N of non-relevant (level <= 0) documents of
  each group brought to its number R of relevant ones (level > 0): if R >= N, R - N fulfilled preferences
  are added per retrieved relevant document and R - N possible per relevant document; otherwise only the
  first R non-relevant documents are kept and the counts redone (m_prefs_avgjg_Rnonrel.c's
  ``recalculate``, kept as written: in the equivalence-class form the last class is also compared with its
  own first R documents); a group with nothing possible makes the topic 0 (trec_eval's 0/0 is NaN and
  ``sum > 0`` fails). ``_ret``: the same with the retrieved counts only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby

import numpy as np

from deteval.errors import ConfigError, ValidationError
from deteval.io.prefs import PrefLine, Prefs
from deteval.io.trec_tables import Run
from deteval.retrieval.trec import check_topics_in_run, trec_result
from deteval.retrieval.trec_output import TrecResult, sequential_sum
from deteval.retrieval.trec_values import as_read_by
from deteval.retrieval.versions import DEFAULT_VERSION, check_version

#: trec_eval's prefs measures in its print order (te_trec_measures in measures.c); the first three are sums
PREFS_MEASURES: tuple[str, ...] = (
    "prefs_num_prefs_poss",
    "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret",
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
)
_SUMS = frozenset(PREFS_MEASURES[:3])
#: trec_eval's preference nicknames (measures.c's prefs_names and prefs_off_name)
PREFS_SETS: dict[str, tuple[str, ...]] = {
    "all_prefs": ("runid", "num_q", *PREFS_MEASURES),
    "prefs": ("runid", "num_q", *PREFS_MEASURES[:6]),
}


@dataclass
class _Group:
    """One judgment group's counts (form_prefs_counts.c's JG) and what ``recalculate`` needs."""

    a: np.ndarray  # preferred document id of each preference (with multiplicity)
    b: np.ndarray  # the other document's id
    ful_ret: int
    poss_ret: int
    ful_imp: int
    poss_imp: int
    notoccur: int
    num_rel: int
    num_rel_ret: int
    num_nonrel: int
    num_nonrel_ret: int
    ecs: list[np.ndarray] | None  # equivalence classes (ids ascending), or None: a preference matrix
    rel: dict[int, float]  # preference-matrix form: the last rel_level given to each document


def _ratio(num: int, den: int) -> float:
    """C's ``(double) num / (double) den``, NaN for 0/0 (den is never 0 with num > 0 here)."""
    return num / den if den else math.nan


def _count(g_a: np.ndarray, g_b: np.ndarray, njr: int) -> tuple[int, int, int, int, int]:
    """(ful_ret, poss_ret, ful_imp, poss_imp, notoccur) of the preferences a > b; poss_* include ful_*."""
    ra, rb = g_a < njr, g_b < njr
    both = ra & rb
    ful_ret = int(np.count_nonzero(both & (g_a < g_b)))
    poss_ret = int(np.count_nonzero(both))
    ful_imp = int(np.count_nonzero(ra & ~rb))
    poss_imp = ful_imp + int(np.count_nonzero(~ra & rb))
    notoccur = int(np.count_nonzero(~ra & ~rb))
    return ful_ret, poss_ret, ful_imp, poss_imp, notoccur


def _ec_group(lines: list[tuple[PrefLine, int]], njr: int, where: str) -> _Group:
    ecs = [
        np.array([d for _, d in members], dtype=np.int64)
        for _, members in groupby(lines, key=lambda x: x[0].rel_level)
    ]
    levels = [lv for lv, _ in groupby(x[0].rel_level for x in lines)]
    parts_a, parts_b = [], []
    for i in range(len(ecs)):
        for j in range(i + 1, len(ecs)):
            parts_a.append(np.repeat(ecs[i], len(ecs[j])))
            parts_b.append(np.tile(ecs[j], len(ecs[i])))
            if np.intersect1d(ecs[i], ecs[j]).size:
                raise ValidationError(
                    "a document has two rel_levels in the same judgment sub-group", file=where
                )
    a = np.concatenate(parts_a) if parts_a else np.zeros(0, np.int64)
    b = np.concatenate(parts_b) if parts_b else np.zeros(0, np.int64)
    num_rel = num_rel_ret = num_nonrel = num_nonrel_ret = 0
    for lv, ec in zip(levels, ecs):
        ret = int(np.count_nonzero(ec < njr))
        if lv > 0.0:
            num_rel, num_rel_ret = num_rel + ec.shape[0], num_rel_ret + ret
        else:  # a negative level counts as non-relevant here (not in the matrix form)
            num_nonrel, num_nonrel_ret = num_nonrel + ec.shape[0], num_nonrel_ret + ret
    return _Group(a, b, *_count(a, b, njr), num_rel, num_rel_ret, num_nonrel, num_nonrel_ret, ecs, {})


def _pa_group(lines: list[tuple[PrefLine, int]], njr: int, where: str) -> _Group:
    docs = sorted({d for _, d in lines})
    local = {d: i for i, d in enumerate(docs)}
    k = len(docs)
    m = np.zeros((k, k), dtype=bool)
    rel: dict[int, float] = {}
    for line, d in lines:
        old = rel.get(d, -1.0)
        if (old > 0.0 and line.rel_level == 0.0) or (old == 0.0 and line.rel_level > 0.0):
            raise ValidationError(
                f"document {line.docno.decode('utf-8', 'backslashreplace')!r} has both 0 and non-0 rel_level "
                "in one judgment group",
                file=where,
            )
        rel[d] = line.rel_level
    for _, members_it in groupby(lines, key=lambda x: x[0].jsg):
        members = list(members_it)
        ids = np.array([local[d] for _, d in members])
        lv = np.array([x.rel_level for x, _ in members])
        higher = lv[:, None] > lv[None, :]
        m[ids[:, None], ids[None, :]] |= higher
    # transitive closure: the fixpoint trec_eval reaches by repeated multiplication (with the diagonal set)
    m |= np.eye(k, dtype=bool)
    while True:
        nxt = (m.astype(np.float32) @ m.astype(np.float32)) > 0
        if np.array_equal(nxt, m):
            break
        m = nxt
    m &= ~np.eye(k, dtype=bool)
    if np.any(m & m.T):
        raise ValidationError("inconsistent preferences (a cycle) within one judgment group", file=where)
    i, j = np.nonzero(m)
    ids_arr = np.array(docs, dtype=np.int64)
    a, b = ids_arr[i], ids_arr[j]
    vals = list(rel.items())
    num_rel = sum(1 for _, v in vals if v > 0.0)
    num_rel_ret = sum(1 for d, v in vals if v > 0.0 and d < njr)
    num_nonrel = sum(1 for _, v in vals if v == 0.0)
    num_nonrel_ret = sum(1 for d, v in vals if v == 0.0 and d < njr)
    return _Group(a, b, *_count(a, b, njr), num_rel, num_rel_ret, num_nonrel, num_nonrel_ret, None, rel)


def _recalc(g: _Group, njr: int, ret_only: bool) -> tuple[int, int]:
    """m_prefs_avgjg_Rnonrel(_ret).c's ``recalculate``: (fulfilled, possible) keeping only the first R
    non-relevant documents (R = num_rel, or num_rel_ret with ``ret_only``)."""
    ful = poss = 0
    if g.ecs is not None:
        ecs = [ec[ec < njr] if ret_only else ec for ec in g.ecs]
        new = g.ecs[-1][: g.num_rel_ret if ret_only else g.num_rel]
        if ret_only:
            new = new[new < njr]
        n = len(ecs)
        pairs = [(ecs[i], ecs[j]) for i in range(n) for j in range(i + 1, n - 1)]
        pairs += [(ecs[i], new) for i in range(n)]
        for e1, e2 in pairs:
            d1, d2 = e1[:, None], e2[None, :]
            ok = (d1 < d2) if ret_only else ((d1 < d2) & (d1 < njr))
            ful += int(np.count_nonzero(ok))
            poss += int(ok.size)
        return ful, poss
    nonrel = sorted(d for d, v in g.rel.items() if v == 0.0 and (d < njr or not ret_only))
    # the non-relevant documents past the first R leave (with ret_only those not retrieved leave below)
    gone = np.array(nonrel[g.num_rel :], dtype=np.int64)
    keep = ~np.isin(g.a, gone) & ~np.isin(g.b, gone)
    a, b = g.a[keep], g.b[keep]
    if ret_only:
        both = (a < njr) & (b < njr)
        a, b = a[both], b[both]
        return int(np.count_nonzero(a < b)), int(a.size)
    return int(np.count_nonzero((a < njr) & (a < b))), int(a.size)


def _rnonrel(groups: list[_Group], njr: int, ret_only: bool) -> float:
    total = 0.0
    for g in groups:
        r, n = (g.num_rel_ret, g.num_nonrel_ret) if ret_only else (g.num_rel, g.num_nonrel)
        if r >= n:
            ful, poss = _ful_poss([g], "ret" if ret_only else "")
            ful += g.num_rel_ret * (r - n)
            poss += g.num_rel * (r - n)
        else:
            ful, poss = _recalc(g, njr, ret_only)
        total += _ratio(ful, poss)
    return total / len(groups) if total > 0.0 else 0.0


def _avgjg(groups: list[_Group], kind: str) -> float:
    total = 0.0
    for g in groups:
        ful, poss = _ful_poss([g], kind)
        if poss:
            total += ful / poss
    return total / len(groups) if total > 0.0 else 0.0


def _ful_poss(groups: list[_Group], kind: str) -> tuple[int, int]:
    ful = sum(g.ful_ret for g in groups)
    poss = sum(g.poss_ret for g in groups)
    if kind != "ret":
        ful += sum(g.ful_imp for g in groups)
        poss += sum(g.poss_imp for g in groups)
    if kind == "":
        poss += sum(g.notoccur for g in groups)
    return ful, poss


def _pair(groups: list[_Group], nj: int, njr: int, kind: str) -> float:
    """m_prefs_pair*.c: the pair ratios summed in trec_eval's loop order (both retrieved, row by row;
    then retrieved-unretrieved; unretrieved pairs only counted)."""
    a = np.concatenate([g.a for g in groups])
    b = np.concatenate([g.b for g in groups])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    code = lo * nj + hi
    uniq, inv = np.unique(code, return_inverse=True)
    total = np.bincount(inv, minlength=uniq.size)
    fwd = np.bincount(inv, weights=(a == lo).astype(np.float64), minlength=uniq.size)
    ulo, uhi = uniq // max(nj, 1), uniq % max(nj, 1)
    ratios = fwd / np.maximum(total, 1)
    block1 = ratios[uhi < njr]
    summed = block1 if kind == "ret" else np.concatenate((block1, ratios[(ulo < njr) & (uhi >= njr)]))
    n_pairs = summed.size + (int(np.count_nonzero(ulo >= njr)) if kind == "" else 0)
    return sequential_sum(summed) / n_pairs if n_pairs else 0.0


def _topic_values(lines: list[PrefLine], ranked: list[bytes], where: str) -> dict[str, float]:
    judged = {x.docno for x in lines}
    ret = [d for d in ranked if d in judged]
    ids = {d: i for i, d in enumerate(ret)}
    njr = len(ret)
    for d in sorted(judged - ids.keys()):
        ids[d] = len(ids)
    nj = len(ids)
    order = sorted(
        ((x, ids[x.docno]) for x in lines), key=lambda t: (t[0].jg, t[0].jsg, -t[0].rel_level, t[1])
    )
    groups = []
    for _, members_it in groupby(order, key=lambda t: t[0].jg):
        members = list(members_it)
        several = len({x.jsg for x, _ in members}) > 1
        groups.append((_pa_group if several else _ec_group)(members, njr, where))
    out: dict[str, float] = {}
    ful, poss = _ful_poss(groups, "")
    out["prefs_num_prefs_poss"] = poss
    out["prefs_num_prefs_ful"] = ful
    out["prefs_num_prefs_ful_ret"] = sum(g.ful_ret for g in groups)
    for suffix, kind in (("", ""), ("_ret", "ret"), ("_imp", "imp")):
        f, p = _ful_poss(groups, kind)
        out["prefs_simp" + suffix] = f / p if p else 0.0
        out["prefs_pair" + suffix] = _pair(groups, nj, njr, kind)
        out["prefs_avgjg" + suffix] = _avgjg(groups, kind)
    out["prefs_avgjg_Rnonrel"] = _rnonrel(groups, njr, ret_only=False)
    out["prefs_avgjg_Rnonrel_ret"] = _rnonrel(groups, njr, ret_only=True)
    return out


def _rankings(run: Run, max_docs: int | None) -> dict[bytes, list[bytes]]:
    """Each topic's docnos in form_prefs_counts.c's order: score descending, ties by docno ascending."""
    docnos = run.docno.tolist()
    for i, d in run.docno_long.items():
        docnos[i] = d
    by_topic: dict[bytes, list[tuple[float, bytes]]] = {}
    for t, s, d in zip(run.topic.tolist(), run.score.tolist(), docnos):
        by_topic.setdefault(t, []).append((-s, d))
    out = {}
    for t, rows in by_topic.items():
        rows.sort()
        ranked = [d for _, d in rows]
        if len(set(ranked)) != len(ranked):
            dup = next(d for i, d in enumerate(ranked[1:], 1) if d == ranked[i - 1])
            raise ValidationError(
                f"docno {dup.decode('utf-8', 'backslashreplace')!r} retrieved twice for topic "
                f"{t.decode('utf-8', 'backslashreplace')!r}",
                file=run.source,
            )
        out[t] = ranked[:max_docs] if max_docs is not None else ranked
    return out


def parse_prefs_measures(measures: Sequence[str] | str | None) -> list[str]:
    """The prefs measures requested (names, the sets ``all_prefs``/``prefs``, ``num_q``, ``runid``) in
    trec_eval's print order. The default is ``all_prefs`` (trec_eval's default, ``official``, cannot be
    computed from preferences: it would stop with a format error)."""
    if measures is None:
        measures = ["all_prefs"]
    if isinstance(measures, str):
        measures = [measures]
    want: set[str] = set()
    for m in measures:
        if m in PREFS_SETS:
            want.update(PREFS_SETS[m])
        elif m in PREFS_MEASURES or m in ("num_q", "runid"):
            want.add(m)
        else:
            raise ConfigError(
                f"measure {m!r} cannot be computed from preferences (-R prefs / qrels_prefs): use "
                + ", ".join((*PREFS_SETS, *PREFS_MEASURES))
            )
    return [m for m in ("runid", "num_q") + PREFS_MEASURES if m in want]


def evaluate_prefs(
    prefs: Prefs,
    run: Run,
    measures: Sequence[str] | str | None = None,
    *,
    complete: bool = False,
    per_query: bool = False,
    max_docs: int | None = None,
    version: str = DEFAULT_VERSION,
    zscores: Mapping[tuple[str, str], tuple[float, float]] | None = None,
    topic_columns: bool = False,
) -> TrecResult:
    """Evaluate a run against preference judgements like ``trec_eval -R prefs|qrels_prefs -m all_prefs``
    (see the module docstring for the definitions). Topics: those with both results and preferences, or
    with ``complete`` (``-c``) every preference topic (a missing one is an empty ranking); ``max_docs``
    (``-M``) cuts each ranking; ``version`` reads scores as that trec_eval does (float32 in 9.0.8).
    ``per_query``: ``per_class`` holds one row per topic; ``topic_columns``: the per-topic values are kept
    as arrays instead (as :func:`~deteval.run.trec.evaluate_trec` keeps them), from which
    :func:`~deteval.retrieval.trec_output.iter_trec_lines` prints ``-q`` a block of topics at a time."""
    check_version(version)
    if max_docs is not None and (int(max_docs) != max_docs or max_docs < 1):
        raise ConfigError(f"max_docs must be a positive integer, got {max_docs!r}")
    names = parse_prefs_measures(measures)
    check_topics_in_run(
        np.array(list(prefs.topics), dtype=bytes),
        run.topic,
        version,
        complete,
        f"{run.source} vs {prefs.source}",
    )
    rankings = _rankings(as_read_by(run, version), max_docs)
    topics = sorted(t for t in prefs.topics if complete or t in rankings)
    if not topics:
        raise ValidationError(
            f"no topic has both results and preferences ({len(run)} run rows, {len(prefs)} prefs rows)",
            file=f"{run.source} vs {prefs.source}",
        )
    # each topic's values go straight into one array per measure: no dict per topic is kept
    cols = {n: np.empty(len(topics), dtype=np.float64) for n in names if n not in ("runid", "num_q")}
    for i, t in enumerate(topics):
        if version == "9.0.8" and t not in rankings:
            # 9.0.8 never evaluates a topic -c adds: it adds nothing, not even its possible preferences to
            # prefs_num_prefs_poss, and counts in num_q (10.0 evaluates it: an empty ranking here)
            for col in cols.values():
                col[i] = 0.0
            continue
        row = _topic_values(prefs.topics[t], rankings.get(t, []), prefs.source)
        for n, col in cols.items():
            col[i] = row[n]
    values: dict[str, tuple[np.ndarray, str]] = {}
    for name in names:
        if name == "num_q":
            values[name] = (np.ones(len(topics)), "count")
        elif name != "runid":
            values[name] = (cols[name], "sum" if name in _SUMS else "mean")
    # -Z: z-scores printed as trec_eval prints every measure's (Z<name>, %6.4f, sums included)
    return trec_result(
        values,
        [t.decode("utf-8", "backslashreplace") for t in topics],
        np.array([t in rankings for t in topics]),
        version,
        zscores,
        runid=run.tag if "runid" in names else None,
        warnings=[],
        per_query=per_query,
        topic_columns=topic_columns,
    )
