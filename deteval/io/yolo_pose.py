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

from deteval.errors import InputFormatError, ValidationError
from deteval.io.guards import read_json, read_text, regular_file
from deteval.io.yolo import (
    JsonTargets,
    YoloDataset,
    label_path,
    load_yolo_dataset,
    load_yolo_predictions,
    prediction_entries,
    split_warning,
    to_pixels,
)
from deteval.io.yolo_labels import Duplicates
from deteval.io.yolo_yaml import read_data_yaml
from deteval.tables.boxes import BoxTable

__all__ = ["PoseDataset", "load_pose_dataset", "load_pose_predictions", "pose_rows", "pose_shape"]

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


def _numbers(fields: list[str], path: Path, line: int) -> np.ndarray:
    try:
        if any("_" in x or not x.isascii() for x in fields):  # (float() reads "1_0" and Arabic digits)
            raise ValueError
        values = np.array([float(x) for x in fields], dtype=np.float64)
    except ValueError:
        raise InputFormatError("a value is not a number", file=path, record=f"line {line}") from None
    if not np.isfinite(values).all():
        raise ValidationError("NaN or infinite value", file=path, record=f"line {line}")
    return values


def pose_rows(
    path: Path,
    nc: int,
    kpt_shape: tuple[int, int],
    *,
    with_conf: bool = False,
    duplicates: Duplicates = "error",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Rows of one pose label (or prediction) file → class, normalized ``xc yc w h``, conf, keypoints
    (n × K × 3 normalized: ``x y v``, or ``x y score`` for predictions) and the count of duplicates dropped."""
    k, dim = kpt_shape
    text = read_text(path, "label file")
    rows = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    widths = (6 + 2 * k, 6 + 3 * k) if with_conf else (5 + k * dim,)
    cls = np.zeros(len(rows))
    xywh = np.zeros((len(rows), 4))
    conf = np.zeros(len(rows))
    kpts = np.zeros((len(rows), k, 3))
    raw = []
    for r, (line, f) in enumerate(rows):
        if len(f) not in widths:
            want = " or ".join(map(str, widths))
            raise InputFormatError(
                f"{len(f)} columns; a pose row of kpt_shape [{k}, {dim}] has {want}",
                file=path,
                record=f"line {line}",
            )
        v = _numbers(f, path, line)
        if with_conf:
            conf[r] = v[-1]
            if not 0 <= conf[r] <= 1:
                raise ValidationError(
                    f"confidence {conf[r]:g} outside [0, 1]", file=path, record=f"line {line}"
                )
            v = v[:-1]
        cls[r], xywh[r] = v[0], v[1:5]
        d = (len(v) - 5) // k
        pts = v[5:].reshape(k, d)
        kpts[r, :, :2] = pts[:, :2]
        if d == 3:
            kpts[r, :, 2] = pts[:, 2]
        elif not with_conf:  # Ultralytics: visible unless a coordinate is negative
            kpts[r, :, 2] = np.where((pts[:, 0] < 0) | (pts[:, 1] < 0), 0.0, 1.0)
        _check_row(v, pts[:, :2] if not with_conf else None, nc, path, line)
        raw.append(v)
    dropped = 0
    if len(rows) > 1 and not with_conf:
        lb = np.array(raw, dtype=np.float32)
        _, keep = np.unique(lb, axis=0, return_index=True)
        if len(keep) < len(rows):
            if duplicates == "error":
                seen: dict[bytes, int] = {}
                for r in range(len(rows)):
                    key = (lb[r] + np.float32(0)).tobytes()  # as np.unique compares: -0 equals 0
                    if key in seen:
                        raise ValidationError(
                            f"exact duplicate of line {rows[seen[key]][0]} (Ultralytics drops it; pass a "
                            "ultralytics profile to do the same)",
                            file=path,
                            record=f"line {rows[r][0]}",
                        )
                    seen[key] = r
            dropped = len(rows) - len(keep)
            cls, xywh, kpts = cls[keep], xywh[keep], kpts[keep]
    return cls.astype(np.int64), xywh, conf, kpts, dropped


def _check_row(v: np.ndarray, points: np.ndarray | None, nc: int, path: Path, line: int) -> None:
    """Ultralytics' checks of a pose label row: an integer class below nc, keypoint coordinates ≤ 1.01, the
    row's smallest value ≥ 0 (or ≥ −0.01 with w, h ≥ 0). ``points`` None (a prediction): the class only (a
    model's keypoints may lie outside the image)."""
    cls = v[0]
    if cls % 1 != 0 or cls < 0:
        raise ValidationError(
            f"class {cls:g} is not a non-negative integer", file=path, record=f"line {line}"
        )
    if cls >= nc:
        shown = str(int(cls)) if cls < 1e15 else f"{cls:g}"
        raise ValidationError(f"class {shown} is not below nc={nc}", file=path, record=f"line {line}")
    if points is None:
        return
    if points.max(initial=0.0) > 1.01:
        raise ValidationError(
            "keypoint coordinate above 1.01: labels must be normalized to [0, 1]",
            file=path,
            record=f"line {line}",
        )
    low = v.min()
    if not (low >= 0 or (low >= -0.01 and v[3:5].min() >= 0)):
        raise ValidationError(
            "negative value beyond Ultralytics' −0.01 tolerance", file=path, record=f"line {line}"
        )


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
    kpts: list[np.ndarray] = []

    def read_labels(ds: YoloDataset, dup: Duplicates) -> BoxTable:
        imgs, clss, boxes = [], [], []
        for i, image in enumerate(ds.images):
            lp = label_path(image)
            if not os.path.lexists(lp):  # no label file: an image without objects (Ultralytics)
                continue
            regular_file(lp, "label file")
            c, b, _, kp, dropped = pose_rows(lp, len(ds.names), shape, duplicates=dup)
            if dropped:
                ds.duplicates_dropped += dropped
                split_warning(ds, f"{lp}: {dropped} duplicate labels removed (as Ultralytics does)")
            imgs.append(np.full(len(c), i, dtype=np.int64))
            clss.append(c)
            boxes.append(b)
            kpts.append(kp)
        if not imgs:
            return BoxTable.empty()
        return BoxTable(
            np.concatenate(imgs), np.concatenate(clss), np.concatenate(boxes), np.zeros(sum(map(len, clss)))
        )

    ds = load_yolo_dataset(
        data_yaml, split, duplicates=duplicates, read_labels=read_labels, check_images=check_images
    )
    norm = np.concatenate(kpts) if kpts else np.zeros((0, shape[0], 3))
    return PoseDataset(ds, shape, flip, sigmas, norm)


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
    files, names, _ = prediction_entries(p)  # (runs/pose/predict/ given: its txt files are in labels/)
    stems = ds.stem_index()
    dropped = {p.stem for p in ds.dropped_images}
    imgs, clss, boxes, confs, kpts = [], [], [], [], []
    skipped = 0
    for f, stem in zip(files, names):
        i = stems.get(stem)
        if i is None and stem in dropped:  # (the image was left out as corrupt: so are its predictions)
            skipped += 1
            continue
        if i is None:
            raise ValidationError(f"no image with the stem {stem!r} in the '{ds.split}' split", file=f)
        if i < 0:
            raise ValidationError(f"two images of the split share the stem {stem!r}", file=f)
        c, b, conf, kp, _ = pose_rows(Path(f), len(ds.names), pds.kpt_shape, with_conf=True)
        imgs.append(np.full(len(c), i, dtype=np.int64))
        clss.append(c)
        boxes.append(b)
        confs.append(conf)
        kpts.append(kp)
    if skipped:
        split_warning(ds, f"{skipped} prediction file(s) of images left out as corrupt: not read", 3)
    if not imgs:
        return BoxTable.empty(), np.zeros((0, pds.kpt_shape[0], 3))
    img = np.concatenate(imgs)
    table = to_pixels(BoxTable(img, np.concatenate(clss), np.concatenate(boxes), np.concatenate(confs)), ds)
    return table, _to_pixels(np.concatenate(kpts), ds, img)


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
