"""YOLO inputs: an integer too large for a float in predictions.json is an error naming the record (it was an
OverflowError / TypeError), and label numbers are ASCII decimals (``float`` reads ``'0.\\u0665'`` as 0.5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _yolo_cases import write_image

from deteval.errors import InputFormatError, ValidationError
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions
from deteval.io.yolo_labels import parse_label_files


def _dataset(root: Path) -> Path:
    for stem in ("0007", "b"):
        write_image(root / "images" / "val" / f"{stem}.jpg", 100, 50)
    y = root / "data.yaml"
    y.write_text("val: images/val\nnames: [a, b, c]\n")
    return y


BIG = "1" + "0" * 400


@pytest.mark.parametrize(
    ("bbox", "score"),
    [(f"[40, 20, {BIG}, 10]", "0.5"), ("[40, 20, 20, 10]", BIG), (f"[-{BIG}, 20, 20, 10]", "0.5")],
)
def test_json_integer_beyond_float_names_the_record(tmp_path, bbox, score):
    ds = load_yolo_dataset(_dataset(tmp_path))
    pj = tmp_path / "p.json"
    good = '{"image_id": 7, "category_id": 1, "bbox": [40, 20, 20, 10], "score": 0.5}'
    pj.write_text(f'[{good}, {{"image_id": 7, "category_id": 1, "bbox": {bbox}, "score": {score}}}]')
    with pytest.raises(ValidationError, match="must be") as err:
        load_yolo_predictions(pj, ds)
    assert err.value.record == 1


@pytest.mark.parametrize("token", ["0.\u0665", "\uff10.5", "0.5\u0660"])
def test_label_numbers_are_ascii(tmp_path, token):
    path = tmp_path / "a.txt"
    path.write_text(f"0 0.5 0.5 0.2 0.2\n1 {token} 0.5 0.2 0.2\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="is not a number") as err:
        parse_label_files([path], 3)
    assert err.value.record == "line 2"
    path.write_text("0 0.5 0.5 0.2 0.2\n1 0.25 0.5 0.2 0.2\n", encoding="utf-8")
    assert parse_label_files([path], 3).xywh.tolist() == [[0.5, 0.5, 0.2, 0.2], [0.25, 0.5, 0.2, 0.2]]
