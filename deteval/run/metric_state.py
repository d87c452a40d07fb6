"""The state of a :class:`~deteval.api.MeanAveragePrecision`: saved, restored, merged and gathered across
``torch.distributed`` ranks, exactly.

What is kept once a batch is seen: for COCO bbox the compact match tables of
:class:`~deteval.detection.coco.CocoStream` (per kept detection its category, image, score, rank and outcome
flags; no boxes); for VOC and COCO segm/keypoints the batch's columns or records (VOC's py-faster-rcnn profile
ranks a class with numpy's unstable sort over the whole class, so its matching cannot be done batch by batch).
Merging B into A is the state of one metric that saw A's batches, then B's: B's images are numbered after A's
(or keep their ``image_id``, which must then be given everywhere and never twice), so ``compute()`` is
bit-identical to that single metric.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from deteval.detection.coco_match import MatchTable
from deteval.errors import ConfigError, ValidationError

__all__ = ["STATE_VERSION", "absorb_state", "gather_states", "metric_state"]

STATE_VERSION = 1

_TABLE_FIELDS = ("cat", "img", "score", "rank", "tp", "ig", "npig")
_COLUMNS = ("image", "boxes", "labels", "scores", "difficult")


def _config(m: Any) -> dict[str, Any]:
    """What two metrics must share to be merged (their protocol and every option)."""
    return {
        "protocol": m.protocol,
        "box_format": m.box_format,
        "iou_types": list(m.iou_types),
        "options": repr(sorted(m.options.items())),
        "tm_params": repr(
            sorted((k, None if v is None else np.asarray(v).tolist()) for k, v in m._tm_params.items())
        ),
    }


def metric_state(m: Any) -> dict[str, Any]:
    """The metric's state as plain Python and numpy values (picklable, ``torch.save``-able)."""
    stream = m._stream
    parts = []
    if stream is not None:
        for table, cats, counts in stream._parts:
            parts.append(
                {
                    **{f: getattr(table, f) for f in _TABLE_FIELDS},
                    "n_cats": table.n_cats,
                    "cat_ids": cats,
                    "counts": dict(counts),
                }
            )
    return {
        "deteval_state": STATE_VERSION,
        "config": _config(m),
        "n_images": m._n_images,
        "image_ids": list(m._ids),
        "coco_tables": parts,
        "voc_pred": {
            k: m._pred.concat(
                k, np.float64 if k in ("boxes", "scores") else np.int64, (4,) if k == "boxes" else ()
            )
            for k in _COLUMNS
        },
        "voc_gt": {
            k: m._gt.concat(k, np.float64 if k == "boxes" else np.int64, (4,) if k == "boxes" else ())
            for k in _COLUMNS
            if k != "scores"
        },
        "images": list(m._images),
        "annotations": list(m._anns),
        "detections": list(m._dets),
    }


def absorb_state(m: Any, state: Mapping[str, Any]) -> None:
    """Append ``state`` (of a metric with the same configuration) to ``m``: its images come after ``m``'s."""
    if not isinstance(state, Mapping) or state.get("deteval_state") != STATE_VERSION:
        raise ConfigError("not a MeanAveragePrecision state_dict of this deteval version")
    if state["config"] != _config(m):
        raise ConfigError(
            f"cannot merge metrics of different configurations: {state['config']} vs {_config(m)}"
        )
    n = int(state["n_images"])
    if n == 0:
        return
    ids = [int(i) for i in state["image_ids"]]
    if m._n_images and bool(ids) != bool(m._ids):
        raise ValidationError("image_id must be given for every image or for none (in both metrics)")
    twice = set(ids) & set(m._ids)
    if twice:
        raise ValidationError(f"image_id {min(twice)} is in both metrics (each image must be passed once)")
    offset = m._n_images
    stream = m._stream
    if stream is not None:
        for part in state["coco_tables"]:
            table = MatchTable(**{f: part[f] for f in _TABLE_FIELDS}, n_cats=int(part["n_cats"]))
            table.img = table.img + offset
            stream._parts.append((table, part["cat_ids"], dict(part["counts"])))
        stream._image_ids.extend(ids)
        stream.n_images += n
    pred, gt = state["voc_pred"], state["voc_gt"]
    if pred["image"].size or gt["image"].size or m.protocol == "voc":
        for k in _COLUMNS:
            getattr(m._pred, k).append(pred[k] + offset if k == "image" else pred[k])
            if k != "scores":
                getattr(m._gt, k).append(gt[k] + offset if k == "image" else gt[k])
    # segm/keypoints records: without image ids an image's id is its arrival index
    shift = 0 if ids else offset
    for image in state["images"]:
        m._images.append({**image, "id": image["id"] + shift})
    for ann in state["annotations"]:
        m._anns.append({**ann, "id": len(m._anns) + 1, "image_id": ann["image_id"] + shift})
    for det in state["detections"]:
        m._dets.append({**det, "image_id": det["image_id"] + shift})
    m._ids.extend(ids)
    m._n_images += n


def gather_states(state: dict[str, Any], group: Any = None) -> list[dict[str, Any]]:
    """Every rank's state, in rank order (``torch.distributed.all_gather_object``); just ``[state]`` when
    torch is not installed or no process group is initialised. torch is imported only here."""
    try:
        dist = importlib.import_module("torch.distributed")  # torch is optional: no import at module level
    except ImportError:
        return [state]
    if not dist.is_available() or not dist.is_initialized():
        return [state]
    out: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(out, state, group=group)
    return out
