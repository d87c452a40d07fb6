"""A match table written in accumulation's order (``ranked``, issue 15: what each category half of a two-core
evaluation builds) is the ordinary table with its rows permuted by accumulation's own ranking, and accumulates
to the same bits; so do its category shards, and the image shards it falls back to when one category alone
is larger than a shard. The ordinary tables are tied to the reference tools by the differential tests."""

from __future__ import annotations

import numpy as np
import pytest
from _coco_cases import random_case, random_keypoints_case, random_segm_case

import deteval.detection.coco as coco
import deteval.detection.coco.parts as coco_parts
import deteval.detection.coco_accumulate as coco_accumulate
from deteval.core.sorting import lex_order
from deteval.detection.coco_accumulate import accumulate
from deteval.detection.coco_params import CocoParams
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.match.coco import MatchTable

CASES = {
    "bbox": random_case,
    "segm": random_segm_case,
    "keypoints": random_keypoints_case,
}
FIELDS = ("cat", "img", "score", "rank")


def _inputs(iou_type: str, seed: int, max_dets: list[int]):
    case = CASES[iou_type](seed)
    options = {k: v for k, v in dict(case.get("params", {})).items() if k != "max_dets"}
    p = CocoParams.from_options(iou_type, max_dets=max_dets, **options)
    g = load_coco_gt(case["gt"], keep_segmentation=iou_type == "segm", need_keypoints=iou_type == "keypoints")
    r = load_coco_results(case["dt"], g, iou_type=iou_type)
    return g, r, p


def _same_arrays(a, b) -> None:
    for x, y in zip(a, b):
        assert x.shape == y.shape and np.array_equal(x, y)


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("iou_type", sorted(CASES))
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("max_dets", [[1, 10, 100], [1, 2, 3]])
def test_a_ranked_table_is_the_table_in_accumulation_order(iou_type, seed, max_dets):
    g, r, p = _inputs(iou_type, seed, max_dets)
    if not p.use_cats:
        return
    n_sel = coco.id_selection(g.cat_ids, p.cat_ids, "category").shape[0]
    for part in (None, np.arange(0, n_sel, 2)):
        plain, counts, warnings = coco.match_coco(g, r, p, categories=part)
        ranked, counts_r, warnings_r = coco.match_coco(g, r, p, categories=part, ranked=True)
        assert ranked.ranked and (counts_r, warnings_r) == (counts, warnings)
        order = lex_order((-plain.score, plain.cat))
        assert len(ranked) == len(plain)
        for f in FIELDS:
            assert np.array_equal(getattr(ranked, f), getattr(plain, f)[order])
        assert np.array_equal(ranked.tp, plain.tp[:, :, order])
        assert np.array_equal(ranked.ig, plain.ig[:, :, order])
        assert np.array_equal(ranked.npig, plain.npig)
        _same_arrays(accumulate(ranked, p.rec_thrs, p.max_dets), accumulate(plain, p.rec_thrs, p.max_dets))


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(6))
def test_ranked_shards_of_categories_and_of_images(seed, monkeypatch):
    """Small shards: a category half matches runs of categories (each table ranked), or, below the largest
    category's detections, shards of images (a table not ranked); either accumulates to the one-call numbers,
    also a few thresholds at a time."""
    g, r, p = _inputs("bbox", 100 + seed, [1, 10, 100])
    n_sel = coco.id_selection(g.cat_ids, p.cat_ids, "category").shape[0]
    part = np.arange(n_sel)
    whole = accumulate(coco.match_coco(g, r, p, categories=part)[0], p.rec_thrs, p.max_dets)
    per_cat = coco_parts.per_category(
        r, coco.id_selection(g.cat_ids, p.cat_ids, "category"), g.cat_ids.shape[0]
    )
    if not p.use_cats or len(r) < 2:
        return
    tables: list = []  # (the tables accumulated)
    for shard, ranked in ((int(per_cat.max()), True), (max(1, int(per_cat.max()) - 1), False)):
        for items in (None, 3):
            monkeypatch.setattr(coco_parts, "SHARD_DETECTIONS", shard)
            if items is not None:
                monkeypatch.setattr(coco_accumulate, "LIST_ITEMS", items)
            tables.clear()
            monkeypatch.setattr(
                coco_parts, "accumulate", lambda t, *a, **k: tables.append(t) or accumulate(t, *a, **k)
            )
            arrays, counts, _ = coco_parts.accumulate_categories(g, r, p, "pycocotools", part)
            assert tables and all(t.ranked == ranked for t in tables) and counts["n_dt"] == len(r)
            _same_arrays(arrays, whole)
            monkeypatch.undo()


