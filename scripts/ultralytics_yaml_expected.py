"""Write tests/data/ultralytics_datasets/expected.json: each dataset yaml shipped in ultralytics, read as
Ultralytics 8.4.190 reads it, for tests/test_yolo_yaml_corpus.py.

The yamls (``ultralytics/cfg/datasets/*.yaml``, AGPL-3.0, copied with attribution: see the folder's README)
come from the wheel (``pip download --no-deps ultralytics==8.4.190``). This script does not import deteval
nor ultralytics: it repeats Ultralytics' own steps with PyYAML, step by step from its source:

* ``YAML.load``: the text read as UTF-8 with ``errors="ignore"``, ``yaml.load(s, Loader=CSafeLoader)`` (on
  an exception once more after removing the characters its regex calls problematic), ``None`` → ``{}``,
  top-level values equal to the string ``"None"`` → None;
* ``check_det_dataset``: ``nc`` read as ``int(float(nc))`` when whole, ``names`` from ``nc`` when absent
  (``class_i``), and ``check_class_names``: ``{int(k): str(v)}`` (ImageNet's ``n0…`` code mapping left out:
  deteval does not score classification datasets).

Values are stored with their YAML types (a mapping as ``{"__map__": [[key, value], ...]}``, since JSON object
keys are strings only). Rerun: ``python scripts/ultralytics_yaml_expected.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

FOLDER = Path(__file__).resolve().parent.parent / "tests" / "data" / "ultralytics_datasets"
_PROBLEMATIC = re.compile(r"[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]+")


def ultralytics_yaml_load(path: Path) -> dict[str, Any]:
    """``ultralytics.utils.YAML.load`` (8.4.190), without the file name it appends."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, errors="ignore", encoding="utf-8") as f:
        s = f.read()
    try:
        data = yaml.load(s, Loader=loader)  # (a safe loader)
    except Exception:
        data = yaml.load(_PROBLEMATIC.sub("", s), Loader=loader)
    if data is None:
        data = {}
    if "None" in data.values():
        data = {k: None if v == "None" else v for k, v in data.items()}
    return data


def ultralytics_names(data: dict[str, Any]) -> list[str] | None:
    """The class names ``check_det_dataset`` and ``check_class_names`` give, or None where neither ``names``
    nor ``nc`` is given."""
    names, nc = data.get("names"), data.get("nc")
    if nc is not None and not isinstance(nc, int):
        nc = int(float(nc))
    if names is None:
        return None if nc is None else [f"class_{i}" for i in range(nc)]
    if isinstance(names, list):
        names = dict(enumerate(names))
    mapped = {int(k): str(v) for k, v in names.items()}
    return [mapped[i] for i in range(len(mapped))]


def encode(value: Any) -> Any:
    """JSON with the YAML types kept: mappings as ``{"__map__": [[key, value], ...]}``."""
    if isinstance(value, dict):
        return {"__map__": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    return value


def main() -> None:
    out = {}
    for path in sorted(FOLDER.glob("*.yaml")):
        data = ultralytics_yaml_load(path)
        out[path.name] = {"data": encode(data), "names": ultralytics_names(data)}
    (FOLDER / "expected.json").write_text(
        json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{len(out)} dataset yamls -> {FOLDER / 'expected.json'}")


if __name__ == "__main__":
    main()
