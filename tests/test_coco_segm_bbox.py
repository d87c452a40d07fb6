"""segm results with a ``bbox`` in every record (detectron2's ``instances_to_coco_json``, mmdetection's
``results2json``: the box head's box next to each compressed RLE mask) read by the fast readers: decoded by
type, a tail read by a forked child, the masks left in the text for the matcher. loadRes reads such a file in
its bbox branch (the first record has a box): area = the box's w * h, the masks as given. The numbers equal
pycocotools' bit for bit (live, on random cases: float32 boxes as detectron2 writes them, integer boxes, boxes
that disagree with their masks, areas at the area ranges' borders), one process and two; a file where only
some records have a box follows loadRes' rule by the first record (left to the one-process loader, which
also names every fault)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _coco_cases import assert_same_as_reference, mask_annotation, run_pycocotools

import deteval.run.coco_two_cores as coco_eval
from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError
from deteval.io.coco import head_tail as coco_head_tail
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco import results as coco_results
from deteval.io.coco import segm_tail as coco_segm_tail
from deteval.io.coco import typed as coco_typed
from deteval.io.coco.segm_tail import _lean_head, segm_pending, segm_tail, segm_with_pending_tail
from deteval.run import forked

H, W = 80, 100
#: boxes whose w * h is exactly on COCO's area borders (32**2, 96**2) or one float step off
BORDER_SIDES = [
    (32.0, 32.0),
    (16.0, 64.0),
    (96.0, 96.0),
    (48.0, 192.0),
    (float(np.nextafter(32.0, 0.0)), 32.0),
    (float(np.nextafter(32.0, 64.0)), 32.0),
    (float(np.nextafter(96.0, 0.0)), 96.0),
    (float(np.nextafter(96.0, 200.0)), 96.0),
    (0.0, 12.5),
]


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)


def _poly(rng, cx: float, cy: float, r: float, n: int = 8) -> list[float]:
    t = np.sort(rng.uniform(0, 2 * np.pi, n))
    rad = r * rng.uniform(0.6, 1.0, n)
    pts = np.empty(2 * n)
    pts[0::2] = np.clip(cx + rad * np.cos(t), 0, W - 1)
    pts[1::2] = np.clip(cy + rad * np.sin(t), 0, H - 1)
    return [float(round(v, 2)) for v in pts]


def _box(rng, rle: dict, mode: str) -> list:
    """A detection's box as a detector writes it next to its mask (``mode``): the mask's box; detectron2's
    float32 box-head box (near the mask's, float32 values through ``tolist()``); integers; a box unrelated to
    the mask; one whose area is on an area range's border."""
    from pycocotools import mask as mask_utils

    x, y, w, h = (float(v) for v in mask_utils.toBbox(rle))
    if mode == "mask":
        return [x, y, w, h]
    if mode == "float32":
        b = np.array([x, y, w, h], dtype=np.float32) + rng.normal(0, 1.5, 4).astype(np.float32)
        b[2:] = np.abs(b[2:])
        return b.tolist()
    if mode == "int":
        return [round(x), round(y), int(rng.integers(0, 60)), int(rng.integers(0, 60))]
    if mode == "random":
        return [float(v) for v in rng.uniform(0, 90, 4).round(2)]
    bw, bh = BORDER_SIDES[int(rng.integers(0, len(BORDER_SIDES)))]
    return [x, y, bw, bh] if rng.random() < 0.5 else [x, y, bh, bw]


MODES = ("mask", "float32", "int", "random", "border")


def boxed_case(seed: int, n_img: int = 8) -> tuple[dict, list[dict]]:
    """Polygon ground truth (some uncompressed-RLE crowds, some areas on the borders) and compressed-RLE
    detections, each with a box (in detectron2's key order) of a mode drawn per record."""
    from pycocotools import mask as mask_utils

    rng = np.random.default_rng(70_000 + seed)
    img_ids = sorted(rng.choice(np.arange(1, 500), n_img, replace=False).tolist())
    cat_ids = [1, 2, 3]
    modes = list(rng.choice(MODES, int(rng.integers(1, len(MODES) + 1)), replace=False))
    anns, dets = [], []
    for img in img_ids:
        for _ in range(int(rng.integers(1, 7))):
            ann, (cx, cy, r) = mask_annotation(rng, len(anns) + 1, img, cat_ids, radius=35.0, crowd_rate=0.1)
            if rng.random() < 0.15:  # (an area on a border: COCOeval reads the given area)
                ann["area"] = float(rng.choice([1024.0, 9216.0]))
            anns.append(ann)
            cat = ann["category_id"]
            for _ in range(int(rng.integers(0, 5))):
                dseg = [_poly(rng, cx + rng.normal(0, 3), cy + rng.normal(0, 3), r * rng.uniform(0.6, 1.4))]
                drle = mask_utils.merge(mask_utils.frPyObjects(dseg, H, W))
                dets.append(
                    _det(rng, img, cat if rng.random() < 0.85 else int(rng.choice(cat_ids)), drle, modes)
                )
        for _ in range(int(rng.integers(0, 4))):  # background hits
            dseg = [_poly(rng, rng.uniform(10, 90), rng.uniform(10, 70), rng.uniform(3, 20))]
            drle = mask_utils.merge(mask_utils.frPyObjects(dseg, H, W))
            dets.append(_det(rng, img, int(rng.choice(cat_ids)), drle, modes))
    rng.shuffle(dets)
    gt = {
        "images": [{"id": i, "height": H, "width": W} for i in img_ids],
        "categories": [{"id": c, "name": f"c{c}"} for c in cat_ids],
        "annotations": anns,
    }
    return gt, dets


def _det(rng, img: int, cat: int, rle: dict, modes: list) -> dict:
    return {
        "image_id": img,
        "category_id": cat,
        "bbox": _box(rng, rle, str(rng.choice(modes))),
        "score": float(rng.choice([0.5, 0.25, float(np.float32(rng.random()))])),  # ties too
        "segmentation": {"size": [H, W], "counts": rle["counts"].decode("ascii")},
    }


def _files(tmp_path, gt: dict, dets: list) -> tuple[str, str]:
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    return str(tmp_path / "gt.json"), str(tmp_path / "dt.json")


def _no_fallback(monkeypatch) -> None:
    """The one-process loader must not be asked: the fast readers read the file."""

    def refuse(*args, **kwargs):
        raise AssertionError("the results file was read by the one-process loader")

    monkeypatch.setattr(coco_eval, "load_coco_results", refuse)


def _two_cores(monkeypatch) -> list[str]:
    """Small inputs read and matched on two cores; the names of the functions forked children ran."""
    monkeypatch.setattr(forked, "cpu_idle", lambda cpus: True)  # (the machine may be busy)
    if not forked.can_fork():
        pytest.skip("needs os.fork, 2 CPUs and no other thread")
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    monkeypatch.setattr(coco_eval, "FORK_MASKS", 0)
    forks: list[str] = []
    real = coco_eval.fork_call

    def counting(fn, *args):
        child = real(fn, *args)
        if child is not None:
            forks.append(fn.__name__)
        return child

    monkeypatch.setattr(coco_eval, "fork_call", counting)
    return forks


@pytest.mark.fast_cases(block=1)
@pytest.mark.parametrize("block", range(4))
def test_boxed_segm_results_give_pycocotools_numbers(tmp_path, monkeypatch, small_pieces, block):
    """Read by the fast readers (no fallback), in one process and on two cores: pycocotools' arrays."""
    n = 0
    for seed in range(block * 6, block * 6 + 6):
        gt, dets = boxed_case(seed)
        g_path, d_path = _files(tmp_path, gt, dets)
        ref = run_pycocotools(gt, dets, "segm")
        with monkeypatch.context() as m:
            _no_fallback(m)
            m.setenv(forked.ENV_PROCESSES, "1")
            assert_same_as_reference(evaluate_coco(g_path, d_path, iou_type="segm"), ref, f"seed {seed}")
        with monkeypatch.context() as m:
            forks = _two_cores(m)
            _no_fallback(m)
            m.setenv(forked.ENV_PROCESSES, "")
            assert_same_as_reference(evaluate_coco(g_path, d_path, iou_type="segm"), ref, f"seed {seed}, 2")
        assert forks == ["segm_tail", "_half_into"], forks  # (the tail read, the categories matched)
        n += len(dets)
    assert n > 100


@pytest.mark.parametrize("seed", [0, 1])
def test_pieces_give_the_one_process_columns(tmp_path, small_pieces, seed):
    """Head and tail at any split byte, the head read here and the tail by the child's reader: the columns
    the one-process loader gives (kind bbox, the boxes as given, area w * h, the masks as given)."""
    gt, dets = boxed_case(seed, n_img=12)
    g_path, d_path = _files(tmp_path, gt, dets)
    g = load_coco_gt(g_path, keep_segmentation=True)
    one = load_coco_results(d_path, g, iou_type="segm")
    assert one.kind == "bbox"
    size = (tmp_path / "dt.json").stat().st_size
    for start in (0, size // 3, size // 2, size + 1):
        tail = segm_tail(d_path, start)
        assert tail is not None
        got = segm_with_pending_tail(d_path, g, start, lambda tail=tail: tail, True)
        assert got is not None
        res, pending = got
        assert pending.rows.shape[0] == len(one)
        pending.fill(res)
        for f in ("img", "cat", "score", "bbox", "area"):
            a, b = getattr(one, f), getattr(res, f)
            assert a.dtype == b.dtype and np.array_equal(a, b), f
        assert res.kind == "bbox" and res.source == one.source
        assert res.segmentation == one.segmentation and res.rles == one.segmentation


@pytest.mark.parametrize("seed", [2, 3])
def test_pieces_decoded_by_type_are_the_parsed_pieces(tmp_path, monkeypatch, small_pieces, seed):
    """Boxed segm results decoded by type (msgspec) give the columns, boxes and counts text of the pieces
    parsed by orjson; the typed decoder vouches for every piece of a plain file."""
    gt, dets = boxed_case(seed, n_img=12)
    _, d_path = _files(tmp_path, gt, dets)
    typed = segm_tail(d_path, 0)
    calls = []
    real = coco_typed.segm_bbox_columns
    monkeypatch.setattr(
        coco_segm_tail, "segm_bbox_columns", lambda text: calls.append(real(text)) or calls[-1]
    )
    assert segm_tail(d_path, 0) is not None and len(calls) > 2 and all(c is not None for c in calls)
    monkeypatch.setattr(coco_segm_tail, "segm_bbox_columns", lambda text: None)
    parsed = segm_tail(d_path, 0)
    assert typed is not None and parsed is not None
    assert b"".join(typed[1]) == b"".join(parsed[1])
    for k in range(7):
        a = np.concatenate([p[k] for p in typed[0]])
        b = np.concatenate([p[k] for p in parsed[0]])
        assert a.dtype == b.dtype and np.array_equal(a, b), k


_REC = (
    b'{"image_id": 1, "category_id": 2, "bbox": [1.5, 2, 3.25, 4], "score": 0.5, '
    b'"segmentation": {"size": [4, 5], "counts": "0d0"}}'
)


@pytest.mark.parametrize(
    "record",
    [
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1.5, 2, 3.25]"),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1.5, 2, 3.25, 4, 5]"),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[]"),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"null"),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1.5, 2, true, 4]"),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b'[1.5, 2, "3", 4]'),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1.5, 2, NaN, 4]"),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1.5, 2, -3.25, 4]"),  # a negative width
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1.5, 2, 3.25, -1e-300]"),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[9007199254740992, 2, 3.25, 4]"),  # 2**53
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[18446744073709551616, 2, 3.25, 4]"),
        _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1e400, 2, 3.25, 4]"),
        _REC.replace(b'"score"', b'"bbox": [1, 2, 3, 4], "score"'),  # a repeated key
        _REC.replace(b'"bbox": [1.5, 2, 3.25, 4], ', b""),  # a record without a box
        _REC.replace(b'"score"', b'"id": 7, "score"'),
    ],
)
def test_what_the_typed_decoder_cannot_vouch_for_is_parsed(record):
    assert coco_typed.segm_bbox_columns(b"[" + _REC + b"]") is not None
    assert coco_typed.segm_bbox_columns(b"[" + _REC + b", " + record + b"]") is None
    assert coco_typed.segm_columns(b"[" + _REC + b"]") is None  # (the box-less decoder leaves it)


