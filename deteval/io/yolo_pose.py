"""YOLO pose datasets and predictions, read as Ultralytics reads them (``YOLODataset`` with ``task="pose"``).

* ``data.yaml``: ``kpt_shape: [K, D]`` (K ≥ 1 keypoints, D = 2 for ``x y``, 3 for ``x y v``), ``flip_idx``
  (optional: a permutation of the K keypoints, used by Ultralytics' flip augmentation only, checked here),
  ``kpt_oks_sigmas`` (optional: K positive numbers, which recent 8.4 versions' pose validator uses). The
  rest is a detect dataset's (:mod:`deteval.io.yolo`).
* Label rows: ``cls xc yc w h`` then K keypoints of D numbers, normalized: ``5 + K·D`` columns. Ultralytics'
  checks: the class a non-negative integer below ``nc``; every keypoint coordinate ≤ 1.01; the smallest value
  of the row ≥ 0, or ≥ −0.01 with w, h ≥ 0. With D = 2 a keypoint is visible (v = 1) unless a coordinate is
  negative (v = 0), as Ultralytics' ``verify_image_label`` sets it. Exact duplicate rows (the whole row in
  float32): an error, or with ``duplicates="drop"`` (the Ultralytics profiles) dropped with a warning, the
  file's rows then in ``np.unique``'s order, as Ultralytics keeps them.
* Predictions: a folder of ``<image stem>.txt`` written by ``yolo predict … save_txt save_conf`` (``cls xc yc w
  h`` then K keypoints of ``x y`` or ``x y conf``, then the box confidence: ``6 + 2K`` or ``6 + 3K``
  columns, normalized), or a JSON list (``yolo val save_json``'s ``predictions.json``: the box fields of
  :func:`deteval.io.yolo.load_yolo_predictions` and ``keypoints`` = 3K pixel numbers ``x, y, score``, or 2K
  ``x, y`` from a ``[K, 2]`` model).

Keypoints come back as N × K × 3 float64 pixel arrays (``x y v`` for labels, ``x y score`` for predictions),
aligned with the rows of the labels' and predictions' box tables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import ValidationError
from deteval.io.guards import read_json
from deteval.io.text_rows import read_rows
from deteval.io.yolo import (
    JsonTargets,
    YoloDataset,
    load_yolo_dataset,
    load_yolo_predictions,
    prediction_entries,
    prediction_images,
    split_warning,
    to_pixels,
)
from deteval.io.yolo_labels import Duplicates, parse_label_files
from deteval.io.yolo_yaml import read_data_yaml
from deteval.tables.boxes import BoxTable

__all__ = ["PoseDataset", "load_pose_dataset", "load_pose_predictions", "pose_shape"]

#: The most keypoints a skeleton may have (a row of 5 + 3K numbers).
MAX_KEYPOINTS = 1000


@dataclass
class PoseDataset:
    """A YOLO split (:class:`~deteval.io.yolo.YoloDataset`, its labels' boxes) with the labels' keypoints
    (N × K × 3 pixels, ``x y v``), ``kpt_shape``, ``flip_idx`` and the data.yaml's ``kpt_oks_sigmas``."""

    ds: YoloDataset
    kpt_shape: tuple[int, int]
    flip_idx: list[int] | None
    sigmas: list[float] | None
    keypoints_norm: np.ndarray

    @property
    def keypoints(self) -> np.ndarray:
        """The labels' keypoints in pixels (x · width, y · height of each label's image)."""
        return _to_pixels(self.keypoints_norm, self.ds, self.ds.labels.img)


def pose_shape(
    data: dict[str, Any], file: str
) -> tuple[tuple[int, int], list[int] | None, list[float] | None]:
    """``kpt_shape``, ``flip_idx`` and ``kpt_oks_sigmas`` of a data.yaml mapping, checked."""
    shape = data.get("kpt_shape")
    if (
        not isinstance(shape, list)
        or len(shape) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in shape)
        or not 1 <= shape[0] <= MAX_KEYPOINTS
        or shape[1] not in (2, 3)
    ):
        raise ValidationError(
            f"kpt_shape must be [K, 2] or [K, 3] with 1 <= K <= {MAX_KEYPOINTS}, got {shape!r}"[:200],
            file=file,
        )
    k = shape[0]
    flip = data.get("flip_idx")
    if flip is not None and (
        not isinstance(flip, list)
        or sorted(v for v in flip if isinstance(v, int) and not isinstance(v, bool)) != list(range(k))
    ):
        raise ValidationError(f"flip_idx must be a permutation of 0..{k - 1}, got {flip!r}"[:200], file=file)
    sig = data.get("kpt_oks_sigmas")
    if sig is not None:
        ok = isinstance(sig, list) and len(sig) == k
        ok = ok and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf") for v in sig
        )
        if not ok:
            raise ValidationError(
                f"kpt_oks_sigmas must be {k} positive numbers, got {sig!r}"[:200], file=file
            )
    return (k, shape[1]), flip, None if sig is None else [float(v) for v in sig]


