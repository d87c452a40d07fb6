"""Results read in byte ranges (issue 19: each worker loads only its shard): the JSON array scan, the range
loader against the whole-file loader, and sharded COCO evaluation with many range splits, 1/2/7 shards and
several files per rank, in this process and on a real LocalCluster; bad records give the single process's
error message, and ``on_error="skip"`` its result."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _coco_cases import random_case, random_keypoints_case, random_segm_case

import deteval.run.coco as dcoco
from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError
from deteval.io.coco import load_coco_gt, load_coco_results
from deteval.io.coco.ranges import first_record, load_results_range
from deteval.io.json_ranges import scan_json_array
from deteval.run.coco import evaluate_coco_sharded

# strings that cut a naive split: quotes, backslash runs, brackets, braces and commas inside strings
NASTY = ["", "\\", '"', '\\"', "\\\\", '"],[{', "},{", "a\\\\\\", "é\u2028", "[[", "]]", ',"x":{']


def _nasty_record(rng: random.Random) -> dict:
    s = "".join(rng.choice(NASTY) for _ in range(rng.randint(0, 4)))
    return {"tag": s, "nested": [[1, [2, s]], {"k": [s, {"z": []}]}], "n": rng.random()}


def _write(path: Path, records: list, rng: random.Random) -> bytes:
    text = json.dumps(records, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
    data = (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + text.encode() + b"\n"
    path.write_bytes(data)
    return data


def _ranges_parse(path: Path, data: bytes, range_bytes: int, chunk: int) -> list:
    ranges = scan_json_array(path, range_bytes, chunk)
    assert ranges is not None
    got: list = []
    for lo, hi, first, count in zip(ranges.starts, ranges.ends, ranges.first, ranges.counts):
        part = json.loads(b"[" + data[lo:hi] + b"]")
        assert first == len(got)
        assert count in (-1, len(part))
        got += part
    return got


@pytest.mark.slow
def test_scan_finds_the_elements_at_every_chunk_border(tmp_path: Path) -> None:
    rng = random.Random(3)
    path = tmp_path / "a.json"
    for _ in range(16):
        records = [_nasty_record(rng) for _ in range(rng.randint(0, 5))]
        data = _write(path, records, rng)
        # chunk borders at every byte (1), next to every escape, inside strings; ranges of 1 to all records
        for chunk in (1, 2, 3, 7, 1 << 20):
            for range_bytes in (1, 90, 1 << 20):
                assert _ranges_parse(path, data, range_bytes, chunk) == records


def test_scan_cuts_ranges_of_about_the_given_size(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    records = [{"i": i, "s": "x" * (i % 7)} for i in range(500)]
    data = _write(path, records, random.Random(0))
    ranges = scan_json_array(path, 300, 64)
    assert ranges is not None and len(ranges) > 10
    sizes = ranges.ends - ranges.starts
    assert (sizes[:-1] >= 300).all() and (sizes[:-1] < 300 + 40).all()
    assert ranges.counts.sum() == 500 and _ranges_parse(path, data, 300, 64) == records


@pytest.mark.parametrize(
    "text",
    ['{"a": [1]}', "[1, 2", "[1]]", "[1] x", "", "  \n", "[}", '"[1]"', "[[1], 2", '["]'],
)
def test_scan_refuses_what_is_not_one_array(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    for chunk in (1, 3, 1 << 20):
        assert scan_json_array(path, 1, chunk) is None


def _case_files(tmp_path: Path, case: dict, n_files: int, name: str, nasty: bool = True) -> list[str]:
    """The case's detections written round-robin into ``n_files`` files; with ``nasty``, records carry extra
    fields (strings with escapes, nested arrays) that pycocotools and deteval ignore."""
    rng = random.Random(7)
    dt = copy.deepcopy(case["dt"])
    if nasty:
        for d in dt:
            d.update(_nasty_record(rng))
    paths = []
    for k in range(n_files):
        p = tmp_path / f"{name}_{k}.json"
        _write(p, dt[k::n_files], rng)
        paths.append(str(p))
    return paths


def _same(a: Any, b: Any) -> None:
    for name in ("precision", "recall", "scores", "stats"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.lines, a.counts, a.warnings) == (b.lines, b.counts, b.warnings)


def test_range_loader_gives_the_rows_of_the_whole_file(tmp_path: Path) -> None:
    for iou_type, case in {
        "bbox": random_case(4),
        "segm": random_segm_case(3),
        "keypoints": random_keypoints_case(2),
    }.items():
        g = load_coco_gt(
            case["gt"], keep_segmentation=iou_type == "segm", need_keypoints=iou_type == "keypoints"
        )
        (path,) = _case_files(tmp_path, case, 1, iou_type)
        whole = load_coco_results(path, g, iou_type=iou_type)
        for range_bytes in (1, 400, 1 << 20):
            ranges = scan_json_array(path, range_bytes)
            assert ranges is not None
            head = first_record(path, *ranges.head)
            assert head is not None and head[0] == whole.kind
            for lo, hi, first, count in zip(ranges.starts, ranges.ends, ranges.first, ranges.counts):
                r = load_results_range(
                    path, lo, hi, first, count, g, iou_type=iou_type, kind=head[0], kp_width=head[1]
                )
                assert r is not None
                rows = slice(first, first + len(r))
                assert len(r) == max(count, 0) or count == -1
                for col in ("img", "cat", "score", "bbox", "area", "keypoints"):
                    a, b = getattr(r, col), getattr(whole, col)
                    assert (a is None) == (b is None)
                    if a is not None:
                        assert np.array_equal(a, b[rows], equal_nan=True), col
                if whole.segmentation is not None:
                    assert r.segmentation == whole.segmentation[rows]


@pytest.fixture
def no_whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Records every whole-file read of the sharded path (in this process)."""
    calls: list[Any] = []
    real = dcoco._whole_task

    def spy(source: Any, *args: Any) -> Any:
        calls.append(source)
        return real(source, *args)

    monkeypatch.setattr(dcoco, "_whole_task", spy)
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_in_process_shards_and_ranges(tmp_path: Path, seed: int, no_whole_reads: list[Any]) -> None:
    case = [random_case, random_segm_case, random_keypoints_case, random_case][seed](seed + 10)
    iou_type = ["bbox", "segm", "keypoints", "bbox"][seed]
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(case["gt"]))
    kw: dict[str, Any] = {"iou_type": iou_type, "params": case.get("params")}
    for n_files in (1, 3):
        paths = _case_files(tmp_path, case, n_files, f"dt{n_files}")
        one = evaluate_coco(str(gt), paths if n_files > 1 else paths[0], **kw)
        for shards in (1, 2, 7):
            for range_bytes in (1, 333, 1 << 22):
                got = evaluate_coco_sharded(
                    str(gt), paths if n_files > 1 else paths[0], shards=shards, range_bytes=range_bytes, **kw
                )
                _same(got, one)
    assert no_whole_reads == []  # every file was read in ranges