def test_typed_columns_of_a_boxed_list():
    text = b"[" + _REC + b", " + _REC.replace(b"[1.5, 2, 3.25, 4]", b"[-0.0, 7, 0, 1e-400]") + b"]"
    got = coco_typed.segm_bbox_columns(text)
    assert got is not None
    (img, cat, score, hw, joined, lengths), boxes = got
    assert img.tolist() == [1, 1] and cat.tolist() == [2, 2] and score.tolist() == [0.5, 0.5]
    assert hw.tolist() == [[4, 5], [4, 5]] and joined == b"0d00d0" and lengths.tolist() == [3, 3]
    assert boxes.dtype == np.float64 and boxes.tolist() == [[1.5, 2.0, 3.25, 4.0], [-0.0, 7.0, 0.0, 0.0]]


def _drop_box(d: dict) -> None:
    del d["bbox"]


def _negative_width(d: dict) -> None:
    d["bbox"][2] = -1.0


def _short_box(d: dict) -> None:
    d["bbox"] = d["bbox"][:3]


def _huge_box(d: dict) -> None:
    d["bbox"][0] = 2**60


def _string_box(d: dict) -> None:
    d["bbox"][1] = "7"


def _other_size(d: dict) -> None:
    d["segmentation"] = {"size": [H, W + 1], "counts": d["segmentation"]["counts"]}


