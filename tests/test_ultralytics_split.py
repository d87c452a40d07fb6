"""The Ultralytics matchers run on every image at once (``match_split``) give exactly what ``match_image`` gives
image by image (``yolo val``'s loop), ties between IoUs, duplicate boxes, capped images and both matchers
included."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.detection.ultralytics import (
    IOU_THRESHOLDS_32,
    IOU_THRESHOLDS_64,
    PROFILES,
    box_iou,
    match_image,
    match_split,
    with_rules,
)
from deteval.tables.boxes import BoxTable


def _loop(gt: BoxTable, dt: BoxTable, n_images: int, rules) -> tuple[np.ndarray, np.ndarray]:
    """The image-by-image reference: cap, rank, match each image, concatenate."""
    thresholds = IOU_THRESHOLDS_32 if rules.float32 else IOU_THRESHOLDS_64
    tps, kept = [], []
    for i in range(n_images):
        gi = np.flatnonzero(gt.img == i)
        di = np.flatnonzero(dt.img == i)
        di = di[np.argsort(-dt.conf[di], kind="stable")][: rules.max_det]
        iou = box_iou(gt.xyxy[gi], dt.xyxy[di], float32=rules.float32)
        tps.append(match_image(iou, gt.cls[gi], dt.cls[di], thresholds, rules.matcher))
        kept.append(di)
    return np.concatenate(tps), np.concatenate(kept)


def _case(seed: int) -> tuple[BoxTable, BoxTable, int]:
    rng = np.random.default_rng(seed)
    n_images = int(rng.integers(1, 30))
    n_gt, n_dt = int(rng.integers(0, 120)), int(rng.integers(0, 400))
    grid = rng.integers(0, 6, (n_gt, 2)) * 10.0  # (boxes on a grid: many exact IoU ties)
    g = np.concatenate([grid, grid + rng.integers(5, 20, (n_gt, 2))], 1)
    img, cls = rng.integers(0, n_images, n_gt), rng.integers(0, 3, n_gt)
    twin = rng.random(n_gt) < 0.2  # (labels repeated: a detection's best IoU shared by two labels)
    g, img, cls = (
        np.concatenate([g, g[twin]]),
        np.concatenate([img, img[twin]]),
        np.concatenate([cls, cls[twin]]),
    )
    n_gt = len(g)
    gt = BoxTable.from_arrays(img, cls, g)
    src = rng.integers(0, max(n_gt, 1), n_dt)
    base = g[src] if n_gt else np.zeros((n_dt, 4))
    jitter = rng.integers(-2, 3, (n_dt, 4)) * rng.choice([0.0, 1.0, 0.37], (n_dt, 1))
    d = base + jitter
    d[:, 2:] = np.maximum(d[:, 2:], d[:, :2] + 1)
    img = gt.img[src] if n_gt else rng.integers(0, n_images, n_dt)
    cls = np.where(rng.random(n_dt) < 0.8, gt.cls[src] if n_gt else 0, rng.integers(0, 3, n_dt))
    conf = rng.choice([0.5, 0.25, 0.9], n_dt) if seed % 2 else rng.random(n_dt)
    return gt, BoxTable.from_arrays(img, cls, d, conf), n_images


@pytest.mark.fast_cases(seed=2)
@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_split_matches_the_image_loop(seed: int, profile: str) -> None:
    gt, dt, n_images = _case(seed)
    for rules in (PROFILES[profile], with_rules(profile, float32=False, max_det=7)):
        m = match_split(gt, dt, n_images, rules)
        tp, kept = _loop(gt, dt, n_images, rules)
        assert m.tp.tolist() == tp.tolist()
        assert m.pred_cls.tolist() == dt.cls[kept].tolist()
        assert m.conf.tolist() == dt.conf[kept].astype(m.conf.dtype).tolist()
