"""A keypoints results file read on two cores (deteval.io.coco.keypoints_tail: the tail parsed by a child before the
ground truth is read, checked against it once back) gives the one-process CocoResults array for array, on
random files and split points; anything the one-process path would refuse makes it give up (None)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deteval.errors import DetevalError
from deteval.io.coco import json_text as coco_json
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco import pieces as coco_pieces
from deteval.io.coco.keypoints_tail import keypoints_tail, keypoints_with_tail, read_keypoints
from deteval.run.coco_reading import KeypointsTail, keypoints_split_byte, tail_buffer
from deteval.run.forked import start_child

FIELDS = ("img", "cat", "score", "bbox", "area", "keypoints")


def _case(seed: int) -> tuple[dict, list[dict]]:
    """Random people (k keypoints, some unlabeled) and detections; ids integers or strings, keypoints integers
    or floats, extra fields (a true/false among them in some files), spaced or compact JSON."""
    rng = np.random.default_rng(seed)
    k = int(rng.choice([1, 5, 17, 30]))
    n_img = int(rng.integers(3, 30))
    strings = rng.random() < 0.25
    ids = [f"im{i}" if strings else int(i) for i in rng.choice(10**6, n_img, replace=False).tolist()]
    anns, dets = [], []
    for i in range(int(rng.integers(1, 4 * n_img))):
        img = ids[int(rng.integers(n_img))]
        kp = np.round(rng.uniform(0, 400, (k, 3)), 1)
        kp[:, 2] = rng.integers(0, 3, k)
        anns.append(
            {
                "id": i + 1,
                "image_id": img,
                "category_id": 1,
                "bbox": [1.0, 2.0, 30.0, 40.0],
                "area": float(rng.uniform(1, 1e4)),
                "iscrowd": 0,
                "num_keypoints": int((kp[:, 2] > 0).sum()),
                "keypoints": kp.ravel().tolist(),
            }
        )
    ints = rng.random() < 0.3
    flag = rng.random() < 0.3
    for _ in range(int(rng.integers(50, 400))):
        kp = rng.uniform(-50, 450, (k, 3))
        kp[:, 2] = 1
        det = {
            "image_id": ids[int(rng.integers(n_img))],
            "category_id": 1,
            "keypoints": [int(v) for v in np.round(kp).ravel()] if ints else np.round(kp, 3).ravel().tolist(),
            "score": float(np.round(rng.random(), 3)),
        }
        if flag:
            det["refined"] = bool(rng.random() < 0.5)  # (a boolean in the text, outside the keypoints)
        dets.append(det)
    gt = {
        "images": [{"id": i, "height": 480, "width": 640} for i in ids],
        "categories": [{"id": 1, "name": "person", "keypoints": [f"k{j}" for j in range(k)]}],
        "annotations": anns,
    }
    return gt, dets


def _write(tmp_path, gt, dets, seed=0):
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    spaced = seed % 2 == 0
    (tmp_path / "dt.json").write_text(json.dumps(dets, separators=(", ", ": ") if spaced else (",", ":")))
    return tmp_path / "gt.json", tmp_path / "dt.json"


def _read(dt, g, start):
    """The two-core reading, the child's part run here (its columns taken from the shared buffer)."""
    shared = tail_buffer(dt)
    got = keypoints_tail(dt, start, shared)

    class Done:  # (what KeypointsTail reads of a finished child)
        def result(self):
            return got

    tail = KeypointsTail(Done(), shared)  # type: ignore[arg-type]
    return keypoints_with_tail(dt, g, start, tail.result, tail)


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)


def _same_results(a, b):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=True), f
    assert (a.kind, a.source, a.warnings, a.skipped, a.segmentation, a.rles) == (
        b.kind,
        b.source,
        b.warnings,
        b.skipped,
        b.segmentation,
        b.rles,
    )


