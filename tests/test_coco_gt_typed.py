"""Ground-truth annotations decoded by type (:func:`deteval.io.coco.typed.gt_annotations`, for evaluations that
read no segmentation, and :func:`~deteval.io.coco.typed.gt_box_columns`, straight to the columns of a bbox
evaluation) give exactly what the ordinary path gives: every column of the loaded ground truth bit
for bit, or the same error message string for string. Each file is read in small pieces (the path large files
take, also the two-core child's head) with the typed decoder on and off, for bbox (no keypoints) and for
keypoints; the annotations are random, most of them valid, with hostile values, keys and bytes mixed in:
repeated keys at every depth, RLEs, polygons holding objects or key-like strings, true/false, null, NaN,
strings and whole floats as ids, integers at and beyond int64, missing and unknown fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deteval.errors import DetevalError
from deteval.io.coco import gt_head, load_coco_gt
from deteval.io.coco import gt_pieces as coco_gt_pieces
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import typed as coco_typed

pytest.importorskip("msgspec")

#: raw JSON texts that replace one field's value (``None``: the field is left out), by field
HOSTILE: dict[str, list[str | None]] = {
    "id": [None, '"7"', "7.0", "true", "null", str(2**63), str(2**63 - 1), "-9223372036854775808", "1e3"],
    "image_id": [None, '"2"', "2.0", "false", str(2**64 + 5), "999"],
    "category_id": [None, '"1"', "1.5", "null", "77"],
    "bbox": [
        None,
        "[1, 2, 3]",
        '[1, "2", 3, 4]',
        "[1, 2, -3, 4]",
        "[true, 2, 3, 4]",
        "[1e308, 2, 3, 4]",
        "[]",
    ],
    "area": [None, "-1", '"5"', "NaN", "Infinity", "1e400", str(2**70), "true"],
    "iscrowd": [None, "2", "true", "false", "1.0", "0.0", '"0"', "null"],
    "ignore": ["1", "true", "0.5", "null"],
    "num_keypoints": [None, "2.5", "-1", "true"],
    "keypoints": [None, "[1, 2, 3]", "[1, 2, 7, 4, 5, 1]", '[1, "a", 2]', "[NaN, 1, 1]"],
    "segmentation": [
        None,
        '{"counts": [0, 5], "size": [5, 1]}',
        '{"counts": "0\\":1", "size": [5, 1], "counts": [1]}',
        '{"size": [5, 1], "size": [5, 1]}',
        "[[1, 2, 3, 4, 5, 6]]",
        '[[1, 2, {"a": 1, "a": 2}, 4, 5, 6]]',
        '[[1, 2, {"a": 1}, 4, 5, 6]]',
        '["key\\": inside a string"]',
        '{"counts": {"x": {"y": 1, "y": 2}}, "size": [5, 1]}',
        "5",
        "null",
    ],
    "extra": ['"unknown field"'],
}


def _annotation(rng: np.random.Generator, k: int, keypoints: bool) -> dict[str, str]:
    """One valid annotation as raw JSON values by field."""
    x, y, w, h = (float(v) for v in np.round(rng.uniform(0, 100, 4), 2))
    fields = {
        "id": str(k + 1),
        "image_id": str(int(rng.choice([1, 2, 3]))),
        "category_id": str(int(rng.choice([1, 2]))),
        "bbox": json.dumps([x, y, w, h] if rng.random() < 0.8 else [int(x), int(y), int(w), int(h)]),
        "area": json.dumps(round(w * h, 3)),
        "iscrowd": "0" if rng.random() < 0.9 else "1",
        "segmentation": json.dumps([[x, y, x + w, y, x + w, y + h]]),
    }
    if keypoints:
        kp = [
            v for _ in range(2) for v in (round(float(rng.uniform(0, 50)), 1), 10.0, int(rng.integers(0, 3)))
        ]
        fields["keypoints"] = json.dumps(kp)
        fields["num_keypoints"] = str(sum(1 for v in kp[2::3] if v > 0))
    return fields


def _document(seed: int, keypoints: bool) -> str:
    rng = np.random.default_rng(seed)
    anns = [_annotation(rng, k, keypoints) for k in range(int(rng.integers(20, 60)))]
    for _ in range(int(rng.choice([0, 0, 1, 2]))):  # hostile values in a few records
        rec = anns[int(rng.integers(0, len(anns)))]
        field = str(rng.choice(list(HOSTILE)))
        value = HOSTILE[field][int(rng.integers(0, len(HOSTILE[field])))]
        if value is None:
            rec.pop(field, None)
        else:
            rec[field] = value
    texts = []
    colon = ": " if seed % 3 else " :\n  "  # (key tokens with blanks before the colon are counted too)
    for rec in anns:
        items = [f'"{k}"{colon}{v}' for k, v in rec.items()]
        if rng.random() < 0.003:  # a repeated key in the record itself
            items.append(items[int(rng.integers(0, len(items)))])
        texts.append("{" + ", ".join(items) + "}")
    categories = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    if keypoints:
        for c in categories:
            c["keypoints"] = ["p", "q"]
    head = json.dumps({"images": [{"id": i, "width": 100, "height": 100} for i in (1, 2, 3)]})[:-1]
    return head + ', "annotations": [' + ", ".join(texts) + "], " + json.dumps({"categories": categories})[1:]


def _load(path: Path, keypoints: bool, typed: bool | str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The loaded ground truth (or the error's text); ``typed``: "records" leaves out only the box columns."""
    with monkeypatch.context() as m:
        m.setattr(coco_pieces, "CHUNK_BYTES", 700)  # several pieces, the path of a large file
        m.setattr(
            coco_gt_pieces, "KEYPOINT_GT_TYPED", True
        )  # (keypoints: the typed decoder is off by default)
        if typed is not True:
            m.setattr(coco_typed, "_BOX_DECODER", None)
        if not typed:
            m.setattr(coco_typed, "_GT_DECODER", None)
        try:
            return load_coco_gt(path, need_keypoints=keypoints)
        except DetevalError as exc:
            return str(exc)


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b), (a, b)
    if isinstance(a, str):
        assert a == b
        return
    for name in ("image_ids", "cat_ids", "ann_id", "img", "cat", "bbox", "area", "iscrowd", "ignore"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), name
    assert np.array_equal(a.num_keypoints, b.num_keypoints)
    assert (a.keypoints is None) == (b.keypoints is None)
    if a.keypoints is not None:
        assert np.array_equal(a.keypoints, b.keypoints, equal_nan=True)


