"""COCO evaluation with the images sharded over ``dask.distributed`` workers, bit-identical to one process.

Shard k of n holds the evaluated images ``[k·I // n, (k+1)·I // n)`` (ascending id, pycocotools' order). The
work is a map over the results and a reduce per shard:

* **map**: every results file is split into byte ranges of whole records (about ``range_bytes`` each; a scan
  task per file finds the element boundaries with :func:`~deteval.io.json_ranges.scan_json_array`); each task
  reads and validates only its range (:func:`~deteval.io.coco.ranges.load_results_range`) and cuts its
  columns by image shard. Several files (one per training rank) are read as their concatenation, each its own
  ranges. Where a range cannot stand for its file (a bad record, a file that is not one JSON array, an input
  that is not a file), that file is read whole by one task with the ordinary loader, so error messages and
  ``on_error="skip"`` results are those of one process by construction.
* **reduce**: shard k's task concatenates its pieces in file order (the order of equal scores, as one process
  reads them), matches them against shard k's ground truth (:func:`~deteval.detection.coco.match_coco`
  restricted to the shard) and returns the compact :class:`~deteval.detection.coco_match.MatchTable` with
  counts. The driver merges the tables (:func:`~deteval.match.coco.merge_coco_tables`) and
  accumulates them.

Only columns of the shard's records travel (numpy arrays; for segm also the masks' RLEs). A worker holds the
pieces of the ranges it read, one range's parsed objects at a time, and its shard's results and ground truth:
its memory follows its share, not the file.

The ground truth is read once, by the driver, which sends each shard task only its images' annotations (and
every range task the image and category tables results are checked against). Annotations are not sorted by
image, so a byte range of the ``annotations`` array would hold every shard's images: splitting it would cost a
second exchange of columns between workers, and its checks span the whole file (duplicate ids, one kind of
id, which records ``on_error="skip"`` leaves out). Read by the driver, it is the single-process loader with
its exact messages, the image and category tables that accumulation needs are at hand, and the ground truth is
usually the smaller input (columns of 13 numbers per object). The driver's peak is the ground truth's; a
worker's is its shard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from os import PathLike
from typing import Any

import numpy as np

from deteval.collector import paused
from deteval.detection.coco.evaluation import CocoEvaluation, finish_evaluation
from deteval.detection.coco.inputs import (
    check_kinds,
    is_path_list,
    load_results_files,
    past_border_counts,
    past_border_message,
    results_rows,
)
from deteval.detection.coco.params import check_compat, id_selection, resolve_params, selected_positions
from deteval.detection.coco.parts import match_in_shards
from deteval.detection.coco_params import MASK_TYPES, CocoParams, results_kind
from deteval.errors import ConfigError
from deteval.io.coco import (
    CHUNK_BYTES,
    CocoGroundTruth,
    CocoResults,
    concat_results,
    load_coco_gt,
    load_coco_results,
)
from deteval.io.coco.ranges import first_record, load_results_range
from deteval.io.coco_obb import load_obb_gt, load_obb_results, plain_results
from deteval.io.json_ranges import ArrayRanges, scan_json_array
from deteval.match.coco import MatchTable, merge_coco_tables

# (the module, not its names: it imports deteval.detection.coco, which imports this module)
from deteval.run import coco_two_cores
from deteval.run.forked import fork_call
from deteval.run.pages import small_pages
from deteval.run.parts import map_parts, scatter
from deteval.run.shards import default_shards, shard_range

__all__ = [
    "OBB_FORK_BYTES",
    "RANGE_BYTES",
    "STRATEGIES",
    "ShardTable",
    "evaluate_coco",
    "evaluate_coco_sharded",
    "load_results_files",
    "merge_shards",
    "obb_inputs",
]

#: How an evaluation may run: ``"auto"`` (a second core where that pays, image shards on ``client`` or with
#: ``shards``) or ``"one process"`` (no child process, no shards). Every strategy gives the same bits.
STRATEGIES = ("auto", "one process")

#: the warning match_coco gives about detections outside the selection (recounted over all shards)
_OUTSIDE = " detections outside the selected images/categories were not evaluated"


@paused()  # (tens of thousands of records, no cycles: see deteval.collector)
@small_pages()  # (huge pages fault in slowly: see deteval.run.pages)
def evaluate_coco(
    gt: Any,
    results: Any,
    *,
    iou_type: str | None = None,
    params: CocoParams | Any | None = None,
    compat: str = "pycocotools",
    on_error: str = "raise",
    client: Any = None,
    shards: int | None = None,
    strategy: str = "auto",
) -> CocoEvaluation:
    """Evaluate ``results`` against ``gt`` with the COCO protocol (see :mod:`deteval.detection.coco`).

    Parameters
    ----------
    gt
        A path, a parsed dict, a pycocotools ``COCO`` or a :class:`~deteval.io.coco.CocoGroundTruth`.
    results
        A path, a list of dicts, an N×7 array, a pycocotools ``COCO`` (from ``loadRes``) or a
        :class:`~deteval.io.coco.CocoResults`; or several result files (a list of paths, e.g. one per
        training rank), read as their concatenation in the given order.
    iou_type
        "bbox" (default), "segm", "keypoints" or "obb" (oriented boxes, :mod:`deteval.detection.coco_obb`).
    params
        A :class:`~deteval.detection.coco_params.CocoParams`, a pycocotools ``Params`` or a dict of options.
    compat
        "pycocotools" (default) or "fixed" (see the table in the package docstring).
    on_error
        "raise" (default), or "skip": bad result records and ground-truth annotations are left out, listed
        in the warnings and counted in ``skipped_records`` (see :func:`~deteval.io.coco.load_coco_results`);
        the summary always holds the count.
    client
        A ``dask.distributed`` Client: the images are split into ``shards`` (default: one per worker
        thread) that workers load and match on their own, and only the match tables come back
        (:func:`deteval.run.coco.evaluate_coco_sharded`).
    shards
        The number of image shards (also without a client: the shards then run one after the other here).
    strategy
        "auto" (default: a second core where that pays, :mod:`deteval.run.coco_two_cores`) or "one process".

    Returns
    -------
    CocoEvaluation
        pycocotools' arrays, the summary numbers and lines; bit-identical for every strategy and shard count.

    The protocol's steps run one after the other, on two cores (:mod:`deteval.run.coco_two_cores`) or in
    image shards (:func:`evaluate_coco_sharded`), as ``strategy``, ``client`` and ``shards`` say.
    """
    check_compat(compat)
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}: use one of {', '.join(map(repr, STRATEGIES))}")
    p = resolve_params(params, iou_type)
    if p.iou_type == "obb":
        gt, results = obb_inputs(gt, results, on_error, two_cores=strategy == "auto")
    if client is not None or shards is not None:
        if strategy == "one process":
            raise ConfigError("strategy 'one process' runs no shards: leave client and shards unset")
        return evaluate_coco_sharded(
            gt,
            results,
            client=client,
            shards=shards,
            iou_type=iou_type,
            params=params,
            compat=compat,
            on_error=on_error,
        )
    two_cores = strategy == "auto"
    g, r, pending = coco_two_cores.read_with_pending(
        gt, results, p, on_error, defer=True, two_cores=two_cores
    )
    # a segm tail's masks stay in the child's text, read from it by the matcher: no dict made per mask (nor
    # its pages copied by a process that has only to read them)
    r.lazy_masks = pending
    split = coco_two_cores.match_on_two_cores(g, r, p, compat) if two_cores else None
    border = None
    if split is not None:
        table, arrays, counts, warnings, border = split
    else:
        table, counts, warnings = match_in_shards(g, r, p, compat)
        arrays = None
    if p.iou_type == "bbox":
        warnings += past_border_message(*past_border_counts(g, r)) if border is None else border
    counts = {**counts, "skipped_records": g.skipped + r.skipped}
    return finish_evaluation(table, p, compat, g, counts, r.warnings + warnings, arrays)


#: An oriented-box results file from this size on is read by a forked child while this process reads the
#: ground truth (:func:`obb_inputs`).
OBB_FORK_BYTES = 2 << 20


def obb_inputs(
    gt: Any, results: Any, on_error: str, two_cores: bool = False
) -> tuple[CocoGroundTruth, CocoResults]:
    """Oriented-box inputs (:mod:`deteval.io.coco_obb`) read whole, as tables every strategy then takes;
    ``two_cores``: a results file of ``OBB_FORK_BYTES`` or more is read by a forked child
    (:func:`~deteval.io.coco_obb.plain_results`) as this process reads the ground truth, its ids checked here
    against it (a file the child cannot vouch for is read here, which names any fault)."""
    if on_error != "raise":
        raise ConfigError(
            "iou_type 'obb' reads its inputs with on_error='raise' only: a bad record is an error"
        )
    child = None
    on_disk = isinstance(results, (str, PathLike))
    if two_cores and on_disk and coco_two_cores.file_bytes(results) >= OBB_FORK_BYTES:
        child = fork_call(plain_results, results)
    try:
        g = load_obb_gt(gt)
        plain = None if child is None else child.result()
    finally:
        if child is not None:
            child.cancel()
    if is_path_list(results):
        return g, concat_results([load_obb_results(s, g) for s in results])
    return g, load_obb_results(results, g, plain)


@dataclass
class ShardTable:
    """What a shard task sends back: its match table and counts."""

    table: MatchTable
    counts: dict[str, int]
    outside: int  # detections of this shard outside the selected images/categories
    border: tuple[int, int]  # past_border_counts of this shard's detections
    warnings: list[str] = field(default_factory=list)  # matching's warnings but the count of left-out ones


def gt_rows(g: CocoGroundTruth, rows: np.ndarray) -> CocoGroundTruth:
    """The ground truth with only the annotations ``rows`` (ascending: file order kept); images and
    categories whole."""
    return replace(
        g,
        ann_id=g.ann_id[rows],
        img=g.img[rows],
        cat=g.cat[rows],
        bbox=g.bbox[rows],
        area=g.area[rows],
        iscrowd=g.iscrowd[rows],
        ignore=g.ignore[rows],
        num_keypoints=g.num_keypoints[rows],
        keypoints=None if g.keypoints is None else g.keypoints[rows],
        obb=None if g.obb is None else g.obb[rows],
        segmentation=None if g.segmentation is None else [g.segmentation[i] for i in rows.tolist()],
        image_records=None,
        category_records=g.category_records,  # (small; keypoints read a category's own OKS sigmas there)
        file_rows=rows if g.file_rows is None else g.file_rows[rows],  # (what errors name)
    )


@dataclass
class ShardPlan:
    """Where a record goes: ``img_map`` gives an image's position among the evaluated images (-1: not
    evaluated), shard k holds positions ``[bounds[k], bounds[k+1])``; detections of other images go to shard 0,
    so that every detection is counted by exactly one shard."""

    img_map: np.ndarray
    bounds: np.ndarray

    def shard(self, img: np.ndarray) -> np.ndarray:
        """The shard of each image index ``img``."""
        idx = self.img_map[img]
        return np.where(idx < 0, 0, np.searchsorted(self.bounds, idx, side="right") - 1)

    def split(self, r: CocoResults) -> list[CocoResults]:
        """``r`` cut into one piece per shard, each in input order."""
        s = self.shard(r.img)
        order = np.argsort(s, kind="stable")
        ends = np.searchsorted(s[order], np.arange(self.bounds.shape[0] - 2), side="right")
        return [results_rows(r, rows) for rows in np.split(order, ends)]


def _plan(g: CocoGroundTruth, params: CocoParams, n: int) -> ShardPlan:
    try:
        sel = id_selection(g.image_ids, params.img_ids, "image")
    except ConfigError:  # raised by the matching, after the results are read (as in one process)
        return ShardPlan(np.full(g.image_ids.shape[0], -1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64))
    bounds = [shard_range(sel.shape[0], k, n)[0] for k in range(n)] + [sel.shape[0]]
    return ShardPlan(selected_positions(sel, g.image_ids.shape[0]), np.array(bounds, dtype=np.int64))


#: A results file is read in byte ranges of about this many bytes (each range parsed on its own).
RANGE_BYTES = CHUNK_BYTES


@dataclass
class _Read:
    """A map task's outcome: ``ok`` False when its range cannot stand for its file (then ``pieces`` is
    empty), else the pieces per shard and what the driver needs to know of them."""

    ok: bool
    pieces: list[CocoResults] = field(default_factory=list)
    kind: str = "bbox"
    has_keypoints: bool = False
    n: int = 0
    source: str = ""
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    shards: np.ndarray | None = None  # the shard of each record, in input order


def _read_done(r: CocoResults, plan: ShardPlan) -> _Read:
    return _Read(
        True,
        plan.split(r.replace(warnings=[], skipped=0)),
        shards=plan.shard(r.img),
        kind=r.kind,
        has_keypoints=r.keypoints is not None,
        n=len(r),
        source=r.source,
        warnings=r.warnings,
        skipped=r.skipped,
    )


def _scan_task(path: Any, range_bytes: int) -> tuple[ArrayRanges, tuple[str, int | None]] | None:
    """The file's ranges and its first record's branch and keypoint length; None: read it whole."""
    ranges = scan_json_array(path, range_bytes)
    if ranges is None:
        return None
    head = first_record(path, *ranges.head)
    return None if head is None else (ranges, head)


def _range_task(
    path: Any,
    bounds: tuple[int, int, int, int],
    head: tuple[str, int | None],
    gt: CocoGroundTruth,
    plan: ShardPlan,
    iou_type: str,
    on_error: str,
) -> _Read:
    lo, hi, first, count = bounds
    r = load_results_range(
        path, lo, hi, first, count, gt, iou_type=iou_type, kind=head[0], kp_width=head[1], on_error=on_error
    )
    return _Read(False) if r is None else _read_done(r, plan)


def _whole_task(source: Any, gt: CocoGroundTruth, plan: ShardPlan, iou_type: str, on_error: str) -> _Read:
    return _read_done(load_coco_results(source, gt, iou_type=iou_type, on_error=on_error), plan)


def _meta(read: _Read) -> _Read:
    return replace(read, pieces=[], shards=None)


def record_keys(read: _Read) -> tuple[np.ndarray, ...]:
    """Image, category, score and area of every record, in input order (put back from the pieces)."""
    assert read.shards is not None
    cols = []
    for name in ("img", "cat", "score", "area"):
        col = np.empty(read.n, dtype=np.float64 if name in ("score", "area") else np.int64)
        for k, piece in enumerate(read.pieces):
            col[read.shards == k] = getattr(piece, name)
        cols.append(col)
    return tuple(cols)


def _piece(read: _Read, k: int) -> CocoResults:
    return read.pieces[k]


def _match_task(
    g: CocoGroundTruth,
    pieces: list[CocoResults],
    k: int,
    plan: ShardPlan,
    params: CocoParams,
    compat: str,
    source: str,
) -> ShardTable:
    """Shard ``k``'s pieces (in file order) matched against its ground truth."""
    r = concat_results(pieces, source)
    r.warnings, r.skipped = [], 0
    lo, hi = int(plan.bounds[k]), int(plan.bounds[k + 1])
    # (in parts of whole images holding about SHARD_DETECTIONS detections each, as one process matches: a
    # worker's temporaries stay those of one part)
    table, counts, warnings = match_in_shards(g, r, params, compat, images=np.arange(lo, hi))
    return ShardTable(
        table=table,
        counts=counts,
        outside=len(r) - counts["n_dt"],
        border=past_border_counts(g, r) if params.iou_type == "bbox" else (0, 0),
        warnings=[w for w in warnings if not w.endswith(_OUTSIDE)] if k == 0 else [],
    )