def _break(records: list, i: int, how: str) -> None:
    r = records[i]
    if how == "image":
        r["image_id"] = 10**9 + 7
    elif how == "bbox":
        r["bbox"] = [1, 2, -3, 4]
    elif how == "score":
        r["score"] = "high"
    elif how == "type":
        records[i] = [r]
    elif how == "nan":
        r["score"] = float("nan")  # json writes NaN: only the json module reads it


def _bad_files(tmp_path: Path, seed: int) -> tuple[Path, list[str]]:
    rng = random.Random(seed)
    case = random_case(seed)
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(case["gt"]))
    dt = copy.deepcopy(case["dt"])
    for d in dt:
        d.update(_nasty_record(rng))
    n = len(dt)
    for i in rng.sample(range(n), min(n, rng.randint(1, 3))):
        _break(dt, i, rng.choice(["image", "bbox", "score", "type", "nan"]))
    paths = []
    for k in range(2):
        p = tmp_path / f"bad{seed}_{k}.json"
        p.write_text(json.dumps(dt[k::2]))
        paths.append(str(p))
    return gt, paths


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_bad_records_in_any_range(tmp_path: Path, seed: int, no_whole_reads: list[Any]) -> None:
    gt, paths = _bad_files(tmp_path, seed)
    with pytest.raises(DetevalError) as one:
        evaluate_coco(str(gt), paths)
    skipped = evaluate_coco(str(gt), paths, on_error="skip")
    assert skipped.counts["skipped_records"] > 0
    for shards in (1, 2, 7):
        for range_bytes in (1, 250, 1 << 22):
            with pytest.raises(DetevalError) as got:
                evaluate_coco_sharded(str(gt), paths, shards=shards, range_bytes=range_bytes)
            assert str(got.value) == str(one.value) and type(got.value) is type(one.value)
            kw = {"shards": shards, "range_bytes": range_bytes, "on_error": "skip"}
            _same(evaluate_coco_sharded(str(gt), paths, **kw), skipped)
    assert no_whole_reads  # the files with a bad record were read whole


