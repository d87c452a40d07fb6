"""COCO matching of one part of an evaluation (all of it, or some images or categories): per (image,
category) the greedy matching of pycocotools' ``evaluateImg`` at every IoU threshold, into a compact
:class:`~deteval.detection.coco_match.MatchTable` (:func:`match_coco`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from deteval.core.sorting import sorted_unique
from deteval.detection.coco.params import check_compat, id_selection, selected_positions
from deteval.detection.coco_iou import KeypointOks
from deteval.detection.coco_obb import obb_measure
from deteval.detection.coco_params import CocoParams
from deteval.detection.coco_rles import dt_rles, gt_rles, region_measure
from deteval.detection.keypoint_sigmas import category_variances
from deteval.errors import ConfigError, InputFormatError, ValidationError
from deteval.io.coco import CocoGroundTruth, CocoResults
from deteval.io.coco.keypoints import (
    category_keypoint_counts,
    check_keypoint_counts,
    keypoint_counts,
    several_counts,
)
from deteval.match import coco as coco_match
from deteval.match.coco import IouFn, MatchTable, match_groups

__all__ = ["KEYPOINT_PAIR_CHUNK", "match_coco"]


#: Pairs whose OKS is computed at once (about 6 MB of temporaries with 17 keypoints; from 4k to 20k pairs
#: the time is the same, larger chunks are slower, being out of cache).
KEYPOINT_PAIR_CHUNK = 8_000


def match_coco(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    compat: str = "pycocotools",
    images: np.ndarray | None = None,
    categories: np.ndarray | None = None,
    ranked: bool = False,
) -> tuple[MatchTable, dict[str, int], list[str]]:
    """Run the matching stage on columnar inputs; returns the compact :class:`MatchTable` plus counts.

    ``images``: optional indices (into the evaluated images, ascending id) of one shard; tables of disjoint
    shards merged with :func:`~deteval.detection.coco_match.merge_tables` accumulate to the full result.
    ``categories``: optional indices (into the evaluated categories, ascending id) to match alone (with
    ``use_cats``); the other categories then have no detection and no ground truth in the table.
    ``ranked``: the rows in accumulation's order (:func:`~deteval.detection.coco_match.match_groups`).
    """
    check_compat(compat)
    warnings: list[str] = []
    n_img, cat_sel, (g_img, g_cat, gmask), (d_img, d_cat, dmask) = _selection(
        gt, res, params, images, categories, warnings
    )
    n_cat_sel = int(cat_sel.shape[0])
    gkeep = np.arange(len(gt)) if gmask is None else np.flatnonzero(gmask)
    dkeep = np.arange(len(res)) if dmask is None else np.flatnonzero(dmask)
    # every record kept (the usual case): views instead of copies of every column
    gsel = slice(None) if gkeep.shape[0] == len(gt) else gkeep
    dsel = slice(None) if dkeep.shape[0] == len(res) else dkeep
    g_img, g_cat, d_img, d_cat = g_img[gsel], g_cat[gsel], d_img[dsel], d_cat[dsel]
    g_pos = gkeep.astype(np.int64)
    d_pos = dkeep.astype(np.int64)
    if params.use_cats:
        n_cats = n_cat_sel
        g_order, d_order = g_pos, d_pos
    else:  # one group per image; pycocotools concatenates its lists category by category, in catIds order
        n_cats = 1
        listed = _listing_order(gt, params, cat_sel)
        g_order = listed[g_cat] * (len(gt) + 1) + g_pos
        d_order = listed[d_cat] * (len(res) + 1) + d_pos
        g_cat = np.zeros_like(g_cat)
        d_cat = np.zeros_like(d_cat)

    crowd = gt.iscrowd[gsel]
    ignore = crowd.copy() if compat == "pycocotools" else crowd | gt.ignore[gsel]
    if params.iou_type == "keypoints":
        ignore = ignore | (gt.num_keypoints[gsel] == 0)

    iou_fn = _pair_measure(gt, res, params, compat, gsel, dsel, gkeep, dkeep, crowd, warnings)

    table = match_groups(
        n_imgs=n_img,
        n_cats=n_cats,
        iou_thrs=params.iou_thrs,
        area_rng=params.area_rng,
        max_det=params.max_dets[-1],
        d_img=d_img,
        d_cat=d_cat,
        d_score=res.score[dsel],
        d_order=d_order,
        d_area=res.area[dsel],
        g_img=g_img,
        g_cat=g_cat,
        g_order=g_order,
        g_area=gt.area[gsel],
        g_crowd=crowd,
        g_ignore=ignore,
        iou_fn=iou_fn,
        # OKS holds about half a dozen K-wide arrays per pair in flight (bbox IoU: a few numbers)
        pair_chunk=min(coco_match.PAIR_CHUNK, KEYPOINT_PAIR_CHUNK)
        if params.iou_type == "keypoints"
        else None,
        ranked=ranked,
    )
    counts = {
        "n_images": n_img,
        "n_categories": n_cat_sel,
        "n_gt": int(gkeep.shape[0]),
        "n_dt": int(dkeep.shape[0]),
        "n_dt_evaluated": len(table),
    }
    return table, counts, warnings


_Rows = tuple[np.ndarray, np.ndarray, np.ndarray | None]


def _selection(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    images: np.ndarray | None,
    categories: np.ndarray | None,
    warnings: list[str],
) -> tuple[int, np.ndarray, _Rows, _Rows]:
    """The evaluated images (their count) and categories (indices among the ground truth's), and per side
    (ground truth, results) every record's image and category index among the evaluated ones and the mask of
    the records in (None: every record)."""
    img_sel = id_selection(gt.image_ids, params.img_ids, "image")
    cat_sel = id_selection(gt.cat_ids, params.cat_ids, "category")
    img_map = selected_positions(img_sel, gt.image_ids.shape[0])
    cat_map = selected_positions(cat_sel, gt.cat_ids.shape[0])
    n_img = int(img_sel.shape[0])
    n_cat_sel = int(cat_sel.shape[0])

    # every image (category) evaluated, the default: the indices are their own map, every record is in
    # (no copy, no mask of the results' rows: each category run of a half of a large set reads them all)
    all_img, all_cat = n_img == gt.image_ids.shape[0], n_cat_sel == gt.cat_ids.shape[0]
    g_img, d_img = (gt.img, res.img) if all_img else (img_map[gt.img], img_map[res.img])
    g_cat, d_cat = (gt.cat, res.cat) if all_cat else (cat_map[gt.cat], cat_map[res.cat])
    gmask: np.ndarray | None = None
    dmask: np.ndarray | None = None
    if not (all_img and all_cat):
        gmask, dmask = (g_img >= 0) & (g_cat >= 0), (d_img >= 0) & (d_cat >= 0)
        if dmask.sum() < len(res):
            warnings.append(
                f"{len(res) - int(dmask.sum())} detections outside the selected images/categories "
                f"were not evaluated"
            )
    if images is not None and n_img:
        in_shard = np.zeros(n_img, dtype=bool)
        in_shard[np.asarray(images, dtype=np.int64)] = True
        gmask = _and(gmask, in_shard[g_img if all_img else np.maximum(g_img, 0)])
        dmask = _and(dmask, in_shard[d_img if all_img else np.maximum(d_img, 0)])
    if categories is not None and n_cat_sel:
        in_part = np.zeros(n_cat_sel, dtype=bool)
        in_part[np.asarray(categories, dtype=np.int64)] = True
        gmask = _and(gmask, in_part[g_cat if all_cat else np.maximum(g_cat, 0)])
        dmask = _and(dmask, in_part[d_cat if all_cat else np.maximum(d_cat, 0)])
    return n_img, cat_sel, (g_img, g_cat, gmask), (d_img, d_cat, dmask)


def _and(mask: np.ndarray | None, other: np.ndarray) -> np.ndarray:
    """``mask & other`` (in place), or ``other`` where there is no mask yet (every record in)."""
    if mask is None:
        return other
    mask &= other
    return mask


def _listing_order(gt: CocoGroundTruth, params: CocoParams, cat_sel: np.ndarray) -> np.ndarray:
    """Per selected category (index into ``cat_sel``), its position in pycocotools' pooled lists: with
    ``useCats=0`` pycocotools keeps ``params.catIds`` in the given order (it sorts them only with useCats) and
    lists ground truths and detections category by category in that order, which decides score and IoU ties."""
    if params.cat_ids is None:
        return np.arange(cat_sel.shape[0], dtype=np.int64)  # pycocotools' default: sorted(getCatIds())
    given = list(params.cat_ids)
    if len(given) != len(np.unique(np.asarray(given))):
        raise ConfigError(
            f"cat_ids {given} repeat an id: with use_cats=False pycocotools would list (and count) that "
            "category's objects and detections once per repetition"
        )
    known = np.isin(np.asarray(given), gt.cat_ids[cat_sel])  # unknown ids list nothing (unknown_id_notes)
    order = np.empty(cat_sel.shape[0], dtype=np.int64)
    order[np.searchsorted(gt.cat_ids[cat_sel], np.asarray(given)[known])] = np.arange(int(known.sum()))
    return order


def _pair_measure(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    compat: str,
    gsel: slice | np.ndarray,
    dsel: slice | np.ndarray,
    gkeep: np.ndarray,
    dkeep: np.ndarray,
    crowd: np.ndarray,
    warnings: list[str],
) -> IouFn:
    """The IoU (bbox, segm, boundary) or OKS (keypoints) of (detection, ground truth) pairs of the kept rows, as the
    matcher asks for them (``gsel``/``dsel``: the kept rows, a slice where every row is kept)."""
    if params.iou_type == "bbox":
        # (np.take: a quarter of the time of res.bbox[dkeep] for rows of 4)
        dbox = res.bbox if isinstance(dsel, slice) else np.take(res.bbox, dsel, axis=0)
        gbox = gt.bbox if isinstance(gsel, slice) else np.take(gt.bbox, gsel, axis=0)
        return region_measure(params, dbox, gbox, crowd)
    if params.iou_type == "obb":
        return obb_measure(gt, res, gsel, dsel, crowd)
    if params.iou_type == "keypoints":
        return _keypoint_measure(gt, res, params, compat, gsel, dsel, warnings)
    grles = gt_rles(gt, gkeep)
    return region_measure(params, dt_rles(res, dkeep, gt), grles, crowd)


def _keypoint_measure(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    compat: str,
    gsel: slice | np.ndarray,
    dsel: slice | np.ndarray,
    warnings: list[str],
) -> IouFn:
    """OKS of (detection, ground truth) pairs, after checking both sides hold as many keypoints as sigmas."""
    if res.keypoints is None or gt.keypoints is None:
        raise InputFormatError("keypoints evaluation needs keypoints in the ground truth and the results")
    # (a half's detections: their x and y taken from the whole matrix, without a copy of their rows)
    d_rows = None if isinstance(dsel, slice) else dsel
    if several_counts(gt.keypoints, res.keypoints):
        used = sorted_unique(np.sort(np.concatenate((gt.cat[gsel], res.cat[dsel]))))
        oks = _mixed_oks(gt, res, params, (gsel, d_rows, used))
    else:
        sig = params.kpt_oks_sigmas
        variances = _category_variances(gt, res, params, gsel, dsel)
        if variances is not None:  # (each category's sigmas were checked against the keypoints' count)
            sig = np.ones(gt.keypoints.shape[1] // 3 if len(gt) else res.keypoints.shape[1] // 3)
        for side, kp, has in ((res, res.keypoints, "results have"), (gt, gt.keypoints, "ground truth has")):
            if len(side) and kp.shape[1] != 3 * sig.shape[0]:
                raise ValidationError(
                    f"{has} {kp.shape[1] // 3} keypoints, sigmas {sig.shape[0]}", file=side.source
                )
        per_gt = None if variances is None else (variances, gt.cat[gsel])
        oks = KeypointOks(
            res.keypoints, gt.keypoints[gsel], gt.bbox[gsel], gt.area[gsel], sig, d_rows, per_gt
        )
    # pairs certainly below the lowest threshold the matcher uses are never candidates: not computed
    lowest = float(np.minimum(params.iou_thrs, 1 - 1e-10).min())

    if not params.use_cats and compat == "pycocotools":
        warnings.append(
            "keypoints with use_cats=False: pycocotools' computeOks ignores useCats and reads the ground "
            "truth of category -1, which is empty, so no detection is ever matched and AP is 0 where there "
            "is ground truth; reproduced here (compat='fixed' pools the categories instead)"
        )

        def no_pair(
            di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
        ) -> np.ndarray:
            return np.full(di.shape[0], -np.inf)  # no pair is ever a candidate, at any threshold

        return no_pair

    def keypoint_oks(
        di: np.ndarray, gi: np.ndarray, bs: np.ndarray, bnd: np.ndarray, bng: np.ndarray
    ) -> np.ndarray:
        return oks(di, gi, below=lowest)

    return keypoint_oks


def category_counts(gt: CocoGroundTruth, res: CocoResults) -> np.ndarray:
    """Each category's keypoint count K_c (in the order of ``gt.cat_ids``): the length of its record's
    ``keypoints`` name list when it has one, else its annotations' (else its detections') common length; 0
    for a category with none of these. Every annotation and detection of a category must have K_c keypoints
    (:func:`~deteval.io.coco.keypoints.check_keypoint_counts` names the first that has not)."""
    assert gt.keypoints is not None and res.keypoints is not None
    gk, dk = keypoint_counts(gt.keypoints), keypoint_counts(res.keypoints)
    kc, named = category_keypoint_counts(gt.cat_ids, gt.category_records, gt.cat, gk)
    from_dt, _ = category_keypoint_counts(gt.cat_ids, None, res.cat, dk)
    kc = np.where(kc > 0, kc, from_dt)
    rows = gt.file_rows
    check_keypoint_counts(
        kc, named, gt.cat_ids, (gt.cat, gk), gt.source,
        lambda i: f"annotations[{int(rows[i]) if rows is not None else i}]",
    )  # fmt: skip
    check_keypoint_counts(kc, named, gt.cat_ids, (res.cat, dk), res.source, int)
    return kc


def _mixed_oks(
    gt: CocoGroundTruth, res: CocoResults, params: CocoParams, rows: tuple[Any, np.ndarray | None, np.ndarray]
) -> KeypointOks:
    """OKS where categories have skeletons of different sizes K_c: every row padded to the widest, each pair
    measured on its category's first K_c keypoints with its K_c sigmas (``computeOks`` run per category).
    ``rows``: the ground truths' selection, the detections' rows (None: all) and the categories of the rows
    compared (whose sigmas must number K_c)."""
    gsel, d_rows, used = rows
    assert gt.keypoints is not None and res.keypoints is not None
    if not params.use_cats:
        raise ConfigError(
            "keypoints of categories with different keypoint counts need use_cats (OKS compares a "
            "detection with a ground truth of its own category only)"
        )
    kc = category_counts(gt, res)
    table = category_variances(
        gt.cat_ids,
        params.kpt_oks_sigmas,
        params.kpt_oks_sigmas_per_category,
        gt.category_records,
        gt.source,
        kc,
        used,
    )
    assert table is not None
    width = 3 * table.shape[1]
    gkp, dkp = (_widen(m, width) for m in (gt.keypoints, res.keypoints))
    gcat = gt.cat[gsel]
    return KeypointOks(
        dkp,
        gkp[gsel],
        gt.bbox[gsel],
        gt.area[gsel],
        np.ones(table.shape[1]),
        d_rows,
        (table, gcat),
        kc.take(gcat),
    )


def _widen(mat: np.ndarray, width: int) -> np.ndarray:
    """``mat`` padded with NaN columns to ``width`` (no copy when it has that width)."""
    if mat.shape[1] == width:
        return mat
    out = np.full((mat.shape[0], width), np.nan)
    out[:, : mat.shape[1]] = mat
    return out


def _category_variances(
    gt: CocoGroundTruth,
    res: CocoResults,
    params: CocoParams,
    gsel: slice | np.ndarray,
    dsel: slice | np.ndarray,
) -> np.ndarray | None:
    """Per category of the ground truth, the ``(2σ)²`` of its own sigmas (:mod:`deteval.detection.keypoint_sigmas`),
    or None where every category takes ``kpt_oks_sigmas``. The categories of the kept rows must have as many
    sigmas as the keypoints."""
    given = params.kpt_oks_sigmas_per_category
    if not given and not gt.category_records:
        return None
    n_kp = (gt.keypoints.shape[1] if len(gt) else res.keypoints.shape[1]) // 3  # type: ignore[union-attr]
    # (np.union1d: np.unique, which imports numpy.ma on first use)
    used = sorted_unique(np.sort(np.concatenate((gt.cat[gsel], res.cat[dsel]))))
    return category_variances(
        gt.cat_ids, params.kpt_oks_sigmas, given, gt.category_records, gt.source, n_kp, used
    )