def read_results(
    client: Any,
    results: Any,
    gt: Any,
    plan: Any,
    n: int,
    iou_type: str,
    on_error: str,
    range_bytes: int,
) -> tuple[list[Any], list[list[Any]], list[_Read]]:
    """Map tasks over every file's ranges (anything else: whole) of ``results`` (one source, or several
    result files: :func:`check_kinds`); returns the tasks in input order, their pieces per shard, and per
    source what its reading gave (kind, source, warnings, skipped). A file with a range that cannot stand for
    it is read again, whole."""
    several = is_path_list(results)
    sources = list(results) if several else [results]
    paths = [i for i, s in enumerate(sources) if isinstance(s, (str, PathLike))]
    # anything else (parsed records, an array, a pycocotools COCO) is sent once, read whole by one task
    given = [s if i in paths else scatter(s, client) for i, s in enumerate(sources)]
    scans = map_parts(_scan_task, [(sources[i], range_bytes) for i in paths], client)
    units: dict[int, list[Any]] = {}
    for i, scan in zip(paths, scans):
        if scan is not None:
            ranges, head = scan
            bounds = zip(*(a.tolist() for a in (ranges.starts, ranges.ends, ranges.first, ranges.counts)))
            tasks = [(sources[i], b, head, gt, plan, iou_type, on_error) for b in bounds]
            units[i] = map_parts(_range_task, tasks, client, keep=True)
    metas = {i: map_parts(_meta, [(u,) for u in us], client) for i, us in units.items()}
    for i in range(len(sources)):
        if i not in units or not all(m.ok for m in metas[i]):
            units[i] = map_parts(_whole_task, [(given[i], gt, plan, iou_type, on_error)], client, keep=True)
            metas[i] = map_parts(_meta, [(units[i][0],)], client)
    reads = [u for i in range(len(sources)) for u in units[i]]
    pieces = [map_parts(_piece, [(u, k) for u in reads], client, keep=True) for k in range(n)]
    per_source = []
    for i in range(len(sources)):
        ms = metas[i]
        kept = [m for m in ms if m.n] or ms[:1]  # (an empty part says "bbox", as an empty file does)
        per_source.append(
            replace(
                kept[0],
                source=ms[0].source,
                warnings=[w for m in ms for w in m.warnings],
                skipped=sum(m.skipped for m in ms),
            )
        )
    if several:
        check_kinds([(m.kind, m.has_keypoints) for m in per_source if m.n])
    return reads, pieces, per_source


