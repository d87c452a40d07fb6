"""The COCO protocol as data: thresholds, recall sampling, area ranges, detection limits.

:class:`CocoParams` mirrors pycocotools' ``Params`` (``iouThrs``, ``recThrs``, ``maxDets``, ``areaRng`` with
``areaRngLbl``, ``useCats``, ``iouType``, ``kpt_oks_sigmas``) under snake_case names. Defaults are built with the
very expressions pycocotools uses (``np.linspace``; ``np.arange`` would put some thresholds one ulp off), so
the arrays are bit-identical. Presets live in ``configs/coco*.toml``; a threshold list there is either a
list of numbers or the string ``"linspace(start, stop, num)"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from deteval.errors import ConfigError

IOU_TYPES = ("bbox", "segm", "keypoints")

#: COCO's 17 person keypoint sigmas, computed exactly as pycocotools does.
COCO_KPT_OKS_SIGMAS = (
    np.array(
        [0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89]
    )
    / 10.0
)


def _linspace(start: float, stop: float, num: int) -> np.ndarray:
    return np.linspace(start, stop, num, endpoint=True)


def coco_iou_thresholds() -> np.ndarray:
    """``np.linspace(.5, .95, 10)``: pycocotools' IoU thresholds, bit for bit."""
    return _linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1)


def coco_recall_thresholds() -> np.ndarray:
    """``np.linspace(0, 1, 101)``: pycocotools' recall sampling points."""
    return _linspace(0.0, 1.0, int(np.round((1.00 - 0.0) / 0.01)) + 1)


_LINSPACE = re.compile(r"^\s*linspace\(\s*([^,]+),\s*([^,]+),\s*(\d+)\s*\)\s*$")
_RANGE = re.compile(r"^\s*([^:]+):([^:]+):(\d+)\s*$")


