"""A training-loop API: ``MeanAveragePrecision`` accumulates per-batch predictions and targets.

Modelled on torchmetrics' ``MeanAveragePrecision`` (switching is a change of import): ``update(preds,
targets)`` takes a list with one mapping of arrays per image; ``compute()`` scores everything seen since the
last ``reset()`` with the same code path as the file-based evaluators, so the numbers are identical to
``deteval voc`` / ``deteval coco`` (and to pycocotools, bit for bit) on the same data.

Keys of one image's mappings (arrays: numpy, lists, or anything with ``__array__``; a torch tensor on any
device is detached and moved with its own ``detach()``/``cpu()``, deteval never imports torch):

==================  =========================================  ==============================================
iou_type            predictions                                targets
==================  =========================================  ==============================================
``"bbox"``          ``boxes`` (N×4), ``scores``, ``labels``    ``boxes`` (M×4), ``labels``; COCO: ``iscrowd``,
                                                               ``area``; VOC: ``difficult``
``"segm"``          ``masks`` (N×H×W booleans or a list of     ``masks``, ``labels``; ``iscrowd``, ``area``
                    COCO RLE dicts), ``scores``, ``labels``;   (default: mask area), ``boxes`` (default:
                    ``boxes`` optional                         the mask's extent)
``"boundary"``      as ``"segm"`` (Boundary IoU; ``params``    as ``"segm"``
                    sets ``dilation_ratio``)
``"keypoints"``     ``keypoints`` (N×K×3 or N×3K: x, y, v),    ``keypoints`` (M×K×3), ``boxes``, ``labels``;
                    ``scores``, ``labels``                     ``iscrowd``, ``area`` (default: box area)
==================  =========================================  ==============================================

Every mapping may also hold ``image_id`` (an integer). **Image order**: with ``image_id`` the images are
accumulated in ascending id, as pycocotools does (the order decides ties of equal scores across images); a
prediction and its target must then carry the same id, and every image must have one. Without ``image_id``,
images are numbered in the order ``update()`` received them, from 0 (feed them in ascending id to get
pycocotools' numbers when scores tie across images). Any other key is refused, so a typo is never ignored.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from deteval.detection.boxes import BOX_FORMATS, BoxFormat, convert_boxes
from deteval.detection.coco import CocoStream, resolve_params
from deteval.detection.coco_params import MASK_TYPES, CocoParams
from deteval.detection.voc import VOCDetections, VOCGroundTruth
from deteval.errors import ConfigError, ValidationError
from deteval.metric_result import MetricResult, box_ious, coco_metrics, listing, voc_metrics
from deteval.report.metric_plot import plot_values
from deteval.results import EvalResult
from deteval.run.coco import evaluate_coco
from deteval.run.metric_state import absorb_state, gather_states, metric_state
from deteval.run.voc import evaluate_voc
from deteval.tables.arrays import numeric_array
from deteval.tensors import as_tensors, is_torch_tensor

IOU_TYPES = ("bbox", "segm", "keypoints", "boundary")

_TARGET_KEYS = {
    ("voc", "bbox"): ("boxes", "labels", "difficult", "image_id"),
    ("coco", "bbox"): ("boxes", "labels", "iscrowd", "area", "image_id"),
    ("coco", "segm"): ("masks", "labels", "iscrowd", "area", "boxes", "image_id"),
    ("coco", "boundary"): ("masks", "labels", "iscrowd", "area", "boxes", "image_id"),
    ("coco", "keypoints"): ("keypoints", "boxes", "labels", "iscrowd", "area", "image_id"),
}
_PRED_KEYS = {
    "bbox": ("boxes", "scores", "labels", "image_id"),
    "segm": ("masks", "scores", "labels", "boxes", "image_id"),
    "boundary": ("masks", "scores", "labels", "boxes", "image_id"),
    "keypoints": ("keypoints", "scores", "labels", "image_id"),
}
_REQUIRED = {"boxes", "scores", "labels", "masks", "keypoints"}


def to_numpy(value: Any, *, what: str, dtype: Any = np.float64, bools: bool = False) -> np.ndarray:
    """``value`` as a numpy array of ``dtype``; torch-like tensors are detached and moved to the CPU first.
    Strings (``"12.5"``), complex numbers and, unless ``bools`` (flags, masks), booleans are refused: numpy
    would read them as numbers (:func:`deteval.tables.arrays.numeric_array`)."""
    if hasattr(value, "detach") and callable(value.detach):
        value = value.detach()
    if hasattr(value, "cpu") and callable(value.cpu):
        value = value.cpu()
    try:
        return numeric_array(value, dtype, bools=bools)
    except TypeError as exc:
        raise ValidationError(f"{what} {exc}") from None
    except Exception as exc:  # anything that cannot become an array is the user's input error
        raise ValidationError(f"{what} cannot be converted to an array: {exc}") from None


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


def _vector(value: Any, n: int, what: str, dtype: Any, *, bools: bool = False) -> np.ndarray:
    arr = to_numpy(value, what=what, dtype=np.float64, bools=bools).reshape(-1)
    if arr.shape[0] != n:
        raise ValidationError(f"{what} has {arr.shape[0]} values for {n} boxes")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} contains NaN or inf")
    if dtype is not np.float64:
        if np.any(arr != np.round(arr)):
            raise ValidationError(f"{what} must hold integers")
        return arr.astype(dtype)
    return arr


def _boxes(value: Any, what: str, box_format: str = "xyxy") -> np.ndarray:
    arr = to_numpy(value, what=what)
    if arr.size == 0:
        return np.zeros((0, 4), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValidationError(f"{what} must be N×4, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} contains NaN or inf")
    if box_format == "xyxy":
        bad = np.flatnonzero((arr[:, 2] < arr[:, 0]) | (arr[:, 3] < arr[:, 1]))
        layout, other = "(x1, y1, x2, y2) with x2 >= x1 and y2 >= y1", "xywh"
    else:
        bad = np.flatnonzero((arr[:, 2] < 0) | (arr[:, 3] < 0))
        layout, other = "(x, y, width, height) with no negative size", "xyxy"
        if box_format == "cxcywh":
            layout = "(centre x, centre y, width, height) with no negative size"
    if bad.size:
        box = ", ".join(f"{v:g}" for v in arr[bad[0]].tolist())
        raise ValidationError(
            f"{what}[{bad[0]}] = [{box}] is not a box in box_format={box_format!r}: it must be {layout} "
            f"({bad.size} such box(es)); if your boxes are {other}, pass box_format={other!r}"
        )
    return arr


def _image_id(value: Any, what: str) -> int:
    arr = to_numpy(value, what=what).reshape(-1)
    if arr.shape[0] != 1 or not np.isfinite(arr[0]) or arr[0] != np.round(arr[0]) or abs(arr[0]) >= 2.0**53:
        raise ValidationError(f"{what} must be one integer, got {value!r}")
    return int(arr[0])


def _masks(value: Any, what: str) -> tuple[list[dict[str, Any]], tuple[int, int] | None]:
    """COCO RLE dicts (compressed counts as str) and the (height, width) they share; None if no mask."""
    if isinstance(value, (list, tuple)) and not value:
        return [], None
    if isinstance(value, (list, tuple)) and all(isinstance(v, Mapping) for v in value):
        rles = []
        for j, rle in enumerate(value):
            size, counts = rle.get("size"), rle.get("counts")
            if not (isinstance(size, (list, tuple)) and len(size) == 2 and counts is not None):
                raise ValidationError(f"{what}[{j}] must be a COCO RLE dict with 'size' and 'counts'")
            rles.append({"size": [int(size[0]), int(size[1])], "counts": counts})
        sizes = {tuple(r["size"]) for r in rles}
        if len(sizes) != 1:
            raise ValidationError(f"{what} holds masks of different sizes {sorted(sizes)}")
        return rles, next(iter(sizes))
    arr = to_numpy(value, what=what, dtype=np.float64, bools=True)
    if arr.ndim != 3:
        raise ValidationError(f"{what} must be N×H×W (or a list of COCO RLE dicts), got shape {arr.shape}")
    if not np.isin(arr, (0.0, 1.0)).all():
        raise ValidationError(f"{what} must hold booleans (0 or 1)")
    hw = (int(arr.shape[1]), int(arr.shape[2]))
    if arr.shape[0] == 0:
        return [], hw
    encoded = _mask_utils().encode(np.asfortranarray(arr.transpose(1, 2, 0).astype(np.uint8)))
    return [{"size": list(r["size"]), "counts": r["counts"].decode("ascii")} for r in encoded], hw


def _mask_utils() -> Any:
    """pycocotools' RLE functions (imported on first use: bbox-only users never load them)."""
    return importlib.import_module("pycocotools.mask")


