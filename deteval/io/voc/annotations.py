"""Pascal VOC annotation XML (``Annotations/<id>.xml``) → :class:`~deteval.tables.voc.VOCGroundTruth`.

* per object: ``name``, ``bndbox`` (``xmin ymin xmax ymax``, integer or float), ``difficult`` (missing
  means 0), and as metadata ``truncated``, ``occluded`` (-1 when missing) and ``pose`` ("" when missing);
  per image: ``filename`` and ``size`` (``width``, ``height``, ``depth``; -1 when missing).
* coordinates are kept as written (VOC's 1-based, inclusive pixels): the devkit compares them as such and
  its +1 IoU accounts for inclusivity; shifting them would change float coordinates in the last bit.
* a box with xmax < xmin or ymax < ymin is rejected (:class:`ValidationError` naming the file and the
  object): the devkit would accept it but it could never be matched, silently lowering recall. A box with
  xmax == xmin is valid (one pixel wide under the +1 convention).
* objects are numbered from 1 in file order in error messages ("object 3").

The XML is parsed safely (:mod:`deteval.io.voc.xml_safety`), all files of a folder by one parser when they
are plain, file by file otherwise, with the same columns and the same first fault either way.
"""

from __future__ import annotations

import itertools
import operator
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from deteval.collector import paused
from deteval.errors import ConfigError, InputFormatError, ValidationError
from deteval.io.guards import refuse_special
from deteval.io.voc.files import PathLike, read_image_set
from deteval.io.voc.xml_safety import parse_together, parse_xml_safely
from deteval.syntax import parse_decimal
from deteval.tables.arrays import MAX_COORD, beyond_exact
from deteval.tables.voc import VOCGroundTruth

__all__ = ["load_voc_annotations", "parse_voc_xml"]


def _children(elem: ET.Element) -> dict[str, ET.Element]:
    """Direct children by tag, the first of each tag winning (as ``find`` does), in one pass."""
    out: dict[str, ET.Element] = {}
    for child in elem:
        out.setdefault(child.tag, child)
    return out


def _text(elem: ET.Element | None, path: PathLike, record: str | None) -> str | None:
    """The text of a field; markup inside it (``<xmax>5<b/>0</xmax>``) is refused, as only the text before
    the first child element would be read."""
    if elem is None:
        return None
    if len(elem):
        raise InputFormatError(
            f"<{elem.tag}> holds markup (<{elem[0].tag}>); expected plain text", file=path, record=record
        )
    return None if elem.text is None else elem.text.strip()


# The tags deteval reads. Tags are case-sensitive (in XML and in the devkit's reader, which would silently
# ignore <Object> or <Difficult>): a case variant of one of these is refused rather than ignored.
_KNOWN_TAGS = {
    t.lower(): t
    for t in (
        "filename", "size", "width", "height", "depth", "object", "name", "bndbox", "xmin", "ymin", "xmax",
        "ymax", "difficult", "truncated", "occluded", "pose",
    )
}  # fmt: skip


def _case_variant(elem: ET.Element) -> str | None:
    """A message for the first child whose tag is a known VOC tag spelled with other capitals, or None."""
    for child in elem:
        tag = child.tag if isinstance(child.tag, str) else ""
        known = _KNOWN_TAGS.get(tag.lower())
        if known is not None and known != tag:
            return f"<{tag}> is not a VOC tag: tags are case-sensitive, write <{known}> (the devkit would ignore it)"
    return None


def _number(raw: str | None, tag: str, path: PathLike, record: str) -> float:
    if raw is None or raw == "":
        raise InputFormatError(f"missing <{tag}>", file=path, record=record)
    try:  # ASCII notation only: float() would read '5_0' as 50 and accept other scripts' digits
        value = parse_decimal(raw)
    except ValueError:
        raise InputFormatError(f"<{tag}> is not a number: {raw!r}", file=path, record=record) from None
    if value - value != 0.0:  # inf or nan
        raise ValidationError(f"<{tag}> is not finite: {raw!r}", file=path, record=record)
    if abs(value) > MAX_COORD or (
        abs(value) == MAX_COORD and beyond_exact(raw)
    ):  # (2**53 + 1 reads as 2**53)
        raise ValidationError(f"<{tag}> is beyond ±2**53: {raw!r}", file=path, record=record)
    return value


