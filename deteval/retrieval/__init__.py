"""Document-retrieval evaluation (trec_eval's measures) on deteval's ranked-retrieval core."""

from deteval.retrieval.trec import evaluate_trec, parse_measures

__all__ = ["evaluate_trec", "parse_measures"]
