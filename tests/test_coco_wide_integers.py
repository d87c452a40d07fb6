"""Integers beyond int64 and uint64 (``2**64 + 1``, ``-2**63 - 1``) in a ground truth: orjson reads them from a
file as the nearest float, Python's ``json`` and a dict given in memory keep them as written. A ground-truth file
is refused with the error the same ground truth gets as a dict (type, record, reason; the file named), whether
the file is read whole or in pieces (typed decoding on or off), and an ``area`` written so is refused from a
file too (it was read as a float and accepted)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import test_coco_two_cores as two_cores
from test_coco_two_cores import small_thresholds  # noqa: F401  (a fixture)

from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError
from deteval.io.coco import ground_truth as coco_gt
from deteval.io.coco import json_text as coco_json
from deteval.io.coco import load_coco_gt, load_coco_results, wide_integers
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import results as coco_results
from deteval.io.coco import typed as coco_typed

WIDE = [2**64 + 1, -(2**63) - 1, 5 * 10**19, 10**25 + 7]


def _gt(n: int = 40) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    anns = []
    for i in range(n):
        x, y = (float(v) for v in np.round(rng.uniform(0, 50, 2), 2))
        anns.append(
            {
                "id": i + 1,
                "image_id": int(rng.integers(1, 4)),
                "category_id": 1,
                "bbox": [x, y, 20.0, 10.0],
                "area": 150.5,
                "iscrowd": 0,
                "num_keypoints": 1,
                "keypoints": [x + 1, y + 1, 2, 0, 0, 0],
                "segmentation": [[x, y, x + 20, y, x + 20, y + 10]],
            }
        )
    return {
        "images": [{"id": i, "height": 100, "width": 100} for i in (1, 2, 3)],
        "categories": [{"id": 1, "name": "p", "keypoints": ["a", "b"]}],
        "annotations": anns,
    }


def _damaged(field: str, value: int, j: int) -> dict[str, Any]:
    gt = _gt()
    if field.startswith("images."):
        gt["images"][1][field[7:]] = value
    elif field == "bbox":
        gt["annotations"][j]["bbox"][2] = value
    elif field == "keypoints":
        gt["annotations"][j]["keypoints"][3] = value
    else:
        gt["annotations"][j][field] = value
    return gt


def _outcome(source: Any, *, keypoints: bool, segm: bool) -> Any:
    try:
        g = load_coco_gt(source, need_keypoints=keypoints, keep_segmentation=segm)
    except DetevalError as exc:
        return type(exc), exc.record, exc.reason, exc.file
    return g


FIELDS = [
    "bbox",
    "area",
    "keypoints",
    "num_keypoints",
    "iscrowd",
    "id",
    "image_id",
    "images.id",
    "images.height",
]


@pytest.mark.fast_cases(field=1)
@pytest.mark.parametrize("pieces", [False, True, "typed"])
@pytest.mark.parametrize("field", FIELDS)
def test_a_wide_integer_is_refused_from_a_file_as_from_a_dict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str, pieces: bool | str
) -> None:
    if pieces:
        monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 700)  # several pieces, the path of a large file
        if pieces != "typed":
            monkeypatch.setattr(coco_typed, "_BOX_DECODER", None)
            monkeypatch.setattr(coco_typed, "_GT_DECODER", None)
    keypoints = field in ("keypoints", "num_keypoints")
    segm = field == "images.height"
    path = tmp_path / "gt.json"
    for value in WIDE:
        for j in (0, 21, 39):
            gt = _damaged(field, value, j)
            path.write_text(json.dumps(gt))
            given = _outcome(copy.deepcopy(gt), keypoints=keypoints, segm=segm)
            read = _outcome(path, keypoints=keypoints, segm=segm)
            assert isinstance(given, tuple), (field, value)  # (refused)
            assert given[:3] == read[:3], (field, value, j, given, read)
            assert given[3] == "<in-memory ground truth>" and read[3] == str(path)
            assert str(abs(value)) in given[2] or "2**64" in given[2] or field == "images.id", given


def test_the_errors_name_the_integer_as_written(tmp_path: Path) -> None:
    """The value a message shows is the integer written, not the float orjson made of it."""
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(_damaged("keypoints", 2**64 + 1, 5)))
    with pytest.raises(DetevalError) as exc:
        load_coco_gt(path, need_keypoints=True)
    assert exc.value.record == "annotations[5]" and exc.value.file == str(path)
    assert "18446744073709551617" in exc.value.reason and "beyond \u00b12**53" in exc.value.reason
    path.write_text(json.dumps(_damaged("bbox", -(2**63) - 1, 5)))
    with pytest.raises(DetevalError) as exc:
        load_coco_gt(path)
    assert (
        exc.value.reason
        == "bbox ["
        + ", ".join(map(str, _damaged("bbox", -(2**63) - 1, 5)["annotations"][5]["bbox"]))
        + "] is beyond \u00b12**53"
    )  # (was: "has a negative width or height", of -2**63 as a float)


def test_a_float_of_as_many_digits_is_still_a_float(tmp_path: Path) -> None:
    """``18446744073709551617.0`` (a float, 20 digits) and ``1e19`` are areas like any other: the same table from
    the file (read again by Python's json for the first, which holds 19 digits in a row) as from the dict."""
    path = tmp_path / "gt.json"
    for text, value in (("18446744073709551617.0", 18446744073709551617.0), ("1e19", 1e19)):
        gt = _damaged("area", 7, 3)
        path.write_text(json.dumps(gt).replace('"area": 7', f'"area": {text}'))
        a, b = load_coco_gt(path), load_coco_gt(_damaged("area", value, 3))  # type: ignore[arg-type]
        assert a.area[3] == value and a.area.tobytes() == b.area.tobytes()


def test_valid_files_are_not_scanned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan for long digit runs runs only on an error or an area of 2**63 or more."""
    calls = []
    for module in (coco_json, coco_gt, coco_results):
        monkeypatch.setattr(module, "wide_integers", lambda data: calls.append(1) or wide_integers(data))
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(_gt()))
    load_coco_gt(path, need_keypoints=True)
    assert not calls
    path.write_text(json.dumps(_damaged("area", 2**64 + 1, 3)))
    with pytest.raises(DetevalError, match="area must be a number below 2\\*\\*64"):
        load_coco_gt(path)
    assert calls


def test_wide_integers_finds_a_run_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coco_json, "_WIDE_BLOCK", 64)
    for at in range(40, 90):
        text = b" " * at + b"1" * 19 + b" " * 100
        assert wide_integers(text) and not wide_integers(text.replace(b"1" * 19, b"1" * 18))


def test_rle_counts_beyond_int64_in_a_segm_ground_truth(tmp_path: Path) -> None:
    """A crowd's uncompressed RLE ``counts`` holding 2**64 + 1: refused with one message from a dict and a file
    (the dict's integer was summed into the runs' total, the file's float refused as not a count)."""
    gt = _gt(3)
    gt["annotations"][1].update(
        image_id=1, iscrowd=1, segmentation={"size": [100, 100], "counts": [11, 2**64 + 1, 86]}
    )
    dt = [{"image_id": 1, "category_id": 1, "segmentation": [[1.0, 1.0, 9.0, 1.0, 9.0, 9.0]], "score": 0.5}]
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    got = []
    for source in (copy.deepcopy(gt), path):
        with pytest.raises(DetevalError) as exc:
            evaluate_coco(source, copy.deepcopy(dt), iou_type="segm")
        got.append((type(exc.value), exc.value.record, exc.value.reason))
    assert got[0] == got[1] and got[0][1] == "annotations[1]" and "counts" in got[0][2], got


def _results(kind: str, field: str, value: int, j: int, n: int = 60) -> list[dict[str, Any]]:
    rng = np.random.default_rng(5)
    dets = []
    for _ in range(n):
        x, y = (float(v) for v in np.round(rng.uniform(0, 50, 2), 2))
        d: dict[str, Any] = {"image_id": int(rng.integers(1, 4)), "category_id": 1, "score": 0.25}
        if kind == "bbox":
            d["bbox"] = [x, y, 20.0, 10.0]
        elif kind == "keypoints":
            d["keypoints"] = [x, y, 1.0, x + 3, y + 4, 1.0]
        else:
            d["segmentation"] = {"size": [100, 100], "counts": [int(x) * 100, 30, 10000 - int(x) * 100 - 30]}
        dets.append(d)
    if field == "coord":
        dets[j]["bbox" if kind == "bbox" else "keypoints"][2] = value
    elif field == "counts":
        dets[j]["segmentation"]["counts"][1] = value
    else:
        dets[j][field] = value
    return dets


RESULT_CASES = [
    (k, f) for k in ("bbox", "keypoints") for f in ("score", "coord", "image_id", "category_id")
] + [
    ("segm", "score"),
    ("segm", "counts"),
]


@pytest.mark.fast_cases(kind=1)
@pytest.mark.parametrize("pieces", [False, True, "typed"])
@pytest.mark.parametrize(("kind", "field"), RESULT_CASES)
def test_a_wide_integer_in_results_is_refused_from_a_file_as_from_a_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, field: str, pieces: bool | str
) -> None:
    if pieces:
        monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 700)
        monkeypatch.setattr(coco_typed, "MIN_BYTES", 0 if pieces == "typed" else 1 << 40)
    g = load_coco_gt(_gt(), need_keypoints=True, keep_segmentation=True)
    path = tmp_path / "dt.json"
    for value in WIDE[:2]:
        for j in (0, 33, 59):
            dets = _results(kind, field, value, j)
            path.write_text(json.dumps(dets))
            got = []
            for source in (copy.deepcopy(dets), path):
                with monkeypatch.context() as m:
                    if pieces and kind != "segm":  # (the piece parsed again, not the whole file)
                        m.setattr(coco_results, "read_json_exact", lambda p: pytest.fail("read whole"))
                    with pytest.raises(DetevalError) as exc:
                        load_coco_results(source, g, iou_type=kind)
                got.append((type(exc.value), exc.value.record, exc.value.reason))
            assert got[0] == got[1] and got[0][1] == j, (kind, field, value, got)
            # and left out alike: the same records kept
            kept = [
                load_coco_results(s, g, iou_type=kind, on_error="skip") for s in (copy.deepcopy(dets), path)
            ]
            assert kept[0].skipped == kept[1].skipped == 1
            assert kept[0].score.tobytes() == kept[1].score.tobytes()


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_two_cores_refuse_a_wide_score_as_one_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    small_thresholds: list,  # noqa: F811  (the fixture imported above)
    iou_type: str,
) -> None:
    """The readers of a second core (and the keypoints reader of one) read a score by orjson: one written
    2**64 + 1 is then read again by the one-process loader, which refuses it."""
    make = {"bbox": two_cores._data, "segm": two_cores._segm_data, "keypoints": two_cores._kp_data}[iou_type]
    gt, dets = make(3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    n = len(dets)
    for j in (0, n // 2, n - 1):
        bad = [dict(d) for d in dets]
        bad[j]["score"] = 2**64 + 1
        (tmp_path / "dt.json").write_text(json.dumps(bad))
        one = two_cores._outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "1", iou_type)
        two = two_cores._outcome(tmp_path / "gt.json", tmp_path / "dt.json", monkeypatch, "", iou_type)
        assert one == two and one[0] == "error" and one[3] == j and "2**64" in one[4], (one, two)


@pytest.mark.parametrize("kind", ["bbox", "keypoints", "segm"])
def test_sharded_reading_refuses_a_wide_score_as_one_process(tmp_path: Path, kind: str) -> None:
    """Each byte range is read by orjson: a range holding a score written 2**64 + 1 leaves the file to the
    one-process loader, which refuses it (it was accepted as a float)."""
    from deteval.run.coco import evaluate_coco_sharded

    g = load_coco_gt(_gt(), need_keypoints=True, keep_segmentation=True)
    path = tmp_path / "dt.json"
    for j in (0, 30, 59):
        path.write_text(json.dumps(_results(kind, "score", 2**64 + 1, j)))
        with pytest.raises(DetevalError) as one:
            load_coco_results(path, g, iou_type=kind)
        with pytest.raises(DetevalError) as sharded:
            evaluate_coco_sharded(g, path, iou_type=kind, shards=2, range_bytes=500)
        assert str(one.value) == str(sharded.value) and one.value.record == j
