"""Operating points and calibration: against direct counting at every threshold / in every bin, hand cases,
the CLI; the true-positive flags they use are the protocol's (checked against pycocotools in
test_analysis_confusion)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _tide_cases import coco_files, random_case

from deteval.analysis.calibration import calibration
from deteval.analysis.inputs import coco_matched
from deteval.analysis.operating import operating_points
from deteval.analysis.ranked import Matched
from deteval.cli import main
from deteval.errors import ValidationError
from deteval.io.coco import load_coco_gt, load_coco_results

DATA = Path(__file__).resolve().parent / "data" / "coco"


def _brute_f1(score, tp, n_gt, s):
    keep = score >= s
    t = int(tp[keep].sum())
    f = int(keep.sum()) - t
    p = t / (t + f) if t + f else 0.0
    r = t / n_gt if n_gt else 0.0
    return (2 * p * r / (p + r) if p + r else 0.0), p, r


def _matched(seed: int) -> Matched:
    inp = random_case(seed)
    gt_d, res_d = coco_files(inp, 6)
    gt = load_coco_gt(gt_d)
    return coco_matched(gt, load_coco_results(res_d, gt) if res_d else load_coco_results([], gt))


@pytest.mark.parametrize("seed", range(20))
def test_operating_points_equal_direct_counting(seed):
    m = _matched(seed + 600)
    ops = operating_points(m)
    for k, name in enumerate(m.names):
        sc, tp, n = m.score[m.cls == k], m.tp[m.cls == k], int(m.n_gt[k])
        best = ops.best[name]
        if sc.size == 0:
            assert best["threshold"] is None and best["f1"] == 0.0
            continue
        cands = sorted(set(sc.tolist()), reverse=True)
        vals = [_brute_f1(sc, tp, n, s) for s in cands]
        i = max(range(len(cands)), key=lambda j: (vals[j][0], cands[j]))
        assert best["threshold"] == cands[i]
        assert (best["f1"], best["precision"], best["recall"]) == pytest.approx(vals[i], abs=1e-15)
    scored = [k for k in range(len(m.names)) if m.n_gt[k] > 0]
    if not scored or m.score.size == 0:
        assert ops.global_threshold is None
        return
    cands = sorted(set(m.score.tolist()), reverse=True)
    means = [
        np.mean([_brute_f1(m.score[m.cls == k], m.tp[m.cls == k], int(m.n_gt[k]), s)[0] for k in scored])
        for s in cands
    ]
    j = max(range(len(cands)), key=lambda q: (round(means[q], 12), cands[q]))
    assert ops.global_threshold == cands[j]
    assert ops.global_mean_f1 == pytest.approx(means[j], abs=1e-12)


def _flat(score, tp, n_gt=None):
    score = np.asarray(score, dtype=np.float64)
    return Matched(
        cls=np.zeros(score.size, dtype=np.int64),
        score=score,
        tp=np.asarray(tp, dtype=bool),
        n_gt=np.asarray([n_gt if n_gt is not None else int(np.sum(tp))]),
        names=["a"],
        iou=0.5,
    )


def test_operating_point_hand_case():
    # TP .9, FP .8, TP .7, FP .6 over 3 positives: F1 at .9 = 2(1)(1/3)/(4/3) = .5; at .7 = 2(2/3)(2/3)/(4/3)
    ops = operating_points(_flat([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0], n_gt=3))
    b = ops.best["a"]
    assert b["threshold"] == 0.7 and b["tp"] == 2 and b["fp"] == 1
    assert b["f1"] == pytest.approx(2 / 3, abs=1e-15)
    assert ops.global_threshold == 0.7


def test_calibration_equals_direct_binning():
    rng = np.random.default_rng(7)
    s = np.round(rng.random(500), 3)
    tp = rng.random(500) < s
    s[:3] = [0.0, 1.0, 0.1]
    cal = calibration(_flat(s, tp, n_gt=500), n_bins=10)
    ece, gaps = 0.0, []
    for b in range(10):
        lo = b / 10
        inb = (np.floor(s * 10) == b) | ((b == 9) & (s == 1.0))
        assert cal.count[b] == inb.sum()
        if inb.any():
            gap = abs(tp[inb].mean() - s[inb].mean())
            gaps.append(gap)
            ece += inb.sum() / s.size * gap
            assert cal.confidence[b] == pytest.approx(s[inb].mean(), abs=1e-15)
            assert lo - 1e-12 <= cal.confidence[b] <= lo + 0.1 + 1e-12
    assert cal.ece == pytest.approx(ece, abs=1e-15)
    assert cal.mce == pytest.approx(max(gaps), abs=1e-15)


def test_calibration_hand_case_and_bad_scores():
    # bin 9: scores .9, .95 (mean .925), 1 TP of 2 -> gap .425; bin 0: .05 FP -> gap .05; N = 3
    cal = calibration(_flat([0.9, 0.95, 0.05], [1, 0, 0], n_gt=1), n_bins=10)
    assert cal.ece == pytest.approx((2 * 0.425 + 0.05) / 3, abs=1e-15)
    with pytest.raises(ValidationError, match=r"scores in \[0, 1\]"):
        calibration(_flat([1.5], [1]))


def test_cli(capsys):
    d = DATA / "coco_fruits"
    args = ["coco", str(d / "fruit_val_coco_format.json"), str(d / "coco_instances_results.json")]
    assert main([*args, "--operating-points", "--calibration", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    gt = load_coco_gt(d / "fruit_val_coco_format.json")
    m = coco_matched(gt, load_coco_results(d / "coco_instances_results.json", gt))
    assert doc["operating_points"] == json.loads(json.dumps(operating_points(m).to_dict()))
    assert doc["calibration"]["ece"] == calibration(m).ece
    assert set(doc["operating_points"]["per_class"]) == set(gt.cat_names)
