"""``deteval explain`` for Pascal VOC: ``voc07``, ``voc2012`` and ``py_faster_rcnn``, one rule at a time.

The three profiles are points in four rule dimensions, switched in this fixed order:

1. ``metric`` — VOC07's 11-point AP or VOC2010+'s all-point area (``voc07`` / ``py_faster_rcnn`` vs
   ``voc2012``).
2. ``levels`` — the VOC07 recall levels: the devkit's MATLAB ``0:0.1:1`` loop values or py-faster-rcnn's
   ``np.arange(0, 1.1, 0.1)`` (only read by the 11-point metric; switched only when both ends use it).
3. ``comparison`` — a match needs IoU ≥ 0.5 (devkit) or > 0.5 (py-faster-rcnn).
4. ``ranking`` — ties in score kept in file order (the devkit's stable sort) or numpy's default sort.

Each step re-scores with :func:`deteval.run.voc.evaluate_voc` under one more rule of the target; the
deltas add up to the difference. VOC has one IoU threshold: ``mAP50`` is the VOC mAP and ``mAP50-95`` is
``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from deteval.core import PY_FASTER_RCNN_LEVELS, VOC_DEVKIT_LEVELS
from deteval.core.outcomes import TiePolicy
from deteval.detection.voc import VOCDetections, VOCGroundTruth, VOCParams
from deteval.errors import ConfigError
from deteval.explain.yolo import Explanation, residual_steps, walk_step
from deteval.run.voc import evaluate_voc


@dataclass(frozen=True)
class VocRules:
    """One point of the VOC rule space."""

    metric: str  # "voc07" | "voc2010"
    levels: str  # "devkit" | "arange"
    comparison: str  # ">=" | ">"
    ranking: TiePolicy  # "stable" | "quicksort"


VOC_PROFILE_RULES: dict[str, VocRules] = {
    "voc07": VocRules("voc07", "devkit", ">=", "stable"),
    "voc2012": VocRules("voc2010", "devkit", ">=", "stable"),
    "py_faster_rcnn": VocRules("voc07", "arange", ">", "quicksort"),
}
_ORDER = ("metric", "levels", "comparison", "ranking")
_TEXT = {
    "metric": "AP: VOC07 11-point vs VOC2010+ all-point",
    "levels": "VOC07 recall levels",
    "comparison": "IoU comparison with 0.5",
    "ranking": "ranking of tied scores",
}


@dataclass(frozen=True)
class _Params(VOCParams):
    """VOCParams whose rules are set one by one instead of bundled in a profile name."""

    rules: VocRules = VOC_PROFILE_RULES["voc2012"]

    @property
    def strict(self) -> bool:
        return self.rules.comparison == ">"

    @property
    def ties(self) -> TiePolicy:
        return self.rules.ranking

    @property
    def levels(self) -> np.ndarray:
        return PY_FASTER_RCNN_LEVELS if self.rules.levels == "arange" else VOC_DEVKIT_LEVELS


def _score(gt: VOCGroundTruth, dets: VOCDetections, rules: VocRules) -> tuple[float, dict[str, Any]]:
    res = evaluate_voc(gt, dets, params=_Params(metric=rules.metric, rules=rules))
    return float(res.summary["map"]), {k: v.get("ap") for k, v in res.per_class.items()}


def explain_voc(gt: VOCGroundTruth, dets: VOCDetections, profile_from: str, profile_to: str) -> Explanation:
    """Attribute the VOC mAP difference between two VOC profiles rule by rule (module docstring)."""
    for p in (profile_from, profile_to):
        if p not in VOC_PROFILE_RULES:
            raise ConfigError(f"unknown VOC profile {p!r}; choose one of {', '.join(VOC_PROFILE_RULES)}")
    ra, rb = VOC_PROFILE_RULES[profile_from], VOC_PROFILE_RULES[profile_to]
    end_a = evaluate_voc(gt, dets, params=VOCParams(metric=ra.metric, profile=_profile(profile_from)))
    end_b = evaluate_voc(gt, dets, params=VOCParams(metric=rb.metric, profile=_profile(profile_to)))
    cur = ra
    prev = _score(gt, dets, cur)
    first = prev[0]
    steps: list[dict[str, Any]] = []
    for dim in _ORDER:
        want = getattr(rb, dim)
        if getattr(cur, dim) == want:
            continue
        if dim == "levels" and "voc2010" in (cur.metric, rb.metric):
            continue  # the all-point metric reads no levels
        nxt_rules = replace(cur, **{dim: want})
        nxt = _score(gt, dets, nxt_rules)
        changed = sum(1 for c in nxt[1] if nxt[1][c] != prev[1].get(c))
        rule = f"{_TEXT[dim]}: {getattr(cur, dim)} → {want}"
        steps.append(walk_step(rule, None, nxt[0] - prev[0], changed, "classes whose AP changed"))
        cur, prev = nxt_rules, nxt
    start = {"profile": profile_from, "mAP50-95": None, "mAP50": float(end_a.summary["map"])}
    end = {"profile": profile_to, "mAP50-95": None, "mAP50": float(end_b.summary["map"])}
    steps += residual_steps((None, first), (None, prev[0]), start, end)
    return Explanation(start, end, steps)


def _profile(name: str) -> str:
    return "py_faster_rcnn" if name == "py_faster_rcnn" else "voc_devkit"
