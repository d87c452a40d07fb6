"""Pascal VOC files: annotation XML, image-set lists and detection results.

Annotations (``Annotations/<id>.xml``) become a :class:`~deteval.detection.voc.VOCGroundTruth`:

* per object: ``name``, ``bndbox`` (``xmin ymin xmax ymax``, integer or float), ``difficult`` (missing
  means 0), and as metadata ``truncated``, ``occluded`` (-1 when missing) and ``pose`` ("" when missing);
  per image: ``filename`` and ``size`` (``width``, ``height``, ``depth``; -1 when missing).
* coordinates are kept as written (VOC's 1-based, inclusive pixels): the devkit compares them as such and
  its +1 IoU accounts for inclusivity; shifting them would change float coordinates in the last bit.
* a box with xmax < xmin or ymax < ymin is rejected (:class:`ValidationError` naming the file and the
  object): the devkit would accept it but it could never be matched, silently lowering recall. A box with
  xmax == xmin is valid (one pixel wide under the +1 convention).
* objects are numbered from 1 in file order in error messages ("object 3").

XML is parsed safely without defusedxml: a document containing ``<!DOCTYPE`` or ``<!ENTITY`` is refused
before any parsing (so a "billion laughs" file costs one byte scan), documents in encodings that could hide
those markers from the scan (UTF-16/32, EBCDIC, ...) are refused, and the parser's ``doctype`` hook raises
as a second line of defence. No DTD, entity or external reference is ever processed.

Detections in the devkit's "comp4" layout, one file per class (``comp4_det_test_{cls}.txt``), each line
``<image_id> <score> <x1> <y1> <x2> <y2>``; or one file with a class column,
``<image_id> <class> <score> <x1> <y1> <x2> <y2>``. Lines are parsed with numpy over the whole file; the
row order is the file order (the devkit's tie order). A detection for an image outside the image set is an
error (as in the devkit), or with ``unknown_images="warn"`` it is dropped and counted in the warnings.
"""

from __future__ import annotations

import glob
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from deteval.detection.voc import VOCDetections, VOCGroundTruth
from deteval.errors import ConfigError, InputFormatError, ValidationError

PathLike = str | os.PathLike

_FORBIDDEN = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
_XML_DECL_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_SAFE_ENCODINGS = {"utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1"}


class _NoDoctypeBuilder(ET.TreeBuilder):
    """TreeBuilder whose ``doctype`` hook refuses any DOCTYPE (second line of defence after the scan)."""

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:  # noqa: D401
        raise InputFormatError("DOCTYPE declarations are not allowed in annotation XML")


def parse_xml_safely(data: bytes, path: PathLike) -> ET.Element:
    """Parse XML bytes, refusing DTDs and entity declarations before parsing (see the module docstring)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")) or b"\x00" in data:
        raise InputFormatError("UTF-16/UTF-32 encoded XML is not supported; save the file as UTF-8", file=path)
    m = _FORBIDDEN.search(data)
    if m:
        kind = m.group(1).decode("ascii").upper()
        line = data.count(b"\n", 0, m.start()) + 1
        raise InputFormatError(
            f"refusing XML with a <!{kind}> declaration (DTDs and entities are not allowed)",
            file=path,
            record=f"line {line}",
        )
    enc = _XML_DECL_ENCODING.match(data)
    if enc and enc.group(1).decode("ascii").lower() not in _SAFE_ENCODINGS:
        raise InputFormatError(f"unsupported XML encoding {enc.group(1).decode('ascii')!r}; use UTF-8", file=path)
    parser = ET.XMLParser(target=_NoDoctypeBuilder())
    try:
        parser.feed(data)
        return parser.close()
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise InputFormatError(
            f"malformed XML: {exc}", file=path, record=None if line is None else f"line {line}"
        ) from None
    except InputFormatError as exc:
        raise InputFormatError(exc.reason, file=path) from None


# --------------------------------------------------------------------------------------------------------
# Annotations


def read_image_set(path: PathLike) -> list[str]:
    """Image ids from an ``ImageSets/Main/<split>.txt`` list: the first token of every non-blank line.

    Per-class lists (``<id> <-1|0|1>``) give all their ids, whatever the flag. A repeated id is an error
    (the devkit would count its objects twice).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputFormatError(f"cannot read image set: {exc.strerror}", file=path) from None
    ids: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        iid = tokens[0]
        if iid in seen:
            raise ValidationError(
                f"image id {iid!r} is listed twice (first on line {seen[iid]})", file=path, record=f"line {lineno}"
            )
        seen[iid] = lineno
        ids.append(iid)
    return ids