@pytest.mark.slow
def test_files_that_are_not_one_array(tmp_path: Path) -> None:
    case = random_case(2)
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(case["gt"]))
    good = json.dumps(case["dt"])
    odd = [
        '{"a": 1}',
        good[:-5],
        good + " x",
        good.replace("},", "}},", 1),
        good.replace('"score"', '"score": 1, "score"', 1),  # a repeated key
        good.replace("}, {", '}, {"s": "\\u00e9\\"\\\\", ', 1)[:-1] + '"]',  # ends inside a string
        good.replace("}, {", "}, 17, {", 1),
        "[]",
        " [ ] ",
        "",
        good,
    ]
    for text in odd:
        p = tmp_path / "odd.json"
        p.write_text(text)
        one = _outcome(evaluate_coco, str(gt), str(p), params=case["params"])
        for range_bytes in (1, 1 << 22):
            kw = {"shards": 2, "range_bytes": range_bytes, "params": case["params"]}
            _same_outcome(_outcome(evaluate_coco_sharded, str(gt), str(p), **kw), one)


def _outcome(fn: Any, *args: Any, **kw: Any) -> Any:
    try:
        return fn(*args, **kw)
    except DetevalError as exc:
        return exc


def _same_outcome(got: Any, one: Any) -> None:
    if isinstance(one, DetevalError):
        assert type(got) is type(one) and str(got) == str(one)
    else:
        _same(got, one)


