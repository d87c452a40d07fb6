"""YOLO ↔ COCO conversion (in memory and for ``deteval convert``).

YOLO → COCO: images get their stem as id when every stem is numeric (COCO's own convention), else ids 1..N in
Ultralytics' sorted order (``file_name`` relative to the dataset root,
``width``/``height`` from the header, EXIF orientation applied); categories are ``class + 1`` (the ids
``yolo val save_json`` writes), or the COCO-91 ids for a COCO dataset; annotations get ids 1..M, ``bbox`` =
pixel ``[x, y, w, h]`` computed in float64 from the normalized label, ``area`` = ``w·h``, ``iscrowd`` 0;
polygon rows also give ``segmentation``. Predictions become a COCO results list in the same ids, each record
also carrying the image's ``file_name`` (pycocotools ignores it; deteval's YOLO reader matches on it first).

COCO → YOLO: :func:`place_images` links (or copies) the pictures into ``images/``; one ``labels/<stem>.txt`` per image with ``cls xc yc w h`` written
with ``%.17g`` (round-trips every float64 exactly; Ultralytics itself writes ``%g``, 6 significant digits,
so its own files lose digits), and a ``data.yaml`` listing the images. Crowd annotations have no YOLO form:
they are refused, not dropped.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from deteval.errors import ConfigError, ValidationError
from deteval.io.coco import load_coco_gt, read_json
from deteval.io.coco.tables import CocoGroundTruth, CocoResults
from deteval.io.guards import contained_path, make_folder, write_file
from deteval.io.yolo import COCO80_TO_91, YoloDataset
from deteval.tables.boxes import BoxTable


def category_ids(ds: YoloDataset) -> list[int]:
    """COCO category id of each class: ``class + 1``, or COCO-91 ids for a COCO dataset."""
    return list(COCO80_TO_91[: len(ds.names)]) if ds.is_coco else list(range(1, len(ds.names) + 1))


def image_ids(ds: YoloDataset) -> list[int]:
    """COCO image ids: the stems as integers when every stem is numeric and distinct (``000000000139.jpg`` is
    139, as in COCO's files and ``yolo val``'s predictions.json), else 1..N in the sorted order."""
    stems = ds.stems
    if all(s.isnumeric() for s in stems):
        ids = [int(s) for s in stems]
        if len(set(ids)) == len(ids):
            return ids
    return list(range(1, len(stems) + 1))


def _file_name(ds: YoloDataset, p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ds.root))
    except ValueError:
        return str(p)


def _polygon_rle(ds: YoloDataset, img: int, poly: np.ndarray) -> dict[str, Any]:
    """A pixel polygon rasterized by pycocotools at the image's size, as a JSON-ready RLE."""
    mask_utils = _mask_utils()
    w, h = ds.image_size(img)
    rle = mask_utils.merge(mask_utils.frPyObjects([[float(v) for v in poly]], h, w))
    return {"size": [int(x) for x in rle["size"]], "counts": rle["counts"].decode("ascii")}


def _mask_utils() -> Any:
    # pycocotools ships no type stubs; imported by name so that the untyped module stays out of mypy's view.
    return importlib.import_module("pycocotools.mask")


def _need_polygons(table: BoxTable, what: str) -> None:
    if len(table) and (table.polygons is None or any(p is None for p in table.polygons)):
        raise ValidationError(f"mask AP (segm) needs polygon rows, but {what} has box rows")


def dataset_to_coco(ds: YoloDataset, *, all_sizes: bool = True, segm: bool = False) -> dict[str, Any]:
    """The split as a COCO ground-truth dict (see the module docstring for ids and fields).

    ``segm=True``: every label must be a polygon, and ``area`` is its mask area (pycocotools' rasterization
    at the image size), as in COCO's own files; otherwise ``area`` is the box area.
    """
    cats = category_ids(ds)
    labels = ds.labels
    if segm:
        _need_polygons(labels, f"the '{ds.split}' labels")
    ids = image_ids(ds)
    images = []
    for i, p in enumerate(ds.images):
        entry: dict[str, Any] = {"id": ids[i], "file_name": _file_name(ds, p)}
        if all_sizes or i in ds._sizes:
            entry["width"], entry["height"] = ds.image_size(i)
        images.append(entry)
    anns = []
    xywh = np.concatenate([labels.xyxy[:, :2], labels.xyxy[:, 2:] - labels.xyxy[:, :2]], 1)
    for k in range(len(labels)):
        b = [float(v) for v in xywh[k]]
        ann: dict[str, Any] = {
            "id": k + 1,
            "image_id": ids[int(labels.img[k])],
            "category_id": cats[int(labels.cls[k])],
            "bbox": b,
            "area": b[2] * b[3],
            "iscrowd": 0,
        }
        poly = labels.polygons[k] if labels.polygons is not None else None
        if poly is not None:
            ann["segmentation"] = [[float(v) for v in poly]]
            if segm:
                ann["area"] = float(
                    _mask_utils().area(_rle_bytes(_polygon_rle(ds, int(labels.img[k]), poly)))
                )
        anns.append(ann)
    return {
        "images": images,
        "annotations": anns,
        "categories": [{"id": cid, "name": n} for cid, n in zip(cats, ds.names)],
    }


