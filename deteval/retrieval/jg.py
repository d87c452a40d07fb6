"""trec_eval's judgment-group measures (``-R qrels_jg``): map_avgjg, P_avgjg and Rprec_mult_avgjg.

A qrels_jg file is a qrels file whose ``iter`` field names the judgment group (one user's judgements); a
document may be judged once per group. Each (topic, group) is evaluated as a topic of its own, with the
topic's ranking, and a topic's value is the sum over its groups (in ``strcmp`` order, one at a time)
divided by their number when there is more than one (m_map_avgjg.c, m_P_avgjg.c, m_Rprec_mult_avgjg.c).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from deteval.io.trec_tables import Qrels, Run
from deteval.retrieval import measures as M
from deteval.retrieval import measures_extra as X
from deteval.retrieval.prepare import RankedTopics
from deteval.retrieval.trec_measures import param_name

# a tab cannot occur in an id (ids are whitespace-separated), so the split is unambiguous, and it sorts
# before every printable byte: the groups of a topic stay together (a NUL would be lost: "S" arrays drop
# trailing NULs)
SEP = b"\t"


def split_groups(qrels: Qrels, run: Run) -> tuple[Qrels, Run]:
    """Qrels and run with one topic per (topic, judgment group): ids ``topic SEP group``; each run row
    is repeated once per group of its topic."""
    assert qrels.group is not None
    key = np.strings.add(np.strings.add(qrels.topic, SEP), qrels.group)
    q = replace(qrels, topic=key, group=None)
    pairs = np.unique(key)
    pair_topic = np.array([p.split(SEP, 1)[0] for p in pairs.tolist()], dtype=qrels.topic.dtype)
    lo = np.searchsorted(pair_topic, run.topic, side="left")
    k = np.searchsorted(pair_topic, run.topic, side="right") - lo
    total = int(k.sum())
    rows = np.repeat(np.arange(run.topic.shape[0]), k)
    which = np.repeat(lo, k) + (np.arange(total) - np.repeat(np.cumsum(k) - k, k))
    long = {}
    if run.docno_long:
        for j in np.flatnonzero(np.isin(rows, list(run.docno_long))).tolist():
            long[j] = run.docno_long[int(rows[j])]
    r = replace(
        run,
        topic=pairs[which] if total else pairs[:0],
        docno=run.docno[rows],
        score=run.score[rows],
        line=run.line[rows],
        docno_long=long,
    )
    return q, r


def real_topics(rt: RankedTopics) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """For the (topic, group) topics of ``rt``: the real topic index of each, the number of groups per
    real topic, the real topic names and whether each real topic is in the run."""
    real = [t.split(SEP, 1)[0] for t in rt.topics.tolist()]
    names, index = np.unique(np.array(real, dtype=object), return_inverse=True)
    counts = np.bincount(index, minlength=len(names))
    in_run = np.bincount(index, weights=rt.in_run, minlength=len(names)) > 0
    topic_names = [n.decode("utf-8", "backslashreplace") for n in names.tolist()]
    return index.astype(np.int64), counts, topic_names, in_run


def average_groups(values: np.ndarray, index: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per real topic: the groups' values summed in order, divided by their number if more than one."""
    s = np.bincount(index, weights=values, minlength=counts.shape[0])
    return np.where(counts > 1, s / np.maximum(counts, 1), s)


def compute_jg(rt: RankedTopics, requested: list, index: np.ndarray, counts: np.ndarray) -> dict:
    """Per real topic values of the requested judgment-group measures: ``{name: (values, "mean")}``."""
    c = M.Cache(rt)
    out: dict[str, tuple[np.ndarray, str]] = {}
    for fam, params in requested:
        if fam.name == "num_q":
            out["num_q"] = (np.ones(counts.shape[0]), fam.agg)
        elif fam.name == "map_avgjg":
            out[fam.name] = (average_groups(M.average_precision(c), index, counts), fam.agg)
        elif fam.name in ("P_avgjg", "Rprec_mult_avgjg"):
            for p in params:
                vals = M.precision_at(c, int(p)) if fam.name == "P_avgjg" else X.rprec_mult(c, float(p))
                out[param_name(fam, p)] = (average_groups(vals, index, counts), fam.agg)
    return out
