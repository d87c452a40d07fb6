"""The .lab loader and annotation lists: parsing, and errors that name the file and the line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deteval.errors import InputFormatError, ValidationError
from deteval.io.lab import as_segments, load_lab, parse_lab, segments_from_list

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples" / "mir"


def _write(tmp_path: Path, text: str, name: str = "x.lab") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_parse_tabs_spaces_comments_blank_lines_and_labels_with_spaces(tmp_path: Path) -> None:
    text = "# a comment\n\n0.0\t16.5\tG major\n  16.5   28  G minor  \n\t# indented comment\n28 40 G major\n"
    p = _write(tmp_path, text)
    seg = load_lab(p)
    np.testing.assert_array_equal(seg.starts, [0.0, 16.5, 28.0])
    np.testing.assert_array_equal(seg.ends, [16.5, 28.0, 40.0])
    assert seg.labels.tolist() == ["G major", "G minor", "G major"]
    assert seg.records.tolist() == [3, 4, 6]
    assert seg.source == str(p) and seg.duration == 40.0


def test_segments_are_sorted_and_keep_their_line_numbers() -> None:
    seg = parse_lab("10 20 B\n0 10 A\n")
    assert seg.labels.tolist() == ["A", "B"] and seg.records.tolist() == [2, 1]


def test_sample_files_load() -> None:
    ref = load_lab(SAMPLES / "ref.lab")
    est = load_lab(SAMPLES / "est.lab")
    assert len(ref) == 11 and len(est) == 9
    assert ref.duration == est.duration == 182.4


@pytest.mark.parametrize(
    ("text", "error", "line", "reason"),
    [
        ("0 1 A\n1 x2 B\n", InputFormatError, 2, "end time 'x2' is not a number"),
        ("# c\nabc 1 A\n", InputFormatError, 2, "start time 'abc' is not a number"),
        ("0 1 A\n1 2\n", InputFormatError, 2, "missing label"),
        ("0 1 A\n\n3 2 B\n", ValidationError, 3, "end 2.0 is before start 3.0"),
        ("0 nan A\n", ValidationError, 1, "end time is nan"),
        ("0 inf A\n", ValidationError, 1, "end time is inf"),
        ("-1 1 A\n", ValidationError, 1, "start time -1.0 is negative"),
        ("0 5 A\n4 8 B\n", ValidationError, 2, "overlaps the segment [0.0, 5.0] (line 1)"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, error: type, line: int, reason: str) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(error) as info:
        load_lab(p)
    assert info.value.file == str(p)
    assert info.value.record == f"line {line}"
    assert reason in info.value.reason
    assert str(info.value).startswith(f"{p}: line {line}: ")


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n   \n"])
def test_empty_file_is_an_error(tmp_path: Path, text: str) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(InputFormatError, match="no segments") as info:
        load_lab(p)
    assert info.value.file == str(p)


def test_missing_file_and_bad_encoding(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match="cannot read file"):
        load_lab(tmp_path / "nope.lab")
    p = tmp_path / "latin.lab"
    p.write_bytes(b"0 1 A\n1 2 caf\xe9\n")
    with pytest.raises(InputFormatError, match="not UTF-8") as info:
        load_lab(p)
    assert info.value.record == "line 2"


def test_zero_length_segments_and_gaps_are_allowed() -> None:
    seg = parse_lab("0 2 A\n2 2 marker\n3 5 B\n")
    assert len(seg) == 3 and seg.labels.tolist() == ["A", "marker", "B"]


def test_annotation_lists() -> None:
    seg = segments_from_list([[0, 4, "A"], [4, 7, "B"], [7, 10, "A"]])
    assert seg.to_list() == [[0.0, 4.0, "A"], [4.0, 7.0, "B"], [7.0, 10.0, "A"]]
    assert as_segments(seg) is seg


@pytest.mark.parametrize(
    ("ann", "error", "record", "reason"),
    [
        ([[0, 4, "A"], [4, 7]], InputFormatError, 1, "expected [start, end, label]"),
        ([[0, 4, "A"], ["4", 7, "B"]], InputFormatError, 1, "start time '4' is not a number"),
        ([[0, 4, "A"], [4, float("nan"), "B"]], ValidationError, 1, "NaN"),
        ([[0, 4, "A"], [5, 4.5, "B"]], ValidationError, 1, "before start"),
        ([[0, 4, "A"], [3, 7, "B"]], ValidationError, 1, "overlaps"),
    ],
)
def test_annotation_list_errors_name_the_index(ann: list, error: type, record: int, reason: str) -> None:
    with pytest.raises(error) as info:
        segments_from_list(ann, source="ann_ref")
    assert info.value.file == "ann_ref" and info.value.record == record
    assert reason in info.value.reason


def test_not_a_list() -> None:
    with pytest.raises(InputFormatError, match="expected a list"):
        segments_from_list(42)