def _bad_runs(d: dict) -> None:
    d["segmentation"] = {"size": [H, W], "counts": d["segmentation"]["counts"][:-2]}


def _unknown_image(d: dict) -> None:
    d["image_id"] = 987654


def _polygon(d: dict) -> None:
    d["segmentation"] = [[10.0, 10.0, 40.0, 10.0, 40.0, 30.0]]


def _no_segmentation(d: dict) -> None:  # (loadRes' bbox branch: the box's polygon)
    del d["segmentation"]


@pytest.mark.fast_cases(change=3)
@pytest.mark.parametrize(
    "change",
    [
        _drop_box,
        _negative_width,
        _short_box,
        _huge_box,
        _string_box,
        _other_size,
        _bad_runs,
        _unknown_image,
        _polygon,
        _no_segmentation,
    ],
)
@pytest.mark.parametrize("where", ["head", "tail"])
def test_what_the_fast_readers_decline_is_read_by_the_loader(
    tmp_path, monkeypatch, small_pieces, change, where
):
    """A damaged record in the head or the tail: the fast readers decline the file, and the evaluation gives
    what the one-process loader gives for the records as a list (the same error, naming the same record, or
    the same numbers: pycocotools' where it runs)."""
    gt, dets = boxed_case(4, n_img=12)
    i = 2 if where == "head" else len(dets) - 3
    change(dets[i])
    g_path, d_path = _files(tmp_path, gt, dets)
    g = load_coco_gt(g_path, keep_segmentation=True)
    assert segm_pending(d_path, g) is None and _lean_head(d_path, g, 1 << 40) is None
    try:
        expect = ("ok", evaluate_coco(gt, dets, iou_type="segm").stats.tolist())
    except DetevalError as exc:
        expect = ("error", type(exc).__name__, exc.record, exc.reason)
    for processes in ("1", ""):
        with monkeypatch.context() as m:
            if processes == "":
                _two_cores(m)
            m.setenv(forked.ENV_PROCESSES, processes)
            try:
                got = ("ok", evaluate_coco(g_path, d_path, iou_type="segm").stats.tolist())
            except DetevalError as exc:
                assert exc.file == d_path
                got = ("error", type(exc).__name__, exc.record, exc.reason)
        assert got == expect
    if change in (_drop_box, _negative_width, _short_box, _huge_box, _string_box, _other_size, _bad_runs):
        assert expect[0] == "error" and expect[2] == i, expect
    if change in (_polygon, _no_segmentation):
        ref = run_pycocotools(gt, dets, "segm")
        assert_same_as_reference(evaluate_coco(g_path, d_path, iou_type="segm"), ref, change.__name__)


