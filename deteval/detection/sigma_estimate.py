"""Per-keypoint OKS sigmas estimated from data, as the COCO keypoint evaluation defines them.

COCO's keypoint evaluation (https://cocodataset.org/#keypoints-eval, "Object Keypoint Similarity") defines

    OKS = Σ_i exp(−d_i² / (2 s² κ_i²)) δ(v_i > 0) / Σ_i δ(v_i > 0),   κ_i = 2σ_i,

with d_i the distance between a keypoint and its ground truth, s² the object's area and σ_i "the per-keypoint
standard deviation with respect to object scale s", measured on redundantly annotated images as

    σ_i² = E[d_i² / s²].

(pycocotools' ``e = d² / (2σ)² / (area + eps) / 2`` is that exponent with s² = ``area``.) This module computes
that expectation as a mean over pairs of the same object:

* **repeated annotations** (:func:`pairs_from_repeats`): two annotations of one image and category are of the
  same object when they share a group key (a field of the annotation records, e.g. ``"object_id"``) or, without
  one, when their boxes overlap with IoU ≥ ``iou`` (COCO's ``bbIou``); every such pair counts once, d_i
  between their keypoints, s² the area of the one with the lower annotation id;
* **a model's errors** (:func:`pairs_from_results`): per image and category, detections in descending score
  each take the unmatched ground truth nearest in keypoints, the root mean of d_i² / s² over its labelled
  keypoints, if at most ``max_distance`` (0.5 by default: half the object's scale; crowds, objects without
  labelled keypoints or area are left out); d_i between the detection's and the ground truth's keypoint, s²
  the ground truth's area. The cut leaves out gross errors (a wrong object), which would otherwise dominate
  the mean; it also trims the tail of the real errors, so a generous cut is best.

A keypoint counts in a pair where both sides label it (v > 0; a detection's keypoints are all labelled) and
s² > 0. σ_i = sqrt(mean of d_i² / s²) per category and keypoint; NaN where no pair labels the keypoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deteval.errors import ValidationError, first_true
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.io.coco.keypoints import keypoint_counts
from deteval.match.iou import bb_iou

__all__ = ["KeypointPairs", "SigmaEstimate", "estimate_sigmas", "pairs_from_repeats", "pairs_from_results"]


@dataclass
class KeypointPairs:
    """Pairs of the same object: per pair its category index, both sides' keypoints (P × K × 3) and s²."""

    cat: np.ndarray
    a: np.ndarray
    b: np.ndarray
    s2: np.ndarray


def _overlapping_pairs(boxes: np.ndarray, iou: float) -> list[tuple[int, int]]:
    """Every pair (i, j), i < j, of one image and category whose boxes overlap with IoU ≥ ``iou``."""
    m = bb_iou(boxes[:, None, :], boxes[None, :, :], np.zeros((1, len(boxes)), dtype=bool))
    rows, cols = np.nonzero(np.triu(m >= iou, k=1))
    return list(zip(rows.tolist(), cols.tolist()))


def _groups(img: np.ndarray, cat: np.ndarray) -> list[np.ndarray]:
    """The row indices of each (image, category), rows in order."""
    order = np.lexsort((np.arange(len(img)), cat, img))
    key = img[order] * (int(cat.max(initial=0)) + 1) + cat[order]
    cuts = np.flatnonzero(np.diff(key)) + 1
    return np.split(order, cuts) if len(order) else []


def _one_keypoint_count(keypoints: np.ndarray, file: str, annotations: bool = True) -> None:
    """Refuse keypoints of several counts (categories with skeletons of different sizes): the estimate
    holds one K for every category."""
    counts = keypoint_counts(keypoints)
    if counts.size and (i := first_true(counts != counts[0])) >= 0:
        raise ValidationError(
            f"sigmas are estimated for one keypoint count; the file has records of {int(counts[0])} and of "
            f"{int(counts[i])} keypoints (estimate each skeleton from a file of its categories alone)",
            file=file,
            record=f"annotations[{i}]" if annotations else i,
        )


def pairs_from_repeats(
    gt: CocoGroundTruth, iou: float = 0.5, group_key: Sequence[Any] | None = None
) -> KeypointPairs:
    """Pairs of annotations of the same object (see the module docstring); ``group_key``: per annotation (in
    file order) the value of its group field, None where it has none (such annotations pair with no other)."""
    if gt.keypoints is None:
        raise ValidationError("the ground truth has no keypoints", file=gt.source)
    _one_keypoint_count(gt.keypoints, gt.source)
    kp = gt.keypoints.reshape(len(gt), -1, 3)
    pairs: list[tuple[int, int]] = []
    for rows in _groups(gt.img, gt.cat):
        rows = rows[np.argsort(gt.ann_id[rows], kind="stable")]  # (the lower id first in each pair)
        if group_key is not None:
            keys = [group_key[r] for r in rows.tolist()]
            pairs += [
                (int(rows[i]), int(rows[j]))
                for i in range(len(rows))
                for j in range(i + 1, len(rows))
                if keys[i] is not None and keys[i] == keys[j]
            ]
        else:
            pairs += [(int(rows[i]), int(rows[j])) for i, j in _overlapping_pairs(gt.bbox[rows], iou)]
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    return KeypointPairs(gt.cat[a], kp[a], kp[b], gt.area[a])


