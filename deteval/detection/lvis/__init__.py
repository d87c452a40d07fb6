"""LVIS evaluation (federated), identical to lvis-api 0.5.3's ``LVISResults`` + ``LVISEval``; Fixed AP and
pooled AP (Dave et al. 2021).

>>> ev = evaluate_lvis("lvis_v1_val.json", "detections.json", iou_type="segm")     # doctest: +SKIP
>>> ev.results["AP"], ev.results["APr"], ev.results["AR@300"]                        # doctest: +SKIP

The rules, read from lvis-api 0.5.3 (``lvis/results.py``, ``lvis/eval.py``):

* **Per-image cap** (``LVISResults(max_dets=300)``): each image keeps its 300 highest-scoring detections over
  *all* categories (a stable sort: ties keep file order), before anything else is filtered.
* **Zero areas are dropped**: ``get_ann_ids`` keeps annotations and detections with ``0 < area < inf`` only, so
  a ground truth of area 0 does not exist for the evaluation, and neither does a detection with ``w*h == 0``.
* **Federated**: in an image, a category is evaluated only if it has ground truth there or is listed in the
  image's ``neg_category_ids``; detections of other categories are discarded.
* **Matching** per (image, category) as in pycocotools but with no crowd (``iscrowd`` is never read; every
  ground truth absorbs at most one detection); a ground truth is ignored if its ``ignore`` flag is set or its
  area is outside the range; an unmatched detection is ignored if its area is outside the range *or* its
  category is in the image's ``not_exhaustive_category_ids``.
* **Accumulation** as pycocotools with one unlimited maxDet (no per-(image, category) cut): ``precision[T, R,
  K, A]``, ``recall[T, K, A]``; −1 where a category has no non-ignored ground truth.
* **Summary** (``LVISEval.results``): AP, AP50, AP75, APs, APm, APl, APr, APc, APf (means over the categories
  of frequency r, c, f), AR@300, ARs@300, ARm@300, ARl@300 — each ``np.mean`` of the entries > −1.

Where deteval differs from lvis-api (bugs, not conventions): a ground-truth annotation with ``id == 0`` is
matched (lvis-api stores a match as the gt id, 0 meaning unmatched, so that detection counts as a false
positive); an empty results list is valid (lvis-api crashes). Both are reported in ``warnings``.

**Fixed AP** (Dave, Dollár, Ramanan, Kirillov, Girshick, "Evaluating Large-Vocabulary Object Detectors: The
Devil is in the Details", arXiv:2102.01066, 2021, Sec. 3): no limit per image; instead each category keeps its
K = 10,000 highest-scoring detections over the whole dataset (before the federated filter), then LVIS AP as
above (``evaluate_lvis(..., fixed_ap=True)``; the authors' ``evaluate_ap_fixed.py`` runs lvis-api with
``max_dets=-1``, so the recall keys read ``AR@-1``). **Pooled AP** (same paper, ``AP^pool``): matching per
category as above, but precision and recall are accumulated over all detections of a pool of categories at
once (all, r, c, f; area range "all"), so scores must be comparable across categories; results
``AP-pooled-all``, ``AP-pooled-r``, … (``pooled=True``; the paper's setting is ``fixed_ap=True, pooled=True``).

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