@pytest.mark.parametrize("first", ["without a box", "with a box"])
def test_some_records_without_a_box_follow_the_first_record(tmp_path, monkeypatch, small_pieces, first):
    """Half of the records without a box (a later half of the file, so that whole pieces have none): loadRes'
    branch is the first record's. Without a box there: the segm branch (areas from the masks, the given boxes
    kept), pycocotools' numbers; with one: the bbox branch, which needs every record's box (pycocotools fails
    with a KeyError; deteval names the first record without one)."""
    gt, dets = boxed_case(5, n_img=12)
    cut = len(dets) // 2
    for d in dets[cut:] if first == "with a box" else dets[:cut]:
        del d["bbox"]
    g_path, d_path = _files(tmp_path, gt, dets)
    for processes in ("1", ""):
        with monkeypatch.context() as m:
            if processes == "":
                _two_cores(m)
            m.setenv(forked.ENV_PROCESSES, processes)
            if first == "with a box":
                with pytest.raises(DetevalError) as err:
                    evaluate_coco(g_path, d_path, iou_type="segm")
                assert err.value.record == cut and err.value.reason == "missing field 'bbox'"
                continue
            ev = evaluate_coco(g_path, d_path, iou_type="segm")
        assert_same_as_reference(ev, run_pycocotools(gt, dets, "segm"), f"processes {processes!r}")
    if first == "with a box":
        with pytest.raises(KeyError):
            run_pycocotools(gt, dets, "segm")


