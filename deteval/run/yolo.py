"""Score a YOLO dataset split under one profile: ``coco``, ``supervision`` or an Ultralytics era.

* ``coco``: pycocotools' COCOeval (deteval's exact port) on the dataset converted to COCO (no crowds, area
  = box area in pixels, maxDets 1/10/100), bit for bit.
* ``supervision``: supervision ≥ 0.26 ``MeanAveragePrecision`` (see :mod:`.supervision_profile`).
* ``ultralytics-8.0``, ``ultralytics-8.4.37``, ``ultralytics-8.4.176`` (``ultralytics`` = the newest):
  ``yolo val``'s box metrics (see :mod:`.ultralytics`).

Oriented boxes (``task="obb"``): ``coco`` is the COCO-style OBB protocol (the rotated polygon IoU,
:mod:`deteval.detection.coco_obb`); the Ultralytics profiles are the OBB validator's metrics (ProbIoU);
``dota_devkit`` is the DOTA devkit's Task1 AP (:mod:`deteval.detection.dota`: polygon IoU **>** t, VOC07
11 points, numpy's unstable ranking; no difficult objects in a YOLO dataset).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from deteval.core.levels import COCO_IOU_THRESHOLDS
from deteval.core.sorting import distinct
from deteval.detection.coco import DET_STAT_NAMES
from deteval.detection.dota import PROFILE as DOTA_DEVKIT
from deteval.detection.supervision_profile import supervision_from_coco
from deteval.detection.ultralytics import (
    ALIASES,
    PROFILES,
    MatchedSet,
    PairIou,
    RankedMatches,
    UltralyticsMetrics,
    UltralyticsRules,
    get_rules,
    match_split,
    obb_pair_iou,
    with_counts,
)
from deteval.errors import ConfigError, DetevalError
from deteval.io.coco import CocoGroundTruth, CocoResults, load_coco_gt, load_coco_results
from deteval.io.guards import image_header
from deteval.io.yolo import (
    PredictionRows,
    YoloDataset,
    for_exif_rule,
    load_yolo_dataset,
    load_yolo_predictions,
    normalized_predictions,
    read_prediction_rows,
)
from deteval.io.yolo_coco import coco_tables, dataset_to_coco, predictions_to_coco
from deteval.io.yolo_obb import load_yolo_obb, obb_corners
from deteval.results import EvalResult, PRCurve
from deteval.run.coco import evaluate_coco
from deteval.run.dota import evaluate_dota
from deteval.run.forked import Forked, fork_call
from deteval.run.pages import small_pages
from deteval.tables.boxes import BoxTable
from deteval.tables.quads import corners_obb, obb_quads
from deteval.tables.voc import VOCDetections, VOCGroundTruth

PROFILE_NAMES = ("coco", "supervision", *PROFILES, *ALIASES, DOTA_DEVKIT)
#: From this many detections on, the Ultralytics metrics are computed on two cores (:func:`ultralytics_metrics`):
#: below it a fork and the halves' pickling cost more than they save
FORK_DETECTIONS = 100_000
#: The share of a split's images (the last ones) whose headers the child that reads the prediction files reads
#: after them, where images are opened only for their sizes (:func:`load_split_and_predictions`): the child's
#: reading is shorter than this process's (the labels, the other images' headers)
CHILD_HEADERS = 0.2
#: What a YOLO dataset's rows are: boxes (or polygons), oriented boxes, poses (Ultralytics' task names)
TASKS = ("detect", "obb", "pose")


def canonical_profile(name: str) -> str:
    """The profile a name denotes (``ultralytics`` → the newest era); unknown names are a ConfigError."""
    if name not in PROFILE_NAMES:
        raise ConfigError(f"unknown profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}")
    return ALIASES.get(name, name)


def is_ultralytics(profile: str) -> bool:
    return canonical_profile(profile).startswith("ultralytics")


@dataclass
class YoloResult(EvalResult):
    """The common :class:`~deteval.results.EvalResult` (protocol ``"yolo"``) of one profile.

    ``summary`` holds the metrics only: ``mAP50-95``, ``mAP50``, ``mAP75``; ``precision`` and ``recall``
    where the profile defines them (the Ultralytics ones: at the confidence of maximum class-mean F1); under
    ``coco`` also pycocotools' twelve numbers by name (``AP``, ``AP50``, ..., ``ARl``). ``per_class``: class
    name → ``AP50-95``, ``AP50``, ``AP75``, (``P``, ``R``), ``images``, ``instances``, for the classes the
    profile averages over. ``curves``: the PR curve at IoU 0.5 per class. ``profile``, ``iou_type``,
    ``n_images`` and ``instances`` describe the run; the JSON document holds them as top-level fields
    (``profile``, ``iou_type``, ``images``, ``instances``), which a result read back keeps in its summary.
    """

    profile: str = ""
    iou_type: str = "bbox"
    n_images: int = 0
    instances: int = 0
    #: ``coco`` and ``supervision`` box profiles: the COCO evaluation and the tables it scored (what the
    #: counts of precision and recall are read from); not part of the document
    coco_run: tuple[Any, CocoGroundTruth, CocoResults] | None = field(default=None, repr=False, compare=False)

    @property
    def stats(self) -> list[float] | None:
        """pycocotools' twelve numbers (``coco`` profile), else None."""
        if "AP" not in self.summary:
            return None
        return [float(self.summary[n]) for n in DET_STAT_NAMES]

    def to_dict(self, *, include_curves: bool = False) -> dict[str, Any]:
        """The common document, with the run's ``profile``, ``iou_type``, ``images`` and ``instances``."""
        out = super().to_dict(include_curves=include_curves)
        head = {"profile": self.profile, "iou_type": self.iou_type}
        return {
            "protocol": out.pop("protocol"),
            **head,
            "images": self.n_images,
            "instances": self.instances,
            **out,
        }