@pytest.mark.slow
@pytest.mark.parametrize("keypoints", [False, True])
def test_typed_ground_truth_pieces_equal_the_ordinary_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keypoints: bool
) -> None:
    used = {"records": 0, "boxes": 0}
    real, real_boxes = coco_typed.gt_annotations, coco_typed.gt_box_columns

    def counting(text: bytes) -> Any:
        out = real(text)
        used["records"] += out is not None
        return out

    def counting_boxes(text: bytes, crowd_optional: bool = False) -> Any:
        out = real_boxes(text, crowd_optional)
        used["boxes"] += out is not None
        return out

    monkeypatch.setattr(coco_gt_pieces, "gt_annotations", counting)
    monkeypatch.setattr(coco_gt_pieces, "gt_box_columns", counting_boxes)
    outcomes = {"loaded": 0, "refused": 0}
    for seed in range(120):
        path = tmp_path / f"gt{seed}.json"
        path.write_text(_document(seed, keypoints))
        typed = _load(path, keypoints, True, monkeypatch)
        plain = _load(path, keypoints, False, monkeypatch)
        _same(typed, plain)
        if not keypoints:  # the records' path for bbox too (where the box columns decline a piece)
            _same(_load(path, keypoints, "records", monkeypatch), plain)
        outcomes["refused" if isinstance(plain, str) else "loaded"] += 1
    assert outcomes["loaded"] > 30 and outcomes["refused"] > 10  # both kinds of outcome were compared
    # and the typed paths did the reading of most pieces (bbox: the box columns, then the records' path)
    assert used["records"] > 100
    assert used["boxes"] > 100 if not keypoints else used["boxes"] == 0


def test_typed_decoding_declines_what_it_cannot_vouch_for() -> None:
    """Texts the ordinary path reads differently or refuses are declined (None), valid ones accepted."""
    ok = b'[{"id": 1, "image_id": 2, "category_id": 3, "bbox": [1, 2, 3, 4], "area": 12, "iscrowd": 0}]'
    assert coco_typed.gt_annotations(ok) is not None
    rle = b'{"counts": [0, 5], "size": [5, 1]}'
    assert coco_typed.gt_annotations(ok[:-2] + b', "segmentation": ' + rle + b"}]") is not None
    for bad in (
        ok.replace(b'"area": 12', b'"area": 12, "area": 13'),  # a repeated key
        ok.replace(b'"iscrowd": 0', b'"iscrowd": true'),  # true/false
        ok.replace(b'"id": 1', b'"id": 1.0'),  # a whole float as an id
        ok.replace(b'"id": 1', b'"id": 9223372036854775808'),  # beyond int64
        ok.replace(b'"area": 12', b'"area": NaN'),
        ok.replace(b'"area": 12', b'"area": null'),
        ok.replace(b'"iscrowd": 0', b'"iscrowd": 0, "extra": 1'),  # an unknown field
        ok[:-2] + b', "segmentation": {"counts": [0], "counts": [5], "size": [5, 1]}}]',
        ok[:-2] + b', "segmentation": [[1, 2, {"a": 1}]]}]',  # a key the decoder does not see
        ok.replace(b'"image_id": 2', b'"image_id": "x\\": 2"'),  # a key token inside a string
        ok.replace(b'"area": 12', b'"area": 12, "\\u0061rea": 13'),  # a repeated key, escaped
        b"[]",
        b"[1, 2]",
        b'\xef\xbb\xbf[{"id": 1}]',
    ):
        assert coco_typed.gt_annotations(bad) is None, bad