@pytest.mark.parametrize("variant", ["keypoints", "nothing"])
def test_skip_with_a_record_of_another_branch(
    tmp_path: Path, no_whole_reads: list[Any], variant: str
) -> None:
    """A record without a box among boxed ones picks another loadRes branch alone (or none): the whole
    file's rules decide (the first record's branch: it is skipped, one process and sharded alike)."""
    case = random_case(6)
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(case["gt"]))
    dt = copy.deepcopy(case["dt"])
    del dt[len(dt) // 2]["bbox"]
    if variant == "keypoints":
        dt[len(dt) // 2]["keypoints"] = [1, 2, 2]
    p = tmp_path / "mixed.json"
    p.write_text(json.dumps(dt))
    one = _outcome(evaluate_coco, str(gt), str(p), on_error="skip")
    assert not isinstance(one, DetevalError) and one.counts["skipped_records"] == 1
    got = _outcome(evaluate_coco_sharded, str(gt), str(p), shards=3, range_bytes=100, on_error="skip")
    _same_outcome(got, one)
    assert no_whole_reads == [str(p)]


@pytest.fixture
def client(dask_cluster: Any) -> Any:
    return dask_cluster  # a real LocalCluster of 2 worker processes, shared (tests/conftest.py)


@pytest.mark.slow
def test_ranges_on_the_cluster(client: Any, tmp_path: Path) -> None:
    cases = {"bbox": random_case(5), "segm": random_segm_case(2), "keypoints": random_keypoints_case(1)}
    for iou_type, case in cases.items():
        gt = tmp_path / f"gt_{iou_type}.json"
        gt.write_text(json.dumps(case["gt"]))
        paths = _case_files(tmp_path, case, 3, iou_type)  # one file per rank, images interleaved
        kw: dict[str, Any] = {"iou_type": iou_type, "params": case.get("params")}
        one = evaluate_coco(str(gt), paths, **kw)
        for shards, range_bytes in ((1, 1), (2, 400), (7, 1), (7, 1 << 22)):
            got = evaluate_coco_sharded(
                str(gt), paths, client=client, shards=shards, range_bytes=range_bytes, **kw
            )
            _same(got, one)


@pytest.mark.slow
def test_bad_records_on_the_cluster(client: Any, tmp_path: Path) -> None:
    gt, paths = _bad_files(tmp_path, 1)
    with pytest.raises(DetevalError) as one:
        evaluate_coco(str(gt), paths)
    skipped = evaluate_coco(str(gt), paths, on_error="skip")
    for shards, range_bytes in ((2, 1), (7, 300)):
        with pytest.raises(DetevalError) as got:
            evaluate_coco_sharded(str(gt), paths, client=client, shards=shards, range_bytes=range_bytes)
        assert str(got.value) == str(one.value) and type(got.value) is type(one.value)
        kw = {"client": client, "shards": shards, "range_bytes": range_bytes, "on_error": "skip"}
        _same(evaluate_coco_sharded(str(gt), paths, **kw), skipped)


# ----------------------------------------------------------------------------------------- LVIS


def _lvis_files(tmp_path: Path, seed: int, segm: bool, n_files: int) -> tuple[str, list[str], dict]:
    from _lvis_cases import random_lvis_case

    case = random_lvis_case(seed, segm=segm)
    gt = tmp_path / f"lvis_gt{seed}.json"
    gt.write_text(json.dumps(case["gt"]))
    return str(gt), _case_files(tmp_path, case, n_files, f"lvis{seed}"), case


@pytest.fixture
def lvis_spy(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every outcome of the workers' reading of LVIS results (None: the driver read them)."""
    import deteval.run.lvis as dlvis

    outcomes: list[Any] = []
    real = dlvis.read_and_match_lvis

    def spy(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        outcomes.append(out)
        return out

    monkeypatch.setattr(dlvis, "read_and_match_lvis", spy)
    return outcomes


def _lvis_same(a: Any, b: Any) -> None:
    assert np.array_equal(a.precision, b.precision) and np.array_equal(a.recall, b.recall)
    assert list(a.results.items()) == list(b.results.items())
    assert (a.lines, a.counts, a.warnings) == (b.lines, b.counts, b.warnings)
    for name in ("pooled_precision", "pooled_recall"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None and y is None) or np.array_equal(x, y)


@pytest.mark.slow
@pytest.mark.parametrize("segm", [False, True])
def test_lvis_files_read_by_the_tasks(
    tmp_path: Path, segm: bool, monkeypatch: pytest.MonkeyPatch, lvis_spy: list[Any]
) -> None:
    from deteval.detection.lvis import evaluate_lvis

    iou_type = "segm" if segm else "bbox"
    for seed in range(3):
        gt, paths, case = _lvis_files(tmp_path, seed + (500 if segm else 0), segm, 3)
        for caps in ({"max_dets": case["max_dets"]}, {"max_dets": None, "dets_per_cat": 2}):
            kw: dict[str, Any] = {"iou_type": iou_type, "pooled": True, **caps}
            one = _outcome(evaluate_lvis, gt, paths, **kw)
            for range_bytes, shards in ((1, 1), (300, 2), (1 << 22, 7)):
                monkeypatch.setattr(dcoco, "RANGE_BYTES", range_bytes)
                got = _outcome(evaluate_lvis, gt, paths, shards=shards, **kw)
                if isinstance(one, DetevalError):  # (a survivor of the bbox branch without a box)
                    assert type(got) is type(one) and str(got) == str(one)
                else:
                    _lvis_same(got, one)
    assert any(o is not None for o in lvis_spy)  # the workers' reading was used
    assert segm or all(o is not None for o in lvis_spy)  # (bbox: always)


def test_lvis_several_files_equal_their_concatenation(tmp_path: Path) -> None:
    from deteval.detection.lvis import evaluate_lvis

    gt, paths, _ = _lvis_files(tmp_path, 4, False, 2)
    joined = [r for p in paths for r in json.loads(Path(p).read_text(encoding="utf-8-sig"))]
    _lvis_same(evaluate_lvis(gt, paths, fixed_ap=True), evaluate_lvis(gt, joined, fixed_ap=True))


def test_lvis_bad_records_and_skip(tmp_path: Path) -> None:
    from deteval.detection.lvis import evaluate_lvis

    gt, paths, _ = _lvis_files(tmp_path, 5, False, 2)
    records = json.loads(Path(paths[1]).read_text(encoding="utf-8-sig"))
    records[len(records) // 2]["bbox"] = [0, 0, -1, 2]
    Path(paths[1]).write_text(json.dumps(records))
    with pytest.raises(DetevalError) as one:
        evaluate_lvis(gt, paths)
    with pytest.raises(DetevalError) as got:
        evaluate_lvis(gt, paths, shards=2)
    assert str(got.value) == str(one.value)
    skipped = evaluate_lvis(gt, paths, on_error="skip")
    assert skipped.counts["skipped_records"] == 1
    _lvis_same(evaluate_lvis(gt, paths, shards=3, on_error="skip"), skipped)


@pytest.mark.slow
def test_lvis_ranges_on_the_cluster(client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deteval.detection.lvis import evaluate_lvis

    monkeypatch.setattr(dcoco, "RANGE_BYTES", 200)
    for segm in (False, True):
        gt, paths, case = _lvis_files(tmp_path, 1 + (500 if segm else 0), segm, 2)
        kw: dict[str, Any] = {"iou_type": "segm" if segm else "bbox", "pooled": True}
        for caps in ({"max_dets": case["max_dets"]}, {"fixed_ap": True}):
            one = _outcome(evaluate_lvis, gt, paths, **kw, **caps)
            for shards in (1, 2, 7):
                got = _outcome(evaluate_lvis, gt, paths, client=client, shards=shards, **kw, **caps)
                if isinstance(one, DetevalError):  # (a survivor of the bbox branch without a box)
                    assert type(got) is type(one) and str(got) == str(one)
                else:
                    _lvis_same(got, one)


def test_lvis_cli_several_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deteval.cli import main

    gt, paths, _ = _lvis_files(tmp_path, 7, False, 3)
    joined = tmp_path / "joined.json"
    joined.write_text(json.dumps([r for p in paths for r in json.loads(Path(p).read_text("utf-8-sig"))]))

    def run(*args: str) -> dict:
        assert main(["lvis", gt, *args, "--format", "json", "--pooled"]) == 0
        return dict(json.loads(capsys.readouterr().out))

    one = run(str(joined))
    assert one["n_dt"] == sum(len(json.loads(Path(p).read_text("utf-8-sig"))) for p in paths) > 0
    assert run(*paths) == one
    assert run(*paths, "--shards", "3") == one


@pytest.mark.slow
def test_bbox_ranges_decoded_by_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bbox file's byte ranges are decoded by type (msgspec) where it vouches for them: the sharded result
    equals the one-process result and the sharded result with typed decoding off, bit for bit, on clean and
    on damaged files (a repeated key, a bool score: those ranges are read by the ordinary parse)."""
    pytest.importorskip("msgspec")
    from deteval.io.coco import ranges as coco_ranges
    from deteval.io.coco import typed as coco_typed

    typed_ranges = []
    real = coco_ranges.typed_bbox

    def spy(*args: Any) -> Any:
        out = real(*args)
        typed_ranges.append(out is not None)
        return out

    monkeypatch.setattr(coco_ranges, "typed_bbox", spy)
    fruits = Path(__file__).resolve().parent / "data" / "coco" / "coco_fruits"
    gt = fruits / "fruit_val_coco_format.json"
    records = json.loads((fruits / "coco_instances_results.json").read_text())
    for variant in ("clean", "repeated key", "bool score"):
        text = json.dumps(records)
        if variant == "repeated key":  # in a record of the middle: that range is read by the ordinary parse
            at = text.index('"score":', len(text) // 2)
            text = text[:at] + '"score": 0.5, ' + text[at:]
        if variant == "bool score":
            dt = copy.deepcopy(records)
            dt[len(dt) // 2]["score"] = True
            text = json.dumps(dt)
        p = tmp_path / "dt.json"
        p.write_text(text)
        kw: dict[str, Any] = {}
        one = _outcome(evaluate_coco, str(gt), str(p), **kw)
        assert variant != "clean" or one.stats[0] > 0.1  # a real evaluation
        for shards, range_bytes in ((2, 200), (3, 1 << 20)):
            got = _outcome(
                evaluate_coco_sharded, str(gt), str(p), shards=shards, range_bytes=range_bytes, **kw
            )
            _same_outcome(got, one)
            with monkeypatch.context() as m:
                m.setattr(coco_typed, "_DECODER", None)
                plain = _outcome(
                    evaluate_coco_sharded, str(gt), str(p), shards=shards, range_bytes=range_bytes, **kw
                )
            _same_outcome(got, plain)
    assert any(typed_ranges) and not all(typed_ranges)  # ranges read both ways
