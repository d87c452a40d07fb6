"""YOLO datasets (``data.yaml`` + images + label txt files) and YOLO predictions, read as Ultralytics reads them.

Dataset (Ultralytics ``check_det_dataset`` / ``YOLODataset``):

* ``path``: the dataset root. Relative: against the current directory if it exists there (Ultralytics),
  else against the yaml's folder (Ultralytics would try its ``datasets_dir`` setting instead); absent: the
  yaml's folder. ``train``/``val``/``test``: a folder (searched recursively), a ``.txt`` list of image
  paths (``./x`` relative to the list's folder, other relative paths to the current directory), or a list
  of either; a relative split path that does not exist and starts with ``../`` is retried without it.
  ``validation`` stands for a missing ``val``. ``names``: list or ``{id: name}``; ``nc`` must agree.
  ``kpt_shape`` (pose) is refused here: :mod:`deteval.io.yolo_pose` reads pose rows (``--task pose``). OBB
  rows (``cls x1 y1 … x4 y4``) read here as 4-point polygons; an OBB dataset is scored as one with
  ``--task obb`` (:mod:`deteval.io.yolo_obb`).
* Images: files whose extension is one of Ultralytics' image formats, sorted by path string.
* Labels: the last ``/images/`` of the image path becomes ``/labels/`` and the extension ``.txt``; a
  missing or empty file is an image without objects. Rows: ``cls xc yc w h`` (normalized) or polygons
  ``cls x1 y1 … xn yn`` (n ≥ 3), whose extent is the box; a file mixing both is an error. Coordinates
  must satisfy Ultralytics' checks: every value ≤ 1.01; every value ≥ 0, or ≥ −0.01 with w, h ≥ 0. The
  class must be an integer in ``[0, nc)``.
* Exactly duplicated rows: an error by default; ``duplicates="drop"`` (the Ultralytics profiles) keeps one
  of each with a warning and, like Ultralytics, reorders that file's rows as ``np.unique`` sorts them.
* Image sizes come from the image header (:func:`deteval.io.guards.image_header`: no pixel decode,
  bounded), only for images that have labels or predictions, turned by the EXIF orientation as the
  Ultralytics version of the profile does (:data:`EXIF_RULES`, :func:`oriented_size`).

Predictions: a folder of ``<image stem>.txt`` (``yolo predict … save_txt save_conf``: ``cls xc yc w h
conf`` or ``cls x1 y1 … xn yn conf``, normalized), or a JSON list (``yolo val save_json``'s
``predictions.json`` or any COCO results list: ``image_id`` = the image file's stem, an int when numeric, or
``file_name``; ``category_id`` = class + 1, or the COCO-91 id for a COCO dataset; ``bbox`` = pixel
``[x, y, w, h]``; ``score``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from deteval.errors import DetevalError, DetevalWarning, InputFormatError, ValidationError
from deteval.io.coco import check_rle_size, check_segmentation
from deteval.io.guards import (
    image_header,
    read_json,
    read_text,
    regular_file,
)
from deteval.io.rle import check_rles
from deteval.io.text_rows import TextRows, read_rows
from deteval.io.yolo_images import IMG_FORMATS, image_check
from deteval.io.yolo_labels import Duplicates, parse_label_files
from deteval.io.yolo_yaml import class_names, read_data_yaml, resolve_root, split_paths
from deteval.tables.arrays import beyond_exact
from deteval.tables.boxes import BoxTable

#: How Ultralytics' ``exif_size`` turns an image's EXIF orientation (tag 274) into its size:
#:
#: * ``"swap-5-8"`` (8.4.174 and later; the ``coco`` and ``supervision`` profiles too): orientations 5–8
#:   swap width and height. JPEG, MPO, PNG and AVIF swap by rule (a PNG's ``eXIf`` chunk counts only before
#:   the image data: after ``verify()`` pillow cannot load the image to look further); WebP and TIFF take
#:   the size of the picture OpenCV decodes, which with OpenCV 5.1 (the one Ultralytics 8.4.190 installs
#:   here) is turned the same way: a WebP swaps, a TIFF keeps pillow's size (pillow turns a TIFF's size by
#:   its orientation itself, as OpenCV turns its pixels).
#: * ``"jpeg-6-8"`` (8.4.173 and earlier, YOLOv5): only a file pillow reads as ``JPEG`` (not ``MPO``), only
#:   orientations 6 and 8 (a TIFF keeps pillow's turned size here too).
ExifRule = Literal["swap-5-8", "jpeg-6-8"]
EXIF_RULES: tuple[ExifRule, ...] = ("swap-5-8", "jpeg-6-8")

# COCO's 80 training classes → the 91 category ids of the COCO files (Ultralytics' coco80_to_coco91_class).
COCO80_TO_91 = [
    *range(1, 12), *range(13, 26), 27, 28, *range(31, 45), *range(46, 66), 67, 70, *range(72, 83), *range(84, 91)
]  # fmt: skip


@dataclass
class YoloDataset:
    """One split of a YOLO dataset: sorted image paths, class names and the labels as a pixel BoxTable.

    ``files``: the image paths as strings (each ``str`` of its :class:`~pathlib.Path`); :attr:`images`: the
    same as paths, made when first asked for (the readers work on the strings: a dataset of 50k images would
    spend a third of a second making paths it does not need)."""

    yaml_path: Path | None
    root: Path
    split: str
    names: list[str]
    files: list[str]
    is_coco: bool = False
    warnings: list[str] = field(default_factory=list)
    duplicates_dropped: int = 0
    #: images left out as Ultralytics leaves out a corrupt image (:mod:`deteval.io.yolo_images`), with their
    #: labels and predictions
    dropped_images: list[Path] = field(default_factory=list)
    _norm: BoxTable | None = None
    _sizes: dict[int, tuple[int, int]] = field(default_factory=dict)
    _labels: BoxTable | None = None
    exif: ExifRule = "swap-5-8"
    _headers: dict[int, tuple[str, int, int, int | None]] = field(default_factory=dict)
    #: every image's (width, height) as :meth:`sizes_of` found them (NaN: not read yet)
    _size_table: np.ndarray | None = None
    #: (the files list, its paths) and (the files list, its stems), as :attr:`images` and :attr:`stems` made
    #: them: made again for another list of files
    _paths: tuple[list[str], list[Path]] | None = field(default=None, repr=False, compare=False)
    _stems: tuple[list[str], list[str]] | None = field(default=None, repr=False, compare=False)
    #: the image files their folder's listing gave as regular files, not links (their headers are read
    #: without an ``fstat``: :func:`~deteval.io.guards.read_listed`)
    listed_regular: frozenset[str] | set[str] = field(default_factory=frozenset, repr=False, compare=False)
    #: a pose split's label keypoints (N × K × 3 normalized, ``x y v``; :mod:`deteval.io.yolo_pose`)
    label_keypoints: np.ndarray | None = None

    @property
    def images(self) -> list[Path]:
        """The sorted image paths (``Path`` of each of :attr:`files`)."""
        made = self._paths
        if made is None or made[0] is not self.files:
            made = self._paths = (self.files, [Path(f) for f in self.files])
        return made[1]

    @property
    def n_images(self) -> int:
        return len(self.files)

    def image_size(self, i: int) -> tuple[int, int]:
        """(width, height) of image ``i`` as Ultralytics sees it (EXIF orientation applied), read once."""
        if i not in self._sizes:
            if i not in self._headers:
                f = self.files[i]
                self._headers[i] = image_header(f, listed=f in self.listed_regular)
            self._sizes[i] = oriented_size(*self._headers[i], self.exif)
        return self._sizes[i]

    def with_exif(self, rule: ExifRule) -> YoloDataset:
        """The same split with image sizes turned by another EXIF rule (headers read once for both)."""
        if rule == self.exif:
            return self
        return replace(
            self, exif=rule, _sizes={}, _labels=None, _size_table=None, warnings=list(self.warnings)
        )

    def sizes_of(self, img: np.ndarray) -> np.ndarray:
        """Per box, its image's (width, height), as an N×2 float array."""
        if self._size_table is None:
            self._size_table = np.full((self.n_images, 2), np.nan)
        table = self._size_table
        wh = table[img]
        unread = np.isnan(wh[:, 0])
        if not unread.any():
            return wh.reshape(-1, 2)
        # (the images without a size, ascending, each header read once by image_size: a mark per image,
        # not a sort of the boxes' image column)
        mark = np.zeros(self.n_images, dtype=bool)
        mark[img[unread]] = True
        todo = np.flatnonzero(mark)
        if len(todo):
            sizes = [self.image_size(i) for i in todo.tolist()]
            table[todo] = np.array(sizes, dtype=np.float64).reshape(-1, 2)
        return table[img].reshape(-1, 2)

    @property
    def labels(self) -> BoxTable:
        """The labels in pixels (xyxy float64); polygons in pixels too."""
        if self._labels is None:
            assert self._norm is not None
            self._labels = to_pixels(self._norm, self)
        return self._labels

    def labelled_images(self) -> np.ndarray:
        """The indices of the images with at least one label, ascending."""
        if self._norm is None:
            return np.zeros(0, dtype=np.int64)
        mark = np.zeros(self.n_images, dtype=bool)
        mark[self._norm.img] = True
        return np.flatnonzero(mark)

    def known_headers(self, first: int, headers: Sequence[tuple[str, int, int, int | None] | None]) -> None:
        """Take the image headers (:func:`~deteval.io.guards.image_header` of each file) read elsewhere: those
        of the images ``first``, ``first + 1``, … (None: not read), for the images whose header is not read
        yet."""
        have = self._headers
        for i, header in enumerate(headers, first):
            if header is not None and i not in have:
                have[i] = header

    @property
    def stems(self) -> list[str]:
        """Each image's stem (its file name without the final suffix), made once per list of files."""
        made = self._stems
        if made is None or made[0] is not self.files:
            made = self._stems = (self.files, [name_stem(file_name(f)) for f in self.files])
        return made[1]

    def stem_index(self) -> dict[str, int]:
        """Image stem → index; a stem shared by two images maps to −1 (ambiguous)."""
        out: dict[str, int] = {}
        for i, stem in enumerate(self.stems):
            out[stem] = -1 if stem in out else i
        return out


