"""The bad-input catalogue exists, is linked from the README and covers every class the issue names."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import deteval
from deteval.mir import BoundarySpacingWarning, boundary_prf

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")


def test_linked_from_the_readme():
    assert "(docs/errors.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "section",
    ["## Pascal VOC", "## MIR", "## Saved results", "## COCO (", "## TREC ("],
)
def test_one_section_per_protocol(section):
    assert section in DOC


@pytest.mark.parametrize(
    "words",
    [
        "malformed XML", "<!DOCTYPE", "billion laughs", "missing", "non-numeric", "x2 < x1", "NaN or inf",
        "empty file", "truncated", "wrong shape", "unknown", "duplicate", "absent from the ground truth",
        "BOM", "CRLF", "tabs and repeated spaces", "does not exist", "--on-error skip", "skipped_records",
    ],
)  # fmt: skip
def test_every_class_of_the_issue_is_catalogued(words):
    assert words in DOC


def test_warnings_share_one_base_class():
    assert issubclass(BoundarySpacingWarning, deteval.DetevalWarning)
    assert issubclass(deteval.DetevalWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", deteval.DetevalWarning)
        with pytest.raises(BoundarySpacingWarning):
            boundary_prf([0.0, 0.1, 5.0], [0.0, 5.0], 0.5)
