"""The guards every reader and writer of deteval goes through, in one place so that a new reader cannot forget one.

* **Special files** (:func:`regular_file`): a named pipe, a device (``/dev/zero``), a socket, a folder or a
  dangling symbolic link is refused *before* it is opened: a pipe would block forever, ``/dev/zero`` would
  be read until memory runs out, a folder or a dangling link would read as "no records".
* **JSON** (:func:`loads_json`, :func:`read_json`): Python's ``json`` with a repeated key in one object
  refused (:mod:`deteval.io.jsonkeys` holds that rule), integers of more than :data:`MAX_INT_DIGITS` digits
  refused (Python's own limit, 4,300 digits, raises a bare ``ValueError``), nesting deeper than the parser's
  stack refused as such (``RecursionError``), a UTF-8 BOM ignored.
* **CSV** (:func:`csv_rows`): fields up to :data:`MAX_CSV_FIELD` characters; a longer field, a NUL byte or
  any other ``csv.Error`` names the line.
* **Images** (:func:`image_size`, :func:`open_image`, :func:`contained_path`): the size is read from the
  header (no pixel decode) and bounded by :data:`MAX_IMAGE_PIXELS`; a file that is not an image is refused
  clearly; a picture named by a data file is looked up inside its image folder only (an absolute name or one
  with ``..`` is refused); a canvas is bounded (:func:`canvas_size`).
* **Outputs** (:func:`refuse_overwriting_inputs`): an output path that is one of the inputs is refused.
  Every file is written by the one atomic writer, :func:`write_atomically`.
* **Declared sizes** (:func:`bounded_count`): a count a file declares (``nc``, a number of images) is bounded
  before anything is sized from it.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import math
import os
import stat
import warnings
from collections.abc import Iterable, Iterator, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from deteval.errors import ConfigError, InputFormatError, ValidationError
from deteval.io.image_header import HEADER_BYTES, header_size
from deteval.io.jsonkeys import DuplicateKeyError, unique_keys

__all__ = [
    "MAX_CANVAS_PIXELS",
    "MAX_CSV_FIELD",
    "MAX_DECLARED_COUNT",
    "MAX_DRAW_PIXELS",
    "MAX_IMAGE_PIXELS",
    "MAX_INT_DIGITS",
    "bounded_count",
    "canvas_size",
    "contained_path",
    "csv_rows",
    "decode_text",
    "image_header",
    "image_size",
    "loads_json",
    "make_folder",
    "open_image",
    "read_bytes",
    "read_json",
    "read_listed",
    "read_regular",
    "read_text",
    "refuse_overwriting_inputs",
    "refuse_special",
    "regular_file",
    "write_atomically",
    "write_file",
]

#: The most digits a JSON integer may have: below Python's own 4,300-digit limit (a bare ``ValueError``);
#: a longer one is refused for the file, a shorter one that no float holds by the reader naming the record.
MAX_INT_DIGITS = 4000
#: The longest CSV field (characters): far beyond any id, label or number, below ``csv``'s own 131,072 limit
#: being hit as a bare ``_csv.Error``.
MAX_CSV_FIELD = 1 << 20
#: The most pixels of an image whose size or pixels are read: pillow's decompression-bomb limit (twice its
#: ``Image.MAX_IMAGE_PIXELS`` default, 89,478,485), above which pillow refuses to open the file.
MAX_IMAGE_PIXELS = 2 * 89_478_485
#: The largest picture decoded to be drawn on (pixels): 64 Mpx (8192 × 8192; camera photos are smaller).
MAX_DRAW_PIXELS = 1 << 26
#: The largest grey canvas drawn where there is no picture (pixels): 16 Mpx (4096 × 4096, 48 MB in RGB).
MAX_CANVAS_PIXELS = 1 << 24
#: The largest count a file may declare (classes, images) before arrays are sized from it.
MAX_DECLARED_COUNT = 10_000_000

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def regular_file(path: str | PathLike[str], what: str = "file") -> Path:
    """``path`` if it is a regular file (a symbolic link to one included); else :class:`InputFormatError`
    naming what it is, without opening it (a FIFO would block the open, a device be read forever)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        reason = "a dangling symbolic link" if os.path.islink(p) else "no such file"
        raise InputFormatError(f"cannot read the {what}: {reason}", file=p) from None
    except OSError as exc:
        raise InputFormatError(f"cannot read the {what}: {exc.strerror or exc}", file=p) from None
    for test, kind in _KINDS:
        if test(st.st_mode):
            raise InputFormatError(f"the {what} is {kind}, not a regular file", file=p)
    return p


