"""What :class:`~deteval.api.MeanAveragePrecision` hands back: a :class:`MetricResult` (an EvalResult that also
answers torchmetrics' keys), the keys of a COCO or VOC evaluation named by the slice each holds, and
``extended_summary``'s IoU matrices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from deteval.detection.boxes import convert_boxes
from deteval.detection.coco import summary_specs
from deteval.match.iou import bb_iou
from deteval.results import EvalResult

__all__ = ["MetricResult", "box_ious", "coco_metrics", "listing", "summary_key", "voc_metrics"]


def listing(values: Sequence[Any]) -> str:
    """``'a', 'b', 'c'``: names as a message lists them."""
    return ", ".join(repr(v) for v in values)


class MetricResult(EvalResult):
    """An :class:`~deteval.results.EvalResult` that can also be read by torchmetrics' keys.

    ``result["map"]``, ``result["map_50"]``, ... (see :meth:`keys`) are Python floats; ``map_per_class``,
    ``mar_<maxdet>_per_class`` and ``classes`` are numpy arrays in the same class order (or -1.0 when
    ``class_metrics`` is off, as in torchmetrics). With several ``iou_type`` values, every key is prefixed
    (``bbox_map``, ``segm_map``), as torchmetrics does, and ``results`` holds one EvalResult per type.
    """

    def __init__(self, base: EvalResult, metrics: dict[str, Any], results: dict[str, EvalResult]) -> None:
        super().__init__(
            protocol=base.protocol,
            summary=base.summary,
            per_class=base.per_class,
            curves=base.curves,
            warnings=base.warnings,
            lines=base.lines,
        )
        self.metrics = metrics
        self.results = results

    def __getitem__(self, key: str) -> Any:
        if key not in self.metrics:
            raise KeyError(f"{key!r}: this result has {listing(list(self.metrics))}")
        return self.metrics[key]

    def __contains__(self, key: object) -> bool:
        return key in self.metrics

    def keys(self) -> list[str]:
        """The torchmetrics-style keys this result answers."""
        return list(self.metrics)

    def items(self) -> list[tuple[str, Any]]:
        return list(self.metrics.items())


def _mean_valid(values: np.ndarray) -> float:
    """pycocotools' mean over entries > -1, or -1 when there is none."""
    v = values[values > -1]
    return float(np.mean(v)) if v.size else -1.0


def summary_key(ap: bool, iou_thr: float | None, area: str, max_det: int | None) -> str | None:
    """torchmetrics' name of one summary number (:data:`~deteval.detection.coco.SummarySpec`): ``map``,
    ``map_50``, ``map_<area>``; ``mar_<maxDets>`` over all areas and IoU thresholds, ``mar_50``,
    ``mar_<area>``. None for a recall over all areas read at no maxDets value (pycocotools' −1 when
    ``maxDets[2]`` does not exist)."""
    if not ap and iou_thr is None and area == "all":
        return None if max_det is None else f"mar_{max_det}"
    name = "map" if ap else "mar"
    if iou_thr is not None:
        name += f"_{round(iou_thr * 100)}"
    return name if area == "all" else f"{name}_{area}"


