"""MeanAveragePrecision across processes: merge(), state_dict()/load_state_dict() and sync() give, bit for bit,
what one metric that saw every batch computes (COCO bbox from compact match tables, COCO segm, VOC)."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

from deteval.api import MeanAveragePrecision
from deteval.errors import ConfigError, ValidationError


def _images(seed: int, n: int, masks: bool = False) -> list[tuple[dict, dict]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        g, d = int(rng.integers(0, 6)), int(rng.integers(0, 9))
        gxy = rng.integers(3, 60, (g, 2)).astype(float)
        gb = np.c_[gxy, gxy + rng.integers(2, 40, (g, 2))]
        db = np.c_[rng.integers(0, 60, (d, 2)), rng.integers(62, 100, (d, 2))].astype(float)
        if g and d:
            on = rng.random(d) < 0.6
            db[on] = gb[rng.integers(0, g, int(on.sum()))] + rng.integers(0, 3, (int(on.sum()), 4)) * [
                -1,
                -1,
                1,
                1,
            ]
        pred = {"boxes": db, "scores": rng.choice([0.2, 0.5, 0.7, 0.9], d), "labels": rng.integers(0, 3, d)}
        target = {"boxes": gb, "labels": rng.integers(0, 3, g)}
        if masks:
            from pycocotools import mask as mask_utils

            def rles(boxes: np.ndarray) -> list:
                ms = np.zeros((len(boxes), 100, 100), np.uint8, order="F")
                for i, b in enumerate(boxes.astype(int)):
                    ms[i, b[1] : b[3], b[0] : b[2]] = 1
                return mask_utils.encode(np.asfortranarray(ms.transpose(1, 2, 0))) if len(boxes) else []

            pred = {"masks": rles(db), "scores": pred["scores"], "labels": pred["labels"]}
            target = {"masks": rles(gb), "labels": target["labels"]}
        out.append((pred, target))
    return out


def _same(a, b) -> None:
    assert a.to_dict() == b.to_dict()
    assert set(a.keys()) == set(b.keys())
    for k in a.keys():
        assert np.array_equal(np.asarray(a[k]), np.asarray(b[k])), k


CONFIGS = [
    {"protocol": "coco"},
    {"protocol": "coco", "iou_type": "segm"},
    {"protocol": "voc"},
    {"protocol": "voc", "profile": "py_faster_rcnn", "metric": "voc07"},
]


@pytest.mark.fast_cases(config=1)
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@pytest.mark.parametrize("with_ids", [False, True])
def test_merged_and_restored_metrics_equal_one_metric(config: dict, with_ids: bool) -> None:
    masks = config.get("iou_type") == "segm"
    images = _images(7, 23, masks)
    ids = np.random.default_rng(1).permutation(1000)[: len(images)].tolist()
    if with_ids:
        images = [({**p, "image_id": i}, t) for (p, t), i in zip(images, ids)]
    one = MeanAveragePrecision(**config, class_metrics=True)
    for s in range(0, len(images), 4):
        one.update([p for p, _ in images[s : s + 4]], [t for _, t in images[s : s + 4]])
    ranks = [MeanAveragePrecision(**config, class_metrics=True) for _ in range(3)]
    cuts = [0, 5, 6, len(images)]  # uneven ranks, in arrival order
    for r, (lo, hi) in enumerate(itertools.pairwise(cuts)):
        for s in range(lo, hi, 2):
            e = min(s + 2, hi)
            ranks[r].update([p for p, _ in images[s:e]], [t for _, t in images[s:e]])
    expected = one.compute()
    merged = ranks[0].merge(ranks[1]).merge(ranks[2])
    _same(merged.compute(), expected)
    restored = MeanAveragePrecision(**config, class_metrics=True)
    restored.load_state_dict(pickle.loads(pickle.dumps(one.state_dict())))
    _same(restored.compute(), expected)
    assert MeanAveragePrecision(**config).sync() is not None  # no process group: nothing to gather


def test_bbox_state_holds_match_tables_not_boxes() -> None:
    m = MeanAveragePrecision()
    images = _images(3, 10)
    m.update([p for p, _ in images], [t for _, t in images])
    state = m.state_dict()
    assert state["coco_tables"] and not state["voc_pred"]["boxes"].size and not state["detections"]


def test_merge_refuses_other_configurations_and_repeated_ids() -> None:
    a, b = MeanAveragePrecision(), MeanAveragePrecision(iou_thresholds=[0.5])
    images = _images(4, 2)
    b.update([p for p, _ in images], [t for _, t in images])
    with pytest.raises(ConfigError, match="different configurations"):
        a.merge(b)
    c, d = MeanAveragePrecision(), MeanAveragePrecision()
    c.update([{**images[0][0], "image_id": 5}], [images[0][1]])
    d.update([{**images[1][0], "image_id": 5}], [images[1][1]])
    with pytest.raises(ValidationError, match="image_id 5 is in both"):
        c.merge(d)


def _gloo_rank(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        images = _images(7, 23)
        mine = images[rank::world]  # a DistributedSampler-like split, image ids given
        m = MeanAveragePrecision()
        m.update([{**p, "image_id": 2 * i + rank} for i, (p, _) in enumerate(mine)], [t for _, t in mine])
        result = m.sync().compute()
        with open(f"{out}.{rank}", "wb") as f:
            pickle.dump(result.to_dict(), f)
    finally:
        dist.destroy_process_group()


def test_sync_over_two_gloo_processes(tmp_path) -> None:
    pytest.importorskip("torch")
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = str(tmp_path / "result")
    mp.spawn(_gloo_rank, args=(2, port, out), nprocs=2, join=True)
    images = _images(7, 23)
    one = MeanAveragePrecision()
    order = [(r, i) for r in range(2) for i in range(len(images[r::2]))]
    one.update([{**images[r + 2 * i][0], "image_id": 2 * i + r} for r, i in order],
               [images[r + 2 * i][1] for r, i in order])  # fmt: skip
    expected = one.compute().to_dict()
    for rank in range(2):
        with open(f"{out}.{rank}", "rb") as f:
            assert pickle.load(f) == expected
