"""COCO greedy matching: moved to :mod:`deteval.match.coco` (the home of the matching rules); these names stay
importable from here."""

from deteval.match.coco import PAIR_CHUNK, STEP_PAIRS, IouFn, MatchTable, match_groups, merge_tables

__all__ = ["PAIR_CHUNK", "STEP_PAIRS", "IouFn", "MatchTable", "match_groups", "merge_tables"]