def refuse_special(path: str | PathLike[str], what: str = "file") -> None:
    """Refuse a named pipe, a device or a socket at ``path`` before it is opened (opening a pipe blocks,
    ``/dev/zero`` never ends); anything else (a missing file, a folder) is left to the caller's own error."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    for test, kind in _KINDS[:-1]:  # (not S_ISDIR)
        if test(st.st_mode):
            raise InputFormatError(f"the {what} is {kind}, not a regular file", file=path)


def read_bytes(path: str | PathLike[str], what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (see :func:`regular_file`)."""
    p = regular_file(path, what)
    try:
        return p.read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot read the {what}: {exc.strerror or exc}", file=p) from None


def read_regular(
    path: str | PathLike[str], what: str = "file", *, limit: int | None = None, missing_ok: bool = False
) -> bytes:
    """:func:`read_bytes` in fewer system calls, for readers of many small files: the file is opened without
    blocking (a FIFO does not block the open) and checked by its descriptor; anything but a regular file
    raises :func:`read_bytes`'s error. ``limit``: at most that many bytes. ``missing_ok``: no file at all (not
    even a dangling link) reads as ``b""``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if missing_ok and not os.path.lexists(path):
            return b""
        return read_bytes(path, what)  # (raises, naming a dangling link)
    except OSError:
        return read_bytes(path, what)  # (raises, naming what it is)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return read_bytes(path, what)  # (raises, naming what it is)
        want = st.st_size + 1 if limit is None else limit
        data = os.read(fd, want)
        if len(data) < want or limit is not None:  # (a regular file reads whole up to its end)
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 20):  # (the file grew since fstat)
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputFormatError(f"cannot read the {what}: {exc.strerror or exc}", file=path) from None
    finally:
        os.close(fd)


#: Bytes of the one read of a file a listing gave as regular (:func:`read_listed`) where no limit is set.
LISTED_READ = 1 << 16
#: How :func:`read_listed` opens a file: without blocking (a FIFO put there since the listing does not
#: block the open) and without following a symbolic link (a link put there since is read by
#: :func:`read_regular`, which checks what it leads to).
_LISTED_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def read_listed(path: str | PathLike[str], what: str = "file", *, limit: int | None = None) -> bytes:
    """:func:`read_regular` of a file that its folder's listing gave as a regular file, not a link (the
    entry's type, ``DirEntry.is_file(follow_symlinks=False)``, which costs no system call): opened and read
    once, without the ``fstat``. Where the bytes could come from something else put there since the
    listing, the file is read again by :func:`read_regular` (which checks it by its descriptor and raises
    its errors): nothing read (an empty file, or a FIFO, ``/dev/null``), a read error, a link (not
    followed), and, with no ``limit``, all :data:`LISTED_READ` bytes read (a longer file, or a device that
    never ends). With a ``limit``, at most that many bytes are read whatever the file is."""
    want = LISTED_READ if limit is None else limit
    try:
        fd = os.open(path, _LISTED_FLAGS)
    except OSError:
        return read_regular(path, what, limit=limit)
    try:
        data = os.read(fd, want)
    except OSError:
        data = b""
    finally:
        os.close(fd)
    if data and (limit is not None or len(data) < want):
        return data
    return read_regular(path, what, limit=limit)


def read_ends(
    path: str | PathLike[str], what: str, *, limit: int, tail: int, listed: bool = False
) -> tuple[bytes, bytes]:
    """The first ``limit`` and the last ``tail`` bytes of the regular file ``path`` (one open; the last bytes
    taken from the first when the file is no longer than ``limit``), checked as :func:`read_regular` checks.
    ``listed``: its folder's listing gave it as a regular file, not a link: read as :func:`read_listed`
    reads, the end found by a seek instead of an ``fstat``."""
    if listed:
        ends = _listed_ends(path, limit, tail)
        if ends is not None:
            return ends
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        data = read_bytes(path, what)  # (raises, naming what it is; or a file made since: read it whole)
        return data[:limit], data[-tail:]
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            read_bytes(path, what)  # (raises, naming what it is)
        head = os.read(fd, limit)
        if len(head) < limit:
            return head, head[-tail:]
        return head, os.pread(fd, tail, max(0, st.st_size - tail))
    except OSError as exc:
        raise InputFormatError(f"cannot read the {what}: {exc.strerror or exc}", file=path) from None
    finally:
        os.close(fd)


def _listed_ends(path: str | PathLike[str], limit: int, tail: int) -> tuple[bytes, bytes] | None:
    """:func:`read_ends` of a listed regular file without an ``fstat``, or None where :func:`read_listed`
    would read again (nothing read, an error, a link): the caller then reads it with the checks."""
    try:
        fd = os.open(path, _LISTED_FLAGS)
    except OSError:
        return None
    try:
        head = os.read(fd, limit)
        if not head:
            return None
        if len(head) < limit:
            return head, head[-tail:]
        end = os.lseek(fd, 0, os.SEEK_END)
        return head, os.pread(fd, tail, max(0, end - tail))
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path: str | PathLike[str], what: str = "file") -> str:
    """The UTF-8 text of the regular file ``path``, a BOM dropped; a byte that is not UTF-8 names its line."""
    return decode_text(read_bytes(path, what), path)


def decode_text(data: bytes, file: str | PathLike[str]) -> str:
    """``data`` decoded as UTF-8, a leading BOM dropped; a byte that is not UTF-8 names its line of ``file``."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFormatError(f"not UTF-8 text: {exc.reason}", file=file, record=f"line {line}") from None


