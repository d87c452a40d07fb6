"""The COCO protocol as data: thresholds, recall sampling, area ranges, detection limits.

:class:`CocoParams` mirrors pycocotools' ``Params`` (``iouThrs``, ``recThrs``, ``maxDets``, ``areaRng`` with
``areaRngLbl``, ``useCats``, ``iouType``, ``kpt_oks_sigmas``) under snake_case names. Defaults are built with the
very expressions pycocotools uses (``np.linspace``; ``np.arange`` would put some thresholds one ulp off), so
the arrays are bit-identical. Presets live in ``configs/coco*.toml``; a threshold list there is either a
list of numbers or the string ``"linspace(start, stop, num)"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any

import numpy as np

from deteval.core.levels import COCO_IOU_THRESHOLDS, COCO_RECALL_LEVELS
from deteval.detection.keypoint_sigmas import parse_sigmas_per_category
from deteval.errors import ConfigError, first_true
from deteval.match.boundary import BOUNDARY_PROFILES, DEFAULT_DILATION_RATIO
from deteval.syntax import parse_decimal, parse_integer

#: "obb": oriented boxes (rotated IoU, :mod:`deteval.detection.coco_obb`), otherwise bbox's parameters
IOU_TYPES = ("bbox", "segm", "keypoints", "boundary", "obb")

#: The IoU types scored on masks: their results are read as pycocotools' ``loadRes`` reads segm results.
MASK_TYPES = ("segm", "boundary")


def results_kind(iou_type: str) -> str:
    """The kind of results an evaluation of ``iou_type`` reads: ``"segm"`` for every mask type, else
    ``iou_type`` itself."""
    return "segm" if iou_type in MASK_TYPES else iou_type


#: COCO's 17 person keypoint sigmas in tenths, as the COCO tools write them (each tool divides by 10 its way).
COCO_KPT_OKS_TENTHS = (
    0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87, 0.89, 0.89,
)  # fmt: skip

#: COCO's 17 person keypoint sigmas, computed exactly as pycocotools does.
COCO_KPT_OKS_SIGMAS = np.array(COCO_KPT_OKS_TENTHS) / 10.0


def coco_iou_thresholds() -> np.ndarray:
    """A copy of :data:`~deteval.core.levels.COCO_IOU_THRESHOLDS` (``np.linspace(.5, .95, 10)``):
    pycocotools' IoU thresholds, bit for bit."""
    return COCO_IOU_THRESHOLDS.copy()


def coco_recall_thresholds() -> np.ndarray:
    """A copy of :data:`~deteval.core.levels.COCO_RECALL_LEVELS` (``np.linspace(0, 1, 101)``): pycocotools'
    recall sampling points."""
    return COCO_RECALL_LEVELS.copy()


_LINSPACE = re.compile(r"^\s*linspace\(\s*([^,]+),\s*([^,]+),\s*([^,)]+?)\s*\)\s*$")
_RANGE = re.compile(r"^\s*([^:]+):([^:]+):([^:]+)$")

#: Bounds on the protocol parameters (pycocotools' defaults in brackets). They keep every array the
#: evaluation allocates small: precision and scores hold T x R x K x A x M numbers (K = categories).
MAX_IOU_THRS = 100  # T [10]
MAX_REC_THRS = 10001  # R [101]
MAX_MAX_DETS = 16  # M [3]
MAX_AREA_RNG = 16  # A [4]
MAX_CELLS = 10**6  # T x R x A x M per category [12 120]
MAX_DET_LIMIT = 10**9  # the largest maxDets value
MAX_KEYPOINTS = 1000  # the number of OKS sigmas [17]


def _scalar(value: Any, what: str) -> float:
    """A number given as a number (not a bool) or a string in ASCII decimal notation."""
    if isinstance(value, str):
        try:
            return parse_decimal(value)
        except ValueError:
            raise ConfigError(f"{what}: {value.strip()[:40]!r} is not a number") from None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.integer, np.floating)):
        raise ConfigError(f"{what}: expected a number, got {value!r}"[:200])
    return float(value)


def _whole(value: Any, what: str) -> int:
    """A whole number given as an integer (not a bool, not 1.9) or a string of ASCII digits."""
    if isinstance(value, str):
        try:
            return parse_integer(value)
        except ValueError:
            raise ConfigError(f"{what}: {value.strip()[:40]!r} is not a whole number") from None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, np.integer)):
        raise ConfigError(f"{what}: expected a whole number, got {value!r}"[:200])
    return int(value)