def _text(elem: ET.Element | None) -> str | None:
    if elem is None or elem.text is None:
        return None
    return elem.text.strip()


def _number(obj: ET.Element, tag: str, path: PathLike, record: str) -> float:
    raw = _text(obj.find(tag))
    if raw is None or raw == "":
        raise InputFormatError(f"missing <{tag}>", file=path, record=record)
    try:
        value = float(raw)
    except ValueError:
        raise InputFormatError(f"<{tag}> is not a number: {raw!r}", file=path, record=record) from None
    if not np.isfinite(value):
        raise ValidationError(f"<{tag}> is not finite: {raw!r}", file=path, record=record)
    return value


def _flag(obj: ET.Element, tag: str, path: PathLike, record: str, missing: int) -> int:
    raw = _text(obj.find(tag))
    if raw is None or raw == "":
        return missing
    try:
        value = float(raw)
    except ValueError:
        raise InputFormatError(f"<{tag}> must be 0 or 1, got {raw!r}", file=path, record=record) from None
    if value not in (0.0, 1.0):
        raise ValidationError(f"<{tag}> must be 0 or 1, got {raw!r}", file=path, record=record)
    return int(value)


def _size(root: ET.Element, tag: str, path: PathLike) -> int:
    raw = _text(root.find(f"size/{tag}"))
    if raw is None or raw == "":
        return -1
    try:
        return int(float(raw))
    except ValueError:
        raise InputFormatError(f"<size><{tag}> is not a number: {raw!r}", file=path, record="size") from None


def parse_voc_xml(data: bytes, path: PathLike) -> tuple[dict, list[dict]]:
    """One annotation file → (image info, list of object records). Errors name the file and object."""
    root = parse_xml_safely(data, path)
    if root.tag != "annotation":
        raise InputFormatError(f"root element is <{root.tag}>, expected <annotation>", file=path)
    info = {
        "filename": _text(root.find("filename")) or "",
        "width": _size(root, "width", path),
        "height": _size(root, "height", path),
        "depth": _size(root, "depth", path),
    }
    objects = []
    for k, obj in enumerate(root.iterfind("object"), 1):
        record = f"object {k}"
        name = _text(obj.find("name"))
        if not name:
            raise InputFormatError("missing <name>", file=path, record=record)
        record = f"object {k} ({name})"
        bnd = obj.find("bndbox")
        if bnd is None:
            raise InputFormatError("missing <bndbox>", file=path, record=record)
        box = [_number(bnd, t, path, record) for t in ("xmin", "ymin", "xmax", "ymax")]
        if box[2] < box[0] or box[3] < box[1]:
            raise ValidationError(
                f"inverted box: xmin={box[0]:g} ymin={box[1]:g} xmax={box[2]:g} ymax={box[3]:g}",
                file=path,
                record=record,
            )
        objects.append(
            {
                "name": name,
                "box": box,
                "difficult": _flag(obj, "difficult", path, record, 0),
                "truncated": _flag(obj, "truncated", path, record, -1),
                "occluded": _flag(obj, "occluded", path, record, -1),
                "pose": _text(obj.find("pose")) or "",
            }
        )
    return info, objects


