"""A YOLO dataset's ``data.yaml``, read as Ultralytics' ``YAML.load`` and ``check_det_dataset`` read it: the
text, the keys' types, the class names and count, the dataset root and the split paths (:mod:`deteval.io.yolo`
reads the images and labels they lead to)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from deteval.errors import InputFormatError, ValidationError
from deteval.io.guards import bounded_count, read_bytes

__all__ = ["class_names", "read_bytes_lenient", "read_data_yaml", "resolve_root", "split_paths"]

#: Characters Ultralytics' ``YAML.load`` removes before its second attempt to parse a file.
_UNPRINTABLE = re.compile(r"[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]+")
#: Ultralytics' ``DATASET_KEY_TYPES``: the types a dataset yaml's keys may have (when not null).
_KEY_TYPES: dict[str, tuple[type, ...]] = {
    "path": (str,),
    "train": (str, list),
    "val": (str, list),
    "test": (str, list),
    "names": (list, dict),
    "kpt_shape": (list,),
    "flip_idx": (list,),
}


def _safe_load(text: str) -> Any:
    """PyYAML's safe loader, the C one when PyYAML has it (as Ultralytics' ``YAML`` picks it)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # (a safe loader)


def read_data_yaml(path: str | os.PathLike[str], keys: set[str] | None = None) -> dict[str, Any]:
    """A dataset yaml read exactly as Ultralytics' ``YAML.load`` reads it: UTF-8 with undecodable bytes
    dropped, PyYAML ``safe_load`` (on a syntax error, once more without the characters it calls
    problematic), an empty file as ``{}``, a top-level ``"None"`` string as null. ``keys``: keep only these.

    What Ultralytics refuses is a :class:`~deteval.errors.InputFormatError` naming the file: a name not ending
    in ``.yaml``/``.yml``, a syntax error (with PyYAML's line), a document that is not a mapping, a key of the
    wrong type (``_KEY_TYPES``). Nesting deeper than the parser's stack is refused too."""
    p = Path(path)
    if not str(p).lower().endswith((".yaml", ".yml")):
        raise InputFormatError("a dataset file must be a .yaml or .yml file (Ultralytics)", file=p)
    s = read_bytes_lenient(p)
    try:
        try:
            data = _safe_load(s)
        except yaml.YAMLError as first:
            try:
                data = _safe_load(_UNPRINTABLE.sub("", s))
            except yaml.YAMLError:
                mark = getattr(first, "problem_mark", None)
                where = f"line {mark.line + 1}" if mark is not None else None
                reason = getattr(first, "problem", None) or str(first).splitlines()[0]
                raise InputFormatError(f"YAML syntax error: {reason}", file=p, record=where) from None
    except RecursionError:
        raise InputFormatError("YAML nested too deeply", file=p) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputFormatError(f"not a YAML mapping (a {type(data).__name__})", file=p)
    if "None" in data.values():
        data = {k: None if v == "None" else v for k, v in data.items()}
    for key, types in _KEY_TYPES.items():
        if data.get(key) is not None and not isinstance(data[key], types):
            want = " or ".join(t.__name__ for t in types)
            raise InputFormatError(f"'{key}' must be a {want}, not {type(data[key]).__name__}", file=p)
    return data if keys is None else {k: v for k, v in data.items() if k in keys}


def read_bytes_lenient(path: Path) -> str:
    """The text of a regular file decoded as UTF-8 with undecodable bytes dropped (``errors="ignore"``, as
    Ultralytics opens yaml files) and universal newlines."""
    text = read_bytes(path, "dataset yaml").decode("utf-8", errors="ignore")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _scalar_name(v: Any, key: Any, file: str) -> str:
    """``str(v)`` of a class name, as Ultralytics; a list or mapping as a name is refused (its text could be
    exponentially long through YAML aliases, and no dataset means one)."""
    if isinstance(v, (list, dict)):
        raise ValidationError(f"'names' entry {key!r} is a {type(v).__name__}, not a name", file=file)
    return str(v)


