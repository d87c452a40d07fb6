"""CrowdPose's keypoint protocol: COCO's OKS matching and accumulation, summarised by crowd level instead of area.

CrowdPose (Li et al., "CrowdPose: Efficient Crowded Scenes Pose Estimation and a New Benchmark", CVPR 2019)
scores keypoints as COCO does (:mod:`deteval.detection.coco`, maxDets 20), with three differences, as its
``crowdposetools`` and faster-coco-eval's ``iouType="keypoints_crowd"`` compute them:

* **OKS scale.** Its annotations have no ``area``: the scale in ``exp(−d² / (2 s² (2σ)²))`` is
  ``bbox_h · bbox_w · 0.53`` (``use_area=False``, the CrowdPose tool and xtcocotools' CrowdPose demo);
  ``use_area=True`` reads the ``area`` field, as faster-coco-eval does by default.
* **Sigmas.** Its 14 keypoints' sigmas, :data:`CROWDPOSE_KPT_OKS_SIGMAS`.
* **Summary.** Nine numbers: AP, AP50, AP75, AR, AR50, AR75 (COCO's, area "all", maxDets 20), then AP of the
  images of each crowd level, split by the image record's ``crowdIndex`` (:data:`CROWD_LEVELS`):
  easy ``< 0.2``, medium ``< 0.8``, hard otherwise. A level's AP is the evaluation re-run on its images alone
  and summarised as ``round(mean(precision[:, :, :, 0, :]), 4)``: the mean of every cell of the area-"all"
  slice, the −1 cells of categories without ground truth among those images included (COCO's summary leaves
  them out), rounded to 4 decimals; a level without images is −1. ``compat="fixed"`` gives the level's AP as
  COCO's summary would (the mean of the cells > −1, unrounded).

The precision is faster-coco-eval's (``tp / (tp + fp)``, :mod:`deteval.detection.faster_coco_eval`): where a
list's first counted detection is a true positive and the next is not, 1.0 where pycocotools-based tools
(crowdposetools, xtcocotools) hold ``1 / (1 + eps)``; every number is computed from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from deteval.detection.coco.evaluation import CocoEvaluation
from deteval.detection.coco.summary import summarize
from deteval.detection.coco_params import CocoParams
from deteval.detection.faster_coco_eval import faster_coco_eval_precision
from deteval.errors import ValidationError
from deteval.io.coco import CocoGroundTruth
from deteval.results import EvalResult

__all__ = [
    "CROWDPOSE_KPT_OKS_SIGMAS",
    "CROWDPOSE_STAT_NAMES",
    "CROWD_LEVELS",
    "CrowdPoseEvaluation",
    "box_scale",
    "crowd_levels",
    "crowdpose_params",
    "faster_coco_eval_evaluation",
    "level_ap",
]

#: CrowdPose's 14 keypoint sigmas (shoulders, elbows, wrists, hips, knees, ankles, head, neck), computed as its
#: tools do (a list of tenths divided by 10).
CROWDPOSE_KPT_OKS_SIGMAS = (
    np.array([0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89, 0.79, 0.79]) / 10.0
)

#: The crowd levels and the ``crowdIndex`` below which an image belongs to each (the last takes the rest), as
#: CrowdPose's summary calls its split (``get_type_result(first=0.2, second=0.8)``).
CROWD_LEVELS: tuple[tuple[str, float], ...] = (("easy", 0.2), ("medium", 0.8), ("hard", math.inf))

#: The nine summary numbers, in CrowdPose's order.
CROWDPOSE_STAT_NAMES = ("AP", "AP50", "AP75", "AR", "AR50", "AR75", "AP_easy", "AP_medium", "AP_hard")

#: Where CrowdPose's six first numbers are among COCO's ten keypoint stats.
_COCO_STATS = (0, 1, 2, 5, 6, 7)

#: The CrowdPose tool's OKS scale factor on the box area (``tmparea = h * w * 0.53``).
BOX_AREA_FACTOR = 0.53


def crowdpose_params(sigmas: Any = None) -> CocoParams:
    """COCO's keypoint parameters (maxDets 20, areas all/medium/large) with CrowdPose's sigmas (or ``sigmas``)."""
    p = CocoParams.default("keypoints")
    sig = CROWDPOSE_KPT_OKS_SIGMAS if sigmas is None else sigmas
    return replace(p, kpt_oks_sigmas=np.asarray(sig, dtype=np.float64).copy()).validated()


def box_scale(gt: CocoGroundTruth) -> CocoGroundTruth:
    """The ground truth with each object's ``area`` set to the CrowdPose tool's OKS scale ``h · w · 0.53`` of
    its box, the same double (``(h * w) * 0.53``). The area ranges read it too; CrowdPose's summary uses the
    range "all" only."""
    return replace(gt, area=gt.bbox[:, 3] * gt.bbox[:, 2] * BOX_AREA_FACTOR)


def crowd_levels(gt: CocoGroundTruth) -> list[list[Any]]:
    """The image ids of each crowd level (:data:`CROWD_LEVELS`), ascending, from the image records'
    ``crowdIndex`` (a finite number; a missing or bad one is a ValidationError naming the image)."""
    levels: list[list[Any]] = [[] for _ in CROWD_LEVELS]
    for i, rec in enumerate(gt.image_records or ()):
        img_id = rec.get("id") if isinstance(rec, dict) else None
        value = rec.get("crowdIndex") if isinstance(rec, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValidationError(
                f"crowdIndex must be a finite number, got {value!r}"[:200],
                file=gt.source,
                record=f"images[{i}] (id {img_id!r})",
            )
        level = next(k for k, (_, below) in enumerate(CROWD_LEVELS) if value < below)
        levels[level].append(img_id)
    return [sorted(ids) for ids in levels]


def faster_coco_eval_evaluation(ev: CocoEvaluation) -> CocoEvaluation:
    """``ev`` with faster-coco-eval's precision and the summary computed from it."""
    precision = faster_coco_eval_precision(ev.precision)
    stats, lines = summarize(precision, ev.recall, ev.params, ev.compat)
    return replace(ev, precision=precision, stats=stats, lines=lines)