def evaluate_coco_sharded(
    gt: Any,
    results: Any,
    *,
    client: Any = None,
    shards: int | None = None,
    iou_type: str | None = None,
    params: CocoParams | Any | None = None,
    compat: str = "pycocotools",
    on_error: str = "raise",
    range_bytes: int = RANGE_BYTES,
) -> CocoEvaluation:
    """:func:`~deteval.detection.coco.evaluate_coco` over ``shards`` image shards on a ``dask.distributed``
    ``client`` (without a client, the same tasks run one after the other in this process). Bit-identical to
    one process for every shard count and every ``range_bytes`` (the size of the byte ranges result files are
    read in; see the module docstring)."""
    check_compat(compat)
    p = resolve_params(params, iou_type)
    n = default_shards(client, shards)
    g = load_coco_gt(
        gt,
        keep_segmentation=p.iou_type in MASK_TYPES,
        need_keypoints=p.iou_type == "keypoints",
        on_error=on_error,
    )
    plan = _plan(g, p, n)
    gt_shard = plan.shard(g.img)
    gt_shards = [scatter(gt_rows(g, np.flatnonzero(gt_shard == k)), client) for k in range(n)]
    # (no annotations: what accumulation and the summary read; one of id 0 kept, for the warning about it)
    light = gt_rows(g, np.flatnonzero(g.ann_id == 0)[:1])
    base = scatter(gt_rows(g, np.arange(min(1, len(g)))), client, broadcast=True)
    del g, gt_shard  # the driver keeps the image and category tables only
    plan_f = scatter(plan, client, broadcast=True)

    _, pieces, reads = read_results(
        client, results, base, plan_f, n, results_kind(p.iou_type), on_error, range_bytes
    )
    source = ", ".join(m.source for m in reads)
    tasks = [(gt_shards[k], pieces[k], k, plan_f, p, compat, source) for k in range(n)]
    parts: list[ShardTable] = map_parts(_match_task, tasks, client)
    return merge_shards(parts, p, compat, light, reads)


def merge_shards(
    parts: Sequence[ShardTable],
    params: CocoParams,
    compat: str,
    gt: CocoGroundTruth,
    reads: Sequence[Any],
) -> CocoEvaluation:
    """Merge the shards' tables (in shard order) and accumulate: the :class:`CocoEvaluation` of one process.
    ``gt``: the ground truth's image and category tables; ``reads``: per result source, its loading
    ``warnings`` and ``skipped`` count."""
    table = merge_coco_tables([p.table for p in parts])
    counts = dict(parts[0].counts)
    for key in ("n_gt", "n_dt", "n_dt_evaluated"):
        counts[key] = sum(p.counts[key] for p in parts)
    counts["skipped_records"] = gt.skipped + sum(m.skipped for m in reads)
    outside = sum(p.outside for p in parts)
    # the order of one process: loading, matching (the count of left-out detections first), border check
    warnings = [w for m in reads for w in m.warnings]
    warnings += ([f"{outside}{_OUTSIDE}"] if outside else []) + parts[0].warnings
    if params.iou_type == "bbox":
        warnings += past_border_message(sum(p.border[0] for p in parts), sum(p.border[1] for p in parts))
    return finish_evaluation(table, params, compat, gt, counts, warnings)
