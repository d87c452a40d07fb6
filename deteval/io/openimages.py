"""Open Images challenge files → columnar tables: box CSVs, image-level label CSVs, predictions, hierarchy.

The files the TF Object Detection API's ``oid_challenge_evaluation.py`` reads, with the columns it reads
(by header name; other columns are allowed and ignored):

* ground-truth boxes: ``ImageID, LabelName, XMin, XMax, YMin, YMax, IsGroupOf`` (coordinates normalised);
* image-level labels: ``ImageID, LabelName, Confidence`` (1: verified present, 0: verified absent);
* predictions: ``ImageID, LabelName, Score, XMin, XMax, YMin, YMax``;
* the class hierarchy JSON: nested ``{"LabelName": ..., "Subcategory": [...]}`` (the root is not a class);
* optionally class descriptions: ``LabelName,DisplayName`` rows without a header (the class list and order).

Every bad row is a :class:`~deteval.errors.DetevalError` naming the file and the line.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError
from deteval.syntax import parse_decimal

__all__ = [
    "Hierarchy",
    "OidTable",
    "load_class_names",
    "load_hierarchy",
    "read_oid_csv",
]


@dataclass
class OidTable:
    """Rows of one CSV as columns: ``image`` and ``label`` (str arrays), ``values`` (name → float64 array),
    ``line`` (1-based line of each row, for messages)."""

    image: np.ndarray
    label: np.ndarray
    values: dict[str, np.ndarray]
    line: np.ndarray
    source: str

    def __len__(self) -> int:
        return int(self.image.shape[0])


def _text(source: str | PathLike[str]) -> str:
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot read file: {exc.strerror or exc}", file=str(source)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"not UTF-8 text: {exc.reason}", file=str(source)) from None


def _number(v: Any) -> float:
    """A CSV field in ASCII decimal notation or an in-memory real number; NaN for anything else (Python's
    ``float`` would read ``1_0`` as 10, ``'\u0665'`` as 5 and ``True`` as 1)."""
    try:
        if isinstance(v, str):
            return parse_decimal(v)
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
            return float(v)
    except (ValueError, OverflowError):
        pass
    return math.nan


def read_oid_csv(source: Any, columns: tuple[str, ...], numeric: tuple[str, ...], what: str) -> OidTable:
    """Read a CSV with a header (a path, or a list of row dicts), keeping ``columns``; ``numeric`` ones as
    finite float64. A missing column, a short row or a non-number names the file and line."""
    file = str(source) if isinstance(source, (str, PathLike)) else f"<in-memory {what}>"
    if isinstance(source, (str, PathLike)):
        reader = csv.DictReader(io.StringIO(_text(source)))
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise InputFormatError(
                f"the header lacks {', '.join(missing)} (a {what} CSV needs {', '.join(columns)})",
                file=file,
                record="line 1",
            )
        rows = list(reader)
        first_line = 2
    else:
        rows = list(source)
        first_line = 0
    n = len(rows)
    cols: dict[str, list[Any]] = {c: [None] * n for c in columns}
    for i, row in enumerate(rows):
        for c in columns:
            v = row.get(c) if isinstance(row, dict) else None
            if v is None:
                rec = f"line {first_line + i}" if first_line else f"row {i}"
                raise InputFormatError(f"missing {c}", file=file, record=rec)
            cols[c][i] = v
    values: dict[str, np.ndarray] = {}
    for c in numeric:
        out = np.empty(n, dtype=np.float64)
        for i, v in enumerate(cols[c]):
            x = _number(v)
            if not math.isfinite(x):
                rec = f"line {first_line + i}" if first_line else f"row {i}"
                raise ValidationError(f"{c} must be a finite number, got {v!r}", file=file, record=rec)
            out[i] = x
        values[c] = out
    lines = np.arange(n) + (first_line if first_line else 0)
    return OidTable(
        image=np.asarray([str(v) for v in cols["ImageID"]], dtype=object),
        label=np.asarray([str(v) for v in cols["LabelName"]], dtype=object),
        values=values,
        line=lines,
        source=file,
    )


@dataclass
class Hierarchy:
    """Per label its ancestors and its descendants (the root excluded), as the TF OD API's
    ``oid_hierarchical_labels_expansion.py`` builds them (a label may have several parents)."""

    ancestors: dict[str, list[str]]
    descendants: dict[str, list[str]]
    order: list[str]  # labels in depth-first order of first appearance


def load_hierarchy(source: Any) -> Hierarchy:
    """Read the class hierarchy JSON (a path or the parsed dict); the top node is the root, not a class."""
    file = str(source) if isinstance(source, (str, PathLike)) else "<in-memory hierarchy>"
    if isinstance(source, (str, PathLike)):
        try:
            tree = json.loads(_text(source))
        except ValueError as exc:
            raise InputFormatError(f"invalid JSON: {exc}", file=file) from None
    else:
        tree = source
    anc: dict[str, set[str]] = {}
    desc: dict[str, set[str]] = {}
    order: list[str] = []

    def walk(node: Any, path: list[str], depth: int) -> set[str]:
        if not isinstance(node, dict) or not isinstance(node.get("LabelName"), str):
            raise InputFormatError("every node needs a 'LabelName' string", file=file, record="/".join(path))
        if depth > 1000:
            raise ValidationError("the hierarchy is deeper than 1000 levels", file=file)
        name = node["LabelName"]
        subs = node.get("Subcategory", [])
        if not isinstance(subs, list):
            raise InputFormatError("'Subcategory' must be a list", file=file, record=name)
        below: set[str] = set()
        for child in subs:
            below |= walk(child, [*path, name], depth + 1)
        if depth > 0:  # the root is skipped, as skip_root=True in the TF tool
            if name not in anc:
                order.append(name)
            anc.setdefault(name, set()).update(p for p in path[1:])
            desc.setdefault(name, set()).update(below)
            return below | {name}
        return below

    walk(tree, [], 0)
    return Hierarchy(
        ancestors={k: sorted(v) for k, v in anc.items()},
        descendants={k: sorted(v) for k, v in desc.items()},
        order=order,
    )


def load_class_names(source: Any) -> list[tuple[str, str]]:
    """Class descriptions: ``LabelName,DisplayName`` rows, no header (Open Images' ``class-descriptions``)."""
    file = str(source)
    out = []
    for i, row in enumerate(csv.reader(io.StringIO(_text(source)))):
        if not row:
            continue
        if len(row) < 2:
            raise InputFormatError("expected LabelName,DisplayName", file=file, record=f"line {i + 1}")
        out.append((row[0], row[1]))
    return out
