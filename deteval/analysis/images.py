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

import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deteval.analysis.tide import Assignment, TideInput, assign
from deteval.core.levels import COCO_RECALL_LEVELS
from deteval.core.lists import presorted_lists
from deteval.errors import ValidationError
from deteval.io.guards import canvas_size, open_image, write_file

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
            v = class_ap(c, drop, int(less[c]))  # NaN: no positive left (or none to begin with)
            if np.isnan(v):
                new.pop(c, None)
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


#: The colour key of a drawn image: (colour, outline width, meaning).
DRAWING_KEY = (
    ((0, 170, 0), 2, "ground truth found"),
    ((255, 140, 0), 4, "ground truth missed"),
    ((120, 120, 120), 2, "ignored (crowd / difficult)"),
    ((30, 90, 255), 2, "true positive"),
    ((230, 0, 0), 2, "false positive"),
)


def place_labels(
    sizes: Sequence[tuple[int, int]], anchors: Sequence[tuple[float, float]], bounds: tuple[int, int]
) -> list[tuple[int, int, int, int]]:
    """Rectangles ``(x0, y0, x1, y1)`` for labels of ``sizes`` (width, height), each as near its anchor (its
    box's corner) as it can be without covering a label placed before it: the candidates are the anchor
    moved by whole label heights up or down and whole label widths left or right, inside ``bounds``
    (width, height), nearest first; where every candidate collides, the label stays at its anchor."""
    placed = np.zeros((0, 4), dtype=np.int64)
    width, height = bounds
    out: list[tuple[int, int, int, int]] = []
    for (w, h), (ax, ay) in zip(sizes, anchors):
        x_at = int(min(max(ax, 0), max(width - w, 0)))
        y_at = int(min(max(ay, 0), max(height - h, 0)))
        ys = y_at + (h + 1) * np.arange(-(height // (h + 1)) - 1, height // (h + 1) + 2)
        xs = x_at + (w + 1) * np.arange(-4, 5)
        ys, xs = ys[(ys >= 0) & (ys + h <= height)], xs[(xs >= 0) & (xs + w <= width)]
        cand = np.array([(x, y) for x in xs.tolist() for y in ys.tolist()], dtype=np.int64).reshape(-1, 2)
        cand = cand[np.argsort(np.abs(cand[:, 1] - y_at) + 2 * np.abs(cand[:, 0] - x_at), kind="stable")]
        free: np.ndarray = np.ones(cand.shape[0], dtype=bool)
        if placed.size and cand.size:
            x0, y0 = cand[:, :1], cand[:, 1:]
            hit = (
                (x0 < placed[:, 2]) & (placed[:, 0] < x0 + w) & (y0 < placed[:, 3]) & (placed[:, 1] < y0 + h)
            )
            free = np.logical_not(hit.any(axis=1))
        x, y = (int(v) for v in cand[np.argmax(free)]) if free.any() else (x_at, y_at)
        rect = (x, y, x + w, y + h)
        out.append(rect)
        placed = np.vstack([placed, np.array([rect], dtype=np.int64)])
    return out


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
    """Draw image ``index``: ground truth green (missed ones thick orange, ignored grey), true positives
    blue, false positives red, each labelled (detections ``class score``) where no other label is
    (:func:`place_labels`). On ``picture`` when it exists, else on a grey canvas of ``size`` (width, height)
    or of the boxes' extent; a title band above (image, false positives, missed objects, AP loss) and the
    colour key below. Writes a PNG and returns its path."""
    from PIL import Image, ImageDraw

    conv = to_xyxy or (lambda b: np.c_[b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]])
    if inp.quads:  # (oriented boxes: their four corners, drawn as polygons)
        conv = to_xyxy or (lambda b: b[:, :8])
    cols = 8 if inp.quads else 4
    gsel = np.flatnonzero(inp.gt_img == index)
    a = diag.assignment
    rows = np.flatnonzero((inp.dt_img[a.det] == index) & (a.state != 2))
    g = conv(inp.gt_box[gsel]) if gsel.size else np.zeros((0, cols))
    d = conv(inp.dt_box[a.det[rows]]) if rows.size else np.zeros((0, cols))
    if picture is not None and os.path.lexists(picture):
        im = open_image(picture)  # (bounded, a non-image refused naming it)
    else:
        ext = _extents(np.concatenate([g, d]))
        w, h = (
            size
            if size and size[0] > 0 and size[1] > 0
            else (ext[:, 2].max(initial=1) + 10, ext[:, 3].max(initial=1) + 10)
        )
        im = Image.new("RGB", canvas_size(w, h), (200, 200, 200))
        scale = im.size[0] / max(float(w), 16.0)
        if scale < 1:  # a canvas scaled down from a huge declared size: the boxes with it
            g, d = g * scale, d * scale
    lim = 4.0 * max(im.size)  # (pillow cannot draw beyond a C int; nothing past the picture shows anyway)
    g, d = np.clip(g, -lim, lim), np.clip(d, -lim, lim)
    dr = ImageDraw.Draw(im)
    found, missed, ignored, tp, fp = (k[0] for k in DRAWING_KEY)
    matched = set(a.match[a.match >= 0].tolist())
    labels: list[tuple[str, tuple[int, int, int], tuple[float, float]]] = []

    def outline(shape: list[float], color: tuple[int, int, int], width: int) -> list[float]:
        """Draw one box or quadrilateral; its extent ``x1 y1 x2 y2`` (where its label goes)."""
        if len(shape) == 4:
            dr.rectangle(shape, outline=color, width=width)
            return shape
        dr.polygon(shape, outline=color, width=width)
        return _extents(np.asarray([shape]))[0].tolist()

    for j, box in zip(gsel.tolist(), g.tolist()):
        crowd = bool(inp.gt_crowd[j])
        color = ignored if crowd else (found if j in matched else missed)
        e = outline(box, color, 2 if j in matched or crowd else 4)
        labels.append((names[int(inp.gt_cls[j])], color, (e[0] + 2, e[3] - 13)))
    for r, box in zip(rows.tolist(), d.tolist()):
        color = tp if a.state[r] == 1 else fp
        e = outline(box, color, 2)
        labels.append((f"{names[int(a.cls[r])]} {a.score[r]:.2f}", color, (e[0] + 2, e[1] + 2)))
    sizes = []
    for text, _, _ in labels:
        x0, y0, x1, y1 = dr.textbbox((0, 0), text)
        sizes.append((int(x1 - x0) + 4, int(y1 - y0) + 4))
    for (text, color, _), rect in zip(labels, place_labels(sizes, [p for _, _, p in labels], im.size)):
        dr.rectangle(rect, fill=(255, 255, 255), outline=color)  # a label stays readable over lines
        dr.text((rect[0] + 2, rect[1] + 1), text, fill=color)
    im = _framed(im, _drawing_title(diag, index))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return write_file(out, buf.getvalue(), "picture")


def _extents(shapes: np.ndarray) -> np.ndarray:
    """``x1 y1 x2 y2`` of boxes (``(N, 4)``, returned as they are) or of quadrilaterals (``(N, 8)`` corners)."""
    if shapes.shape[1] == 4:
        return shapes
    x, y = shapes[:, 0::2], shapes[:, 1::2]
    return np.stack([x.min(1), y.min(1), x.max(1), y.max(1)], axis=1)


def _drawing_title(diag: ImageDiagnostics, index: int) -> str:
    row = next((r for r in diag.rows if int(r["index"]) == index), None)
    if row is None:
        return f"image {index}"
    return (
        f"image {row['image']}: {row['fp']} false positive(s), {row['missed']} missed object(s), AP loss "
        f"{row['ap_loss']:.4f} ({100 * row['share']:.1f}% of the loss), IoU {diag.iou:g}"
    )


def _framed(im: Any, title: str) -> Any:
    """``im`` with a white title band above and the colour key (:data:`DRAWING_KEY`) below."""
    from PIL import Image, ImageDraw

    band = 22
    width = max(im.size[0], 560)
    out = Image.new("RGB", (width, im.size[1] + 2 * band), (255, 255, 255))
    out.paste(im, (0, band))
    dr = ImageDraw.Draw(out)
    dr.text((4, 5), title, fill=(0, 0, 0))
    x, y = 4, im.size[1] + band + 5
    for color, line, text in DRAWING_KEY:
        dr.rectangle((x, y, x + 14, y + 10), outline=color, width=min(line, 3))
        dr.text((x + 18, y), text, fill=(0, 0, 0))
        x += 24 + int(dr.textlength(text))
    return out


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
