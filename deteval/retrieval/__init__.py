"""Document-retrieval evaluation (trec_eval's measures) on deteval's ranked-retrieval core.

* :func:`evaluate_trec` — trec_eval's measures, names, conventions and averaging for qrels + run (files
  loaded with :mod:`deteval.io.trec` or pytrec_eval-style dicts), vectorised over all topics.
* :func:`evaluate_lists` — the list form (ranked lists + lists of relevant documents).
* single ranked lists: :func:`precision_at_k`, :func:`recall_at_k`, :func:`average_precision`,
  :func:`reciprocal_rank`, :func:`dcg_at_k`, :func:`ndcg_at_k`, :func:`break_even_point`, :func:`f_max`.
"""

import importlib
from typing import TYPE_CHECKING, Any

from deteval.retrieval.lists import (
    average_precision,
    break_even_point,
    dcg_at_k,
    evaluate_lists,
    f_max,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)
from deteval.retrieval.trec_measures import parse_measures
from deteval.retrieval.trec_output import format_trec

if TYPE_CHECKING:
    from deteval.run.trec import evaluate_trec


def __getattr__(name: str) -> Any:
    # evaluate_trec lives with the runner (deteval.run.trec), which imports this package's protocol steps:
    # it is loaded on first use, so that importing either one first works
    if name == "evaluate_trec":
        return importlib.import_module("deteval.run.trec").evaluate_trec
    raise AttributeError(f"module 'deteval.retrieval' has no attribute {name!r}")


__all__ = [
    "average_precision",
    "break_even_point",
    "dcg_at_k",
    "evaluate_lists",
    "evaluate_trec",
    "f_max",
    "format_trec",
    "ndcg_at_k",
    "parse_measures",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
]