def load_pose_dataset(
    data_yaml: str | os.PathLike[str],
    split: str = "val",
    *,
    duplicates: Duplicates = "error",
    check_images: str | None = None,
) -> PoseDataset:
    """Read one split of a YOLO pose dataset (see the module docstring for the rules). ``check_images``: an
    Ultralytics era whose image check every image passes first, as in
    :func:`deteval.io.yolo.load_yolo_dataset` (a corrupt image left out with its labels and predictions)."""
    file = str(data_yaml)
    data = read_data_yaml(data_yaml)
    if data.get("kpt_shape") is None:
        raise ValidationError("not a pose dataset: the data.yaml has no kpt_shape", file=file)
    shape, flip, sigmas = pose_shape(data, file)
    ds = load_yolo_dataset(
        data_yaml, split, duplicates=duplicates, kpt_shape=shape, check_images=check_images
    )
    assert ds.label_keypoints is not None
    return PoseDataset(ds, shape, flip, sigmas, ds.label_keypoints)


def _to_pixels(norm: np.ndarray, ds: YoloDataset, img: np.ndarray) -> np.ndarray:
    out = norm.copy()
    if len(out):
        wh = ds.sizes_of(img)
        out[:, :, 0] *= wh[:, None, 0]
        out[:, :, 1] *= wh[:, None, 1]
    return out


def load_pose_predictions(source: str | os.PathLike[str], pds: PoseDataset) -> tuple[BoxTable, np.ndarray]:
    """Pose predictions (a folder of txt files or a JSON list) as a pixel BoxTable and their keypoints
    (M × K × 3 pixels), aligned with ``pds``'s images."""
    p = Path(source)
    ds = pds.ds
    if not p.is_dir():
        table = load_yolo_predictions(p, ds)  # (the box fields, record by record, with their checks)
        points = _json_keypoints(p, pds.kpt_shape[0])
        if ds.dropped_images:  # (the records of images left out as corrupt, which the boxes skipped)
            targets = JsonTargets(ds, p)
            keep = [targets.locate(r, k, ())[0] >= 0 for k, r in enumerate(targets.records())]
            points = points[np.array(keep, dtype=bool)]
        return table, points
    files, names, regular = prediction_entries(p)  # (runs/pose/predict/ given: its txt files are in labels/)
    kept, listed, image, unknown, skipped = prediction_images(files, names, regular, ds)
    out = parse_label_files(
        kept,
        len(ds.names),
        with_conf=True,
        file_errors=unknown,
        rows=read_rows(kept, "label file", listed=listed),
        kpt_shape=pds.kpt_shape,
    )
    if skipped:
        split_warning(ds, f"{skipped} prediction file(s) of images left out as corrupt: not read", 3)
    assert out.keypoints is not None
    img = image[out.file]
    table = to_pixels(BoxTable(img, out.cls, out.xywh, out.conf), ds)
    return table, _to_pixels(out.keypoints, ds, img)


def _json_keypoints(path: Path, k: int) -> np.ndarray:
    """Each record's ``keypoints`` (``yolo val save_json``: the K keypoints flattened, 3K numbers ``x, y,
    score`` or, for a ``[K, 2]`` model, 2K numbers ``x, y``) as M × K × 3 pixels (score 1 where none)."""
    records = read_json(path, "predictions file")
    out = np.ones((len(records), k, 3))
    for r, rec in enumerate(records):
        kp = rec.get("keypoints") if isinstance(rec, dict) else None
        if not isinstance(kp, list) or len(kp) not in (2 * k, 3 * k):
            raise ValidationError(
                f"'keypoints' must be {3 * k} numbers (x, y, score per keypoint) or {2 * k} (x, y)",
                file=path,
                record=r,
            )
        try:
            arr = np.array(kp, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValidationError("'keypoints' must be numbers", file=path, record=r) from None
        if any(isinstance(v, bool) for v in kp) or not np.isfinite(arr).all():
            raise ValidationError("'keypoints' must be finite numbers", file=path, record=r)
        dim = len(kp) // k
        out[r, :, :dim] = arr.reshape(k, dim)
    return out
