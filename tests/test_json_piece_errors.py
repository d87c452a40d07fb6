"""A large results file that is not valid JSON is refused from the piece that fails
(:func:`deteval.io.json_errors.piece_error`) with the error the whole file's parse gives (type, line, column,
reason), the file no longer parsed whole by Python's json on that error path: random faults (a byte deleted,
inserted or replaced, an invalid UTF-8 byte or escape, a control character in a string, a BOM) in files with
several lines, non-ASCII strings, and strings holding the ``}, {`` that pieces are cut at."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import deteval.io.json_errors as json_errors
from deteval.errors import DetevalError
from deteval.io.coco import json_text as coco_json
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import results as coco_results
from deteval.io.json_errors import utf8_fault


def _gt() -> dict:
    return {
        "images": [{"id": i, "height": 100, "width": 100} for i in (1, 2, 3)],
        "categories": [{"id": 1, "name": "p"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 1,
                "bbox": [1.0, 2.0, 30.0, 40.0],
                "area": 900.0,
                "iscrowd": 0,
            }
        ],
    }


def _text(rng: np.random.Generator, n: int = 120, notes: bool = True) -> bytes:
    dets = []
    for _ in range(n):
        d: dict = {
            "image_id": int(rng.integers(1, 4)),
            "category_id": 1,
            "bbox": [float(v) for v in np.round(rng.uniform(0, 50, 4), 2)],
            "score": float(np.round(rng.random(), 3)),
        }
        if notes and rng.random() < 0.2:
            d["note"] = str(rng.choice(["a}, {b", "é€😀", 'q"}, {"x', "plain"]))
        dets.append(d)
    indent = int(rng.choice([0, 1, 2])) or None
    return json.dumps(dets, indent=indent, ensure_ascii=bool(rng.random() < 0.5)).encode()


def _damaged(rng: np.random.Generator, text: bytes) -> bytes:
    at = int(rng.integers(1, len(text) - 1))
    how = int(rng.integers(0, 7))
    if how == 0:
        return text[:at] + text[at + 1 :]
    if how == 1:
        return text[:at] + bytes([int(rng.choice(list(b'x,]}{:"0-')))]) + text[at:]
    if how == 2:
        return text[:at] + b"\xff" + text[at:]  # not UTF-8
    if how == 3:
        q = text.find(b'"', at)
        return text if q < 0 else text[: q + 1] + bytes([int(rng.choice([1, 10, 9]))]) + text[q + 1 :]
    if how == 4:
        q = text.find(b'"', at)
        return text if q < 0 else text[: q + 1] + b"\\q" + text[q + 1 :]  # an invalid escape
    if how == 5:
        return text[:at] + b"\xed\xa0\x80" + text[at:]  # an encoded surrogate (json accepts it)
    return text[:at] + text[at + 1 : at + 7] + text[at:]  # a few bytes repeated


def _error(path: Path, g) -> tuple | None:
    try:
        load_coco_results(path, g)
    except DetevalError as exc:
        return type(exc), exc.record, exc.reason, exc.file
    return None


@pytest.mark.slow
def test_the_piece_names_the_whole_files_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 1500)  # several pieces, the path of a large file
    monkeypatch.setattr(coco_results, "bbox_piece_bytes", lambda: 1500)
    monkeypatch.setattr(json_errors, "_BLOCK", 1000)  # (the counts and the decoding span blocks)
    g = load_coco_gt(_gt())
    rng = np.random.default_rng(7)
    path = tmp_path / "dt.json"
    named = []
    real = json_errors.piece_error

    def counting(*args):
        got = real(*args)
        named.append(got is not None)
        return got

    for _ in range(250):
        text = _damaged(rng, _text(rng))
        if rng.random() < 0.03:
            text = b"\xef\xbb\xbf" + text
        path.write_bytes(text)
        monkeypatch.setattr(coco_results, "piece_error", counting)
        new = _error(path, g)
        monkeypatch.setattr(coco_results, "piece_error", lambda *args: None)  # (the whole file parsed)
        old = _error(path, g)
        assert new == old, (new, old)
    assert sum(named) > 100 and len(named) - sum(named) > 5, (sum(named), len(named))


def test_utf8_fault_is_the_whole_decodings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_errors, "_BLOCK", 7)
    rng = np.random.default_rng(3)
    for _ in range(2000):
        b = bytearray("aé€😀\n".encode() * int(rng.integers(1, 6)))
        for _ in range(int(rng.integers(0, 3))):
            b.insert(int(rng.integers(0, len(b) + 1)), int(rng.choice([0x80, 0xFF, 0xC3, 0xE2, 0xF0, 0xED])))
        if rng.random() < 0.3:
            b += b"\xe2\x82"  # cut at the end
        try:
            bytes(b).decode("utf-8", "surrogatepass")
            want = None
        except UnicodeDecodeError as exc:
            want = (exc.start, exc.reason)
        assert utf8_fault(bytes(b)) == want, bytes(b)


def test_sharded_reading_names_it_without_parsing_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sharded reader's error path (a bad range: the file read by the one-process loader) gives the
    one-process message, and no parse of the whole text by Python's json makes it."""
    from deteval.run.coco import evaluate_coco_sharded

    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 1500)
    g = load_coco_gt(_gt())
    rng = np.random.default_rng(11)
    path = tmp_path / "dt.json"
    text = _text(rng, 200, notes=False)  # (a cut inside a string is left to the whole parse)
    at = text.index(b'"score"', len(text) // 2)
    path.write_bytes(text[:at] + b'"score": 0.5.3' + text[at + 7 :])
    whole = []
    real = coco_json.loads_unique
    monkeypatch.setattr(
        coco_json, "loads_unique", lambda data, **kw: whole.append(len(data)) or real(data, **kw)
    )
    with pytest.raises(DetevalError) as one:
        load_coco_results(path, g)
    with pytest.raises(DetevalError) as sharded:
        evaluate_coco_sharded(g, path, iou_type="bbox", shards=2, range_bytes=2000)
    assert not whole
    assert str(one.value) == str(sharded.value) and "invalid JSON: Expecting ',' delimiter" in str(one.value)
    monkeypatch.setattr(coco_results, "piece_error", lambda *args: None)  # (as before: the whole file parsed)
    with pytest.raises(DetevalError) as before:
        load_coco_results(path, g)
    assert whole and str(before.value) == str(one.value)