class _BadValue(ValueError):
    """Raised from the JSON hooks; becomes an InputFormatError naming the file."""


def _bounded_int(token: str) -> int:
    if len(token) > MAX_INT_DIGITS:
        raise _BadValue(f"an integer of {len(token.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(token)


def loads_json(data: bytes | str, file: str | PathLike[str]) -> Any:
    """Parse the JSON text ``data`` of ``file`` with every guard (module docstring); ``NaN``/``Infinity``
    are read as floats so that the record holding one is named by the reader's own checks."""
    if isinstance(data, bytes) and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif isinstance(data, str) and data.startswith("\ufeff"):
        data = data[1:]
    if not data.strip():
        raise InputFormatError("empty file (no JSON at all)", file=file)
    try:
        return json.loads(data, object_pairs_hook=unique_keys, parse_int=_bounded_int)
    except (DuplicateKeyError, _BadValue) as exc:
        raise InputFormatError(str(exc), file=file) from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", file=file, record=f"line {exc.lineno}"
        ) from None
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"not UTF-8 text: {exc.reason}", file=file) from None
    except RecursionError:
        raise InputFormatError("invalid JSON: nested too deeply", file=file) from None
    except ValueError as exc:
        raise InputFormatError(f"invalid JSON: {str(exc)[:200]}", file=file) from None


def read_json(path: str | PathLike[str], what: str = "file") -> Any:
    """:func:`loads_json` of the regular file ``path``."""
    return loads_json(read_bytes(path, what), path)