def test_the_childs_head_reads_typed_pieces_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gt_head (a forked child's share of a large ground truth) gives the same columns either way."""
    path = tmp_path / "gt.json"
    path.write_text(_document(3, False))
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 700)
    typed = gt_head(path, 3000)
    monkeypatch.setattr(coco_typed, "_GT_DECODER", None)
    plain = gt_head(path, 3000)
    assert typed is not None and plain is not None and typed[1] == plain[1]
    for a, b in zip(typed[0], plain[0]):
        assert a.keys() == b.keys()
        for key, value in a.items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(value, b[key], equal_nan=True), key
            else:
                assert value == b[key], key


def test_box_columns_decline_what_they_cannot_vouch_for() -> None:
    """gt_box_columns accepts valid pieces (the columns the ordinary path gives) and declines (None) every text
    the ordinary path reads differently or refuses, and every value at or beyond its bounds."""
    ok = b'[{"id": 1, "image_id": 2, "category_id": 3, "bbox": [1, 2.5, 3, 4], "area": 12, "iscrowd": 0}]'
    cols = coco_typed.gt_box_columns(ok)
    assert cols is not None
    assert (
        cols["ann_id"].tolist() == [1]
        and cols["image_id"].tolist() == [2]
        and cols["category_id"].tolist() == [3]
    )
    assert cols["bbox"].tolist() == [[1.0, 2.5, 3.0, 4.0]] and cols["area"].tolist() == [12.0]
    assert cols["iscrowd"].tolist() == [False] and cols["ignore"].tolist() == [False]
    both = ok[:-2] + b', "ignore": 1, "segmentation": {"counts": [0, 5], "size": [5, 1]}}, ' + ok[1:]
    cols = coco_typed.gt_box_columns(both.replace(b'"iscrowd": 0}]', b'"iscrowd": 1.0}]'))
    assert (
        cols is not None and cols["ignore"].tolist() == [True, False] and cols["iscrowd"].tolist() == [0, 1]
    )
    no_crowd = ok.replace(b', "iscrowd": 0', b"")
    assert coco_typed.gt_box_columns(no_crowd) is None  # (the loader names the missing field)
    lvis = coco_typed.gt_box_columns(no_crowd, crowd_optional=True)
    assert lvis is not None and lvis["iscrowd"].tolist() == [False]
    for bad in (
        ok.replace(b'"area": 12', b'"area": 12, "area": 13'),  # a repeated key
        ok.replace(b'"iscrowd": 0', b'"iscrowd": 0, "ignore": 0, "ignore": 1'),
        ok.replace(b'"iscrowd": 0', b'"iscrowd": true'),  # true/false
        ok.replace(b'"iscrowd": 0', b'"iscrowd": 2'),
        ok.replace(b'"iscrowd": 0', b'"iscrowd": 0, "ignore": 0.5'),
        ok.replace(b'"id": 1', b'"id": 1.0'),  # a whole float as an id
        ok.replace(b'"image_id": 2', b'"image_id": "2"'),  # a string id (all strings: the ordinary path)
        ok.replace(b'"id": 1', b'"id": 9223372036854775808'),  # beyond int64
        ok.replace(b"[1, 2.5, 3, 4]", b"[1, 2.5, 3]"),
        ok.replace(b"[1, 2.5, 3, 4]", b"[1, 2.5, -3, 4]"),
        ok.replace(b"[1, 2.5, 3, 4]", b"[9007199254740992, 2.5, 3, 4]"),  # 2**53
        ok.replace(b"[1, 2.5, 3, 4]", b"[9007199254740993, 2.5, 3, 4]"),  # read as 2**53
        ok.replace(b"[1, 2.5, 3, 4]", b"[1e400, 2.5, 3, 4]"),
        ok.replace(b'"area": 12', b'"area": -1'),
        ok.replace(b'"area": 12', b'"area": 1e300'),
        ok.replace(b'"area": 12', b'"area": NaN'),
        ok.replace(b'"area": 12', b'"area": null'),
        ok.replace(b'"area": 12', b'"area": "12"'),
        ok.replace(b', "area": 12', b""),  # a required field missing
        ok.replace(b'"iscrowd": 0', b'"iscrowd": 0, "extra": 1'),  # an unknown field
        ok[:-2] + b', "segmentation": {"counts": [0], "counts": [5], "size": [5, 1]}}]',
        ok[:-2] + b', "segmentation": [[1, 2, {"a": 1}]]}]',  # a key the decoder does not see
        ok[:-2] + b', "keypoints": [{"a": 1}]}]',
        ok.replace(b'"area": 12', b'"area": 12, "\\u0061rea": 13'),  # a repeated key, escaped
        b"[]",
        b"[1, 2]",
        b"\xef\xbb\xbf" + ok,
    ):
        assert coco_typed.gt_box_columns(bad) is None, bad
