"""Pascal VOC detection result files → :class:`~deteval.tables.voc.VOCDetections`.

Detections in the devkit's "comp4" layout, one file per class (``comp4_det_test_{cls}.txt``), each line
``<image_id> <score> <x1> <y1> <x2> <y2>``; or one file with a class column,
``<image_id> <class> <score> <x1> <y1> <x2> <y2>``. Lines are parsed with numpy over the whole file
(:mod:`deteval.io.voc.text_table`); the row order is the file order (the devkit's tie order). A detection
for an image outside the image set is an error (as in the devkit), or with ``unknown_images="warn"`` it is
dropped and counted in the warnings.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from deteval.errors import ConfigError, InputFormatError, ValidationError, first_true
from deteval.io.guards import refuse_special
from deteval.io.voc.files import PathLike
from deteval.io.voc.text_table import read_table, token_text
from deteval.tables.voc import VOCDetections

__all__ = ["discover_detection_classes", "load_voc_detections"]


def _pattern_regex(pattern: str) -> tuple[str, re.Pattern[str]]:
    parts = pattern.split("{cls}")
    glob_pat = "*".join(glob.escape(p) for p in parts)
    rx = "(?P<cls>[^/\\\\]+?)".join(re.escape(p) for p in parts)
    return glob_pat, re.compile(f"^{rx}$")


def discover_detection_classes(pattern: PathLike) -> list[str]:
    """Class names for which a file matching the ``{cls}`` pattern exists, sorted."""
    pat = str(pattern)
    if "{cls}" not in pat:
        raise ConfigError(f"detection path pattern must contain {{cls}}: {pat!r}")
    glob_pat, rx = _pattern_regex(pat)
    found = set()
    for p in glob.glob(glob_pat):
        m = rx.match(p)
        if m and os.path.isfile(p):
            found.add(m.group("cls"))
    return sorted(found)


def _as_words(col: np.ndarray) -> np.ndarray | None:
    """A fixed-width byte-string column of at most 8 bytes as big-endian integers of its NUL-padded bytes
    (same order and equality as the strings, which numpy pads with NULs too), else None."""
    width = col.dtype.itemsize
    if col.dtype.kind != "S" or width > 8:
        return None
    padded = np.zeros((col.shape[0], 8), dtype=np.uint8)
    padded[:, :width] = col.view(np.uint8).reshape(col.shape[0], width)
    return padded.view(">u8").reshape(col.shape[0])


class _ImageIndex:
    """The row of each detection's image id in the image set, and the count of ids outside it (an error, or
    dropped under ``unknown_images="warn"``)."""

    def __init__(self, images: Sequence[str], unknown_images: str) -> None:
        keys = np.array([str(i).encode("utf-8") for i in images], dtype=bytes)
        self.order = np.argsort(keys, kind="stable")
        self.sorted = keys[self.order]
        self.words = _as_words(self.sorted)
        self.unknown_images = unknown_images
        self.unknown_total = 0
        self.unknown_examples: list[str] = []

    def rows(self, ids: np.ndarray, lines: np.ndarray, path: PathLike) -> tuple[np.ndarray, np.ndarray]:
        """Each id's image index (-1 if unknown) and whether it is known; ``lines`` name them in messages."""
        # Vectorised lookup: binary search in the sorted image ids (bytes, as the column is; as integers
        # when both fit in 8 bytes: the same order, and cheaper to compare than strings)
        if self.sorted.size and ids.size:
            words = _as_words(ids) if self.words is not None else None
            hay, needles = (
                (self.words, words) if self.words is not None and words is not None else (self.sorted, ids)
            )
            at = np.minimum(np.searchsorted(hay, needles), self.sorted.shape[0] - 1)
            idx = np.where(hay[at] == needles, self.order[at], -1)
        else:
            idx = np.full(ids.shape[0], -1, dtype=np.int64)
        unknown = idx < 0
        if (r := first_true(unknown)) >= 0:
            if self.unknown_images == "error":
                raise ValidationError(
                    f"image id {token_text(ids[r])!r} is not in the image set "
                    f"({int(unknown.sum())} such line(s) in this file; --unknown-images warn "
                    "(Python: unknown_images='warn') drops them)",
                    file=path,
                    record=f"line {int(lines[r])}",
                )
            self.unknown_total += int(unknown.sum())
            if len(self.unknown_examples) < 3:
                self.unknown_examples.append(f"{path}: line {int(lines[r])}: {token_text(ids[r])!r}")
        return idx, ~unknown


#: One file's detections: image index, class index, boxes, scores.
_Chunk = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_NUMBERS = ("score", "x1", "y1", "x2", "y2")