def yolo_result(
    ds: YoloDataset,
    profile: str,
    iou_type: str,
    summary: dict[str, Any],
    rows: list[tuple[int, dict[str, Any]]],
    curves: dict[int, PRCurve],
    *,
    warnings: list[str] | None = None,
    counts_first: bool = False,
) -> YoloResult:
    """The common YOLO result of the class ``rows`` (class index, its metrics) and ``curves`` of a split.

    ``per_class`` is keyed by class name (a second class of one name gets `` (class c)``); each row holds its
    metrics and the class's ``images`` and ``instances`` (before the metrics with ``counts_first``, the
    pose tables' order). ``warnings``: the split's unless given."""
    per_class: dict[str, dict[str, Any]] = {}
    named_curves: dict[str, PRCurve] = {}
    for c, row in rows:
        mine = ds.labels.cls == c
        counts = {"images": len(distinct(ds.labels.img[mine])), "instances": int(mine.sum())}
        key = ds.names[c]
        while key in per_class:  # two classes with one name: keep both rows
            key = f"{key} (class {c})"
        per_class[key] = {**counts, **row} if counts_first else {**row, **counts}
        if c in curves:
            named_curves[key] = curves[c]
    return YoloResult(
        protocol="yolo",
        summary=summary,
        per_class=per_class,
        curves=named_curves,
        warnings=list(ds.warnings) if warnings is None else warnings,
        profile=profile,
        iou_type=iou_type,
        n_images=ds.n_images,
        instances=len(ds.labels),
    )


@small_pages()  # (huge pages fault in slowly: see deteval.run.pages)
def load_dataset(
    data_yaml: str | os.PathLike[str],
    split: str,
    profile: str,
    *,
    check_images: bool = True,
    listed: Callable[[YoloDataset], None] | None = None,
) -> YoloDataset:
    """The split as ``profile`` reads it (:func:`split_reading`). ``listed``: as
    :func:`~deteval.io.yolo.load_yolo_dataset` takes it."""
    return load_yolo_dataset(data_yaml, split, listed=listed, **split_reading(profile, check_images))


