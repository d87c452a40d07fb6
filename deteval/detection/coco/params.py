"""The parameters of a COCO evaluation as given (a :class:`CocoParams`, pycocotools' ``Params`` or a dict),
resolved once, and the ids they select among the ground truth's (pycocotools' ``imgIds`` / ``catIds``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from deteval.detection.coco_params import CocoParams
from deteval.errors import ConfigError
from deteval.io.coco import CocoGroundTruth

__all__ = ["COMPAT_MODES", "check_compat", "id_selection", "resolve_params", "unknown_id_notes"]

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
    """Indices (into sorted ``ids``) of the evaluated ids; all by default. Wanted ids that ``ids`` lacks
    select nothing, as in pycocotools (:func:`unknown_id_notes` warns of them, or refuses them under
    ``compat="fixed"``)."""
    if wanted is None:
        return np.arange(ids.shape[0])
    w, known = _known(ids, wanted, what)
    return np.searchsorted(ids, w[known])


def selected_positions(sel: np.ndarray, n: int) -> np.ndarray:
    """(n,) each of ``n`` items' position among the selected ones ``sel`` (their indices), -1 where not
    selected: the map from an index among all ids to one among the evaluated ids (:func:`id_selection`)."""
    positions = np.full(n, -1, dtype=np.int64)
    positions[sel] = np.arange(sel.shape[0])
    return positions


def _known(ids: np.ndarray, wanted: Sequence[Any], what: str) -> tuple[np.ndarray, np.ndarray]:
    """The distinct wanted ids (ascending) and which of them are in sorted ``ids``."""
    w = np.unique(np.asarray(list(wanted)))
    if (
        w.size
        and ids.size
        and w.dtype.kind != ids.dtype.kind
        and not (w.dtype.kind in "iu" and ids.dtype.kind in "iu")
    ):
        raise ConfigError(f"{what} ids have the wrong type")
    if not ids.size:
        return w, np.zeros(w.shape, bool)
    pos = np.minimum(np.searchsorted(ids, w), ids.shape[0] - 1)
    return w, ids[pos] == w


def unknown_id_notes(gt: CocoGroundTruth, params: CocoParams, compat: str) -> list[str]:
    """Warnings for ``img_ids`` / ``cat_ids`` that name ids the ground truth lacks.

    pycocotools evaluates them (an unknown category has no ground truth, so its precision is -1 and it is left
    out of every mean; an unknown image has nothing to match), so its numbers are those of the known ids alone:
    under ``compat="pycocotools"`` they are ignored with this warning. Under ``compat="fixed"`` they are
    refused (ConfigError), since a misspelt id is more likely than a deliberate one.
    """
    notes = []
    for what, ids, wanted in (
        ("image", gt.image_ids, params.img_ids),
        ("category", gt.cat_ids, params.cat_ids),
    ):
        if wanted is None:
            continue
        w, known = _known(ids, wanted, what)
        lost = w[~known].tolist()
        if not lost:
            continue
        if compat == "fixed":
            raise ConfigError(f"{what} id {lost[0]!r} is not in the ground truth")
        shown = ", ".join(repr(v) for v in lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        notes.append(
            f"{len(lost)} {what} id{'s' if len(lost) > 1 else ''} not in the ground truth ignored ({shown}): "
            "pycocotools evaluates them to nothing (compat='fixed' refuses them)"
        )
    return notes