def coco_tables(ds: YoloDataset, preds: BoxTable) -> tuple[CocoGroundTruth, CocoResults]:
    """The box split and its predictions as deteval's columnar COCO tables, built from the arrays.

    The same tables, field by field, as ``load_coco_gt(dataset_to_coco(ds, all_sizes=False))`` and
    ``load_coco_results(predictions_to_coco(ds, preds), gt)`` (pycocotools' order: images and categories by
    id; annotation ids 1..M; ``bbox`` = ``[x1, y1, x2 − x1, y2 − y1]``, ``area`` = ``w·h`` in float64;
    image sizes where read, else −1), without the records and their parsing; ``image_records`` (the file
    names, which only the image drawings read) is left out.
    """
    cats = np.asarray(category_ids(ds), dtype=np.int64)
    ids_file = np.asarray(image_ids(ds), dtype=np.int64)
    order = np.argsort(ids_file, kind="stable")
    place = np.empty_like(order)
    place[order] = np.arange(order.shape[0])  # an image's index among the ids in ascending order
    hw = np.full((ids_file.shape[0], 2), -1, dtype=np.int64)
    if ds._sizes:
        read = np.fromiter(ds._sizes.keys(), dtype=np.int64, count=len(ds._sizes))
        hw[read] = np.array(list(ds._sizes.values()), dtype=np.int64)[:, ::-1]
    corder = np.argsort(cats, kind="stable")
    cat_place = np.empty_like(corder)
    cat_place[corder] = np.arange(corder.shape[0])
    labels = ds.labels
    lb = np.concatenate([labels.xyxy[:, :2], labels.xyxy[:, 2:] - labels.xyxy[:, :2]], 1).astype(np.float64)
    n = len(labels)
    gt = CocoGroundTruth(
        image_ids=ids_file[order],
        image_hw=hw[order],
        cat_ids=cats[corder],
        cat_names=[ds.names[i] for i in corder.tolist()],
        ann_id=np.arange(1, n + 1, dtype=np.int64),
        img=place[labels.img.astype(np.int64)],
        cat=cat_place[labels.cls.astype(np.int64)],
        bbox=lb,
        area=lb[:, 2] * lb[:, 3],
        iscrowd=np.zeros(n, dtype=bool),
        ignore=np.zeros(n, dtype=bool),
        num_keypoints=np.full(n, -1, dtype=np.int64),
        category_records=[{"id": int(c), "name": name} for c, name in zip(cats.tolist(), ds.names)],
        image_file_order=place,
    )
    xyxy = np.asarray(preds.xyxy, dtype=np.float64)
    db = np.concatenate([xyxy[:, :2], xyxy[:, 2:] - xyxy[:, :2]], 1)
    res = CocoResults(
        img=place[preds.img.astype(np.int64)],
        cat=cat_place[preds.cls.astype(np.int64)],
        score=np.asarray(preds.conf, dtype=np.float64),
        bbox=db,
        area=db[:, 2] * db[:, 3],
    )
    return gt, res


def _rle_bytes(rle: dict[str, Any]) -> dict[str, Any]:
    return {"size": rle["size"], "counts": rle["counts"].encode("ascii")}


def predictions_to_coco(ds: YoloDataset, preds: BoxTable, *, segm: bool = False) -> list[dict[str, Any]]:
    """The predictions as a COCO results list in the ids of :func:`dataset_to_coco`.

    ``segm=True``: each polygon becomes an RLE ``segmentation`` (no ``bbox``, so pycocotools takes the mask's
    area and extent, as for any COCO segm result); masks read from a predictions JSON are kept as given, with
    their ``bbox``, as pycocotools' loadRes reads that file (``area`` = box area).
    """
    cats = category_ids(ds)
    ids = image_ids(ds)
    # polygons are rasterized; a JSON's own masks are kept with its boxes (what pycocotools' loadRes reads)
    rasterize = segm and preds.masks is None
    if rasterize:
        _need_polygons(preds, "the predictions")
    out = []
    for k in range(len(preds)):
        i = int(preds.img[k])
        rec = {"image_id": ids[i], "file_name": ds.images[i].name, "category_id": cats[int(preds.cls[k])]}
        if rasterize:
            rec["segmentation"] = _polygon_rle(ds, i, preds.polygons[k])  # type: ignore[index,arg-type]
        else:
            x1, y1, x2, y2 = (float(v) for v in preds.xyxy[k])
            rec["bbox"] = [x1, y1, x2 - x1, y2 - y1]
            if segm:
                rec["segmentation"] = preds.masks[k]  # type: ignore[index]
        rec["score"] = float(preds.conf[k])
        out.append(rec)
    return out