class _Files:
    """What reading the detection files collected: the kept rows of each file, the bad lines skipped, the
    empty files and the warnings."""

    def __init__(self, index: _ImageIndex, on_error: str) -> None:
        self.index = index
        self.on_error = on_error
        self.chunks: list[_Chunk] = []
        self.skipped: list[str] = []
        self.empty: list[str] = []
        self.warnings: list[str] = []

    def read(
        self, path: PathLike, n_str: int, layout: str
    ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """A file's string columns, numbers and line numbers (:func:`read_table`)."""
        refuse_special(path, "detection file")  # (a pipe would block the open, /dev/zero never end)
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputFormatError(f"cannot read detections: {exc.strerror or exc}", file=path) from None
        if not data.strip():
            self.empty.append(str(path))
        strings, vals, lines, bad = read_table(data, n_str, _NUMBERS, path, layout, self.on_error)
        self.skipped += bad
        return strings, vals, lines

    def keep(
        self, ids: np.ndarray, label: np.ndarray, vals: np.ndarray, lines: np.ndarray, path: PathLike
    ) -> None:
        """Keep the rows whose image is in the image set."""
        idx, keep = self.index.rows(ids, lines, path)
        self.chunks.append((idx[keep], label[keep], vals[keep, 1:], vals[keep, 0]))


def _read_comp4(pattern: str, classes: Sequence[str] | None, files: _Files) -> list[str]:
    """Read one file per class of ``pattern`` (``{cls}`` replaced by the class name); the class list."""
    if "{cls}" not in pattern:
        raise ConfigError(f"the comp4 detection pattern must contain {{cls}}: {pattern!r}")
    class_list = list(classes) if classes is not None else discover_detection_classes(pattern)
    missing = []
    present = 0
    for ci, cname in enumerate(class_list):
        path = pattern.replace("{cls}", cname)
        if not os.path.isfile(path):
            if os.path.exists(path):
                refuse_special(path, "detection file")  # (a device or a pipe is named as what it is)
                raise InputFormatError("a detection file is expected here, found a directory", file=path)
            missing.append(cname)
            continue
        present += 1
        (ids,), vals, lines = files.read(path, 1, "<image_id> <score> <x1> <y1> <x2> <y2>")
        files.keep(ids, np.full(ids.shape[0], ci, dtype=np.int64), vals, lines, path)
    if present == 0:
        raise InputFormatError(
            f"no detection file matches the pattern for any of {len(class_list)} class(es)", file=pattern
        )
    if missing:
        files.warnings.append(
            f"no detection file for {len(missing)} class(es) (scored with 0 detections): "
            + ", ".join(missing)
        )
    return class_list


def _read_single(path: PathLike, classes: Sequence[str] | None, files: _Files) -> list[str]:
    """Read one file with a class column; the class list (``classes``, then the other names, sorted)."""
    (ids, cls_col), vals, lines = files.read(path, 2, "<image_id> <class> <score> <x1> <y1> <x2> <y2>")
    class_list = list(classes) if classes is not None else []
    cuniq, cinv = np.unique(cls_col, return_inverse=True)
    known = set(class_list)
    cnames = [token_text(c) for c in cuniq.tolist()]
    class_list += sorted(c for c in cnames if c not in known)
    cpos = {c: k for k, c in enumerate(class_list)}
    label = np.array([cpos[c] for c in cnames], dtype=np.int64)[cinv] if cinv.size else np.empty(0, np.int64)
    files.keep(ids, label, vals, lines, path)
    return class_list


def load_voc_detections(
    source: PathLike,
    images: Sequence[str],
    *,
    classes: Sequence[str] | None = None,
    layout: Literal["comp4", "single"] = "comp4",
    unknown_images: Literal["error", "warn"] = "error",
    on_error: Literal["raise", "skip"] = "raise",
) -> VOCDetections:
    """Read detection results into a columnar :class:`VOCDetections` whose images are ``images``.

    * ``layout="comp4"``: ``source`` is a path pattern with ``{cls}`` (``results/comp4_det_test_{cls}.txt``),
      one file per class, lines ``<image_id> <score> <x1> <y1> <x2> <y2>``. ``classes`` lists the classes
      to read (default: every class with a file). A listed class without a file has no detections (a
      warning says so); if no file exists at all, that is an error.
    * ``layout="single"``: ``source`` is one file, lines ``<image_id> <class> <score> <x1> <y1> <x2> <y2>``;
      ``classes`` (optional) fixes the class list, other class names are appended.

    An image id not in ``images`` raises (as the devkit does), or with ``unknown_images="warn"`` the line
    is dropped and the count reported in ``warnings`` and ``dropped_unknown_images``. Scores and
    coordinates must be finite, boxes not inverted; errors name the file and the line. With
    ``on_error="skip"`` a bad line (wrong number of fields, not a number, not finite, inverted box, not
    UTF-8) is left out instead, and listed in ``skipped`` as ``"<file>: line N: reason"``: the detections
    are then exactly those of the files without the bad lines. An empty file is zero detections (with a
    warning); a UTF-8 byte-order mark, Windows or old Mac line ends, tabs and repeated spaces are accepted.
    """
    if unknown_images not in ("error", "warn"):
        raise ConfigError(f"unknown_images must be 'error' or 'warn', got {unknown_images!r}")
    if on_error not in ("raise", "skip"):
        raise ConfigError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    if classes is not None and len(set(classes)) != len(classes):
        # A class listed twice would have its comp4 file read twice: every detection counted double.
        twice = next(c for i, c in enumerate(classes) if c in classes[:i])
        raise ConfigError(f"classes lists {twice!r} twice")
    index = _ImageIndex(images, unknown_images)
    files = _Files(index, on_error)
    if layout == "comp4":
        class_list = _read_comp4(str(source), classes, files)
    elif layout == "single":
        class_list = _read_single(source, classes, files)
    else:
        raise ConfigError(f"unknown detection layout {layout!r}; use 'comp4' or 'single'")

    warnings = files.warnings
    if files.empty:
        warnings.append(
            f"{len(files.empty)} empty detection file(s) (0 detections): " + ", ".join(files.empty)
        )
    if index.unknown_total:
        warnings.append(
            f"{index.unknown_total} detection(s) for images not in the image set were dropped, e.g. "
            + "; ".join(index.unknown_examples)
        )
    # (an empty chunk first: the columns' types and shapes where no file has a row)
    empty: _Chunk = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty((0, 4)), np.empty(0))
    image, label, boxes, scores = (np.concatenate(column) for column in zip(empty, *files.chunks))
    return VOCDetections(
        images=tuple(images),
        classes=tuple(class_list),
        image=image,
        label=label,
        boxes=boxes,
        scores=scores,
        warnings=tuple(warnings),
        skipped=tuple(files.skipped),
        dropped_unknown_images=index.unknown_total,
    )
