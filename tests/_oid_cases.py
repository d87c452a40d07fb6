"""Open Images: seeded random challenge-shaped cases and a plain per-image reference of the TF OD API rules.

The reference is written from the rules (``OpenImagesChallengeEvaluator`` with group-of weight 1): one image at
a time, one class at a time, the two matching stages as loops over detections, the all-point AP with its
explicit backward loop. It shares no code with deteval's vectorised implementation.
"""

from __future__ import annotations

import numpy as np

HIERARCHY = {
    "LabelName": "/m/root",
    "Subcategory": [
        {"LabelName": "/m/animal", "Subcategory": [{"LabelName": "/m/dog"}, {"LabelName": "/m/cat"}]},
        {"LabelName": "/m/vehicle", "Subcategory": [{"LabelName": "/m/car"}, {"LabelName": "/m/bus"}]},
        {"LabelName": "/m/pet", "Subcategory": [{"LabelName": "/m/dog"}]},  # dog has two parents
        {"LabelName": "/m/tree"},
    ],
}
LEAVES = ["/m/dog", "/m/cat", "/m/car", "/m/bus", "/m/tree"]
ALL = ["/m/animal", "/m/dog", "/m/cat", "/m/vehicle", "/m/car", "/m/bus", "/m/pet", "/m/tree"]


def oid_box(img, label, x0, x1, y0, y1, group=0) -> dict:
    """A ground-truth box row of the challenge CSV."""
    return {
        "ImageID": img,
        "LabelName": label,
        "XMin": x0,
        "XMax": x1,
        "YMin": y0,
        "YMax": y1,
        "IsGroupOf": group,
    }


def oid_det(img, label, score, x0, x1, y0, y1) -> dict:
    """A prediction row of the challenge CSV."""
    return {
        "ImageID": img,
        "LabelName": label,
        "Score": score,
        "XMin": x0,
        "XMax": x1,
        "YMin": y0,
        "YMax": y1,
    }


def _relatives():
    up: dict = {}
    down: dict = {}

    def walk(node, path):
        name = node["LabelName"]
        below = set()
        for ch in node.get("Subcategory", []):
            below |= walk(ch, path + [name])
        if path:
            up.setdefault(name, set()).update(path[1:])
            down.setdefault(name, set()).update(below)
            return below | {name}
        return below

    walk(HIERARCHY, [])
    return up, down


