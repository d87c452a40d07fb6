"""Reading Pascal VOC text files: the path type every VOC reader takes, UTF-8 text whose faults name the line,
and image-set lists (``ImageSets/Main/<split>.txt``)."""

from __future__ import annotations

import os
from pathlib import Path

from deteval.errors import InputFormatError, ValidationError
from deteval.io.guards import refuse_special
from deteval.syntax import fields, text_lines

__all__ = ["PathLike", "read_image_set"]

PathLike = str | os.PathLike


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
