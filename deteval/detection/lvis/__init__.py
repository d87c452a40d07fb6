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

from typing import Any

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

# (the module, not its names: deteval.run.lvis imports this package's modules, and may be imported first)
from deteval.run import lvis as runner

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


def evaluate_lvis(
    gt: Any,
    results: Any,
    *,
    iou_type: str = "bbox",
    max_dets: int | None = 300,
    dets_per_cat: int | None = None,
    fixed_ap: bool = False,
    pooled: bool = False,
    on_error: str = "raise",
    client: Any = None,
    shards: int | None = None,
) -> LvisEvaluation:
    """Evaluate ``results`` against LVIS ground truth ``gt`` (see the package docstring for the rules).

    ``gt``: a path, a parsed dict, an lvis-api ``LVIS`` or an :class:`~deteval.io.lvis.LvisGroundTruth`;
    ``results``: a path or a list of result dicts (COCO results format, read as loadRes/LVISResults read them),
    or several paths (e.g. one file per training rank), read as their concatenation in the given order.
    ``max_dets``: detections kept per image (lvis-api's 300; None or −1: no limit); ``dets_per_cat``:
    detections kept per category over the dataset (None: no limit); ``fixed_ap=True`` sets
    ``max_dets=None, dets_per_cat=10_000`` (Fixed AP) unless ``dets_per_cat`` is given; ``pooled=True`` adds
    the pooled APs. ``client`` (a ``dask.distributed`` Client) and/or ``shards``: the matching runs on
    ``shards`` image shards (default: one per worker thread), on the cluster if ``client`` is given. Result
    files are then read by the workers in byte ranges (:mod:`deteval.run.lvis`); this process reads
    the ground truth and applies the caps (the per-image cap and Fixed AP's per-category cut over all
    images) on four columns of the detections, so each worker holds only its ranges and its shard's
    detections and ground truths and returns its match table; the results are bit-identical to one process
    for every shard count.
    """
    return runner.evaluate_lvis(
        gt,
        results,
        iou_type=iou_type,
        max_dets=max_dets,
        dets_per_cat=dets_per_cat,
        fixed_ap=fixed_ap,
        pooled=pooled,
        on_error=on_error,
        client=client,
        shards=shards,
    )
