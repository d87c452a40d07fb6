"""From qrels and a run to ranked relevance arrays for all topics at once (trec_eval's ``form_res_rels``).

The result, :class:`RankedTopics`, is columnar: the ranked rows of every evaluated topic concatenated
(topic by topic, best first) with their judged relevance, and per-topic counts from the qrels. Every
measure in :mod:`deteval.retrieval.measures` is a few vectorised passes over it.

trec_eval conventions reproduced here:

* a topic is evaluated when it is in the run and in the qrels (``complete=True`` additionally evaluates the
  qrels topics missing from the run, as an empty ranking, which is what ``trec_eval -c`` averages over);
* documents are ranked by score descending, ties broken by docno descending (bytewise, like ``strcmp``);
* a document absent from the qrels is non-relevant and "not in the pool"; a negative qrels value means "in
  the pool, unjudged" (only bpref and the judged-only measures see the difference);
* relevant means ``rel >= relevance_level``; ``num_rel`` counts the qrels rows with ``rel >= level``;
* a docno repeated within a topic is an error in the run and in the qrels (trec_eval refuses both) where
  trec_eval would see it: in evaluated topics and, for the run, within the first ``max_docs`` ranks;
  elsewhere repeats are ignored like trec_eval does, and counted in a warning.

Joining documents to judgements uses 64-bit hashes of the docno bytes and checks every hash match against
the strings, so the result is exact; if a hash collision is ever detected, an exact string-sorting path
takes over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from deteval.errors import ValidationError
from deteval.io.trec_tables import Qrels, Run
from deteval.retrieval import docnos as D

NONPOOL = -1  # retrieved, not in the qrels
UNJUDGED = -2  # in the qrels with a negative value


@dataclass
class RankedTopics:
    """Ranked relevance of every evaluated topic.

    Per topic ``t`` (topics sorted bytewise by id): rows ``start[t] : start[t] + num_ret[t]`` of the row
    arrays, in rank order. ``rel`` is the judged value, ``NONPOOL`` or ``UNJUDGED``.
    ``ideal_*``: the judged values ``> 0`` of each topic sorted descending (for the ideal DCG).
    """

    topics: np.ndarray  # S, evaluated topic ids
    in_run: np.ndarray  # bool per topic (False only with complete=True)
    start: np.ndarray
    num_ret: np.ndarray
    row_topic: np.ndarray
    rank: np.ndarray  # 1-based
    rel: np.ndarray
    relevant: np.ndarray  # bool: rel >= level (judged)
    num_rel: np.ndarray
    num_nonrel: np.ndarray  # judged with 0 <= rel < level
    ideal_topic: np.ndarray
    ideal_rank: np.ndarray
    ideal_gain: np.ndarray
    relevance_level: int
    n_qrels_topics: int
    warnings: list[str] = field(default_factory=list)

    @property
    def n_topics(self) -> int:
        return int(self.topics.shape[0])

    def topic_names(self) -> list[str]:
        # backslashreplace keeps distinct non-UTF-8 topic ids distinct (one row each in the report)
        return [t.decode("utf-8", "backslashreplace") for t in self.topics.tolist()]


# --------------------------------------------------------------------------------------------------------


def group_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` made cheap for files grouped by topic: unique over the
    first value of each run of equal neighbours only."""
    n = values.shape[0]
    if n == 0:
        return values[:0], np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(values[1:] != values[:-1]) + 1
    heads = np.concatenate(([0], change))
    uniq, inv = np.unique(values[heads], return_inverse=True)
    lengths = np.diff(np.append(heads, n))
    return uniq, np.repeat(inv.astype(np.int64), lengths)