# ------------------------------------------------------------------- the same files in a bbox evaluation
# loadRes' bbox branch never reads the masks: the typed bbox reader takes the box columns of these records
# (decoded with their masks' Struct) instead of leaving the file to the ordinary parser.


def _ordinary_parser_refused(monkeypatch) -> None:
    """The ordinary parser (whole file, pieces, the child's pieces) must not be asked: decoded by type."""

    def refuse(*args, **kwargs):
        raise AssertionError("the results were parsed by the ordinary parser")

    monkeypatch.setattr(coco_results, "parse_json", refuse)
    monkeypatch.setattr(coco_results, "parsed_piece", refuse)
    monkeypatch.setattr(coco_head_tail, "parsed_piece", refuse)


@pytest.mark.fast_cases(block=1)
@pytest.mark.parametrize("block", range(3))
def test_bbox_evaluation_of_boxed_segm_results_is_decoded_by_type(tmp_path, monkeypatch, small_pieces, block):
    """bbox evaluation of detectron2-style files, read by type whole, in pieces and on two cores (the
    ordinary parser refused): pycocotools' arrays."""
    n = 0
    for seed in range(100 + block * 6, 100 + block * 6 + 6):
        gt, dets = boxed_case(seed)
        g_path, d_path = _files(tmp_path, gt, dets)
        ref = run_pycocotools(gt, dets, "bbox")
        with monkeypatch.context() as m:
            _ordinary_parser_refused(m)
            m.setattr(coco_typed, "MIN_BYTES", 0)
            m.setattr(coco_pieces, "CHUNK_BYTES", 10**9)  # (whole)
            m.setenv(forked.ENV_PROCESSES, "1")
            assert_same_as_reference(evaluate_coco(g_path, d_path, iou_type="bbox"), ref, f"seed {seed}")
        with monkeypatch.context() as m:
            _ordinary_parser_refused(m)
            m.setenv(forked.ENV_PROCESSES, "1")
            assert_same_as_reference(
                evaluate_coco(g_path, d_path, iou_type="bbox"), ref, f"seed {seed}, pieces"
            )
        with monkeypatch.context() as m:
            forks = _two_cores(m)
            _no_fallback(m)
            _ordinary_parser_refused(m)
            m.setenv(forked.ENV_PROCESSES, "")
            assert_same_as_reference(evaluate_coco(g_path, d_path, iou_type="bbox"), ref, f"seed {seed}, 2")
        assert forks and forks[0] == "_read_share", forks  # (the tail read by the child)
        n += len(dets)
    assert n > 100


def test_bbox_columns_of_a_boxed_segm_list():
    text = b"[" + _REC + b", " + _REC.replace(b"[1.5, 2, 3.25, 4]", b"[-0.0, 7, 0, 1e-400]") + b"]"
    got = coco_typed.bbox_columns(text)
    assert got is not None
    img, cat, score, boxes = got
    assert img.dtype == np.int64 and img.tolist() == [1, 1] and cat.tolist() == [2, 2]
    assert score.tolist() == [0.5, 0.5]
    assert boxes.dtype == np.float64 and boxes.tolist() == [[1.5, 2.0, 3.25, 4.0], [-0.0, 7.0, 0.0, 0.0]]


