"""PNG and JPEG sizes and EXIF orientations read from the header bytes: the same answer as pillow for every file
the direct reader accepts (valid files of many kinds, and the same files damaged), and pillow asked otherwise."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from PIL import Image

from deteval.errors import DetevalError
from deteval.io.guards import image_header
from deteval.io.image_header import header_size


def _pillow(path: Path) -> tuple[str, int, int, int | None] | str:
    """What pillow says: format, size and EXIF orientation (as ``image_header`` reads it), or an error."""
    try:
        with Image.open(path) as im:
            value = None
            try:  # (an EXIF block pillow cannot read gives no orientation)
                if im.format == "PNG":  # (only an eXIf chunk before the image data)
                    if im.info.get("exif"):
                        exif = Image.Exif()
                        exif.load(im.info["exif"])
                        value = exif.get(274)
                else:
                    value = im.getexif().get(274)
            except Exception:
                value = None
            return str(im.format), im.size[0], im.size[1], value if isinstance(value, int) else None
    except Exception:
        return "error"


def _samples(rng: random.Random) -> list[bytes]:
    out = []
    icc = Image.new("RGB", (1, 1)).info.get("icc_profile")
    for mode in ["RGB", "L", "P", "RGBA", "1", "I;16", "LA", "CMYK"]:
        for fmt in ["PNG", "JPEG"]:
            for orientation in [None, 1, 5, 6, 7, 8]:
                kw: dict = {}
                if orientation:
                    exif = Image.Exif()
                    exif[274] = orientation
                    exif[0x011A] = 72.0
                    kw["exif"] = exif.tobytes()
                if rng.random() < 0.3:
                    kw["dpi"] = (300, 300)
                if fmt == "JPEG" and rng.random() < 0.3:
                    kw["progressive"] = True
                if icc and rng.random() < 0.3:
                    kw["icc_profile"] = icc
                buf = io.BytesIO()
                try:
                    Image.new(mode, (rng.randint(1, 70), rng.randint(1, 70))).save(buf, fmt, **kw)
                except (OSError, ValueError, KeyError):
                    continue  # (a mode the format does not store)
                out.append(buf.getvalue())
    return out


@pytest.mark.filterwarnings("ignore")  # (pillow warns about the damaged EXIF blocks)
def test_header_reader_agrees_with_pillow(tmp_path: Path) -> None:
    rng = random.Random(7)
    samples = _samples(rng)
    cases = list(samples)
    for _ in range(1500):
        data = bytearray(rng.choice(samples))
        for _ in range(rng.randint(1, 3)):
            if len(data) < 2:
                break
            i, op = rng.randrange(min(len(data), 200)), rng.random()
            if op < 0.6:
                data[i] = rng.randrange(256)
            elif op < 0.8:
                del data[i : i + rng.randint(1, 8)]
            else:
                data = data[: rng.randrange(len(data))]
        cases.append(bytes(data))
    direct = 0
    for k, data in enumerate(cases):
        path = tmp_path / f"{k}.img"
        path.write_bytes(data)
        quick = header_size(data)
        truth = _pillow(path)
        if quick is not None:
            direct += 1
            assert quick == truth, k
        try:
            got: tuple | str = image_header(path)
        except DetevalError:
            got = "error"
        assert got == truth, k
    assert direct > len(samples) // 2  # (most valid files are read directly)
