"""Image size and EXIF orientation of common PNG and JPEG files read from their first bytes, exactly as pillow's
``Image.open`` (+ the orientation :func:`deteval.io.guards.image_size` reads) would, without pillow's per-file
cost.

Only files whose header holds nothing but what is checked here take this path: a PNG whose chunks before the
image data are among :data:`PNG_CHUNKS`, each with pillow's length rule and a good CRC; a JPEG whose segments
before the scan are JFIF/EXIF/ICC/other plain application segments, quantization tables (checked as pillow
checks them), Huffman tables, restart intervals, comments and one frame header of 8-bit 1, 3 or 4 components.
Anything else (XMP, MPO pictures, Adobe and Photoshop segments, text chunks, animations, stray bytes, a header
longer than the bytes read, an EXIF block pillow's reader fails on) returns None, and the caller asks pillow:
so the answer never differs from pillow's, only the time.

The EXIF orientation comes from pillow's own EXIF parser (``PIL.Image.Exif``) on the block found here.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

__all__ = ["HEADER_BYTES", "header_size"]

#: Bytes of a file read to find its size (a JPEG's EXIF block may take up to 64 KiB).
HEADER_BYTES = 1 << 17

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: pillow's supported (bit depth, colour type) pairs of a PNG (``PngImagePlugin._MODES``).
_PNG_MODES = frozenset(
    {(1, 0), (2, 0), (4, 0), (8, 0), (16, 0), (8, 2), (16, 2), (1, 3), (2, 3), (4, 3), (8, 3), (8, 4), (16, 4),
     (8, 6), (16, 6)}
)  # fmt: skip
#: PNG chunks allowed before the image data, with the least length pillow's handler accepts (no handler: 0).
PNG_CHUNKS = {b"PLTE": 0, b"gAMA": 4, b"cHRM": 32, b"sRGB": 1, b"pHYs": 9, b"eXIf": 0, b"bKGD": 0, b"sBIT": 0,
              b"tIME": 0, b"hIST": 0}  # fmt: skip
#: JPEG frame headers pillow reads (its SOF handler).
_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
#: JPEG segments pillow reads past without checks (DHT, DRI, COM, and application segments 3–12 and 15).
_PLAIN = frozenset({0xC4, 0xDD, 0xFE, *range(0xE3, 0xED), 0xEF})


def header_size(data: bytes) -> tuple[str, int, int, int | None] | None:
    """``(format, width, height, orientation)`` of a PNG or JPEG from its first bytes ``data`` (``orientation``:
    EXIF tag 274 when an EXIF block has an integer one, else None), or None when pillow must answer (module
    docstring)."""
    try:
        if data.startswith(_PNG_MAGIC):
            return _png(data)
        if data[:3] == b"\xff\xd8\xff":
            return _jpeg(data)
    except (IndexError, struct.error):  # (a header longer than the bytes read)
        return None
    return None


def _png(data: bytes) -> tuple[str, int, int, int | None] | None:
    pos = 8
    size: tuple[int, int] | None = None
    exif: bytes | None = None
    while True:
        length, cid = struct.unpack_from(">I4s", data, pos)
        end = pos + 8 + length
        if end + 4 > len(data):
            return None
        if cid == b"IDAT":
            break
        body = data[pos + 8 : end]
        if zlib.crc32(body, zlib.crc32(cid)) != struct.unpack_from(">I", data, end)[0]:
            return None  # (pillow: broken PNG file)
        if cid == b"IHDR":
            if size is not None or length != 13 or body[11] or (body[8], body[9]) not in _PNG_MODES:
                return None
            size = struct.unpack_from(">II", body)
        elif size is None or cid not in PNG_CHUNKS or length < PNG_CHUNKS[cid]:
            return None
        elif cid == b"eXIf":
            exif = b"Exif\x00\x00" + body
        pos = end + 4
    if size is None:
        return None
    # (pillow's open does not parse a PNG's EXIF: a block it cannot read just has no orientation)
    orientation = _orientation(exif, dpi=False) if exif is not None else (True, None)
    return "PNG", size[0], size[1], orientation[1]


def _jpeg(data: bytes) -> tuple[str, int, int, int | None] | None:
    pos = 2
    end = len(data)
    size: tuple[int, int] | None = None
    exif: bytes | None = None
    while True:  # (a segment header cut short raises IndexError: the caller's None)
        if data[pos] != 0xFF:
            return None  # (stray bytes: pillow skips them)
        marker = data[pos + 1]
        n = ((data[pos + 2] << 8) | data[pos + 3]) - 2  # (the big-endian segment length)
        if n < 0 or pos + 4 + n > end:
            return None
        if marker == 0xDA:  # start of scan (its header read too): the header ends
            break
        start, pos = pos + 4, pos + 4 + n
        if marker in _PLAIN:
            continue
        s = data[start:pos]
        if marker == 0xE0:
            if s.startswith(b"JFIF") and len(s) < 7:
                return None
        elif marker == 0xE1:
            if s.startswith(b"Exif\x00\x00"):
                exif = s if exif is None else exif + s[6:]
            elif s.startswith(b"http://ns.adobe.com/xap/1.0/\x00"):
                return None  # (XMP may hold the orientation)
        elif marker == 0xE2:
            if s.startswith(b"MPF\x00") or (s.startswith(b"ICC_PROFILE\x00") and len(s) < 14):
                return None  # (a multi-picture file, or a profile pillow's reader trips on)
        elif marker == 0xDB:
            while s:
                qt_length = 1 + (1 if s[0] // 16 == 0 else 2) * 64
                if len(s) < qt_length:
                    return None
                s = s[qt_length:]
        elif marker in _SOF:
            if size is not None or len(s) < 6 or s[0] != 8 or s[5] not in (1, 3, 4):
                return None
            size = struct.unpack_from(">H", s, 3)[0], struct.unpack_from(">H", s, 1)[0]
        else:
            return None
    if size is None:
        return None
    orientation = _orientation(exif, dpi=True) if exif is not None else (True, None)
    if not orientation[0]:
        return None
    return "JPEG", size[0], size[1], orientation[1]


def _orientation(block: bytes, *, dpi: bool) -> tuple[bool, int | None]:
    """``(read, orientation)``: EXIF tag 274 of an EXIF block as pillow reads it (an int, else None); ``read``
    False where pillow's reading of the block could go another way than here (pillow must answer). ``dpi``: a JPEG's open also reads the
    resolution tags, catching only some errors."""
    from PIL import Image  # optional heavy dependency, only where image sizes are read

    try:
        exif: Any = Image.Exif()
        exif.load(block)
        value = exif.get(274)
        if dpi:
            _resolution(exif)
    except Exception:
        return False, None
    return True, value if isinstance(value, int) else None


def _resolution(exif: Any) -> None:
    """What pillow's JPEG open does with the resolution tags: any error other than those it catches is one
    pillow would raise (raised here too, so that pillow answers)."""
    try:
        unit = exif[0x0128]
        x = exif[0x011A]
        try:
            dpi = float(x[0]) / x[1]
        except TypeError:
            dpi = x
        if dpi != dpi:
            raise ValueError
        del unit
    except (struct.error, KeyError, SyntaxError, TypeError, ValueError, ZeroDivisionError):
        pass
