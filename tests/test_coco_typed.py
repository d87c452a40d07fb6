"""bbox results decoded by type (msgspec, :mod:`deteval.io.coco.typed`) give exactly what the ordinary path
(orjson or json, then the field checks) gives: the same columns bit for bit, the same error message string for
string, for whole files, for files read in pieces and for the two-core readers (the child's tail, the parent's
head). Each input is loaded with the typed decoder on and off (and with orjson on and off); the inputs are
random records, most of them valid, with hostile numbers, keys and bytes mixed in."""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from fuzz_mutations import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import deteval.io.coco as coco_io
from deteval.errors import DetevalError
from deteval.io.coco import gt_pieces as coco_gt_pieces
from deteval.io.coco import json_text as coco_json
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import results as coco_results
from deteval.io.coco import typed as coco_typed

pytest.importorskip("msgspec")

IMAGES = [1, 2, 3, 42, 2**53 + 1, 2**62 + 1]
CATS = [1, 2, 5]
GT = load_coco_gt(
    {
        "images": [{"id": i, "width": 640, "height": 480} for i in IMAGES],
        "categories": [{"id": c, "name": f"c{c}"} for c in CATS],
        "annotations": [
            {
                "id": k + 1,
                "image_id": i,
                "category_id": CATS[k % 3],
                "bbox": [1, 2, 30, 40],
                "area": 1200,
                "iscrowd": 0,
            }
            for k, i in enumerate(IMAGES)
        ],
    }
)

INTS = [0, 1, 7, -3, 2**53, 2**53 + 1, -(2**53) - 1, 2**62 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1]
INTS += [2**64 - 1, 2**64, 2**64 + 1, 10**30]
# decimals that test the parsers' rounding: halfway cases, subnormals, the largest double, long mantissas
HARD_FLOATS = [
    "-0",
    "-0.0",
    "0.0",
    "15.0",
    "1e2",
    "1E5",
    "1e+2",
    "0.1e1",
    "0.30000000000000004",
    "9007199254740993.0",
    "9007199254740992.5",
    "9007199254740993",
    "1.7976931348623157e308",
    "1.7976931348623158e308",
    "1.7976931348623159e308",
    "4.9e-324",
    "2.4703282292062328e-324",
    "2.4703282292062327e-324",
    "2.2250738585072011e-308",
    "1e-400",
    "1e400",
    "-1e400",
    "0.1000000000000000055511151231257827",
    "123456789012345678901234567890.5",
    "1" * 400,
    "0." + "3" * 60,
    "7.0e-10",
    "1e23",
    "8.589973e9",
]
NOT_NUMBERS = ["true", "false", "null", '"1"', '"abc"', "[]", "[1, 2, 3, 4]", "{}", "NaN", "Infinity"]
NOT_NUMBERS += ["-Infinity", "01", "1.", "-", "+1", ".5"]


def _decimal() -> st.SearchStrategy[str]:
    digits = st.text("0123456789", min_size=1, max_size=40)
    return st.builds(
        lambda sign, a, b, e: f"{sign}{a.lstrip('0') or '0'}.{b}e{e}",
        st.sampled_from(["", "-"]),
        digits,
        digits,
        st.integers(-330, 310),
    )


# (strategies are built once: hypothesis validates a strategy object on its first draw, and a document draws
# thousands of tokens)
ONE_IN_30 = st.integers(0, 29)
NOT_NUMBER = st.sampled_from(NOT_NUMBERS)
NUMBER: st.SearchStrategy[str] = st.one_of(
    st.integers(-1000, 1000).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(0, 1000, allow_nan=False).map(lambda v: repr(round(v, 2))),
    st.sampled_from(INTS).map(str),
    st.sampled_from(HARD_FLOATS),
    _decimal(),
)


@st.composite
def _token(draw: Any, valid: st.SearchStrategy[str], hostile: bool) -> str:
    """A valid value; in a hostile document now and then any number (huge, at the bounds) or not a number."""
    k = draw(ONE_IN_30) if hostile else 29
    return draw(NOT_NUMBER if k == 0 else NUMBER if k <= 3 else valid)