def load_voc_annotations(
    annotations: PathLike | None = None,
    image_set: PathLike | Sequence[str] | None = None,
    *,
    files: Iterable[PathLike] | None = None,
    classes: Sequence[str] | None = None,
) -> VOCGroundTruth:
    """Read VOC annotation XML into a columnar :class:`VOCGroundTruth`.

    * ``annotations`` + ``image_set`` (a list file or a sequence of ids): reads ``<annotations>/<id>.xml``
      for every id, in list order; the image index is the position in the list.
    * ``annotations`` alone: every ``*.xml`` in the folder, sorted by name.
    * ``files``: explicit XML paths; the image id is the file stem.

    ``classes`` fixes the class list (objects of other classes are kept with their own names appended; the
    evaluation's ``classes`` option picks what is scored). Default: the names found, sorted.
    """
    if files is not None:
        paths = [Path(p) for p in files]
        ids = [p.stem for p in paths]
    else:
        if annotations is None:
            raise ConfigError("give an annotations folder or a list of files")
        folder = Path(annotations)
        if not folder.is_dir():
            raise InputFormatError("annotations folder not found", file=folder)
        if image_set is None:
            paths = sorted(folder.glob("*.xml"))
            ids = [p.stem for p in paths]
        else:
            ids = read_image_set(image_set) if isinstance(image_set, (str, os.PathLike)) else [str(i) for i in image_set]
            paths = [folder / f"{i}.xml" for i in ids]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValidationError(f"image id {dup!r} appears twice in the file list")

    names: list[str] = []
    img_idx: list[int] = []
    boxes: list[list[float]] = []
    difficult: list[int] = []
    truncated: list[int] = []
    occluded: list[int] = []
    pose: list[str] = []
    image_meta: dict[str, list] = {"filename": [], "width": [], "height": [], "depth": []}
    for i, path in enumerate(paths):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise InputFormatError(f"annotation file for image {ids[i]!r} not found", file=path) from None
        except OSError as exc:
            raise InputFormatError(f"cannot read annotation: {exc.strerror}", file=path) from None
        info, objects = parse_voc_xml(data, path)
        for key in image_meta:
            image_meta[key].append(info[key])
        for o in objects:
            names.append(o["name"])
            img_idx.append(i)
            boxes.append(o["box"])
            difficult.append(o["difficult"])
            truncated.append(o["truncated"])
            occluded.append(o["occluded"])
            pose.append(o["pose"])

    found = sorted(set(names))
    class_list = list(classes) if classes is not None else found
    class_list += [c for c in found if c not in set(class_list)]
    pos = {c: k for k, c in enumerate(class_list)}
    gt = VOCGroundTruth(
        images=tuple(ids),
        classes=tuple(class_list),
        image=np.asarray(img_idx, dtype=np.int64),
        label=np.asarray([pos[n] for n in names], dtype=np.int64),
        boxes=np.asarray(boxes, dtype=np.float64).reshape(-1, 4),
        difficult=np.asarray(difficult, dtype=bool),
        meta={
            "truncated": np.asarray(truncated, dtype=np.int8),
            "occluded": np.asarray(occluded, dtype=np.int8),
            "pose": np.asarray(pose, dtype=str),
        },
        image_meta={
            "filename": np.asarray(image_meta["filename"], dtype=str),
            "width": np.asarray(image_meta["width"], dtype=np.int64),
            "height": np.asarray(image_meta["height"], dtype=np.int64),
            "depth": np.asarray(image_meta["depth"], dtype=np.int64),
        },
    )
    return gt


# --------------------------------------------------------------------------------------------------------
# Detections