def pairs_from_results(gt: CocoGroundTruth, res: CocoResults, max_distance: float = 0.5) -> KeypointPairs:
    """Detections paired with the ground truth they find (see the module docstring): per image and category,
    detections in descending score (stable) each take the unmatched ground truth of smallest root mean
    ``d_i² / s²`` over the ground truth's labelled keypoints, if at most ``max_distance`` (the first on ties)."""
    if gt.keypoints is None or res.keypoints is None:
        raise ValidationError("keypoints are needed in the ground truth and the results", file=gt.source)
    _one_keypoint_count(gt.keypoints, gt.source)
    _one_keypoint_count(res.keypoints, res.source, annotations=False)
    gkp = gt.keypoints.reshape(len(gt), -1, 3)
    dkp = res.keypoints.reshape(len(res), -1, 3)
    usable = ~gt.iscrowd & (gkp[:, :, 2] > 0).any(axis=1) & (gt.area > 0)
    g_groups: dict[tuple[int, int], np.ndarray] = {}
    for rows in _groups(gt.img, gt.cat):
        rows = rows[usable[rows]]
        if len(rows):
            g_groups[(int(gt.img[rows[0]]), int(gt.cat[rows[0]]))] = rows
    ga: list[int] = []
    da: list[int] = []
    for rows in _groups(res.img, res.cat):
        grows = g_groups.get((int(res.img[rows[0]]), int(res.cat[rows[0]])))
        if grows is None:
            continue
        rows = rows[np.argsort(-res.score[rows], kind="stable")]
        g, d = gkp[grows], dkp[rows]
        lab = g[None, :, :, 2] > 0
        d2 = (d[:, None, :, 0] - g[None, :, :, 0]) ** 2 + (d[:, None, :, 1] - g[None, :, :, 1]) ** 2
        cost = np.sqrt((np.where(lab, d2, 0.0).sum(-1) / lab.sum(-1)) / gt.area[grows][None, :])
        taken = np.zeros(len(grows), dtype=bool)
        for i in range(len(rows)):
            row = np.where(taken, np.inf, cost[i])
            j = int(row.argmin())
            if row[j] <= max_distance:
                taken[j] = True
                da.append(int(rows[i]))
                ga.append(int(grows[j]))
    gi = np.array(ga, dtype=np.int64)
    di = np.array(da, dtype=np.int64)
    det = dkp[di].copy()
    det[:, :, 2] = 1.0  # (a detection labels every keypoint)
    return KeypointPairs(gt.cat[gi], gkp[gi], det, gt.area[gi])


@dataclass
class SigmaEstimate:
    """Per category (ids of the ground truth): the estimated sigmas (NaN where no pair labels a keypoint), the
    number of pairs that label each keypoint, and the number of pairs."""

    cat_ids: list[Any]
    cat_names: list[str]
    sigmas: np.ndarray
    counts: np.ndarray
    pairs: np.ndarray
    method: str
    warnings: list[str] = field(default_factory=list)

    def per_category(self) -> dict[Any, list[float]]:
        """``{category id: sigmas}`` of the categories every keypoint of which has a sample: the form
        ``kpt_oks_sigmas_per_category`` takes."""
        return {
            c: self.sigmas[k].tolist()
            for k, c in enumerate(self.cat_ids)
            if self.pairs[k] and np.isfinite(self.sigmas[k]).all()
        }

    def spec(self) -> str:
        """The ``--kpt-oks-sigmas-per-category`` form: ``ID:s1,s2,...;ID:...`` (full precision)."""
        return ";".join(
            f"{c}:" + ",".join(repr(float(s)) for s in sig) for c, sig in self.per_category().items()
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "categories": [
                {
                    "id": c,
                    "name": n,
                    "pairs": int(self.pairs[k]),
                    "sigmas": [None if not math.isfinite(s) else float(s) for s in self.sigmas[k]],
                    "counts": self.counts[k].tolist(),
                }
                for k, (c, n) in enumerate(zip(self.cat_ids, self.cat_names))
            ],
            "kpt_oks_sigmas_per_category": {str(c): v for c, v in self.per_category().items()},
            "spec": self.spec(),
            "warnings": list(self.warnings),
        }


def estimate_sigmas(pairs: KeypointPairs, gt: CocoGroundTruth, method: str) -> SigmaEstimate:
    """σ_i = sqrt(mean over pairs of d_i² / s²) per category and keypoint (the module docstring's rule)."""
    n_cat = gt.cat_ids.shape[0]
    k = (
        pairs.a.shape[1]
        if pairs.a.ndim == 3
        else (gt.keypoints.shape[1] // 3 if gt.keypoints is not None else 0)
    )
    total = np.zeros((n_cat, k))
    counts = np.zeros((n_cat, k), dtype=np.int64)
    n_pairs = np.bincount(pairs.cat, minlength=n_cat)
    if len(pairs.cat):
        both = (pairs.a[:, :, 2] > 0) & (pairs.b[:, :, 2] > 0) & (pairs.s2 > 0)[:, None]
        d2 = (pairs.a[:, :, 0] - pairs.b[:, :, 0]) ** 2 + (pairs.a[:, :, 1] - pairs.b[:, :, 1]) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(both, d2 / pairs.s2[:, None], 0.0)
        np.add.at(total, pairs.cat, ratio)
        np.add.at(counts, pairs.cat, both.astype(np.int64))
    with np.errstate(divide="ignore", invalid="ignore"):
        sigmas = np.sqrt(np.where(counts > 0, total / counts, np.nan))
    warnings = []
    for c in range(n_cat):
        if n_pairs[c] and (counts[c] == 0).any():
            missing = np.flatnonzero(counts[c] == 0).tolist()
            warnings.append(
                f"category {gt.cat_ids[c]!r}: no pair labels keypoint(s) {missing[:10]}; left out of the spec"
            )
    if not len(pairs.cat):
        warnings.append("no pair of the same object found: no sigma estimated")
    return SigmaEstimate(gt.cat_ids.tolist(), list(gt.cat_names), sigmas, counts, n_pairs, method, warnings)