def file_name(path: str) -> str:
    """``Path(path).name`` of a path string as :class:`~pathlib.Path` writes it (no trailing separator)."""
    return path.rpartition(os.sep)[2]


def name_stem(name: str) -> str:
    """``Path(name).stem`` of a file name, without making a Path (the final suffix dropped unless the dot
    leads the name or ends it)."""
    i = name.rfind(".")
    return name[:i] if 0 < i < len(name) - 1 else name


def txt_entries(folder: Path) -> tuple[list[str], list[str], list[bool]]:
    """``sorted(folder.glob("*.txt"))``: the entries of ``folder`` whose name ends in ``.txt`` (any kind of
    entry, hidden ones too, as pathlib's glob lists them), in name order (the order of paths in one folder),
    read with one ``scandir`` instead of a Path per entry compared part by part; each as ``str(folder /
    name)`` made without a Path, with its name and whether it is a regular file, not a link (its type in the
    listing: no system call)."""
    with os.scandir(folder) as it:
        regular = {e.name: e.is_file(follow_symlinks=False) for e in it if e.name.endswith(".txt")}
    names = sorted(regular)  # (the names of one folder are distinct: their order is the entries' order)
    prefix = child_path(folder, "")
    return [prefix + n for n in names], names, [regular[n] for n in names]


