"""Numbers in text files are ASCII decimal notation only (deteval.syntax): Python's ``float`` and ``int``
would read ``1_0`` as 10 and other scripts' digits (``٥``, ``５``) as numbers, which no reference tool does.
Open Images CSVs, trec_eval prefs files and data.yaml values follow the rule the other loaders already
follow."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.openimages import read_oid_csv
from deteval.io.prefs import load_prefs
from deteval.io.yolo_yaml import read_data_yaml as read_yaml_subset

NOT_NUMBERS = ["1_0", "\u0665", "\uff15", "0x10", "1e", "true"]
COLUMNS = ("ImageID", "LabelName", "XMin", "XMax", "YMin", "YMax", "IsGroupOf")
NUMERIC = ("XMin", "XMax", "YMin", "YMax", "IsGroupOf")


def _csv(tmp_path, value: str):
    path = tmp_path / "boxes.csv"
    rows = [
        "ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf",
        "a,/m/1,0.1,0.5,0.1,0.5,0",
        f"b,/m/1,0.1,{value},0.1,0.5,0",
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_open_images_fields_are_ascii_decimals(tmp_path, value):
    with pytest.raises(ValidationError, match="XMax must be a finite number") as err:
        read_oid_csv(_csv(tmp_path, value), COLUMNS, NUMERIC, "boxes")
    assert err.value.record == "line 3"


def test_open_images_plain_decimals_are_read(tmp_path):
    t = read_oid_csv(_csv(tmp_path, " 5e-1"), COLUMNS, NUMERIC, "boxes")
    assert t.values["XMax"].tolist() == [0.5, 0.5]


@pytest.mark.parametrize("value", [True, np.True_, "1_0", None, [0.5]], ids=repr)
def test_open_images_in_memory_rows_hold_real_numbers(value):
    row = {"ImageID": "a", "LabelName": "/m/1", "XMin": 0.1, "XMax": value, "YMin": 0.1, "YMax": 0.5}
    rows = [dict(row, IsGroupOf=0)]
    with pytest.raises(DetevalError, match="XMax"):
        read_oid_csv(rows, COLUMNS, NUMERIC, "boxes")
    rows[0]["XMax"] = np.float32(0.5)
    assert read_oid_csv(rows, COLUMNS, NUMERIC, "boxes").values["XMax"].tolist() == [0.5]


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_prefs_rel_level_is_an_ascii_decimal(tmp_path, value):
    path = tmp_path / "prefs"
    path.write_text(f"q1 jg1 a d1 1\nq1 jg1 a d2 {value}\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"rel_level .* is not a finite number") as err:
        load_prefs(path)
    assert err.value.record == "line 2"


def test_prefs_plain_decimals_are_read(tmp_path):
    path = tmp_path / "prefs"
    path.write_text("q1 jg1 a d1 1.5e0\nq1 jg1 a d2 -.5\n", encoding="utf-8")
    assert [ln.rel_level for ln in load_prefs(path).topics[b"q1"]] == [1.5, -0.5]


@pytest.mark.parametrize("value", ["\u0665", "\uff13", "1\u0660"])
def test_yaml_numbers_are_ascii_digits(tmp_path, value):
    """``nc: ٥`` stays the string it is (then refused as not an integer), never the number 5."""
    path = tmp_path / "data.yaml"
    path.write_text(f"nc: {value}\nscale: {value}.5\n", encoding="utf-8")
    got = read_yaml_subset(path, {"nc", "scale"})
    assert got == {"nc": value, "scale": f"{value}.5"}
    path.write_text("nc: 3\nscale: 0.5\n", encoding="utf-8")
    assert read_yaml_subset(path, {"nc", "scale"}) == {"nc": 3, "scale": 0.5}
