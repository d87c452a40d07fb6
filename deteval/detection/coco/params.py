"""The parameters of a COCO evaluation as given (a :class:`CocoParams`, pycocotools' ``Params`` or a dict),
resolved once, and the ids they select among the ground truth's (pycocotools' ``imgIds`` / ``catIds``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError

__all__ = ["COMPAT_MODES", "check_compat", "id_selection", "resolve_params"]

#: The compatibility profiles: pycocotools' behaviour, or its conventions with its quirks fixed.
COMPAT_MODES = ("pycocotools", "fixed")


def check_compat(compat: str) -> None:
    """Refuse a ``compat`` that is not one of :data:`COMPAT_MODES`."""
    if compat not in COMPAT_MODES:
        raise ConfigError(f"unknown compat {compat!r}: use one of {', '.join(COMPAT_MODES)}")


def resolve_params(params: CocoParams | Any | None, iou_type: str | None) -> CocoParams:
    """``params`` as a :class:`CocoParams`: the defaults of ``iou_type`` for None, else converted from a
    pycocotools ``Params`` or a dict of options."""
    if params is None:
        return CocoParams.default(iou_type or "bbox")
    if not isinstance(params, CocoParams):
        if hasattr(params, "iouThrs"):
            params = CocoParams.from_pycocotools(params)
        elif isinstance(params, Mapping):
            params = CocoParams.from_options(**{"iou_type": iou_type or "bbox", **params})
        else:
            raise ConfigError(
                f"params must be a CocoParams, a pycocotools Params or a dict, not {type(params).__name__}"
            )
    if iou_type is not None and iou_type != params.iou_type:
        params = replace(params, iou_type=iou_type)
    params = replace(params).validated()
    if (np.diff(params.rec_thrs) < 0).any():
        raise ConfigError("rec_thrs must be in ascending order")
    return params


def id_selection(ids: np.ndarray, wanted: Sequence[Any] | None, what: str) -> np.ndarray:
    """Indices (into sorted ``ids``) of the evaluated ids; all by default."""
    if wanted is None:
        return np.arange(ids.shape[0])
    w = np.unique(np.asarray(list(wanted)))
    if (
        w.size
        and ids.size
        and w.dtype.kind != ids.dtype.kind
        and not (w.dtype.kind in "iu" and ids.dtype.kind in "iu")
    ):
        raise ConfigError(f"{what} ids have the wrong type")
    pos = np.searchsorted(ids, w)
    bad = (
        (pos >= ids.shape[0]) | (ids[np.minimum(pos, max(ids.shape[0] - 1, 0))] != w)
        if ids.size
        else np.ones(w.shape, bool)
    )
    if bad.any():
        raise ConfigError(f"{what} id {w[np.flatnonzero(bad)[0]].item()!r} is not in the ground truth")
    return pos
