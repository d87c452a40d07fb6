"""Random YOLO datasets written to disk (tiny PNG images, label txt files, prediction txt and JSON files)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

from deteval.tables.boxes import BoxTable


def png_header(path: Path, w: int, h: int) -> None:
    """A PNG whose IHDR declares ``w`` x ``h`` (no pixel data: only the header is ever read)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b""))


def write_image(path: Path, w: int, h: int, orientation: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new("L", (w, h), 128)
    if orientation is None:
        im.save(path)
    else:
        exif = Image.Exif()
        exif[274] = orientation
        im.save(path, exif=exif)


def _polygon(xc: float, yc: float, bw: float, bh: float, rng: np.random.Generator) -> list[float]:
    """A hexagon inside the box, its corners jittered: row values x1 y1 … x6 y6 (normalized)."""
    ang = np.arange(6) * np.pi / 3 + rng.uniform(0, 0.5)
    r = rng.uniform(0.7, 1.0, 6)
    xs = np.clip(xc + bw / 2 * r * np.cos(ang), 0, 1)
    ys = np.clip(yc + bh / 2 * r * np.sin(ang), 0, 1)
    return np.stack([xs, ys], 1).reshape(-1).tolist()


def random_dataset(
    root: Path, seed: int, *, n_classes: int = 3, n_images: int = 6, polygons: bool = False
) -> tuple[Path, Path, Path]:
    """A random dataset under ``root``; returns (data.yaml, predictions folder, predictions.json).

    Prediction coordinates are written with ``%.17g`` so that the txt and JSON forms hold the same boxes up
    to float64 rounding; scores are distinct (no ties).
    """
    rng = np.random.default_rng(seed)
    names = [f"c{k}" for k in range(n_classes)]
    (root / "data.yaml").write_text(
        "path: "
        + str(root)
        + "\ntrain: images/val\nval: images/val\nnames:\n"
        + "".join(f"  {k}: {n}\n" for k, n in enumerate(names))
    )
    pred_dir = root / "pred" / "labels"
    pred_dir.mkdir(parents=True)
    records = []
    scores = rng.permutation(np.arange(1, 100000))[:2000] / 100000.0
    s_i = 0
    for i in range(n_images):
        w, h = int(rng.integers(200, 900)), int(rng.integers(200, 900))
        stem = f"{i:04d}" if i % 2 else f"img_{i}"
        write_image(root / "images" / "val" / f"{stem}.png", w, h)
        n_gt = int(rng.integers(0, 7))
        c = rng.uniform(0.15, 0.85, (n_gt, 2))
        s = rng.uniform(0.03, 0.25, (n_gt, 2))
        cls = rng.integers(0, n_classes, n_gt)
        lab = root / "labels" / "val" / f"{stem}.txt"
        lab.parent.mkdir(parents=True, exist_ok=True)
        if polygons:
            rows_txt = [
                f"{k} " + " ".join(f"{v:.6f}" for v in _polygon(a, b, x, y, rng))
                for k, (a, b), (x, y) in zip(cls, c, s)
            ]
        else:
            rows_txt = [f"{k} {a:.6f} {b:.6f} {x:.6f} {y:.6f}" for k, (a, b), (x, y) in zip(cls, c, s)]
        lab.write_text("".join(r + "\n" for r in rows_txt))
        rows = []
        for g in range(n_gt):
            for _ in range(int(rng.choice([0, 1, 1, 2]))):
                cc = np.clip(c[g] + rng.normal(0, 0.02, 2), 0, 1)
                ss = np.clip(s[g] * rng.uniform(0.7, 1.3, 2), 0.001, 1)
                k = cls[g] if rng.random() < 0.85 else rng.integers(0, n_classes)
                rows.append((int(k), *cc, *ss))
        for _ in range(int(rng.integers(0, 4))):
            rows.append(
                (int(rng.integers(0, n_classes)), *rng.uniform(0.2, 0.8, 2), *rng.uniform(0.02, 0.2, 2))
            )
        lines = []
        for k, xc, yc, bw, bh in rows:
            conf = float(scores[s_i])
            s_i += 1
            if polygons:
                pts = " ".join(f"{v:.17g}" for v in _polygon(xc, yc, bw, bh, rng))
                lines.append(f"{k} {pts} {conf:.17g}\n")
            else:
                lines.append(f"{k} {xc:.17g} {yc:.17g} {bw:.17g} {bh:.17g} {conf:.17g}\n")
            records.append(
                {
                    "image_id": int(stem) if stem.isnumeric() else stem,
                    "category_id": k + 1,
                    "bbox": [(xc - bw / 2) * w, (yc - bh / 2) * h, bw * w, bh * h],
                    "score": conf,
                }
            )
        if lines:
            (pred_dir / f"{stem}.txt").write_text("".join(lines))
    pj = root / "pred" / "predictions.json"
    pj.write_text(json.dumps(records))
    return root / "data.yaml", pred_dir, pj


def case_tables(case: dict) -> tuple[BoxTable, BoxTable, int]:
    """A case of tests/data/ultralytics/cases.json (images of ``gt_cls``, ``gt_xyxy``, ``det_cls``,
    ``det_xyxy``, ``conf``) as the labels' and the detections' tables, and its number of images."""
    gi, gc, gb, di, dc, db, dconf = [], [], [], [], [], [], []
    for i, im in enumerate(case["images"]):
        gi += [i] * len(im["gt_cls"])
        gc += im["gt_cls"]
        gb += im["gt_xyxy"]
        di += [i] * len(im["det_cls"])
        dc += im["det_cls"]
        db += im["det_xyxy"]
        dconf += im["conf"]
    return (
        BoxTable.from_arrays(gi, gc, gb),
        BoxTable.from_arrays(di, dc, db, dconf),
        len(case["images"]),
    )