def split_reading(profile: str, check_images: bool = True) -> dict[str, Any]:
    """How ``profile`` reads a split (the ``duplicates`` and ``check_images`` of
    :func:`~deteval.io.yolo.load_yolo_dataset`): under an Ultralytics profile, exact duplicate labels and
    corrupt images (:mod:`deteval.io.yolo_images`, the era's check, in every task) left out with a warning,
    as Ultralytics does; under the others a duplicate label is an error, and images are opened only where a
    size is needed (an unreadable one is an error). ``check_images=False``: no image check under any
    profile."""
    ultra = is_ultralytics(profile)
    era = get_rules(profile).images if ultra and check_images else None
    return {"duplicates": "drop" if ultra else "error", "check_images": era}


@small_pages()  # (huge pages fault in slowly: see deteval.run.pages)
def load_split_and_predictions(
    data_yaml: str | os.PathLike[str],
    predictions: str | os.PathLike[str],
    split: str,
    profile: str,
    *,
    check_images: bool = True,
) -> tuple[YoloDataset, BoxTable]:
    """The split (:func:`load_dataset`) and its predictions (:func:`~deteval.io.yolo.load_yolo_predictions`);
    once the split's images are listed, a folder of prediction files is read
    (:func:`~deteval.io.yolo.read_prediction_rows`) by a forked child while this process reads the split
    (:func:`~deteval.run.forked.fork_call`: where a second CPU is idle), its rows checked and placed on the
    split's images there too (:func:`~deteval.io.yolo.normalized_predictions`), then scaled here. Where
    images are opened only for their sizes (no image check), the child then reads the headers of the last
    ``CHILD_HEADERS`` of the images, and this process those of the other labelled images while it waits. The
    same tables, warnings and errors as one process reads them (a child that fails or meets a fault leaves
    the reading to this process)."""
    child: Forked | None = None
    cut = n_listed = 0

    def listed(split_ds: YoloDataset) -> None:
        nonlocal child, cut, n_listed
        checked = is_ultralytics(profile) and check_images  # (every header read by the image check)
        n_listed = n = split_ds.n_images
        cut = n if checked else n - int(n * CHILD_HEADERS)
        child = fork_call(_predictions_and_headers, predictions, split_ds, cut)

    try:
        ds = load_dataset(
            data_yaml,
            split,
            profile,
            check_images=check_images,
            listed=listed if os.path.isdir(predictions) else None,
        )
    except BaseException:
        if child is not None:
            child.cancel()
        raise
    if child is None:
        return ds, load_yolo_predictions(predictions, ds)
    _labels_ahead(ds, cut)
    got = child.result()
    rows = checked = None
    if got is not None:
        rows, checked, headers = got
        if ds.n_images == n_listed:
            ds.known_headers(cut, headers)
        else:  # (images left out as corrupt: the child placed the predictions on all of them; read again)
            checked = None
    return ds, load_yolo_predictions(predictions, ds, rows=rows, checked=checked)


def _predictions_and_headers(
    predictions: str | os.PathLike[str], ds: YoloDataset, cut: int
) -> tuple[PredictionRows | None, BoxTable | None, list[tuple[str, int, int, int | None] | None]]:
    """The child's reading: the prediction rows, checked and placed on the split ``ds`` as listed
    (:func:`~deteval.io.yolo.normalized_predictions`), then the headers of its images from ``cut`` on, in
    order (None for one that cannot be read: read again where one process reads it, which raises). Returns
    the rows where they were not checked (a fault: checked again by the parent, in one process's order,
    which raises), the checked table or None, and the headers."""
    rows = read_prediction_rows(predictions)
    checked = None
    if rows is not None:
        try:
            checked = normalized_predictions(Path(predictions), ds, rows)
        except DetevalError:
            pass
    headers: list[tuple[str, int, int, int | None] | None] = []
    regular = ds.listed_regular
    for f in ds.files[cut:]:
        try:
            headers.append(image_header(f, listed=f in regular))
        except DetevalError:
            headers.append(None)
    return (rows if checked is None else None), checked, headers