def child_path(folder: Path, name: str) -> str:
    """``str(folder / name)`` for a plain file ``name`` (no separator), without making the Path."""
    base = str(folder)
    if base == ".":
        return name
    return base + name if base.endswith(os.sep) else base + os.sep + name


def oriented_size(
    fmt: str, width: int, height: int, orientation: int | None, rule: ExifRule
) -> tuple[int, int]:
    """(width, height) of an image as Ultralytics' ``exif_size`` gives it under ``rule`` (:data:`ExifRule`)."""
    if rule == "jpeg-6-8":
        swap = fmt == "JPEG" and orientation in (6, 8)
    else:
        swap = orientation in (5, 6, 7, 8) and fmt != "TIFF"  # (pillow's TIFF size is turned already)
    return (height, width) if swap else (width, height)


@dataclass
class YoloPredictions(BoxTable):
    """Predictions in pixels; ``normalized``: the txt rows they were scaled from (None for a JSON file, whose
    boxes are pixels already), so that another EXIF rule can scale them again."""

    normalized: BoxTable | None = None


def for_exif_rule(ds: YoloDataset, preds: BoxTable, rule: str) -> tuple[YoloDataset, BoxTable]:
    """The split and its predictions with image sizes turned by ``rule`` (an Ultralytics version's
    :data:`ExifRule`)."""
    if rule == ds.exif:
        return ds, preds
    if rule not in EXIF_RULES:
        raise ValueError(f"unknown EXIF rule {rule!r}")
    other = ds.with_exif(rule)
    normalized = getattr(preds, "normalized", None)
    return other, preds if normalized is None else _scaled(normalized, other)