DIGITS = st.text("0123456789", min_size=1, max_size=30)
COORD = st.one_of(
    st.integers(0, 600).map(str),
    st.floats(0, 600).map(repr),
    st.builds(lambda a, b: f"{a % 600}.{b}", st.integers(0, 599), DIGITS),  # (rounded by both parsers)
)
SCORE = st.one_of(st.floats(0, 1).map(repr), DIGITS.map(lambda b: f"0.{b}"), st.sampled_from(["0", "1"]))
# the tokens of a valid (False) and of a hostile (True) record
IMAGE_TOKEN = {h: _token(st.sampled_from(IMAGES).map(str), h) for h in (False, True)}
CAT_TOKEN = {h: _token(st.sampled_from(CATS).map(str), h) for h in (False, True)}
COORD_TOKEN = {h: _token(COORD, h) for h in (False, True)}
SCORE_TOKEN = {h: _token(SCORE, h) for h in (False, True)}


@st.composite
def _box(draw: Any, hostile: bool) -> str:
    k = draw(st.integers(0, 39)) if hostile else 39
    if k == 0:
        return draw(st.sampled_from(NOT_NUMBERS))
    values = [draw(COORD_TOKEN[hostile]) for _ in range({1: 3, 2: 5, 3: 0}.get(k, 4))]
    return "[" + draw(st.sampled_from([", ", ",", " ,\n"])).join(values) + "]"


NAMES = ['"000000000139.jpg"', '"a b\\u00e9.png"', '"x\\\\y.jpg"', '""', '"\\ud83d\\ude00.jpg"', '"x\\u0000"']
# a key-like ``\":`` (one key token too many), not UTF-8, a lone surrogate (json reads it), a control character
HOSTILE_NAMES = ['"a\\":b.jpg"', '"a\udcff.jpg"', '"\\ud800"', '"a\x01"', "null", "7", '["a"]', '{"a": 1}']
ESCAPED = {"image_id": "image_\\u0069d", "score": "\\u0073core", "bbox": "bbox", "category_id": "category_id"}


@st.composite
def _record(draw: Any, hostile: bool) -> str:
    values = {
        "image_id": draw(IMAGE_TOKEN[hostile]),
        "category_id": draw(CAT_TOKEN[hostile]),
        "bbox": draw(_box(hostile)),
        "score": draw(SCORE_TOKEN[hostile]),
    }
    items = [[k, v] for k, v in values.items()]
    if draw(st.booleans()):  # (Ultralytics' predictions.json names the image file)
        names = NAMES + HOSTILE_NAMES if hostile else NAMES
        items.insert(draw(st.integers(0, 4)), ["file_name", draw(st.sampled_from(names))])
    if draw(st.integers(0, 9)) == 0:
        items = draw(st.permutations(items))
    damage = draw(st.integers(0, 29)) if hostile else (3 if draw(st.integers(0, 29)) == 0 else -1)
    if damage == 0:  # a missing key
        del items[draw(st.integers(0, 3))]
    elif damage == 1:  # a repeated key, same or other value
        k, v = items[draw(st.integers(0, 3))]
        items.insert(
            draw(st.integers(0, len(items))), [k, draw(st.sampled_from([v, "0", "0.5", "[1, 2, 3, 4]"]))]
        )
    elif damage == 2:  # another key next to the box (loadRes keeps it; the typed decoder does not know it)
        extra = draw(st.sampled_from(['"id": 3', '"area": 2.5', '"segmentation": [[1, 2, 3, 4, 5, 6]]']))
        items.append(extra.split(": ", 1))
        items[-1][0] = items[-1][0].strip('"')
    elif damage == 3:  # a key written with an escape (valid)
        k = draw(st.integers(0, len(items) - 1))
        items[k][0] = ESCAPED.get(items[k][0], items[k][0])
    elif damage == 4:  # a key that is not UTF-8
        k = draw(st.integers(0, len(items) - 1))
        items[k][0] += "\udcff"
    colon = draw(st.sampled_from([": ", ":", " : "]))
    return "{" + ", ".join(f'"{k}"{colon}{v}' for k, v in items) + "}"


@st.composite
def _document(draw: Any) -> bytes:
    """A results list: a third of them hostile (damaged values, keys, bytes), the others valid."""
    hostile = draw(st.integers(0, 2)) == 0
    records = draw(st.lists(_record(hostile), min_size=0, max_size=10))
    sep = draw(st.sampled_from([", ", ",\n", ","]))
    text = ("[" + sep.join(records) + "]").encode("utf-8", "surrogateescape")  # (\udcff: the byte 0xff)
    damage = draw(st.integers(0, 19)) if hostile else 20
    if damage == 0:
        text = b"\xef\xbb\xbf" + text
    elif damage == 1:
        text += draw(st.sampled_from([b" x", b"\x00", b"\xff", b"]", b"\n\t "]))
    elif damage == 2:
        text = text.replace(b"]", b"]" + draw(st.sampled_from([b"\xff", b"\xc3\x28", b" "])), 1)
    elif damage == 3:
        text = draw(
            st.sampled_from([b'{"bbox": [1, 2, 3, 4]}', b"[" * 5000 + b"]" * 5000, b"[1, 2]", b"[[]]"])
        )
    return text


