"""The annotation fields the COCO protocol reads, as columns (ids not yet mapped to the images and categories)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from deteval.errors import ValidationError, first_true
from deteval.io.coco.fields import field_values, finite_floats, id_array, non_negative, record_at, xywh_boxes
from deteval.io.coco.keypoints import keypoint_matrix, stack_keypoints


def ann_columns(
    anns: list,
    file: str,
    keep_segmentation: bool,
    need_keypoints: bool,
    kp_width: int | None = None,
    crowd_optional: bool = False,
    plain: bool = False,
    numbers: bool = False,
) -> dict[str, Any]:
    """The annotation fields the protocol reads, as arrays (ids not yet mapped to indices). ``kp_width``: the
    3K every record's keypoints must have (default: the first record's). ``crowd_optional``: a missing
    ``iscrowd`` means 0 (LVIS has no such field). ``plain``: read from a text without ``true``/``false``;
    ``numbers``: and without strings but the records' keys (:func:`~deteval.io.coco.json_text.only_key_strings`)."""
    where = "annotations"
    ann_id = id_array(field_values(anns, "id", file, where), "annotation id", file, where, strings=False)
    crowd_raw = field_values(anns, "iscrowd", file, where, **({"default": 0} if crowd_optional else {}))
    ign_raw = field_values(anns, "ignore", file, where, default=0)
    cols: dict[str, Any] = {
        "ann_id": ann_id,
        "image_id": id_array(field_values(anns, "image_id", file, where), "image_id", file, where),
        "category_id": id_array(field_values(anns, "category_id", file, where), "category_id", file, where),
        "bbox": xywh_boxes(field_values(anns, "bbox", file, where), file, where),
        "area": non_negative(field_values(anns, "area", file, where), "area", file, where),
        "iscrowd": finite_floats(crowd_raw, "iscrowd", file, where, flags=True) != 0,
        "ignore": finite_floats(ign_raw, "ignore", file, where, flags=True) != 0,
        "num_keypoints": np.full(len(anns), -1, dtype=np.int64),
        "keypoints": None,
        "segmentation": field_values(anns, "segmentation", file, where) if keep_segmentation else None,
    }
    if need_keypoints:
        nk_raw = field_values(anns, "num_keypoints", file, where)
        nk = non_negative(nk_raw, "num_keypoints", file, where)
        if (i := first_true((nk != np.round(nk)) | (nk > 2**31))) >= 0:
            raise ValidationError(
                f"num_keypoints must be a whole number, got {nk_raw[i]!r}",
                file=file,
                record=record_at(where, i),
            )
        cols["num_keypoints"] = nk.astype(np.int64)
        cols["keypoints"] = keypoint_matrix(
            field_values(anns, "keypoints", file, where),
            file,
            where,
            "keypoints",
            width=kp_width,
            gt=True,
            plain=plain,
            numbers=numbers,
        )
    return cols


def concat_columns(parts: list[dict[str, Any]]) -> dict[str, Any]:
    if len(parts) == 1:
        return parts[0]
    out: dict[str, Any] = {}
    for key in parts[0]:
        vals = [p[key] for p in parts]
        if vals[0] is None:
            out[key] = None
        elif isinstance(vals[0], list):
            out[key] = [v for part in vals for v in part]
        elif key == "keypoints":
            out[key] = stack_keypoints(vals)
        else:
            out[key] = np.concatenate(vals)
    return out


ANN_RECORD = re.compile(r"^annotations\[(\d+)\]$")
