"""LVIS ground truth: COCO's columns plus the federated fields, as index arrays.

LVIS files are COCO files with three more things lvis-api reads (``lvis/eval.py``): per image
``neg_category_ids`` (categories verified absent) and ``not_exhaustive_category_ids`` (categories present but
not exhaustively annotated), and per category ``frequency`` (``"r"``, ``"c"`` or ``"f"``: in fewer than 10, 10
to 99, or 100 or more training images). Annotations carry no ``iscrowd``; an ``ignore`` flag is honoured.
The annotations are read by :func:`deteval.io.coco.load_coco_gt` (same validation, same columns).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from deteval.core.sorting import distinct
from deteval.errors import InputFormatError, ValidationError
from deteval.io.coco import CocoGroundTruth, load_coco_gt

__all__ = ["FREQUENCIES", "LvisGroundTruth", "load_lvis_gt"]

#: lvis-api's ``img_count_lbl``: rare, common, frequent (the order of APr, APc, APf).
FREQUENCIES = ("r", "c", "f")


@dataclass
class LvisGroundTruth:
    """:class:`CocoGroundTruth` plus the federated sets as sorted keys ``image_index * K + category_index``.

    ``neg`` / ``not_exhaustive``: the (image, category) pairs listed in ``neg_category_ids`` /
    ``not_exhaustive_category_ids``; ``frequency``: per category (sorted by id) 0, 1, 2 for r, c, f.
    """

    coco: CocoGroundTruth
    neg: np.ndarray
    not_exhaustive: np.ndarray
    frequency: np.ndarray
    warnings: list[str] = field(default_factory=list)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _pair_keys(g: CocoGroundTruth, key: str, file: str) -> tuple[np.ndarray, int]:
    """Sorted unique keys of the (image, category) pairs an image field lists; and how many listed ids are
    not categories of the file (they change nothing in lvis-api, which only tests membership)."""
    records = g.image_records or []
    K = int(g.cat_ids.shape[0])
    listed = _plain_lists(records, key)
    if listed is None:  # (record by record: names the first image at fault, or takes numpy integers)
        listed = _checked_lists(records, key, file)
    img_rows, cat_vals = listed
    if not cat_vals:
        return np.zeros(0, dtype=np.int64), 0
    rec_ids = np.asarray([records[i]["id"] for i in range(len(records))])
    img_idx = np.searchsorted(g.image_ids, rec_ids)[img_rows]
    cats = np.asarray(cat_vals, dtype=np.int64)
    pos = np.searchsorted(g.cat_ids, cats)
    known = (pos < K) & (g.cat_ids[np.minimum(pos, K - 1)] == cats) if K else np.zeros(cats.shape, bool)
    keys = distinct(img_idx[known].astype(np.int64) * K + pos[known])
    return keys, int((~known).sum())


def _plain_lists(records: list, key: str) -> tuple[np.ndarray, list[Any]] | None:
    """The image row and the id of every listed id, when every record is a dict whose ``key`` is a list of
    Python ints (a parsed file): a check of the types over all ids at once instead of one call per id; None
    otherwise (:func:`_checked_lists` then reads the records one by one)."""
    try:
        lists = [rec[key] for rec in records]
    except (KeyError, TypeError, IndexError):
        return None
    if lists and set(map(type, lists)) != {list}:
        return None
    cat_vals = list(chain.from_iterable(lists))
    if cat_vals and set(map(type, cat_vals)) != {int}:  # (a bool's type is bool)
        return None
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    return np.repeat(np.arange(len(lists), dtype=np.int64), lengths), cat_vals


def _checked_lists(records: list, key: str, file: str) -> tuple[np.ndarray, list[Any]]:
    """:func:`_plain_lists` record by record, raising at the first image whose ``key`` is missing or not a
    list of integers."""
    img_rows: list[int] = []
    cat_vals: list[Any] = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or key not in rec:
            raise InputFormatError(
                f"missing field {key!r} (an LVIS image lists it)", file=file, record=f"images[{i}]"
            )
        ids = rec[key]
        if not isinstance(ids, list) or not all(_is_int(c) for c in ids):
            raise ValidationError(
                f"{key} must be a list of category ids (integers), got {str(ids)[:60]}",
                file=file,
                record=f"images[{i}]",
            )
        img_rows.extend([i] * len(ids))
        cat_vals.extend(ids)
    return np.asarray(img_rows, dtype=np.int64), cat_vals


def load_lvis_gt(source: Any, *, keep_segmentation: bool = False, on_error: str = "raise") -> LvisGroundTruth:
    """Load an LVIS ground-truth file (path, parsed dict, or lvis-api ``LVIS`` object).

    Required beyond COCO's annotation fields (``iscrowd`` excepted): ``neg_category_ids`` and
    ``not_exhaustive_category_ids`` on every image, ``frequency`` (r, c or f) on every category, as lvis-api
    needs them. ``on_error="skip"`` applies to annotations as in :func:`~deteval.io.coco.load_coco_gt`.
    """
    if isinstance(source, LvisGroundTruth):
        return source
    if (
        not isinstance(source, (dict, str))
        and hasattr(source, "dataset")
        and isinstance(source.dataset, dict)
    ):
        source = source.dataset  # an lvis-api LVIS object
    g = load_coco_gt(source, keep_segmentation=keep_segmentation, on_error=on_error, crowd_optional=True)
    file = g.source
    freq = np.zeros(g.cat_ids.shape[0], dtype=np.int64)
    cats = g.category_records or []
    file_ids = np.asarray([c["id"] for c in cats]) if cats else np.zeros(0, np.int64)
    for i, c in enumerate(cats):
        f = c.get("frequency")
        if f not in FREQUENCIES:
            raise ValidationError(
                f"frequency must be one of 'r', 'c', 'f' (lvis-api's APr/APc/APf groups), got {f!r}",
                file=file,
                record=f"categories[{i}]",
            )
        freq[int(np.searchsorted(g.cat_ids, file_ids[i]))] = FREQUENCIES.index(f)
    neg, n_bad_neg = _pair_keys(g, "neg_category_ids", file)
    nel, n_bad_nel = _pair_keys(g, "not_exhaustive_category_ids", file)
    warnings = []
    if n_bad_neg or n_bad_nel:
        warnings.append(
            f"{n_bad_neg + n_bad_nel} ids in neg_category_ids/not_exhaustive_category_ids are not categories of "
            "the file; they change nothing (lvis-api only tests membership)"
        )
    return LvisGroundTruth(coco=g, neg=neg, not_exhaustive=nel, frequency=freq, warnings=warnings)
