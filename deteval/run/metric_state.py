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

from deteval.errors import ConfigError, ValidationError
from deteval.io.guards import MAX_DECLARED_COUNT, bounded_count
from deteval.match.coco import MatchTable

__all__ = ["STATE_VERSION", "absorb_state", "check_state", "gather_states", "metric_state"]

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
    parts = [
        {
            **{f: getattr(table, f) for f in _TABLE_FIELDS},
            "n_cats": table.n_cats,
            "cat_ids": cats,
            "counts": dict(counts),
        }
        for table, cats, counts in (() if m._stream is None else m._stream._parts)
    ]
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


_WHERE = "<state_dict>"
_COUNTS = ("n_gt", "n_dt", "n_dt_evaluated")  # (what compute() sums over the parts)
_KEYS = (
    "deteval_state", "config", "n_images", "image_ids", "coco_tables", "voc_pred", "voc_gt", "images",
    "annotations", "detections",
)  # fmt: skip


def _bad(reason: str, record: str | None = None) -> ValidationError:
    return ValidationError(reason, file=_WHERE, record=record)


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _array(x: Any, kind: str, ndim: int, record: str) -> np.ndarray:
    """``x`` as a numpy array of ``kind`` ('i' integers, 'f' finite reals, 'b' booleans) and ``ndim``."""
    if not isinstance(x, np.ndarray) or x.ndim != ndim:
        raise _bad(f"must be a {ndim}-D numpy array", record)
    ok = {
        "i": x.dtype.kind in "iu",
        "f": x.dtype.kind in "iuf" and bool(np.isfinite(x).all()),
        "b": x.dtype.kind == "b",
    }[kind]
    if not ok:
        want = {"i": "integers", "f": "finite numbers", "b": "booleans"}[kind]
        raise _bad(f"must hold {want} (dtype {x.dtype})", record)
    return x


def _within(x: np.ndarray, lo: int, hi: int, record: str) -> None:
    if x.size and (int(x.min()) < lo or int(x.max()) >= hi):
        raise _bad(f"values must lie in [{lo}, {hi})", record)


def _check_table(part: Any, k: int, n: int) -> None:
    rec = f"coco_tables[{k}]"
    if not isinstance(part, Mapping):
        raise _bad("must be a mapping", rec)
    missing = [f for f in (*_TABLE_FIELDS, "n_cats", "cat_ids", "counts") if f not in part]
    if missing:
        raise _bad(f"lacks {', '.join(missing)}", rec)
    n_cats = part["n_cats"]
    if not _is_int(n_cats) or not 1 <= n_cats <= MAX_DECLARED_COUNT:
        raise _bad("n_cats must be a positive integer", rec)
    cat, img, rank = (_array(part[f], "i", 1, f"{rec}.{f}") for f in ("cat", "img", "rank"))
    score = _array(part["score"], "f", 1, f"{rec}.score")
    tp, ig = _array(part["tp"], "b", 3, f"{rec}.tp"), _array(part["ig"], "b", 3, f"{rec}.ig")
    npig = _array(part["npig"], "i", 2, f"{rec}.npig")
    rows = score.shape[0]
    if any(a.shape[0] != rows for a in (cat, img, rank)) or tp.shape != ig.shape or tp.shape[2] != rows:
        raise _bad("its columns have different lengths", rec)
    if npig.shape != (n_cats, tp.shape[0]) or (npig.size and int(npig.min()) < 0):
        raise _bad(f"npig must be {n_cats} x {tp.shape[0]} counts", rec)
    _within(cat, 0, n_cats, f"{rec}.cat")
    _within(img, 0, n, f"{rec}.img")
    _within(rank, 0, 2**62, f"{rec}.rank")
    cat_ids = np.asarray(part["cat_ids"])
    if cat_ids.shape != (n_cats,) or cat_ids.dtype.kind not in "iu":
        raise _bad(f"cat_ids must be {n_cats} integers", rec)
    counts = part["counts"]
    if not isinstance(counts, Mapping) or not all(
        isinstance(key, str) and _is_int(v) and v >= 0 for key, v in counts.items()
    ):
        raise _bad("counts must map names to non-negative integers", rec)
    lacking = [key for key in _COUNTS if key not in counts]
    if lacking:
        raise _bad(f"counts lack {', '.join(lacking)}", rec)


def _check_columns(cols: Any, name: str, n: int) -> None:
    keys = [k for k in _COLUMNS if name == "voc_pred" or k != "scores"]
    if not isinstance(cols, Mapping) or any(k not in cols for k in keys):
        raise _bad(f"must map {', '.join(keys)} to arrays", name)
    image = _array(cols["image"], "i", 1, f"{name}.image")
    boxes = _array(cols["boxes"], "f", 2, f"{name}.boxes")
    if boxes.shape[1:] != (4,):
        raise _bad("must be N x 4", f"{name}.boxes")
    labels = _array(cols["labels"], "i", 1, f"{name}.labels")
    difficult = _array(cols["difficult"], "i", 1, f"{name}.difficult")
    # (a prediction's difficult column is not used: empty)
    last = _array(cols["scores"], "f", 1, f"{name}.scores") if name == "voc_pred" else difficult
    if any(c.shape[0] != image.shape[0] for c in (boxes, labels, last)):
        raise _bad("its columns have different lengths", name)
    _within(image, 0, n, f"{name}.image")
    _within(difficult, 0, 2, f"{name}.difficult")


def _check_records(records: Any, name: str, keys: tuple[str, ...]) -> None:
    if not isinstance(records, list):
        raise _bad("must be a list", name)
    for k, r in enumerate(records):
        if not isinstance(r, Mapping) or not all(_is_int(r.get(key)) for key in keys):
            raise _bad(f"must be a mapping with integer {' and '.join(keys)}", f"{name}[{k}]")


def check_state(state: Any) -> None:
    """Refuse a state that :func:`metric_state` could not have written (a missing key, a column of the
    wrong length or type, an index out of range, a declared image count beyond
    :data:`~deteval.io.guards.MAX_DECLARED_COUNT`) with a :class:`~deteval.errors.ValidationError` naming the
    entry, before anything is sized or computed from it."""
    if not isinstance(state, Mapping) or state.get("deteval_state") != STATE_VERSION:
        raise ConfigError("not a MeanAveragePrecision state_dict of this deteval version")
    missing = [k for k in _KEYS if k not in state]
    if missing:
        raise _bad(f"the state lacks {', '.join(missing)}")
    n = state["n_images"]
    if not _is_int(n):
        raise _bad("must be an integer", "n_images")
    bounded_count(int(n), "n_images", _WHERE)
    ids = state["image_ids"]
    if not isinstance(ids, list) or not all(_is_int(i) for i in ids):
        raise _bad("must be a list of integers", "image_ids")
    if ids and (len(ids) != n or len(set(ids)) != len(ids)):
        raise _bad(f"must list {n} distinct image ids (or none)", "image_ids")
    if not isinstance(state["coco_tables"], list):
        raise _bad("must be a list", "coco_tables")
    for k, part in enumerate(state["coco_tables"]):
        _check_table(part, k, int(n))
    _check_columns(state["voc_pred"], "voc_pred", int(n))
    _check_columns(state["voc_gt"], "voc_gt", int(n))
    _check_records(state["images"], "images", ("id",))
    _check_records(state["annotations"], "annotations", ("image_id",))
    _check_records(state["detections"], "detections", ("image_id",))


def absorb_state(m: Any, state: Mapping[str, Any]) -> None:
    """Append ``state`` (of a metric with the same configuration) to ``m``: its images come after ``m``'s."""
    check_state(state)
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
