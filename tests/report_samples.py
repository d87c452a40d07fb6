"""EvalResult objects shaped like the protocols produce them (VOC, COCO, TREC, MIR), for the report tests."""

from __future__ import annotations

import numpy as np

from deteval.core import average_precision, rank
from deteval.results import EvalResult, PRCurve

VOC_CLASSES = ["aeroplane", "bicycle", "bird", "boat", "bottle"]
COCO_CLASSES = ["person", "bicycle", "car", "traffic light"]


def voc_result(seed: int = 0, classes: list[str] | None = None, shift: float = 0.0) -> EvalResult:
    """A VOC07 result computed through the core from seeded random rankings, with PR curves."""
    rng = np.random.default_rng(seed)
    per_class, curves, aps = {}, {}, []
    for name in classes or VOC_CLASSES:
        n = int(rng.integers(5, 40))
        scores = rng.random(n)
        outcomes = (rng.random(n) < np.clip(0.3 + shift + 0.5 * scores, 0, 1)).astype(int)
        outcomes[rng.random(n) < 0.05] = -1
        npos = int((outcomes == 1).sum()) + int(rng.integers(0, 4))
        r = rank(scores, outcomes, npos)
        ap = average_precision(r, "voc07")
        aps.append(ap)
        per_class[name] = {
            "ap": ap,
            "npos": npos,
            "ndet": n,
            "tp": int(r.tp[-1]) if len(r.tp) else 0,
            "fp": int(r.fp[-1]) if len(r.fp) else 0,
        }
        curves[name] = PRCurve(r.recall(), r.precision(), r.scores)
    return EvalResult(
        protocol="voc",
        summary={"metric": "voc07", "iou_threshold": 0.5, "map": float(np.mean(aps))},
        per_class=per_class,
        curves=curves,
        warnings=["2 detections with an unknown image id were skipped"],
    )


def coco_result(seed: int = 1) -> EvalResult:
    rng = np.random.default_rng(seed)
    stats = rng.random(12)
    stats[3] = -1.0  # no small objects: pycocotools' "absent" marker
    per_class = {
        name: {k: float(rng.random()) for k in ("ap", "ap50", "ap75", "aps", "apm", "apl", "ar100")}
        for name in COCO_CLASSES
    }
    per_class["car"]["aps"] = float("nan")
    names = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
    lines = [f" {n:<6} = {v:0.3f}" for n, v in zip(names, stats)]
    return EvalResult("coco", {"iou_type": "bbox", "stats": stats}, per_class, lines=lines)


def trec_result() -> EvalResult:
    return EvalResult(
        "trec",
        {"measures": ["map", "P_10"], "all": {"map": 0.25, "P_10": 0.4, "num_q": 2}},
        {"401": {"map": 0.5, "P_10": 0.6, "num_rel": 10}, "402": {"map": 0.0, "P_10": 0.2, "num_rel": 0}},
    )


def mir_result() -> EvalResult:
    return EvalResult(
        "mir",
        {
            "rule": "mir_eval",
            "pairwise": {"precision": 0.8, "recall": 0.6, "f": 0.6857142857142857},
            "boundary": {
                "0.5": {"precision": 1.0, "recall": 0.5, "f": 2 / 3},
                "3.0": {"precision": 1.0, "recall": 1.0, "f": 1.0},
            },
        },
    )
