"""COCO bbox evaluation of per-image arrays, the shape a training loop produces
(:func:`evaluate_coco_arrays`): boxes, scores and labels turned into the loaders' columnar tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deteval.detection.coco.evaluation import CocoEvaluation, finish_evaluation
from deteval.detection.coco.params import resolve_params
from deteval.detection.coco.parts import match_in_shards
from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError, InputFormatError, ValidationError, first_true
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.tables.arrays import numeric_array, rows_beyond_exact

__all__ = ["arrays_to_tables", "evaluate_coco_arrays"]


def _xywh(boxes: np.ndarray, box_format: str) -> np.ndarray:
    if box_format == "xywh":
        return boxes
    if box_format == "xyxy":
        with np.errstate(over="ignore", invalid="ignore"):  # overflowing boxes are refused as non-finite
            return np.stack(
                [
                    boxes[:, 0],
                    boxes[:, 1],
                    boxes[:, 2] - boxes[:, 0],
                    boxes[:, 3] - boxes[:, 1],
                ],
                axis=1,
            )
    raise ConfigError(f"unknown box_format {box_format!r}: use 'xyxy' or 'xywh'")


def _boxes_within_bound(rows: np.ndarray, given: Any, width: int, file: str, where: str) -> None:
    """Refuse a box with a coordinate beyond ±2**53 as the caller wrote it (``given``: an integer 2**53 + 1 is
    already 2**53 in the float64 ``rows``), as the file loaders do."""
    big = rows_beyond_exact(rows, lambda r: np.asarray(given).reshape(-1, width)[r].tolist())
    if big.size:
        k = int(big[0])
        raise ValidationError(
            f"box {np.asarray(given).reshape(-1, width)[k].tolist()} has a coordinate beyond \u00b12**53",
            file=file,
            record=f"{where}, box {k}",
        )


def _column(
    items: Sequence[Mapping[str, Any]],
    key: str,
    what: str,
    width: int,
    dtype: Any,
    first_image: int,
    default: Any = None,
) -> list[np.ndarray]:
    """Per image, ``items[i][key]`` as a numeric array (rows of ``width`` when given); a missing value or one
    that is not numbers is refused, naming ``<what>`` and the image."""
    out = []
    for i, it in enumerate(items):
        value = it.get(key, default) if isinstance(it, Mapping) else None
        if value is None:
            raise InputFormatError(f"missing {key!r}", file=f"<{what}>", record=f"image {first_image + i}")
        try:
            arr = numeric_array(value, dtype, bools=key == "iscrowd")
            out.append(arr.reshape(-1, width) if width else arr.reshape(-1))
        except (TypeError, ValueError) as exc:
            held = f": it {exc}" if isinstance(exc, TypeError) else ""
            raise InputFormatError(
                f"{key!r} must be numbers" + (f" of shape (n, {width})" if width else "") + held,
                file=f"<{what}>",
                record=f"image {first_image + i}",
            ) from None
        if key == "boxes":
            _boxes_within_bound(out[-1], value, width, f"<{what}>", f"image {first_image + i}")
    return out


def _check_codes(pl: list[np.ndarray], tl: list[np.ndarray], tc: list[np.ndarray], first_image: int) -> None:
    """Labels must be integers (below 2**62), ``iscrowd`` 0 or 1."""
    for what, parts, name in (
        ("preds", pl, "labels"),
        ("targets", tl, "labels"),
        ("targets", tc, "iscrowd"),
    ):
        for i, v in enumerate(parts):
            ok = (v == np.round(v)) & (np.abs(v) < 2.0**62) if name == "labels" else (v == 0) | (v == 1)
            if (k := first_true(~ok)) >= 0:
                raise ValidationError(
                    f"{name} must be " + ("integers" if name == "labels" else "0 or 1") + f", got {v[k]!r}",
                    file=f"<{what}>",
                    record=f"image {first_image + i}, {name[:-1] if name == 'labels' else name} {k}",
                )


def _check_finite(checks: Sequence[tuple[str, str, np.ndarray, np.ndarray]], first_image: int) -> None:
    """Boxes, scores and areas must be finite, not negative (box sizes, areas) and boxes within ±2**53
    (``checks``: side, name, values and the image of each row)."""
    for what, name, arr, owner in checks:
        bad = ~np.isfinite(arr).all(axis=1) if arr.ndim == 2 else ~np.isfinite(arr)
        if name == "box":
            # beyond 2**53 areas overflow and IoUs become NaN (the same limit as the file loaders)
            bad |= (arr[:, 2] < 0) | (arr[:, 3] < 0) | (np.abs(arr) > 2.0**53).any(axis=1)
        elif name == "area":
            bad |= arr < 0
        if (j := first_true(bad)) >= 0:
            k = j - int(np.searchsorted(owner, owner[j]))
            raise ValidationError(
                f"{name} {arr[j].tolist()} is not finite, negative or beyond \u00b12**53",
                file=f"<{what}>",
                record=f"image {first_image + int(owner[j])}, {name} {k}",
            )


def _check_lengths(
    preds: Sequence[list[np.ndarray]],
    targets: Sequence[list[np.ndarray]],
    first_image: int,
) -> None:
    """Per image, the prediction columns (boxes, scores, labels) and the target columns (boxes, labels,
    iscrowd, area) have one length each."""
    pb, ps, pl = preds
    tb, tl, tc, ta = targets
    for i in range(len(pb)):
        img = f"image {first_image + i}"
        if not (pb[i].shape[0] == ps[i].shape[0] == pl[i].shape[0]):
            raise InputFormatError("boxes, scores and labels differ in length", file="<preds>", record=img)
        if not (tb[i].shape[0] == tl[i].shape[0] == tc[i].shape[0] == ta[i].shape[0]):
            raise InputFormatError(
                "boxes, labels, iscrowd and area differ in length",
                file="<targets>",
                record=img,
            )


def arrays_to_tables(
    preds: Sequence[Mapping[str, Any]],
    targets: Sequence[Mapping[str, Any]],
    box_format: str,
    class_names: Mapping[int, str] | None,
    first_image: int = 0,
) -> tuple[CocoGroundTruth, CocoResults]:
    """Per-image prediction/target arrays → columnar tables (categories = labels seen, image i → id i)."""
    if len(preds) != len(targets):
        raise InputFormatError(f"{len(preds)} prediction entries for {len(targets)} target entries")

    pb = _column(preds, "boxes", "preds", 4, np.float64, first_image)
    ps = _column(preds, "scores", "preds", 0, np.float64, first_image)
    pl = _column(preds, "labels", "preds", 0, np.float64, first_image)
    tb = _column(targets, "boxes", "targets", 4, np.float64, first_image)
    tl = _column(targets, "labels", "targets", 0, np.float64, first_image)
    no_value: list[dict[str, Any]] = [{} for _ in targets]
    tc = _column([t if t.get("iscrowd") is not None else n for t, n in zip(targets, no_value)], "iscrowd",
                 "targets", 0, np.float64, first_image, default=())  # fmt: skip
    ta = _column([t if t.get("area") is not None else n for t, n in zip(targets, no_value)], "area",
                 "targets", 0, np.float64, first_image, default=())  # fmt: skip
    for i in range(len(targets)):
        if targets[i].get("iscrowd") is None:
            tc[i] = np.zeros(tl[i].shape[0])
        if targets[i].get("area") is None:
            with np.errstate(over="ignore", invalid="ignore"):  # bad boxes are refused below
                xywh = _xywh(tb[i], box_format)
                ta[i] = xywh[:, 2] * xywh[:, 3]
    _check_codes(pl, tl, tc, first_image)
    pl = [v.astype(np.int64) for v in pl]
    tl = [v.astype(np.int64) for v in tl]
    _check_lengths((pb, ps, pl), (tb, tl, tc, ta), first_image)
    n_img = len(preds)
    d_img = np.repeat(np.arange(n_img), [b.shape[0] for b in pb])
    g_img = np.repeat(np.arange(n_img), [b.shape[0] for b in tb])

    def cat(parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
        return np.concatenate(parts) if parts else empty

    dbox = _xywh(cat(pb, np.zeros((0, 4))), box_format)
    gbox = _xywh(cat(tb, np.zeros((0, 4))), box_format)
    score, area = cat(ps, np.zeros(0)), cat(ta, np.zeros(0))
    dlab, glab = cat(pl, np.zeros(0, np.int64)), cat(tl, np.zeros(0, np.int64))
    crowd = cat(tc, np.zeros(0)) != 0
    _check_finite(
        (("preds", "box", dbox, d_img), ("targets", "box", gbox, g_img), ("preds", "score", score, d_img),
         ("targets", "area", area, g_img)),
        first_image,
    )  # fmt: skip
    cat_ids = np.unique(np.concatenate([glab, dlab]))
    names = [str(class_names.get(int(c), c)) if class_names else str(c) for c in cat_ids.tolist()]
    g = CocoGroundTruth(
        image_ids=np.arange(first_image, first_image + n_img),
        image_hw=np.full((n_img, 2), -1),
        cat_ids=cat_ids,
        cat_names=names,
        ann_id=np.arange(1, gbox.shape[0] + 1),
        img=g_img,
        cat=np.searchsorted(cat_ids, glab),
        bbox=gbox,
        area=area,
        iscrowd=crowd,
        ignore=np.zeros(gbox.shape[0], bool),
        num_keypoints=np.full(gbox.shape[0], -1),
        source="<targets>",
    )
    r = CocoResults(
        img=d_img,
        cat=np.searchsorted(cat_ids, dlab),
        score=score,
        bbox=dbox,
        area=dbox[:, 2] * dbox[:, 3],
        source="<preds>",
    )
    return g, r


def evaluate_coco_arrays(
    preds: Sequence[Mapping[str, Any]],
    targets: Sequence[Mapping[str, Any]],
    *,
    box_format: str = "xyxy",
    params: CocoParams | Any | None = None,
    compat: str = "pycocotools",
    class_names: Mapping[int, str] | None = None,
) -> CocoEvaluation:
    """COCO bbox evaluation from per-image arrays (the shape a training loop produces).

    ``preds[i]``: ``{"boxes": (n, 4), "scores": (n,), "labels": (n,)}``; ``targets[i]``: ``{"boxes": (g, 4),
    "labels": (g,), "iscrowd": (g,) optional, "area": (g,) optional (default: box area w·h)}``. Image i has
    id i; categories are the labels seen in targets or predictions. ``xyxy`` boxes are converted to COCO
    ``[x, y, w, h]`` as ``w = x2 − x1`` (so a result is identical to pycocotools fed the converted boxes).
    """
    g, r = arrays_to_tables(preds, targets, box_format, class_names)
    p = resolve_params(params, "bbox")
    table, counts, warnings = match_in_shards(g, r, p, compat)
    return finish_evaluation(table, p, compat, g, counts, warnings)
