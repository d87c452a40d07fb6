"""YOLO-OBB datasets and predictions (``deteval yolo --task obb``), read as Ultralytics reads them.

A label row is ``cls x1 y1 x2 y2 x3 y3 x4 y4`` (the four corners, normalized by the image's width and height),
a prediction row the same with a confidence (``yolo predict … save_txt save_conf`` of an OBB model). Every
other rule (data.yaml, image lists, label paths, Ultralytics' coordinate checks, duplicate rows) is the YOLO
reader's (:mod:`deteval.io.yolo`), which reads such a row as a 4-point polygon; this module then requires
every row to be one, and gives the corners in pixels.

Ultralytics turns the corners into ``(cx, cy, w, h, r)`` with OpenCV's ``minAreaRect`` on float32 points;
here :func:`~deteval.tables.quads.corners_obb` does it in float64 (the corners' mean, the first two edges'
lengths, the first edge's angle), which is the same box for a rectangle, the shape these files hold (up to
float32 rounding of the corners).

Predictions may also be ``yolo val save_json``'s ``predictions.json`` of an OBB model: a list of records
``{"image_id", "file_name", "category_id", "score", "rbox": [cx, cy, w, h, angle], "poly": [x1, y1, …, y4]}``
in pixels of the original image (:func:`json_obb_predictions`). The image and the class are found as for a
detect model's file (:class:`deteval.io.yolo.JsonTargets`, read through the shared JSON guards); the box is
``rbox`` (the box ``yolo val`` scores; its corners as :func:`~deteval.tables.quads.obb_quads` computes them)
or, in a record without one, ``poly``'s four corners.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from deteval.errors import InputFormatError, ValidationError
from deteval.io.yolo import JsonTargets, YoloDataset, label_path, load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_labels import Duplicates
from deteval.tables.arrays import beyond_exact
from deteval.tables.boxes import BoxTable
from deteval.tables.quads import obb_quads

__all__ = ["OBB_ROW", "json_obb_predictions", "load_obb_predictions", "load_yolo_obb", "obb_corners"]

#: What an OBB row holds (in errors).
OBB_ROW = "cls x1 y1 x2 y2 x3 y3 x4 y4 (four corners, normalized)"


def obb_corners(table: BoxTable, ds: YoloDataset, what: str, folder: Path | None = None) -> np.ndarray:
    """The ``(N, 8)`` pixel corners of ``table``, whose every row must be a 4-point polygon; a row that is a
    box or another polygon is an error naming its file (``folder``: the predictions', else the labels')."""
    polys = table.polygons
    bad = next(
        (k for k in range(len(table)) if polys is None or polys[k] is None or len(polys[k]) != 8),  # type: ignore[arg-type]
        None,
    )
    if bad is not None:
        image = ds.images[int(table.img[bad])]
        file = folder / f"{image.stem}.txt" if folder is not None else label_path(image)
        p = None if polys is None else polys[bad]
        got = "a box row (cls xc yc w h)" if p is None else f"a polygon of {len(p) // 2} points"
        raise ValidationError(f"{what}: an OBB row is {OBB_ROW}; this file has {got}", file=file)
    if not len(table):
        return np.zeros((0, 8))
    return np.stack(polys)  # type: ignore[arg-type]


def load_yolo_obb(
    data_yaml: str | os.PathLike[str],
    predictions: str | os.PathLike[str],
    split: str = "val",
    *,
    duplicates: Duplicates = "error",
    check_images: str | None = None,
) -> tuple[YoloDataset, BoxTable, np.ndarray, np.ndarray]:
    """A YOLO-OBB split and its predictions.

    Parameters
    ----------
    data_yaml
        The dataset's data.yaml.
    predictions
        A folder of ``<image stem>.txt`` prediction files (or ``runs/obb/predict/`` with its ``labels/``).
    split
        The split to read.
    duplicates, check_images
        As :func:`deteval.io.yolo.load_yolo_dataset` (an Ultralytics era's image check: a corrupt image left
        out with its labels and predictions, as Ultralytics' dataset check does in every task).

    Returns
    -------
    tuple
        The dataset, the predictions (a pixel :class:`BoxTable`, boxes the corners' extents), and the labels'
        and the predictions' ``(N, 8)`` pixel corners.
    """
    ds = load_yolo_dataset(data_yaml, split, duplicates=duplicates, check_images=check_images)
    preds, corners = load_obb_predictions(predictions, ds)
    return ds, preds, obb_corners(ds.labels, ds, "labels"), corners


def load_obb_predictions(source: str | os.PathLike[str], ds: YoloDataset) -> tuple[BoxTable, np.ndarray]:
    """An OBB model's predictions of the split ``ds`` and their ``(N, 8)`` pixel corners: a folder of txt
    files (``yolo predict … save_txt save_conf``) or ``yolo val save_json``'s predictions.json
    (:func:`json_obb_predictions`)."""
    p = Path(source)
    if not p.is_dir():
        if p.suffix.lower() == ".json" and os.path.lexists(p):
            preds = json_obb_predictions(p, ds)
            return preds, obb_corners(preds, ds, "predictions")
        raise InputFormatError(
            f"OBB predictions are a folder of txt files ({OBB_ROW} conf per row; yolo predict save_txt "
            "save_conf) or yolo val's predictions.json (rbox / poly records)",
            file=p,
        )
    preds = load_yolo_predictions(p, ds)
    files = p / "labels" if not any(p.glob("*.txt")) else p
    return preds, obb_corners(preds, ds, "predictions", files)


def _numbers(r: dict, key: str, n: int, k: int, path: Path) -> np.ndarray:
    v = r[key]
    ok = isinstance(v, list) and len(v) == n
    ok = ok and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
    if not ok:
        raise ValidationError(f"{key} must be a list of {n} numbers", file=path, record=k)
    a = np.asarray(v, dtype=np.float64)
    if not np.isfinite(a).all() or any(beyond_exact(x) for x in v):
        raise ValidationError(
            f"{key} {v!r} has a non-finite value or one beyond \u00b12**53", file=path, record=k
        )
    return a


def json_obb_predictions(path: str | os.PathLike[str], ds: YoloDataset) -> BoxTable:
    """``yolo val save_json``'s predictions.json of an OBB model as a pixel :class:`BoxTable` whose every row
    has its four corners as its polygon (the box: the corners' extent).

    Parameters
    ----------
    path
        The JSON list (read through :func:`deteval.io.guards.read_json`: size, depth, duplicate keys).
    ds
        The split: ``image_id`` / ``file_name`` name its images, ``category_id`` is class + 1 (COCO-91 for a
        COCO dataset), as :class:`deteval.io.yolo.JsonTargets` reads them.

    Returns
    -------
    BoxTable
        One row per record, in file order; each corner set from ``rbox`` (``[cx, cy, w, h, angle]``, radians,
        ``w``, ``h`` ≥ 0) through :func:`~deteval.tables.quads.obb_quads`, or from ``poly`` in a record without
        ``rbox``.
    """
    file = Path(path)
    targets = JsonTargets(ds, file)
    records = targets.records()
    n = len(records)
    img, cls, conf = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n)
    corners = np.zeros((n, 8))
    keep = np.ones(n, dtype=bool)
    for k, r in enumerate(records):
        img[k], cls[k] = targets.locate(r, k, ("image_id", "category_id", "score"))
        if img[k] < 0:  # (a record of an image left out as corrupt)
            keep[k] = False
            continue
        if "rbox" in r:
            box = _numbers(r, "rbox", 5, k, file)
            if box[2] < 0 or box[3] < 0:
                raise ValidationError("rbox has a negative width or height", file=file, record=k)
            corners[k] = obb_quads(box[None])[0, :8]
        elif "poly" in r:
            corners[k] = _numbers(r, "poly", 8, k, file)
        else:
            raise InputFormatError(
                "missing 'rbox' ([cx, cy, w, h, angle]) or 'poly' (four corners): an OBB model's record",
                file=file,
                record=k,
            )
        conf[k] = targets.score(r, k)
    if not keep.all():
        img, cls, conf, corners, n = img[keep], cls[keep], conf[keep], corners[keep], int(keep.sum())
    x, y = corners[:, 0::2], corners[:, 1::2]
    xyxy = np.stack([x.min(1), y.min(1), x.max(1), y.max(1)], axis=1) if n else np.zeros((0, 4))
    return BoxTable(img, cls, xyxy, conf, list(corners))
