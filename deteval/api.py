"""A training-loop API: ``MeanAveragePrecision`` accumulates per-batch predictions and targets.

Modelled on torchmetrics' ``MeanAveragePrecision``: ``update(predictions, targets)`` takes one list entry per
image, each a mapping of arrays; ``compute()`` scores everything seen since the last ``reset()`` with the
same code path as the file-based evaluators, so the numbers are identical to ``deteval voc`` / ``deteval
coco`` on the same data.

* predictions: ``boxes`` (N×4), ``scores`` (N), ``labels`` (N, integer class ids)
* targets: ``boxes`` (M×4), ``labels`` (M); optional ``iscrowd`` (COCO), ``difficult`` (VOC) and ``area``
  (COCO: area ranges use it instead of the box area, as COCO files do). Each is validated whichever the
  protocol; the one a protocol has no notion of (``difficult`` for COCO, ``iscrowd``/``area`` for VOC) is
  not used, as in the file formats.

Arrays may be numpy arrays, lists, or anything with ``__array__`` (a CPU torch tensor works; a tensor on
another device or requiring grad is detached and moved with its own ``detach()``/``cpu()`` methods, so
deteval never imports torch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from deteval.detection.boxes import BOX_FORMATS, BoxFormat, convert_boxes
from deteval.errors import ConfigError, ValidationError
from deteval.results import EvalResult


def to_numpy(value: Any, *, what: str, dtype: Any = np.float64) -> np.ndarray:
    """``value`` as a numpy array of ``dtype``; torch-like tensors are detached and moved to the CPU first."""
    if hasattr(value, "detach") and callable(value.detach):
        value = value.detach()
    if hasattr(value, "cpu") and callable(value.cpu):
        value = value.cpu()
    try:
        arr = np.asarray(value)
    except Exception as exc:  # anything that cannot become an array is the user's input error
        raise ValidationError(f"{what} cannot be converted to an array: {exc}") from None
    if arr.dtype == object:
        raise ValidationError(f"{what} is a ragged or non-numeric array")
    try:
        return arr.astype(dtype, copy=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} is not numeric: {exc}") from None


@dataclass
class _Columns:
    """Growing columnar storage: per-image chunks, concatenated once at compute time."""

    image: list[np.ndarray] = field(default_factory=list)
    boxes: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    scores: list[np.ndarray] = field(default_factory=list)
    difficult: list[np.ndarray] = field(default_factory=list)

    def concat(self, name: str, dtype: Any, shape: tuple[int, ...] = ()) -> np.ndarray:
        chunks = getattr(self, name)
        if not chunks:
            return np.zeros((0, *shape), dtype=dtype)
        return np.concatenate(chunks).astype(dtype, copy=False)


def _entry(item: Any, key: str, where: str, required: bool) -> Any:
    if not isinstance(item, Mapping):
        raise ValidationError(f"{where} must be a mapping with '{key}', got {type(item).__name__}")
    if key not in item:
        if required:
            raise ValidationError(f"{where} has no '{key}'")
        return None
    return item[key]


def _vector(value: Any, n: int, what: str, dtype: Any) -> np.ndarray:
    arr = to_numpy(value, what=what, dtype=np.float64).reshape(-1)
    if arr.shape[0] != n:
        raise ValidationError(f"{what} has {arr.shape[0]} values for {n} boxes")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} contains NaN or inf")
    if dtype is not np.float64:
        if np.any(arr != np.round(arr)):
            raise ValidationError(f"{what} must hold integers")
        return arr.astype(dtype)
    return arr


def _boxes(value: Any, what: str) -> np.ndarray:
    arr = to_numpy(value, what=what)
    if arr.size == 0:
        return np.zeros((0, 4), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValidationError(f"{what} must be N×4, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} contains NaN or inf")
    return arr


class MeanAveragePrecision:
    """Accumulate detections and targets batch by batch, then score them with the VOC or COCO protocol.

    ``protocol="voc"`` runs :func:`deteval.detection.voc.evaluate_voc` (options ``metric``, ``iou_threshold``,
    ``profile``, ... as there); ``protocol="coco"`` runs :class:`deteval.detection.coco.CocoStream` (bbox;
    options ``params``, ``compat`` as there), which matches each batch as it arrives. Images are numbered in
    the order they were passed to :meth:`update`, from 0.
    Class names come from ``class_names`` (label → name), else the label's decimal string.

    >>> m = MeanAveragePrecision(protocol="voc", box_format="xyxy")
    >>> m.update([{"boxes": [[0, 0, 9, 9]], "scores": [0.9], "labels": [1]}],
    ...          [{"boxes": [[0, 0, 9, 9]], "labels": [1]}])
    >>> m.compute().summary["map"]
    1.0
    """

    def __init__(
        self,
        protocol: Literal["voc", "coco"] = "coco",
        box_format: BoxFormat = "xyxy",
        *,
        class_names: Mapping[int, str] | None = None,
        **options: Any,
    ) -> None:
        if protocol not in ("voc", "coco"):
            raise ConfigError(f"unknown protocol {protocol!r}; choose 'voc' or 'coco'")
        if box_format not in BOX_FORMATS:
            raise ConfigError(f"unknown box format {box_format!r}; choose one of {', '.join(BOX_FORMATS)}")
        self.protocol = protocol
        self.box_format = box_format
        self.class_names = dict(class_names or {})
        self.options = options
        self.reset()

    def reset(self) -> None:
        """Forget every batch seen so far."""
        self._pred = _Columns()
        self._gt = _Columns()
        self._n_images = 0
        self._stream = None
        if self.protocol == "coco":
            from deteval.detection.coco import CocoStream

            # Matched batch by batch into a compact table: memory stays bounded over a long validation run.
            self._stream = CocoStream(
                box_format="xywh" if self.box_format == "xywh" else "xyxy",
                class_names=self.class_names or None,
                **self.options,
            )

    @property
    def n_images(self) -> int:
        return self._n_images

    def _validate(
        self, predictions: Sequence[Mapping[str, Any]], targets: Sequence[Mapping[str, Any]]
    ) -> list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
        if len(predictions) != len(targets):
            raise ValidationError(f"{len(predictions)} predictions for {len(targets)} targets in this batch")
        out = []
        for i, (p, t) in enumerate(zip(predictions, targets)):
            where_p, where_t = f"predictions[{i}]", f"targets[{i}]"
            pb = _boxes(_entry(p, "boxes", where_p, True), f"{where_p}['boxes']")
            n = pb.shape[0]
            pred = {
                "boxes": pb,
                "scores": _vector(_entry(p, "scores", where_p, True), n, f"{where_p}['scores']", np.float64),
                "labels": _vector(_entry(p, "labels", where_p, True), n, f"{where_p}['labels']", np.int64),
            }
            tb = _boxes(_entry(t, "boxes", where_t, True), f"{where_t}['boxes']")
            m = tb.shape[0]
            target = {
                "boxes": tb,
                "labels": _vector(_entry(t, "labels", where_t, True), m, f"{where_t}['labels']", np.int64),
            }
            for key, dtype in (("iscrowd", np.int64), ("difficult", np.int64), ("area", np.float64)):
                value = _entry(t, key, where_t, False)
                if value is not None:
                    target[key] = _vector(value, m, f"{where_t}['{key}']", dtype)
            out.append((pred, target))
        return out

    def update(self, predictions: Sequence[Mapping[str, Any]], targets: Sequence[Mapping[str, Any]]) -> None:
        """Add one batch: ``predictions[i]`` and ``targets[i]`` describe the same image.

        The whole batch is validated before any of it is stored, so a bad batch leaves the state unchanged.
        """
        batch = self._validate(predictions, targets)
        if self._stream is not None:
            if self.box_format == "cxcywh":
                for pred, target in batch:
                    pred["boxes"] = convert_boxes(pred["boxes"], "cxcywh", "xyxy")
                    target["boxes"] = convert_boxes(target["boxes"], "cxcywh", "xyxy")
            self._stream.update([p for p, _ in batch], [t for _, t in batch])
        else:
            for offset, (pred, target) in enumerate(batch):
                img = self._n_images + offset
                n, m = pred["boxes"].shape[0], target["boxes"].shape[0]
                self._pred.image.append(np.full(n, img, dtype=np.int64))
                self._pred.boxes.append(pred["boxes"])
                self._pred.scores.append(pred["scores"])
                self._pred.labels.append(pred["labels"])
                self._gt.image.append(np.full(m, img, dtype=np.int64))
                self._gt.boxes.append(target["boxes"])
                self._gt.labels.append(target["labels"])
                self._gt.difficult.append(target.get("difficult", np.zeros(m, dtype=np.int64)))
        self._n_images += len(batch)

    def _label_table(self, *labels: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
        ids = np.unique(np.concatenate(labels)) if labels else np.zeros(0, dtype=np.int64)
        names = tuple(self.class_names.get(int(k), str(int(k))) for k in ids)
        if len(set(names)) != len(names):
            raise ConfigError("class_names maps two labels to the same name")
        return ids, names

    def compute(self) -> EvalResult:
        """Score everything accumulated since the last :meth:`reset` (the same result as the file path)."""
        if self.protocol == "voc":
            return self._compute_voc()
        return self._compute_coco()

    def _compute_voc(self) -> EvalResult:
        from deteval.detection.voc import VOCDetections, VOCGroundTruth, evaluate_voc

        g_lab = self._gt.concat("labels", np.int64)
        p_lab = self._pred.concat("labels", np.int64)
        ids, names = self._label_table(g_lab, p_lab)
        images = tuple(str(i) for i in range(self._n_images))
        gt = VOCGroundTruth.from_arrays(
            self._gt.concat("image", np.int64),
            np.searchsorted(ids, g_lab),
            convert_boxes(self._gt.concat("boxes", np.float64, (4,)), self.box_format, "xyxy"),
            self._gt.concat("difficult", np.int64).astype(bool),
            images=images,
            classes=names,
        )
        dets = VOCDetections.from_arrays(
            self._pred.concat("image", np.int64),
            np.searchsorted(ids, p_lab),
            convert_boxes(self._pred.concat("boxes", np.float64, (4,)), self.box_format, "xyxy"),
            self._pred.concat("scores", np.float64),
            images=images,
            classes=names,
        )
        return evaluate_voc(gt, dets, **self.options)

    def _compute_coco(self) -> EvalResult:
        assert self._stream is not None
        return self._stream.compute().to_result()
