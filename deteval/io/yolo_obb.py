"""YOLO-OBB datasets and predictions (``deteval yolo --task obb``), read as Ultralytics reads them.

A label row is ``cls x1 y1 x2 y2 x3 y3 x4 y4`` (the four corners, normalized by the image's width and height),
a prediction row the same with a confidence (``yolo predict … save_txt save_conf`` of an OBB model). Every
other rule (data.yaml, image lists, label paths, Ultralytics' coordinate checks, duplicate rows) is the YOLO
reader's (:mod:`deteval.io.yolo`), which reads such a row as a 4-point polygon; this module then requires
every row to be one, and gives the corners in pixels.

Ultralytics turns the corners into ``(cx, cy, w, h, r)`` with OpenCV's ``minAreaRect`` on float32 points;
here :func:`~deteval.tables.quads.corners_obb` does it in float64 (the corners' mean, the first two edges'
lengths, the first edge's angle), which is the same box for a rectangle, the shape these files hold (up to
float32 rounding of the corners). A predictions JSON (``yolo val save_json``'s ``rbox``/``poly`` records) is
not read: give the txt files.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from deteval.errors import InputFormatError, ValidationError
from deteval.io.yolo import Duplicates, YoloDataset, label_path, load_yolo_dataset, load_yolo_predictions
from deteval.tables.boxes import BoxTable

__all__ = ["OBB_ROW", "load_yolo_obb", "obb_corners"]

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
    duplicates
        As :func:`deteval.io.yolo.load_yolo_dataset`.

    Returns
    -------
    tuple
        The dataset, the predictions (a pixel :class:`BoxTable`, boxes the corners' extents), and the labels'
        and the predictions' ``(N, 8)`` pixel corners.
    """
    ds = load_yolo_dataset(data_yaml, split, duplicates=duplicates)
    folder = Path(predictions)
    if not folder.is_dir():
        raise InputFormatError(
            f"OBB predictions are a folder of txt files ({OBB_ROW} conf per row; yolo predict save_txt "
            "save_conf)",
            file=folder,
        )
    preds = load_yolo_predictions(folder, ds)
    files = folder / "labels" if not any(folder.glob("*.txt")) else folder
    return ds, preds, obb_corners(ds.labels, ds, "labels"), obb_corners(preds, ds, "predictions", files)
