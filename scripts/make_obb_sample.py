"""Write data_samples/obb/: one small seeded oriented-box case in the three forms deteval reads.

* ``coco/gt.json``, ``coco/results.json``: COCO JSON with ``"obb": [cx, cy, w, h, angle]`` (hotcoco's form);
* ``yolo/``: a YOLO-OBB dataset (``data.yaml``, grey PNG images, ``labels/val/*.txt`` with
  ``cls x1 y1 … x4 y4`` normalized) and ``predictions/*.txt`` (the same with a confidence);
* ``dota/``: ``labelTxt/*.txt`` (``x1 y1 … x4 y4 category difficult``, with the imagesource/gsd header) and
  ``det/Task1_<category>.txt`` (``image score x1 y1 … x4 y4``).

The three hold the same objects and detections (pixel corners rounded to 0.1). Synthetic; no third-party
content. Run ``python scripts/make_obb_sample.py`` from the repository root.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from deteval.tables.quads import corners_obb, obb_quads

OUT = Path(__file__).resolve().parent.parent / "data_samples" / "obb"
NAMES = ("plane", "ship")
SIZES = ((320, 240), (256, 256), (300, 200))


def make() -> tuple[list, list]:
    """Per image: objects (class, corners, difficult) and detections (class, corners, score)."""
    rng = np.random.default_rng(20261207)
    objects, detections = [], []
    for w, h in SIZES:
        n = 4
        boxes = np.c_[rng.uniform(40, w - 40, n), rng.uniform(40, h - 40, n), rng.uniform(12, 50, (n, 2))]
        boxes = np.c_[boxes, [np.pi / 2, 0.3, -0.8, 1.2]]
        cls = rng.integers(0, 2, n)
        corners = np.round(obb_quads(boxes)[:, :8], 1)
        objects.append([(int(cls[k]), corners[k], int(k == 3)) for k in range(n)])
        dets = []
        for k in range(n):
            for _ in range(int(rng.integers(1, 3))):
                b = boxes[k] + np.r_[rng.normal(0, 3, 2), rng.normal(0, 3, 2), rng.normal(0, 0.1)]
                dets.append(
                    (
                        int(cls[k]),
                        np.round(obb_quads(b[None])[0, :8], 1),
                        float(np.round(rng.uniform(0.05, 1), 3)),
                    )
                )
        b = np.r_[rng.uniform(40, w - 40), rng.uniform(40, h - 40), 30.0, 15.0, 0.5]
        dets.append((int(rng.integers(0, 2)), np.round(obb_quads(b[None])[0, :8], 1), 0.4))
        detections.append(dets)
    return objects, detections


def main() -> None:
    objects, detections = make()
    # COCO with obb
    anns, results = [], []
    for i, (objs, dets) in enumerate(zip(objects, detections)):
        for c, q, diff in objs:
            o = corners_obb(q[None])[0]
            anns.append(
                {"id": len(anns) + 1, "image_id": i + 1, "category_id": c + 1, "obb": [round(v, 6) for v in o.tolist()],
                 "area": round(float(o[2] * o[3]), 6), "iscrowd": diff}
            )  # fmt: skip
        for c, q, s in dets:
            o = corners_obb(q[None])[0]
            results.append(
                {
                    "image_id": i + 1,
                    "category_id": c + 1,
                    "obb": [round(v, 6) for v in o.tolist()],
                    "score": s,
                }
            )
    gt = {
        "images": [
            {"id": i + 1, "file_name": f"im{i}.png", "width": w, "height": h}
            for i, (w, h) in enumerate(SIZES)
        ],
        "categories": [{"id": k + 1, "name": n} for k, n in enumerate(NAMES)],
        "annotations": anns,
    }
    (OUT / "coco").mkdir(parents=True, exist_ok=True)
    (OUT / "coco" / "gt.json").write_text(json.dumps(gt, indent=1) + "\n")
    (OUT / "coco" / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    # YOLO-OBB
    y = OUT / "yolo"
    for d in ("images/val", "labels/val", "predictions"):
        (y / d).mkdir(parents=True, exist_ok=True)
    (y / "data.yaml").write_text(
        "# a tiny YOLO-OBB dataset (scripts/make_obb_sample.py)\nval: images/val\nnames:\n  0: plane\n  1: ship\n"
    )
    for i, ((w, h), objs, dets) in enumerate(zip(SIZES, objects, detections)):
        Image.new("L", (w, h), 128).save(y / "images" / "val" / f"im{i}.png")
        scale = np.tile([w, h], 4)
        (y / "labels" / "val" / f"im{i}.txt").write_text(
            "".join(f"{c} " + " ".join(f"{v:.6g}" for v in q / scale) + "\n" for c, q, _ in objs)
        )
        (y / "predictions" / f"im{i}.txt").write_text(
            "".join(f"{c} " + " ".join(f"{v:.6g}" for v in q / scale) + f" {s:g}\n" for c, q, s in dets)
        )
    # DOTA
    d = OUT / "dota"
    (d / "labelTxt").mkdir(parents=True, exist_ok=True)
    (d / "det").mkdir(parents=True, exist_ok=True)
    per_class: dict[str, list[str]] = {n: [] for n in NAMES}
    for i, (objs, dets) in enumerate(zip(objects, detections)):
        rows = ["imagesource:GoogleEarth", "gsd:0.146"] + [
            " ".join(f"{v:g}" for v in q) + f" {NAMES[c]} {diff}" for c, q, diff in objs
        ]
        (d / "labelTxt" / f"im{i}.txt").write_text("\n".join(rows) + "\n")
        for c, q, s in dets:
            per_class[NAMES[c]].append(f"im{i} {s:g} " + " ".join(f"{v:g}" for v in q))
    for n, rows in per_class.items():
        (d / "det" / f"Task1_{n}.txt").write_text("".join(r + "\n" for r in rows))
    (OUT / "README.md").write_text(
        "# A tiny oriented-box case\n\nThree images, eight objects (one difficult / crowd per image), their detections, in three forms: "
        "`coco/` (COCO JSON with hotcoco's `obb` field), `yolo/` (a YOLO-OBB dataset and `yolo predict save_txt "
        "save_conf` files) and `dota/` (labelTxt and Task1 files). Synthetic, generated by `scripts/make_obb_sample.py` "
        "(seeded); no third-party content. Used by the README, docs/obb.md and tests/test_obb_samples.py.\n"
    )


if __name__ == "__main__":
    main()
