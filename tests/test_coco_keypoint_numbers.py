"""Keypoints read by one ``np.fromiter`` where the text is proven free of strings and booleans
(deteval.io.coco.only_key_strings, plain_keypoints(numbers=True)): the quote count proves what it claims on
random texts, the matrix equals ``np.array``'s bit for bit, anything else is left to the record checks, and
a results file read in pieces takes that path and gives the one-process results."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest

from deteval.errors import DetevalError
from deteval.io.coco import json_text as coco_json
from deteval.io.coco import keypoints as coco_kp
from deteval.io.coco import load_coco_gt, load_coco_results, only_key_strings, plain_keypoints
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco.keypoints_tail import read_keypoints


def _strings_within(value: object) -> int:
    """Strings in a parsed JSON value, keys included."""
    if isinstance(value, str):
        return 1
    if isinstance(value, list):
        return sum(map(_strings_within, value))
    if isinstance(value, dict):
        return len(value) + sum(map(_strings_within, value.values()))
    return 0


def _only_keys(records: list) -> bool:
    """No string in the records but their own keys, and no escaped quote in those."""
    return all(
        type(r) is dict and not any('"' in k for k in r) and not sum(map(_strings_within, r.values()))
        for r in records
    )


def _random_value(rng: np.random.Generator, depth: int = 0) -> object:
    kind = int(rng.integers(0, 9 if depth < 2 else 5))
    if kind == 0:
        return float(np.round(rng.normal(0, 100), 2))
    if kind == 1:
        return int(rng.integers(-1000, 1000))
    if kind == 2:
        return None
    if kind == 3:
        return rng.choice(["a", 'q"uote', "", "1.5"]).item()
    if kind == 4:
        return {}
    if kind < 7:
        return [_random_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
    return {str(rng.choice(["k", 'e"sc', "x"])): _random_value(rng, depth + 1)}


@pytest.mark.slow
def test_the_quote_count_proves_no_string_but_the_keys():
    rng = np.random.default_rng(11)
    proven = refused = 0
    for _ in range(3000):
        records = []
        for _ in range(int(rng.integers(1, 5))):
            rec: dict = {}
            for key in rng.choice(["image_id", "score", 'we"ird', "keypoints", "k"], int(rng.integers(0, 4))):
                rec[str(key)] = _random_value(rng) if rng.random() < 0.3 else float(rng.random())
            records.append(rec)
        text = json.dumps(records).encode()
        if rng.random() < 0.1:  # a repeated key: one entry in the object, two in the text
            text = text.replace(b'{"', b'{"dup": 1, "dup": 2, "', 1)
        if rng.random() < 0.05:  # a record that is not an object
            text = text.replace(b"[", b"[[1, 2], ", 1)
        parsed = orjson.loads(text)
        got = only_key_strings(text, parsed)
        if b'"dup"' in text:  # (one entry for two keys: refused, on the safe side)
            assert not got
        else:
            assert got == _only_keys(parsed), text
        proven += got
        refused += not got
    assert proven > 300 and refused > 300


def _random_rows(rng: np.random.Generator) -> list:
    n, width = int(rng.integers(1, 6)), int(rng.choice([3, 6, 51]))
    ints = rng.random() < 0.3
    rows = [
        [int(v) for v in rng.integers(-500, 500, width)]
        if ints
        else np.round(rng.normal(0, 300, width), 3).tolist()
        for _ in range(n)
    ]
    for _ in range(int(rng.integers(0, 3))):  # damage, or values at the edges
        i, j = int(rng.integers(n)), int(rng.integers(width))
        how = int(rng.integers(0, 12))
        if not isinstance(rows[i], list) or j >= len(rows[i]):
            continue
        if how == 0:
            rows[i][j] = None
        elif how == 1:
            rows[i][j] = [1.0]
        elif how == 2:
            rows[i][j] = {}
        elif how == 3:
            rows[i] = rows[i][:-3]
        elif how == 4:
            rows[i] = {}
        elif how == 5:
            rows[i] = 3.5
        elif how == 6:
            rows[i][j] = 10**400
        elif how == 7:
            rows[i][j] = 2**53 + int(rng.integers(-2, 3))
        elif how == 8:
            rows[i][j] = -(2.0**53) * float(rng.choice([0.5, 1.0, 2.0]))
        elif how == 9:
            rows[i][j] = -0.0
        elif how == 10:
            rows[i][j] = 2**63 + 5
        else:
            rows = [[] for _ in rows]
    return rows


@pytest.mark.slow
def test_the_matrix_from_numbers_equals_np_array():
    rng = np.random.default_rng(5)
    built = left = 0
    for _ in range(4000):
        rows = _random_rows(rng)
        a, b = plain_keypoints(rows), plain_keypoints(rows, numbers=True)
        assert (a is None) == (b is None), rows
        if a is None:
            left += 1
            continue
        built += 1
        assert a.dtype == b.dtype == np.float64 and a.shape == b.shape
        assert a.tobytes() == b.tobytes()  # (bit for bit: -0.0 too)
    assert built > 1000 and left > 1000


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)


def _files(tmp_path, dets, k=5):
    gt = {
        "images": [{"id": i, "height": 480, "width": 640} for i in range(1, 6)],
        "categories": [{"id": 1, "name": "person", "keypoints": [f"k{j}" for j in range(k)]}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "bbox": [1.0, 2.0, 30.0, 40.0],
                "area": 900.0,
                "iscrowd": 0,
                "num_keypoints": k,
                "keypoints": [10, 20, 2] * k,
            }
        ],
    }
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    return load_coco_gt(tmp_path / "gt.json", need_keypoints=True), tmp_path / "dt.json"


def _dets(seed, n=300, k=5):
    rng = np.random.default_rng(seed)
    return [
        {
            "image_id": int(rng.integers(1, 6)),
            "category_id": 1,
            "keypoints": np.round(rng.uniform(-50, 450, 3 * k), 2).tolist(),
            "score": float(np.round(rng.random(), 3)),
        }
        for _ in range(n)
    ]


def test_results_in_pieces_take_the_numbers_path(tmp_path, small_pieces, monkeypatch):
    calls = []
    real = coco_kp._number_rows
    monkeypatch.setattr(coco_kp, "_number_rows", lambda v: calls.append(1) or real(v))
    for seed in range(5):
        g, dp = _files(tmp_path, _dets(seed))
        one = load_coco_results(dp, g, iou_type="keypoints")
        alone = read_keypoints(dp, g)
        assert alone is not None
        for f in ("img", "cat", "score", "bbox", "area", "keypoints"):
            assert np.array_equal(getattr(one, f), getattr(alone, f)), f
    assert len(calls) > 10


BAD = [
    lambda k: [*k[:-1], {}],
    lambda k: {},
    lambda k: 3.0,
    lambda k: None,
    lambda k: [*k[:-1], [1.0]],
    lambda k: [*k[:-1], None],
    lambda k: [*k[:-1], 2**53 + 1],
    lambda k: [*k[:-1], 2**64 + 1],
]


@pytest.mark.fast_cases(damage=1)
@pytest.mark.parametrize("damage", range(len(BAD)))
def test_bad_keypoints_on_the_numbers_path_are_left_to_the_record_checks(tmp_path, small_pieces, damage):
    dets = _dets(1)
    for j in (0, len(dets) // 2, len(dets) - 1):
        bad = [dict(d) for d in dets]
        bad[j]["keypoints"] = BAD[damage](bad[j]["keypoints"])
        g, dp = _files(tmp_path, bad)
        assert read_keypoints(dp, g) is None, j
        with pytest.raises(DetevalError) as exc:
            load_coco_results(dp, g, iou_type="keypoints")
        assert exc.value.record == j


def _gt(seed, n=200, k=5):
    rng = np.random.default_rng(seed)
    anns = []
    for i in range(n):
        kp = np.round(rng.uniform(0, 400, (k, 3))).astype(int)
        kp[:, 2] = rng.integers(0, 3, k)
        anns.append(
            {
                "id": i + 1,
                "image_id": int(rng.integers(1, 6)),
                "category_id": 1,
                "bbox": [1.0, 2.0, 30.0, 40.0],
                "area": float(np.round(rng.uniform(1, 1e4), 2)),
                "iscrowd": 0,
                "num_keypoints": int((kp[:, 2] > 0).sum()),
                "keypoints": [int(v) for v in kp.ravel()] if seed % 2 else kp.ravel().astype(float).tolist(),
            }
        )
    return {
        "images": [{"id": i, "height": 480, "width": 640} for i in range(1, 6)],
        "categories": [{"id": 1, "name": "person", "keypoints": [f"k{j}" for j in range(k)]}],
        "annotations": anns,
    }


def test_ground_truth_pieces_take_the_numbers_path(tmp_path, small_pieces, monkeypatch):
    calls = []
    real = coco_kp._number_rows
    monkeypatch.setattr(coco_kp, "_number_rows", lambda v: calls.append(1) or real(v))
    for seed in range(4):
        gt = _gt(seed)
        (tmp_path / "gt.json").write_text(json.dumps(gt))
        a = load_coco_gt(tmp_path / "gt.json", need_keypoints=True)
        b = load_coco_gt(gt, need_keypoints=True)
        for f in ("keypoints", "num_keypoints", "bbox", "area", "img", "cat", "ann_id"):
            x, y = getattr(a, f), getattr(b, f)
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), (seed, f)
    assert len(calls) > 8


@pytest.mark.fast_cases(damage=1)
@pytest.mark.parametrize("damage", range(len(BAD)))
def test_bad_ground_truth_keypoints_on_the_numbers_path(tmp_path, small_pieces, monkeypatch, damage):
    """The same error as without the numbers path (the pieces' np.array), naming the record."""
    gt = _gt(1)
    n = len(gt["annotations"])
    for j in (0, n // 2, n - 1):
        bad = json.loads(json.dumps(gt))
        bad["annotations"][j]["keypoints"] = BAD[damage](bad["annotations"][j]["keypoints"])
        (tmp_path / "gt.json").write_text(json.dumps(bad))
        errors = []
        for proven in (coco_json.only_key_strings, lambda text, records: False):
            monkeypatch.setattr(coco_json, "only_key_strings", proven)
            with pytest.raises(DetevalError) as exc:
                load_coco_gt(tmp_path / "gt.json", need_keypoints=True)
            errors.append((type(exc.value), exc.value.record, exc.value.reason))
        assert errors[0] == errors[1] and errors[0][1] == f"annotations[{j}]", errors


def test_one_process_without_address_space_for_one_buffer(tmp_path, small_pieces, monkeypatch):
    """read_keypoints writes every piece's keypoints into one fresh buffer; where that cannot be had
    (MemoryError) it concatenates the pieces' matrices: the same results either way."""
    import deteval.io.coco.keypoints_tail as coco_keypoints

    class NoBuffer:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def empty(*args, **kwargs):
            raise MemoryError

    g, dp = _files(tmp_path, _dets(4))
    one = load_coco_results(dp, g, iou_type="keypoints")
    whole = read_keypoints(dp, g)
    monkeypatch.setattr(coco_keypoints, "np", NoBuffer())
    pieces = read_keypoints(dp, g)
    assert whole is not None and pieces is not None
    assert (
        whole.keypoints.base is not None and pieces.keypoints.base is None
    )  # (a view of the buffer; a copy)
    for f in ("img", "cat", "score", "bbox", "area", "keypoints"):
        assert getattr(one, f).tobytes() == getattr(whole, f).tobytes() == getattr(pieces, f).tobytes(), f


@pytest.mark.parametrize("key", ["score", "keypoints", "image_id"])
def test_a_repeated_key_is_found_on_the_numbers_path(tmp_path, small_pieces, key):
    """A key written twice in one record (numbers only, so that nothing but the quote count shows it): the
    numbers path is not taken for its piece, and the repeated-key check refuses it as load_coco_results does."""
    dets = _dets(2)
    for j in (0, len(dets) // 2, len(dets) - 1):
        parts = [json.dumps(d) for d in dets]
        parts[j] = (
            f'{{"{key}": {json.dumps(dets[j][key])}, ' + parts[j][1:]
        )  # (the first of two: the last kept)
        g, dp = _files(tmp_path, dets)
        dp.write_text("[" + ", ".join(parts) + "]")
        with pytest.raises(DetevalError) as one:
            load_coco_results(dp, g, iou_type="keypoints")
        assert "duplicate key" in one.value.reason
        with pytest.raises(DetevalError) as alone:
            read_keypoints(dp, g)
        assert (type(alone.value), alone.value.reason, alone.value.file) == (
            type(one.value),
            one.value.reason,
            one.value.file,
        )


@pytest.mark.parametrize("key", ["area", "keypoints", "num_keypoints"])
def test_a_repeated_key_in_a_ground_truth_read_in_pieces(tmp_path, small_pieces, monkeypatch, key):
    """A key written twice in one annotation (numbers only): refused with the error the pieces gave before
    the numbers path (the quote count sees it; the repeated-key check names it)."""
    gt = _gt(3)
    anns = gt["annotations"]
    for j in (0, len(anns) // 2, len(anns) - 1):
        parts = [json.dumps(a) for a in anns]
        parts[j] = f'{{"{key}": {json.dumps(anns[j][key])}, ' + parts[j][1:]
        head = json.dumps({k: v for k, v in gt.items() if k != "annotations"})[:-1]
        (tmp_path / "gt.json").write_text(head + ', "annotations": [' + ", ".join(parts) + "]}")
        errors = []
        for proven in (coco_json.only_key_strings, lambda text, records: False):
            monkeypatch.setattr(coco_json, "only_key_strings", proven)
            with pytest.raises(DetevalError) as exc:
                load_coco_gt(tmp_path / "gt.json", need_keypoints=True)
            errors.append((type(exc.value), exc.value.reason, exc.value.file))
        assert errors[0] == errors[1] and "duplicate key" in errors[0][1], errors