_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (in place)."""
    h ^= h >> np.uint64(30)
    h *= _M2
    h ^= h >> np.uint64(27)
    h *= _M3
    h ^= h >> np.uint64(31)
    return h


_TOPIC_BITS = 24  # topic code in the high 24 bits of a 64-bit key, 40 bits of docno hash below


def _pair_hash(topic: np.ndarray, docno: np.ndarray) -> np.ndarray:
    """64-bit key of (topic code, docno): the topic code in the high bits (so keys sort by topic first),
    a hash of the docno bytes below. Equal inputs give equal keys; collisions are checked by the caller."""
    n = docno.shape[0]
    width = docno.dtype.itemsize
    raw = docno.view(np.uint8).reshape(n, width)
    pad = (-width) % 8
    if pad:
        raw = np.concatenate((raw, np.zeros((n, pad), dtype=np.uint8)), axis=1)
    words = np.ascontiguousarray(raw).view("<u8")
    h = np.full(n, _M1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            # all-zero words are padding (a docno has no NUL byte): skipping them makes the hash
            # independent of the array's width, so run and qrels hashes agree
            w = words[:, j]
            step = (h ^ w) * _M2
            step ^= step >> np.uint64(29)
            if j == 0:
                h = step  # the first word of a docno is never padding
            else:
                np.copyto(h, step, where=w != 0)
        h = _mix(h)
    return (topic.astype(np.uint64) << np.uint64(64 - _TOPIC_BITS)) | (h >> np.uint64(_TOPIC_BITS))


def _exact_pair_keys(
    run_topic: np.ndarray, run: Run, q_topic: np.ndarray, qrels: Qrels
) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer keys of (topic code, docno) by sorting all docno strings (slow path)."""
    both = np.concatenate((run.docno, qrels.docno))
    n_run = run.docno.shape[0]
    long = dict(run.docno_long)
    long.update((n_run + i, b) for i, b in qrels.docno_long.items())
    inv = D.codes(both, long, np.arange(both.shape[0], dtype=np.int64))
    n_docs = int(inv.max()) + 1 if inv.size else 1
    inv = inv.astype(np.int64)
    return run_topic * n_docs + inv[:n_run], q_topic * n_docs + inv[n_run:]


class _Collision(Exception):
    pass


def _check_duplicates(
    keys_sorted: np.ndarray,
    order: np.ndarray,
    table: Qrels | Run,
    topic: np.ndarray,
    checked: np.ndarray,
    what: str,
    exact: bool,
) -> int:
    """Raise on a docno repeated within a topic of ``table`` (the ``what``) among the ``checked`` rows
    (those trec_eval would look at: evaluated topics, within ``-M``); return how many other repeats were
    ignored, as trec_eval does."""
    dup = np.flatnonzero(keys_sorted[1:] == keys_sorted[:-1])
    if dup.size == 0:
        return 0
    a, b = order[dup], order[dup + 1]
    docno, long, kind = table.docno, table.docno_long, table.record_kind
    same = D.equal(docno, long, a, docno, long, b) & (topic[a] == topic[b])
    if not exact and not same.all():
        raise _Collision
    fatal = np.flatnonzero(same & checked[a] & checked[b])
    if fatal.size:
        first = int(fatal[np.argmin(np.maximum(a[fatal], b[fatal]))])  # the earliest second occurrence
        i, j = sorted((int(a[first]), int(b[first])))
        raise ValidationError(
            f"duplicate document {D.full(docno, long, j).decode('utf-8', 'replace')!r} for one topic in the {what} "
            f"(first at {kind} {int(table.line[i])}); trec_eval refuses duplicates too",
            file=table.source,
            record=f"{kind} {int(table.line[j])}",
        )
    return int(np.count_nonzero(same))


