"""LVIS evaluation (federated), identical to lvis-api 0.5.3's ``LVISResults`` + ``LVISEval``; Fixed AP and
pooled AP (Dave et al. 2021).

>>> ev = evaluate_lvis("lvis_v1_val.json", "detections.json", iou_type="segm")     # doctest: +SKIP
>>> ev.results["AP"], ev.results["APr"], ev.results["AR@300"]                        # doctest: +SKIP

The rules read from lvis-api 0.5.3 (per-image cap, federated categories, no crowd, zero areas), where deteval
differs from it, and Fixed AP / pooled AP (Dave et al., arXiv:2102.01066): docs/lvis.md.

The package holds the protocol's steps, none of which starts a process or knows of Dask: :mod:`.selection`
(the caps and filters), :mod:`.match` (parts of whole images matched and merged) and :mod:`.evaluation`
(accumulation, summary, :class:`LvisEvaluation`). How an evaluation is executed (one process, image shards
on Dask, result files read in byte ranges) is :mod:`deteval.run.lvis`'s, which :func:`evaluate_lvis` calls.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from deteval.detection.lvis.evaluation import (
    FIXED_AP_DETS_PER_CAT,
    IOU_TYPES,
    POOLS,
    LvisEvaluation,
    finish_lvis,
    lvis_arrays,
    lvis_result_names,
)
from deteval.detection.lvis.match import (
    SHARD_DETECTIONS,
    lvis_detections,
    lvis_truths,
    match_lvis_shard,
    merge_lvis_tables,
)
from deteval.detection.lvis.selection import lvis_caps, lvis_selection

if TYPE_CHECKING:
    from deteval.run.lvis import evaluate_lvis

__all__ = [
    "FIXED_AP_DETS_PER_CAT",
    "IOU_TYPES",
    "POOLS",
    "SHARD_DETECTIONS",
    "LvisEvaluation",
    "evaluate_lvis",
    "finish_lvis",
    "lvis_arrays",
    "lvis_caps",
    "lvis_detections",
    "lvis_result_names",
    "lvis_selection",
    "lvis_truths",
    "match_lvis_shard",
    "merge_lvis_tables",
]


def __getattr__(name: str) -> Any:
    # The user-facing driver lives with the runner (deteval.run.lvis), which imports this package's steps;
    # this path, shown in earlier READMEs, keeps working (deprecated: use deteval.evaluate_lvis).
    if name == "evaluate_lvis":
        return importlib.import_module("deteval.run.lvis").evaluate_lvis
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