def level_ap(ev: CocoEvaluation | None, compat: str) -> float:
    """One crowd level's AP from the evaluation of its images (None: the level has none, −1): CrowdPose's
    ``round(np.mean(precision[:, :, :, 0, :]), 4)`` (every cell, −1 included), or under ``compat="fixed"``
    the mean of the cells > −1 (−1 if none)."""
    if ev is None:
        return -1.0
    cells = ev.precision[:, :, :, 0, :]
    if compat == "fixed":
        kept = cells[cells > -1]
        return float(np.mean(kept)) if kept.size else -1.0
    return float(round(np.mean(cells), 4))


@dataclass
class CrowdPoseEvaluation:
    """CrowdPose's nine numbers (:data:`CROWDPOSE_STAT_NAMES`), the evaluation of all images (``overall``) and
    the image count of each crowd level."""

    overall: CocoEvaluation
    stats: np.ndarray
    level_images: list[int]
    use_area: bool
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def of(
        cls, overall: CocoEvaluation, levels: list[CocoEvaluation | None], counts: list[int], use_area: bool
    ) -> CrowdPoseEvaluation:
        """The summary of ``overall`` and each level's evaluation (None: a level without images)."""
        overall = faster_coco_eval_evaluation(overall)
        levels = [None if ev is None else faster_coco_eval_evaluation(ev) for ev in levels]
        stats = np.array(
            [float(overall.stats[k]) for k in _COCO_STATS] + [level_ap(ev, overall.compat) for ev in levels]
        )
        return cls(overall, stats, counts, use_area, list(overall.warnings))

    @property
    def lines(self) -> list[str]:
        """The summary as CrowdPose prints it: COCO's six lines, then one per crowd level."""
        p = self.overall.params
        md = p.max_dets[-1]
        iou = f"{p.iou_thrs[0]:0.2f}:{p.iou_thrs[-1]:0.2f}"
        out = [self.overall.lines[k] for k in _COCO_STATS if k < len(self.overall.lines)]
        for (name, _), value in zip(CROWD_LEVELS, self.stats[6:]):
            out.append(
                f" {'Average Precision':<18} (AP) @[ IoU={iou:<9} | type={name:>6s} | maxDets={md:>3d} ] = "
                f"{value:0.3f}"
            )
        return out

    def to_result(self, *, per_class: bool = False) -> EvalResult:
        """An :class:`EvalResult` (protocol "crowdpose") with the nine numbers and the summary lines."""
        summary: dict[str, Any] = {
            "iou_type": "keypoints",
            "compat": self.overall.compat,
            "stats": [float(s) for s in self.stats],
            **{n: float(s) for n, s in zip(CROWDPOSE_STAT_NAMES, self.stats)},
            "oks_scale": "area" if self.use_area else "0.53 * box area",
            **{f"n_images_{name}": n for (name, _), n in zip(CROWD_LEVELS, self.level_images)},
            **self.overall.counts,
            "params": self.overall.params.to_dict(),
        }
        return EvalResult(
            protocol="crowdpose",
            summary=summary,
            per_class=self.overall.per_class() if per_class else {},
            warnings=list(self.warnings),
            lines=self.lines,
        )