def _labels_ahead(ds: YoloDataset, cut: int) -> None:
    """The sizes of the labelled images below ``cut`` read, and the images' stems made, while the child still
    reads: one process reads the sizes after the predictions' images, so a fault met here is left for that
    order (the reading is tried again there and raises as one process does; nothing failed is kept)."""
    images = ds.labelled_images()
    try:
        ds.sizes_of(images[images < cut])
    except DetevalError:
        pass
    ds.stems  # noqa: B018 - made for the predictions' image lookup and the COCO image ids


def coco_inputs(
    ds: YoloDataset, preds: BoxTable, iou_type: str = "bbox", *, all_sizes: bool = False
) -> tuple[CocoGroundTruth, CocoResults]:
    """The split and its predictions as deteval's COCO ground truth and results (:mod:`.yolo_coco`'s ids);
    ``all_sizes``: every image's size read (the worst-image drawings need them), not only the labelled ones'.
    ``iou_type="obb"``: a YOLO-OBB split, the tables with their ``obb`` quadrilateral columns (each
    quadrilateral read as hotcoco's DOTA converter reads it, :func:`~deteval.tables.quads.corners_obb`) and
    their ``w·h`` as every area: the COCO-style OBB protocol's inputs (:mod:`deteval.detection.coco_obb`)."""
    segm = iou_type == "segm"
    gt = load_coco_gt(dataset_to_coco(ds, all_sizes=segm or all_sizes, segm=segm), keep_segmentation=segm)
    if iou_type == "obb":
        gt.obb = obb_quads(corners_obb(obb_corners(ds.labels, ds, "labels")))
        gt.area = gt.obb[:, 8].copy()
    return gt, coco_results(ds, preds, gt, iou_type)


def coco_results(
    ds: YoloDataset, preds: BoxTable, gt: CocoGroundTruth, iou_type: str = "bbox"
) -> CocoResults:
    """``preds`` as COCO results against ``gt`` of :func:`coco_inputs` of the same ``iou_type`` (another
    model's, for a comparison)."""
    kind = "bbox" if iou_type == "obb" else iou_type
    res = load_coco_results(predictions_to_coco(ds, preds, segm=kind == "segm"), gt, iou_type=kind)
    if iou_type != "obb":
        return res
    q = obb_quads(corners_obb(obb_corners(preds, ds, "predictions")))
    return res.replace(obb=q, area=q[:, 8].copy())


def probiou_pairs(ds: YoloDataset, preds: BoxTable) -> PairIou:
    """The Ultralytics OBB validator's IoU of (label, prediction) pairs of a YOLO-OBB split in pixels (after
    the era's EXIF rule): :func:`~deteval.detection.ultralytics.obb_pair_iou` of their ``(cx, cy, w, h, r)``."""
    g, d = obb_corners(ds.labels, ds, "labels"), obb_corners(preds, ds, "predictions")
    return obb_pair_iou(corners_obb(g), corners_obb(d))


def ultralytics_summary(m: UltralyticsMetrics, prefix: str = "") -> dict[str, float]:
    """``yolo val``'s summary numbers of ``m`` by name (``mAP50-95``, ``mAP50``, ``mAP75``, ``precision``,
    ``recall``), each prefixed ``prefix``."""
    return {
        f"{prefix}mAP50-95": m.map,
        f"{prefix}mAP50": m.map50,
        f"{prefix}mAP75": m.map75,
        f"{prefix}precision": m.precision,
        f"{prefix}recall": m.recall,
    }


def confidence_floor(preds: BoxTable, conf: float | None) -> BoxTable:
    """The predictions scored above ``conf`` (strictly, as ``yolo val``'s NMS keeps ``score > conf``);
    all of them when ``conf`` is None."""
    return preds if conf is None else preds.take(preds.conf > conf)