def coco_metrics(ev: Any, class_metrics: bool) -> dict[str, Any]:
    """torchmetrics' result keys from a :class:`~deteval.detection.coco.CocoEvaluation`: each summary number
    under the name of the slice it averages (:func:`~deteval.detection.coco.summary_specs`, so any number of
    maxDets, area ranges or IoU thresholds names every key right), then ``mar_<m>`` (AR over all areas at
    maxDets m) for every maxDets value not named yet. Keypoints' ``mar_50``/``mar_75`` are AR at IoU 0.5 /
    0.75 (torchmetrics' names); AR at maxDets 50 or 75 is then ``mar_maxdets_50`` / ``mar_maxdets_75``.
    Per class: the mean of ``precision[:, :, k, all, -1]`` and of ``recall[:, k, all, -1]`` over entries
    > -1, as torchmetrics computes them."""
    p = ev.params
    named = [(summary_key(*spec), spec, float(v)) for spec, v in zip(summary_specs(p, ev.compat), ev.stats)]
    for m in p.max_dets:
        spec = (False, None, "all", int(m))
        named.append((f"mar_{m}", spec, ev.summary_value(*spec)))
    at_iou = {key for key, spec, _ in named if spec[1] is not None}
    out: dict[str, Any] = {}
    for key, (_, iou_thr, _, max_det), value in named:
        if key in at_iou and iou_thr is None:  # keypoints with maxDets 50 or 75
            key = f"mar_maxdets_{max_det}"
        if key is not None:
            out.setdefault(key, value)  # two stats of one slice (fixed compat, < 3 maxDets): equal values
    md = list(p.max_dets)
    classes = np.asarray(ev.cat_ids if p.use_cats else [], dtype=np.int64)
    per_ap: Any = -1.0
    per_ar: Any = -1.0
    if class_metrics and p.use_cats and "all" in p.area_lbl:
        a = p.area_lbl.index("all")
        # (categories the arrays leave out, CocoEvaluation.cat_index, are -1 throughout: -1 here too)
        per_ap, per_ar = np.full(len(classes), -1.0), np.full(len(classes), -1.0)
        precision, recall = ev.slice_at(a, len(md) - 1)
        for k, pos in enumerate(ev.array_categories.tolist()):
            per_ap[pos] = _mean_valid(precision[:, :, k])
            per_ar[pos] = _mean_valid(recall[:, k])
    out["map_per_class"] = per_ap
    out[f"mar_{md[-1]}_per_class"] = per_ar
    out["classes"] = classes
    return out


def voc_metrics(
    result: EvalResult, class_ids: np.ndarray, names: Sequence[str], class_metrics: bool
) -> dict[str, Any]:
    """torchmetrics-style keys for the VOC protocol: ``map`` (mAP at the VOC IoU threshold), ``classes`` and,
    with ``class_metrics``, ``map_per_class`` (AP of each class, -1 for a class without ground truth)."""
    rows = [result.per_class.get(name, {}) for name in names]
    per: Any = -1.0
    if class_metrics:
        per = np.array([-1.0 if r.get("ap") is None else float(r["ap"]) for r in rows])
    return {"map": result.summary["map"], "map_per_class": per, "classes": class_ids}


def box_ious(
    images: Sequence[tuple[int, dict[str, Any], dict[str, Any]]], box_format: str, max_det: int
) -> dict[tuple[int, int], np.ndarray]:
    """``extended_summary``'s ``ious``: per (image id, label), pycocotools' ``computeIoU`` matrix: the
    image's detections of that label by descending score (stable), the first ``max_det``, against its
    ground truths of that label in their order; crowd columns are intersection over the detection's area."""
    out: dict[tuple[int, int], np.ndarray] = {}
    for img, pred, target in images:
        pb = convert_boxes(pred["boxes"], box_format, "xywh")  # type: ignore[arg-type]
        tb = convert_boxes(target["boxes"], box_format, "xywh")  # type: ignore[arg-type]
        crowd = target.get("iscrowd", np.zeros(tb.shape[0], np.int64)).astype(bool)
        for label in np.union1d(pred["labels"], target["labels"]).tolist():
            d = np.flatnonzero(pred["labels"] == label)
            g = np.flatnonzero(target["labels"] == label)
            if not d.size or not g.size:
                out[(img, int(label))] = np.zeros((0, 0))  # pycocotools stores [] when either side is empty
                continue
            d = d[np.argsort(-pred["scores"][d], kind="mergesort")][:max_det]
            out[(img, int(label))] = bb_iou(pb[d][:, None, :], tb[g][None, :, :], crowd[g][None, :])
    return out