def _keypoints(value: Any, what: str) -> np.ndarray:
    arr = to_numpy(value, what=what)
    if arr.ndim == 3 and arr.shape[2] == 3:
        arr = arr.reshape(arr.shape[0], -1)
    if arr.ndim != 2 or arr.shape[1] % 3 or arr.shape[1] == 0:
        raise ValidationError(f"{what} must be N×K×3 or N×3K (x, y, visibility), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} contains NaN or inf")
    return arr


def _numbers(value: Any, name: str, *, integer: bool = False) -> np.ndarray:
    """A keyword's list of thresholds as a 1-D array of finite numbers (integers for max detections)."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = np.zeros((0, 0))
    if (
        arr.ndim != 1
        or arr.size == 0
        or not np.isfinite(arr).all()
        or (integer and (arr != np.round(arr)).any())
    ):
        kind = "whole numbers" if integer else "numbers"
        raise ConfigError(f"{name} must be a non-empty list of finite {kind}, got {value!r}")
    return arr.astype(np.int64) if integer else arr


class MeanAveragePrecision:
    """Accumulate detections and targets batch by batch, then score them with the COCO or VOC protocol.

    ``protocol="coco"`` (default) is pycocotools' COCOeval; ``protocol="voc"`` runs
    :func:`deteval.run.voc.evaluate_voc` (its options ``metric``, ``iou_threshold``, ``profile``, ...
    are accepted here). torchmetrics' keywords work unchanged: ``box_format`` ("xyxy", "xywh", "cxcywh"),
    ``iou_type`` ("bbox", "segm", "keypoints", "boundary" or a tuple of them), ``iou_thresholds``, ``rec_thresholds``,
    ``max_detection_thresholds``, ``class_metrics``; ``backend`` ("pycocotools"; "faster_coco_eval" gives the
    same numbers) and ``average`` ("macro" only) are accepted for compatibility; ``extended_summary=True``
    adds ``precision``, ``recall``, ``scores`` (pycocotools' ``eval`` arrays over the labels seen) and, for
    boxes, ``ious`` (per (image id, label), pycocotools' ``computeIoU`` matrix). As in torchmetrics:
    ``metric(preds, targets)`` (``forward``) adds a batch and returns that batch's result alone;
    ``.to(device)``; ``.plot()``; when torch tensors were passed, the result's values are tensors (float64:
    deteval's numbers are pycocotools' doubles) on that device; a result's warnings (and ``compute()``
    before ``update()``) also go through :func:`warnings.warn`. deteval's own COCO options: ``params`` (a CocoParams or dict) and ``compat``
    ("pycocotools" or "fixed"). ``class_names`` maps a label to the name used in the per-class table.
    An unknown keyword, or one the chosen protocol does not use, raises a ConfigError naming it.

    >>> m = MeanAveragePrecision(protocol="voc", box_format="xyxy")
    >>> m.update([{"boxes": [[0, 0, 9, 9]], "scores": [0.9], "labels": [1]}],
    ...          [{"boxes": [[0, 0, 9, 9]], "labels": [1]}])
    >>> result = m.compute()
    >>> result["map"], result.summary["map"]
    (1.0, 1.0)
    """

    def __init__(
        self,
        protocol: Literal["voc", "coco"] = "coco",
        box_format: BoxFormat = "xyxy",
        *,
        iou_type: str | Sequence[str] = "bbox",
        iou_thresholds: Sequence[float] | None = None,
        rec_thresholds: Sequence[float] | None = None,
        max_detection_thresholds: Sequence[int] | None = None,
        class_metrics: bool = False,
        class_names: Mapping[int, str] | None = None,
        backend: str = "pycocotools",
        average: str = "macro",
        extended_summary: bool = False,
        **options: Any,
    ) -> None:
        if protocol not in ("voc", "coco"):
            hint = " (box_format is the second argument, or a keyword)" if protocol in BOX_FORMATS else ""
            raise ConfigError(f"unknown protocol {protocol!r}; choose 'voc' or 'coco'{hint}")
        if box_format not in BOX_FORMATS:
            raise ConfigError(f"unknown box_format {box_format!r}; choose one of {listing(BOX_FORMATS)}")
        types = (
            (iou_type,)
            if isinstance(iou_type, str)
            else tuple(iou_type)
            if isinstance(iou_type, Sequence)
            else ()
        )
        if not types or any(t not in IOU_TYPES for t in types) or len(set(types)) != len(types):
            raise ConfigError(
                f"iou_type must be one of {listing(IOU_TYPES)} or a tuple of them, got {iou_type!r}"
            )
        if protocol == "voc" and types != ("bbox",):
            raise ConfigError("protocol='voc' scores boxes only: iou_type must be 'bbox'")
        for name, value, allowed in (
            ("backend", backend, ("pycocotools", "faster_coco_eval")),
            ("average", average, ("macro",)),
            ("extended_summary", extended_summary, (False, True)),
        ):
            if value not in allowed:
                raise ConfigError(f"{name}={value!r} is not supported; accepted: {listing(allowed)}")
        if extended_summary and protocol == "voc":
            raise ConfigError(
                "extended_summary=True is for protocol='coco' (pycocotools' precision/recall arrays)"
            )
        self.protocol = protocol
        self.extended_summary = bool(extended_summary)
        self.device: Any = None
        self._tensors = False  # torch tensors were passed: compute() hands tensors back
        self.box_format = box_format
        self.iou_types = types
        self.class_metrics = bool(class_metrics)
        self.class_names = dict(class_names or {})
        tm = {
            "iou_thresholds": iou_thresholds,
            "rec_thresholds": rec_thresholds,
            "max_detection_thresholds": max_detection_thresholds,
        }
        given = {
            k: _numbers(v, k, integer=k == "max_detection_thresholds") for k, v in tm.items() if v is not None
        }
        if protocol == "voc":
            accepted = [n for n in inspect.signature(evaluate_voc).parameters if n not in ("gt", "dets")]
            if given:
                raise ConfigError(
                    f"{listing(list(given))} not used by protocol='voc' (it has one IoU threshold: use "
                    "iou_threshold=...; recall sampling: metric= or recall_levels=)"
                )
        else:
            accepted = ["params", "compat"]
            if given and options.get("params") is not None:
                raise ConfigError(f"give either params= or {listing(list(given))}, not both")
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            common = ["box_format", "iou_type", "class_metrics", "class_names"]
            if protocol == "coco":
                common += list(tm)
            raise ConfigError(
                f"unknown keyword {listing(unknown)} for protocol={protocol!r}; accepted: "
                f"{listing(common + accepted)}"
            )
        self.options = options
        self._tm_params = {
            "iou_thrs": given.get("iou_thresholds"),
            "rec_thrs": given.get("rec_thresholds"),
            "max_dets": given.get("max_detection_thresholds"),
        }
        self.reset()

    def _params(self, iou_type: str) -> Any:
        params = self.options.get("params")
        given: dict[str, Any] = {k: v for k, v in self._tm_params.items() if v is not None}  # (from _numbers)
        if params is None and given:
            if "max_dets" in given:
                given["max_dets"] = tuple(int(m) for m in given["max_dets"])
            params = replace(CocoParams.default(iou_type), **given)
        return resolve_params(params, iou_type)

    def reset(self) -> None:
        """Forget every batch seen so far."""
        self._pred = _Columns()
        self._gt = _Columns()
        self._n_images = 0
        self._ids: list[int] = []
        self._stream: Any = None
        self._images: list[dict[str, Any]] = []
        self._anns: list[dict[str, Any]] = []
        self._dets: list[dict[str, Any]] = []
        self._boxes: list[tuple[int, dict[str, Any], dict[str, Any]]] = []  # extended_summary's IoUs
        if self.protocol == "coco" and "bbox" in self.iou_types:
            # Matched batch by batch into a compact table: memory stays bounded over a long validation run.
            self._stream = CocoStream(
                params=self._params("bbox"),
                compat=self.options.get("compat", "pycocotools"),
                box_format="xywh" if self.box_format == "xywh" else "xyxy",
                class_names=self.class_names or None,
            )

    @property
    def n_images(self) -> int:
        return self._n_images

    def _check_keys(self, item: Any, where: str, accepted: Sequence[str]) -> None:
        if not isinstance(item, Mapping):
            raise ValidationError(f"{where} must be a mapping (dict) of arrays, got {type(item).__name__}")
        unknown = [k for k in item if k not in accepted]
        if unknown:
            types = self.iou_types[0] if len(self.iou_types) == 1 else self.iou_types
            kind = "protocol='voc'" if self.protocol == "voc" else f"iou_type={types!r}"
            raise ValidationError(
                f"{where} has key(s) {listing([str(k) for k in unknown])} that {kind} does not use; "
                f"accepted: {listing(accepted)}"
            )
        missing = [k for k in accepted if k in _REQUIRED and k not in item and not self._optional(k, where)]
        if missing:
            raise ValidationError(f"{where} has no {listing(missing)}")

    def _optional(self, key: str, where: str) -> bool:
        # boxes are optional with masks; with keypoints, targets need them (OKS uses the box and area)
        return (
            key == "boxes"
            and ("bbox" not in self.iou_types)
            and not ("keypoints" in self.iou_types and where.startswith("targets"))
        )

    def _masked(self) -> bool:
        """Whether an iou type scores masks (segm, boundary)."""
        return any(t in MASK_TYPES for t in self.iou_types)

    def _accepted(self, which: str) -> tuple[str, ...]:
        keys: list[str] = []
        for t in self.iou_types:
            table = _PRED_KEYS[t] if which == "pred" else _TARGET_KEYS[(self.protocol, t)]
            keys += [k for k in table if k not in keys]
        return tuple(keys)

    def _validate(self, predictions: Any, targets: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        for name, value in (("predictions", predictions), ("targets", targets)):
            if isinstance(value, Mapping) or not isinstance(value, Sequence) or isinstance(value, str):
                raise ValidationError(
                    f"{name} must be a list with one dict per image, got {type(value).__name__}"
                    + (" (wrap a single image's dict in a list)" if isinstance(value, Mapping) else "")
                )
        if len(predictions) != len(targets):
            raise ValidationError(f"{len(predictions)} predictions for {len(targets)} targets in this batch")
        out = []
        p_keys, t_keys = self._accepted("pred"), self._accepted("target")
        for i, (p, t) in enumerate(zip(predictions, targets)):
            where_p, where_t = f"predictions[{i}]", f"targets[{i}]"
            self._check_keys(p, where_p, p_keys)
            self._check_keys(t, where_t, t_keys)
            self._tensors = self._tensors or any(is_torch_tensor(v) for d in (p, t) for v in d.values())
            pred, target = self._arrays(p, where_p), self._arrays(t, where_t)
            ids = {_image_id(d["image_id"], f"{w}['image_id']") for d, w in ((p, where_p), (t, where_t))
                   if "image_id" in d}  # fmt: skip
            if len(ids) > 1:
                raise ValidationError(
                    f"{where_p}['image_id'] and {where_t}['image_id'] disagree ({p['image_id']} vs "
                    f"{t['image_id']}): a prediction and its target describe one image"
                )
            pred["image_id"] = target["image_id"] = ids.pop() if ids else None
            out.append((pred, target))
        return out

    def _arrays(self, item: Mapping[str, Any], where: str) -> dict[str, Any]:
        n: int | None = None
        out: dict[str, Any] = {}
        if "masks" in item:
            out["masks"], out["hw"] = _masks(item["masks"], f"{where}['masks']")
            n = len(out["masks"])
        if "keypoints" in item:
            out["keypoints"] = _keypoints(item["keypoints"], f"{where}['keypoints']")
            n = out["keypoints"].shape[0]
        if "boxes" in item:
            out["boxes"] = _boxes(item["boxes"], f"{where}['boxes']", self.box_format)
            if n is not None and out["boxes"].shape[0] != n:
                raise ValidationError(f"{where}['boxes'] has {out['boxes'].shape[0]} rows for {n} objects")
            n = out["boxes"].shape[0]
        assert n is not None  # _check_keys required boxes, masks or keypoints
        for key, dtype in (
            ("scores", np.float64),
            ("labels", np.int64),
            ("iscrowd", np.int64),
            ("difficult", np.int64),
            ("area", np.float64),
        ):
            if key in item:
                flag = key in ("iscrowd", "difficult")  # (a boolean tensor is a natural flag)
                out[key] = _vector(item[key], n, f"{where}['{key}']", dtype, bools=flag)
        for key in ("iscrowd", "difficult"):
            if key in out and not np.isin(out[key], (0, 1)).all():
                raise ValidationError(f"{where}['{key}'] must hold 0 or 1")
        if "area" in out and (out["area"] < 0).any():
            raise ValidationError(f"{where}['area'] must not be negative")
        return out

    def update(self, predictions: Sequence[Mapping[str, Any]], targets: Sequence[Mapping[str, Any]]) -> None:
        """Add one batch: ``predictions[i]`` and ``targets[i]`` describe the same image.

        The whole batch is validated before any of it is stored, so a bad batch leaves the state unchanged.
        """
        batch = self._validate(predictions, targets)
        ids = [p["image_id"] for p, _ in batch]
        with_id = [i is not None for i in ids]
        if (any(with_id) and not all(with_id)) or (
            batch and self._n_images and with_id[0] != bool(self._ids)
        ):
            raise ValidationError("image_id must be given for every image or for none")
        if any(with_id):
            seen = set(self._ids)
            for i in ids:
                if i in seen:
                    raise ValidationError(f"image_id {i} is given twice (each image must be passed once)")
                seen.add(i)
        if self._stream is not None:
            stream_preds: list[dict[str, Any]] = []
            stream_targets: list[dict[str, Any]] = []
            for pred, target in batch:
                pb, tb = pred["boxes"], target["boxes"]
                if self.box_format == "cxcywh":
                    pb, tb = convert_boxes(pb, "cxcywh", "xyxy"), convert_boxes(tb, "cxcywh", "xyxy")
                stream_preds.append({"boxes": pb, "scores": pred["scores"], "labels": pred["labels"]})
                stream_targets.append(
                    {"boxes": tb, **{k: target[k] for k in ("labels", "iscrowd", "area") if k in target}}
                )
            self._stream.update(stream_preds, stream_targets, [int(i) for i in ids] if any(with_id) else None)
        if self.extended_summary and "bbox" in self.iou_types:
            for offset, (pred, target) in enumerate(batch):
                img = self._n_images + offset if pred["image_id"] is None else int(pred["image_id"])
                self._boxes.append((img, pred, target))
        if self.protocol == "coco" and set(self.iou_types) - {"bbox"}:
            for offset, (pred, target) in enumerate(batch):
                self._add_coco_records(self._n_images + offset, pred, target)
        elif self.protocol == "voc":
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
        if any(with_id):
            self._ids.extend(int(i) for i in ids)
        self._n_images += len(batch)

    def _add_coco_records(self, index: int, pred: dict[str, Any], target: dict[str, Any]) -> None:
        """Keep a segm/keypoints image as COCO JSON records (masks as compressed RLE strings)."""
        img_id = index if pred["image_id"] is None else int(pred["image_id"])
        hw = target.get("hw") or pred.get("hw")
        if pred.get("hw") and target.get("hw") and pred["hw"] != target["hw"]:
            raise ValidationError(
                f"image {img_id}: prediction masks are {pred['hw']} and target masks {target['hw']} (H, W)"
            )
        image: dict[str, Any] = {"id": img_id}
        if hw is not None:
            image["height"], image["width"] = hw
        elif self._masked():
            image["height"] = image["width"] = 0  # no mask on this image: its size is never read
        self._images.append(image)
        tb = target.get("boxes")
        if tb is not None:
            tb = convert_boxes(tb, self.box_format, "xywh")
        elif "masks" in target:
            tb = np.asarray(_mask_utils().toBbox(target["masks"])).reshape(-1, 4) if target["masks"] else None
        m = target["labels"].shape[0]
        if tb is None:
            tb = np.zeros((m, 4))
        area = target.get("area")
        if area is None:
            if self._masked() and "masks" in target and m:
                area = np.asarray(_mask_utils().area(target["masks"]), dtype=np.float64)
            else:
                area = tb[:, 2] * tb[:, 3]
        crowd = target.get("iscrowd", np.zeros(m, np.int64))
        for j in range(m):
            ann: dict[str, Any] = {
                "id": len(self._anns) + 1,
                "image_id": img_id,
                "category_id": int(target["labels"][j]),
                "bbox": tb[j].tolist(),
                "area": float(area[j]),
                "iscrowd": int(crowd[j]),
            }
            if "masks" in target:
                ann["segmentation"] = target["masks"][j]
            if "keypoints" in target:
                ann["keypoints"] = target["keypoints"][j].tolist()
                ann["num_keypoints"] = int(np.count_nonzero(target["keypoints"][j, 2::3] > 0))
            self._anns.append(ann)
        for j in range(pred["labels"].shape[0]):
            det: dict[str, Any] = {
                "image_id": img_id,
                "category_id": int(pred["labels"][j]),
                "score": float(pred["scores"][j]),
            }
            if "masks" in pred:
                det["segmentation"] = pred["masks"][j]
            if "keypoints" in pred:
                det["keypoints"] = pred["keypoints"][j].tolist()
            if "boxes" in pred and self._masked():
                det["bbox"] = convert_boxes(pred["boxes"][j : j + 1], self.box_format, "xywh")[0].tolist()
            self._dets.append(det)

    def compute(self) -> MetricResult:
        """Score everything accumulated since the last :meth:`reset` (the same result as the file path).

        Returns a :class:`MetricResult`: the :class:`~deteval.results.EvalResult` of the file-based commands,
        also readable by torchmetrics' keys (``result["map"]``, ``result["mar_100"]``, ...).
        """
        if self._n_images == 0:
            warnings.warn(
                "MeanAveragePrecision.compute() was called before update(): there is nothing to score",
                UserWarning,
                stacklevel=2,
            )
        if self.protocol == "voc":
            res, class_ids, names = self._compute_voc()
            return self._handed_back(
                MetricResult(res, voc_metrics(res, class_ids, names, self.class_metrics), {"bbox": res})
            )
        results: dict[str, EvalResult] = {}
        metrics: dict[str, Any] = {}
        for t in self.iou_types:
            ev = self._compute_coco(t)
            results[t] = ev.to_result()
            prefix = "" if len(self.iou_types) == 1 else f"{t}_"
            metrics.update({prefix + k: v for k, v in coco_metrics(ev, self.class_metrics).items()})
            if self.extended_summary:
                precision, recall, scores = ev.full_arrays()
                extra = {"precision": precision, "recall": recall, "scores": scores}
                if t == "bbox":
                    extra["ious"] = box_ious(self._boxes, self.box_format, ev.params.max_dets[-1])
                metrics.update({prefix + k: v for k, v in extra.items()})
        return self._handed_back(MetricResult(results[self.iou_types[0]], metrics, results))

    def _handed_back(self, result: MetricResult) -> MetricResult:
        """``result`` with its warnings also raised through :func:`warnings.warn` (a training loop sees
        them) and, when tensors were passed, its values as tensors on :attr:`device`."""
        for w in result.warnings:
            warnings.warn(f"deteval: {w}", UserWarning, stacklevel=3)
        if self._tensors:
            result.metrics = as_tensors(result.metrics, self.device)
        return result

    def to(self, device: Any) -> MeanAveragePrecision:
        """Where the result's tensors are put (``"cuda:0"``, a ``torch.device``); the state stays in numpy
        on the CPU, where the evaluation runs. Returns ``self``, as torchmetrics' ``Metric.to``."""
        self.device = device
        return self

    def forward(
        self, predictions: Sequence[Mapping[str, Any]], targets: Sequence[Mapping[str, Any]]
    ) -> MetricResult:
        """Add the batch (as :meth:`update`) and return the result of this batch alone, as torchmetrics'
        ``forward`` does for a metric whose state is the whole list of detections."""
        alone = MeanAveragePrecision.__new__(MeanAveragePrecision)
        alone.__dict__.update(self.__dict__)
        alone.reset()
        alone.update(predictions, targets)
        result = alone.compute()
        self.update(predictions, targets)
        return result

    __call__ = forward

    def plot(self, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """(figure, axes): the scalar values of ``val`` (a result, or :meth:`compute`'s when None) as bars,
        as torchmetrics' ``plot()``; matplotlib is needed."""
        result = self.compute() if val is None else val
        return plot_values(dict(result.items()), ax)

    def state_dict(self) -> dict[str, Any]:
        """Everything accumulated so far as plain values (COCO bbox: compact match tables, not boxes);
        :meth:`load_state_dict` restores it (see :mod:`deteval.run.metric_state`)."""

        return metric_state(self)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the accumulated state by ``state`` (from :meth:`state_dict` of a metric configured alike)."""

        self.reset()
        absorb_state(self, state)

    def merge(self, other: MeanAveragePrecision) -> MeanAveragePrecision:
        """Add ``other``'s images after this metric's: ``compute()`` then equals, bit for bit, one metric
        that saw this metric's batches and then ``other``'s. Returns ``self``."""

        absorb_state(self, other.state_dict())
        return self

    def sync(self, group: Any = None) -> MeanAveragePrecision:
        """Gather the state of every ``torch.distributed`` rank (``all_gather_object``) and merge them in rank
        order, so every rank then computes the result of all ranks' images. Without torch or an initialised
        process group, nothing changes. Call it once per evaluation, before ``compute()``. Returns ``self``."""

        states = gather_states(self.state_dict(), group)
        if len(states) > 1:
            self.reset()
            for state in states:
                absorb_state(self, state)
        return self

    def _compute_voc(self) -> tuple[EvalResult, np.ndarray, tuple[str, ...]]:
        g_lab = self._gt.concat("labels", np.int64)
        p_lab = self._pred.concat("labels", np.int64)
        ids = np.unique(np.concatenate((g_lab, p_lab)))
        names = tuple(self.class_names.get(int(k), str(int(k))) for k in ids)
        if len(set(names)) != len(names):
            raise ConfigError("class_names maps two labels to the same name")
        g_img, p_img = self._gt.concat("image", np.int64), self._pred.concat("image", np.int64)
        images = tuple(str(i) for i in range(self._n_images))
        g_order, p_order = np.arange(g_img.shape[0]), np.arange(p_img.shape[0])
        if self._ids:
            # ascending image id: detections of equal score rank in that order (a stable sort keeps it)
            img_ids = np.asarray(self._ids, dtype=np.int64)
            rank = np.empty(img_ids.shape[0], dtype=np.int64)
            rank[np.argsort(img_ids, kind="stable")] = np.arange(img_ids.shape[0])
            g_img, p_img = rank[g_img], rank[p_img]
            g_order, p_order = np.argsort(g_img, kind="stable"), np.argsort(p_img, kind="stable")
            images = tuple(str(i) for i in np.sort(img_ids).tolist())
        gt = VOCGroundTruth.from_arrays(
            g_img[g_order],
            np.searchsorted(ids, g_lab)[g_order],
            convert_boxes(self._gt.concat("boxes", np.float64, (4,)), self.box_format, "xyxy")[g_order],
            self._gt.concat("difficult", np.int64).astype(bool)[g_order],
            images=images,
            classes=names,
        )
        dets = VOCDetections.from_arrays(
            p_img[p_order],
            np.searchsorted(ids, p_lab)[p_order],
            convert_boxes(self._pred.concat("boxes", np.float64, (4,)), self.box_format, "xyxy")[p_order],
            self._pred.concat("scores", np.float64)[p_order],
            images=images,
            classes=names,
        )
        return evaluate_voc(gt, dets, **self.options), ids, names

    def _compute_coco(self, iou_type: str) -> Any:
        if iou_type == "bbox":
            assert self._stream is not None
            return self._stream.compute()

        labels = sorted({a["category_id"] for a in self._anns} | {d["category_id"] for d in self._dets})
        gt = {
            "images": self._images,
            "annotations": self._anns,
            "categories": [{"id": k, "name": self.class_names.get(k, str(k))} for k in labels],
        }
        params = self._params(iou_type)
        return evaluate_coco(
            gt,
            list(self._dets),
            iou_type=iou_type,
            params=params,
            compat=self.options.get("compat", "pycocotools"),
        )