def parse_thresholds(value: Any, what: str) -> np.ndarray:
    """A threshold array from a list of numbers, ``"linspace(a, b, n)"``, ``"a:b:n"`` or ``"0.5,0.75"``."""
    if isinstance(value, (np.ndarray, list, tuple)):
        try:
            arr = np.asarray(value, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ConfigError(f"{what} must be numbers, got {value!r}") from None
    elif isinstance(value, (int, float)):
        arr = np.array([float(value)])
    elif isinstance(value, str):
        m = _LINSPACE.match(value) or _RANGE.match(value)
        try:
            if m:
                arr = _linspace(float(m.group(1)), float(m.group(2)), int(m.group(3)))
            else:
                arr = np.array([float(v) for v in value.split(",") if v.strip()])
        except ValueError:
            raise ConfigError(
                f"cannot read {what} from {value!r} (use 'linspace(0.5, 0.95, 10)', "
                f"'0.5:0.95:10' or '0.5,0.75')"
            ) from None
    else:
        raise ConfigError(f"cannot read {what} from {value!r}")
    if arr.size == 0 or not np.isfinite(arr).all():
        raise ConfigError(f"{what} must be a non-empty list of finite numbers, got {value!r}")
    return arr


@dataclass
class CocoParams:
    """Evaluation parameters (pycocotools name in brackets).

    * ``iou_type`` [iouType]: ``"bbox"``, ``"segm"`` or ``"keypoints"``.
    * ``iou_thrs`` [iouThrs]: T IoU (or OKS) thresholds; a detection matches at t if IoU >= min(t, 1 − 1e−10).
    * ``rec_thrs`` [recThrs]: R recall levels at which interpolated precision is sampled.
    * ``max_dets`` [maxDets]: M limits on detections per image *and category*, sorted ascending.
    * ``area_rng`` [areaRng] and ``area_lbl`` [areaRngLbl]: A closed ranges on the annotation ``area``.
    * ``use_cats`` [useCats]: False pools all categories (class-agnostic, as in proposal scoring).
    * ``kpt_oks_sigmas``: per-keypoint sigmas for OKS (COCO's 17 by default).
    * ``img_ids`` / ``cat_ids`` [imgIds, catIds]: restrict to these ids (None = all in the ground truth).
      With ``use_cats=False`` the order of ``cat_ids`` counts, as in pycocotools: the pooled lists run
      category by category in that order, which decides score and IoU ties.
    """

    iou_type: str = "bbox"
    iou_thrs: np.ndarray = field(default_factory=coco_iou_thresholds)
    rec_thrs: np.ndarray = field(default_factory=coco_recall_thresholds)
    max_dets: tuple[int, ...] = (1, 10, 100)
    area_rng: tuple[tuple[float, float], ...] = (
        (0**2, 1e5**2),
        (0**2, 32**2),
        (32**2, 96**2),
        (96**2, 1e5**2),
    )
    area_lbl: tuple[str, ...] = ("all", "small", "medium", "large")
    use_cats: bool = True
    kpt_oks_sigmas: np.ndarray = field(default_factory=lambda: COCO_KPT_OKS_SIGMAS.copy())
    img_ids: Sequence[Any] | None = None
    cat_ids: Sequence[Any] | None = None

    @classmethod
    def default(cls, iou_type: str = "bbox") -> CocoParams:
        """pycocotools' defaults for ``iou_type`` (keypoints: maxDets [20], areas all/medium/large)."""
        if iou_type not in IOU_TYPES:
            raise ConfigError(f"unknown iou_type {iou_type!r}: use one of {', '.join(IOU_TYPES)}")
        if iou_type == "keypoints":
            return cls(
                iou_type=iou_type,
                max_dets=(20,),
                area_rng=((0**2, 1e5**2), (32**2, 96**2), (96**2, 1e5**2)),
                area_lbl=("all", "medium", "large"),
            ).validated()
        return cls(iou_type=iou_type).validated()

    @classmethod
    def from_pycocotools(cls, p: Any) -> CocoParams:
        """Convert a ``pycocotools.cocoeval.Params``."""
        return cls(
            iou_type=p.iouType,
            iou_thrs=np.asarray(p.iouThrs, dtype=np.float64),
            rec_thrs=np.asarray(p.recThrs, dtype=np.float64),
            max_dets=tuple(int(m) for m in p.maxDets),
            area_rng=tuple((float(a), float(b)) for a, b in p.areaRng),
            area_lbl=tuple(p.areaRngLbl),
            use_cats=bool(p.useCats),
            kpt_oks_sigmas=np.asarray(getattr(p, "kpt_oks_sigmas", COCO_KPT_OKS_SIGMAS), dtype=np.float64),
            img_ids=list(p.imgIds) or None,
            cat_ids=list(p.catIds) or None,
        ).validated()

    @classmethod
    def from_options(cls, iou_type: str = "bbox", **options: Any) -> CocoParams:
        """Defaults for ``iou_type`` updated from preset/CLI style options (``iou_thrs="0.5:0.95:10"`` ...)."""
        p = cls.default(iou_type)
        changes: dict[str, Any] = {}
        for key, value in options.items():
            if value is None:
                continue
            key = key.replace("-", "_")
            if key in ("iou_thrs", "rec_thrs", "kpt_oks_sigmas"):
                changes[key] = parse_thresholds(value, key)
            elif key == "max_dets":
                vals = value.split(",") if isinstance(value, str) else value
                try:
                    changes[key] = tuple(
                        int(v) for v in (vals if isinstance(vals, (list, tuple)) else [vals])
                    )
                except (TypeError, ValueError):
                    raise ConfigError(f"max_dets must be integers, got {value!r}") from None
            elif key == "area_rng":
                changes[key] = _parse_area(value)
            elif key == "area_lbl":
                changes[key] = tuple(value.split(",") if isinstance(value, str) else value)
            elif key == "use_cats":
                changes[key] = bool(value)
            elif key in ("img_ids", "cat_ids"):
                changes[key] = list(value)
            else:
                raise ConfigError(f"unknown COCO parameter {key!r}")
        return replace(p, **changes).validated()

    def validated(self) -> CocoParams:
        """Check shapes and values; sort ``max_dets`` (pycocotools does). Returns ``self``."""
        if self.iou_type not in IOU_TYPES:
            raise ConfigError(f"unknown iou_type {self.iou_type!r}: use one of {', '.join(IOU_TYPES)}")
        self.iou_thrs = np.asarray(self.iou_thrs, dtype=np.float64).reshape(-1)
        self.rec_thrs = np.asarray(self.rec_thrs, dtype=np.float64).reshape(-1)
        self.kpt_oks_sigmas = np.asarray(self.kpt_oks_sigmas, dtype=np.float64).reshape(-1)
        for name in ("iou_thrs", "rec_thrs"):
            arr = getattr(self, name)
            if arr.size == 0 or not np.isfinite(arr).all():
                raise ConfigError(f"{name} must be a non-empty list of finite numbers")
        if not self.max_dets or any(int(m) < 1 for m in self.max_dets):
            raise ConfigError(f"max_dets must be positive integers, got {self.max_dets!r}")
        self.max_dets = tuple(sorted(int(m) for m in self.max_dets))
        self.area_rng = tuple((float(a), float(b)) for a, b in self.area_rng)
        self.area_lbl = tuple(str(x) for x in self.area_lbl)
        if not self.area_rng or len(self.area_rng) != len(self.area_lbl):
            raise ConfigError(f"{len(self.area_rng)} area ranges but {len(self.area_lbl)} labels")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "iou_type": self.iou_type,
            "iou_thrs": self.iou_thrs.tolist(),
            "rec_thrs_count": int(self.rec_thrs.size),
            "max_dets": list(self.max_dets),
            "area_rng": [list(a) for a in self.area_rng],
            "area_lbl": list(self.area_lbl),
            "use_cats": self.use_cats,
        }


def _parse_area(value: Any) -> tuple[tuple[float, float], ...]:
    text = isinstance(value, str)  # "0,1e10;0,1024"
    pairs = [part.split(",") for part in value.split(";") if part.strip()] if text else value
    try:
        # Unpacking into (a, b) refuses a range of one or three numbers here, not later as a traceback.
        return tuple((float(a), float(b)) for a, b in pairs)
    except (TypeError, ValueError):
        if text:
            raise ConfigError(f"cannot read area ranges from {value!r} (use 'lo,hi;lo,hi')") from None
        raise ConfigError(f"area ranges must be [lo, hi] pairs, got {value!r}") from None
