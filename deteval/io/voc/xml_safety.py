"""Safe XML parsing of Pascal VOC annotations, without defusedxml.

A document containing ``<!DOCTYPE`` or ``<!ENTITY`` is refused before any parsing (so a "billion laughs" file
costs one byte scan), documents in encodings that could hide those markers from the scan (UTF-16/32,
EBCDIC, ...) are refused, and the parser's ``doctype`` hook raises as a second line of defence when a file
is parsed alone. No DTD, entity or external reference is ever processed. The files of a folder are parsed
together by one parser (the C tree builder, which has no ``doctype`` hook) once each of them has passed the
same scan (:func:`parse_together`); whenever anything in them is unusual, the caller parses them document by
document with :func:`parse_xml_safely`, with every check and error message.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from deteval.errors import InputFormatError
from deteval.io.guards import read_regular
from deteval.io.voc.files import PathLike

__all__ = ["parse_together", "parse_xml_safely"]

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


# The XML declaration of a document that may be parsed together with others: version 1.0, UTF-8 or no
# encoding (other encodings are parsed alone, with their own decoding).
_PLAIN_DECL = re.compile(
    rb"""<\?xml\s+version\s*=\s*(?:"1\.0"|'1\.0')(?:\s+encoding\s*=\s*(?:"utf-8"|'utf-8'))?"""
    rb"""(?:\s+standalone\s*=\s*(?:"(?:yes|no)"|'(?:yes|no)'))?\s*\?>""",
    re.IGNORECASE,
)
_XML_SPACE = " \t\r\n"


def parse_together(paths: Sequence[str]) -> list[ET.Element] | None:
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
            data = read_regular(path, "annotation file")  # (open, fstat, one read: few system calls per file)
        except (OSError, InputFormatError):
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