def to_pixels(norm: BoxTable, ds: YoloDataset) -> BoxTable:
    """Normalized ``xc yc w h`` (stored in ``xyxy``'s columns) → pixel xyxy; polygons scaled likewise."""
    wh = ds.sizes_of(norm.img)
    c, s = norm.xyxy[:, :2], norm.xyxy[:, 2:]
    # (c − s/2)·wh and (c + s/2)·wh, written in place: the same operations, without four temporaries
    xyxy = np.empty((len(norm.img), 4), dtype=np.float64)
    half = s / 2
    lo, hi = xyxy[:, :2], xyxy[:, 2:]
    np.subtract(c, half, out=lo)
    np.add(c, half, out=hi)
    lo *= wh
    hi *= wh
    polys = None
    if norm.polygons is not None:
        polys = [
            None if p is None else (p.reshape(-1, 2) * wh[k]).reshape(-1) for k, p in enumerate(norm.polygons)
        ]
    return BoxTable(norm.img, norm.cls, xyxy, norm.conf, polys)


def _walk_names(top: Path, regular: set[str] | None = None) -> list[str]:
    """The paths ``glob(top/**/*.*, recursive=True)`` lists (hidden names skipped, folders reached through
    symbolic links followed), each folder read once: two links to one folder, or a link to its own parent,
    would make glob run until the path is too long. ``regular``: the paths listed as regular files (not
    links) are added to it."""
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    stack = [str(top)]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            if e.name.startswith("."):
                continue
            if "." in e.name:
                found.append(e.path)
                if regular is not None and e.is_file(follow_symlinks=False):
                    regular.add(e.path)
                    continue
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                stack.append(e.path)
    return found


def list_image_files(sources: list[Path], where: str, regular: set[str] | None = None) -> list[str]:
    """Image files of folders (recursive) and ``.txt`` lists, filtered by extension and sorted as strings,
    each ``str`` of its path: the paths found in folders are written as :class:`~pathlib.Path` writes them
    already (a resolved folder and names), those read from a list are
    made Paths and written back (``a//b/./c.jpg`` is ``a/b/c.jpg``). ``regular``: the images found in
    folders as regular files (not links) are added to it."""
    found: list[str] = []
    listed: set[str] = set()
    walked: set[str] = set()
    for p in sources:
        if p.is_dir():
            found += _walk_names(p, walked)
        elif os.path.lexists(p):
            rows = read_text(regular_file(p, "image list"), "image list").strip().splitlines()
            parent = str(p.parent) + os.sep
            for n, x in enumerate(rows, 1):
                x = x.replace("./", parent, 1) if x.startswith("./") else x
                # Ultralytics would skip a listed image it cannot open (and leave it out of the counts);
                # deteval says which one instead.
                if x.rpartition(".")[-1].lower() in IMG_FORMATS and not os.path.isfile(x):
                    raise InputFormatError(
                        f"the listed image {x!r} does not exist", file=p, record=f"line {n}"
                    )
                found.append(x)
                listed.add(x.replace("/", os.sep))
        else:
            raise InputFormatError(f"{where}: no such folder or image list", file=p)
    images = sorted(x.replace("/", os.sep) for x in found if x.rpartition(".")[-1].lower() in IMG_FORMATS)
    if not images:
        raise InputFormatError(f"no images found for {where}", file=", ".join(map(str, sources)))
    if regular is not None:
        regular.update(walked if os.sep == "/" else (x.replace("/", os.sep) for x in walked))
    if listed:
        return [str(Path(x)) if x in listed else x for x in images]
    return images


def label_path(image: Path) -> Path:
    """Ultralytics' rule: the last ``/images/`` becomes ``/labels/``, the extension ``.txt``."""
    return Path(_label_names([str(image)])[0])


def _label_names(images: list[str]) -> list[str]:
    """:func:`label_path` of each image path string, as strings."""
    sa, sb = f"{os.sep}images{os.sep}", f"{os.sep}labels{os.sep}"
    return [sb.join(image.rsplit(sa, 1)).rsplit(".", 1)[0] + ".txt" for image in images]


