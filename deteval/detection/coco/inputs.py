"""What the inputs themselves say, checked before or beside the evaluation: several result files given as one
(read as their concatenation), and boxes written ``[x1, y1, x2, y2]`` where COCO wants ``[x, y, width, height]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from os import PathLike
from typing import Any

import numpy as np

from deteval.errors import ConfigError
from deteval.io.coco import (
    CocoGroundTruth,
    CocoResults,
    MaskBoxes,
    concat_results,
    load_coco_results,
    stored_boxes,
)

__all__ = [
    "BORDER_SHARE",
    "BORDER_SLACK",
    "check_kinds",
    "is_path_list",
    "load_results_files",
    "past_border_counts",
    "past_border_message",
]


#: A box "runs past the border" when its far edge is beyond the image by more than this share of its size.
BORDER_SLACK = 0.05
#: ... and the warning is given when at least this share of the boxes (on images of known size) do.
BORDER_SHARE = 0.1


def past_border_counts(gt: CocoGroundTruth, res: CocoResults, rows: slice | None = None) -> tuple[int, int]:
    """(boxes past the border, boxes on images of known size), of the results' ``rows`` (all by default):
    counts of disjoint shards add up."""
    if not len(res) or gt.image_hw.shape[0] == 0:
        return 0, 0
    h, w = gt.image_hw[:, 0], gt.image_hw[:, 1]
    known = (h > 0) & (w > 0)  # per image; the limits per image, read per box (no per-box copies)
    if not known.any():
        return 0, 0
    lim_w = np.where(known, w * (1 + BORDER_SLACK), np.inf)
    lim_h = np.where(known, h * (1 + BORDER_SLACK), np.inf)
    sel = slice(None) if rows is None else rows
    b, img = res.bbox[sel], res.img[sel]
    past = (b[:, 0] + b[:, 2] > lim_w[img]) | (b[:, 1] + b[:, 3] > lim_h[img])
    n = img.shape[0] if known.all() else int(np.count_nonzero(known[img]))
    return int(np.count_nonzero(past)), n


def past_border_message(n_past: int, n: int) -> list[str]:
    """The warning, from :func:`past_border_counts`, that boxes given as ``[x1, y1, x2, y2]`` (where COCO wants
    ``[x, y, w, h]``) run past the right or bottom border in large numbers (none below ``BORDER_SHARE``)."""
    if n_past == 0 or n_past < BORDER_SHARE * n:
        return []
    return [
        f"{n_past} of {n} result boxes run past their image's right or bottom border (x + w > width or "
        f"y + h > height, by more than {BORDER_SLACK:.0%}): are they [x1, y1, x2, y2] instead of COCO's "
        "[x, y, width, height]?"
    ]


def is_path_list(results: Any) -> bool:
    """Several result files: a non-empty list or tuple of paths (a list of dicts is one result list)."""
    return (
        isinstance(results, (list, tuple))
        and len(results) > 0
        and all(isinstance(x, (str, PathLike)) for x in results)
    )


def results_rows(r: CocoResults, rows: np.ndarray) -> CocoResults:
    """The results of ``rows`` (ascending), every column cut alike; input order is kept (masks' boxes not yet
    computed stay so)."""
    boxes = stored_boxes(r)
    return replace(
        r,
        img=r.img[rows],
        cat=r.cat[rows],
        score=r.score[rows],
        bbox=MaskBoxes([boxes.rles[i] for i in rows.tolist()], boxes.file)
        if isinstance(boxes, MaskBoxes)
        else boxes[rows],
        area=r.area[rows],
        keypoints=None if r.keypoints is None else r.keypoints[rows],
        obb=None if r.obb is None else r.obb[rows],
        segmentation=None if r.segmentation is None else [r.segmentation[i] for i in rows.tolist()],
        rles=None if r.rles is None else [r.rles[i] for i in rows.tolist()],
    )


def load_results_files(
    sources: Sequence[Any],
    gt: CocoGroundTruth,
    *,
    iou_type: str = "bbox",
    on_error: str = "raise",
) -> CocoResults:
    """Several result files read as their concatenation, in the given order (the tie order of equal scores).
    Files of different kinds (bbox and segm results) are refused."""
    parts = [load_coco_results(src, gt, iou_type=iou_type, on_error=on_error) for src in sources]
    check_kinds([(p.kind, p.keypoints is not None) for p in parts if len(p)])
    return concat_results(parts)


def check_kinds(kinds: Sequence[tuple[str, bool]]) -> None:
    """Several result files must hold one kind of results: ``kinds`` gives each non-empty file's loadRes
    kind and whether it holds keypoints (an empty file says "bbox", whatever the others hold)."""
    if len(set(kinds)) > 1:
        shown = ", ".join(sorted({kind for kind, _ in kinds}))
        raise ConfigError(f"the result files hold different kinds of results ({shown})")