def ultralytics_metrics(
    gt: BoxTable, dt: BoxTable, n_images: int, profile: str, *, iou: PairIou | None = None
) -> UltralyticsMetrics:
    """:func:`~deteval.detection.ultralytics.evaluate_ultralytics`, the same bits, on two cores where a CPU is
    idle (:func:`~deteval.run.forked.fork_call`) and there are ``FORK_DETECTIONS`` detections or more: a forked
    child matches the images of the first half of the detections while this process matches the others
    (images are independent: each half is matched as the whole is, and the halves join in image order), then
    integrates the curves of the classes of about half the detections while this process does the others
    (classes are independent once ranked). A child that fails leaves its half to this process."""
    rules = get_rules(profile)
    two = len(dt) >= FORK_DETECTIONS
    m = (
        _matched_halves(gt, dt, n_images, rules)
        if two and iou is None
        else match_split(gt, dt, n_images, rules, iou)
    )
    ranked = RankedMatches.of(m.tp, m.conf, m.pred_cls, m.target_cls)
    everything = np.arange(len(ranked.classes))
    share = np.cumsum(ranked.detections_per_class()) <= len(ranked.tp) // 2
    theirs, mine = everything[share], everything[~share]
    child = fork_call(ranked.class_curves, theirs, rules.sentinel) if two and len(theirs) else None
    parts = [ranked.class_curves(mine if child is not None else everything, rules.sentinel)]
    if child is not None:
        part = child.result()
        parts.append(part if part is not None else ranked.class_curves(theirs, rules.sentinel))
    return with_counts(ranked.metrics(*parts), m, gt)


