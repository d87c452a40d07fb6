"""Confusion matrix over the classes plus background, at one IoU and one score threshold.

Detections below ``score_threshold`` are dropped (after the protocol's per-image cut, which keeps the same
set). Then, image by image:

1. the protocol's own matching at IoU ``iou`` (:func:`deteval.analysis.tide.assign`: pycocotools' rule for
   COCO, VOCevaldet.m's for VOC) gives the true positives: the diagonal;
2. each remaining detection, by descending score, takes the still free GT *of another class* with the
   highest IoU >= ``iou`` (the first wins a tie): an off-diagonal cell (row = GT class, column = predicted);
3. a detection left over is a false positive on background (last row), unless the protocol ignores it
   (a COCO crowd region, a VOC difficult object of its class: counted in ``ignored``, not in the matrix);
4. a GT left unmatched is missed (last column).

So row ``i`` (a class) sums to the number of non-crowd (non-difficult) GT of class ``i``; the last row holds
the detections that match nothing, by predicted class; the diagonal is the protocol's true-positive count.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from deteval.analysis.tide import TideInput, assign, iou_matrix
from deteval.errors import ValidationError

__all__ = ["Confusion", "confusion_matrix"]


@dataclass
class Confusion:
    """``matrix[i][j]``: GT of class i (last row: none) claimed by a detection of class j (last column: none)."""

    labels: list[str]
    matrix: np.ndarray
    iou: float
    score_threshold: float
    ignored: int
    #: Another tool's rule the matrix follows (e.g. ``"Ultralytics 8.4.184"``; its detections count when
    #: scored above ``score_threshold`` and matched above ``iou``); empty: deteval's (module docstring)
    rule: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``{"labels": [..., "background"], "matrix": [[...]], ...}`` (integers; ``rule`` when set)."""
        out: dict[str, Any] = {
            "labels": list(self.labels),
            "matrix": self.matrix.astype(int).tolist(),
            "iou": self.iou,
            "score_threshold": self.score_threshold,
            "ignored": self.ignored,
        }
        if self.rule:
            out["rule"] = self.rule
        return out

    def lines(self) -> list[str]:
        """A text rendering (rows: ground truth; columns: predicted)."""
        w = max(6, *(len(n) for n in self.labels)) + 1
        head = " " * w + "".join(f"{n[: w - 1]:>{w}}" for n in self.labels)
        rows = [
            f"{n[: w - 1]:<{w}}" + "".join(f"{int(v):>{w}}" for v in r)
            for n, r in zip(self.labels, self.matrix)
        ]
        if self.rule:
            how = f"{self.rule}: IoU > {self.iou:g}, conf > {self.score_threshold:g}"
        else:
            how = f"IoU {self.iou:g}, score >= {self.score_threshold:g}"
        title = f"Confusion ({how}; rows ground truth, columns predicted)"
        return [title, head, *rows]


def confusion_matrix(
    inp: TideInput,
    names: list[str],
    *,
    iou: float = 0.5,
    score_threshold: float = 0.25,
    rule: str = "coco",
    max_dets: int = 100,
) -> Confusion:
    """The matrix of ``inp`` whose classes are ``0 .. len(names) - 1`` (module docstring for the rules)."""
    if rule not in ("coco", "voc"):
        raise ValidationError(f"rule must be 'coco' or 'voc', got {rule!r}")
    if not 0.0 < iou <= 1.0:
        raise ValidationError(f"iou must be in (0, 1], got {iou}")
    k = len(names)
    keep = inp.dt_score >= score_threshold
    sub = replace(
        inp,
        dt_img=inp.dt_img[keep],
        dt_cls=inp.dt_cls[keep],
        dt_score=inp.dt_score[keep],
        dt_box=inp.dt_box[keep],
        tie_key=None if inp.tie_key is None else inp.tie_key[keep],
    )
    a = assign(sub, iou, 0.0, max_dets, rule)
    m = np.zeros((k + 1, k + 1), dtype=np.int64)
    tp = a.state == 1
    np.add.at(m, (sub.gt_cls[a.match[tp]], a.cls[tp]), 1)
    taken = np.zeros(len(sub.gt_img), dtype=bool)
    taken[a.match[tp]] = True
    ignored = int((a.state == 2).sum())
    positives = np.flatnonzero(~sub.gt_crowd)
    by_img = {int(i): positives[sub.gt_img[positives] == i] for i in np.unique(sub.gt_img[positives])}
    for r in np.flatnonzero(a.state == 0).tolist():  # push order: image by image, by descending score
        p, c = int(a.det[r]), int(a.cls[r])
        g = by_img.get(int(sub.dt_img[p]), positives[:0])
        g = g[~taken[g] & (sub.gt_cls[g] != c)]
        if len(g):
            ious = iou_matrix(sub.dt_box[p : p + 1], sub.gt_box[g], False, sub)[0]
            j = int(np.argmax(ious))
            if ious[j] >= iou:
                taken[g[j]] = True
                m[sub.gt_cls[g[j]], c] += 1
                continue
        m[k, c] += 1
    missed = positives[~taken[positives]]
    np.add.at(m, (sub.gt_cls[missed], np.full(len(missed), k)), 1)
    return Confusion(
        labels=[*names, "background"], matrix=m, iou=iou, score_threshold=score_threshold, ignored=ignored
    )
