"""Write data_samples/pose/: a small constructed keypoint set for the docs, the README and its tests.

* ``keypoints_gt.json``: 6 images (each with a ``crowdIndex``), two categories of 5 keypoints, each category
  record with its own ``sigmas``; ``keypoints_results.json``: keypoint detections near the objects and some in
  the background (seeded, numpy only).
* ``yolo/``: the same objects as a YOLO pose dataset (``kpt_shape: [5, 3]``, tiny grey PNG images, label
  rows) and ``yolo/predictions/*.txt`` as ``yolo predict save_txt save_conf`` writes them.

    python scripts/make_pose_samples.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "data_samples" / "pose"
K = 5
SIZE = (320, 240)  # width, height


def main() -> None:
    from PIL import Image  # (pillow: only to write the sample images)

    rng = np.random.default_rng(2026)
    cats = [
        {"id": 1, "name": "hand", "keypoints": ["wrist", "thumb", "index", "middle", "little"], "skeleton": [],
         "sigmas": [0.05, 0.03, 0.03, 0.03, 0.04]},
        {"id": 2, "name": "paw", "keypoints": ["heel", "toe1", "toe2", "toe3", "toe4"], "skeleton": [],
         "sigmas": [0.06, 0.04, 0.04, 0.04, 0.04]},
    ]  # fmt: skip
    images, anns, dets = [], [], []
    yolo_labels: dict[int, list[str]] = {}
    yolo_preds: dict[int, list[str]] = {}
    w, h = SIZE
    for img in range(1, 7):
        images.append({"id": img, "file_name": f"im{img}.png", "width": w, "height": h,
                       "crowdIndex": [0.05, 0.1, 0.3, 0.5, 0.85, 0.95][img - 1]})  # fmt: skip
        yolo_labels[img], yolo_preds[img] = [], []
        for j in range(int(rng.integers(2, 4))):
            c = 1 + j % 2  # (both categories in every image, so in every crowd level)
            bw, bh = rng.uniform(40, 110), rng.uniform(40, 110)
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            kx, ky = np.round(x + rng.uniform(0, bw, K)), np.round(y + rng.uniform(0, bh, K))
            v = rng.choice([1, 2], K, p=[0.3, 0.7])
            v[rng.random(K) < 0.15] = 0
            kp = np.stack([kx, ky, v], 1)
            kp[v == 0, :2] = 0
            box = [round(float(x), 1), round(float(y), 1), round(float(bw), 1), round(float(bh), 1)]
            anns.append({"id": len(anns) + 1, "image_id": img, "category_id": c, "iscrowd": 0, "bbox": box,
                         "area": round(box[2] * box[3] * 0.6, 1), "num_keypoints": int((v > 0).sum()),
                         "keypoints": [int(t) for t in kp.reshape(-1)]})  # fmt: skip
            xc, yc = (box[0] + box[2] / 2) / w, (box[1] + box[3] / 2) / h
            norm = np.stack([kp[:, 0] / w, kp[:, 1] / h, kp[:, 2]], 1)
            yolo_labels[img].append(
                f"{c - 1} {xc:.6f} {yc:.6f} {box[2] / w:.6f} {box[3] / h:.6f} "
                + " ".join(f"{t:.6f}" if j % 3 < 2 else f"{int(t)}" for j, t in enumerate(norm.reshape(-1)))
            )
            for _ in range(int(rng.integers(1, 3))):
                s = rng.choice([1.0, 2.0, 4.0])
                dk = np.stack([kx + rng.normal(0, s, K), ky + rng.normal(0, s, K), rng.uniform(0.3, 1, K)], 1)
                score = round(float(rng.uniform(0.2, 1.0)), 3)
                dets.append({"image_id": img, "category_id": c, "score": score,
                             "keypoints": [round(float(t), 2) for t in dk.reshape(-1)]})  # fmt: skip
                jx, jy, jw, jh = np.asarray(box) + rng.normal(0, s, 4)
                yolo_preds[img].append(
                    f"{c - 1} {(jx + jw / 2) / w:.6f} {(jy + jh / 2) / h:.6f} {jw / w:.6f} {jh / h:.6f} "
                    + " ".join(f"{a / w:.6f} {b / h:.6f} {q:.6f}" for a, b, q in dk)
                    + f" {score}"
                )
        for _ in range(int(rng.integers(0, 2))):  # a background detection
            c = int(rng.integers(1, 3))
            dk = np.stack([rng.uniform(0, w, K), rng.uniform(0, h, K), rng.uniform(0.3, 1, K)], 1)
            dets.append({"image_id": img, "category_id": c, "score": round(float(rng.uniform(0.1, 0.6)), 3),
                         "keypoints": [round(float(t), 2) for t in dk.reshape(-1)]})  # fmt: skip
    OUT.mkdir(parents=True, exist_ok=True)
    gt = {"images": images, "categories": cats, "annotations": anns}
    (OUT / "keypoints_gt.json").write_text(json.dumps(gt, indent=1) + "\n")
    (OUT / "keypoints_results.json").write_text(json.dumps(dets, indent=1) + "\n")
    y = OUT / "yolo"
    for sub in ("images/val", "labels/val", "predictions"):
        (y / sub).mkdir(parents=True, exist_ok=True)
    (y / "data.yaml").write_text(
        "# A tiny YOLO pose dataset for deteval's docs and tests (scripts/make_pose_samples.py).\n"
        "# no 'path': the dataset root is this file's folder\n"
        "val: images/val\nkpt_shape: [5, 3]\nflip_idx: [0, 1, 2, 3, 4]\nnames:\n  0: hand\n  1: paw\n"
    )
    for img in range(1, 7):
        Image.new("L", SIZE, 128).save(y / "images" / "val" / f"im{img}.png")
        (y / "labels" / "val" / f"im{img}.txt").write_text("\n".join(yolo_labels[img]) + "\n")
        (y / "predictions" / f"im{img}.txt").write_text("\n".join(yolo_preds[img]) + "\n")


if __name__ == "__main__":
    main()
