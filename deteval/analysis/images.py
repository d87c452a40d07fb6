"""Per-image diagnostics: which images cost the most AP, and pictures of them.

On the protocol's matching at one IoU (:func:`deteval.analysis.tide.assign`), for every image: its
ground-truth positives, true positives, false positives (kept, not ignored, unmatched detections) and missed
objects (unmatched positives). Its **AP loss** is the mAP gained when the image is made perfect — its false
positives removed from the rankings and its missed objects removed from the positives — with everything
else unchanged; ``share`` = loss / the sum of all images' losses. AP is the protocol's (COCO: the mean of
pycocotools' interpolated precision at its recall levels per class; VOC: the devkit's AP), averaged over the
classes with positives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.tide import Assignment, TideInput, assign
from deteval.core.levels import COCO_RECALL_LEVELS
from deteval.core.lists import presorted_lists
from deteval.errors import ValidationError

__all__ = ["ImageDiagnostics", "draw_image", "draw_worst", "image_diagnostics"]


def _ap(tp: np.ndarray, n_gt: int, protocol: str, rec_thrs: np.ndarray) -> float:
    """AP of one ranked list of true-positive flags by the protocol's method (the core's ranked lists)."""
    lists = presorted_lists([tp.shape[0]], tp, [n_gt])
    if protocol == "coco":
        return float(lists.average_precision("coco101", levels=rec_thrs)[0])
    return float(lists.average_precision("voc07" if protocol == "voc07" else "all_points")[0])


@dataclass
class ImageDiagnostics:
    """One row per image (index into the evaluation's images), worst first."""

    rows: list[dict[str, Any]]
    assignment: Assignment
    iou: float

    def to_dict(self, top: int = 20) -> dict[str, Any]:
        """The ``top`` worst images."""
        return {"iou": self.iou, "worst": self.rows[:top]}


def image_diagnostics(
    inp: TideInput,
    image_names: Sequence[str],
    *,
    iou: float,
    rule: str,
    protocol: str,
    max_dets: int,
    rec_thrs: np.ndarray | None = None,
) -> ImageDiagnostics:
    """Counts and AP loss per image, worst (largest loss, then most errors) first (module docstring)."""
    if protocol not in ("coco", "voc2010", "voc07"):
        raise ValidationError(f"unknown protocol {protocol!r}")
    levels = COCO_RECALL_LEVELS if rec_thrs is None else np.asarray(rec_thrs, dtype=np.float64)
    a = assign(inp, iou, 0.0, max_dets, rule)
    keep = a.state != 2
    cls, tp, img = a.cls[keep], a.state[keep] == 1, inp.dt_img[a.det[keep]]
    o = np.lexsort((a.tie[keep], -a.score[keep]))
    cls, tp, img = cls[o], tp[o], img[o]
    pos = ~inp.gt_crowd
    n_cls = int(max(cls.max(initial=-1), inp.gt_cls.max(initial=-1))) + 1
    n_gt = np.bincount(inp.gt_cls[pos], minlength=n_cls)
    matched = np.zeros(len(inp.gt_img), dtype=bool)
    matched[a.match[a.match >= 0]] = True
    missed = pos & ~matched

    def class_ap(c: int, drop: np.ndarray | None = None, less: int = 0) -> float:
        m = cls == c
        if drop is not None:
            m &= ~drop
        n = int(n_gt[c]) - less
        return _ap(tp[m], n, protocol, levels) if n > 0 else float("nan")

    base = {c: class_ap(c) for c in range(n_cls) if n_gt[c] > 0}
    mean_base = float(np.mean(list(base.values()))) if base else 0.0
    n_img = len(image_names)
    fp_count = np.bincount(img[~tp], minlength=n_img)
    tp_count = np.bincount(img[tp], minlength=n_img)
    miss_count = np.bincount(inp.gt_img[missed], minlength=n_img)
    gt_count = np.bincount(inp.gt_img[pos], minlength=n_img)
    loss = np.zeros(n_img)
    for i in np.flatnonzero((fp_count > 0) | (miss_count > 0)).tolist():
        drop = (img == i) & ~tp
        less = np.bincount(inp.gt_cls[missed & (inp.gt_img == i)], minlength=n_cls)
        touched = set(cls[drop].tolist()) | set(np.flatnonzero(less).tolist())
        new = dict(base)
        for c in touched:
            if n_gt[c] == 0:
                continue
            v = class_ap(c, drop, int(less[c]))
            if np.isnan(v):
                del new[c]
            else:
                new[c] = v
        loss[i] = (float(np.mean(list(new.values()))) if new else 0.0) - mean_base
    total = float(loss[loss > 0].sum())
    order = sorted(range(n_img), key=lambda i: (-loss[i], -(fp_count[i] + miss_count[i]), i))
    rows = [
        {
            "image": str(image_names[i]),
            "index": i,
            "gt": int(gt_count[i]),
            "tp": int(tp_count[i]),
            "fp": int(fp_count[i]),
            "missed": int(miss_count[i]),
            "ap_loss": float(loss[i]),
            "share": float(loss[i] / total) if total > 0 and loss[i] > 0 else 0.0,
        }
        for i in order
        if fp_count[i] + miss_count[i] > 0
    ]
    return ImageDiagnostics(rows=rows, assignment=a, iou=iou)


def draw_image(
    diag: ImageDiagnostics,
    inp: TideInput,
    index: int,
    names: Sequence[str],
    out: str | Path,
    *,
    size: tuple[int, int] | None = None,
    picture: str | Path | None = None,
    to_xyxy: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Path:
    """Draw image ``index``: ground truth green (missed ones dashed-thick orange), true positives blue, false
    positives red, each detection labelled ``class score``. On ``picture`` when it exists, else on a grey
    canvas of ``size`` (width, height) or of the boxes' extent. Writes a PNG and returns its path."""
    from PIL import Image, ImageDraw

    conv = to_xyxy or (lambda b: np.c_[b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]])
    gsel = np.flatnonzero(inp.gt_img == index)
    a = diag.assignment
    rows = np.flatnonzero((inp.dt_img[a.det] == index) & (a.state != 2))
    g = conv(inp.gt_box[gsel]) if gsel.size else np.zeros((0, 4))
    d = conv(inp.dt_box[a.det[rows]]) if rows.size else np.zeros((0, 4))
    if picture is not None and Path(picture).is_file():
        im = Image.open(picture).convert("RGB")
    else:
        ext = np.concatenate([g, d])
        w, h = (
            size
            if size and size[0] > 0 and size[1] > 0
            else (
                int(ext[:, 2].max(initial=1) + 10),
                int(ext[:, 3].max(initial=1) + 10),
            )
        )
        im = Image.new("RGB", (max(w, 16), max(h, 16)), (200, 200, 200))
    dr = ImageDraw.Draw(im)
    matched = set(a.match[a.match >= 0].tolist())
    for j, box in zip(gsel.tolist(), g.tolist()):
        crowd = bool(inp.gt_crowd[j])
        color = (120, 120, 120) if crowd else ((0, 170, 0) if j in matched else (255, 140, 0))
        dr.rectangle(box, outline=color, width=2 if j in matched or crowd else 4)
        dr.text((box[0] + 2, box[3] - 12), names[int(inp.gt_cls[j])], fill=color)
    for r, box in zip(rows.tolist(), d.tolist()):
        color = (30, 90, 255) if a.state[r] == 1 else (230, 0, 0)
        dr.rectangle(box, outline=color, width=2)
        dr.text((box[0] + 2, box[1] + 1), f"{names[int(a.cls[r])]} {a.score[r]:.2f}", fill=color)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path)
    return path


def draw_worst(
    diag: ImageDiagnostics,
    inp: TideInput,
    names: Sequence[str],
    out_dir: str | Path,
    top: int,
    *,
    sizes: np.ndarray | None = None,
    pictures: Sequence[str | None] | None = None,
    to_xyxy: Callable[[np.ndarray], np.ndarray] | None = None,
) -> list[Path]:
    """Draw the ``top`` worst images into ``out_dir`` as ``01_<image>.png``, ... (see :func:`draw_image`);
    ``sizes``: (width, height) per image; ``pictures``: a path per image (or None)."""
    paths = []
    for k, row in enumerate(diag.rows[:top]):
        i = int(row["index"])
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in row["image"])
        size = (int(sizes[i][0]), int(sizes[i][1])) if sizes is not None else None
        pic = pictures[i] if pictures is not None else None
        out = Path(out_dir) / f"{k + 1:02d}_{safe}.png"
        paths.append(draw_image(diag, inp, i, names, out, size=size, picture=pic, to_xyxy=to_xyxy))
        row["picture"] = str(out)
    return paths