def _flag(raw: str | None, tag: str, path: PathLike, record: str, missing: int) -> int:
    if raw is None or raw == "":
        return missing
    if raw == "0" or raw == "1":
        return int(raw)
    try:
        value = parse_decimal(raw)
    except ValueError:
        raise InputFormatError(f"<{tag}> must be 0 or 1, got {raw!r}", file=path, record=record) from None
    if value not in (0.0, 1.0):
        raise ValidationError(f"<{tag}> must be 0 or 1, got {raw!r}", file=path, record=record)
    return int(value)


def _size(size: ET.Element | None, tag: str, path: PathLike) -> int:
    raw = None if size is None else _text(size.find(tag), path, "size")
    if raw is None or raw == "":
        return -1
    try:
        value = parse_decimal(raw)
    except ValueError:
        raise InputFormatError(f"<size><{tag}> is not a number: {raw!r}", file=path, record="size") from None
    if not (-1.0 <= value < 2.0**53):  # also refuses nan and inf; -1 is the 'unknown' placeholder
        raise ValidationError(f"<size><{tag}> is out of range: {raw!r}", file=path, record="size")
    return int(value)


_BOX_TAGS = ("xmin", "ymin", "xmax", "ymax")


def parse_voc_xml(
    data: bytes, path: PathLike, *, skipped: list[str] | None = None
) -> tuple[dict, list[tuple]]:
    """One annotation file → (image info, list of object records). Errors name the file and object.

    With a ``skipped`` list, a bad object (missing name or box, a coordinate that is not a finite number,
    an inverted box, a bad flag) is left out and described there instead of raising; errors about the
    whole file (malformed XML, DTDs, the root element, <size>) always raise.
    """
    return _voc_record(parse_xml_safely(data, path), path, skipped)


def _voc_record(root: ET.Element, path: PathLike, skipped: list[str] | None) -> tuple[dict, list[tuple]]:
    """:func:`parse_voc_xml` of an already parsed document."""
    if root.tag != "annotation":
        raise InputFormatError(f"root element is <{root.tag}>, expected <annotation>", file=path)
    top = _children(root)
    size = top.get("size")
    for elem, record in ((root, None), (size, "size")):
        wrong = None if elem is None else _case_variant(elem)
        if wrong is not None and "<object>" not in wrong:  # a misspelled object is a bad record, below
            raise InputFormatError(wrong, file=path, record=record)
    info = {
        "filename": _text(top.get("filename"), path, None) or "",
        "width": _size(size, "width", path),
        "height": _size(size, "height", path),
        "depth": _size(size, "depth", path),
    }
    objects = []
    k = 0
    for obj in root:
        if not isinstance(obj.tag, str) or obj.tag.lower() != "object":
            continue
        k += 1
        try:
            if obj.tag != "object":
                raise InputFormatError(
                    f"<{obj.tag}> is not a VOC tag: tags are case-sensitive, write <object> "
                    "(the devkit would ignore this object)",
                    file=path,
                    record=f"object {k}",
                )
            objects.append(_parse_object(obj, k, path))
        except (InputFormatError, ValidationError) as exc:
            if skipped is None:
                raise
            skipped.append(str(exc))
    for nested in _nested_objects(root, k, path):
        if skipped is None:
            raise nested
        skipped.append(str(nested))
    return info, objects


_PLAIN_COORDS = re.compile(r"(?:[ \t\r\n]*\d{1,15}(?:\.\d*)?[ \t\r\n]*\x00)*", re.ASCII)
_FLAG_VALUES = {None: None, "": None, "0": 0, "1": 1}
_TAG = operator.attrgetter("tag")


