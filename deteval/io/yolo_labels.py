"""Label (and prediction) rows of YOLO txt files, read in bulk and checked as columns.

A row is ``cls xc yc w h`` (a box, normalized), ``cls x1 y1 … xn yn`` (a polygon) or either followed by ``conf``
(a prediction); in a pose dataset, a box followed by K keypoints (:mod:`deteval.io.yolo_pose`). The files are
read in one pass (:func:`deteval.io.text_rows.read_rows`), their rows checked as columns, and the first fault
raised as a reader going file by file and row by row would meet it, with its file and line; exact duplicate
labels are an error or, under the Ultralytics profiles, dropped as Ultralytics drops them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from deteval.core.sorting import distinct
from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.text_rows import Check, TextRows, first_fault, read_rows

Duplicates = Literal["error", "drop"]


@dataclass
class LabelRows:
    """The rows of many label (or prediction) files: ``file`` (index into the paths), class, normalized
    ``xc yc w h`` (a polygon's extent), conf (zeros for labels), the polygons (one flat normalized array per
    row, or None when no file has polygon rows), per file the exact duplicates dropped, and pose rows'
    keypoints (R × K × 3 normalized: ``x y v``, or ``x y score`` for predictions; None for other rows)."""

    file: np.ndarray
    cls: np.ndarray
    xywh: np.ndarray
    conf: np.ndarray
    polygons: list[np.ndarray | None] | None
    dropped: dict[int, int]
    keypoints: np.ndarray | None = None


def parse_label_files(
    paths: Sequence[str | os.PathLike[str]],
    nc: int,
    *,
    with_conf: bool = False,
    duplicates: Duplicates = "error",
    missing_ok: bool = False,
    file_errors: dict[int, DetevalError] | None = None,
    on_dropped: Callable[[Path, int], None] | None = None,
    rows: TextRows | None = None,
    kpt_shape: tuple[int, int] | None = None,
) -> LabelRows:
    """Rows of many label (``cls xc yc w h`` or ``cls x1 y1 … xn yn``) or prediction (the same and ``conf``)
    files, read in bulk (:func:`deteval.io.text_rows.read_rows`) and checked as columns.

    The first fault is raised as a file-by-file reader meets it (files in order; in a file, a row of the
    wrong column count, then a file mixing box and polygon rows, then row by row: a field that is not a
    number, NaN or infinity, a confidence outside [0, 1], a class that is not an integer in ``[0, nc)``,
    Ultralytics' coordinate checks; then exact duplicates). ``file_errors``: faults of whole files known to
    the caller (they come first in their file). ``duplicates="drop"`` keeps one of each exact duplicate
    (labels only) in ``np.unique`` order, as Ultralytics, and calls ``on_dropped(path, count)`` per file in
    order (for the files before a fault too). ``rows``: the files' rows already read (:func:`~deteval.io.
    text_rows.read_rows` of ``paths``, e.g. by another process), checked here as if read here.
    ``kpt_shape``: pose rows of K keypoints of D numbers (:func:`_pose_columns`), checked row by row (the
    column count with the values) and compared whole for duplicates."""
    if rows is None:
        rows = read_rows(paths, "label file", missing_ok=missing_ok)
    if file_errors:
        rows.file_errors.update(file_errors)
    keypoints = whole = None
    if kpt_shape is not None:
        kind = np.zeros(len(rows), dtype=np.int8)
        cls, xywh, conf, keypoints, whole, phases = _pose_columns(rows, nc, kpt_shape, with_conf)
        polys = None
    else:
        cls, xywh, conf, kind, polys, phases = _label_columns(rows, nc, with_conf)
    keeps, dup_rows = _duplicates(rows, kind, cls, xywh, polys, whole, with_conf, duplicates == "error")

    def duplicate(r: int) -> DetevalError:
        f = int(rows.file[r])
        lo, hi = rows.file_rows(f)
        first = _first_duplicate(_compared(cls, xywh, whole, lo, hi), _file_polygons(polys, kind, lo, hi))
        path, where = rows.where(r)
        return ValidationError(
            f"exact duplicate of line {int(rows.line[lo + first[0]])} (Ultralytics drops it; pass a "
            "ultralytics profile to do the same)",
            file=path,
            record=where,
        )

    phases.append([(dup_rows, duplicate)])
    fault = first_fault(rows, phases)
    dropped = {f: rows.file_rows(f)[1] - rows.file_rows(f)[0] - len(k) for f, k in keeps.items()}
    if on_dropped is not None:  # (a file-by-file reader warns for the files before the fault)
        for f in sorted(dropped):
            if fault is None or f < fault[0]:
                on_dropped(Path(rows.paths[f]), dropped[f])
    if fault is not None:
        raise fault[1]
    if not keeps:
        return LabelRows(rows.file, cls.astype(np.int64), xywh, conf, polys, dropped, keypoints)
    take = _kept_rows(rows, keeps)
    kept_polys = None if polys is None else [polys[i] for i in take.tolist()]
    return LabelRows(
        rows.file[take],
        cls[take].astype(np.int64),
        xywh[take],
        conf[take],
        kept_polys,
        dropped,
        None if keypoints is None else keypoints[take],
    )


def _label_columns(
    rows: TextRows, nc: int, with_conf: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[np.ndarray | None] | None, list[list[Check]]]:
    """Box and polygon rows: class, ``xc yc w h``, conf, kind (0 box, 1 polygon, 2 neither), the polygons,
    and the phases of checks (column counts, then a file mixing kinds, then the values row by row)."""
    extra = 1 if with_conf else 0
    if bool((rows.width == 5 + extra).all()):  # (the usual file: box rows only)
        kind = np.zeros(len(rows), dtype=np.int8)
    else:
        n = rows.width - extra
        kind = np.where(n == 5, 0, np.where((n >= 7) & (n % 2 == 1), 1, 2)).astype(np.int8)

    def bad_width(r: int) -> DetevalError:
        path, where = rows.where(r)
        w = int(rows.width[r])
        if with_conf and w == 5:
            return InputFormatError(
                "5 columns: a prediction row needs a confidence (yolo predict … save_conf=True)",
                file=path,
                record=where,
            )
        want = (
            "cls xc yc w h conf or cls x1 y1 … xn yn conf"
            if with_conf
            else "cls xc yc w h or cls x1 y1 … xn yn"
        )
        return InputFormatError(f"{w} columns; expected {want}", file=path, record=where)

    def mixed(r: int) -> DetevalError:
        path, where = rows.where(r)
        return ValidationError("the file mixes box rows and polygon rows", file=path, record=where)

    cls, xywh, conf, points_max = _row_columns(rows, kind, extra)
    with np.errstate(invalid="ignore"):
        low = np.minimum(cls, _row_min(xywh))
        coordinates = [
            (points_max > 1.01, "coordinate above 1.01: labels must be normalized to [0, 1]"),
            (
                ~((low >= 0) | ((low >= -0.01) & (np.minimum(xywh[:, 2], xywh[:, 3]) >= 0))),
                "negative coordinate beyond Ultralytics' −0.01 tolerance",
            ),
        ]
    values = _value_checks(
        rows, cls, conf, nc, with_conf, lambda r: f"{rows.unparsed_field(r)!r} is not a number", coordinates
    )
    phases: list[list[Check]] = [[(kind == 2, bad_width)], [(_other_kind(rows, kind), mixed)], values]
    return cls, xywh, conf, kind, _polygons(rows, kind, extra), phases


def _pose_columns(
    rows: TextRows, nc: int, kpt_shape: tuple[int, int], with_conf: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[list[Check]]]:
    """Pose rows (``cls xc yc w h`` then K keypoints of D numbers; a prediction's keypoints ``x y`` or ``x y
    conf``, then its confidence): class, ``xc yc w h``, conf, keypoints (R × K × 3: with D = 2 a label's
    keypoint is visible unless a coordinate is negative, as Ultralytics' ``verify_image_label`` sets it), the
    whole rows (what duplicates are compared by), and one phase of checks: row by row, the column count, the
    values, and for labels Ultralytics' keypoint checks (coordinates ≤ 1.01; the row's smallest value ≥ 0,
    or ≥ −0.01 with w, h ≥ 0; a model's keypoints may lie outside the image)."""
    k, dim = kpt_shape
    extra = 1 if with_conf else 0
    widths = (6 + 2 * k, 6 + 3 * k) if with_conf else (5 + k * dim,)
    r = len(rows)
    cls, xywh, conf = np.full(r, np.nan), np.full((r, 4), np.nan), np.zeros(r)
    # (the whole rows in float32, as Ultralytics compares them; a faulty row's values may overflow it)
    keypoints, whole = np.zeros((r, k, 3)), np.full((r, widths[-1]), np.nan, dtype=np.float32)
    points_max, low = np.zeros(r), np.zeros(r)
    with np.errstate(invalid="ignore", over="ignore"):
        for w in widths:
            at = np.flatnonzero(rows.width == w)
            table = rows.matrix(w, at)
            d = (w - 5 - extra) // k
            pts = table[:, 5 : w - extra].reshape(-1, k, d)
            cls[at], xywh[at], whole[at, :w] = table[:, 0], table[:, 1:5], table
            keypoints[at, :, :2] = pts[:, :, :2]
            if extra:
                conf[at] = table[:, -1]
            if d == 3:
                keypoints[at, :, 2] = pts[:, :, 2]
            elif not extra:  # (Ultralytics: visible unless a coordinate is negative)
                keypoints[at, :, 2] = np.where((pts[:, :, 0] < 0) | (pts[:, :, 1] < 0), 0.0, 1.0)
            if len(at) and not extra:
                points_max[at], low[at] = pts[:, :, :2].max((1, 2)), table.min(1)
        coordinates = []
        if not extra:
            coordinates = [
                (points_max > 1.01, "keypoint coordinate above 1.01: labels must be normalized to [0, 1]"),
                (
                    ~((low >= 0) | ((low >= -0.01) & (np.minimum(xywh[:, 2], xywh[:, 3]) >= 0))),
                    "negative value beyond Ultralytics' −0.01 tolerance",
                ),
            ]
    want = " or ".join(map(str, widths))

    def bad_width(r: int) -> DetevalError:
        path, where = rows.where(r)
        text = f"{int(rows.width[r])} columns; a pose row of kpt_shape [{k}, {dim}] has {want}"
        return InputFormatError(text, file=path, record=where)

    values = _value_checks(rows, cls, conf, nc, with_conf, "a value is not a number", coordinates)
    return cls, xywh, conf, keypoints, whole, [[(~np.isin(rows.width, widths), bad_width), *values]]


def _duplicates(
    rows: TextRows,
    kind: np.ndarray,
    cls: np.ndarray,
    xywh: np.ndarray,
    polys: list[np.ndarray | None] | None,
    whole: np.ndarray | None,
    with_conf: bool,
    mark: bool,
) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """Exact duplicate rows of label files (predictions have none to look for), compared by class and box
    (polygon) or by the ``whole`` rows: per file that has some, the rows it keeps (``np.unique`` order, as
    Ultralytics); and, with ``mark``, each such file's first duplicate row flagged (where a duplicate is an
    error)."""
    multi = np.zeros(0, dtype=np.int64) if with_conf else _files_with_duplicates(rows, cls, xywh, polys)
    dup_rows = np.zeros(len(rows), dtype=bool)
    keeps: dict[int, np.ndarray] = {}
    for f in multi.tolist():
        lo, hi = rows.file_rows(f)
        lb, p = _compared(cls, xywh, whole, lo, hi), _file_polygons(polys, kind, lo, hi)
        keep = _unique_rows(lb, p)
        if len(keep) < hi - lo:
            keeps[f] = keep
            if mark:
                dup_rows[lo + _first_duplicate(lb, p)[1]] = True
    return keeps, dup_rows


def _kept_rows(rows: TextRows, keeps: dict[int, np.ndarray]) -> np.ndarray:
    """The rows left once the files of ``keeps`` keep only theirs (each file's rows given from its first)."""
    order = np.arange(len(rows))
    pieces = []
    last = 0
    for f in sorted(keeps):
        lo, hi = rows.file_rows(f)
        pieces += [order[last:lo], lo + keeps[f]]
        last = hi
    pieces.append(order[last:])
    return np.concatenate(pieces)


def _row_columns(
    rows: TextRows, kind: np.ndarray, extra: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row: class, ``xc yc w h`` (a polygon's extent), conf, and the largest coordinate (at least 0)."""
    r = len(rows)
    box = kind == 0
    if box.all():  # (every row a box: views of the values, which lie end to end; nothing writes to them)
        table = rows.matrix(5 + extra)
        cls, xywh = table[:, 0], table[:, 1:5]
        conf = table[:, 5] if extra else np.zeros(r)
        with np.errstate(invalid="ignore"):
            return cls, xywh, conf, np.maximum(_row_max(xywh), 0.0)
    cls = rows.column(0)
    conf = rows.column(-1) if extra else np.zeros(r)
    with np.errstate(invalid="ignore"):
        xywh = np.full((r, 4), np.nan)
        xywh[box] = rows.matrix(5, np.flatnonzero(box))[:, 1:5]
        points_max = np.maximum(_row_max(xywh), 0.0)
        poly = np.flatnonzero(kind == 1)
        if len(poly):
            pos = rows.position()
            is_point = (pos >= 1) & (pos < np.repeat(rows.width - extra, rows.width))
            points_max[poly] = rows.row_reduce(np.maximum, np.where(is_point, rows.values, 0.0))[poly]
            ends = []
            for parity in (1, 0):  # x at odd fields, y at even ones
                on = is_point & (pos % 2 == parity)
                ends.append(rows.row_reduce(np.minimum, np.where(on, rows.values, np.inf))[poly])
                ends.append(rows.row_reduce(np.maximum, np.where(on, rows.values, -np.inf))[poly])
            lo_x, hi_x, lo_y, hi_y = ends
            xywh[poly] = np.stack([(lo_x + hi_x) / 2, (lo_y + hi_y) / 2, hi_x - lo_x, hi_y - lo_y], 1)
    return cls, xywh, conf, points_max


def _row_max(xywh: np.ndarray) -> np.ndarray:
    """``xywh.max(1)`` of an (R, 4) array, column by column (a reduction along rows of 4 is several times
    slower); NaN propagates the same."""
    return np.maximum(np.maximum(np.maximum(xywh[:, 0], xywh[:, 1]), xywh[:, 2]), xywh[:, 3])


def _row_min(xywh: np.ndarray) -> np.ndarray:
    """``xywh.min(1)`` of an (R, 4) array, column by column (see :func:`_row_max`)."""
    return np.minimum(np.minimum(np.minimum(xywh[:, 0], xywh[:, 1]), xywh[:, 2]), xywh[:, 3])


def _value_checks(
    rows: TextRows,
    cls: np.ndarray,
    conf: np.ndarray,
    nc: int,
    with_conf: bool,
    not_number: str | Callable[[int], str],
    coordinates: list[tuple[np.ndarray, str]],
) -> list[Check]:
    """Ultralytics' label checks per row, in the order a row meets them: every field a number (else
    ``not_number``'s message), finite, the confidence in [0, 1], an integer class in range, then the
    ``coordinates`` checks (fault mask, message)."""
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(rows.values)
        nonfinite = np.zeros(len(rows), bool) if finite.all() else rows.row_reduce(np.logical_or, ~finite)
        checks: list[tuple[np.ndarray, str | Callable[[int], str], type[DetevalError]]] = [
            (rows.unparsed, not_number, InputFormatError),
            (nonfinite, "NaN or infinite value", ValidationError),
        ]
        if with_conf:
            checks.append(
                (
                    ~((conf >= 0) & (conf <= 1)),
                    lambda r: f"confidence {conf[r]:g} outside [0, 1]",
                    ValidationError,
                )
            )
        checks += [
            (
                (cls % 1 != 0) | (cls < 0),
                lambda r: f"class {cls[r]:g} is not a non-negative integer",
                ValidationError,
            ),
            (
                cls >= nc,
                lambda r: f"class {_shown_class(float(cls[r]))} is not below nc={nc}",
                ValidationError,
            ),
        ]
    checks += [(mask, text, ValidationError) for mask, text in coordinates]
    return [(mask, _raiser(rows, text, kind)) for mask, text, kind in checks]


def _raiser(
    rows: TextRows, text: str | Callable[[int], str], kind: type[DetevalError]
) -> Callable[[int], DetevalError]:
    def make(r: int) -> DetevalError:
        path, where = rows.where(r)
        return kind(text if isinstance(text, str) else text(r), file=path, record=where)

    return make


def _shown_class(cls: float) -> str:
    return str(int(cls)) if cls < 1e15 else f"{cls:g}"  # (a 301-digit class is not printed whole)


def _polygons(rows: TextRows, kind: np.ndarray, extra: int) -> list[np.ndarray | None] | None:
    """Each polygon row's points (a flat float64 array), None for box rows; None if there is no polygon."""
    poly = np.flatnonzero(kind == 1)
    if not len(poly):
        return None
    out: list[np.ndarray | None] = [None] * len(rows)
    for r in poly.tolist():
        s = int(rows.start[r])
        out[r] = rows.values[s + 1 : s + int(rows.width[r]) - extra].copy()
    return out


def _other_kind(rows: TextRows, kind: np.ndarray) -> np.ndarray:
    """Rows whose kind (box, polygon) is not that of their file's first row."""
    if not ((kind == 0).any() and (kind == 1).any()):
        return np.zeros(len(rows), dtype=bool)
    first = np.flatnonzero(np.diff(rows.file, prepend=-1))  # (rows are sorted by file)
    return kind != np.repeat(kind[first], np.diff(np.append(first, len(rows))))


def _file_polygons(
    polys: list[np.ndarray | None] | None, kind: np.ndarray, lo: int, hi: int
) -> list[np.ndarray | None] | None:
    """The polygons of rows ``lo:hi`` (one file), or None if its rows are boxes."""
    return None if polys is None or kind[lo] != 1 else polys[lo:hi]


def _files_with_duplicates(
    rows: TextRows, cls: np.ndarray, xywh: np.ndarray, polys: list[np.ndarray | None] | None
) -> np.ndarray:
    """Files that may hold two rows equal as Ultralytics compares them (float32 class and box): a hash of
    each row's float32 values sorted, equal neighbours flagged; :func:`_unique_rows` then decides exactly."""
    if len(rows) < 2:
        return np.zeros(0, dtype=np.int64)
    with np.errstate(over="ignore", invalid="ignore"):  # (rows of faulty files may hold anything)
        # each row's float32 class and box, and its file, as three 64-bit words
        q = np.empty((len(rows), 6), dtype=np.float32)
        q[:, 0] = cls
        q[:, 1:5] = xywh
        q[:, :5] += np.float32(0)  # (−0 as 0, as == compares)
        q.view(np.uint32)[:, 5] = rows.file
        words = q.view(np.uint64)
        h = words[:, 0] * _MIX[0]
        h ^= words[:, 1] * _MIX[1]
        h ^= words[:, 2] * _MIX[2]
    hs = np.sort(h)
    repeated = hs[1:][hs[1:] == hs[:-1]]
    if not len(repeated):
        return np.zeros(0, dtype=np.int64)
    return distinct(rows.file[np.isin(h, repeated)])


_MIX = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x27D4EB2F165667C5, 0x94D049BB133111EB],
    dtype=np.uint64,
)


def _compared(cls: np.ndarray, xywh: np.ndarray, whole: np.ndarray | None, lo: int, hi: int) -> np.ndarray:
    """The values rows ``lo:hi`` are compared by: the ``whole`` rows if given, else class and box."""
    return whole[lo:hi] if whole is not None else np.concatenate([cls[lo:hi, None], xywh[lo:hi]], 1)


def _unique_rows(rows: np.ndarray, polys: list[np.ndarray | None] | None) -> np.ndarray:
    """Ultralytics' ``np.unique`` over float32 rows (then over class + polygon bytes when boxes repeat)."""
    lb = rows.astype(np.float32)
    _, keep = np.unique(lb, axis=0, return_index=True)
    if len(keep) < len(lb) and polys is not None:
        keys = np.array(
            [
                np.float32(c).tobytes() + np.asarray(p, dtype=np.float32).tobytes()
                for c, p in zip(lb[:, 0], polys)
            ],
            dtype=object,
        )
        _, keep = np.unique(keys, return_index=True)
    return keep


def _first_duplicate(rows: np.ndarray, polys: list[np.ndarray | None] | None) -> tuple[int, int]:
    """The first row equal to an earlier one, and that earlier row, as :func:`_unique_rows` compares rows
    (box values numerically, so −0 equals 0; polygons by their float32 bytes)."""
    seen: dict[bytes, int] = {}
    for k in range(len(rows)):
        if polys is not None:
            key = np.float32(rows[k, 0]).tobytes() + np.asarray(polys[k], np.float32).tobytes()
        else:
            key = (rows[k].astype(np.float32) + np.float32(0)).tobytes()
        if key in seen:
            return seen[key], k
        seen[key] = k
    raise AssertionError("no duplicate")  # pragma: no cover
