"""Every dataset yaml shipped in ultralytics 8.4.190 reads in deteval to the values Ultralytics' own reader
gives (tests/data/ultralytics_datasets/expected.json, written by scripts/ultralytics_yaml_expected.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deteval.errors import DetevalError
from deteval.io.yolo_yaml import class_names, read_data_yaml

FOLDER = Path(__file__).resolve().parent / "data" / "ultralytics_datasets"
EXPECTED: dict[str, Any] = json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        return {_decode(k): _decode(v) for k, v in value["__map__"]}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def test_the_corpus_is_complete() -> None:
    assert sorted(EXPECTED) == sorted(p.name for p in FOLDER.glob("*.yaml"))
    assert len(EXPECTED) >= 50


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_read_as_ultralytics_reads(name: str) -> None:
    path = FOLDER / name
    want = EXPECTED[name]
    data = read_data_yaml(path)
    assert data == _decode(want["data"])
    if want["names"] is None:
        with pytest.raises(DetevalError, match="either 'names' or 'nc'"):
            class_names(data.get("names"), data.get("nc"), name)
    else:
        assert class_names(data.get("names"), data.get("nc"), name) == want["names"]