def _plain_columns(roots: Sequence[ET.Element]) -> tuple | None:
    """The columns :func:`load_voc_annotations` builds from ``roots``, when every document is plain, else
    None (the caller then checks every document with :func:`_voc_record`, which names the first fault).

    Plain: no tag of another capitalisation than VOC's anywhere, no nested or repeated object field, every
    field plain text, names present, flags 0/1/empty, sizes and coordinates unsigned decimals of at most 15
    integer digits, boxes not inverted. Every check of :func:`_voc_record` then passes, and the values are
    the ones it would read (``float`` of the same text), so the columns are identical; this pass only skips
    the per-field error bookkeeping.
    """
    every = itertools.chain.from_iterable(map(operator.methodcaller("iter"), roots))
    if any(_KNOWN_TAGS.get(t.lower(), t) != t for t in set(map(_TAG, every))):
        return None  # a tag of other capitals somewhere: the checks one by one say whether it matters
    direct = 0
    image_meta: dict[str, list] = {"filename": [], "width": [], "height": [], "depth": []}
    names: list[str] = []
    img_idx: list[int] = []
    raw: list[str] = []
    flags: list[list[int]] = [[], [], []]
    pose: list[str] = []
    for i, root in enumerate(roots):
        if root.tag != "annotation":
            return None
        top: dict[str, ET.Element] = {}
        for child in root:
            top.setdefault(child.tag, child)
            if child.tag != "object":
                continue
            direct += 1
            n_fields = len(child)
            bnd = child.find("bndbox")
            # every field a distinct tag, plain text but the box, whose four children are plain text
            if (
                bnd is None
                or len(set(map(_TAG, child))) != n_fields
                or sum(map(len, child)) != len(bnd)
                or len(bnd) != 4
                or any(map(len, bnd))
            ):
                return None
            coords = [bnd.findtext("xmin"), bnd.findtext("ymin"), bnd.findtext("xmax"), bnd.findtext("ymax")]
            text = child.findtext("name")
            if None in coords or not text or not (text := text.strip()):
                return None
            raw += coords  # type: ignore[arg-type]  # (no None: checked) stripped by the pattern check below
            for k, (t, missing) in enumerate(_FLAGS):
                value = child.findtext(t)
                flag = _FLAG_VALUES.get(value if value is None else value.strip(), 2)
                if flag == 2:
                    return None
                flags[k].append(missing if flag is None else flag)
            value = child.findtext("pose")
            pose.append("" if value is None else value.strip())
            names.append(text)
            img_idx.append(i)
        info = _plain_image(top)
        if info is None:
            return None
        for key, field in zip(image_meta, info):
            image_meta[key].append(field)
    if sum(1 for root in roots for _ in root.iter("object")) != direct:
        return None  # a nested object
    if not _PLAIN_COORDS.fullmatch("\x00".join(raw) + "\x00" if raw else ""):  # no XML text holds a NUL
        return None
    boxes = np.array(list(map(float, raw)), dtype=np.float64).reshape(-1, 4)  # float(), as parse_decimal
    if (boxes[:, 2] < boxes[:, 0]).any() or (boxes[:, 3] < boxes[:, 1]).any():
        return None
    return image_meta, names, img_idx, boxes, flags[0], flags[1], flags[2], pose


def _plain_image(top: dict[str, ET.Element]) -> tuple[str, int, int, int] | None:
    """A plain document's ``filename``, ``width``, ``height`` and ``depth`` (-1 when missing) from its
    top-level elements, or None if one is not plain (markup inside, a size not an unsigned decimal)."""
    filename = top.get("filename")
    if filename is not None and len(filename):
        return None
    sizes = []
    size = top.get("size")
    for t in ("width", "height", "depth"):
        e = None if size is None else size.find(t)
        if e is not None and len(e):
            return None
        value = "" if e is None or e.text is None else e.text.strip()
        if not value:
            sizes.append(-1)
        elif value.isascii() and value.isdigit() and len(value) <= 15:
            sizes.append(int(value))
        else:
            return None
    name = "" if filename is None or filename.text is None else filename.text.strip()
    return name, sizes[0], sizes[1], sizes[2]


