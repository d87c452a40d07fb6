"""A COCO evaluation on two cores: reading and matching shared with a forked child
(:mod:`deteval.run.forked`), bit-identical to one process.

Large inputs use a second core: a forked child parses the tail of the results file while this process reads
the ground truth and the head (keypoints: the child's columns checked against the ground truth once back,
:mod:`deteval.io.coco.keypoints_tail`; segm: the child's masks checked without the ground truth, their ids and
sizes against it once back, :mod:`deteval.io.coco.segm_tail`); then one matches (and accumulates) half of the
categories, or with one category half of the images, while this process does the other half. Categories and
images are independent, and each half runs the protocol's one-process steps
(:func:`~deteval.detection.coco.parts.accumulate_categories`,
:func:`~deteval.detection.coco.parts.match_in_shards`), so the numbers are the same bits. A child that fails
for any reason is ignored and its work done here (raising any error as one process would).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from functools import partial
from os import PathLike
from typing import Any, TypeVar

import numpy as np

from deteval.detection.coco.evaluation import FULL_ARRAYS_BYTES, full_arrays_bytes
from deteval.detection.coco.inputs import (
    is_path_list,
    load_results_files,
    past_border_counts,
    past_border_message,
)
from deteval.detection.coco.params import id_selection, selected_positions
from deteval.detection.coco.parts import (
    Arrays,
    accumulate_categories,
    match_in_shards,
    per_category,
    sum_counts,
)
from deteval.detection.coco_accumulate import pycocotools_views
from deteval.detection.coco_params import MASK_TYPES, CocoParams, results_kind
from deteval.errors import DetevalError
from deteval.io.coco import (
    CHUNK_BYTES,
    CocoGroundTruth,
    CocoResults,
    RawTail,
    gt_head,
    load_coco_gt,
    load_coco_results,
    load_gt_with_head,
    results_part,
    results_tail,
    results_two_parts,
    results_with_tail,
    wide_scores,
)
from deteval.io.coco.keypoints_tail import keypoints_tail, keypoints_with_tail, read_keypoints
from deteval.io.coco.segm_tail import (
    PendingMasks,
    segm_pending,
    segm_tail,
    segm_with_pending_tail,
    segm_with_tail,
)
from deteval.match.coco import MatchTable, merge_tables
from deteval.run.coco_reading import (
    KeypointsTail,
    TailBuffer,
    keypoints_split_byte,
    split_reading,
    tail_buffer,
)
from deteval.run.forked import Forked, can_fork, fork_call

__all__ = [
    "FORK_DETECTIONS",
    "FORK_KEYPOINTS",
    "FORK_MASKS",
    "FORK_RESULTS_BYTES",
    "bbox_results_two_cores",
    "both_halves",
    "category_halves",
    "file_bytes",
    "fork_detections",
    "match_image_halves",
    "match_on_two_cores",
    "read_inputs",
    "read_with_pending",
]


def read_inputs(
    gt: Any, results: Any, p: CocoParams, on_error: str = "raise"
) -> tuple[CocoGroundTruth, CocoResults]:
    """The ground truth and the results of an evaluation (the arguments of
    :func:`~deteval.detection.coco.evaluate_coco`), read on two cores where that pays (see the module
    docstring): the same columns, warnings and errors as one process gives."""
    g, r, _ = read_with_pending(gt, results, p, on_error)
    return g, r


def read_with_pending(
    gt: Any, results: Any, p: CocoParams, on_error: str, defer: bool = False, two_cores: bool = True
) -> tuple[CocoGroundTruth, CocoResults, PendingMasks | None]:
    """:func:`read_inputs`; ``defer``: the masks of a segm tail read by a child may be left to make
    (:class:`~deteval.io.coco.segm_tail.PendingMasks`, returned; None when every mask is made);
    ``two_cores=False``: read in this process only."""
    pending = None
    # (only a results file read with on_error="raise" is read otherwise than by load_coco_results)
    raising_file = on_error == "raise" and isinstance(results, (str, PathLike))
    share = _fork_reading(gt, results, p) if two_cores and raising_file else None
    try:
        if isinstance(share, _Share) and share.gt_bytes:
            g = load_gt_with_head(gt, (share.gt_bytes, share.gt))
        else:
            g = load_coco_gt(
                gt,
                keep_segmentation=p.iou_type in MASK_TYPES,
                need_keypoints=p.iou_type == "keypoints",
                on_error=on_error,
            )
        if isinstance(share, _SegmShare) and defer:
            got = share.read_pending(results, g)
            r, pending = (None, None) if got is None else got
        else:
            r = None if share is None else share.read(results, g)
    finally:
        if share is not None:
            share.child.cancel()
    if share is None and two_cores and raising_file and p.iou_type in (*MASK_TYPES, "keypoints"):
        r = _results_forked(g, results, p)
    if r is None and share is None and defer and raising_file and p.iou_type in MASK_TYPES:
        # (one segm file read here as the child reads a tail: decoded by type, the masks left in the text for
        # the matcher)
        got = segm_pending(results, g)
        r, pending = (None, None) if got is None else got
    if r is None and p.iou_type == "keypoints" and raising_file:
        r = read_keypoints(results, g)  # (one process)
    if r is not None and wide_scores(r, results):
        r, pending = None, None  # (read by load_coco_results, which reads such an integer as written)
    if r is None and is_path_list(results):
        r = load_results_files(results, g, iou_type=results_kind(p.iou_type), on_error=on_error)
    elif r is None:
        r = load_coco_results(results, g, iou_type=results_kind(p.iou_type), on_error=on_error)
    return g, r, pending


#: Results files from this size on are read on two cores (smaller ones take a few tens of ms); so is a ground
#: truth file from this size on that is larger than the results.
FORK_RESULTS_BYTES = 8 << 20
#: Evaluated detections from which matching and accumulation are split by categories over two processes.
FORK_DETECTIONS = 100_000
#: ... for segm (masks) and keypoints (OKS), which cost far more per detection.
FORK_MASKS = 5_000
FORK_KEYPOINTS = 20_000
#: segm and keypoints: the share of the results file this process reads (it also unpickles the child's part
#: and puts the columns together).
HEAD_SHARE = 0.45
#: ... for segm, whose parts cost about the same to read on either side since their boxes are made only when
#: read and the child's part is unpickled with the collector paused.
SEGM_HEAD_SHARE = 0.5
#: ... when the segm child starts before the ground truth is read (:func:`segm_split_byte`): this process then
#: reads this share of the results less half the ground truth's bytes. Balanced on wall time, not CPU: the child
#: runs on fresh memory (page faults), its part comes through the pipe and is pickled there, while this process
#: reads its head as the child reads the tail (measured figures: docs/performance.md).
SEGM_EARLY_SHARE = 0.46


_G = TypeVar("_G")


class _Share:
    """A forked child reading its share of a bbox evaluation's files (:func:`_read_share`): the first
    ``gt_bytes`` of the ground truth's annotations array, then the results from byte ``start``, their columns
    written into ``shared`` (:class:`~deteval.io.coco.TailBuffer`). Its value is fetched once, and each part
    handed out once (None: the child failed), so that no reference outlives its use (at the Objects365 scale
    the results' part is 70 MB)."""

    def __init__(self, child: Forked, gt_bytes: int, start: int, shared: TailBuffer | None = None) -> None:
        self.child, self.gt_bytes, self.start, self.shared = child, gt_bytes, start, shared
        self._parts: list[Any] | None = None

    def _take(self, i: int) -> Any:
        if self._parts is None:
            value = self.child.result()
            self._parts = [None, None] if value is None else list(value)
        part, self._parts[i] = self._parts[i], None
        return part

    def gt(self) -> tuple[list[dict[str, Any]], int] | None:
        return self._take(0)

    def results(self) -> RawTail | None:
        return self._take(1)

    def read(self, results: Any, g: CocoGroundTruth) -> CocoResults | None:
        """The results: the head read here, the tail from the child (None if it failed)."""
        return results_with_tail(results, g, self.start, self.results, self.shared)


class _SegmShare:
    """A forked child reading the tail of a large segm results file from byte ``start`` without the ground
    truth (:func:`~deteval.io.coco.segm_tail.segm_tail`), started before this process reads it."""

    def __init__(self, child: Forked, start: int) -> None:
        self.child, self.start = child, start

    def read(self, results: Any, g: CocoGroundTruth) -> CocoResults | None:
        """The results: the head read here, the tail from the child (None if it failed)."""
        return segm_with_tail(results, g, self.start, self.child.result)

    def read_pending(self, results: Any, g: CocoGroundTruth) -> tuple[CocoResults, PendingMasks] | None:
        """:meth:`read`, the tail's mask dicts left to make (:class:`~deteval.io.coco.segm_tail.PendingMasks`)."""
        return segm_with_pending_tail(results, g, self.start, self.child.result, True)  # (lean head)


class _KeypointsShare:
    """A forked child reading the tail of a keypoints results file from byte ``start`` into memory shared
    with this process (:mod:`deteval.io.coco.keypoints_tail`); it reads no ground truth."""

    def __init__(self, child: KeypointsTail, start: int) -> None:
        self.child, self.start = child, start

    def read(self, results: Any, g: CocoGroundTruth) -> CocoResults | None:
        """The results: the head read here, the tail from the child (None if it failed)."""
        return keypoints_with_tail(results, g, self.start, self.child.result, self.child)


def _read_share(
    gt: Any, gt_bytes: int, results: Any, start: int, shared: TailBuffer | None = None
) -> tuple[tuple[list[dict[str, Any]], int] | None, RawTail | None]:
    """The child's share: the head of the ground truth's annotations (when ``gt_bytes``), the results' tail
    (its columns written into ``shared`` where they fit)."""
    head = gt_head(gt, gt_bytes) if gt_bytes else None
    return head, results_tail(results, start, shared)


def _fork_reading(gt: Any, results: Any, p: CocoParams) -> _Share | _SegmShare | _KeypointsShare | None:
    """A forked child already reading its share of a large bbox evaluation (:func:`split_reading`) or the
    tail of a large segm (:func:`segm_split_byte`) or keypoints results file (:func:`keypoints_split_byte`)."""
    try:
        size = os.stat(results).st_size
        gt_size = os.stat(gt).st_size if isinstance(gt, (str, PathLike)) else 0
    except OSError:
        return None
    if p.iou_type in MASK_TYPES:
        segm_start = segm_split_byte(size, gt_size)
        if size < FORK_RESULTS_BYTES or segm_start >= size:
            return None
        segm_child = fork_call(segm_tail, results, segm_start)
        return None if segm_child is None else _SegmShare(segm_child, segm_start)
    if p.iou_type == "keypoints":
        if size < FORK_RESULTS_BYTES:
            return None
        kp_start = keypoints_split_byte(size, gt_size)
        # (a ground truth far larger than the results: the child would have nothing; no fork: no buffer)
        if kp_start >= size or not can_fork():
            return None
        shared = tail_buffer(results)
        kp_child = None if shared is None else fork_call(keypoints_tail, results, kp_start, shared)
        if kp_child is None or shared is None:
            return None
        return _KeypointsShare(KeypointsTail(kp_child, shared), kp_start)
    start, gt_bytes = split_reading(size, gt_size)
    if size < FORK_RESULTS_BYTES and (gt_bytes == 0 or gt_size < FORK_RESULTS_BYTES):
        return None
    return _share_from(gt, gt_bytes, results, start, size)


def _share_from(gt: Any, gt_bytes: int, results: Any, start: int, size: int) -> _Share | None:
    """A child forked to read the first ``gt_bytes`` of the ground truth's annotations and the ``size``-byte
    results file from byte ``start`` (:class:`_Share`); None where it cannot be forked."""
    # (mapped before the fork: shared with the child, the head's rows before the tail's; address space only,
    # which a system may refuse for a huge file: the columns then come through the pipe)
    try:
        buffer: TailBuffer | None = TailBuffer(size - start, start)
    except (OSError, ValueError, OverflowError):
        buffer = None
    child = fork_call(_read_share, gt, gt_bytes, results, start, buffer)
    return None if child is None else _Share(child, gt_bytes, start, buffer)


def bbox_results_two_cores(
    results: Any, gt_bytes: int, read_gt: Callable[[], _G], on_error: str = "raise"
) -> tuple[_G, CocoResults | None]:
    """``read_gt()`` (a ground truth of about ``gt_bytes`` bytes, read by this process) and the bbox results
    file ``results`` read on two cores while it runs: a forked child parses the tail of the file as
    :func:`read_inputs` has it do, this process the head once ``read_gt()`` returns. The results are None
    wherever this does not apply (a file below ``FORK_RESULTS_BYTES``, not a path, ``on_error`` not
    "raise", no second process) or fails, and where a score may be an integer beyond 64 bits: the caller
    then reads the file in one process (:func:`~deteval.io.coco.load_coco_results`), which names any fault.
    ``read_gt()`` gives a :class:`~deteval.io.coco.CocoGroundTruth` or a ground truth holding one as ``coco``
    (LVIS), against which the results are read."""
    share = None
    if on_error == "raise" and isinstance(results, (str, PathLike)):
        size = file_bytes(results)
        if size >= FORK_RESULTS_BYTES:
            share = _share_from(None, 0, results, split_reading(size, gt_bytes)[0], size)
    try:
        g = read_gt()
        r = None if share is None else share.read(results, _coco_of(g))
    finally:
        if share is not None:
            share.child.cancel()
    if r is not None and wide_scores(r, results):
        r = None  # (read by load_coco_results, which reads such an integer as written)
    return g, r


def file_bytes(source: Any) -> int:
    """The size of the file ``source`` in bytes (0: not a path, or unreadable), to decide whether a second
    process pays."""
    if not isinstance(source, (str, PathLike)):
        return 0
    try:
        return os.stat(source).st_size
    except OSError:
        return 0


def _coco_of(g: Any) -> CocoGroundTruth:
    return g if isinstance(g, CocoGroundTruth) else g.coco


def segm_split_byte(results_bytes: int, gt_bytes: int) -> int:
    """The byte from which the child reads a segm results file (:class:`_SegmShare`): this process also reads
    the ground truth (``gt_bytes``, 0 in memory) and puts the child's part together with its own, so its
    share of the results is smaller (``SEGM_EARLY_SHARE``)."""
    return max(0, int(results_bytes * SEGM_EARLY_SHARE) - gt_bytes // 2)


def _results_forked(g: CocoGroundTruth, results: Any, p: CocoParams) -> CocoResults | None:
    """A large segm or keypoints results file read by this process (the head) and a forked child (the
    tail), once the ground truth is read (their parsing and checks need it); None where that does not apply
    or fails."""
    size = file_bytes(results)
    if size < FORK_RESULTS_BYTES:
        return None
    start = max(CHUNK_BYTES, int(size * (SEGM_HEAD_SHARE if p.iou_type in MASK_TYPES else HEAD_SHARE)))
    child = fork_call(results_part, results, g, results_kind(p.iou_type), start, False)
    if child is None:
        return None
    try:
        return results_two_parts(results, g, results_kind(p.iou_type), start, child.result)
    finally:
        child.cancel()


#: The weight of a category's sum over images of its detections squared, against its detections, in the cost
#: that :func:`category_halves` balances: an image's boxes of a category are matched all against all (IoU
#: matrix, greedy matching), so a category crowded in its images costs more per detection (weighed on an
#: Objects365-like set: docs/performance.md).
CROWDING_WEIGHT = 4.0


def category_halves(
    img: np.ndarray, cat: np.ndarray, cat_sel: np.ndarray, n_cats: int
) -> tuple[np.ndarray, np.ndarray]:
    """Two sets of evaluated categories (positions in ``cat_sel``) of about the same cost each (costliest
    first, to the lighter side), for detections of images ``img`` and categories ``cat`` (indices): a
    category's detections, plus ``CROWDING_WEIGHT`` times the sum over its detections of its detections in
    the same image (counted in a table of the (image, category) keys hashed to its size: a collision only
    makes the balance rougher, never the numbers different)."""
    # (every category: its own index)
    c = cat if cat_sel.shape[0] == n_cats else selected_positions(cat_sel, n_cats)[cat]
    size = 1 << max(10, (len(c) // 2).bit_length())
    key = img * n_cats
    key += cat
    key &= size - 1
    crowd = np.bincount(key, minlength=size)[key]
    if cat_sel.shape[0] < n_cats:
        keep = c >= 0
        c, crowd = c[keep], crowd[keep]
    cost = np.bincount(c, minlength=cat_sel.shape[0]) + CROWDING_WEIGHT * np.bincount(
        c, weights=crowd, minlength=cat_sel.shape[0]
    )
    load = [0.0, 0.0]
    side = np.zeros(cat_sel.shape[0], dtype=np.int64)
    for k in np.argsort(-cost, kind="stable").tolist():
        s = int(load[1] < load[0])
        side[k] = s
        load[s] += float(cost[k])
    return np.flatnonzero(side == 0), np.flatnonzero(side == 1)


_T = TypeVar("_T")


def fork_detections(iou_type: str) -> int:
    """Evaluated detections from which matching is split over two processes (a mask or an OKS costs far more
    than a box)."""
    return {"bbox": FORK_DETECTIONS, "segm": FORK_MASKS, "boundary": FORK_MASKS}.get(iou_type, FORK_KEYPOINTS)


def match_on_two_cores(
    g: CocoGroundTruth, r: CocoResults, p: CocoParams, compat: str
) -> tuple[MatchTable | None, Arrays | None, dict[str, int], list[str], list[str] | None] | None:
    """The matching (and, split by categories, the accumulation) done by two processes: a half of the
    categories each (their precision, recall and scores columns come back), or, with one category or
    ``use_cats=False``, a half of the images each (their match tables come back, merged for
    :func:`accumulate`). Returns (table or None, arrays or None, counts, warnings, the past-border warning
    when the child gave it, else None); None where that does not pay (small input) or fails."""
    if len(r) < fork_detections(p.iou_type):
        return None
    if p.iou_type in MASK_TYPES:  # imported once, before the fork, not by each half
        import pycocotools.mask  # noqa: F401
    cat_sel = id_selection(g.cat_ids, p.cat_ids, "category")
    # (halves of the categories each lay out arrays for every category; past that size, halves of the images,
    # whose merged table is accumulated for the categories with ground truth only)
    if p.use_cats and cat_sel.shape[0] >= 2 and full_arrays_bytes(p, cat_sel.shape[0]) <= FULL_ARRAYS_BYTES:
        split = _split_categories(g, r, p, compat, cat_sel)
        return None if split is None else (None, *split)
    by_images = match_image_halves(g, r, p, compat)
    return None if by_images is None else (*by_images, None)


def _split_categories(
    g: CocoGroundTruth,
    r: CocoResults,
    p: CocoParams,
    compat: str,
    cat_sel: np.ndarray,
) -> tuple[Arrays, dict[str, int], list[str], list[str] | None] | None:
    if p.iou_type == "bbox":  # (shared arrays: no faster for boxes, and a higher peak of memory)
        mine, theirs = category_halves(r.img, r.cat, cat_sel, g.cat_ids.shape[0])
        return _split_categories_piped(g, r, p, compat, cat_sel, mine, theirs)
    mine, theirs = _category_runs(r, cat_sel, g.cat_ids.shape[0])
    out = _shared_arrays(p, cat_sel.shape[0])
    both = both_halves(_half_into, (g, r, p, compat, out), mine, theirs)
    if both is None:
        return None
    (counts, warnings), (counts_t, _) = both
    return pycocotools_views(*out), sum_counts(counts, counts_t), warnings, None


def _category_runs(r: CocoResults, cat_sel: np.ndarray, n_cats: int) -> tuple[np.ndarray, np.ndarray]:
    """The evaluated categories cut in two runs of consecutive ones with about as many detections each (each
    half then fills a block of its own of :func:`_shared_arrays`)."""
    per_cat = per_category(r, cat_sel, n_cats)
    k = cat_sel.shape[0]
    cut = min(max(int(np.searchsorted(np.cumsum(per_cat), per_cat.sum() / 2)), 1), k - 1)
    return np.arange(0, cut, dtype=np.int64), np.arange(cut, k, dtype=np.int64)


def _split_categories_piped(
    g: CocoGroundTruth,
    r: CocoResults,
    p: CocoParams,
    compat: str,
    cat_sel: np.ndarray,
    mine: np.ndarray,
    theirs: np.ndarray,
) -> tuple[Arrays, dict[str, int], list[str], list[str] | None] | None:
    """The halves' precision, recall and scores put together here, the child's sent through the pipe; each
    half also counts the boxes past the border in a half of the rows (:func:`_half_and_border`)."""
    # (the child counts the first half of the rows)
    both = both_halves(
        _half_and_border, (g, r, p, compat), mine, theirs, partial(_half_and_border, head=True)
    )
    if both is None:
        return None
    ((pm, rm, sm), counts, warnings, (n_past, n)), ((pt, rt, st), counts_t, _, (n_past_t, n_t)) = both
    border = past_border_message(n_past + n_past_t, n + n_t)
    K = cat_sel.shape[0]
    precision = np.empty(pm.shape[:2] + (K,) + pm.shape[3:])
    scores = np.empty_like(precision)
    recall = np.empty(rm.shape[:1] + (K,) + rm.shape[2:])
    precision[:, :, mine], precision[:, :, theirs] = pm, pt
    scores[:, :, mine], scores[:, :, theirs] = sm, st
    recall[:, mine], recall[:, theirs] = rm, rt
    return (precision, recall, scores), sum_counts(counts, counts_t), warnings, border


def _half_and_border(
    g: CocoGroundTruth, r: CocoResults, p: CocoParams, compat: str, part: np.ndarray, head: bool = False
) -> tuple[Arrays, dict[str, int], list[str], tuple[int, int]]:
    """:func:`~deteval.detection.coco.parts.accumulate_categories`, and the counts of
    :func:`past_border_counts` in the second half of the results' rows (``head``: the first half; the counts of the two add up). Each process counts half, so that the
    halves end together rather than one waiting for the other's whole count."""
    half = len(r) // 2
    rows = slice(0, half) if head else slice(half, None)
    return (*accumulate_categories(g, r, p, compat, part), past_border_counts(g, r, rows))


def _shared_arrays(p: CocoParams, n_cats: int) -> Arrays:
    """precision and scores as (A, M, T, K, R) and recall as (A, M, T, K) for ``n_cats`` categories (the
    layout :func:`~deteval.detection.coco_accumulate.accumulate` fills), in memory shared with the forked
    child (anonymous, mapped before the fork): each half accumulates its run of categories straight into
    them (``out=``), so the child's numbers need no pickling, no pipe, no copy into place and no buffers of
    their own (8 MB each way at 80 categories); pycocotools' arrays are transposed views. segm only (for boxes the
    piped arrays are as fast and the peak of memory lower)."""
    T, R, A, M = p.iou_thrs.shape[0], p.rec_thrs.shape[0], len(p.area_rng), len(p.max_dets)
    n_p, n_r = n_cats * T * R * A * M, n_cats * T * A * M
    buf = mmap.mmap(-1, 8 * max(1, 2 * n_p + n_r))
    flat = np.frombuffer(buf, dtype=np.float64)
    return (
        flat[:n_p].reshape(A, M, T, n_cats, R),
        flat[n_p : 2 * n_p].reshape(A, M, T, n_cats, R),
        flat[2 * n_p : 2 * n_p + n_r].reshape(A, M, T, n_cats),
    )


def _half_into(
    g: CocoGroundTruth,
    r: CocoResults,
    p: CocoParams,
    compat: str,
    out: Arrays,
    part: np.ndarray,
) -> tuple[dict[str, int], list[str]]:
    """:func:`~deteval.detection.coco.parts.accumulate_categories` of the run of categories ``part``, accumulated into its block of ``out``
    (:func:`_shared_arrays`)."""
    k0, k1 = int(part[0]), int(part[-1]) + 1
    if not np.array_equal(part, np.arange(k0, k1)):
        raise ValueError("_half_into: the categories must be consecutive")
    block = (out[0][:, :, :, k0:k1], out[1][:, :, :, k0:k1], out[2][:, :, :, k0:k1])
    _, counts, warnings = accumulate_categories(g, r, p, compat, part, block)
    return counts, warnings


def both_halves(
    fn: Callable[..., _T],
    args: tuple,
    mine: np.ndarray,
    theirs: np.ndarray,
    child_fn: Callable[..., Any] | None = None,
) -> tuple[_T, Any] | None:
    """``fn(*args, mine)`` here and ``fn(*args, theirs)`` (or ``child_fn``) in a forked child at the same time;
    None if the child could not start or failed, or this half raised (the one-process path then raises it
    again)."""
    child = fork_call(fn if child_fn is None else child_fn, *args, theirs)
    if child is None:
        return None
    try:
        here = fn(*args, mine)
        got = child.result()
    except DetevalError:
        return None
    finally:
        child.cancel()
    return None if got is None else (here, got)


def match_image_halves(
    g: CocoGroundTruth, r: CocoResults, p: CocoParams, compat: str
) -> tuple[MatchTable, None, dict[str, int], list[str]] | None:
    # the evaluated images (indices, ascending id) cut in two runs with about as many detections each
    img_sel = id_selection(g.image_ids, p.img_ids, "image")
    d_img = selected_positions(img_sel, g.image_ids.shape[0])[r.img]
    per_img = np.bincount(d_img[d_img >= 0], minlength=img_sel.shape[0])
    cut = int(np.searchsorted(np.cumsum(per_img), per_img.sum() / 2))
    if not 0 < cut < img_sel.shape[0]:
        return None
    first, second = np.arange(0, cut, dtype=np.int64), np.arange(cut, img_sel.shape[0], dtype=np.int64)
    # each half matches its images alone (``images=``, after ``categories=None``): the tables merge, as groups
    # never straddle images
    both = both_halves(match_in_shards, (g, r, p, compat, None), first, second)
    if both is None:
        return None
    (table, counts, warnings), (table_t, counts_t, _) = both
    # the first images' rows first, as the one-process shards are merged
    return merge_tables([table, table_t]), None, sum_counts(counts, counts_t), warnings