def load_yolo_dataset(
    data_yaml: str | os.PathLike[str],
    split: str = "val",
    *,
    duplicates: Duplicates = "error",
    kpt_shape: tuple[int, int] | None = None,
    check_images: str | None = None,
    listed: Callable[[YoloDataset], None] | None = None,
) -> YoloDataset:
    """Read one split of a YOLO dataset (see the module docstring for the rules). ``listed``: called with
    the split as soon as its images are listed, before any image or label is read (its files, names, and the
    files listed as regular ones) (a caller may start
    work beside the reading). ``kpt_shape``: pose label rows (:func:`deteval.io.yolo_pose.load_pose_dataset`),
    their keypoints kept in :attr:`YoloDataset.label_keypoints`. ``check_images``: an
    Ultralytics era (a key of :data:`deteval.io.yolo_images.IMAGE_FORMATS`) whose image check every image
    passes first; one that fails is left out with its labels (and later its predictions), with a warning
    (:func:`drop_corrupt_images`). None: images are read only where a size is needed, and an unreadable one
    is an error."""
    yaml_path = Path(data_yaml)
    file = str(yaml_path)
    if yaml_path.is_dir():
        raise InputFormatError("give the data.yaml file, not its folder", file=file)
    data = read_data_yaml(yaml_path)
    if data.get("kpt_shape") is not None and kpt_shape is None:
        raise ValidationError(
            "a pose dataset (kpt_shape): score it with deteval yolo --task pose (deteval.io.yolo_pose)",
            file=file,
        )
    if data.get("val") is None and data.get("validation") is not None:
        data["val"] = data["validation"]
    names = class_names(data.get("names"), data.get("nc"), file)
    if not data.get(split):
        raise ValidationError(f"no '{split}:' split in the dataset", file=file)
    root, found_from = resolve_root(data, yaml_path)
    sources = split_paths(data[split], root, split, file)
    regular: set[str] = set()
    images = list_image_files(sources, f"the '{split}' split ({found_from})", regular)
    # Ultralytics' test, on the resolved split path: the COCO-91 category ids of predictions.json apply.
    resolved = str(sources[0])
    is_coco = (
        isinstance(data[split], str)
        and "coco" in resolved
        and resolved.endswith((f"{os.sep}val2017.txt", f"{os.sep}test-dev2017.txt"))
    )
    ds = YoloDataset(yaml_path, root, split, names, images, is_coco=is_coco, listed_regular=regular)
    if listed is not None:
        listed(ds)
    if check_images is not None:
        drop_corrupt_images(ds, check_images)
    ds._norm = _read_labels(ds, duplicates, kpt_shape)
    return ds


def drop_corrupt_images(ds: YoloDataset, era: str) -> None:
    """Leave out of ``ds`` (before its labels are read) every image that fails Ultralytics' image check of
    ``era`` (:func:`deteval.io.yolo_images.image_check`), each with the warning Ultralytics gives
    (``ignoring corrupt image/label``) in ``ds.warnings`` and as a :class:`DetevalWarning`; a JPEG Ultralytics
    would restore and write back is kept, with a warning. The headers read are kept for the sizes."""
    kept: list[str] = []
    headers: dict[int, tuple[str, int, int, int | None]] = {}
    regular = ds.listed_regular
    for p in ds.files:
        header, fault, note = image_check(p, era, listed=p in regular)
        if fault is not None:
            ds.dropped_images.append(Path(p))
            split_warning(
                ds,
                f"{p}: ignoring corrupt image/label: {fault} (as Ultralytics does: the image, its labels and "
                "its predictions are left out)",
            )
            continue
        if note is not None:
            split_warning(ds, f"{p}: {note}; deteval scores it as it is")
        if header is not None:
            headers[len(kept)] = header
        kept.append(p)
    if not kept:
        raise InputFormatError(
            f"no image of the '{ds.split}' split passes Ultralytics' image check", file=ds.yaml_path
        )
    ds.files = kept
    ds._headers = headers


def split_warning(ds: YoloDataset, msg: str, stacklevel: int = 4) -> None:
    """``msg`` kept in ``ds.warnings`` and given as a :class:`DetevalWarning` (``stacklevel`` as
    :func:`warnings.warn` counts it from here)."""
    ds.warnings.append(msg)
    warnings.warn(msg, DetevalWarning, stacklevel=stacklevel)


def _read_labels(ds: YoloDataset, duplicates: Duplicates, kpt_shape: tuple[int, int] | None) -> BoxTable:
    def dropped(path: Path, count: int) -> None:
        ds.duplicates_dropped += count
        split_warning(ds, f"{path}: {count} duplicate labels removed (as Ultralytics does)", 6)

    out = parse_label_files(
        _label_names(ds.files),
        len(ds.names),
        duplicates=duplicates,
        missing_ok=True,
        on_dropped=dropped,
        kpt_shape=kpt_shape,
    )
    ds.label_keypoints = out.keypoints
    if not len(out.file):
        return BoxTable.empty()
    return BoxTable(out.file, out.cls, out.xywh, np.zeros(len(out.file)), out.polygons)