def random_oid_case(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n_img = int(rng.integers(1, 7))
    images = [f"{int(v):016x}" for v in rng.choice(2**40, n_img, replace=False)]
    score_round = int(rng.choice([1, 2, 6]))
    boxes, labels, preds = [], [], []

    def box(rng):
        x0, y0 = rng.uniform(0, 0.8, 2)
        w, h = rng.uniform(0.02, 0.5, 2)
        return [
            round(float(x0), 3),
            round(float(min(x0 + w, 1.0)), 3),
            round(float(y0), 3),
            round(float(min(y0 + h, 1.0)), 3),
        ]

    for im in images:
        for _ in range(int(rng.integers(0, 6))):
            xa, xb, ya, yb = box(rng)
            boxes.append(
                {
                    "ImageID": im,
                    "LabelName": str(rng.choice(LEAVES)),
                    "XMin": xa,
                    "XMax": xb,
                    "YMin": ya,
                    "YMax": yb,
                    "IsGroupOf": int(rng.random() < 0.25),
                }
            )
            if rng.random() < 0.1:
                boxes.append(dict(boxes[-1]))  # a duplicate box: IoU ties between boxes
        for lab in rng.choice(LEAVES + ["/m/animal", "/m/vehicle"], int(rng.integers(0, 4)), replace=False):
            labels.append({"ImageID": im, "LabelName": str(lab), "Confidence": int(rng.random() < 0.6)})
    for b in boxes:
        for _ in range(int(rng.integers(0, 4))):
            j = [v + float(rng.normal(0, 0.03)) for v in (b["XMin"], b["XMax"], b["YMin"], b["YMax"])]
            if rng.random() < 0.2:  # inside a group-of box: IoA 1
                cx, cy = (b["XMin"] + b["XMax"]) / 2, (b["YMin"] + b["YMax"]) / 2
                j = [cx - 0.01, cx + 0.01, cy - 0.01, cy + 0.01]
            lab = b["LabelName"] if rng.random() < 0.8 else str(rng.choice(ALL))
            preds.append({"ImageID": b["ImageID"], "LabelName": lab, "Score": round(float(rng.random()), score_round),
                          "XMin": round(j[0], 4), "XMax": round(j[1], 4), "YMin": round(j[2], 4), "YMax": round(j[3], 4)})  # fmt: skip
    for im in images + ["ffffffffffffffff"]:  # the last image has no ground truth at all
        for _ in range(int(rng.integers(0, 8))):
            xa, xb, ya, yb = box(rng)
            if rng.random() < 0.05:
                xb = xa  # invalid: dropped
            s = round(float(rng.random()), score_round) if rng.random() > 0.05 else -10.0
            preds.append({"ImageID": im, "LabelName": str(rng.choice(ALL)), "Score": s,
                          "XMin": xa, "XMax": xb, "YMin": ya, "YMax": yb})  # fmt: skip
    rng.shuffle(preds)
    return {"boxes": boxes, "labels": labels, "preds": preds, "expand_dets": bool(rng.random() < 0.3)}


def _voc_ap(precision, recall):
    if precision.size == 0:
        return 0.0
    rec = np.concatenate([[0], recall, [1]])
    prec = np.concatenate([[0], precision, [0]])
    for i in range(len(prec) - 2, -1, -1):
        prec[i] = np.maximum(prec[i], prec[i + 1])
    idx = np.where(rec[1:] != rec[:-1])[0] + 1
    return np.sum((rec[idx] - rec[idx - 1]) * prec[idx])


def _iou(d, g):
    ih = max(0.0, min(d[2], g[2]) - max(d[0], g[0]))
    iw = max(0.0, min(d[3], g[3]) - max(d[1], g[1]))
    inter = ih * iw
    da = (d[2] - d[0]) * (d[3] - d[1])
    ga = (g[2] - g[0]) * (g[3] - g[1])
    return inter / ((da + ga) - inter), inter / da


def reference_oid(case: dict, classes: list[str], expand: bool = True) -> tuple[float, np.ndarray]:
    """(mAP, per-class AP) by the TF rules, one image and one class at a time."""
    up, down = _relatives()
    boxes, labels, preds = [], [], []
    for b in case["boxes"]:
        for lab in [b["LabelName"]] + (sorted(up[b["LabelName"]]) if expand else []):
            boxes.append({**b, "LabelName": lab})
    for lab_row in case["labels"]:
        rel = up if lab_row["Confidence"] == 1 else down
        for lab in [lab_row["LabelName"]] + (sorted(rel[lab_row["LabelName"]]) if expand else []):
            labels.append({**lab_row, "LabelName": lab})
    for p in case["preds"]:
        for lab in [p["LabelName"]] + (sorted(up[p["LabelName"]]) if expand and case["expand_dets"] else []):
            preds.append({**p, "LabelName": lab})
    C = len(classes)
    cid = {c: i for i, c in enumerate(classes)}
    scores_pc: list = [[] for _ in range(C)]
    tp_pc: list = [[] for _ in range(C)]
    n_gt = np.zeros(C)
    for im in sorted({b["ImageID"] for b in boxes} | {lab["ImageID"] for lab in labels}):
        gts = [b for b in boxes if b["ImageID"] == im]
        ok = {cid[b["LabelName"]] for b in gts} | {
            cid[lab["LabelName"]] for lab in labels if lab["ImageID"] == im
        }
        dets = [p for p in preds if p["ImageID"] == im and cid[p["LabelName"]] in ok]
        dets = [p for p in dets if p["YMin"] < p["YMax"] and p["XMin"] < p["XMax"]]
        for b in gts:
            n_gt[cid[b["LabelName"]]] += 1
        for c in range(C):
            dc = [p for p in dets if cid[p["LabelName"]] == c]
            gc = [b for b in gts if cid[b["LabelName"]] == c]
            dc = [p for p in dc if p["Score"] > -10.0]
            if not dc:
                continue
            s = np.array([p["Score"] for p in dc], dtype=float)
            order = np.argsort(s)[::-1][:10000]
            dc = [dc[i] for i in order]
            scores = s[order]
            db = [[p["YMin"], p["XMin"], p["YMax"], p["XMax"]] for p in dc]
            if not gc:
                scores_pc[c].append(scores)
                tp_pc[c].append(np.zeros(len(dc)))
                continue
            reg = [[b["YMin"], b["XMin"], b["YMax"], b["XMax"]] for b in gc if not b["IsGroupOf"]]
            grp = [[b["YMin"], b["XMin"], b["YMax"], b["XMax"]] for b in gc if b["IsGroupOf"]]
            tp = np.zeros(len(dc), bool)
            matched_group = np.zeros(len(dc), bool)
            if reg:
                taken = np.zeros(len(reg), bool)
                for i, d in enumerate(db):
                    ious = [_iou(d, g)[0] for g in reg]
                    j = int(np.argmax(ious))
                    if ious[j] >= 0.5 and not taken[j]:
                        tp[i] = True
                        taken[j] = True
            group_scores = np.zeros(len(grp))
            if grp:
                for i, d in enumerate(db):
                    if tp[i]:
                        continue
                    ioas = [_iou(d, g)[1] for g in grp]
                    j = int(np.argmax(ioas))
                    if ioas[j] >= 0.5:
                        matched_group[i] = True
                        group_scores[j] = max(group_scores[j], scores[i])
            keep = ~matched_group
            sel = group_scores > 0
            scores_pc[c].append(np.concatenate([scores[keep], group_scores[sel]]))
            tp_pc[c].append(np.concatenate([tp[keep].astype(float), np.ones(int(sel.sum()))]))
    ap = np.full(C, np.nan)
    for c in range(C):
        if n_gt[c] == 0:
            continue
        s = np.concatenate(scores_pc[c]) if scores_pc[c] else np.zeros(0)
        t = np.concatenate(tp_pc[c]) if tp_pc[c] else np.zeros(0)
        o = np.argsort(s)[::-1]
        t = t[o]
        ctp, cfp = np.cumsum(t), np.cumsum((t <= 0).astype(float))
        ap[c] = _voc_ap(ctp / (ctp + cfp), ctp / n_gt[c])
    return float(np.nanmean(ap)), ap