def _nested_objects(root: ET.Element, direct: int, path: PathLike) -> list[InputFormatError]:
    """An error for every <object> that is not a direct child of <annotation> (the devkit reads only
    those, so a nested one would be silently ignored); one pass over the tree, parents found on error only."""
    total = sum(1 for e in root.iter() if isinstance(e.tag, str) and e.tag.lower() == "object")
    if total == direct:
        return []
    parent = {child: elem for elem in root.iter() for child in elem}
    found = []
    for elem in root.iter():
        if isinstance(elem.tag, str) and elem.tag.lower() == "object" and parent.get(elem) is not root:
            name = elem.findtext("name")
            found.append(
                InputFormatError(
                    f"<{elem.tag}> inside <{parent[elem].tag}> is not a direct child of <annotation> "
                    "(the devkit would ignore it)",
                    file=path,
                    record=f"nested object ({(name or '').strip() or 'no name'})",
                )
            )
    return found


_OBJECT_TAGS = ("name", "bndbox", "difficult", "truncated", "occluded", "pose")
#: An object's 0/1 flags and the value of a missing one.
_FLAGS = (("difficult", 0), ("truncated", -1), ("occluded", -1))


def _repeated(elem: ET.Element, fields: dict[str, ET.Element], tags: Sequence[str]) -> str | None:
    """The first of ``tags`` that occurs more than once among the children (``fields`` kept the first)."""
    if len(fields) == len(elem):
        return None
    counts: dict[str, int] = {}
    for child in elem:
        counts[child.tag] = counts.get(child.tag, 0) + 1
    return next((t for t in tags if counts.get(t, 0) > 1), None)


def _parse_object(obj: ET.Element, k: int, path: PathLike) -> tuple:
    fields = _children(obj)
    name = _text(fields.get("name"), path, f"object {k}")
    if not name:
        raise InputFormatError("missing <name>", file=path, record=f"object {k}")
    record = f"object {k} ({name})"
    for elem in (obj, fields.get("bndbox")):
        wrong = None if elem is None else _case_variant(elem)
        if wrong is not None:
            raise InputFormatError(wrong, file=path, record=record)
    # A repeated field would leave one of its values unused: refuse rather than pick one silently.
    dup = _repeated(obj, fields, _OBJECT_TAGS)
    if dup:
        raise InputFormatError(f"<{dup}> appears twice in one object", file=path, record=record)
    bnd = fields.get("bndbox")
    if bnd is None:
        raise InputFormatError("missing <bndbox>", file=path, record=record)
    coords = _children(bnd)
    dup = _repeated(bnd, coords, _BOX_TAGS)
    if dup:
        raise InputFormatError(f"<{dup}> appears twice in one <bndbox>", file=path, record=record)
    box = [_number(_text(coords.get(t), path, record), t, path, record) for t in _BOX_TAGS]
    if box[2] < box[0] or box[3] < box[1]:
        raise ValidationError(
            f"inverted box: xmin={box[0]:g} ymin={box[1]:g} xmax={box[2]:g} ymax={box[3]:g}",
            file=path,
            record=record,
        )
    return (
        name,
        box,
        *(_flag(_text(fields.get(t), path, record), t, path, record, missing) for t, missing in _FLAGS),
        _text(fields.get("pose"), path, record) or "",
    )


def load_voc_annotations(
    annotations: PathLike | None = None,
    image_set: PathLike | Sequence[str] | None = None,
    *,
    files: Iterable[PathLike] | None = None,
    classes: Sequence[str] | None = None,
    on_error: Literal["raise", "skip"] = "raise",
) -> VOCGroundTruth:
    """Read VOC annotation XML into a columnar :class:`VOCGroundTruth`.

    * ``annotations`` + ``image_set`` (a list file or a sequence of ids): reads ``<annotations>/<id>.xml``
      for every id, in list order; the image index is the position in the list.
    * ``annotations`` alone: every ``*.xml`` in the folder, sorted by name.
    * ``files``: explicit XML paths; the image id is the file stem.

    ``classes`` fixes the class list (objects of other classes are kept with their own names appended; the
    evaluation's ``classes`` option picks what is scored). Default: the names found, sorted.

    ``on_error="skip"``: a bad object is left out (see :func:`parse_voc_xml`) and listed in the result's
    ``skipped``; file-level problems (missing or malformed file, DTD) still raise. No image at all (an
    empty folder or file list) is an error.
    """
    if on_error not in ("raise", "skip"):
        raise ConfigError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    skipped: list[str] | None = [] if on_error == "skip" else None
    ids, paths, texts = _annotation_files(annotations, image_set, files)
    # tens of thousands of elements: collections would rescan them, finding no cycle
    with paused():
        roots = parse_together([str(p) for p in paths] if paths is not None else texts)
        plain = _plain_columns(roots) if roots is not None else None
        if plain is not None:
            roots = None  # freed here: with collections back on, the first would walk the whole tree
    if plain is None:
        if paths is None:  # (an image set: its files are in the annotations folder)
            assert annotations is not None
            paths = [Path(annotations) / f"{i}.xml" for i in ids]
        plain = _columns_one_by_one(ids, paths, roots, skipped)
    return _ground_truth(ids, plain, classes, skipped)