@pytest.mark.slow
def test_random_files_read_as_in_one_process(tmp_path, small_pieces):
    read = 0
    for seed in range(40):
        gt, dets = _case(seed)
        gp, dp = _write(tmp_path, gt, dets, seed)
        g = load_coco_gt(gp, need_keypoints=True)
        one = load_coco_results(dp, g, iou_type="keypoints")
        size = dp.stat().st_size
        for start in {keypoints_split_byte(size, gp.stat().st_size), size // 3, size * 4 // 5, 1}:
            two = _read(dp, g, start)
            assert two is not None, (seed, start)
            _same_results(one, two)
            read += 1
        alone = read_keypoints(dp, g)  # (the one-process reading with the same matrices)
        assert alone is not None
        _same_results(one, alone)
    assert read > 80


def test_a_forked_child_and_its_shared_buffer(tmp_path, small_pieces):
    gt, dets = _case(3)
    gp, dp = _write(tmp_path, gt, dets)
    g = load_coco_gt(gp, need_keypoints=True)
    start = dp.stat().st_size // 2
    shared = tail_buffer(dp)
    child = start_child(keypoints_tail, dp, start, shared)
    if child is None:
        pytest.skip("cannot fork")
    tail = KeypointsTail(child, shared)
    try:
        two = keypoints_with_tail(dp, g, start, tail.result, tail)
    finally:
        tail.cancel()
    assert two is not None
    _same_results(load_coco_results(dp, g, iou_type="keypoints"), two)


def _damaged(j_frac, change):
    def apply(dets):
        bad = [dict(d) for d in dets]
        change(bad[min(int(len(bad) * j_frac), len(bad) - 1)])
        return bad

    return apply


DAMAGE = [
    ("a boolean keypoint", lambda d: d.__setitem__("keypoints", [*d["keypoints"][:-1], True])),
    ("a string keypoint", lambda d: d.__setitem__("keypoints", [*d["keypoints"][:-1], "1"])),
    ("a null keypoint", lambda d: d.__setitem__("keypoints", [*d["keypoints"][:-1], None])),
    ("a nested list", lambda d: d.__setitem__("keypoints", [d["keypoints"][:3], *d["keypoints"][3:]])),
    ("beyond 2**53", lambda d: d.__setitem__("keypoints", [*d["keypoints"][:-1], 2.0**60])),
    # (an integer that float64 rounds to 2**53: only the value as written is beyond)
    ("2**53 + 1", lambda d: d.__setitem__("keypoints", [*d["keypoints"][:-1], 2**53 + 1])),
    ("an unknown image", lambda d: d.__setitem__("image_id", 10**7)),
    ("a string image id", lambda d: d.__setitem__("image_id", "x")),
    ("a missing score", lambda d: d.pop("score")),
]


@pytest.mark.fast_cases(what=1)
@pytest.mark.parametrize("what,change", DAMAGE)
def test_what_one_process_refuses_is_left_to_it(tmp_path, small_pieces, what, change):
    # integer ids, float keypoints and no boolean anywhere in the text (the fast path, which must find it)
    gt, dets = next(
        (gt, dets)
        for gt, dets in map(_case, range(100))
        if isinstance(gt["images"][0]["id"], int)
        and isinstance(dets[0]["keypoints"][0], float)
        and "refined" not in dets[0]
        and len(dets[0]["keypoints"]) > 3
    )
    _left_to_one_process(tmp_path, gt, dets, what, change, (0.0, 0.2, 0.9, 1.0))  # the head, the tail


def _left_to_one_process(tmp_path, gt, dets, what, change, fracs):
    """With the record at each fraction of the file damaged: refused by the one-process loader, and by
    the two-core and the pieces' readers, which leave it to that loader (None)."""
    for frac in fracs:
        gp, dp = _write(tmp_path, gt, _damaged(frac, change)(dets))
        g = load_coco_gt(gp, need_keypoints=True)
        with pytest.raises(DetevalError):
            load_coco_results(dp, g, iou_type="keypoints")
        assert _read(dp, g, dp.stat().st_size // 2) is None, (what, frac)
        assert read_keypoints(dp, g) is None, (what, frac)


@pytest.mark.parametrize("frac", [0.0, 0.5, 1.0])
def test_a_record_one_keypoint_short_is_refused_when_evaluated_by_every_path(tmp_path, small_pieces, frac):
    """A record with another keypoint count than the others of its category reads as a file of several
    skeleton sizes (in memory, from the file, in pieces); its evaluation refuses it, naming the record, the
    same way whichever path read it (a result's index, a ground truth's place among the annotations)."""
    from deteval.run.coco import evaluate_coco

    gt, dets = next((g, d) for g, d in map(_case, range(100)) if len(d[0]["keypoints"]) > 3)
    short = _damaged(frac, lambda d: d.__setitem__("keypoints", d["keypoints"][:-3]))(dets)
    j = min(int(len(dets) * frac), len(dets) - 1)
    bad_gt = json.loads(json.dumps(gt))
    a = min(int(len(gt["annotations"]) * frac), len(gt["annotations"]) - 1)
    bad_gt["annotations"][a]["keypoints"] = bad_gt["annotations"][a]["keypoints"][:-3]
    for g, d, record in ((gt, short, j), (bad_gt, dets, f"annotations[{a}]")):
        gp, dp = _write(tmp_path, g, d)
        errors = []
        for args in ((g, d, "one process"), (gp, dp, "one process"), (gp, dp, "auto")):
            with pytest.raises(DetevalError) as exc:
                evaluate_coco(args[0], args[1], iou_type="keypoints", strategy=args[2])
            errors.append((type(exc.value), exc.value.record, exc.value.reason))
        assert errors[0] == errors[1] == errors[2], errors
        assert errors[0][1] == record and "keypoints of category" in errors[0][2], errors


def test_keypoints_of_another_width_than_the_ground_truth(tmp_path, small_pieces):
    """Every record with 3 keypoints fewer than the ground truth: consistent in the child's eyes, refused
    (left to the one-process path) once compared with the ground truth."""
    gt, dets = _case(6)
    short = [{**d, "keypoints": d["keypoints"][:-3]} for d in dets]
    gp, dp = _write(tmp_path, gt, short)
    g = load_coco_gt(gp, need_keypoints=True)
    for start in (1, dp.stat().st_size // 2):
        assert _read(dp, g, start) is None
    tail = dp.stat().st_size // 2  # and only the tail's records short
    mixed = dets[: len(dets) // 3] + short[len(dets) // 3 :]
    gp, dp = _write(tmp_path, gt, mixed)
    assert _read(dp, g, tail) is None


def test_a_file_whose_first_record_has_a_box_is_left_to_one_process(tmp_path, small_pieces):
    """loadRes' bbox branch (decided by the first record) reads every record's own box: not this reader's."""
    gt, dets = _case(7)
    dets[0]["bbox"] = [1.0, 2.0, 3.0, 4.0]
    gp, dp = _write(tmp_path, gt, dets)
    g = load_coco_gt(gp, need_keypoints=True)
    assert _read(dp, g, dp.stat().st_size // 2) is None


def _boxed(dets: list[dict], seed: int) -> list[dict]:
    """Every detection with a box of its own (detectron2's keypoint results): loadRes' bbox branch."""
    rng = np.random.default_rng(seed)
    return [{**d, "bbox": np.round(rng.uniform(0, 300, 4), 2).tolist()} for d in dets]


@pytest.mark.fast_cases(seeds=1)
@pytest.mark.parametrize("seeds", [range(3), range(3, 20)])
def test_records_with_their_own_boxes_read_as_in_one_process(tmp_path, small_pieces, seeds):
    """loadRes' bbox branch (the first record has a box): each record's own box and its area w·h, the
    keypoints kept; read on two cores and by read_keypoints as record by record."""
    read = 0
    for seed in seeds:
        gt, dets = _case(seed)
        gp, dp = _write(tmp_path, gt, _boxed(dets, seed), seed)
        g = load_coco_gt(gp, need_keypoints=True)
        one = load_coco_results(dp, g, iou_type="keypoints")
        assert one.kind == "bbox"
        np.testing.assert_array_equal(one.area, one.bbox[:, 2] * one.bbox[:, 3])
        size = dp.stat().st_size
        for start in {size // 3, size * 4 // 5, 1}:
            two = _read(dp, g, start)
            assert two is not None, (seed, start)
            _same_results(one, two)
            read += 1
        alone = read_keypoints(dp, g)
        assert alone is not None
        _same_results(one, alone)
    assert read >= 2 * len(seeds)


BOX_DAMAGE = [
    ("no box", lambda d: d.pop("bbox")),
    ("a string in the box", lambda d: d.__setitem__("bbox", [1.0, "2", 3.0, 4.0])),
    ("three numbers", lambda d: d.__setitem__("bbox", [1.0, 2.0, 3.0])),
    ("a null", lambda d: d.__setitem__("bbox", [1.0, 2.0, None, 4.0])),
]


@pytest.mark.parametrize("what,change", BOX_DAMAGE)
def test_a_bad_box_in_the_bbox_branch_is_left_to_one_process(tmp_path, small_pieces, what, change):
    gt, dets = _case(2)
    # the head, the tail (the first record keeps its box: the bbox branch)
    _left_to_one_process(tmp_path, gt, _boxed(dets, 2), what, change, (0.2, 0.9, 1.0))


@pytest.mark.slow
@pytest.mark.parametrize("processes", ["1", "2"])
def test_evaluation_from_files_equals_pycocotools(tmp_path, small_pieces, monkeypatch, processes):
    """End to end from files, read in one process (read_keypoints) or two (the tail forked at once, the
    size thresholds forced small): pycocotools' arrays, bit for bit."""
    seeds = [s for s in range(100) if len(_case(s)[1][0]["keypoints"]) == 51][:2]  # (COCO's 17 sigmas)
    used, can = _evaluate_files(tmp_path, monkeypatch, processes, [(seed, *_case(seed)) for seed in seeds])
    assert used == (["keypoints_with_tail"] * 2 if processes == "2" and can else ["read_keypoints"] * 2)


def _evaluate_files(tmp_path, monkeypatch, processes, cases):
    """Each (seed, gt, dets) evaluated from files with DETEVAL_PROCESSES=processes, the size thresholds forced
    small, and asserted equal to pycocotools; (the readers used, whether a fork was possible)."""
    from _coco_cases import assert_same_as_reference, run_pycocotools

    import deteval.run.coco_two_cores as coco_eval
    import deteval.run.forked as forked
    from deteval.detection.coco import evaluate_coco

    monkeypatch.setenv(forked.ENV_PROCESSES, processes)
    monkeypatch.setattr(coco_eval, "FORK_RESULTS_BYTES", 0)
    used = []
    for name in ("read_keypoints", "keypoints_with_tail"):
        real = getattr(coco_eval, name)
        monkeypatch.setattr(coco_eval, name, lambda *a, real=real, name=name: used.append(name) or real(*a))
    for seed, gt, dets in cases:
        gp, dp = _write(tmp_path, gt, dets, seed)
        ev = evaluate_coco(str(gp), str(dp), iou_type="keypoints")
        assert_same_as_reference(ev, run_pycocotools(gt, dets, "keypoints"), f"seed {seed}")
    return used, forked.can_fork()


@pytest.mark.parametrize("processes", ["1", "2"])
def test_evaluation_of_records_with_boxes_equals_pycocotools(tmp_path, small_pieces, monkeypatch, processes):
    """End to end from files whose records have their own boxes (loadRes' bbox branch: the detections' area
    ranges read w·h of those boxes), read in one process or two: pycocotools' arrays, bit for bit."""
    seed = next(s for s in range(100) if len(_case(s)[1][0]["keypoints"]) == 51)  # (COCO's 17 sigmas)
    gt, dets = _case(seed)
    used, can = _evaluate_files(tmp_path, monkeypatch, processes, [(seed, gt, _boxed(dets, seed))])
    assert used == (["keypoints_with_tail"] if processes == "2" and can else ["read_keypoints"])


GT_DAMAGE = [
    lambda k: [*k[:-1], True],  # a boolean visibility flag (read as 1 by one np.array call)
    lambda k: [*k[:-1], "2"],
    lambda k: [*k[:-1], None],
    lambda k: [*k[:-1], 3],  # visibility 3
    lambda k: [*k[:-2], float("nan"), 2],
    lambda k: [2**53 + 1, *k[1:]],  # (float64 rounds it to 2**53: only the written value is beyond)
]


@pytest.mark.fast_cases(pieces=1)
@pytest.mark.parametrize("pieces", [False, True])
def test_ground_truth_keypoints_from_a_file_as_from_memory(tmp_path, monkeypatch, pieces):
    """A ground-truth file without true/false has its keypoints read as one matrix (whole or in pieces):
    the same columns as record by record (an in-memory dict), and the same error for a bad record."""
    if pieces:  # (the ground truth's annotations parsed piece by piece)
        monkeypatch.setattr(coco_pieces, "CHUNK_BYTES", 2048)
    for seed in range(8):
        gt, _ = _case(seed)
        (tmp_path / "gt.json").write_text(json.dumps(gt))
        a = load_coco_gt(tmp_path / "gt.json", need_keypoints=True)
        b = load_coco_gt(gt, need_keypoints=True)
        for f in ("keypoints", "num_keypoints", "bbox", "area", "img", "cat", "ann_id"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), (seed, f)
            assert getattr(a, f).dtype == getattr(b, f).dtype
    gt, _ = next((g, d) for g, d in map(_case, range(100)) if len(g["annotations"]) > 20)
    for damage in GT_DAMAGE:
        for j in (0, len(gt["annotations"]) // 2, len(gt["annotations"]) - 1):
            bad = json.loads(json.dumps(gt))
            bad["annotations"][j]["keypoints"] = damage(bad["annotations"][j]["keypoints"])
            (tmp_path / "gt.json").write_text(json.dumps(bad))
            errors = []
            for source in (tmp_path / "gt.json", bad):
                with pytest.raises(DetevalError) as exc:
                    load_coco_gt(source, need_keypoints=True)
                errors.append((type(exc.value), exc.value.record, exc.value.reason))
            assert errors[0] == errors[1], errors


@pytest.mark.slow
def test_the_text_test_for_booleans_on_random_texts(monkeypatch):
    """no_json_booleans(data, lo, hi) == neither b"true" nor b"false" in data[lo:hi], on random texts of word
    pieces (near misses such as "tru, e", "fals", "ttrue"), whole and in blocks of 7 bytes."""
    from deteval.io.coco import no_json_booleans

    rng = np.random.default_rng(3)
    tokens = [
        b"true",
        b"false",
        b"tru",
        b"fals",
        b"e",
        b"t",
        b"ru",
        b"al",
        b"se",
        b"u",
        b"l",
        b"x",
        b"1",
        b", ",
    ]
    for block in (1 << 24, 7):
        monkeypatch.setattr(coco_json, "_WORD_BLOCK", block)
        found = 0
        for _ in range(2000):
            text = b"".join(tokens[int(i)] for i in rng.integers(0, len(tokens), int(rng.integers(0, 25))))
            n = len(text)
            lo = int(rng.integers(0, n + 1))
            hi = int(rng.integers(lo, n + 1))
            has = b"true" in text[lo:hi] or b"false" in text[lo:hi]
            assert no_json_booleans(text, lo, hi) == (not has), (text, lo, hi)
            found += has
        assert found > 50