def _token_table(data: bytes, ncols: int, path: PathLike, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """Split a whitespace-separated text file into a (rows, ncols) token array, vectorised.

    Returns (tokens, line numbers of the rows). A line with another number of fields raises, naming it.
    """
    if b"\x00" in data:
        raise InputFormatError("binary data in a text detection file", file=path)
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size == 0:
        return np.empty((0, ncols), dtype=bytes), np.empty(0, dtype=np.int64)
    space = (buf == 32) | (buf == 9) | (buf == 10) | (buf == 13) | (buf == 11) | (buf == 12)
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    line_of_byte = np.cumsum(buf == 10)  # 0-based line number of every byte
    tok_line = line_of_byte[starts]
    lines, per_line = np.unique(tok_line, return_counts=True)
    bad = per_line != ncols
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        lineno = int(lines[k]) + 1
        text = data.splitlines()[lineno - 1].decode("utf-8", "replace").strip()
        raise InputFormatError(
            f"expected {ncols} fields ({layout}), found {int(per_line[k])}: {text[:80]!r}",
            file=path,
            record=f"line {lineno}",
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = data.count(b"\n", 0, exc.start) + 1
        raise InputFormatError("not valid UTF-8 text", file=path, record=f"line {lineno}") from None
    # bytes.split() splits on exactly the ASCII whitespace counted above.
    return np.asarray(data.split(), dtype=bytes).reshape(-1, ncols), lines + 1


def _s(token: bytes | np.bytes_) -> str:
    return bytes(token).decode("utf-8", "replace")


def _floats(cols: np.ndarray, line: np.ndarray, names: Sequence[str], path: PathLike) -> np.ndarray:
    """Token columns → float64, naming the line of the first unparsable or non-finite value."""
    try:
        out = cols.astype(np.float64)
    except ValueError:
        for r in range(cols.shape[0]):  # error path only: find the culprit
            for c in range(cols.shape[1]):
                try:
                    float(cols[r, c])
                except ValueError:
                    raise InputFormatError(
                        f"{names[c]} is not a number: {_s(cols[r, c])!r}", file=path, record=f"line {int(line[r])}"
                    ) from None
        raise  # pragma: no cover
    bad = ~np.isfinite(out)
    if bad.any():
        r, c = (int(v[0]) for v in np.nonzero(bad))
        raise ValidationError(
            f"{names[c]} is not finite: {_s(cols[r, c])!r}", file=path, record=f"line {int(line[r])}"
        )
    inv = (out[:, -2] < out[:, -4]) | (out[:, -1] < out[:, -3])
    if inv.any():
        r = int(np.flatnonzero(inv)[0])
        raise ValidationError(
            f"inverted box: x1={out[r, -4]:g} y1={out[r, -3]:g} x2={out[r, -2]:g} y2={out[r, -1]:g}",
            file=path,
            record=f"line {int(line[r])}",
        )
    return out


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


def load_voc_detections(
    source: PathLike,
    images: Sequence[str],
    *,
    classes: Sequence[str] | None = None,
    layout: Literal["comp4", "single"] = "comp4",
    unknown_images: Literal["error", "warn"] = "error",
) -> VOCDetections:
    """Read detection results into a columnar :class:`VOCDetections` whose images are ``images``.

    * ``layout="comp4"``: ``source`` is a path pattern with ``{cls}`` (``results/comp4_det_test_{cls}.txt``),
      one file per class, lines ``<image_id> <score> <x1> <y1> <x2> <y2>``. ``classes`` lists the classes
      to read (default: every class with a file). A listed class without a file has no detections (a
      warning says so); if no file exists at all, that is an error.
    * ``layout="single"``: ``source`` is one file, lines ``<image_id> <class> <score> <x1> <y1> <x2> <y2>``;
      ``classes`` (optional) fixes the class list, other class names are appended.

    An image id not in ``images`` raises (as the devkit does), or with ``unknown_images="warn"`` the line
    is dropped and the count reported in ``warnings``. Scores and coordinates must be finite, boxes not
    inverted; errors name the file and the line.
    """
    if unknown_images not in ("error", "warn"):
        raise ConfigError(f"unknown_images must be 'error' or 'warn', got {unknown_images!r}")
    image_pos = {iid: k for k, iid in enumerate(images)}
    warnings: list[str] = []
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # image, label, boxes, scores
    unknown_total = 0
    unknown_examples: list[str] = []

    def map_images(ids: np.ndarray, lines: np.ndarray, path: PathLike) -> tuple[np.ndarray, np.ndarray]:
        nonlocal unknown_total
        uniq, inv = np.unique(ids, return_inverse=True)
        lut = np.array([image_pos.get(_s(u), -1) for u in uniq.tolist()], dtype=np.int64)
        idx = lut[inv] if inv.size else np.empty(0, dtype=np.int64)
        unknown = idx < 0
        if unknown.any():
            r = int(np.flatnonzero(unknown)[0])
            if unknown_images == "error":
                raise ValidationError(
                    f"image id {_s(ids[r])!r} is not in the image set "
                    f"({int(unknown.sum())} such line(s) in this file; unknown_images='warn' drops them)",
                    file=path,
                    record=f"line {int(lines[r])}",
                )
            unknown_total += int(unknown.sum())
            if len(unknown_examples) < 3:
                unknown_examples.append(f"{path}: line {int(lines[r])}: {_s(ids[r])!r}")
        return idx, ~unknown

    def read(path: PathLike) -> bytes:
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise InputFormatError(f"cannot read detections: {exc.strerror}", file=path) from None

    if layout == "comp4":
        pat = str(source)
        if "{cls}" not in pat:
            raise ConfigError(f"the comp4 detection pattern must contain {{cls}}: {pat!r}")
        class_list = list(classes) if classes is not None else discover_detection_classes(pat)
        missing = []
        present = 0
        for ci, cname in enumerate(class_list):
            path = pat.replace("{cls}", cname)
            if not os.path.isfile(path):
                missing.append(cname)
                continue
            present += 1
            tok, lines = _token_table(read(path), 6, path, "<image_id> <score> <x1> <y1> <x2> <y2>")
            vals = _floats(tok[:, 1:], lines, ("score", "x1", "y1", "x2", "y2"), path)
            idx, keep = map_images(tok[:, 0], lines, path)
            chunks.append((idx[keep], np.full(int(keep.sum()), ci, dtype=np.int64), vals[keep, 1:], vals[keep, 0]))
        if present == 0:
            raise InputFormatError(
                f"no detection file matches the pattern for any of {len(class_list)} class(es)", file=pat
            )
        if missing:
            warnings.append(
                f"no detection file for {len(missing)} class(es) (scored with 0 detections): {', '.join(missing)}"
            )
    elif layout == "single":
        path = source
        tok, lines = _token_table(read(path), 7, path, "<image_id> <class> <score> <x1> <y1> <x2> <y2>")
        vals = _floats(tok[:, 2:], lines, ("score", "x1", "y1", "x2", "y2"), path)
        class_list = list(classes) if classes is not None else []
        cuniq, cinv = np.unique(tok[:, 1], return_inverse=True)
        known = set(class_list)
        cnames = [_s(c) for c in cuniq.tolist()]
        class_list += sorted(c for c in cnames if c not in known)
        cpos = {c: k for k, c in enumerate(class_list)}
        label = np.array([cpos[c] for c in cnames], dtype=np.int64)[cinv] if cinv.size else np.empty(0, np.int64)
        idx, keep = map_images(tok[:, 0], lines, path)
        chunks.append((idx[keep], label[keep], vals[keep, 1:], vals[keep, 0]))
    else:
        raise ConfigError(f"unknown detection layout {layout!r}; use 'comp4' or 'single'")

    if unknown_total:
        warnings.append(
            f"{unknown_total} detection(s) for images not in the image set were dropped, e.g. "
            + "; ".join(unknown_examples)
        )
    if chunks:
        image = np.concatenate([c[0] for c in chunks])
        label = np.concatenate([c[1] for c in chunks])
        boxes = np.concatenate([c[2] for c in chunks]).reshape(-1, 4)
        scores = np.concatenate([c[3] for c in chunks])
    else:
        image = label = np.empty(0, dtype=np.int64)
        boxes = np.empty((0, 4))
        scores = np.empty(0)
    return VOCDetections(
        images=tuple(images),
        classes=tuple(class_list),
        image=image,
        label=label,
        boxes=boxes,
        scores=scores,
        warnings=tuple(warnings),
    )