def _matched_halves(gt: BoxTable, dt: BoxTable, n_images: int, rules: UltralyticsRules) -> MatchedSet:
    """:func:`~deteval.detection.ultralytics.match_split` of the images below the median detection's image
    (by a forked child) and of the others (here), joined as the whole split's matches."""
    mid = int(np.partition(dt.img, len(dt) // 2)[len(dt) // 2]) if len(dt) else 0
    child = fork_call(_match_part, gt, dt, n_images, rules, mid, True)
    if child is None:
        return match_split(gt, dt, n_images, rules)
    high = _match_part(gt, dt, n_images, rules, mid, False)
    low = child.result()
    if low is None:
        low = _match_part(gt, dt, n_images, rules, mid, True)

    def joined(name: str) -> np.ndarray:
        return np.concatenate([getattr(low, name), getattr(high, name)])

    return MatchedSet(
        joined("tp"),
        joined("conf"),
        joined("pred_cls"),
        joined("target_cls"),
        low.capped + high.capped,
        joined("pred_img"),
        joined("target_img"),
        joined("kept"),
    )


def _match_part(
    gt: BoxTable, dt: BoxTable, n_images: int, rules: UltralyticsRules, mid: int, low: bool
) -> MatchedSet:
    """The matches of the images below ``mid`` (``low``) or from ``mid`` on, ``kept`` as rows of ``dt``."""
    g, d = (gt.img < mid, dt.img < mid) if low else (gt.img >= mid, dt.img >= mid)
    m = match_split(_boxes(gt, g), _boxes(dt, d), n_images, rules)
    m.kept = np.flatnonzero(d)[m.kept]
    return m


def _boxes(t: BoxTable, rows: np.ndarray) -> BoxTable:
    """The rows of ``t`` the matching reads (images, classes, boxes, confidences; no polygons)."""
    return BoxTable(t.img[rows], t.cls[rows], t.xyxy[rows], t.conf[rows])


@small_pages()  # (huge pages fault in slowly: see deteval.run.pages)
def evaluate_yolo(
    ds: YoloDataset, preds: BoxTable, profile: str = "ultralytics", *, iou_type: str = "bbox"
) -> YoloResult:
    """Score ``preds`` against the split ``ds`` under ``profile`` (see the module docstring).

    ``iou_type="segm"`` (``coco`` only): mask AP of polygon labels and polygon predictions, pycocotools'
    ``segm`` with the polygons rasterized at each image's size. ``iou_type="obb"`` (``--task obb``): oriented
    boxes, every row 4 corners (:mod:`deteval.io.yolo_obb`): the rotated IoU under ``coco``
    (:mod:`deteval.detection.coco_obb`), Ultralytics' ProbIoU under its profiles.
    """
    name = canonical_profile(profile)
    if iou_type not in ("bbox", "segm", "obb"):
        raise ConfigError(f"unknown iou_type {iou_type!r}; choose bbox, segm or obb")
    if iou_type == "obb" and name == "supervision":
        raise ConfigError(
            "oriented boxes are scored under the coco and ultralytics profiles, not supervision"
        )
    if name == DOTA_DEVKIT:
        if iou_type != "obb":
            raise ConfigError("the dota_devkit profile scores oriented boxes: give --task obb")
        return _dota_devkit(ds, preds, profile)
    if iou_type == "segm" and name != "coco":
        raise ConfigError(
            f"mask AP is scored under the coco profile only ({profile} is a box metric: Ultralytics' mask "
            "mAP needs the model's prototype masks, which files do not hold)"
        )
    if name.startswith("ultralytics"):
        ds, preds = for_exif_rule(ds, preds, get_rules(name).exif)
        iou = None
        if iou_type == "obb":  # (the corners after the era's EXIF rule, which may turn the image sizes)
            iou = probiou_pairs(ds, preds)
        m = ultralytics_metrics(ds.labels, preds, ds.n_images, name, iou=iou)
        rows = [
            (
                int(c),
                {
                    "AP50-95": float(m.ap[k].mean()),
                    "AP50": float(m.ap[k, 0]),
                    "AP75": float(m.ap[k, 5]),
                    "P": float(m.p[k]),
                    "R": float(m.r[k]),
                },
            )
            for k, c in enumerate(m.classes)
        ]
        curves = {int(c): PRCurve(*m.extra["pr_curves"][k]) for k, c in enumerate(m.classes)}
        return yolo_result(ds, profile, iou_type, ultralytics_summary(m), rows, curves)
    tables = coco_tables(ds, preds) if iou_type == "bbox" else None  # (boxes: from the arrays, no records)
    if tables is not None:
        ev = evaluate_coco(*tables, iou_type="bbox")
    else:
        gt, res = coco_inputs(ds, preds, iou_type)
        ev = evaluate_coco(gt, res, iou_type=iou_type)
    coco = ev.to_result(per_class=False)
    by_name = {n: c for c, n in reversed(list(enumerate(ds.names)))}
    curves = {by_name[n]: curve for n, curve in coco.curves.items() if n in by_name}
    if name == "coco":
        per = ev.per_class()
        rows = []
        for c, cname in enumerate(ds.names):
            r = per.get(cname)
            if r is None or r["ap"] < 0:
                continue
            rows.append((c, {"AP50-95": r["ap"], "AP50": r["ap50"], "AP75": r["ap75"]}))
        s = [float(v) for v in ev.stats]
        summary = {"mAP50-95": s[0], "mAP50": s[1], "mAP75": s[2], **dict(zip(DET_STAT_NAMES, s))}
        return _with_run(yolo_result(ds, profile, iou_type, summary, rows, curves), ev, tables)
    sv = supervision_from_coco(ev)
    rows = []
    for c in range(len(ds.names)):
        ap = sv.ap_per_class[c]
        if ap[0] < 0:
            continue
        valid = ap[ap > -1]
        rows.append((c, {"AP50-95": float(valid.mean()), "AP50": float(ap[0]), "AP75": float(ap[5])}))
    summary = {"mAP50-95": sv.map50_95, "mAP50": sv.map50, "mAP75": sv.map75}
    return _with_run(yolo_result(ds, profile, iou_type, summary, rows, curves), ev, tables)


def _with_run(result: YoloResult, ev: Any, tables: tuple[CocoGroundTruth, CocoResults] | None) -> YoloResult:
    if tables is not None:
        result.coco_run = (ev, *tables)
    return result


def dota_tables(ds: YoloDataset, preds: BoxTable) -> tuple[VOCGroundTruth, VOCDetections, np.ndarray]:
    """An oriented-box split as the DOTA devkit reads its files: images by index, classes named by their index
    (``"0"``, ``"1"``, … so that two classes of one name stay apart), no difficult objects, the pixel corners
    in ``meta["corners"]`` and, for the predictions, returned third; rows in the dataset's order (the devkit's
    file order)."""
    k = len(ds.names)
    boxes = [t.xyxy if len(t) else np.zeros((0, 4)) for t in (ds.labels, preds)]
    gt = VOCGroundTruth.from_arrays(ds.labels.img, ds.labels.cls, boxes[0], images=ds.n_images, classes=k)
    gt.meta["corners"] = obb_corners(ds.labels, ds, "labels")
    dets = VOCDetections.from_arrays(
        preds.img, preds.cls, boxes[1], preds.conf, images=ds.n_images, classes=k
    )
    return gt, dets, obb_corners(preds, ds, "predictions")


def _dota_devkit(ds: YoloDataset, preds: BoxTable, profile: str) -> YoloResult:
    """The DOTA devkit's AP at each of COCO's ten IoU thresholds (IoU > t): ``mAP50`` is the devkit's number,
    ``mAP75`` and ``mAP50-95`` (the mean of the ten) are the same rule at other thresholds, which the devkit
    itself prints only for 0.5."""
    gt, dets, corners = dota_tables(ds, preds)
    per_t = [evaluate_dota(gt, dets, corners, iou_threshold=t) for t in COCO_IOU_THRESHOLDS.tolist()]
    rows = []
    for c in range(len(ds.names)):
        got = [r.per_class.get(str(c), {}).get("ap") for r in per_t]
        if got[0] is None:  # (no labels of this class: not averaged, as the devkit's evaluator would)
            continue
        aps = [float(a) for a in got if a is not None]
        rows.append((c, {"AP50-95": float(np.mean(aps)), "AP50": float(aps[0]), "AP75": float(aps[5])}))
    maps = [r.summary["map"] for r in per_t]
    summary = (
        {"mAP50-95": float(np.mean(maps)), "mAP50": float(maps[0]), "mAP75": float(maps[5])}
        if maps[0] is not None
        else {"mAP50-95": -1.0, "mAP50": -1.0, "mAP75": -1.0}
    )
    curves = {
        int(n): per_t[0].curves[n] for n in per_t[0].curves if per_t[0].per_class[n].get("ap") is not None
    }
    return yolo_result(ds, profile, "obb", summary, rows, curves)


@small_pages()  # (huge pages fault in slowly: see deteval.run.pages)
def evaluate_yolo_files(
    data_yaml: str | os.PathLike[str],
    predictions: str | os.PathLike[str],
    *,
    split: str = "val",
    profile: str = "ultralytics",
    iou_type: str = "bbox",
    task: str = "detect",
) -> YoloResult:
    """One call from files: ``deteval yolo DATA.yaml PREDICTIONS --split S --profile P`` in Python.

    ``task="obb"``: an oriented-box dataset and predictions (:mod:`deteval.io.yolo_obb`), scored with
    ``iou_type="obb"``.

    Exact duplicate label rows and corrupt images (:mod:`deteval.io.yolo_images`) are left out (with a
    warning) under the Ultralytics profiles, as Ultralytics does; under the others a duplicate is an error,
    and an image is opened only where its size is needed (an unreadable one is an error).

    >>> r = evaluate_yolo_files("data_samples/yolo/data.yaml", "data_samples/yolo/predictions/labels")
    >>> round(r.summary["mAP50-95"], 4), list(r.per_class)[0]
    (0.3578, 'person')
    """
    reading = split_reading(profile)
    if task not in TASKS:
        raise ConfigError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    if task == "obb":
        if iou_type != "bbox":
            raise ConfigError(
                f"--iou-type {iou_type} is for boxes and masks; --task obb scores oriented boxes"
            )
        ds, preds, _, _ = load_yolo_obb(data_yaml, predictions, split, **reading)
        return evaluate_yolo(ds, preds, profile, iou_type="obb")
    if task != "detect":
        raise ConfigError(f"--task {task} is not scored by deteval yolo")
    ds = load_dataset(data_yaml, split, profile)
    return evaluate_yolo(ds, load_yolo_predictions(predictions, ds), profile, iou_type=iou_type)