# ------------------------------------------------------------------------------------------- predictions
def load_yolo_predictions(
    source: str | os.PathLike[str],
    ds: YoloDataset,
    *,
    rows: PredictionRows | None = None,
    checked: BoxTable | None = None,
) -> BoxTable:
    """Predictions (a folder of txt files or a JSON list) as a pixel BoxTable aligned with ``ds``'s images.
    ``rows``: the folder's files and rows already read (:func:`read_prediction_rows` of ``source``, e.g. by
    another process while ``ds`` was read); checked here as if read here. ``checked``: the folder's rows
    read and checked already (:func:`normalized_predictions` of ``source`` and ``ds``), only scaled here."""
    if checked is not None:
        return _scaled(checked, ds)
    p = Path(source)
    if p.is_dir():
        return _scaled(normalized_predictions(p, ds, rows), ds)
    if os.path.lexists(p):
        return _json_predictions(p, ds)  # (read through the guards: a pipe or device is refused)
    raise InputFormatError("predictions not found (a folder of txt files or a JSON file)", file=p)


@dataclass
class PredictionRows:
    """A prediction folder's txt files (:func:`prediction_entries`) and their rows (:func:`~deteval.io.
    text_rows.read_rows`), read without the dataset; the files as strings (they come from another process,
    and a string unpickles without being parsed again as a Path is); ``stems``: each file's stem (the image it
    belongs to), made where the files were read."""

    files: list[str]
    rows: TextRows
    stems: list[str]


def prediction_entries(folder: Path) -> tuple[list[str], list[str], list[bool]]:
    """The txt files of a prediction folder, in name order (each ``str`` of its path): its own, or else those
    of its ``labels/`` (``runs/detect/predict/`` given); none is an error. With each file's stem (the image it
    holds the predictions of) and whether it is listed as a regular file, not a link (:func:`txt_entries`)."""
    files, names, regular = txt_entries(folder)
    if not files and (folder / "labels").is_dir():  # runs/detect/predict/ given: its txt files are in labels/
        folder = folder / "labels"
        files, names, regular = txt_entries(folder)
    if not files:
        raise InputFormatError("no .txt prediction files in the folder", file=folder)
    # (the name of a .txt file less its suffix, as name_stem cuts it: ".txt" alone is its own stem)
    return files, [n[:-4] if len(n) > 4 else n for n in names], regular


def read_prediction_rows(source: str | os.PathLike[str]) -> PredictionRows | None:
    """The files and rows of a prediction folder, read before (or beside) the dataset; None where the
    reading is better left to :func:`load_yolo_predictions` (not a folder, no file, a file that cannot be
    read: the errors are raised there, in their order)."""
    p = Path(source)
    if not p.is_dir():
        return None
    try:
        names, stems, regular = prediction_entries(p)
    except DetevalError:
        return None
    rows = read_rows(names, "label file", listed=regular)
    return None if rows.file_errors else PredictionRows(names, rows, stems)


def normalized_predictions(folder: Path, ds: YoloDataset, pre: PredictionRows | None = None) -> BoxTable:
    """The rows of a folder of prediction files (``pre``: read already, :func:`read_prediction_rows`) checked
    and placed on ``ds``'s images, still normalized (``xc yc w h`` in ``xyxy``'s columns): what
    :func:`load_yolo_predictions` scales to pixels."""
    if pre is None:
        files, names, regular = prediction_entries(folder)
    else:
        files, names, regular = pre.files, pre.stems, None
    files, regular, image, unknown, skipped = prediction_images(files, names, regular, ds)
    if skipped:
        split_warning(ds, f"{skipped} prediction file(s) of images left out as corrupt: not read")
    rows = (
        read_rows(files, "label file", listed=regular)
        if pre is None or skipped  # (the rows read hold the files left out: read the others again)
        else replace(pre.rows, file_errors={})
    )
    out = parse_label_files(files, len(ds.names), with_conf=True, file_errors=unknown, rows=rows)
    return BoxTable(image[out.file], out.cls, out.xywh, out.conf, out.polygons)


