"""Music information retrieval measures on the P/R/F core (FMP, Section 4.5; mir_eval).

* :func:`set_prf`: P/R/F of an estimated positive item set.
* :func:`pairwise_prf` / :func:`pairwise_prf_labels`: pairwise frame-label P/R/F of segment annotations
  or label sequences, counted from the label contingency table.
* :func:`boundary_prf`: boundary P/R/F with tolerance τ under the ``fmp`` or ``one_to_one`` rule.
* :func:`onset_prf`: event P/R/F with one-to-one matching (mir_eval.onset.f_measure).
* :func:`evaluate_mir`: all of the above for a reference/estimate pair → :class:`~deteval.results.EvalResult`.
* :func:`evaluate_mir_tracks`: every track of a reference folder and an estimate folder (files paired by
  name), per track and the mean over tracks, with intervals and paired tests over tracks (its home is
  :mod:`deteval.stats.mir`, above this package; loaded from there on first use).
* :func:`adjust_to_reference`: ``mir_eval.segment.evaluate``'s time-span adjustment of a pair.

Segment annotations are read by :func:`deteval.io.lab.load_lab` (re-exported here with
:class:`~deteval.tables.segments.Segments` and :func:`~deteval.tables.segments.segments_from_list`).

Where the references disagree or fail: FMP compares labels by identity and divides by zero on empty
estimates, and libfmp's boundary code counts an estimate once per reference window; mir_eval lower-cases
labels, samples frames on a float32 grid and returns NaN when no pair is positive. Each module docstring
says which behaviour is followed, which is offered as an option, and what is returned instead.
"""

import importlib
from typing import TYPE_CHECKING, Any

from deteval.io.lab import load_lab
from deteval.mir.boundary import (
    RULES,
    BoundarySpacingWarning,
    boundaries_from_binary,
    boundary_prf,
    onset_prf,
    segment_boundaries,
)
from deteval.mir.counts import PRFCounts
from deteval.mir.evaluate import evaluate_mir
from deteval.mir.matching import match_one_to_one
from deteval.mir.pairwise import PairwiseResult, frame_times, pair_counts, pairwise_prf, pairwise_prf_labels
from deteval.mir.sets import set_prf
from deteval.mir.timespan import adjust_to_reference
from deteval.mir.tracks import pair_folders
from deteval.tables.segments import Segments, segments_from_list

if TYPE_CHECKING:
    from deteval.stats.mir import evaluate_mir_tracks


def __getattr__(name: str) -> Any:
    # evaluate_mir_tracks resamples tracks with deteval.stats, a layer above the protocols: loaded on first use
    if name == "evaluate_mir_tracks":
        return importlib.import_module("deteval.stats.mir").evaluate_mir_tracks
    raise AttributeError(f"module 'deteval.mir' has no attribute {name!r}")


__all__ = [
    "RULES",
    "BoundarySpacingWarning",
    "PRFCounts",
    "PairwiseResult",
    "Segments",
    "adjust_to_reference",
    "boundaries_from_binary",
    "boundary_prf",
    "evaluate_mir",
    "evaluate_mir_tracks",
    "frame_times",
    "load_lab",
    "match_one_to_one",
    "onset_prf",
    "pair_counts",
    "pair_folders",
    "pairwise_prf",
    "pairwise_prf_labels",
    "segment_boundaries",
    "segments_from_list",
    "set_prf",
]