def _items(value: Any, what: str) -> list[Any]:
    """The elements of a list option: a list/tuple/array, a single number, or a comma-separated string."""
    if isinstance(value, str):
        parts = value.split(",")
        if any(not p.strip() for p in parts):
            raise ConfigError(f"{what}: empty value in {value!r} (use 'a,b,c')")
        return parts
    if isinstance(value, np.ndarray):
        return list(value.reshape(-1))
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def parse_thresholds(value: Any, what: str, max_count: int = MAX_REC_THRS) -> np.ndarray:
    """A threshold array from a list of numbers, ``"linspace(a, b, n)"``, ``"a:b:n"`` or ``"0.5,0.75"``.

    The count of a ``linspace`` is checked against ``max_count`` before anything is allocated.
    """
    m = (_LINSPACE.match(value) or _RANGE.match(value)) if isinstance(value, str) else None
    if m:
        start, stop = _scalar(m.group(1), what), _scalar(m.group(2), what)
        num = _whole(m.group(3), what)
        if not (math.isfinite(start) and math.isfinite(stop)):
            raise ConfigError(f"{what}: the ends of {value!r} must be finite")
        if not 1 <= num <= max_count:
            raise ConfigError(f"{what}: {num} values requested in {value!r}; allowed: 1 to {max_count}")
        arr = np.linspace(start, stop, num, endpoint=True)
    else:
        items = _items(value, what)
        if len(items) > max_count:
            raise ConfigError(f"{what}: {len(items)} values; allowed: 1 to {max_count}")
        arr = np.array([_scalar(v, what) for v in items], dtype=np.float64)
    if arr.size == 0 or not np.isfinite(arr).all():
        raise ConfigError(f"{what} must be a non-empty list of finite numbers, got {value!r}"[:200])
    return arr


@dataclass
class CocoParams:
    """Evaluation parameters (pycocotools name in brackets).

    * ``iou_type`` [iouType]: ``"bbox"``, ``"segm"``, ``"keypoints"`` or ``"boundary"`` (Boundary IoU,
      Cheng et al. 2021: min(mask IoU, boundary IoU) against a regular ground truth, mask IoU against a crowd).
    * ``dilation_ratio`` (boundary only): the boundary's width as a share of the image diagonal (0.02).
    * ``boundary_profile`` (boundary only): whose rounding of ``dilation_ratio · diagonal`` to pixels
      (:data:`~deteval.match.boundary.BOUNDARY_PROFILES`; ``"boundary-iou-api"`` by default).
    * ``iou_thrs`` [iouThrs]: T IoU (or OKS) thresholds; a detection matches at t if IoU >= min(t, 1 − 1e−10).
    * ``rec_thrs`` [recThrs]: R recall levels at which interpolated precision is sampled.
    * ``max_dets`` [maxDets]: M limits on detections per image *and category*, sorted ascending.
    * ``area_rng`` [areaRng] and ``area_lbl`` [areaRngLbl]: A closed ranges on the annotation ``area``.
    * ``use_cats`` [useCats]: False pools all categories (class-agnostic, as in proposal scoring).
    * ``kpt_oks_sigmas``: per-keypoint sigmas for OKS (COCO's 17 by default).
    * ``kpt_oks_sigmas_per_category``: ``{category_id: sigmas}`` for categories with sigmas of their own (before
      a category record's ``"sigmas"`` and ``kpt_oks_sigmas``: :mod:`deteval.detection.keypoint_sigmas`).
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
    kpt_oks_sigmas_per_category: dict[Any, np.ndarray] | None = None
    img_ids: Sequence[Any] | None = None
    cat_ids: Sequence[Any] | None = None
    dilation_ratio: float = DEFAULT_DILATION_RATIO
    boundary_profile: str = next(iter(BOUNDARY_PROFILES))

    @classmethod
    def default(cls, iou_type: str = "bbox") -> CocoParams:
        """pycocotools' defaults for ``iou_type`` (keypoints: maxDets [20], areas all/medium/large)."""
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
            changes[key] = list(value) if key in ("img_ids", "cat_ids") else parse_option(key, value)
        return replace(p, **changes).validated()

    def validated(self) -> CocoParams:
        """Check types, bounds and shapes (see :func:`check_field`); sort ``max_dets`` (pycocotools does).

        Returns ``self``.
        """
        if self.iou_type not in IOU_TYPES:
            raise ConfigError(f"unknown iou_type {self.iou_type!r}: use one of {', '.join(IOU_TYPES)}")
        self.dilation_ratio = check_dilation_ratio(self.dilation_ratio)
        if self.boundary_profile not in BOUNDARY_PROFILES:
            raise ConfigError(
                f"unknown boundary_profile {self.boundary_profile!r}: use one of {', '.join(BOUNDARY_PROFILES)}"
            )
        for name in FIELDS:
            setattr(self, name, check_field(name, getattr(self, name)))
        if len(self.area_rng) != len(self.area_lbl):
            raise ConfigError(f"{len(self.area_rng)} area ranges but {len(self.area_lbl)} labels")
        cells = self.iou_thrs.size * self.rec_thrs.size * len(self.area_rng) * len(self.max_dets)
        if cells > MAX_CELLS:
            raise ConfigError(
                f"{self.iou_thrs.size} IoU thresholds x {self.rec_thrs.size} recall levels x "
                f"{len(self.area_rng)} area ranges x {len(self.max_dets)} maxDets = {cells} precision values "
                f"per category, above the limit of {MAX_CELLS}"
            )
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
            **(
                {"dilation_ratio": self.dilation_ratio, "boundary_profile": self.boundary_profile}
                if self.iou_type == "boundary"
                else {}
            ),
            **(
                {}
                if self.kpt_oks_sigmas_per_category is None
                else {
                    "kpt_oks_sigmas_per_category": {
                        str(k): v.tolist() for k, v in self.kpt_oks_sigmas_per_category.items()
                    }
                }
            ),
        }