def _class_count(nc: Any, file: str) -> int | None:
    """Ultralytics' ``nc`` rule: an int, or a value ``float()`` reads as a whole number (``10.0``, ``'10'``);
    bounded by :data:`~deteval.io.guards.MAX_DECLARED_COUNT` (a list of that many names is built from it)."""
    if nc is None:
        return None
    if isinstance(nc, int) and not isinstance(nc, bool):
        value = nc
    else:
        try:
            f = float(nc)  # (bool: Ultralytics reads true as 1)
            if not np.isfinite(f) or f != int(f):
                raise ValueError
            value = int(f)
        except (TypeError, ValueError, OverflowError):
            raise ValidationError(f"'nc: {str(nc)[:40]}' must be an integer", file=file) from None
    if value < 1:
        raise ValidationError(f"'nc: {value}': a dataset needs at least one class", file=file)
    return bounded_count(value, "'nc'", file)


def class_names(raw: Any, nc_raw: Any, file: str) -> list[str]:
    """The class names of ``names`` (a list, or a mapping of class index to name) and ``nc``, as Ultralytics'
    ``check_det_dataset`` reads them: ``class_i`` names from ``nc`` alone; indices 0 to n − 1, each once; ``nc``
    equal to their number when both are given."""
    nc = _class_count(nc_raw, file)
    if raw is None:
        if nc is None:
            raise ValidationError("either 'names' or 'nc' is required", file=file)
        return [f"class_{i}" for i in range(nc)]
    if isinstance(raw, list):
        names: dict[int, str] = {i: _scalar_name(v, i, file) for i, v in enumerate(raw)}
    else:
        names = {}
        seen: dict[int, Any] = {}
        for k, v in raw.items():
            try:
                if isinstance(k, float) and k != int(k):
                    raise ValueError
                index = int(k)
            except (TypeError, ValueError, OverflowError):
                raise ValidationError(f"'names' key {k!r} is not a class index", file=file) from None
            if index in seen:  # Ultralytics' {int(k): ...} would keep the later one silently
                raise ValidationError(
                    f"'names' keys {seen[index]!r} and {k!r} both name class {index}", file=file
                )
            seen[index] = k
            names[index] = _scalar_name(v, k, file)
    if not names:
        raise ValidationError("'names' is empty", file=file)
    if sorted(names) != list(range(len(names))):
        raise ValidationError(f"'names' must use the class indices 0-{len(names) - 1}", file=file)
    if nc is not None and nc != len(names):
        raise ValidationError(f"'names' length {len(names)} and 'nc: {nc}' must match", file=file)
    return [names[i] for i in range(len(names))]


def resolve_root(data: dict[str, Any], yaml_path: Path) -> tuple[Path, str]:
    """The dataset root and how it was found (for messages): ``path`` relative to the current directory when
    it exists there (Ultralytics), else to the yaml's folder; no ``path``: the yaml's folder."""
    raw = data.get("path")
    if raw is None or raw == "":
        root = yaml_path.parent.resolve()
        return root, f"no 'path': the yaml's folder {root}"
    p = Path(raw)
    if p.is_absolute():
        return p.resolve(), f"'path: {raw}'"
    if p.exists():
        return p.resolve(), f"'path: {raw}' resolved against the current directory {Path.cwd()}"
    root = (yaml_path.parent / p).resolve()
    return root, f"'path: {raw}' resolved against the yaml's folder {yaml_path.parent.resolve()} to {root}"


def split_paths(value: Any, root: Path, key: str, file: str) -> list[Path]:
    """The paths of a split key (``train``/``val``/``test``: a path or a list of paths) under ``root``; a
    relative path starting with ``../`` that does not exist is retried without it (Ultralytics)."""
    if isinstance(value, str):
        x = (root / value).resolve()
        if not x.exists() and value.startswith("../"):
            x = (root / value[3:]).resolve()
        return [x]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [(root / v).resolve() for v in value]
    raise ValidationError(f"'{key}' must be a path or a list of paths", file=file)