def _sort_within_topics(keys: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Permutation sorting ``keys`` (grouped by topic, ``counts`` rows per topic, keys increasing with the
    topic) by key. Sorting each topic's short row of a padded matrix is several times faster than one
    global sort; very uneven topic sizes fall back to the global sort."""
    n = keys.shape[0]
    nonzero = counts[counts > 0]
    width = int(nonzero.max()) if nonzero.size else 0
    if n == 0 or nonzero.shape[0] * width > 4 * n + 4096:
        return np.argsort(keys, kind="stable")
    starts = np.cumsum(nonzero) - nonzero
    if nonzero.shape[0] * width == n:  # every topic has the same depth: no padding needed
        srt = np.argsort(keys.reshape(nonzero.shape[0], width), axis=1, kind="stable")
        srt += starts[:, None]
        return srt.reshape(n)
    row = np.repeat(np.arange(nonzero.shape[0]), nonzero)
    col = np.arange(n, dtype=np.int64) - np.repeat(starts, nonzero)
    mat = np.full((nonzero.shape[0], width), np.iinfo(keys.dtype).max, dtype=keys.dtype)
    mat[row, col] = keys
    # stable: the padding (the largest key) stays behind real keys, so each row's prefix is its topic
    srt = np.argsort(mat, axis=1, kind="stable")
    valid = np.arange(width) < nonzero[:, None]
    return (srt + starts[:, None])[valid]


def _join(
    run_tc: np.ndarray,
    run: Run,
    q_tc: np.ndarray,
    qrels: Qrels,
    exact: bool,
    ranked: np.ndarray,
    counts: np.ndarray,
    run_checked: np.ndarray,
    qrels_checked: np.ndarray,
) -> tuple[np.ndarray, int, int]:
    """For every run row, the index of its qrels row (or -1), and the numbers of repeated docnos ignored in
    the qrels and in the run (repeats among the checked rows raise, see :func:`_check_duplicates`).

    ``ranked`` orders the run rows by topic code (``counts`` rows per code), as :func:`_rank_order` does.
    """
    match = np.full(run_tc.shape[0], -1, dtype=np.int64)
    if run_tc.shape[0] == 0 and q_tc.shape[0] == 0:
        return match, 0, 0
    if (
        exact
        or int(run_tc.max(initial=0)) >= 1 << _TOPIC_BITS
        or int(q_tc.max(initial=0)) >= 1 << _TOPIC_BITS
    ):
        exact = True
        rk, qk = _exact_pair_keys(run_tc, run, q_tc, qrels)
    else:
        rk = D.hash_long(_pair_hash(run_tc, run.docno), run_tc, run.docno_long, _pair_hash)
        qk = D.hash_long(_pair_hash(q_tc, qrels.docno), q_tc, qrels.docno_long, _pair_hash)
    r_order = ranked[_sort_within_topics(rk[ranked], counts)]
    rk_sorted = rk[r_order]
    q_order = np.argsort(qk)
    qk_sorted = qk[q_order]
    q_dups = _check_duplicates(qk_sorted, q_order, qrels, q_tc, qrels_checked, "qrels", exact)
    r_dups = _check_duplicates(rk_sorted, r_order, run, run_tc, run_checked, "run", exact)
    if rk_sorted.shape[0] == 0:
        return match, q_dups, r_dups
    # sorted needles: the binary searches walk the haystack in order (cache friendly). Every run row of
    # an equal key gets the judgement (repeats may remain in rows that are not evaluated).
    lo = np.searchsorted(rk_sorted, qk_sorted, side="left")
    hi = np.searchsorted(rk_sorted, qk_sorted, side="right")
    n_hit = hi - lo
    total = int(n_hit.sum())
    q_pos = np.repeat(np.arange(qk_sorted.shape[0]), n_hit)
    r_pos = np.repeat(lo, n_hit) + (np.arange(total) - np.repeat(np.cumsum(n_hit) - n_hit, n_hit))
    q_idx = q_order[q_pos]
    r_idx = r_order[r_pos]
    if not exact:
        good = D.equal(run.docno, run.docno_long, r_idx, qrels.docno, qrels.docno_long, q_idx)
        good &= run_tc[r_idx] == q_tc[q_idx]
        if not good.all():
            raise _Collision
    match[r_idx] = q_idx
    return match, q_dups, r_dups


def _rank_order(
    tc: np.ndarray, score: np.ndarray, docno: np.ndarray, long: dict[int, bytes] | None = None
) -> np.ndarray:
    """Row order by (topic code asc, score desc, docno desc): trec_eval's ranking.

    Runs are normally written topic by topic, best first; then only the topic blocks are permuted and
    the ties re-ordered. Anything else takes a full lexsort.
    """
    n = tc.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(tc[1:] != tc[:-1]) + 1
    heads = np.concatenate(([0], change))
    block_topic = tc[heads]
    lengths = np.diff(np.append(heads, n))
    same_topic = np.ones(n - 1, dtype=bool)
    same_topic[change - 1] = False
    grouped = np.unique(block_topic).shape[0] == block_topic.shape[0]
    descending = not np.any((score[1:] > score[:-1]) & same_topic)
    if grouped and descending:
        border = np.argsort(block_topic, kind="stable")
        lens = lengths[border]
        offs = np.cumsum(lens) - lens
        order = np.arange(n, dtype=np.int64) - np.repeat(offs - heads[border], lens)
    else:
        order = np.lexsort((-score, tc))
    # Ties: equal (topic, score) neighbours are re-ordered by docno descending.
    t_s, s_s = tc[order], score[order]
    tie = (t_s[1:] == t_s[:-1]) & (s_s[1:] == s_s[:-1])
    if tie.any():
        in_group = np.zeros(n, dtype=bool)
        in_group[1:] |= tie
        in_group[:-1] |= tie
        rows = np.flatnonzero(in_group)
        # a row starts a new group unless it ties with the row before it
        tie_prev = np.concatenate(([False], tie))
        group = np.cumsum(~tie_prev[rows])
        sub = order[rows]
        dcode = D.codes(docno, long or {}, sub)
        order[rows] = sub[np.lexsort((-dcode, group))]
    return order


def prepare(
    qrels: Qrels,
    run: Run,
    *,
    relevance_level: int = 1,
    complete: bool = False,
    max_docs: int | None = None,
    exact_join: bool = False,
    judged_only: bool = False,
) -> RankedTopics:
    """Join ``run`` with ``qrels`` and rank every evaluated topic (see the module docstring).

    ``max_docs`` keeps only the first ``max_docs`` ranks of each topic (trec_eval ``-M``); ``judged_only``
    then drops the documents without a judgement (not in the qrels, or negative) and ranks the rest
    1, 2, ... (trec_eval ``-J``).
    """
    level = int(relevance_level)
    warnings = list(qrels.warnings) + list(run.warnings)
    names, q_tc, r_tc, has_r, evaluated, n_qrels_topics = _topic_codes(qrels, run, complete, warnings)
    new_code = np.cumsum(evaluated) - 1
    n_topics = int(np.count_nonzero(evaluated))
    row_topic, rel = _ranked_rows(qrels, run, q_tc, r_tc, evaluated, new_code, max_docs, exact_join, warnings)
    row_topic, rel, rank, num_ret, start = _cut_rankings(row_topic, rel, n_topics, max_docs, judged_only)
    qe = evaluated[q_tc]
    num_rel, num_nonrel, it, irank, ig = _judged_counts(new_code[q_tc[qe]], qrels.rel[qe], level, n_topics)
    return RankedTopics(
        topics=names[evaluated],
        in_run=has_r[evaluated],
        start=start,
        num_ret=num_ret,
        row_topic=row_topic,
        rank=rank,
        rel=rel,
        relevant=(rel >= level) & (rel >= 0),
        num_rel=num_rel,
        num_nonrel=num_nonrel,
        ideal_topic=it,
        ideal_rank=irank,
        ideal_gain=ig.astype(np.float64),
        relevance_level=level,
        n_qrels_topics=n_qrels_topics,
        warnings=warnings,
    )


def _topic_codes(
    qrels: Qrels, run: Run, complete: bool, warnings: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Every topic name (sorted bytewise), each qrels and run row's topic code, which topics are in the run
    and which are evaluated (in both inputs, or every qrels topic with ``complete``), and the number of
    qrels topics; the warnings name the topics left out."""
    q_names, q_code = group_codes(qrels.topic)
    r_names, r_code = group_codes(run.topic)
    names = np.union1d(q_names, r_names) if (q_names.size or r_names.size) else q_names
    q_tc = np.searchsorted(names, q_names)[q_code] if q_code.size else q_code
    r_tc = np.searchsorted(names, r_names)[r_code] if r_code.size else r_code
    n_names = names.shape[0]
    has_q = np.zeros(n_names, dtype=bool)
    has_q[np.searchsorted(names, q_names)] = True
    has_r = np.zeros(n_names, dtype=bool)
    has_r[np.searchsorted(names, r_names)] = True
    n_skipped = int(np.count_nonzero(has_r & ~has_q))
    if n_skipped:
        warnings.append(
            f"{n_skipped} run topic(s) without judgements in the qrels were not evaluated (as trec_eval)"
        )
    n_missing = int(np.count_nonzero(has_q & ~has_r))
    if n_missing and not complete:
        warnings.append(
            f"{n_missing} qrels topic(s) absent from the run were not evaluated; "
            "use -c (Python: complete=True) to count them as 0"
        )
    return names, q_tc, r_tc, has_r, has_q & (has_r | complete), int(q_names.shape[0])


def _ranked_rows(
    qrels: Qrels,
    run: Run,
    q_tc: np.ndarray,
    r_tc: np.ndarray,
    evaluated: np.ndarray,
    new_code: np.ndarray,
    max_docs: int | None,
    exact_join: bool,
    warnings: list[str],
) -> tuple[np.ndarray, np.ndarray]:
    """The evaluated topics' run rows in rank order: each row's topic (evaluated-topic code) and judged
    value (``NONPOOL`` if not in the qrels, ``UNJUDGED`` if judged negative)."""
    # Rank every run row; duplicates and the join are checked on all rows (a duplicate is an error
    # even in a topic that is not evaluated).
    ranked = _rank_order(r_tc, run.score, run.docno, run.docno_long)
    counts = np.bincount(r_tc, minlength=evaluated.shape[0])
    # trec_eval looks for repeated docnos only where it evaluates: topics in both inputs, first -M ranks
    run_checked = evaluated[r_tc]
    if max_docs is not None and r_tc.shape[0]:
        within = np.empty(r_tc.shape[0], dtype=np.int64)
        within[ranked] = np.arange(r_tc.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
        run_checked &= within < max_docs
    qrels_checked = evaluated[q_tc]
    join_args = (ranked, counts, run_checked, qrels_checked)
    try:
        match, q_dups, r_dups = _join(r_tc, run, q_tc, qrels, exact_join, *join_args)
    except _Collision:
        match, q_dups, r_dups = _join(r_tc, run, q_tc, qrels, True, *join_args)
    for n_dup, what in ((q_dups, "qrels"), (r_dups, "run")):
        if n_dup:
            warnings.append(
                f"{n_dup} repeated document(s) in the {what} outside the evaluated rankings were ignored "
                "(as trec_eval)"
            )
    keep = evaluated[r_tc[ranked]]
    order = ranked if keep.all() else ranked[keep]
    m = match[order]
    qrel = qrels.rel
    rel = np.where(m >= 0, qrel[np.maximum(m, 0)] if qrel.size else 0, NONPOOL)
    rel = np.where((m >= 0) & (rel < 0), UNJUDGED, rel).astype(np.int64)
    return new_code[r_tc[order]], rel


def _ranks(topic: np.ndarray, n_topics: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For rows grouped by topic code: each topic's number of rows and first row, and each row's 1-based
    rank within its topic."""
    count = np.bincount(topic, minlength=n_topics).astype(np.int64)
    start = np.cumsum(count) - count
    return count, start, np.arange(topic.shape[0], dtype=np.int64) - np.repeat(start, count) + 1


def _cut_rankings(
    row_topic: np.ndarray, rel: np.ndarray, n_topics: int, max_docs: int | None, judged_only: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``-M`` (the first ``max_docs`` ranks) then ``-J`` (unjudged documents leave the ranking, the rest
    close up): the rows, their ranks, and each topic's number of rows and first row."""
    num_ret, start, rank = _ranks(row_topic, n_topics)
    keep = None
    if max_docs is not None and rank.shape[0] and int(rank.max()) > max_docs:
        keep = rank <= max_docs
    if judged_only:
        keep = rel >= 0 if keep is None else keep & (rel >= 0)
    if keep is not None:
        row_topic, rel = row_topic[keep], rel[keep]
        num_ret, start, rank = _ranks(row_topic, n_topics)
    return row_topic, rel, rank, num_ret, start


def _judged_counts(
    qt: np.ndarray, qr: np.ndarray, level: int, n_topics: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """From the evaluated topics' judgements (topic code, value): each topic's relevant (>= ``level``) and
    judged non-relevant counts, and the ideal ranking of its positive judgements (topic, rank, gain; by
    value descending) that nDCG divides by."""
    judged = qr >= 0
    num_rel = np.bincount(qt[judged & (qr >= level)], minlength=n_topics).astype(np.int64)
    num_nonrel = np.bincount(qt[judged & (qr < level)], minlength=n_topics).astype(np.int64)
    pos = qr > 0
    it, ig = qt[pos], qr[pos]
    io = np.lexsort((-ig, it))
    it, ig = it[io], ig[io]
    return num_rel, num_nonrel, it, _ranks(it, n_topics)[2], ig