#: The parameters :func:`parse_option` reads and :func:`check_field` checks.
FIELDS: tuple[str, ...] = (
    "iou_thrs",
    "rec_thrs",
    "max_dets",
    "area_rng",
    "area_lbl",
    "use_cats",
    "kpt_oks_sigmas",
    "kpt_oks_sigmas_per_category",
)
_COUNT_LIMITS = {"iou_thrs": MAX_IOU_THRS, "rec_thrs": MAX_REC_THRS, "kpt_oks_sigmas": MAX_KEYPOINTS}


def parse_option(key: str, value: Any) -> Any:
    """One parameter from its preset or command-line form: a list, a number or a string such as
    ``"0.5:0.95:10"``, ``"1,10,100"``, ``"0,1e10;0,1024"``. Types are strict (``true`` is not 1, ``1.9`` not
    a maxDets value, ``"false"`` not a bool); bounds are :func:`check_field`'s. Raises ConfigError."""
    if key in _COUNT_LIMITS:
        return check_field(key, parse_thresholds(value, key, _COUNT_LIMITS[key]))
    if key == "max_dets":
        items = _items(value, key)
        if len(items) > MAX_MAX_DETS:
            raise ConfigError(f"max_dets: {len(items)} values; allowed: 1 to {MAX_MAX_DETS}")
        return check_field(key, tuple(_whole(v, key) for v in items))
    if key == "area_rng":
        return check_field(key, _parse_area(value))
    if key == "area_lbl":
        labels = _items(value, key)
        if not all(isinstance(v, str) for v in labels):
            raise ConfigError(f"area_lbl must be strings, got {value!r}"[:200])
        return check_field(key, tuple(v.strip() for v in labels))
    if key == "use_cats":
        return check_field(key, value)
    if key == "kpt_oks_sigmas_per_category":
        return parse_sigmas_per_category(value, key)
    if key == "dilation_ratio":
        return check_dilation_ratio(_scalar(value, key))
    if key == "boundary_profile":
        return value
    raise ConfigError(f"unknown COCO parameter {key!r}")


#: The largest dilation ratio accepted: the boundary is then every pixel of the mask.
MAX_DILATION_RATIO = 1.0