def test_category_shards_cut_between_categories(monkeypatch):
    """Runs of consecutive categories holding at most SHARD_DETECTIONS detections each; None when one category
    alone holds more."""
    g, r, p = _inputs("bbox", 3, [1, 10, 100])
    cat_sel = coco.id_selection(g.cat_ids, p.cat_ids, "category")
    per_cat = coco_parts.per_category(r, cat_sel, g.cat_ids.shape[0])
    part = np.arange(cat_sel.shape[0])
    monkeypatch.setattr(coco_parts, "SHARD_DETECTIONS", int(per_cat.max()))
    runs = coco_parts.category_shards(r, cat_sel, g, part)
    assert runs is not None and np.array_equal(np.concatenate(runs), part)
    assert all(per_cat[run].sum() <= per_cat.max() for run in runs)
    monkeypatch.setattr(coco_parts, "SHARD_DETECTIONS", int(per_cat.max()) - 1)
    assert coco_parts.category_shards(r, cat_sel, g, part) is None


def test_a_ranked_table_of_many_images_is_permuted():
    """Several images and categories with scores interleaved across images: the ranked rows are not the group
    order, and still the same table and numbers."""
    rng = np.random.default_rng(7)
    anns, dets = [], []
    for i in range(60):
        img, cat = int(rng.integers(1, 21)), int(rng.integers(1, 4))
        x, y, w, h = (float(v) for v in rng.uniform(5, 60, 4).round(1))
        anns.append(
            {
                "id": i + 1,
                "image_id": img,
                "category_id": cat,
                "bbox": [x, y, w, h],
                "area": w * h,
                "iscrowd": 0,
            }
        )
        for _ in range(3):
            j = rng.normal(0, 3, 4).round(1)
            box = [float(v) for v in (x + j[0], y + j[1], abs(w + j[2]), abs(h + j[3]))]
            dets.append(
                {"image_id": img, "category_id": cat, "bbox": box, "score": round(float(rng.random()), 2)}
            )
    gt = {
        "images": [{"id": i, "height": 100, "width": 100} for i in range(1, 21)],
        "categories": [{"id": c} for c in (1, 2, 3)],
        "annotations": anns,
    }
    g = load_coco_gt(gt)
    r = load_coco_results(dets, g)
    p = CocoParams.from_options("bbox", max_dets=[1, 2, 100])
    plain = coco.match_coco(g, r, p)[0]
    ranked = coco.match_coco(g, r, p, ranked=True)[0]
    order = lex_order((-plain.score, plain.cat))
    assert not np.array_equal(order, np.arange(len(order)))
    for f in FIELDS:
        assert np.array_equal(getattr(ranked, f), getattr(plain, f)[order])
    assert np.array_equal(ranked.tp, plain.tp[:, :, order]) and ranked.tp.any()
    assert np.array_equal(ranked.ig, plain.ig[:, :, order])
    _same_arrays(accumulate(ranked, p.rec_thrs, p.max_dets), accumulate(plain, p.rec_thrs, p.max_dets))


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(6))
def test_tables_of_image_shards_concatenated_rank_as_one(seed):
    """A table of consecutive image shards, each in group order, concatenated (LVIS merges its parts so): the
    ranking is np.lexsort's by (category, -score, image, rank) and the numbers are the one table's; a table
    whose rows are in no such order still ranks as np.lexsort does."""
    g, r, p = _inputs("bbox", 200 + seed, [1, 10, 100])
    plain = coco.match_coco(g, r, p)[0]
    if len(plain) < 3:
        return
    shard = plain.img * 3 // (int(plain.img.max()) + 1)  # three shards of consecutive images
    rng = np.random.default_rng(seed)
    for rows in (np.lexsort((plain.rank, plain.img, plain.cat, shard)), rng.permutation(len(plain))):
        table = MatchTable(
            cat=plain.cat[rows],
            img=plain.img[rows],
            score=plain.score[rows],
            rank=plain.rank[rows],
            tp=plain.tp[:, :, rows],
            ig=plain.ig[:, :, rows],
            npig=plain.npig,
            n_cats=plain.n_cats,
        )
        order = coco_accumulate._ranking_order(table)
        assert order is not None
        assert np.array_equal(order, np.lexsort((table.rank, table.img, -table.score, table.cat)))
        _same_arrays(accumulate(table, p.rec_thrs, p.max_dets), accumulate(plain, p.rec_thrs, p.max_dets))
