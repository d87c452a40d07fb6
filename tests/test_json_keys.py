"""A key repeated in one JSON object is refused by every JSON loader (issue 12, item 9).

Parsers keep the last value silently: ``"annotations"`` twice, the second empty, would lose every ground
truth. The COCO loaders check orjson's parse by counting key tokens (deteval.io.jsonkeys); these tests cover
each level a key can repeat at, the piecewise path for large files, the path without orjson, and texts that
look like repeated keys to the count but are not (they must load exactly as the plain file).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_errors import cli_error

from deteval.detection.coco import evaluate_coco
from deteval.errors import InputFormatError
from deteval.io.coco import gt_pieces as coco_gt_pieces
from deteval.io.coco import json_text as coco_json
from deteval.io.coco import pieces as coco_pieces
from deteval.io.jsonkeys import check_unique_keys, loads_unique
from deteval.results import load_result

DATA = Path(__file__).resolve().parent / "data" / "coco"
GT_TEXT = (DATA / "coco_fruits" / "fruit_val_coco_format.json").read_text()
RES_TEXT = (DATA / "coco_fruits" / "coco_instances_results.json").read_text()
GT, RES = json.loads(GT_TEXT), json.loads(RES_TEXT)
SEGM_GT = json.loads((DATA / "coco_val2014_100" / "instances_val2014_100.json").read_text())
SEGM_RES = json.loads((DATA / "coco_val2014_100" / "instances_val2014_fakesegm100_results.json").read_text())
CROWD = next(i for i, a in enumerate(SEGM_GT["annotations"]) if a["iscrowd"])


def _repeat(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def gt_annotations_twice() -> str:
    return GT_TEXT.rstrip()[:-1] + ', "annotations": []}'


def gt_key_twice_in_a_record() -> str:
    a = GT["annotations"][2]
    return json.dumps(GT).replace(f'"id": {a["id"]},', f'"id": {a["id"]}, "id": 99999,', 1)


def result_key_twice() -> str:
    text = json.dumps(RES)
    i = text.index('"score"', text.index('"score"') + 1)  # record 1
    return text[:i] + '"score": 0.99, ' + text[i:]


def crowd_rle_key_twice() -> str:
    text = json.dumps(SEGM_GT)
    counts = json.dumps(SEGM_GT["annotations"][CROWD]["segmentation"]["counts"])
    return _repeat(text, f'"counts": {counts}', f'"counts": [1], "counts": {counts}')


CASES = {
    "gt_annotations_twice": (gt_annotations_twice, "gt", "'annotations'"),
    "gt_id_twice_in_a_record": (gt_key_twice_in_a_record, "gt", "'id'"),
    "result_score_twice": (result_key_twice, "res", "'score'"),
    "crowd_rle_counts_twice": (crowd_rle_key_twice, "segm_gt", "'counts'"),
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("orjson", [True, False])
@pytest.mark.parametrize("name", sorted(CASES))
def test_repeated_keys_are_refused(tmp_path, capsys, monkeypatch, name, orjson):
    if not orjson:
        monkeypatch.setattr(coco_json, "_orjson", None)
    make, which, key = CASES[name]
    bad = tmp_path / "bad.json"
    bad.write_text(make())
    gt, res, iou = str(DATA / "coco_fruits" / "fruit_val_coco_format.json"), str(bad), "bbox"
    if which == "gt":
        gt, res = str(bad), str(DATA / "coco_fruits" / "coco_instances_results.json")
    elif which == "segm_gt":
        gt, res, iou = (
            str(bad),
            str(DATA / "coco_val2014_100" / "instances_val2014_fakesegm100_results.json"),
            "segm",
        )
    words = f"duplicate key {key} in one JSON object"
    with pytest.raises(InputFormatError, match=words) as info:
        evaluate_coco(gt, res, iou_type=iou)
    assert info.value.file is not None and str(info.value.file) == str(bad)
    cli_error(capsys, ["coco", gt, res, "--iou-type", iou], f"{bad}: ", words)


@pytest.mark.parametrize("orjson", [True, False])
def test_repeated_key_in_a_later_piece_of_a_large_file(tmp_path, monkeypatch, orjson):
    """Large files are parsed in pieces (CHUNK_BYTES forced small): a repeated key in any piece is refused."""
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 1000)
    if not orjson:
        monkeypatch.setattr(coco_json, "_orjson", None)
    bad_gt = tmp_path / "gt.json"
    text = json.dumps(GT)
    a = GT["annotations"][-3]
    bad_gt.write_text(text.replace(f'"id": {a["id"]},', f'"id": {a["id"]}, "id": 99999,', 1))
    with pytest.raises(InputFormatError, match="duplicate key 'id'"):
        evaluate_coco(str(bad_gt), RES)
    bad_res = tmp_path / "res.json"
    text = json.dumps(RES)
    i = text.rindex('"score"')
    bad_res.write_text(text[:i] + '"score": 0.5, ' + text[i:])
    with pytest.raises(InputFormatError, match="duplicate key 'score'"):
        evaluate_coco(GT, str(bad_res))


def test_annotations_twice_in_a_file_read_in_pieces(tmp_path, monkeypatch):
    """A ground truth read in pieces (mapped, CHUNK_BYTES forced small) with a second "annotations" key, after
    the array or before it, or only a string "annotations" elsewhere: the repeat refused as one piece gives it,
    the lone string loaded as the whole file is."""
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 500)
    clean = tmp_path / "clean.json"
    clean.write_text(GT_TEXT)
    assert coco_gt_pieces.gt_in_pieces(clean, False, False) is not None  # (the path in question)
    for text in (gt_annotations_twice(), '{"annotations": [], ' + GT_TEXT.lstrip()[1:]):
        bad = tmp_path / "gt.json"
        bad.write_text(text)
        assert coco_gt_pieces.gt_in_pieces(bad, False, False) is None  # (left to the whole file's path)
        with pytest.raises(InputFormatError, match="duplicate key 'annotations' in one JSON object"):
            evaluate_coco(str(bad), RES)
    named = tmp_path / "named.json"
    named.write_text(GT_TEXT.rstrip()[:-1] + ', "note": {"about": "annotations"}}')
    plain = evaluate_coco(GT, RES)
    assert np.array_equal(evaluate_coco(str(named), RES).stats, plain.stats)


LOOKALIKES = {
    # a string holding a quote and a colon, a spaced key end, escapes that could hide a quote or a colon
    "quote_colon_in_a_name": lambda t: _repeat(t, '"name": "', '"name": "a\\": \\":b'),
    "spaced_key_ends": lambda t: t.replace('": ', '" : '),
    "unicode_escapes": lambda t: _repeat(t, '"name": "', '"name": "\\u0022\\u003a\\u0020'),
    "rle_dicts": None,
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_texts_that_only_look_like_repeated_keys_load_unchanged(tmp_path, monkeypatch, name):
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 1000)  # the piecewise path as well as the whole file
    if name == "rle_dicts":  # deeper objects: the count falls back to re-serialising
        path = tmp_path / "gt.json"
        path.write_text(json.dumps(SEGM_GT))
        want = evaluate_coco(SEGM_GT, SEGM_RES, iou_type="segm").stats.tolist()
        assert evaluate_coco(str(path), SEGM_RES, iou_type="segm").stats.tolist() == want
        return
    text = LOOKALIKES[name](json.dumps(GT, indent=1))
    assert loads_unique(text)  # really no repeated key
    path = tmp_path / "gt.json"
    path.write_text(text)
    assert evaluate_coco(str(path), RES).stats.tolist() == evaluate_coco(GT, RES).stats.tolist()


def test_the_count_check_directly():
    import orjson

    for text in (b'{"a": 1, "b": {"c": [1, {"d": 2}]}}', b'[{"a": "x\\":"}, {"a": 2}]', b"{}", b"[]", b"3"):
        check_unique_keys(text, orjson.loads(text), "f", orjson.dumps)
    for text, key in (
        (b'{"a": 1, "a": 2}', "a"),
        (b'[{"x": {"d": 1, "d": 2}}]', "d"),
        (b'[{"b":1,"b" :2}]', "b"),
    ):
        with pytest.raises(InputFormatError, match=f"f: duplicate key '{key}'"):
            check_unique_keys(text, orjson.loads(text), "f", orjson.dumps)
    # hiding escape: a key counted once too few next to a repeated one -> the slow, exact parse decides
    text = b'{"a": "\\u0022:", "k": 1, "k": 2}'
    with pytest.raises(InputFormatError, match="duplicate key 'k'"):
        check_unique_keys(text, orjson.loads(text), "f", orjson.dumps)


def test_saved_results_still_refuse_repeated_keys(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"protocol": "voc", "protocol": "mir"}')
    with pytest.raises(InputFormatError, match="duplicate key 'protocol' in one JSON object"):
        load_result(path)


@pytest.mark.slow
def test_key_token_count_equals_the_plain_count_in_any_blocks(monkeypatch):
    """The vectorised count of key ends (issue 15) is ``count(b'":')`` plus the spaced ones the regex finds,
    whatever the block size, on random texts of quotes, colons and blanks."""
    import re

    import numpy as np

    from deteval.io import jsonkeys

    spaced = re.compile(rb'"[ \t\r\n]+:')
    rng = np.random.default_rng(0)
    alphabet = list(b'":  \t\n\r{}ab,')
    for block in (1, 2, 3, 1 << 23):
        monkeypatch.setattr(jsonkeys, "_BLOCK", block)
        for _ in range(800):
            text = bytes(rng.choice(alphabet, int(rng.integers(0, 40))).tolist())
            assert jsonkeys.key_tokens(text) == text.count(b'":') + len(spaced.findall(text))


def test_segm_results_take_the_fast_count_and_nested_repeats_are_still_found():
    """The keys of a result's RLE object are counted with the record's: no second pass (dumps) for a plain
    segm file, and a key repeated inside the RLE object is still refused."""
    import orjson

    def no_second_pass(obj):
        raise AssertionError("the count check fell back to dumps")

    for data in (SEGM_RES, SEGM_GT):
        text = json.dumps(data).encode()
        check_unique_keys(text, orjson.loads(text), "f", no_second_pass)
    text = json.dumps(SEGM_RES)
    counts = json.dumps(SEGM_RES[3]["segmentation"]["counts"])
    bad = _repeat(text, f'"counts": {counts}', f'"counts": "0", "counts": {counts}').encode()
    with pytest.raises(InputFormatError, match="duplicate key 'counts'"):
        check_unique_keys(bad, orjson.loads(bad), "f", orjson.dumps)