def prediction_images(
    files: list[str], stems: list[str], regular: list[bool] | None, ds: YoloDataset
) -> tuple[list[str], list[bool] | None, np.ndarray, dict[int, DetevalError], int]:
    """The prediction files of :func:`prediction_entries` (their ``stems`` and whether each is listed as
    ``regular``) placed on ``ds``'s images: the files kept (those of images left out as corrupt are not read;
    ``regular`` None then), their ``regular`` flags, each one's image index, the error of each whose stem
    names no image or two (raised before its rows, as a file-by-file reader), and how many were left out."""
    index = ds.stem_index()
    dropped = {name_stem(p.name) for p in ds.dropped_images}
    image = np.zeros(len(files), dtype=np.int64)
    unknown: dict[int, DetevalError] = {}
    skip = np.zeros(len(files), dtype=bool)
    for k, (f, stem) in enumerate(zip(files, stems)):
        i = index.get(stem)
        if i is None and stem in dropped:  # (the image was left out as corrupt: so are its predictions)
            skip[k] = True
        elif i is None:
            unknown[k] = ValidationError(f"no image with the stem {stem!r} in the '{ds.split}' split", file=f)
        elif i < 0:
            unknown[k] = ValidationError(f"two images of the split share the stem {stem!r}", file=f)
        else:
            image[k] = i
    if not skip.any():
        return files, regular, image, unknown, 0
    kept = [f for f, s in zip(files, skip.tolist()) if not s]
    unknown = {int(k) - int(skip[:k].sum()): e for k, e in unknown.items()}
    return kept, None, image[~skip], unknown, int(skip.sum())


def _scaled(normalized: BoxTable, ds: YoloDataset) -> YoloPredictions:
    t = to_pixels(normalized, ds)
    return YoloPredictions(t.img, t.cls, t.xyxy, t.conf, t.polygons, t.masks, normalized=normalized)


class JsonTargets:
    """Where each record of a predictions JSON list goes, as ``yolo val save_json`` writes them: the image by
    ``file_name`` (its name in the split) or ``image_id`` (the stem, an int when numeric, as Ultralytics writes
    it), the class by ``category_id`` (class + 1, or the COCO-91 id for a COCO dataset). The detect and the
    oriented-box readers (:mod:`deteval.io.yolo_obb`) share it."""

    def __init__(self, ds: YoloDataset, path: Path) -> None:
        self.ds, self.path = ds, path
        self.stems = ds.stem_index()
        # Ultralytics writes int(stem) for numeric stems ("0001" → 1): index them by their int value too.
        self.numeric: dict[int, int] = {}
        for stem, idx in self.stems.items():
            if stem.isnumeric():
                self.numeric[int(stem)] = -1 if int(stem) in self.numeric else idx
        self.names: dict[str, int] = {}
        for idx, f in enumerate(ds.files):
            name = file_name(f)
            self.names[name] = -1 if name in self.names else idx  # a name in two folders: ambiguous
        self.to_cls = {cid: k for k, cid in enumerate(COCO80_TO_91)} if ds.is_coco else None
        # Images left out as corrupt (the Ultralytics profiles): by name, stem and numeric stem.
        stems = {name_stem(p.name) for p in ds.dropped_images}
        self.gone = (
            {p.name for p in ds.dropped_images} | stems | {str(int(x)) for x in stems if x.isnumeric()}
        )

    def records(self) -> list[Any]:
        """The file's records, read through the shared JSON guards (:func:`deteval.io.guards.read_json`)."""
        records = read_json(self.path, "predictions file")
        if not isinstance(records, list):
            raise InputFormatError("expected a JSON list of detections", file=self.path)
        return records

    def locate(self, r: Any, k: int, keys: Sequence[str]) -> tuple[int, int]:
        """(image index, class) of record ``k``, after checking it is an object holding ``keys``; image index
        −1 for a record of an image left out as corrupt (``ds.dropped_images``), which the caller skips."""
        path, ds = self.path, self.ds
        if not isinstance(r, dict):
            raise InputFormatError("a detection must be a JSON object", file=path, record=k)
        for key in keys:
            if key not in r:
                raise InputFormatError(f"missing '{key}'", file=path, record=k)
        fname = r.get("file_name")
        if isinstance(fname, str) and self.names.get(Path(fname).name, -1) >= 0:
            img = self.names[Path(fname).name]
        else:
            iid = r["image_id"]
            i: int | None = (
                self.numeric.get(iid)
                if isinstance(iid, int) and not isinstance(iid, bool)
                else self.stems.get(str(iid))
            )
            if (
                i is None
                and self.gone
                and ((isinstance(fname, str) and Path(fname).name in self.gone) or str(iid) in self.gone)
            ):
                return -1, -1
            if i is None:
                raise ValidationError(
                    f"image_id {r['image_id']!r} is not the stem of an image of the '{ds.split}' split",
                    file=path,
                    record=k,
                )
            if i < 0:
                raise ValidationError(f"two images share the stem {r['image_id']!r}", file=path, record=k)
            img = i
        cid = r["category_id"]
        if isinstance(cid, bool) or not isinstance(cid, int):
            raise ValidationError(f"category_id {cid!r} is not an integer", file=path, record=k)
        c = self.to_cls.get(cid, -1) if self.to_cls is not None else cid - 1
        if not 0 <= c < len(ds.names):
            rule = (
                "a COCO-91 id of the 80 classes"
                if self.to_cls is not None
                else f"class + 1 in 1..{len(ds.names)}"
            )
            raise ValidationError(f"category_id {cid} is not {rule}", file=path, record=k)
        return img, c

    def score(self, r: dict[str, Any], k: int) -> float:
        """Record ``k``'s ``score``, a finite number."""
        s = r["score"]
        if not _is_num(s) or not np.isfinite(s):
            raise ValidationError("score must be a finite number", file=self.path, record=k)
        return float(s)