def csv_rows(text: str, file: str | PathLike[str], *, first_line: int = 1) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of each row of the CSV ``text`` (``line``: where the row starts, 1-based); a field
    longer than :data:`MAX_CSV_FIELD` characters or any other CSV fault names the line."""
    old = csv.field_size_limit(MAX_CSV_FIELD)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        line = first_line
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise InputFormatError(
                    f"bad CSV: {exc}", file=file, record=f"line {reader.line_num}"
                ) from None
            yield line, row
            line = reader.line_num + 1
    finally:
        csv.field_size_limit(old)


def bounded_count(value: int, what: str, file: str | PathLike[str], hi: int = MAX_DECLARED_COUNT) -> int:
    """``value`` if ``0 <= value <= hi``; else :class:`ValidationError` (nothing is sized from a count the
    file merely declares beyond that)."""
    if not 0 <= value <= hi:
        shown = str(value) if len(str(value)) <= 30 else f"{str(value)[:20]}...({len(str(value))} digits)"
        raise ValidationError(f"{what} {shown} is outside 0..{hi:,}", file=file)
    return value


# ------------------------------------------------------------------------------------------------- images
def _exif_orientation(im: Any) -> int | None:
    """The EXIF orientation tag (274) of an opened image, or None, read from the header without decoding a
    pixel: a JPEG's APP1 block (pillow reads it on open), a PNG's ``eXIf`` chunk only where it comes before
    the image data (pillow's ``getexif`` would decode the whole picture to look for a later one; Ultralytics
    8.4.190's ``exif_size`` runs after ``verify()``, where that load fails and no orientation applies). A
    broken EXIF block does not make the image unreadable (``exif_size`` ignores it)."""
    from PIL import Image  # optional heavy dependency, only where image sizes are read

    try:
        if im.format == "PNG":
            raw = im.info.get("exif")
            if not raw:
                return None
            exif = Image.Exif()
            exif.load(raw)
            value = exif.get(274)
        else:
            value = im.getexif().get(274)
    except Exception:
        return None
    return value if isinstance(value, int) else None


def image_header(
    path: str | PathLike[str], head: bytes | None = None, *, listed: bool = False
) -> tuple[str, int, int, int | None]:
    """``(format, width, height, orientation)`` of the image ``path`` from its header, no pixel decoded: PNG
    and JPEG headers read directly where they hold only what :mod:`deteval.io.image_header` checks, any
    other file by pillow (the same answer). ``orientation`` is the EXIF tag 274 (an int) or None (module
    :func:`_exif_orientation` says where it comes from). A file that is not an image, or larger than
    :data:`MAX_IMAGE_PIXELS`, is an :class:`InputFormatError` naming it. ``head``: the file's first 8 KiB,
    when read already. ``listed``: the file's folder listed it as a regular file (:func:`read_listed`)."""
    read = read_listed if listed else read_regular
    if head is None:
        head = read(path, "image", limit=1 << 13)  # (most headers; a large EXIF block needs more)
    quick = header_size(head)
    if quick is None and len(head) == 1 << 13:
        quick = header_size(read(path, "image", limit=HEADER_BYTES))
    if quick is not None and 0 < quick[1] * quick[2] <= MAX_IMAGE_PIXELS:
        return quick
    return _pillow_header(regular_file(path, "image"))


def _pillow_header(p: Path) -> tuple[str, int, int, int | None]:
    from PIL import Image  # optional heavy dependency, only where image sizes are read

    try:
        with warnings.catch_warnings():  # (pillow's DecompressionBombWarning: the bound below says it)
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(p) as im:
                w, h = im.size
                fmt = str(im.format)
                orientation = _exif_orientation(im)
    except Image.DecompressionBombError:
        raise InputFormatError(
            f"the image is larger than {MAX_IMAGE_PIXELS:,} pixels", file=p
        ) from None  # (pillow may refuse before telling the size)
    except (OSError, ValueError, SyntaxError) as exc:  # UnidentifiedImageError is an OSError
        raise InputFormatError(f"not a readable image: {exc}", file=p) from None
    if w * h > MAX_IMAGE_PIXELS:
        raise InputFormatError(f"the image is {w} x {h}: more than {MAX_IMAGE_PIXELS:,} pixels", file=p)
    if w <= 0 or h <= 0:
        raise InputFormatError(f"the image is {w} x {h}: an empty picture", file=p)
    return fmt, w, h, orientation


def image_size(path: str | PathLike[str], *, exif: bool = True) -> tuple[int, int]:
    """(width, height) of the image ``path`` from its header (:func:`image_header`), EXIF orientations 5–8
    swapping them (``exif``; pillow gives a TIFF's size turned by its orientation already)."""
    fmt, w, h, orientation = image_header(path)
    turn = exif and orientation in (5, 6, 7, 8) and fmt != "TIFF"  # (pillow's TIFF size is turned already)
    return (h, w) if turn else (w, h)


def open_image(path: str | PathLike[str], max_pixels: int = MAX_DRAW_PIXELS) -> Any:
    """The picture ``path`` decoded as an RGB pillow image, after :func:`image_size` checked it (readable,
    at most ``max_pixels``, so that its decoded pixels are bounded)."""
    from PIL import Image  # optional heavy dependency, only where pictures are drawn

    w, h = image_size(path, exif=False)
    if w * h > max_pixels:
        raise InputFormatError(f"the image is {w} x {h}: more than {max_pixels:,} pixels to draw", file=path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                return im.convert("RGB")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise InputFormatError(f"not a readable image: {exc}", file=path) from None


def canvas_size(width: float, height: float, max_pixels: int = MAX_CANVAS_PIXELS) -> tuple[int, int]:
    """A drawing canvas of at least 16 × 16 for a declared (``width``, ``height``), scaled down (aspect kept)
    to at most ``max_pixels``; non-finite or non-positive sides become 16."""
    w = width if math.isfinite(width) and width > 0 else 16.0
    h = height if math.isfinite(height) and height > 0 else 16.0
    longest = max_pixels / 16  # (the other side is at least 16)
    w, h = min(max(w, 16.0), longest), min(max(h, 16.0), longest)
    if w * h > max_pixels:
        s = math.sqrt(max_pixels / (w * h))
        w, h = max(w * s, 16.0), max(h * s, 16.0)
    return max(int(w), 16), max(int(h), 16)


def contained_path(root: str | PathLike[str], name: str, file: str | PathLike[str] | None = None) -> Path:
    """``root / name`` for a picture named by a data file, refused unless it stays inside ``root``: an absolute
    ``name`` (which would replace ``root``) or one going up with ``..`` is an :class:`InputFormatError`."""
    pure = Path(name)
    if pure.is_absolute() or name.startswith(("/", "\\")) or ".." in pure.parts or "\x00" in name:
        raise InputFormatError(
            f"the image name {name[:200]!r} leaves the image folder (absolute or with '..')", file=file
        )
    return Path(root) / pure


# ------------------------------------------------------------------------------------------------ outputs
def write_atomically(path: Path, chunks: Iterable[bytes]) -> None:
    """Replace the file ``path`` by ``chunks``, atomically: they go to a temporary file in the same folder,
    flushed to disk (fsync) and renamed over ``path``; a kill, a full disk or any error mid-write leaves the
    previous file intact and no temporary file behind. An existing non-regular file (``/dev/stdout``, a
    named pipe) is written directly, as a rename cannot replace it; a folder raises ``IsADirectoryError``.
    Every file deteval writes goes through here (``--output`` through
    :func:`deteval.commands.common.write_text`)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if st is not None and not stat.S_ISREG(st.st_mode):
        with path.open("wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
        return
    if st is not None:
        mode = stat.S_IMODE(st.st_mode)
    else:  # what a plain open() would give: 0o666 less the umask
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = _new_temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:  # also KeyboardInterrupt: never leave the temporary file behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # Make the rename itself durable; not every platform or file system lets a folder be fsynced.
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


#: How a temporary file is created: exclusively, not through a link, closed on exec (tempfile.mkstemp's flags).
_TEMPORARY_FLAGS = (
    os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
) | getattr(os, "O_BINARY", 0)


def _new_temporary(path: Path) -> tuple[int, str]:
    """A new file ``.<name>.<random>.tmp`` next to ``path``, mode 0600, and its descriptor, as
    ``tempfile.mkstemp`` makes one: made here because importing tempfile (with shutil, random and the
    compression modules) costs every run, evaluations that write nothing included, a few milliseconds."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, _TEMPORARY_FLAGS, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", str(path.parent))


def refuse_overwriting_inputs(
    outputs: Sequence[tuple[str, str | PathLike[str] | None]], inputs: Sequence[str | PathLike[str] | None]
) -> None:
    """Refuse an output path (``(flag, path)`` pairs) that is one of ``inputs`` (the same file, also through a
    link): writing it would replace the input the next run reads."""
    existing = []
    for x in inputs:
        if x is None:
            continue
        try:
            existing.append((x, os.stat(x)))
        except OSError:
            continue
    for flag, out in outputs:
        if out is None or not existing:
            continue
        try:
            st = os.stat(out)
        except OSError:
            continue
        for x, sx in existing:
            if (st.st_dev, st.st_ino) == (sx.st_dev, sx.st_ino) and stat.S_ISREG(st.st_mode):
                raise ConfigError(f"{flag} {out} is an input of this run ({x}): it would be overwritten")
            if stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == (sx.st_dev, sx.st_ino):
                raise ConfigError(f"{flag} {out} is an input folder of this run: its files would be replaced")


def write_file(path: str | PathLike[str], data: bytes | str, what: str = "output") -> Path:
    """Write ``data`` to the file ``path`` with :func:`write_atomically`, creating its folder; any failure (a
    read-only folder, a path under a file, a full disk) is a :class:`~deteval.errors.ConfigError` naming it."""
    p = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(Path(os.path.realpath(p)), [raw])
    except OSError as exc:
        raise ConfigError(f"cannot write the {what}: {exc.strerror or exc}", file=p) from None
    return p


def make_folder(path: str | PathLike[str], what: str = "output folder") -> Path:
    """Create the folder ``path`` (and its parents) if needed; an existing file there or a failure is a
    :class:`~deteval.errors.ConfigError` naming it."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"the {what} exists and is not a folder", file=p)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the {what}: {exc.strerror or exc}", file=p) from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot write into the {what}: permission denied", file=p)
    return p
