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

import math
from dataclasses import dataclass
from os import PathLike
from typing import Any

import numpy as np

from deteval.errors import InputFormatError, ValidationError
from deteval.io.guards import csv_rows, read_json, read_text
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


def _dict_rows(text: str, file: str, columns: tuple[str, ...], what: str) -> tuple[list[dict], list[int]]:
    """The rows after the header as ``{column: field}`` (as ``csv.DictReader``: a short row lacks the last
    columns; blank lines are skipped) and the line each starts on (a quoted newline does not shift it)."""
    rows = csv_rows(text, file)
    header = next((fields for _, fields in rows if fields), [])  # (the rows after it are read below)
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputFormatError(
            f"the header lacks {', '.join(missing)} (a {what} CSV needs {', '.join(columns)})",
            file=file,
            record="line 1",
        )
    out, lines = [], []
    for line, fields in rows:
        if fields:
            out.append(dict(zip(header, fields)))
            lines.append(line)
    return out, lines


def read_oid_csv(
    source: Any, columns: tuple[str, ...], numeric: tuple[str, ...], what: str, unit: tuple[str, ...] = ()
) -> OidTable:
    """Read a CSV with a header (a path, or a list of row dicts), keeping ``columns``; ``numeric`` ones as
    finite float64, the ``unit`` ones (normalised coordinates) within [0, 1]. A missing column, a short row,
    a non-number or a value out of range names the file and line."""
    file = str(source) if isinstance(source, (str, PathLike)) else f"<in-memory {what}>"
    if isinstance(source, (str, PathLike)):
        rows, line_of = _dict_rows(read_text(source), file, columns, what)
        records = [f"line {x}" for x in line_of]
    else:
        rows = list(source)
        line_of = list(range(len(rows)))
        records = [f"row {i}" for i in line_of]
    n = len(rows)
    cols: dict[str, list[Any]] = {c: [None] * n for c in columns}
    for i, row in enumerate(rows):
        for c in columns:
            v = row.get(c) if isinstance(row, dict) else None
            if v is None:
                raise InputFormatError(f"missing {c}", file=file, record=records[i])
            cols[c][i] = v
    values: dict[str, np.ndarray] = {}
    for c in numeric:
        out = np.empty(n, dtype=np.float64)
        for i, v in enumerate(cols[c]):
            x = _number(v)
            if not math.isfinite(x):
                raise ValidationError(f"{c} must be a finite number, got {v!r}", file=file, record=records[i])
            if c in unit and not 0.0 <= x <= 1.0:
                raise ValidationError(
                    f"{c} {x:g} is outside [0, 1] (coordinates are normalised to the image)",
                    file=file,
                    record=records[i],
                )
            out[i] = x
        values[c] = out
    lines = np.asarray(line_of, dtype=np.int64)
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


#: The deepest hierarchy read (the TF tool recurses once per level; Python's stack ends near 1000).
MAX_HIERARCHY_DEPTH = 1000


def load_hierarchy(source: Any) -> Hierarchy:
    """Read the class hierarchy JSON (a path or the parsed dict); the top node is the root, not a class.

    Walked without recursion. A label that is its own ancestor (a cycle or a self-loop: the TF tool would
    recurse forever, or count a box twice) and a hierarchy deeper than :data:`MAX_HIERARCHY_DEPTH` levels
    are refused naming the label."""
    file = str(source) if isinstance(source, (str, PathLike)) else "<in-memory hierarchy>"
    tree = read_json(source, "hierarchy") if isinstance(source, (str, PathLike)) else source
    anc: dict[str, set[str]] = {}
    desc: dict[str, set[str]] = {}
    order: list[str] = []
    # an explicit stack of (node, path from the root, leaving?); ``below[k]``: the labels found so far
    # under the k-th node of the current path
    below: list[set[str]] = []
    stack: list[tuple[Any, list[str], bool]] = [(tree, [], False)]
    while stack:
        node, path, leaving = stack.pop()
        if leaving:
            name = node["LabelName"]
            mine = below.pop()
            if path:  # the root is skipped, as skip_root=True in the TF tool
                if name not in anc:
                    order.append(name)
                anc.setdefault(name, set()).update(path[1:])
                desc.setdefault(name, set()).update(mine)
                below[-1] |= mine | {name}
            continue
        if not isinstance(node, dict) or not isinstance(node.get("LabelName"), str):
            raise InputFormatError("every node needs a 'LabelName' string", file=file, record="/".join(path))
        if len(path) > MAX_HIERARCHY_DEPTH:
            raise ValidationError(f"the hierarchy is deeper than {MAX_HIERARCHY_DEPTH} levels", file=file)
        name = node["LabelName"]
        if name in path[1:]:
            raise ValidationError(
                f"{name!r} is its own ancestor (a cycle in the hierarchy)", file=file, record="/".join(path)
            )
        subs = node.get("Subcategory", [])
        if not isinstance(subs, list):
            raise InputFormatError("'Subcategory' must be a list", file=file, record=name)
        below.append(set())
        stack.append((node, path, True))
        for child in reversed(subs):  # (popped in file order, as the recursive walk visits them)
            stack.append((child, [*path, name], False))
    return Hierarchy(
        ancestors={k: sorted(v) for k, v in anc.items()},
        descendants={k: sorted(v) for k, v in desc.items()},
        order=order,
    )


def load_class_names(source: Any) -> list[tuple[str, str]]:
    """Class descriptions: ``LabelName,DisplayName`` rows, no header (Open Images' ``class-descriptions``)."""
    file = str(source)
    out = []
    for line, row in csv_rows(read_text(source), file):
        if not row:
            continue
        if len(row) < 2:
            raise InputFormatError("expected LabelName,DisplayName", file=file, record=f"line {line}")
        out.append((row[0], row[1]))
    return out
