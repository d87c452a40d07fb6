"""DOTA oriented-box annotations and Task1 detections → VOC tables with the quadrilaterals.

Annotations (the DOTA devkit's ``labelTxt``): one ``<image>.txt`` per image, a row per object
``x1 y1 x2 y2 x3 y3 x4 y4 category difficult`` (pixels; ``difficult`` 0 or 1, absent = 0), after optional
header lines ``imagesource:…`` and ``gsd:…``. The image's name is the file's stem.

Detections (the devkit's Task1 submission): one ``Task1_<category>.txt`` per category, a row per detection
``<image> <score> x1 y1 x2 y2 x3 y3 x4 y4``. Row order within a file is the order the devkit's
``np.argsort(-confidence)`` sorts, so it is kept.

Both come back as the VOC tables (:mod:`deteval.tables.voc`; boxes the quadrilaterals' axis-aligned extents)
and the ``(N, 8)`` corners. A row the devkit would misread is an error naming the file and the line (the
devkit skips a row of fewer than nine fields silently and fails on a malformed number); so is an empty or
missing folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from deteval.errors import InputFormatError, ValidationError
from deteval.io.guards import read_text
from deteval.tables.quads import corners_obb, quad_bounds
from deteval.tables.voc import VOCDetections, VOCGroundTruth

__all__ = ["HEADER_KEYS", "TASK1_PREFIX", "dota_coco", "load_dota_annotations", "load_dota_detections"]

#: Header lines of a DOTA annotation file (``imagesource:GoogleEarth``, ``gsd:0.146``).
HEADER_KEYS = ("imagesource:", "gsd:")
#: A Task1 detection file is ``Task1_<category>.txt``.
TASK1_PREFIX = "Task1_"


def _numbers(fields: list[str], path: Path, line: int) -> list[float]:
    try:
        values = [float(x) for x in fields]
    except ValueError:
        bad = next(x for x in fields if not _is_number(x))
        raise InputFormatError(f"{bad!r} is not a number", file=path, record=f"line {line}") from None
    if not all(np.isfinite(values)):
        raise ValidationError("NaN or infinite value", file=path, record=f"line {line}")
    return values


def _is_number(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True


def _lines(path: Path) -> list[tuple[int, list[str]]]:
    text = read_text(path, "DOTA file")
    return [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def load_dota_annotations(
    folder: str | os.PathLike[str], image_set: str | os.PathLike[str] | None = None
) -> VOCGroundTruth:
    """Every ``*.txt`` annotation file of ``folder`` (or the images an ``image_set`` file lists, one name a line).

    Parameters
    ----------
    folder
        The ``labelTxt`` folder.
    image_set
        Optional list of image names (stems); each needs its ``<name>.txt``.

    Returns
    -------
    VOCGroundTruth
        Images sorted by name (or in the list's order), classes sorted; ``boxes`` the extents, and
        ``meta["corners"]`` the ``(N, 8)`` corners.
    """
    root = Path(folder)
    if not root.is_dir():
        raise InputFormatError("DOTA annotations are a folder of <image>.txt files", file=root)
    if image_set is not None:
        names = [n.strip() for n in read_text(image_set, "image set").splitlines() if n.strip()]
        files = [root / f"{n}.txt" for n in names]
    else:
        files = sorted(root.glob("*.txt"))
        names = [f.stem for f in files]
    if not files:
        raise InputFormatError("no .txt annotation files in the folder", file=root)
    rows: list[tuple[int, str, list[float], int]] = []
    for i, path in enumerate(files):
        for line, f in _lines(path):
            if len(f) == 1 and f[0].startswith(HEADER_KEYS):
                continue
            if len(f) not in (9, 10):
                raise InputFormatError(
                    f"{len(f)} fields; expected x1 y1 x2 y2 x3 y3 x4 y4 category [difficult]",
                    file=path,
                    record=f"line {line}",
                )
            difficult = 0
            if len(f) == 10:
                if f[9] not in ("0", "1"):
                    raise ValidationError(
                        f"difficult {f[9]!r} is not 0 or 1", file=path, record=f"line {line}"
                    )
                difficult = int(f[9])
            rows.append((i, f[8], _numbers(f[:8], path, line), difficult))
    classes = sorted({r[1] for r in rows})
    cls_of = {c: k for k, c in enumerate(classes)}
    corners = np.array([r[2] for r in rows], dtype=np.float64).reshape(-1, 8)
    return VOCGroundTruth(
        images=tuple(names),
        classes=tuple(classes),
        image=np.array([r[0] for r in rows], dtype=np.int64),
        label=np.array([cls_of[r[1]] for r in rows], dtype=np.int64),
        boxes=quad_bounds(corners),
        difficult=np.array([r[3] for r in rows], dtype=bool),
        meta={"corners": corners},
    )


def load_dota_detections(folder: str | os.PathLike[str]) -> tuple[VOCDetections, np.ndarray]:
    """Every ``Task1_<category>.txt`` of ``folder`` (categories in name order, rows in file order).

    Parameters
    ----------
    folder
        The folder of Task1 files.

    Returns
    -------
    tuple
        The detections (image and category names as the files give them; boxes the extents) and their
        ``(N, 8)`` corners.
    """
    root = Path(folder)
    if not root.is_dir():
        raise InputFormatError("DOTA detections are a folder of Task1_<category>.txt files", file=root)
    files = sorted(root.glob(f"{TASK1_PREFIX}*.txt"))
    if not files:
        raise InputFormatError(f"no {TASK1_PREFIX}<category>.txt files in the folder", file=root)
    images: dict[str, int] = {}
    img, lab, score, quads = [], [], [], []
    for k, path in enumerate(files):
        for line, f in _lines(path):
            if len(f) != 10:
                raise InputFormatError(
                    f"{len(f)} fields; expected image score x1 y1 x2 y2 x3 y3 x4 y4",
                    file=path,
                    record=f"line {line}",
                )
            v = _numbers(f[1:], path, line)
            img.append(images.setdefault(f[0], len(images)))
            lab.append(k)
            score.append(v[0])
            quads.append(v[1:])
    corners = np.array(quads, dtype=np.float64).reshape(-1, 8)
    dets = VOCDetections(
        images=tuple(images),
        classes=tuple(p.stem[len(TASK1_PREFIX) :] for p in files),
        image=np.array(img, dtype=np.int64),
        label=np.array(lab, dtype=np.int64),
        boxes=quad_bounds(corners),
        scores=np.array(score, dtype=np.float64),
    )
    return dets, corners


def dota_coco(gt: VOCGroundTruth, dets: VOCDetections, det_corners: np.ndarray) -> tuple[dict, list]:
    """The tables in the COCO-style OBB form, as hotcoco's ``COCO.from_dota`` reads a labelTxt folder.

    Images get ids 1, 2, … in the annotations' image order (sorted names), categories 1, 2, … in
    ``gt.classes`` order then those only the detections name; every quadrilateral becomes
    ``obb = corners_obb(corners)`` with ``area = w·h``, and a difficult object ``iscrowd = 1`` (hotcoco's rule:
    a crowd region, matched by intersection over the detection's area).

    Returns
    -------
    tuple
        The ground-truth dict and the results list (:func:`deteval.io.coco_obb.load_obb_gt` reads both).
    """
    classes = list(gt.classes) + [c for c in dets.classes if c not in set(gt.classes)]
    cat_id = {c: k + 1 for k, c in enumerate(classes)}
    img_id = {n: i + 1 for i, n in enumerate(gt.images)}
    unknown = [n for n in dets.images if n not in img_id]
    if unknown:
        raise ValidationError(
            f"{len(unknown)} detection image(s) without an annotation file, e.g. {unknown[0]!r}"
        )
    corners = gt.meta["corners"]
    g, d = corners_obb(corners).tolist(), corners_obb(det_corners).tolist()
    anns = [
        {"id": k + 1, "image_id": int(gt.image[k]) + 1, "category_id": cat_id[gt.classes[int(gt.label[k])]],
         "obb": g[k], "area": g[k][2] * g[k][3], "iscrowd": int(gt.difficult[k])}
        for k in range(len(gt))
    ]  # fmt: skip
    results = [
        {"image_id": img_id[dets.images[int(dets.image[k])]], "category_id": cat_id[dets.classes[int(dets.label[k])]],
         "obb": d[k], "score": float(dets.scores[k])}
        for k in range(len(dets))
    ]  # fmt: skip
    doc = {
        "images": [{"id": i, "file_name": f"{n}.png"} for n, i in img_id.items()],
        "categories": [{"id": k, "name": c} for c, k in cat_id.items()],
        "annotations": anns,
    }
    return doc, results
