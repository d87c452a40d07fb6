"""COCO evaluation (bbox, segm, keypoints), identical to pycocotools' ``COCOeval`` and much faster.

>>> ev = evaluate_coco("instances_val.json", "detections.json")          # doctest: +SKIP
>>> ev.stats[0], ev.precision.shape                                       # doctest: +SKIP
(0.504..., (10, 101, 80, 4, 3))

The protocol (pycocotools, ``cocoeval.py``): per (image, category), detections sorted stably by descending
score and cut to ``maxDets[-1]``; greedy matching at each IoU threshold t starting from ``min(t, 1 − 1e−10)``,
regular ground truth before ignored (crowd, or outside the area range), the later ground truth winning an IoU
tie, crowds absorbing any number of detections (crowd IoU = intersection / detection area); per category,
area range and maxDet, precision ``tp/(tp+fp+np.spacing(1))`` made monotone and sampled at 101 recall levels
with ``searchsorted(side="left")``; AP = mean over thresholds, recall levels and categories with ground truth.

The compatibility profiles (``compat=``) and where both differ from pycocotools (bugs, not conventions) are
tabled in docs/coco.md.

The package holds the protocol's steps, none of which starts a process or knows of Dask: :mod:`.params`
(parameters and the ids they select), :mod:`.match` (one part matched: :func:`match_coco`), :mod:`.parts`
(an evaluation in runs of images or categories, merged), :mod:`.evaluation` (accumulation, summary and the
result, :class:`CocoEvaluation`), :mod:`.summary` (pycocotools' twelve numbers), :mod:`.slices` (the arrays one area range
and maxDets at a time, for very many categories), :mod:`.inputs` (several
result files, boxes past the border), :mod:`.arrays` and :mod:`.stream` (per-image arrays, batches of a
training loop). How an evaluation is executed (one process, two cores, image shards on Dask) is
:mod:`deteval.run.coco`'s, which :func:`evaluate_coco` calls.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from deteval.detection.coco.arrays import evaluate_coco_arrays
from deteval.detection.coco.evaluation import CocoEvaluation, finish_evaluation
from deteval.detection.coco.inputs import is_path_list, past_border_counts, past_border_message
from deteval.detection.coco.match import match_coco
from deteval.detection.coco.params import COMPAT_MODES, id_selection, resolve_params
from deteval.detection.coco.parts import SHARD_DETECTIONS, match_in_shards
from deteval.detection.coco.stream import CocoStream
from deteval.detection.coco.summary import (
    DET_STAT_NAMES,
    KPT_STAT_NAMES,
    stat_maxdet,
    stat_names,
    summarize,
    summarize_value,
    summary_specs,
)
from deteval.detection.coco_params import CocoParams

if TYPE_CHECKING:
    from deteval.run.coco import evaluate_coco

__all__ = [
    "COMPAT_MODES",
    "DET_STAT_NAMES",
    "KPT_STAT_NAMES",
    "SHARD_DETECTIONS",
    "CocoEvaluation",
    "CocoParams",
    "CocoStream",
    "evaluate_coco",
    "evaluate_coco_arrays",
    "finish_evaluation",
    "id_selection",
    "is_path_list",
    "match_coco",
    "match_in_shards",
    "past_border_counts",
    "past_border_message",
    "resolve_params",
    "stat_maxdet",
    "stat_names",
    "summarize",
    "summarize_value",
    "summary_specs",
]


def __getattr__(name: str) -> Any:
    # The user-facing driver lives with the runner (deteval.run.coco), which imports this package's steps;
    # this path, shown in earlier READMEs, keeps working (deprecated: use deteval.evaluate_coco).
    if name == "evaluate_coco":
        return importlib.import_module("deteval.run.coco").evaluate_coco
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
