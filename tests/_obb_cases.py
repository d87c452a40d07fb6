"""Seeded random YOLO-OBB splits on disk (images, labels, predictions) reaching the oriented-box corners:
rotated boxes at ±90° and 0, zero-width boxes, exact score ties, two classes plus one only predicted,
labels mirrored about a detection (equal IoUs), background predictions, an image with an EXIF orientation
that swaps its size (the Ultralytics eras read it differently), images without labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _yolo_cases import write_image

from deteval.tables.quads import obb_quads

NAMES = ("plane", "ship", "tank")


def _row(cls: int, quad: np.ndarray, w: int, h: int, conf: float | None = None) -> str:
    norm = quad / np.tile([w, h], 4)
    tail = "" if conf is None else f" {conf!r}"
    return f"{cls} " + " ".join(repr(float(v)) for v in norm) + tail + "\n"


def random_obb_split(root: Path, seed: int, n_images: int = 4) -> tuple[Path, Path]:
    """Write ``root/data.yaml`` (val split), ``root/labels/val``, ``root/pred``; return the yaml and the
    predictions folder."""
    rng = np.random.default_rng(seed)
    (root / "labels" / "val").mkdir(parents=True)
    (root / "pred").mkdir()
    (root / "data.yaml").write_text(
        "val: images/val\nnames:\n" + "".join(f"  {k}: {n}\n" for k, n in enumerate(NAMES))
    )
    for i in range(n_images):
        w, h = int(rng.integers(200, 360)), int(rng.integers(200, 360))
        if (
            i == 1 and seed % 3 == 0
        ):  # (orientation 6: the eras up to 8.4.173 and the others size it differently)
            write_image(root / "images" / "val" / f"im{i}.jpg", w, h, orientation=6)
            w, h = h, w  # (the labels are normalized by the size as the newer rule reads it)
        else:
            write_image(root / "images" / "val" / f"im{i}.png", w, h)
        n = int(rng.integers(0, 7)) if i else int(rng.integers(1, 7))
        boxes = np.c_[
            rng.uniform(60, w - 60, n),
            rng.uniform(60, h - 60, n),
            rng.uniform(6, 50, (n, 2)),
            rng.uniform(-np.pi, np.pi, n),
        ]
        if n:
            boxes[: max(1, n // 3), 4] = rng.choice([np.pi / 2, -np.pi / 2, 0.0], max(1, n // 3))
        if n > 2 and rng.random() < 0.3:
            boxes[-1, 2] = 0.0  # a zero-width box
        cls = rng.integers(0, 2, n)
        labels, preds = [], []
        for k in range(n):
            labels.append(_row(int(cls[k]), obb_quads(boxes[k : k + 1])[0, :8], w, h))
            for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
                b = boxes[k] + np.r_[rng.normal(0, 3, 2), rng.normal(0, 3, 2), rng.normal(0, 0.2)]
                b[2:4] = np.abs(b[2:4]) + 0.5
                c = int(cls[k]) if rng.random() < 0.85 else int(rng.integers(0, 3))
                conf = (
                    float(rng.choice([0.25, 0.5, 0.75]))
                    if rng.random() < 0.3
                    else float(rng.uniform(0.01, 1))
                )
                preds.append(_row(c, obb_quads(b[None])[0, :8], w, h, conf))
        if rng.random() < 0.5:  # two labels mirrored about one detection (equal IoUs with it)
            cx, cy = w / 2, h / 2
            for dx in (-8.0, 8.0):
                labels.append(_row(0, obb_quads(np.array([[cx + dx, cy, 30.0, 20.0, 0.0]]))[0, :8], w, h))
            preds.append(_row(0, obb_quads(np.array([[cx, cy, 30.0, 20.0, 0.0]]))[0, :8], w, h, 0.9))
        for _ in range(int(rng.integers(0, 3))):  # background
            b = np.r_[
                rng.uniform(60, w - 60), rng.uniform(60, h - 60), rng.uniform(6, 50, 2), rng.uniform(-3, 3)
            ]
            preds.append(
                _row(int(rng.integers(0, 3)), obb_quads(b[None])[0, :8], w, h, float(rng.uniform(0, 1)))
            )
        stem = f"im{i}"
        if labels:
            (root / "labels" / "val" / f"{stem}.txt").write_text("".join(labels))
        (root / "pred" / f"{stem}.txt").write_text("".join(preds))
    return root / "data.yaml", root / "pred"
