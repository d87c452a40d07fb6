"""How a trec_eval evaluation runs: :func:`evaluate_trec` chains the protocol's steps
(:mod:`deteval.retrieval.trec`) and decides where the parts run.

Every measure's per-topic value depends on that topic's run and qrels rows alone, and trec_eval's ``all``
values are sums in topic order, so the topics can be cut into parts evaluated on their own and merged back
in topic order, bit-identical to one process: in shards on ``dask.distributed`` workers
(``client``/``shards``), or, for a large run, in pieces of :data:`PIECE_ROWS` rows one after the other here,
which bounds the temporaries of the join and ranking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deteval.errors import ConfigError, DetevalError
from deteval.io.trec_tables import Qrels, Run
from deteval.retrieval import trec
from deteval.retrieval.trec_output import TrecResult
from deteval.run.parts import map_parts
from deteval.run.shards import default_shards

if TYPE_CHECKING:
    from typing_extensions import Unpack  # (typing.Unpack from Python 3.11 on)

__all__ = ["PIECE_ROWS", "evaluate_trec", "topic_table"]

PIECE_ROWS = 1 << 18  # run rows joined and scored at once: bounds the temporaries of a large run


def evaluate_trec(
    qrels: Qrels | Mapping[Any, Mapping[Any, int]],
    run: Run | Mapping[Any, Mapping[Any, float]],
    measures: Sequence[str] | str | None = None,
    *,
    client: Any = None,
    shards: int | None = None,
    **options: Unpack[trec.TrecOptions],
) -> TrecResult:
    """Evaluate a run against qrels like ``trec_eval [-q] [-c] [-l N] [-M N] [-J] [-Z FILE] -m ...``.

    Each measure's ``all`` value is trec_eval's: the mean over the evaluated topics summed one topic at a
    time in topic order, a sum for the counts, exp(mean log) for ``gm_*`` (docs/trec.md lists every rule).

    Parameters
    ----------
    qrels, run
        Loaded files (:func:`deteval.io.trec.load_qrels`, :func:`~deteval.io.trec.load_run`) or
        pytrec_eval-style dicts ``{qid: {docno: rel}}`` and ``{qid: {docno: score}}``.
    measures
        trec_eval names, families or sets (``map``, ``P.5,10``, ``ndcg_cut``, ``all_trec``); default
        ``official`` (``qrels_jg`` for qrels read with judgment groups).
    relevance_level
        ``-l``: a judgement >= this value is relevant.
    complete
        ``-c``: qrels topics missing from the run count as empty rankings.
    per_query
        ``-q``: ``per_class`` holds one row per topic.
    max_docs
        ``-M``: only the first ``max_docs`` ranks of each topic are evaluated.
    gain, discount, recall_denominator, ap_denominator
        The non-trec_eval conventions of seeds 002/003 (:mod:`deteval.retrieval.measures`); the defaults
        are trec_eval's.
    version
        The trec_eval release whose rules apply: ``"9.0.8"`` (default: pytrec_eval and most published
        numbers) or ``"10.0"`` (:mod:`deteval.retrieval.versions`, docs/trec.md).
    zscores
        ``-Z`` (:func:`deteval.io.trec.load_zscores`): every per-topic value becomes
        (value - mean) / stddev before averaging, as convert_zscores.c does.
    judged_only
        ``-J``: documents without a judgement leave the ranking.
    recall_levels
        ``iprec_at_recall`` and ``11pt_avg``: ``"double"`` (default, the version's rule as its source has
        it) or ``"float32"`` (the level held in a C float, ``(long)(levelf * R + 0.9)``, as the binaries
        that printed trec_eval's ``test/out.test.a`` did; :func:`deteval.retrieval.versions.recall_cutoff`).
    num_docs
        ``-N``: the collection size, used only by ``utility``'s fourth coefficient.
    client, shards
        A ``dask.distributed`` Client and/or a number of shards: the topics are split into shards evaluated
        on their own (on the client's workers if given); every value is bit-identical to one process.
        Without them, a run of more than :data:`PIECE_ROWS` rows is evaluated a piece at a time here.
    topic_columns
        Also keep the per-topic values as arrays (``result.topic_columns``), from which
        :func:`~deteval.retrieval.trec_output.iter_trec_lines` prints ``-q`` output a block of topics at a
        time (a dict per topic costs ~25 times the memory of its values).

    Returns
    -------
    TrecResult
        An :class:`~deteval.results.EvalResult` (protocol ``"trec"``): ``summary`` = the ``all`` values by
        measure name (plus ``runid``), ``per_class`` = one row per topic when ``per_query``, ``lines`` =
        trec_eval's ``all`` lines (:func:`~deteval.retrieval.trec_output.format_trec` renders the
        per-topic lines too).

    Raises
    ------
    ConfigError
        A bad option or measure.
    ValidationError
        No topic to evaluate, a duplicate document, or (10.0 without ``-c``) a qrels topic missing from the
        run, which trec_eval 10.0 refuses too.

    Examples
    --------
    >>> qrels = {"q1": {"d1": 1, "d2": 0, "d3": 2}}
    >>> run = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1}}
    >>> evaluate_trec(qrels, run, ["map", "P.2", "recip_rank"]).summary
    {'map': 0.8333333333333333, 'recip_rank': 1.0, 'P_2': 0.5}
    """
    task = trec.start(qrels, run, measures, **options)
    return trec.finish(task, topic_table(task, client, shards))


def topic_table(task: trec.TrecTask, client: Any = None, shards: int | None = None) -> trec.TopicValues:
    """The task's merged per-topic table, evaluated where the options say: in shards (``client`` and/or
    ``shards``), in pieces of :data:`PIECE_ROWS` run rows (a large run), or as one part."""
    spec, q, r = task.spec, task.qrels, task.run
    if client is not None or shards is not None:
        if spec.jg_mode:
            raise ConfigError(
                "judgment groups (-R qrels_jg) are evaluated in one process: drop client/shards"
            )
        parts = trec.shard_parts(q, r, bool(spec.prep["complete"]), default_shards(client, shards))
        if len(parts) > 1:
            return trec.merge(task, map_parts(trec.part_values, [(spec, *p) for p in parts], client))
    elif not spec.jg_mode and len(r) > PIECE_ROWS:
        try:
            pieces = map_parts(trec.part_values, ((spec, *p) for p in trec.piece_parts(q, r, PIECE_ROWS)))
        except DetevalError:
            pieces = []  # evaluated in one part below, so that the error is the one one pass reports first
        if len(pieces) > 1:
            return trec.merge(task, pieces)
    return trec.merge(task, [trec.part_values(spec, *task.whole())])
