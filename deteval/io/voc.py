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
as a second line of defence when a file is parsed alone. No DTD, entity or external reference is ever
processed. The files of a folder are parsed together by one parser (the C tree builder, which has no
``doctype`` hook) once each of them has passed the same scan, and document by document again, with every
check and error message, whenever anything in them is unusual (see :func:`_parse_together`).

Detections in the devkit's "comp4" layout, one file per class (``comp4_det_test_{cls}.txt``), each line
``<image_id> <score> <x1> <y1> <x2> <y2>``; or one file with a class column,
``<image_id> <class> <score> <x1> <y1> <x2> <y2>``. Lines are parsed with numpy over the whole file; the
row order is the file order (the devkit's tie order). A detection for an image outside the image set is an
error (as in the devkit), or with ``unknown_images="warn"`` it is dropped and counted in the warnings.

Bad records (a detection line, an annotation object) raise, naming the file and the record; with
``on_error="skip"`` they are left out and listed (``skipped``), so that the valid records are scored exactly
as in the file without them. Text files may carry a UTF-8 byte-order mark, CRLF or CR line ends, tabs and
repeated spaces. Every class of bad input and its handling is listed in ``docs/errors.md``.
"""

from __future__ import annotations

import glob
import itertools
import operator
import os
import re
import stat
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from deteval.collector import paused
from deteval.detection.voc import MAX_COORD, VOCDetections, VOCGroundTruth
from deteval.errors import ConfigError, InputFormatError, ValidationError
from deteval.io.arrays import beyond_exact, rows_beyond_exact
from deteval.io.guards import refuse_special
from deteval.syntax import fields, parse_decimal, text_lines

PathLike = str | os.PathLike

_FORBIDDEN = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
_XML_DECL_ENCODING = re.compile(
    rb"""^(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']"""
)
_SAFE_ENCODINGS = {"utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1"}


class _NoDoctypeBuilder(ET.TreeBuilder):
    """TreeBuilder whose ``doctype`` hook refuses any DOCTYPE (second line of defence after the scan)."""

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise InputFormatError("DOCTYPE declarations are not allowed in annotation XML")


def parse_xml_safely(data: bytes, path: PathLike) -> ET.Element:
    """Parse XML bytes, refusing DTDs and entity declarations before parsing (see the module docstring)."""
    if not data.strip(b" \t\r\n\xef\xbb\xbf"):
        raise InputFormatError("empty annotation file (no XML at all)", file=path)
    if (
        data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00"))
        or b"\x00" in data
    ):
        raise InputFormatError(
            "UTF-16/UTF-32 encoded XML is not supported; save the file as UTF-8", file=path
        )
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
        raise InputFormatError(
            f"unsupported XML encoding {enc.group(1).decode('ascii')!r}; use UTF-8", file=path
        )
    parser = ET.XMLParser(target=_NoDoctypeBuilder())
    try:
        parser.feed(data)
        return parser.close()
    except ET.ParseError as exc:
        where = f"line {exc.position[0]}" if getattr(exc, "position", None) else None
        raise InputFormatError(f"malformed XML: {exc}", file=path, record=where) from None
    except InputFormatError as exc:
        raise InputFormatError(exc.reason, file=path) from None


# --------------------------------------------------------------------------------------------------------
# Annotations

# The XML declaration of a document that may be parsed together with others: version 1.0, UTF-8 or no
# encoding (other encodings are parsed alone, with their own decoding).
_PLAIN_DECL = re.compile(
    rb"""<\?xml\s+version\s*=\s*(?:"1\.0"|'1\.0')(?:\s+encoding\s*=\s*(?:"utf-8"|'utf-8'))?"""
    rb"""(?:\s+standalone\s*=\s*(?:"(?:yes|no)"|'(?:yes|no)'))?\s*\?>""",
    re.IGNORECASE,
)
_XML_SPACE = " \t\r\n"


def _read_small(path: PathLike) -> bytes:
    """A file's bytes in as few system calls as the OS allows (open, one read, close for a small file):
    thousands of annotation files cost more in calls than in bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # (a pipe must not block the open)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a pipe or a device: the file-by-file path names it
            raise OSError(f"{path}: not a regular file")
        data = os.read(fd, 1 << 16)
        if len(data) == 1 << 16:
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    return data


def _parse_together(paths: Sequence[str]) -> list[ET.Element] | None:
    """Every annotation file parsed by one XML parser, or None when any file needs the one-file path.

    Parsing thousands of small files one parser each costs more than the parsing itself. Each document, its
    BOM and XML declaration removed, is wrapped in an element whose name is random (no document can close it
    early), the wrappers are concatenated and parsed once with the C tree builder; every wrapper must then
    hold exactly one element and nothing but XML whitespace around it, which is what makes each document
    well-formed alone. Every file must also pass the checks of :func:`parse_xml_safely` that come before
    parsing (no DOCTYPE or ENTITY, no NUL, UTF-8), so that the one parse sees only what one-file parsing
    would accept. On anything else (a missing file, another encoding, a fault anywhere) the caller parses
    file by file and reports the first fault in file order, exactly as before.
    """
    tag = "_d" + os.urandom(8).hex()
    open_tag, close_tag = f"<{tag}>".encode(), f"</{tag}>".encode()
    parts: list[bytes] = []
    for path in paths:
        try:
            data = _read_small(path)
        except OSError:
            return None
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        if data.startswith(b"<?xml"):
            m = _PLAIN_DECL.match(data)
            if m is None:
                return None
            data = data[m.end() :]
        parts += (open_tag, data, close_tag)
    text = b"".join((b"<all%s>" % open_tag[1:-1], *parts, b"</all%s>" % open_tag[1:-1]))
    # one scan of all documents (the wrappers hold none of these): a NUL, a DOCTYPE or ENTITY anywhere, and
    # "&#32;" or "<![CDATA[]]>", which outside a root would read as mere space in the wrapper (an empty
    # document is a wrapper without an element, below)
    if b"\x00" in text or b"&#" in text or b"<![" in text or (b"<!" in text and _FORBIDDEN.search(text)):
        return None
    parser = ET.XMLParser()
    try:
        parser.feed(text)
        wrapper = parser.close()
    except ET.ParseError:
        return None
    docs = list(wrapper)
    if len(docs) != len(paths) or wrapper.text is not None:
        return None
    roots = []
    for d in docs:
        if d.tag != tag or len(d) != 1 or (d.text or "").strip(_XML_SPACE) or d.tail is not None:
            return None
        root = d[0]
        if (root.tail or "").strip(_XML_SPACE):
            return None
        root.tail = None  # as a document's root has
        roots.append(root)
    return roots


def read_image_set(path: PathLike) -> list[str]:
    """Image ids from an ``ImageSets/Main/<split>.txt`` list: the first token of every non-blank line.

    Per-class lists (``<id> <-1|0|1>``) give all their ids, whatever the flag. A repeated id is an error
    (the devkit would count its objects twice), and so is a list without any id. A UTF-8 byte-order mark,
    Windows or old Mac line endings, tabs and repeated spaces are accepted.
    """
    refuse_special(path, "file")  # (a pipe would block the open, /dev/zero never end)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot read image set: {exc.strerror or exc}", file=path) from None
    text = _decode_text(data, path)
    ids: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text_lines(text), 1):
        tokens = fields(line)  # ASCII separators only, as the detection files: U+2028 may sit in an id
        if not tokens:
            continue
        iid = tokens[0]
        if iid in seen:
            raise ValidationError(
                f"image id {iid!r} is listed twice (first on line {seen[iid]})",
                file=path,
                record=f"line {lineno}",
            )
        seen[iid] = lineno
        ids.append(iid)
    if not ids:
        raise InputFormatError("the image set lists no image (empty file)", file=path)
    return ids


def _decode_text(data: bytes, path: PathLike) -> str:
    """UTF-8 text (a leading byte-order mark dropped); undecodable bytes raise naming the line."""
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise InputFormatError(
            "binary data (a NUL byte) in a text file; save it as UTF-8 text", file=path, record=f"line {line}"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        reason = f"not valid UTF-8 text ({exc.reason})"
        raise InputFormatError(reason, file=path, record=f"line {line}") from None


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
    defaults = (0, -1, -1)
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
            for k, t in enumerate(("difficult", "truncated", "occluded")):
                value = child.findtext(t)
                flag = _FLAG_VALUES.get(value if value is None else value.strip(), 2)
                if flag == 2:
                    return None
                flags[k].append(defaults[k] if flag is None else flag)
            value = child.findtext("pose")
            pose.append("" if value is None else value.strip())
            names.append(text)
            img_idx.append(i)
        filename = top.get("filename")
        if filename is not None and len(filename):
            return None
        image_meta["filename"].append(
            "" if filename is None or filename.text is None else filename.text.strip()
        )
        size = top.get("size")
        for t in ("width", "height", "depth"):
            e = None if size is None else size.find(t)
            if e is not None and len(e):
                return None
            value = "" if e is None or e.text is None else e.text.strip()
            if not value:
                image_meta[t].append(-1)
            elif value.isascii() and value.isdigit() and len(value) <= 15:
                image_meta[t].append(int(value))
            else:
                return None
    if sum(1 for root in roots for _ in root.iter("object")) != direct:
        return None  # a nested object
    if not _PLAIN_COORDS.fullmatch("\x00".join(raw) + "\x00" if raw else ""):  # no XML text holds a NUL
        return None
    boxes = np.array(list(map(float, raw)), dtype=np.float64).reshape(-1, 4)  # float(), as parse_decimal
    if (boxes[:, 2] < boxes[:, 0]).any() or (boxes[:, 3] < boxes[:, 1]).any():
        return None
    return image_meta, names, img_idx, boxes, flags[0], flags[1], flags[2], pose


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
        _flag(_text(fields.get("difficult"), path, record), "difficult", path, record, 0),
        _flag(_text(fields.get("truncated"), path, record), "truncated", path, record, -1),
        _flag(_text(fields.get("occluded"), path, record), "occluded", path, record, -1),
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
    paths: list[Path] | None = None  # (of an image set: made only if the files are read one by one)
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

    names: list[str] = []
    img_idx: list[int] = []
    boxes: list[list[float]] = []
    difficult: list[int] = []
    truncated: list[int] = []
    occluded: list[int] = []
    pose: list[str] = []
    image_meta: dict[str, list] = {"filename": [], "width": [], "height": [], "depth": []}
    # tens of thousands of elements: collections would rescan them, finding no cycle
    with paused():
        roots = _parse_together([str(p) for p in paths] if paths is not None else texts)
        plain = _plain_columns(roots) if roots is not None else None
        if plain is not None:
            roots = None  # freed here: with collections back on, the first would walk the whole tree
    if plain is not None:
        image_meta, names, img_idx, boxes, difficult, truncated, occluded, pose = plain
    if paths is None and plain is None:
        paths = [folder / f"{i}.xml" for i in ids]
    for i, path in enumerate(paths if plain is None and paths is not None else ()):
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
        for name, box, diff, trunc, occ, pose_ in objects:
            names.append(name)
            img_idx.append(i)
            boxes.append(box)
            difficult.append(diff)
            truncated.append(trunc)
            occluded.append(occ)
            pose.append(pose_)

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
        skipped=tuple(skipped or ()),
    )
    return gt


# --------------------------------------------------------------------------------------------------------
# Detections


_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True  # the ASCII whitespace bytes.split() splits on


def _string_column(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Tokens buf[starts[i]:ends[i]] as a fixed-width bytes array, gathered without a Python loop."""
    if starts.size == 0:
        return np.empty(0, dtype="S1")
    lengths = ends - starts
    width = int(lengths.max())
    if width > 64:  # a very long token: gathering a rows x width matrix could be huge; slice instead
        raw = buf.tobytes()
        return np.array([raw[a:b] for a, b in zip(starts.tolist(), ends.tolist())], dtype=bytes)
    cols = np.arange(width)
    idx = np.minimum(starts[:, None] + cols, buf.shape[0] - 1)
    mat = np.where(cols < lengths[:, None], buf[idx], 0).astype(np.uint8)
    return np.ascontiguousarray(mat).view(f"S{width}").reshape(-1)


class _BadLines(Exception):
    """Internal: the bad lines found by one stage of the table parser, as (line, error class, reason)."""

    def __init__(self, bad: Sequence[tuple[int, type[InputFormatError | ValidationError], str]]) -> None:
        super().__init__(bad)
        self.bad = bad


def _read_table(
    data: bytes,
    n_str: int,
    num_names: Sequence[str],
    path: PathLike,
    layout: str,
    on_error: str = "raise",
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, list[str]]:
    """Parse a whitespace-separated text table: ``n_str`` string columns, then numeric columns.

    Returns (string columns, numbers (rows, n_num), 1-based line of each row, skipped records). A bad line
    (another number of fields, a token that is not a number, a non-finite value, an inverted box, bytes that
    are not UTF-8) raises naming the file and the line; with ``on_error="skip"`` every such line is blanked
    out instead (so the table is exactly that of the file without those lines, line numbers unchanged) and
    described in the returned list. A NUL byte (a binary or UTF-16 file) always raises.
    """
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise InputFormatError(
            "binary data (a NUL byte) in a text detection file; save it as UTF-8 text",
            file=path,
            record=f"line {line}",
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = b"   " + data[3:]  # a UTF-8 byte-order mark: not part of the first image id
    if b"\r" in data:
        data = re.sub(rb"\r(?!\n)", b"\n", data)  # old Mac line ends; \r before \n is whitespace
    skipped: list[tuple[int, str]] = []
    blanked: set[int] = set()
    while True:
        try:
            strings, values, lines = _parse_table(data, n_str, num_names, path, layout)
            # In line order, whichever check found them.
            return strings, values, lines, [f"{path}: line {n}: {why}" for n, why in sorted(skipped)]
        except _BadLines as exc:
            first_line, cls, reason = exc.bad[0]
            if on_error != "skip" or any(line in blanked for line, _, _ in exc.bad):
                raise cls(reason, file=path, record=f"line {first_line}") from None
            skipped += [(line, reason) for line, _, reason in exc.bad]
            blanked.update(line for line, _, _ in exc.bad)
            data = _blank_lines(data, [line for line, _, _ in exc.bad])


def _blank_lines(data: bytes, lines: Sequence[int]) -> bytes:
    """``data`` with the given 1-based lines turned into spaces (newlines kept, so numbering is unchanged)."""
    buf = np.frombuffer(data, dtype=np.uint8).copy()
    nl = buf == 10
    line_of_byte = np.cumsum(nl) - nl + 1  # a newline belongs to the line it ends
    buf[np.isin(line_of_byte, np.asarray(lines, dtype=np.int64)) & ~nl] = 32
    return buf.tobytes()


def _line_text(data: bytes, lineno: int) -> str:
    return data.split(b"\n")[lineno - 1].decode("utf-8", "replace").strip()


def _parse_table(
    data: bytes, n_str: int, num_names: Sequence[str], path: PathLike, layout: str
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """One pass of :func:`_read_table`; raises :class:`_BadLines` listing every bad line of one stage.

    Vectorised over the whole file: token boundaries from a byte mask, string columns gathered as
    fixed-width byte arrays, numbers parsed by numpy's C parser (correctly rounded, as ``float``) after the
    string tokens are blanked out.
    """
    ncols = n_str + len(num_names)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        bad_utf8 = []
        for lineno, line in enumerate(data.split(b"\n"), 1):  # error path only
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad_utf8.append((lineno, InputFormatError, f"not valid UTF-8 text ({exc.reason})"))
        raise _BadLines(bad_utf8) from None
    buf = np.frombuffer(data, dtype=np.uint8)
    empty = ([np.empty(0, dtype="S1")] * n_str, np.empty((0, len(num_names))), np.empty(0, dtype=np.int64))
    if buf.size == 0:
        return empty
    space = _WS[buf]
    prev_space = np.concatenate(([True], space[:-1]))
    next_space = np.concatenate((space[1:], [True]))
    starts = np.flatnonzero(~space & prev_space)
    ends = np.flatnonzero(~space & next_space) + 1
    if starts.size == 0:
        return empty
    line_of_byte = np.cumsum(buf == 10)
    tok_line = line_of_byte[starts]
    per_line = np.bincount(tok_line)
    bad = (per_line != 0) & (per_line != ncols)
    if bad.any():
        raise _BadLines(
            [
                (
                    int(i) + 1,
                    InputFormatError,
                    f"expected {ncols} fields ({layout}), found {int(per_line[i])}: "
                    f"{_line_text(data, int(i) + 1)[:80]!r}",
                )
                for i in np.flatnonzero(bad).tolist()
            ]
        )
    rows = starts.shape[0] // ncols
    lines = tok_line[::ncols] + 1
    strings = [_string_column(buf, starts[c::ncols], ends[c::ncols]) for c in range(n_str)]
    # Blank the string tokens, parse the rest in one C call.
    delta = np.zeros(buf.shape[0] + 1, dtype=np.int8)
    for c in range(n_str):
        delta[starts[c::ncols]] = 1
        delta[ends[c::ncols]] = -1
    numeric = buf.copy()
    numeric[np.cumsum(delta[:-1], dtype=np.int8) > 0] = 32
    values = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            values = np.fromstring(numeric.tobytes(), dtype=np.float64, sep=" ")
    except (ValueError, DeprecationWarning):
        values = None
    if values is None or values.shape[0] != rows * len(num_names):
        raise _BadLines(_bad_numbers(data, n_str, num_names, path))
    values = values.reshape(rows, len(num_names))
    bad_val = ~np.isfinite(values)
    if bad_val.any():
        found = []
        for r in np.flatnonzero(bad_val.any(axis=1)).tolist():
            c = int(np.flatnonzero(bad_val[r])[0])
            found.append(
                (int(lines[r]), ValidationError, f"{num_names[c]} is not finite: {float(values[r, c])!r}")
            )
        raise _BadLines(found)
    split: list[bytes] = []

    def written(r: int) -> list[bytes]:  # (the coordinates as written: 2**53 + 1 reads as 2**53)
        if not split:
            split.extend(data.split(b"\n"))
        return split[int(lines[r]) - 1].split()[-4:]

    big = rows_beyond_exact(values[:, -4:], written)
    if big.size:
        raise _BadLines(
            [
                (
                    int(lines[r]),
                    ValidationError,
                    f"a coordinate is beyond ±2**53: {b' '.join(written(r)).decode()}",
                )
                for r in big.tolist()
            ]
        )
    inv = (values[:, -2] < values[:, -4]) | (values[:, -1] < values[:, -3])
    if inv.any():
        found = []
        for r in np.flatnonzero(inv).tolist():
            x1, y1, x2, y2 = values[r, -4:].tolist()
            found.append(
                (int(lines[r]), ValidationError, f"inverted box: x1={x1:g} y1={y1:g} x2={x2:g} y2={y2:g}")
            )
        raise _BadLines(found)
    return strings, values, lines


_NUMBER = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE)


def _bad_numbers(
    data: bytes, n_str: int, num_names: Sequence[str], path: PathLike
) -> list[tuple[int, type[InputFormatError], str]]:
    """Error path only: every line holding a token that is not a number (numpy's C syntax), line by line."""
    found: list[tuple[int, type[InputFormatError], str]] = []
    for lineno, line in enumerate(data.split(b"\n"), 1):
        for c, tok in enumerate(line.split()[n_str:]):
            if not _NUMBER.fullmatch(tok):
                found.append((lineno, InputFormatError, f"{num_names[c]} is not a number: {_s(tok)!r}"))
                break
    if not found:  # pragma: no cover - the syntax above is what numpy's parser accepts
        raise InputFormatError("unparsable numbers", file=path)
    return found


def _s(token: bytes | np.bytes_) -> str:
    return bytes(token).decode("utf-8", "replace")


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
    skipped: list[str] = []
    empty_files: list[str] = []
    img_keys = np.array([str(i).encode("utf-8") for i in images], dtype=bytes)
    img_order = np.argsort(img_keys, kind="stable")
    img_sorted = img_keys[img_order]
    warnings: list[str] = []
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # image, label, boxes, scores
    unknown_total = 0
    unknown_examples: list[str] = []

    img_words = _as_words(img_sorted)

    def map_images(ids: np.ndarray, lines: np.ndarray, path: PathLike) -> tuple[np.ndarray, np.ndarray]:
        nonlocal unknown_total
        # Vectorised lookup: binary search in the sorted image ids (bytes, as the column is; as integers
        # when both fit in 8 bytes: the same order, several times faster than comparing strings)
        if img_sorted.size and ids.size:
            words = _as_words(ids) if img_words is not None else None
            hay, needles = (
                (img_words, words) if img_words is not None and words is not None else (img_sorted, ids)
            )
            at = np.minimum(np.searchsorted(hay, needles), img_sorted.shape[0] - 1)
            idx = np.where(hay[at] == needles, img_order[at], -1)
        else:
            idx = np.full(ids.shape[0], -1, dtype=np.int64)
        unknown = idx < 0
        if unknown.any():
            r = int(np.flatnonzero(unknown)[0])
            if unknown_images == "error":
                raise ValidationError(
                    f"image id {_s(ids[r])!r} is not in the image set "
                    f"({int(unknown.sum())} such line(s) in this file; --unknown-images warn "
                    "(Python: unknown_images='warn') drops them)",
                    file=path,
                    record=f"line {int(lines[r])}",
                )
            unknown_total += int(unknown.sum())
            if len(unknown_examples) < 3:
                unknown_examples.append(f"{path}: line {int(lines[r])}: {_s(ids[r])!r}")
        return idx, ~unknown

    def read(path: PathLike) -> bytes:
        refuse_special(path, "detection file")  # (a pipe would block the read)
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputFormatError(f"cannot read detections: {exc.strerror or exc}", file=path) from None
        if not data.strip():
            empty_files.append(str(path))
        return data

    path: PathLike
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
                if os.path.exists(path):
                    raise InputFormatError("a detection file is expected here, found a directory", file=path)
                missing.append(cname)
                continue
            present += 1
            (ids,), vals, lines, bad = _read_table(
                read(path),
                1,
                ("score", "x1", "y1", "x2", "y2"),
                path,
                "<image_id> <score> <x1> <y1> <x2> <y2>",
                on_error,
            )
            skipped += bad
            idx, keep = map_images(ids, lines, path)
            chunks.append(
                (idx[keep], np.full(int(keep.sum()), ci, dtype=np.int64), vals[keep, 1:], vals[keep, 0])
            )
        if present == 0:
            raise InputFormatError(
                f"no detection file matches the pattern for any of {len(class_list)} class(es)", file=pat
            )
        if missing:
            warnings.append(
                f"no detection file for {len(missing)} class(es) (scored with 0 detections): "
                + ", ".join(missing)
            )
    elif layout == "single":
        path = source
        (ids, cls_col), vals, lines, bad = _read_table(
            read(path),
            2,
            ("score", "x1", "y1", "x2", "y2"),
            path,
            "<image_id> <class> <score> <x1> <y1> <x2> <y2>",
            on_error,
        )
        skipped += bad
        class_list = list(classes) if classes is not None else []
        cuniq, cinv = np.unique(cls_col, return_inverse=True)
        known = set(class_list)
        cnames = [_s(c) for c in cuniq.tolist()]
        class_list += sorted(c for c in cnames if c not in known)
        cpos = {c: k for k, c in enumerate(class_list)}
        label = (
            np.array([cpos[c] for c in cnames], dtype=np.int64)[cinv] if cinv.size else np.empty(0, np.int64)
        )
        idx, keep = map_images(ids, lines, path)
        chunks.append((idx[keep], label[keep], vals[keep, 1:], vals[keep, 0]))
    else:
        raise ConfigError(f"unknown detection layout {layout!r}; use 'comp4' or 'single'")

    if empty_files:
        warnings.append(
            f"{len(empty_files)} empty detection file(s) (0 detections): " + ", ".join(empty_files)
        )
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
        skipped=tuple(skipped),
        dropped_unknown_images=unknown_total,
    )