def check_dilation_ratio(value: Any) -> float:
    """A dilation ratio: a real number from 0 to :data:`MAX_DILATION_RATIO` (not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.floating, np.integer)):
        raise ConfigError(f"dilation_ratio must be a number, got {value!r}"[:200])
    ratio = float(value)
    if not 0 <= ratio <= MAX_DILATION_RATIO:
        raise ConfigError(f"dilation_ratio must be from 0 to {MAX_DILATION_RATIO}, got {value!r}")
    return ratio


def check_field(name: str, value: Any) -> Any:
    """The bounds of one parameter (pycocotools' values in the comments of the ``MAX_*`` constants):

    * 1 to ``MAX_IOU_THRS`` IoU thresholds in [0, 1];
    * 1 to ``MAX_REC_THRS`` recall levels in [-1, 2] (outside [0, 1] pycocotools' sampling rule applies:
      below 0 as 0, above 1 never reached);
    * 1 to ``MAX_MAX_DETS`` whole maxDets from 1 to ``MAX_DET_LIMIT`` (sorted; a repeated value is kept);
    * 1 to ``MAX_AREA_RNG`` finite area ranges with 0 <= lo <= hi, and distinct non-empty labels;
    * 1 to ``MAX_KEYPOINTS`` OKS sigmas, finite and > 0; ``use_cats`` a bool.

    Returns the normalised value.
    """
    if name in _COUNT_LIMITS:
        limit = _COUNT_LIMITS[name]
        try:
            arr = np.asarray(value, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be numbers, got {value!r}"[:200]) from None
        if arr.size == 0 or arr.size > limit or not np.isfinite(arr).all():
            raise ConfigError(f"{name} must be 1 to {limit} finite numbers ({arr.size} given)")
        if name == "rec_thrs" and ((arr < -1) | (arr > 2)).any():
            # Outside [0, 1] pycocotools' rule already saturates (below 0: as 0; above 1: never reached).
            raise ConfigError(f"rec_thrs must be from -1 to 2, got {float(arr[(arr < -1) | (arr > 2)][0])!r}")
        if name == "iou_thrs" and ((arr < 0) | (arr > 1)).any():
            raise ConfigError(f"iou_thrs must be from 0 to 1, got {float(arr[(arr < 0) | (arr > 1)][0])!r}")
        if name == "kpt_oks_sigmas" and (k := first_true(arr <= 0)) >= 0:
            raise ConfigError(
                f"kpt_oks_sigmas must be positive (OKS divides by them), got {float(arr[k])!r} for keypoint {k}"
            )
        return arr
    if name == "max_dets":
        dets = tuple(value)
        if not dets or len(dets) > MAX_MAX_DETS:
            raise ConfigError(f"max_dets: {len(dets)} values; allowed: 1 to {MAX_MAX_DETS}")
        for m in dets:
            if isinstance(m, (bool, np.bool_)) or not isinstance(m, (Integral, np.integer)):
                raise ConfigError(f"max_dets must be whole numbers, got {m!r}")
            if not 1 <= int(m) <= MAX_DET_LIMIT:
                raise ConfigError(f"max_dets must be from 1 to {MAX_DET_LIMIT}, got {m!r}")
        # a repeated value is kept, as pycocotools keeps it: its column is computed once per listing
        return tuple(sorted(int(m) for m in dets))
    if name == "area_rng":
        try:
            rng = tuple((float(lo), float(hi)) for lo, hi in value)
        except (TypeError, ValueError):
            raise ConfigError(f"area_rng must be [lo, hi] pairs, got {value!r}"[:200]) from None
        if not rng or len(rng) > MAX_AREA_RNG:
            raise ConfigError(f"area_rng: {len(rng)} ranges; allowed: 1 to {MAX_AREA_RNG}")
        for lo, hi in rng:
            if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi):
                raise ConfigError(
                    f"area_rng: [{lo!r}, {hi!r}] must be finite with 0 <= lo <= hi (use 1e10 for no upper bound)"
                )
        return rng
    if name == "area_lbl":
        labels = tuple(str(x) for x in value)
        if not labels or any(not lbl for lbl in labels) or len(set(labels)) != len(labels):
            raise ConfigError(f"area_lbl must be distinct, non-empty labels, got {list(labels)}"[:200])
        return labels
    if name == "use_cats":
        if not isinstance(value, (bool, np.bool_)):
            raise ConfigError(f"use_cats must be true or false, got {value!r}"[:200])
        return bool(value)
    if name == "kpt_oks_sigmas_per_category":
        return None if value is None else parse_sigmas_per_category(value, name)
    raise ConfigError(f"unknown COCO parameter {name!r}")


def _parse_area(value: Any) -> tuple[tuple[float, float], ...]:
    """Area ranges from ``"lo,hi;lo,hi"`` or a list of ``[lo, hi]`` pairs; each range exactly two numbers."""
    if isinstance(value, str):
        parts = value.split(";")
        if any(not p.strip() for p in parts):
            raise ConfigError(f"area_rng: empty range in {value!r} (use 'lo,hi;lo,hi')")
        pairs: list[Any] = [p.split(",") for p in parts]
    elif isinstance(value, (list, tuple, np.ndarray)):
        pairs = list(value)
    else:
        raise ConfigError(f"area_rng must be [lo, hi] pairs or 'lo,hi;lo,hi', got {value!r}"[:200])
    if len(pairs) > MAX_AREA_RNG:
        raise ConfigError(f"area_rng: {len(pairs)} ranges; allowed: 1 to {MAX_AREA_RNG}")
    out = []
    for pair in pairs:
        if isinstance(pair, str) or not isinstance(pair, (list, tuple, np.ndarray)) or len(pair) != 2:
            raise ConfigError(f"area_rng: each range must be two numbers lo,hi, got {pair!r}"[:200])
        out.append((_scalar(pair[0], "area_rng"), _scalar(pair[1], "area_rng")))
    return tuple(out)
