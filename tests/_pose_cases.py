"""Random keypoint cases of any skeleton with several categories, each with sigmas of its own."""

from __future__ import annotations

import numpy as np


def random_sigmas(rng: np.random.Generator, k: int) -> list[float]:
    """K sigmas, rounded as a user would write them."""
    return [float(round(s, 4)) for s in rng.uniform(0.01, 0.12, k)]


def random_pose_case(
    seed: int, k: int, n_cats: int = 3, crowd_index: bool = False, mixed: tuple[int, ...] = ()
) -> dict:
    """Objects of ``n_cats`` categories with ``k`` keypoints each (visibility 0/1/2, some with none visible, some
    crowds), their categories' own sigmas (``sigmas`` in the records of all but the last category), keypoint
    detections near them and in the background. ``crowd_index``: every image gets a ``crowdIndex``. ``mixed``:
    each category's keypoint count drawn from these instead (skeletons of several sizes in one file; a
    detection then always takes its object's category)."""
    rng = np.random.default_rng(70_000 + seed)
    img_ids = list(range(1, int(rng.integers(2, 6)) + 1))
    cat_ids = [int(c) for c in sorted(rng.choice(np.arange(1, 20), n_cats, replace=False))]
    ks = {c: int(rng.choice(mixed)) if mixed else k for c in cat_ids}
    if mixed and len(set(ks.values())) == 1:  # (at least two sizes)
        ks[cat_ids[-1]] = next(m for m in mixed if m != ks[cat_ids[0]])
    sigmas = {c: random_sigmas(rng, ks[c]) for c in cat_ids}
    anns: list[dict] = []
    dets: list[dict] = []
    for img in img_ids:
        for _ in range(int(rng.integers(0, 7))):
            cat = int(rng.choice(cat_ids))
            k = ks[cat]
            x, y = rng.uniform(0, 300, 2)
            bw, bh = rng.uniform(3, 150, 2)
            kx, ky = x + rng.uniform(0, bw, k), y + rng.uniform(0, bh, k)
            v = rng.choice([0, 1, 2], k, p=[0.3, 0.2, 0.5]) if rng.random() > 0.15 else np.zeros(k, int)
            kp = np.stack([np.round(kx), np.round(ky), v], axis=1)
            kp[v == 0, :2] = 0
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": img,
                    "category_id": cat,
                    "iscrowd": int(rng.random() < 0.08),
                    "bbox": [float(round(t, 2)) for t in (x, y, bw, bh)],
                    "area": float(round(bw * bh * rng.uniform(0.3, 0.9), 3)),
                    "num_keypoints": int((v > 0).sum()),
                    "keypoints": [int(t) for t in kp.reshape(-1)],
                }
            )
            for _ in range(int(rng.integers(0, 4))):
                s = rng.uniform(0, 0.15) * max(bw, bh)
                dk = np.stack([kx + rng.normal(0, s, k), ky + rng.normal(0, s, k), rng.random(k)], axis=1)
                dets.append(
                    {
                        "image_id": img,
                        "category_id": cat if rng.random() > 0.1 or mixed else int(rng.choice(cat_ids)),
                        "keypoints": [float(t) for t in dk.reshape(-1)],
                        "score": float(round(rng.random(), 2)),
                    }
                )
        for _ in range(int(rng.integers(0, 3))):  # background detections
            if mixed:
                cat = int(rng.choice(cat_ids))
                k = ks[cat]
            dk = np.stack([rng.uniform(0, 400, k), rng.uniform(0, 400, k), rng.random(k)], axis=1)
            dets.append(
                {
                    "image_id": img,
                    "category_id": cat if mixed else int(rng.choice(cat_ids)),
                    "keypoints": [float(t) for t in dk.reshape(-1)],
                    "score": float(round(rng.random(), 2)),
                }
            )
    k = ks[cat_ids[0]]
    if not dets:
        dets.append({"image_id": 1, "category_id": cat_ids[0], "keypoints": [1.0] * (3 * k), "score": 0.5})
    if not anns:
        anns.append(
            {
                "id": 1,
                "image_id": 1,
                "category_id": cat_ids[0],
                "iscrowd": 0,
                "bbox": [1.0, 1.0, 20.0, 20.0],
                "area": 300.0,
                "num_keypoints": k,
                "keypoints": [5, 5, 2] * k,
            }
        )
    for d in dets:  # (loadRes replaces a keypoint result's box by its keypoints' extent; vernier reads one)
        a = np.asarray(d["keypoints"]).reshape(-1, 3)
        x0, y0 = float(a[:, 0].min()), float(a[:, 1].min())
        d["bbox"] = [x0, y0, float(a[:, 0].max()) - x0, float(a[:, 1].max()) - y0]
    rng.shuffle(dets)
    images = [{"id": i, "height": 400, "width": 400} for i in img_ids]
    if crowd_index:
        for im in images:
            im["crowdIndex"] = float(round(rng.choice([rng.uniform(0, 1), 0.2, 0.8, 0.0]), 3))
    cats = [
        {"id": c, "name": f"c{c}", "keypoints": [f"k{j}" for j in range(ks[c])], "skeleton": []}
        for c in cat_ids
    ]
    for rec in cats[:-1]:
        rec["sigmas"] = sigmas[rec["id"]]
    return {"gt": {"images": images, "categories": cats, "annotations": anns}, "dt": dets, "sigmas": sigmas}
