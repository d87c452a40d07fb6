"""Write data_samples/yolo: a tiny YOLO dataset (5 images, 3 classes) with predictions in both forms.

Deterministic (seeded); the images are plain grey JPEG/PNG files of realistic sizes (one carries EXIF
orientation 6, so its width and height swap), the labels are box rows except one polygon file, and the
predictions are written as `yolo predict … save_txt save_conf` files and as `yolo val save_json`'s
predictions.json. Rerun to regenerate: ``python scripts/make_yolo_sample.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

OUT = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"
NAMES = ["person", "car", "dog"]
IMAGES = [("000001", ".jpg", 640, 480, None), ("000002", ".jpg", 640, 480, 6), ("000003", ".png", 320, 240, None),
          ("street_04", ".jpg", 800, 600, None), ("street_05", ".jpg", 800, 600, None)]  # fmt: skip


def main() -> None:
    rng = np.random.default_rng(23)
    (OUT / "images" / "val").mkdir(parents=True, exist_ok=True)
    (OUT / "labels" / "val").mkdir(parents=True, exist_ok=True)
    (OUT / "predictions" / "labels").mkdir(parents=True, exist_ok=True)
    (OUT / "data.yaml").write_text(
        "# A tiny YOLO dataset for deteval's docs and tests (scripts/make_yolo_sample.py).\n"
        "# no 'path': the dataset root is this file's folder\n"
        "train: images/val\nval: images/val\n\nnames:\n"
        + "".join(f"  {k}: {n}\n" for k, n in enumerate(NAMES))
    )
    records = []
    for stem, ext, w, h, orientation in IMAGES:
        im = Image.new("RGB", (w, h), (120, 120, 120))
        path = OUT / "images" / "val" / f"{stem}{ext}"
        if orientation:
            exif = Image.Exif()
            exif[274] = orientation
            im.save(path, exif=exif, quality=30)
            w, h = h, w  # the image as Ultralytics sees it
        else:
            im.save(path, **({"quality": 30} if ext == ".jpg" else {}))
        n = int(rng.integers(1, 5))
        cls = rng.integers(0, 3, n)
        c = rng.uniform(0.2, 0.8, (n, 2))
        s = rng.uniform(0.08, 0.3, (n, 2))
        if stem == "000003":  # polygon labels: a quadrilateral inside each box
            rows = []
            for k, (xc, yc), (bw, bh) in zip(cls, c, s):
                pts = [xc - bw / 2, yc, xc, yc - bh / 2, xc + bw / 2, yc, xc, yc + bh / 2]
                rows.append(f"{k} " + " ".join(f"{v:.6f}" for v in pts))
        else:
            rows = [f"{k} {a:.6f} {b:.6f} {x:.6f} {y:.6f}" for k, (a, b), (x, y) in zip(cls, c, s)]
        (OUT / "labels" / "val" / f"{stem}.txt").write_text("".join(r + "\n" for r in rows))
        preds = []
        for k, (xc, yc), (bw, bh) in zip(cls, c, s):
            if rng.random() < 0.8:
                jit = rng.normal(0, 0.015, 4)
                preds.append((int(k), xc + jit[0], yc + jit[1], bw * (1 + jit[2] * 3), bh * (1 + jit[3] * 3)))
        for _ in range(int(rng.integers(0, 3))):
            preds.append((int(rng.integers(0, 3)), *rng.uniform(0.2, 0.8, 2), *rng.uniform(0.05, 0.2, 2)))
        lines = []
        for k, xc, yc, bw, bh in preds:
            conf = float(np.round(rng.uniform(0.05, 0.98), 5))
            lines.append(f"{k} {xc:g} {yc:g} {bw:g} {bh:g} {conf:g}")
            x, y, ww, hh = (float(v) for v in (xc, yc, bw, bh))
            box = [(x - ww / 2) * w, (y - hh / 2) * h, ww * w, hh * h]
            records.append(
                {
                    "image_id": int(stem) if stem.isnumeric() else stem,
                    "file_name": f"{stem}{ext}",
                    "category_id": k + 1,
                    "bbox": [round(v, 3) for v in box],
                    "score": round(conf, 5),
                }
            )
        if lines:
            (OUT / "predictions" / "labels" / f"{stem}.txt").write_text("".join(x + "\n" for x in lines))
    (OUT / "predictions" / "predictions.json").write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