def coco_to_yolo(gt_json: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> Path:
    """Write ``labels/<stem>.txt`` for every image of a COCO file and a ``data.yaml``; return the yaml path.

    The file is validated by deteval's COCO reader first (every error names the record). Classes are the
    categories sorted by id (class k = the k-th category). Images without annotations get an empty label
    file. Crowd annotations are refused (YOLO has no crowd flag); images need ``width``, ``height`` and a
    ``file_name``, and no two may share a stem (the label file is named after it).
    """
    file = str(gt_json)
    gt = load_coco_gt(gt_json)
    crowd = np.flatnonzero(gt.iscrowd)
    if crowd.size:
        raise ValidationError(
            "a crowd annotation has no YOLO form", file=file, record=f"annotation id {gt.ann_id[crowd[0]]}"
        )
    files: dict[Any, str] = {}
    sizes: dict[Any, tuple[float, float]] = {}
    for k, im in enumerate(read_json(gt_json)["images"]):
        if not isinstance(im.get("file_name"), str) or not im["file_name"]:
            raise ValidationError("an image needs a file_name", file=file, record=f"images[{k}]")
        size = (im.get("height"), im.get("width"))
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in size):
            raise ValidationError(
                "an image needs a positive width and height", file=file, record=f"images[{k}]"
            )
        files[im["id"]] = im["file_name"]
        sizes[im["id"]] = (float(size[0]), float(size[1]))
    stems: dict[str, Any] = {}
    for iid, name in files.items():
        stem = Path(name).stem
        if stem in stems:
            raise ValidationError(f"two images share the stem {stem!r}", file=file, record=f"image id {iid}")
        stems[stem] = iid
        if any(ch in name for ch in "\r\n\x85\u2028\u2029"):  # (val.txt holds one image per line)
            raise ValidationError(
                "a file_name with a line break cannot be listed", file=file, record=f"image id {iid}"
            )
    hw = np.array([sizes[i] for i in gt.image_ids.tolist()]).reshape(-1, 2)
    out = make_folder(out_dir, "YOLO folder")
    make_folder(out / "labels", "labels folder")
    rows: list[list[str]] = [[] for _ in range(len(gt.image_ids))]
    for k in range(len(gt)):
        h, w = hw[gt.img[k]]
        x, y, bw, bh = (float(v) for v in gt.bbox[k])
        vals = [(x + bw / 2) / w, (y + bh / 2) / h, bw / w, bh / h]
        rows[int(gt.img[k])].append(" ".join([str(int(gt.cat[k]))] + [f"{v:.17g}" for v in vals]))
    listed = []
    for i, iid in enumerate(gt.image_ids.tolist()):
        name = files[iid]
        write_file(
            out / "labels" / f"{Path(name).stem}.txt", "".join(r + "\n" for r in rows[i]), "label file"
        )
        listed.append(f"./images/{Path(name).name}")
    write_file(out / "val.txt", "".join(x + "\n" for x in listed), "image list")
    # PyYAML writes the names: any character (quotes, backslashes, line breaks) reads back as written
    text = yaml.safe_dump(
        {"val": "val.txt", "names": dict(enumerate(map(str, gt.cat_names)))},
        allow_unicode=True,
        sort_keys=False,
    )
    return write_file(out / "data.yaml", text, "dataset yaml")  # root: the yaml's folder


def place_images(
    gt_json: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    image_root: str | os.PathLike[str] | None = None,
    *,
    copy: bool = False,
) -> tuple[int, list[Path]]:
    """Put each picture of a COCO file where :func:`coco_to_yolo`'s ``val.txt`` lists it,
    ``out_dir/images/<base name>``: a symbolic link to ``image_root / file_name`` (default root: the COCO file's
    folder), or a copy with ``copy``. A picture already there is left as it is. Returns how many are in place
    and the sources that do not exist (nothing is created for them; ``images/`` only when one is placed)."""
    root = Path(gt_json).parent if image_root is None else Path(image_root)
    placed, missing = 0, []
    for im in read_json(gt_json)["images"]:
        name = im["file_name"]
        src = contained_path(root, name, gt_json)
        dest = Path(out_dir) / "images" / Path(name).name
        if dest.exists():
            placed += 1
            continue
        if not src.is_file():
            missing.append(src)
            continue
        make_folder(dest.parent, "images folder")
        try:
            if copy:
                shutil.copyfile(src, dest)
            else:
                dest.symlink_to(os.path.abspath(src))
        except OSError as exc:
            raise ConfigError(f"cannot place the image: {exc.strerror or exc}", file=dest) from None
        placed += 1
    return placed, missing