def _json_predictions(path: Path, ds: YoloDataset) -> BoxTable:
    targets = JsonTargets(ds, path)
    records = targets.records()
    n = len(records)
    img, cls = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    xyxy, conf = np.zeros((n, 4)), np.zeros(n)
    skip = np.zeros(n, dtype=bool)  # (records of images left out as corrupt)
    for k, r in enumerate(records):
        img[k], cls[k] = targets.locate(r, k, ("image_id", "category_id", "bbox", "score"))
        if img[k] < 0:
            skip[k] = True
            continue
        b = r["bbox"]
        if not (isinstance(b, list) and len(b) == 4 and all(_is_num(x) for x in b)):
            raise ValidationError("bbox must be [x, y, w, h] numbers", file=path, record=k)
        s = targets.score(r, k)
        x, y, w, h = (float(v) for v in b)
        if not np.isfinite([x, y, w, h]).all() or w < 0 or h < 0:
            raise ValidationError("bbox has a negative size or a non-finite value", file=path, record=k)
        if any(beyond_exact(v) for v in b):  # (as the COCO loader: exact pixels, no overflowing areas)
            raise ValidationError(f"bbox {b!r} is beyond \u00b12**53", file=path, record=k)
        xyxy[k] = [x, y, x + w, y + h]
        conf[k] = s
    if skip.any():
        split_warning(ds, f"{path}: {int(skip.sum())} prediction(s) of images left out as corrupt: not read")
        keep = ~skip
        records = [r for r, k in zip(records, keep.tolist()) if k]
        img, cls, xyxy, conf = img[keep], cls[keep], xyxy[keep], conf[keep]
    return BoxTable(img, cls, xyxy, conf, masks=_json_masks(records, img, ds, path))


def _json_masks(records: list[Any], img: np.ndarray, ds: YoloDataset, path: Path) -> list[Any] | None:
    """Each record's ``segmentation`` (``yolo val save_json``'s RLE of a segment model, or COCO polygons),
    checked as the COCO results reader checks them (structure, runs, the image's size), or None if no record
    has one. A file where only some records have one is refused: mask AP needs every detection's mask."""

    has = [isinstance(r, dict) and "segmentation" in r for r in records]
    if not any(has):
        return None
    if not all(has):
        k = has.index(False)
        raise ValidationError(
            "no 'segmentation' here, but other records have one (mask AP needs one per detection)",
            file=path,
            record=k,
        )
    segs = [r["segmentation"] for r in records]
    for k, sg in enumerate(segs):
        check_segmentation(sg, str(path), k)
        w, h = ds.image_size(int(img[k]))
        check_rle_size(sg, np.array([h, w]), str(path), k)
    check_rles(segs, str(path), list(range(len(segs))))
    return segs


def _is_num(x: Any) -> bool:
    """A JSON number a float can hold (not true/false; not an integer beyond ~1.8e308, which float() and
    numpy cannot convert)."""
    return isinstance(x, float) or (isinstance(x, int) and not isinstance(x, bool) and abs(x) <= _FLOAT_MAX)


_FLOAT_MAX = float(np.finfo(np.float64).max)
