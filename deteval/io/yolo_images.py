"""Corrupt images of a YOLO split, found as Ultralytics' dataset check finds them, from the files' first and
last bytes where that gives the same answer.

Ultralytics (``verify_image_label``; ``check_image`` since 8.4.176) checks every image of a split before
reading its labels, and leaves an image that fails out of the dataset, its labels uncounted, with the warning
``<image>: ignoring corrupt image/label: <reason>``. In 8.0.239, 8.4.37, 8.4.176 and 8.4.190 the image checks
are, in this order:

1. ``Image.open`` and ``im.verify()`` (for a PNG, pillow walks the chunks up to ``IEND`` checking each CRC;
   for a JPEG and the other formats, nothing more);
2. the size after the EXIF rule: both sides at least 10 pixels (``image size (h, w) <10 pixels``);
3. pillow's format, lower-cased, among the version's ``IMG_FORMATS`` (8.0.239: bmp dng jpeg jpg mpo png tif
   tiff webp pfm; 8.4.37 and later: also avif heic heif jp2 jpeg2000);
4. a JPEG not ending in the EOI marker ``FF D9`` is decoded (EXIF orientation applied) and written back
   over the file, "corrupt JPEG restored and saved": it stays in the dataset if pillow decodes it, and is
   left out if that decoding fails (a truncated file: "image file is truncated").

deteval reads the header (:func:`deteval.io.guards.image_header`) and the last bytes of each file, and asks
pillow only where those do not settle it: a PNG whose last 12 bytes are not an ``IEND`` chunk (pillow's
``verify`` then decides), a JPEG without its EOI marker (pillow's decoding then decides; deteval never
rewrites the file, and warns that Ultralytics would). One check is not repeated: the CRCs of a PNG's chunks
before ``IEND`` (a file damaged inside, its end intact, is kept; reading every byte of every PNG would cost
more than the whole evaluation).
"""

from __future__ import annotations

import os

from deteval.errors import DetevalError
from deteval.io.guards import image_header, read_ends

__all__ = ["IMAGE_FORMATS", "IMG_FORMATS", "ImageCheck", "image_check"]

#: Ultralytics' ``IMG_FORMATS`` of 8.4 (8.4.37, kept by 8.4.176 and 8.4.190): the file suffixes a split's
#: images are listed by (:func:`deteval.io.yolo.list_image_files`), and the pillow formats its image check accepts.
IMG_FORMATS = frozenset(
    {"avif", "bmp", "dng", "heic", "heif", "jp2", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp"}
)

#: pillow formats (lower-cased) each Ultralytics era accepts: its ``IMG_FORMATS`` (8.0.239; 8.4.37, whose set
#: 8.4.176 and 8.4.190 keep, adding "jpeg2000" by hand as 8.4.37 lists it).
IMAGE_FORMATS: dict[str, frozenset[str]] = {
    "8.0": frozenset({"bmp", "dng", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp", "pfm"}),
    "8.4": IMG_FORMATS | {"jpeg2000"},
}

_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"
_EOI = b"\xff\xd9"

ImageCheck = tuple[tuple[str, int, int, int | None] | None, str | None, str | None]


def _pillow_fault(path: str | os.PathLike[str], verify: bool) -> str | None:
    """What pillow raises on ``verify()`` (PNG) or on decoding with the EXIF orientation applied (a JPEG
    without its end marker), or None."""
    from PIL import Image, ImageOps

    try:
        with Image.open(path) as im:
            if verify:
                im.verify()
            else:
                ImageOps.exif_transpose(im).load()
    except Exception as exc:
        return str(exc)
    return None


def image_check(path: str | os.PathLike[str], era: str, *, listed: bool = False) -> ImageCheck:
    """Ultralytics' image check (module docstring) of ``path`` under ``era`` (a key of :data:`IMAGE_FORMATS`).

    Returns
    -------
    header, fault, note
        The header (:func:`~deteval.io.guards.image_header`: format, width, height, orientation; None when
        unreadable); the reason Ultralytics gives for leaving the image out, or None; and, for an image kept,
        what Ultralytics would do to it (a JPEG restored and written back), or None. A path that is not a
        regular file is an :class:`~deteval.errors.InputFormatError` (:func:`~deteval.io.guards.read_ends`),
        as everywhere in deteval. ``listed``: the folder's listing gave ``path`` as a regular file, not a link
        (read without an ``fstat``: :func:`~deteval.io.guards.read_listed`).
    """
    # (a path that is no regular file, a FIFO or a dangling link, stays an error: the guards refuse it)
    head, end = read_ends(path, "image", limit=1 << 13, tail=len(_IEND), listed=listed)
    try:
        header = image_header(path, head, listed=listed)
    except DetevalError as exc:
        return None, exc.reason, None
    fmt, w, h, _ = header
    if fmt == "PNG" and end != _IEND:
        fault = _pillow_fault(path, verify=True)
        if fault is not None:
            return header, fault, None
    if not (w > 9 and h > 9):  # (the EXIF turn swaps the sides: the test is the same)
        return header, f"image size {(h, w)} <10 pixels", None
    if fmt.lower() not in IMAGE_FORMATS[era]:
        return header, f"invalid image format {fmt}", None
    if fmt == "JPEG" and end[-2:] != _EOI:
        fault = _pillow_fault(path, verify=False)
        if fault is not None:
            return header, fault, None
        return header, None, "corrupt JPEG (no end marker): Ultralytics restores it and writes it back"
    return header, None, None
