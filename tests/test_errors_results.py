"""Saved result JSON (``deteval report`` / ``deteval compare``): every kind of bad file is one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_errors import cli_error, subprocess_error

from deteval.errors import InputFormatError
from deteval.results import EvalResult, load_result

GOOD = {
    "protocol": "voc",
    "metric": "voc2010",
    "map": 0.5,
    "per_class": {"car": {"ap": 0.25, "npos": 3}, "dog": {"ap": 0.75, "npos": 1}},
    "warnings": [],
}
GOOD_TEXT = json.dumps(GOOD, indent=2).encode()

BAD = {
    "empty": (b"", ["line 1", "invalid JSON"]),
    "blank": (b" \n \n", ["line 3", "invalid JSON"]),
    "truncated": (GOOD_TEXT[: len(GOOD_TEXT) // 2], ["invalid JSON", "line "]),
    "array": (b"[1, 2]", ["must be a JSON object, not list"]),
    "no_protocol": (b'{"map": 1}', ['"protocol"']),
    "per_class_list": (b'{"protocol": "voc", "per_class": [1]}', ['"per_class" must be an object']),
    "row_list": (b'{"protocol": "voc", "per_class": {"a": [1]}}', ["class 'a'", "must be an object"]),
    "warnings_int": (b'{"protocol": "voc", "warnings": [1]}', ['"warnings" must be a list of strings']),
    "curve_list": (b'{"protocol": "voc", "curves": {"a": [1]}}', ["curve 'a'", "recall and precision"]),
    "curve_lengths": (
        b'{"protocol": "voc", "curves": {"a": {"recall": [1], "precision": [1, 2]}}}',
        ["curve 'a'", "bad PR curve"],
    ),
    "nan_token": (GOOD_TEXT.replace(b'"map": 0.5', b'"map": NaN'), ["NaN", "null"]),
    "infinity_token": (GOOD_TEXT.replace(b'"map": 0.5', b'"map": -Infinity'), ["-Infinity"]),
    "overflow": (GOOD_TEXT.replace(b'"map": 0.5', b'"map": 1e999'), ["1e999", "infinity"]),
    "huge_int": (b'{"protocol": "voc", "n": ' + b"9" * 5000 + b"}", ["invalid JSON value", "digits"]),
    "deep": (b'{"protocol": "voc", "x": ' + b"[" * 100000 + b"]" * 100000 + b"}", ["nested too deeply"]),
    "duplicate_key": (b'{"protocol": "voc", "protocol": "coco"}', ["duplicate key 'protocol'"]),
    "lone_surrogate": (b'{"protocol": "\\ud800"}', ["unpaired surrogate"]),
    "surrogate_bytes": (b'{"protocol": "\xed\xa0\x80"}', ["unpaired surrogate"]),  # json's surrogatepass
    "surrogate_utf16": ('{"protocol": "x\\udc00"}'.encode("utf-16"), ["unpaired surrogate"]),
    "latin1": (GOOD_TEXT.replace(b'"car"', b'"c\xe9r"'), ["not UTF-8"]),
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_result_files_are_one_clear_error(tmp_path, capsys, name):
    data, pieces = BAD[name]
    path = tmp_path / f"{name}.json"
    path.write_bytes(data)
    with pytest.raises(InputFormatError) as info:
        load_result(path)
    assert info.value.file == str(path)
    for piece in pieces:
        assert piece in str(info.value)
    good = tmp_path / "good.json"
    good.write_bytes(GOOD_TEXT)
    cli_error(capsys, ["report", str(path)], str(path), *pieces)
    cli_error(capsys, ["compare", str(good), str(path)], str(path), *pieces)


@pytest.mark.parametrize(
    "variant",
    [
        b"\xef\xbb\xbf" + GOOD_TEXT,  # UTF-8 BOM
        GOOD_TEXT.replace(b"\n", b"\r\n"),  # Windows line endings
        GOOD_TEXT.replace(b"\n", b"\n\t \t"),  # tabs and spaces between tokens
        json.dumps(GOOD).encode("utf-16"),  # UTF-16 with its BOM (RFC 8259 readers detect it)
    ],
)
def test_harmless_variants_load_to_the_same_result(tmp_path, variant):
    path = tmp_path / "r.json"
    path.write_bytes(variant)
    assert load_result(path).to_dict() == EvalResult.from_dict(GOOD).to_dict()


def test_unreadable_paths(tmp_path, capsys, monkeypatch):
    cli_error(capsys, ["report", str(tmp_path / "missing.json")], "missing.json", "No such file")
    cli_error(capsys, ["report", str(tmp_path)], str(tmp_path), "Is a directory")
    locked = tmp_path / "locked.json"
    locked.write_bytes(GOOD_TEXT)

    def deny(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", deny)  # root ignores chmod 000; simulate the OS refusing
    cli_error(capsys, ["report", str(locked)], str(locked), "Permission denied")


@pytest.mark.slow
def test_through_a_subprocess(tmp_path):
    path = tmp_path / "nan.json"
    path.write_bytes(BAD["nan_token"][0])
    subprocess_error(["report", str(path)], str(path), "NaN")


def test_unwritable_output_is_an_error_naming_it(tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_bytes(GOOD_TEXT)
    cli_error(capsys, ["report", str(good), "--output", str(tmp_path)], str(tmp_path), "cannot write")
    sample = Path(__file__).resolve().parent.parent / "data_samples" / "mir"
    cli_error(
        capsys,
        ["mir", str(sample / "ref.lab"), str(sample / "est.lab"), "-o", str(tmp_path / "no" / "x.txt")],
        "cannot write",
    )


def test_paired_surrogates_and_other_scripts_are_fine():
    emoji = b'{"protocol": "\\ud83d\\ude00"}'  # a surrogate pair, escaped: one character
    hangul = '{"protocol": "\ud55c"}'.encode()  # UTF-8 starting with the byte 0xED, not a surrogate
    latin = '{"protocol": "\u00e9"}'
    for text in (emoji, hangul, latin):
        assert EvalResult.from_json(text).protocol in ("\U0001f600", "\ud55c", "\u00e9")
    with pytest.raises(InputFormatError, match="unpaired surrogate"):
        EvalResult.from_json('{"protocol": "\ud800"}')  # a str holding the surrogate itself