_SEG = b'{"size": [4, 5], "counts": "0d0"}'

#: records the typed bbox reader leaves to the ordinary parser (next to a good one): the ordinary loader then
#: reads them for a bbox evaluation, or names their fault
BBOX_REFUSED = [
    _REC.replace(b'"score"', b'"bbox": [1, 2, 3, 4], "score"'),  # a repeated key
    _REC.replace(b'"score": 0.5', b'"score": 0.5, "score": 0.25'),
    _REC.replace(_SEG, b'{"size": [4, 5], "size": [4, 5], "counts": "0d0"}'),  # repeated in the mask
    _REC.replace(_SEG, b'{"size": [4, 5], "counts": "xx", "counts": "0d0"}'),
    _REC.replace(_SEG, b"[[1, 1, 3, 1, 3, 3, 1, 3]]"),  # a polygon
    _REC.replace(_SEG, b'{"size": [4, 5], "counts": [0, 20]}'),  # an uncompressed RLE
    _REC.replace(_SEG, b'{"size": [4, 5, 6], "counts": "0d0"}'),
    _REC.replace(_SEG, b'{"size": [4.0, 5], "counts": "0d0"}'),
    _REC.replace(_SEG, b'{"size": [4, 5]}'),
    _REC.replace(_SEG, b'{"size": [4, 5], "counts": "0d0", "x": 1}'),
    _REC.replace(_SEG, b"null"),
    _REC.replace(_SEG, b'{"size": [4, 5], "counts": "0\\"d0"}'),  # an escaped quote
    _REC.replace(_SEG, '{"size": [4, 5], "counts": "0d\u00e90"}'.encode()),  # not ASCII
    _REC.replace(b'"segmentation": ' + _SEG, b'"segmentation": ' + _SEG + b', "id": 3'),
    _REC.replace(b", " + b'"segmentation": ' + _SEG, b""),  # no mask: the plain decoder's
    _REC.replace(b'"bbox": [1.5, 2, 3.25, 4], ', b""),  # no box
    _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1.5, 2, -3.25, 4]"),  # a negative width
    _REC.replace(b"[1.5, 2, 3.25, 4]", b"[9007199254740992, 2, 3.25, 4]"),  # 2**53
    _REC.replace(b"[1.5, 2, 3.25, 4]", b"[1.5, 2, 3.25]"),
    _REC.replace(b'"score": 0.5', b'"score": 9223372036854775808'),  # 2**63
    _REC.replace(b'"image_id": 1', b'"image_id": 9223372036854775808'),  # beyond int64
    _REC.replace(b'"image_id": 1', b'"image_id": 1.0'),
]


@pytest.mark.parametrize("record", BBOX_REFUSED)
def test_what_the_typed_bbox_reader_cannot_vouch_for_is_parsed(tmp_path, record):
    """Refused by the typed decoder; the whole loader then gives what the ordinary path gives (the same
    columns, or the same error naming file, record and fault)."""
    text = b"[" + _REC + b", " + record + b"]"
    assert coco_typed.bbox_columns(b"[" + _REC + b"]") is not None
    assert coco_typed.bbox_columns(text) is None
    gt = {
        "images": [{"id": 1, "height": 4, "width": 5}],
        "categories": [{"id": 2, "name": "c"}],
        "annotations": [],
    }
    g_path, d_path = _files(tmp_path, gt, [])
    (tmp_path / "dt.json").write_bytes(text)
    g = load_coco_gt(g_path)

    def load(typed: bool) -> tuple:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(coco_typed, "MIN_BYTES", 0)
            if not typed:
                m.setattr(coco_typed, "_DECODER", None)
                m.setattr(coco_typed, "_SEGM_BOX_DECODER", None)
            try:
                r = load_coco_results(d_path, g, iou_type="bbox")
            except DetevalError as exc:
                return ("error", str(exc))
            return (r.img.tolist(), r.cat.tolist(), r.score.tolist(), r.bbox.tolist(), r.area.tolist())

    assert load(True) == load(False)
