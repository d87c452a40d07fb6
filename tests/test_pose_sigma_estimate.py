"""``deteval sigmas``: per-keypoint OKS sigmas as COCO defines them, sigma_i^2 = E[d_i^2 / s^2], from repeated
annotations or from a model's errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deteval.cli import main
from deteval.detection.keypoint_sigmas import parse_sigmas_per_category
from deteval.detection.sigma_estimate import estimate_sigmas, pairs_from_repeats, pairs_from_results
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.run.coco import evaluate_coco


def _objects(rng, n_img, per_img, k):
    out = []
    for img in range(1, n_img + 1):
        for _ in range(per_img):
            x, y = rng.uniform(0, 2000, 2)
            w, h = rng.uniform(40, 200, 2)
            out.append((img, np.array([x, y, w, h]), x + rng.uniform(0, w, k), y + rng.uniform(0, h, k)))
    return out


def _repeated(seed, tau, k=5, copies=3, n_img=300, group=True):
    """Objects far apart (one per 2000-pixel cell), each annotated ``copies`` times with keypoint noise of
    standard deviation tau_i * s per coordinate (s² = area): E[d_i² / s²] between two copies is 4 tau_i²."""
    rng = np.random.default_rng(seed)
    anns = []
    for n, (img, box, kx, ky) in enumerate(_objects(rng, n_img, 1, k)):
        area = float(box[2] * box[3])
        s = np.sqrt(area)
        for _ in range(copies):
            v = rng.choice([0, 2], k, p=[0.1, 0.9])
            px = kx + rng.normal(0, tau * s)
            py = ky + rng.normal(0, tau * s)
            kp = np.stack([px, py, v], 1)
            kp[v == 0, :2] = 0
            ann = {
                "id": len(anns) + 1,
                "image_id": img,
                "category_id": 1,
                "iscrowd": 0,
                "bbox": (box + rng.normal(0, 1, 4) * [1, 1, 0, 0]).tolist(),
                "area": area,
                "num_keypoints": int((v > 0).sum()),
                "keypoints": kp.reshape(-1).tolist(),
            }
            if group:
                ann["object_id"] = n
            anns.append(ann)
    images = [{"id": i, "width": 2300, "height": 2300} for i in range(1, n_img + 1)]
    return {"images": images, "categories": [{"id": 1, "name": "thing"}], "annotations": anns}


def _naive(doc, key=None):
    """sigma_i from every pair of annotations sharing ``key`` (the lower id's area as s²)."""
    k = len(doc["annotations"][0]["keypoints"]) // 3
    tot, cnt = np.zeros(k), np.zeros(k)
    anns = sorted(doc["annotations"], key=lambda a: a["id"])
    for i, a in enumerate(anns):
        for b in anns[i + 1 :]:
            if a["image_id"] != b["image_id"] or a[key] != b[key]:
                continue
            ka, kb = np.reshape(a["keypoints"], (k, 3)), np.reshape(b["keypoints"], (k, 3))
            both = (ka[:, 2] > 0) & (kb[:, 2] > 0)
            d2 = (ka[:, 0] - kb[:, 0]) ** 2 + (ka[:, 1] - kb[:, 1]) ** 2
            tot += np.where(both, d2 / a["area"], 0.0)
            cnt += both
    return np.sqrt(tot / cnt)


def test_repeated_annotations_recover_the_noise():
    tau = np.array([0.01, 0.02, 0.03, 0.05, 0.08])
    doc = _repeated(0, tau)
    gt = load_coco_gt(doc, need_keypoints=True)
    by_key = estimate_sigmas(
        pairs_from_repeats(gt, group_key=[a["object_id"] for a in doc["annotations"]]), gt, "r"
    )
    by_iou = estimate_sigmas(pairs_from_repeats(gt, iou=0.5), gt, "r")
    assert by_key.pairs[0] == 300 * 3
    assert np.array_equal(by_key.sigmas, by_iou.sigmas)  # (the copies' boxes overlap, objects are far apart)
    assert np.allclose(by_key.sigmas[0], _naive(doc, "object_id"), rtol=1e-12, atol=0)
    assert np.allclose(by_key.sigmas[0], 2 * tau, rtol=0.08)


@pytest.mark.parametrize("seed", range(5))
def test_group_key_pairs_equal_a_direct_loop(seed):
    rng = np.random.default_rng(seed)
    doc = _repeated(seed, rng.uniform(0.01, 0.1, 7), k=7, copies=int(rng.integers(2, 5)), n_img=20)
    for a in doc["annotations"]:  # several objects per image, and some records without the key
        a["image_id"] = 1 + a["object_id"] % 4
        a["object_id"] = a["object_id"] if rng.random() > 0.1 else None
    doc["images"] = [{"id": i, "width": 2300, "height": 2300} for i in range(1, 5)]
    gt = load_coco_gt(doc, need_keypoints=True)
    key = [a["object_id"] for a in doc["annotations"]]
    est = estimate_sigmas(pairs_from_repeats(gt, group_key=key), gt, "r")
    docs = {**doc, "annotations": [a for a in doc["annotations"] if a["object_id"] is not None]}
    assert np.allclose(est.sigmas[0], _naive(docs, "object_id"), rtol=1e-12, atol=0)


def test_a_models_errors_and_the_estimate_feeds_the_evaluation(tmp_path):
    rng = np.random.default_rng(4)
    tau = np.array([0.02, 0.04, 0.06])
    anns, dets = [], []
    for n, (img, box, kx, ky) in enumerate(_objects(rng, 400, 1, 3)):
        area = float(box[2] * box[3])
        anns.append(
            {"id": n + 1, "image_id": img, "category_id": 1, "iscrowd": 0, "bbox": box.tolist(), "area": area,
             "num_keypoints": 3, "keypoints": np.stack([kx, ky, [2] * 3], 1).reshape(-1).tolist()}
        )  # fmt: skip
        s = np.sqrt(area)
        dk = np.stack([kx + rng.normal(0, tau * s), ky + rng.normal(0, tau * s), [0.9] * 3], 1)
        dets.append({"image_id": img, "category_id": 1, "keypoints": dk.reshape(-1).tolist(), "score": 0.9})
        far = np.stack([kx + 5000, ky, [0.9] * 3], 1)  # a background detection matches nothing
        dets.append({"image_id": img, "category_id": 1, "keypoints": far.reshape(-1).tolist(), "score": 0.95})
    doc = {
        "images": [{"id": i, "width": 2300, "height": 2300} for i in range(1, 401)],
        "categories": [{"id": 1, "name": "thing", "keypoints": ["a", "b", "c"]}],
        "annotations": anns,
    }
    gt = load_coco_gt(doc, need_keypoints=True)
    res = load_coco_results(dets, gt, iou_type="keypoints")
    est = estimate_sigmas(pairs_from_results(gt, res), gt, "m")
    assert est.pairs[0] == 400
    assert np.allclose(est.sigmas[0], np.sqrt(2) * tau, rtol=0.1)
    # the printed spec is read back by the option, to the same doubles
    got = parse_sigmas_per_category(est.spec())
    assert got[1].tolist() == est.sigmas[0].tolist()
    ev = evaluate_coco(doc, dets, params={"iou_type": "keypoints", "kpt_oks_sigmas_per_category": est.spec()})
    assert ev.stats[0] > 0
    # the command
    (tmp_path / "gt.json").write_text(json.dumps(doc))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    out = tmp_path / "s.json"
    args = ["sigmas", str(tmp_path / "gt.json"), "--results", str(tmp_path / "dt.json")]
    assert main([*args, "--format", "json", "-o", str(out)]) == 0
    doc_out = json.loads(out.read_text())
    assert doc_out["spec"] == est.spec()
    assert doc_out["kpt_oks_sigmas_per_category"]["1"] == est.sigmas[0].tolist()
    txt = tmp_path / "s.txt"
    assert main([*args, "-o", str(txt)]) == 0
    text = txt.read_text()
    assert "--kpt-oks-sigmas-per-category '1:" in text and "  b " in text


def test_no_pairs_warns_and_gives_no_spec():
    doc = _repeated(1, np.array([0.05, 0.05]), k=2, copies=1, n_img=3)
    gt = load_coco_gt(doc, need_keypoints=True)
    est = estimate_sigmas(pairs_from_repeats(gt), gt, "r")
    assert est.spec() == ""
    assert est.warnings and "no pair" in est.warnings[0]
    assert np.isnan(est.sigmas).all()
