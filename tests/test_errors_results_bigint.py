"""A saved result holding a very large integer (issue 12, item 8): ``report`` and ``compare`` (and the
plots) end in one clear error naming the file, not an OverflowError traceback."""

from __future__ import annotations

import json

import pytest
from cli_errors import cli_error, subprocess_error

from deteval.errors import InputFormatError, ValidationError
from deteval.report.compare import compare_results
from deteval.results import EvalResult, load_result

GOOD = {"protocol": "voc", "map": 0.5, "per_class": {"car": {"ap": 0.25, "npos": 3}}, "warnings": []}
BIG = "9" * 400


def _doc(where: str, number: str) -> bytes:
    text = json.dumps(GOOD).replace('"npos": 3', '"npos": @') if where == "row" else json.dumps(GOOD)
    if where == "summary":
        text = text.replace('"map": 0.5', '"map": @')
    if where == "curve":
        text = text[:-1] + ', "curves": {"car": {"recall": [@], "precision": [1.0]}}}'
    return text.replace("@", number).encode()


@pytest.mark.fast_cases(number=1)
@pytest.mark.parametrize("where", ["row", "summary", "curve"])
@pytest.mark.parametrize("number", [BIG, "-" + BIG, str(2**63), str(-(2**63))])
def test_a_huge_integer_is_one_clear_error(tmp_path, capsys, where, number):
    path = tmp_path / "big.json"
    path.write_bytes(_doc(where, number))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    with pytest.raises(InputFormatError, match=r"beyond ±2\*\*63") as info:
        load_result(path)
    assert info.value.file == str(path)
    for argv in (
        ["report", str(path)],
        ["report", str(path), "--plots", str(tmp_path / "plots")],
        ["compare", str(good), str(path)],
        ["compare", str(path), str(good)],
    ):
        cli_error(capsys, argv, str(path), "beyond ±2**63")


def test_the_largest_accepted_integers_work(tmp_path, capsys):
    for number in (str(2**63 - 1), str(-(2**63) + 1)):
        path = tmp_path / "ok.json"
        path.write_bytes(_doc("row", number))
        assert load_result(path).per_class["car"]["npos"] == int(number)
        cmp = compare_results(load_result(path), load_result(path), metric="npos")
        assert cmp.per_class["car"] == {"a": int(number), "b": int(number), "delta": 0, "present": "both"}


def test_in_memory_huge_integer_in_compare_is_a_deteval_error():
    big = EvalResult("voc", per_class={"car": {"ap": int(BIG)}})
    with pytest.raises(ValidationError, match=r"beyond ±2\*\*63"):
        compare_results(big, EvalResult.from_dict(GOOD))


@pytest.mark.slow
def test_through_a_subprocess(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(_doc("row", BIG))
    subprocess_error(["compare", str(path), str(path)], str(path), "beyond ±2**63")