def _annotation_files(
    annotations: PathLike | None, image_set: PathLike | Sequence[str] | None, files: Iterable[PathLike] | None
) -> tuple[list[str], list[Path] | None, list[str]]:
    """The image ids and their annotation files: as paths (a file list or a folder's ``*.xml``), or for an
    image set as plain strings (the paths are made only if the files are read one by one)."""
    paths: list[Path] | None = None
    texts: list[str] = []
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
            ids = (
                read_image_set(image_set)
                if isinstance(image_set, (str, os.PathLike))
                else [str(i) for i in image_set]
            )
            base = str(folder)
            joined = "\0".join(ids)
            if os.sep in joined or (os.altsep or os.sep) in joined or ":" in joined:  # not plain names
                texts = [os.path.join(base, f"{i}.xml") for i in ids]
            else:  # plain names: a join per file costs more in pathlib and posixpath than the read
                texts = [f"{base}{os.sep}{i}.xml" for i in ids]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValidationError(f"image id {dup!r} appears twice in the file list")
    if not ids:
        where = annotations if files is None else None
        raise InputFormatError("no annotation file (*.xml) to read: the ground truth is empty", file=where)
    return ids, paths, texts


def _columns_one_by_one(
    ids: Sequence[str], paths: Sequence[Path], roots: list[ET.Element] | None, skipped: list[str] | None
) -> tuple:
    """The columns of :func:`_plain_columns`, document by document with every check (:func:`_voc_record`):
    of the documents parsed together (``roots``), or else of the files read and parsed one by one."""
    rows: list[tuple] = []  # (image index, *object record)
    image_meta: dict[str, list] = {"filename": [], "width": [], "height": [], "depth": []}
    for i, path in enumerate(paths):
        if roots is not None:
            info, objects = _voc_record(roots[i], path, skipped)
        else:
            refuse_special(path, "annotation file")  # (a pipe would block the read)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise InputFormatError(f"annotation file for image {ids[i]!r} not found", file=path) from None
            except OSError as exc:
                raise InputFormatError(f"cannot read annotation: {exc.strerror}", file=path) from None
            info, objects = parse_voc_xml(data, path, skipped=skipped)
        for key in image_meta:
            image_meta[key].append(info[key])
        rows += [(i, *obj) for obj in objects]
    img_idx, names, boxes, difficult, truncated, occluded, pose = list(zip(*rows)) or [()] * 7
    return image_meta, names, img_idx, boxes, difficult, truncated, occluded, pose


def _ground_truth(
    ids: Sequence[str], columns: tuple, classes: Sequence[str] | None, skipped: list[str] | None
) -> VOCGroundTruth:
    """The table of the read columns; classes: ``classes``, then the other names found, sorted."""
    image_meta, names, img_idx, boxes, difficult, truncated, occluded, pose = columns
    found = sorted(set(names))
    class_list = list(classes) if classes is not None else found
    class_list += [c for c in found if c not in set(class_list)]
    pos = {c: k for k, c in enumerate(class_list)}
    return VOCGroundTruth(
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
            k: np.asarray(v, dtype=str if k == "filename" else np.int64) for k, v in image_meta.items()
        },
        skipped=tuple(skipped or ()),
    )