def _columns(r: Any) -> tuple:
    arrays = (r.img, r.cat, r.score, r.bbox, r.area)
    kp = None if r.keypoints is None else (r.keypoints.dtype.str, r.keypoints.shape, r.keypoints.tobytes())
    plain = (r.kind, r.source, r.warnings, r.skipped, kp, r.segmentation, r.rles)
    return tuple((a.dtype.str, a.shape, a.tobytes()) for a in arrays) + plain


def _settings(stack: ExitStack, typed: bool, orjson: bool, chunk: int | None) -> None:
    if not typed:
        stack.enter_context(patch.object(coco_typed, "_DECODER", None))
    stack.enter_context(patch.object(coco_typed, "MIN_BYTES", 0))  # (whole files of any size)
    if not orjson:
        stack.enter_context(patch.object(coco_json, "_orjson", None))
    if chunk is not None:
        stack.enter_context(patch.object(coco_pieces, "CHUNK_BYTES", chunk))


def _load(path: Path, typed: bool, orjson: bool, chunk: int | None, on_error: str) -> tuple:
    with ExitStack() as stack:
        _settings(stack, typed, orjson, chunk)
        try:
            r = load_coco_results(path, GT, on_error=on_error)
        except DetevalError as exc:
            return ("error", type(exc).__name__, str(exc))
    return ("ok", *_columns(r))


def _raw(raw: Any) -> Any:
    if raw is None:
        return None
    return [tuple((a.dtype.str, a.shape, a.tobytes()) for a in cols) for cols in raw]


def _two_cores(path: Path, typed: bool, start: int, chunk: int) -> tuple:
    """The child's tail and the parent's result, as detection.coco runs them (here in one process)."""
    with ExitStack() as stack:
        _settings(stack, typed, True, chunk)
        try:  # (a repeated key: the ordinary piece reader raises, in the child and here alike)
            tail = coco_io.results_tail(path, start)
            whole = coco_io.results_with_tail(path, GT, start, lambda: tail)
        except DetevalError as exc:
            return ("error", type(exc).__name__, str(exc))
    return None if tail is None else (tail[0], _raw(tail[1])), None if whole is None else _columns(whole)


@pytest.mark.slow
@fuzz_settings(300)
@given(_document(), st.sampled_from([None, 120, 300]), st.booleans())
def test_typed_decoding_agrees_with_the_ordinary_path(text, chunk, orjson):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "res.json"
        path.write_bytes(text)
        typed = _load(path, True, orjson, chunk, "raise")
        assert typed == _load(path, False, orjson, chunk, "raise")
        if typed[0] == "error":  # the records skipped, and the rest, are also the ordinary path's
            assert _load(path, True, orjson, chunk, "skip") == _load(path, False, orjson, chunk, "skip")
        # (from byte 0: the child reads every piece, the first one's branch checked there)
        if chunk is not None:
            for start in (len(text) // 2, 0):
                assert _two_cores(path, True, start, chunk) == _two_cores(path, False, start, chunk)


@pytest.mark.slow
@fuzz_settings(600)
@given(_document())
def test_typed_columns_are_the_ordinary_columns_of_the_same_text(text):
    """The soundness rule on one piece: whenever the typed decoder returns columns, the ordinary piece reader
    accepts the text and gives the same arrays (orjson and json alike)."""
    raw = coco_typed.bbox_columns(text)
    if raw is None:
        return
    for orjson in (True, False):
        with ExitStack() as stack:
            _settings(stack, True, orjson, None)
            records = coco_pieces.parsed_piece(text, "f")
            assert records is not None
            assert _raw([raw]) == _raw([coco_results.raw_bbox_columns(records, "f")])


VALID = [
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2.5, 3, 4], "score": 0.5}]',
    b'[{"image_id": 3, "file_name": "000000000003.jpg", "category_id": 1, "bbox": [1, 2, 3, 4], "score": 0.5},'
    b' {"image_id": 3, "category_id": 1, "bbox": [1, 2, 3, 4], "score": 0.25}]',
    b'[{"score": 1, "bbox": [0, 0, 0, 0], "category_id": 5, "image_id": 9007199254740993}]',
    b'\n[ {"image_id" : 42 , "category_id":1,"bbox":[-0.0,1e2,0.1e1,9007199254740991],"score":-0.0} ]\n',
    b'[{"image_\\u0069d": 2, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 9223372036854774784}]',
]
REFUSED = [  # left to the ordinary path: it accepts some of these, and names the fault in the others
    b"[]",
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5, "score": 0.7}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5, "id": 1}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4]}]',
    b'[{"image_id": 1.0, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}]',
    b'[{"image_id": "1", "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}]',
    b'[{"image_id": true, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, false], "score": 0.5}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": NaN}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1e400}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 18446744073709551616}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 9223372036854775807}]',
    b'[{"image_id": 9223372036854775808, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 9007199254740992], "score": 0.5}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 9007199254740993], "score": 0.5}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, -3, 4], "score": 0.5}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3], "score": 0.5}]',
    b'\xef\xbb\xbf[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5, "file_name": null}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5, "file_name": "a\\":b"}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5, "file_name": "a\xff"}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score\xff": 0.5}]',
    b'{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}',
]


