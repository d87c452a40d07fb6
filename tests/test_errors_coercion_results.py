"""Saved results: a PR curve holding a string or a boolean is refused (``np.asarray(dtype=float64)`` read
``"0.5"`` as 0.5 and ``true`` as 1.0); numbers and null (NaN) are read as before."""

from __future__ import annotations

import json
import math

import pytest

from deteval.errors import InputFormatError
from deteval.results import load_result


def _write(tmp_path, precision):
    path = tmp_path / "r.json"
    doc = {"protocol": "voc", "curves": {"car": {"recall": [0.5, 1.0], "precision": precision}}}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("bad", ["0.5", True, False, [0.5], {"a": 1}], ids=repr)
def test_curve_values_must_be_numbers(tmp_path, bad):
    with pytest.raises(InputFormatError, match="precision must be a list of numbers") as err:
        load_result(_write(tmp_path, [1.0, bad]))
    assert err.value.record == "curve 'car'"


def test_curve_numbers_and_null(tmp_path):
    got = load_result(_write(tmp_path, [1, None])).curves["car"].precision.tolist()
    assert got[0] == 1.0 and math.isnan(got[1])