@pytest.mark.parametrize("text", VALID)
def test_plain_results_take_the_typed_path(text):
    """Not vacuous: ordinary bbox results are decoded by type, and agree with the ordinary reader."""
    raw = coco_typed.bbox_columns(text)
    assert raw is not None
    assert _raw([raw]) == _raw([coco_results.raw_bbox_columns(json.loads(text), "f")])


@pytest.mark.parametrize("text", REFUSED)
def test_what_the_typed_path_cannot_vouch_for_is_left_to_the_ordinary_path(text):
    assert coco_typed.bbox_columns(text) is None


def test_typed_path_reads_a_file_in_pieces_and_on_two_cores(tmp_path, monkeypatch):
    """Every piece of a plain file is decoded by type (the ordinary parser is never called), with the same
    result as the ordinary path; a repeated key in a later piece is still refused, naming it."""
    rng = np.random.default_rng(3)
    recs = [
        {
            "image_id": int(rng.choice(IMAGES)),
            "category_id": int(rng.choice(CATS)),
            "bbox": [round(float(v), 2) for v in rng.uniform(0, 300, 4)],
            "score": round(float(rng.uniform()), 5),
        }
        for _ in range(400)
    ]
    path = tmp_path / "res.json"
    path.write_text(json.dumps(recs))
    size = path.stat().st_size
    ordinary = _load(path, False, True, 2000, "raise")
    for module in (coco_json, coco_pieces, coco_gt_pieces):
        monkeypatch.setattr(module, "loads_piece", _never)
    monkeypatch.setattr(coco_json, "parse_json", _never)
    monkeypatch.setattr(coco_results, "parse_json", _never)
    assert _load(path, True, True, 2000, "raise") == ordinary  # in pieces
    assert _load(path, True, True, None, "raise") == ordinary  # whole
    assert _two_cores(path, True, size // 2, 2000)[1] == ordinary[1:]
    assert _two_cores(path, True, 0, 2000)[1] == ordinary[1:]  # (the child reads every piece)
    monkeypatch.undo()
    text = path.read_text()
    i = text.rindex('"score"')
    path.write_text(text[:i] + '"score": 0.5, ' + text[i:])
    for chunk in (2000, None):
        assert _load(path, True, True, chunk, "raise") == _load(path, False, True, chunk, "raise")
        assert "duplicate key 'score'" in _load(path, True, True, chunk, "raise")[2]


def _never(*args: Any) -> Any:
    raise AssertionError("the ordinary parser was called")


def test_msgspec_is_imported_only_for_a_file_that_repays_it(tmp_path, monkeypatch):
    """A small file is read by the ordinary path without importing msgspec (10-25 ms); a whole file from
    MIN_BYTES on (and each piece of a large one) is decoded by type."""
    path = tmp_path / "res.json"
    path.write_text(json.dumps([{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}] * 50))
    expected = _load(path, False, True, None, "raise")
    built = []

    def build(module: Any) -> Any:
        built.append(module.__name__)
        raise ImportError  # (as without msgspec: the ordinary path reads the file)

    monkeypatch.setattr(coco_typed, "_DECODER", coco_typed._UNBUILT)
    monkeypatch.setattr(coco_typed, "_build", build)
    assert coco_typed.typed_decoding()  # (found, not imported)
    monkeypatch.setattr(coco_typed, "MIN_BYTES", path.stat().st_size + 1)
    assert ("ok", *_columns(load_coco_results(path, GT))) == expected and built == []
    monkeypatch.setattr(coco_typed, "MIN_BYTES", path.stat().st_size)
    assert ("ok", *_columns(load_coco_results(path, GT))) == expected and built == ["msgspec"]
    assert not coco_typed.typed_decoding()
