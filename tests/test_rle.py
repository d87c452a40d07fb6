"""COCO RLE masks are decoded and checked by deteval before pycocotools sees them (issue 12, items 1-2).

A corrupt compressed string crashes pycocotools' decoder (it reads past the buffer) and runs that do not add
up to height × width make its IoU loop spin forever: those commands run in a subprocess with a timeout. The
decoder is checked against pycocotools itself on valid strings (the oracle), and every string the check
accepts, however damaged, is read back by pycocotools to the same runs.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fuzz_mutations import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from pycocotools import mask as mask_utils

from deteval.detection.coco import evaluate_coco
from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.coco import masks as coco_masks
from deteval.io.coco import result_masks as coco_result_masks
from deteval.io.rle import check_rles, decode_counts

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "coco" / "coco_val2014_100"
GT = json.loads((DATA / "instances_val2014_100.json").read_text())
RES = json.loads((DATA / "instances_val2014_fakesegm100_results.json").read_text())
CROWD = next(i for i, a in enumerate(GT["annotations"]) if a["iscrowd"])  # its counts are a list


def encode(values: list[int]) -> bytes:
    """Write counts in the compressed format (pycocotools' maskApi.h), deltas from index 3 on; any values,
    also negative or wrong ones, so that tests can build damaged strings."""
    out = bytearray()
    for m, v in enumerate(values):
        x = v - values[m - 2] if m > 2 else v
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            out.append(48 + (c | 0x20 if more else c))
    return bytes(out)


def runs_of(mask: np.ndarray) -> list[int]:
    """Runs of a mask in column-major order, starting with a run of zeros."""
    flat = mask.flatten(order="F").astype(np.int8)
    change = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.r_[0, change, flat.size]
    runs = np.diff(bounds).tolist()
    return ([0] + runs) if flat.size and flat[0] else runs


def decoded(strings: list[bytes]) -> list[list[int] | None]:
    runs, _, n_runs, errors = decode_counts(strings)
    out, pos = [], 0
    for n, e in zip(n_runs.tolist(), errors):
        out.append(None if e else runs[pos : pos + n].tolist())
        pos += n
    return out


def test_decoder_equals_pycocotools_on_random_masks():
    rng = np.random.default_rng(7)
    masks = []
    for t in range(400):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        m = rng.random((h, w)) < rng.random()
        if t % 9 == 0:
            m[:] = t % 2  # all background / all foreground
        masks.append(np.asfortranarray(m.astype(np.uint8)))
    rles = [mask_utils.encode(m) for m in masks]
    assert decoded([r["counts"] for r in rles]) == [runs_of(m) for m in masks]
    check_rles(rles, "f", list(range(len(rles))))
    assert encode(runs_of(masks[5])) == rles[5]["counts"]  # the test's writer is pycocotools' format


def test_large_values_only_as_far_as_pycocotools_reads_them():
    """pycocotools shifts 5-bit groups in a C int: a 7-character value is read right only below 2**31."""
    size = [1, 2**31]
    ok = {"size": size, "counts": encode([2**31 - 10, 10])}
    check_rles([ok], "f", [0])
    assert decoded([ok["counts"]]) == [[2**31 - 10, 10]]
    assert mask_utils.area([ok]).tolist() == [10]  # (area does not build the mask)
    too_big = {"size": [2, 2**31 - 1], "counts": encode([2**31, 2**31 - 2])}
    with pytest.raises(InputFormatError, match=r"record 4: .*too large for pycocotools"):
        check_rles([too_big], "f", [4])


BAD_STRINGS = {
    "ends_in_a_continuation": (b"3a0" + b"a", InputFormatError, "ends inside a value"),
    "only_a_continuation": (b"a", InputFormatError, "ends inside a value"),
    "empty": (b"", InputFormatError, "empty"),
    "outside_the_alphabet": (b"3 2", InputFormatError, "outside '0'..'o'"),
    "a_nul": (b"3\x002", InputFormatError, "outside '0'..'o'"),
    "not_ascii": ("3\u00e92", InputFormatError, "outside '0'..'o'"),
    "eight_characters": (b"oooooooo0", InputFormatError, "too large"),
    "negative_run": (encode([3, -2, 29]), ValidationError, "negative run"),
    "too_few_pixels": (encode([3, 2, 20]), ValidationError, "add up to 25 pixels, not height * width = 30"),
    "too_many_pixels": (encode([3, 2, 30]), ValidationError, "add up to 35 pixels"),
    "delta_to_negative": (encode([3, 2, 5, 1, 19, -1, 1]), ValidationError, "negative run"),
}


@pytest.mark.parametrize("batch", [1, 3, 1 << 18])
@pytest.mark.parametrize("name", sorted(BAD_STRINGS))
def test_bad_strings_are_refused(name, batch, monkeypatch):
    import deteval.io.rle as rle

    monkeypatch.setattr(rle, "BATCH_CHARS", batch)  # strings decoded in batches of about this many characters
    counts, exc, words = BAD_STRINGS[name]
    good = {"size": [5, 6], "counts": encode([3, 2, 25])}
    with pytest.raises(exc, match=f"^f: record 1: .*{re.escape(words)}"):
        check_rles([good, {"size": [5, 6], "counts": counts}, good], "f", [0, "record 1", 2])
    with pytest.raises(exc, match="record 1"):  # also as one part of a list of parts
        check_rles([[good], [good, {"size": [5, 6], "counts": counts}]], "f", [0, "record 1"])


@pytest.mark.parametrize("name", sorted(BAD_STRINGS))
def test_bad_strings_are_refused_on_the_all_strings_path(name):
    """Every entry a dict with a ``str`` counts: the joined fast path gives the same error as the generic one."""
    counts, exc, words = BAD_STRINGS[name]
    text = counts if isinstance(counts, str) else counts.decode("latin-1")
    good = {"size": [5, 6], "counts": encode([3, 2, 25]).decode()}
    with pytest.raises(exc, match=f"^f: record 1: .*{re.escape(words)}"):
        check_rles([good, {"size": [5, 6], "counts": text}, good], "f", [0, "record 1", 2])


def test_areas_are_pycocotools_area_on_random_runs():
    """The areas check_rles returns equal pycocotools' ``area`` on random runs (zero runs anywhere, long
    values, deltas of both signs), on both the all-strings path and the generic one; NaN for other entries."""
    rng = np.random.default_rng(3)
    rles = []
    for t in range(300):
        n = int(rng.integers(1, 40))
        runs = rng.integers(0, [3, 40, 5000][t % 3], n)
        runs[rng.random(n) < 0.2] = 0
        total = int(runs.sum())
        if total == 0:
            runs[0], total = 1, 1
        h = next(d for d in (7, 5, 3, 2, 1) if total % d == 0)
        rles.append({"size": [h, total // h], "counts": encode(runs.tolist()).decode()})
    ref = np.concatenate([mask_utils.area(rles[i : i + 100]) for i in range(0, len(rles), 100)])
    assert np.array_equal(check_rles(rles, "f", range(len(rles))), ref)
    mixed = [dict(r, counts=r["counts"].encode()) if i % 2 else r for i, r in enumerate(rles)]
    assert np.array_equal(check_rles(mixed, "f", range(len(rles))), ref)
    other = check_rles(
        [rles[0], [rles[1]], {"size": [5, 6], "counts": [3, 2, 25]}, [[1, 2, 3, 4, 5, 6]]], "f", range(4)
    )
    assert other[0] == ref[0] and np.isnan(other[1:]).all()


def test_count_lists():
    check_rles([{"size": [5, 6], "counts": [3, 2, 25]}], "f", [0])
    with pytest.raises(ValidationError, match="add up to 29 pixels"):
        check_rles([{"size": [5, 6], "counts": [3, 1, 25]}], "f", [0])
    with pytest.raises(InputFormatError, match="counts list is empty"):
        check_rles([{"size": [5, 6], "counts": []}], "f", [0])


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' decode under numpy 2
@fuzz_settings(300)
@given(
    mask=st.lists(st.booleans(), min_size=1, max_size=60),
    width=st.integers(1, 6),
    edits=st.lists(st.tuples(st.sampled_from("tdir"), st.integers(0, 200), st.integers(0, 255)), max_size=4),
)
def test_fuzz_accepted_strings_read_back_identically_by_pycocotools(mask, width, edits):
    """Random damage to a valid string: refused with a DetevalError, or accepted, and then pycocotools
    decodes exactly the mask of the runs deteval decoded (no crash, no hang: the runs fill the mask)."""
    width = min(width, len(mask))
    h = len(mask) // width
    m = np.asfortranarray(np.array(mask[: h * width], dtype=np.uint8).reshape(h, width, order="F"))
    counts = bytearray(mask_utils.encode(m)["counts"])
    for op, pos, byte in edits:
        i = pos % (len(counts) + 1)
        if op == "t":
            counts = counts[:i]
        elif op == "d":
            del counts[i : i + 1]
        elif op == "i":
            counts[i:i] = bytes([48 + byte % 64 if byte < 200 else byte])
        else:
            counts[i : i + 1] = bytes([48 + byte % 64])
    rle = {"size": [h, width], "counts": bytes(counts)}
    try:
        check_rles([rle], "f", [0])
    except DetevalError:
        return
    runs = decoded([bytes(counts)])[0]
    flat = np.repeat(np.arange(len(runs)) % 2, runs).astype(np.uint8)  # runs alternate 0, 1, 0, ...
    assert mask_utils.decode([rle])[:, :, 0].flatten(order="F").tolist() == flat.tolist()
    assert mask_utils.area([rle]).tolist() == [int(flat.sum())]


# ---------------------------------------------------------------------------------------------- CLI


def run_cli(argv: list[str]) -> subprocess.CompletedProcess:
    """``python -m deteval`` in a fresh interpreter with a timeout: a crash (signal) or hang fails."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "deteval", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


def damaged_results(counts: str | list) -> list:
    res = copy.deepcopy(RES[:40])
    res[3]["segmentation"] = {"size": res[3]["segmentation"]["size"], "counts": counts}
    return res


def write(path: Path, obj) -> str:
    path.write_text(json.dumps(obj))
    return str(path)


RESULT_DAMAGE = {
    "ends_in_a_continuation": (lambda c: c[:-1] + "a", "ends inside a value"),
    "runs_short": (lambda c: c[:-2] + "1", "pixels, not height * width = 272640"),
    "list_runs_short": (lambda c: [5, 5, 5], "add up to 15 pixels, not height * width = 272640"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RESULT_DAMAGE))
def test_cli_refuses_bad_result_rles_and_skips_them(tmp_path, name):
    change, words = RESULT_DAMAGE[name]
    gt = write(tmp_path / "gt.json", GT)
    res = write(tmp_path / "res.json", damaged_results(change(RES[3]["segmentation"]["counts"])))
    proc = run_cli(["coco", gt, res, "--iou-type", "segm"])
    assert proc.returncode == 2, proc
    assert proc.stderr.startswith(f"deteval: error: {res}: record 3: ") and words in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_cli(["coco", gt, res, "--iou-type", "segm", "--on-error", "skip", "--format", "json"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    without = [r for i, r in enumerate(RES[:40]) if i != 3]
    clean = evaluate_coco(GT, without, iou_type="segm").to_result().to_dict()
    assert doc["skipped_records"] == 1 and doc["stats"] == clean["stats"]


@pytest.mark.slow
def test_cli_refuses_bad_crowd_rle_in_the_ground_truth(tmp_path):
    gt = copy.deepcopy(GT)
    gt["annotations"][CROWD]["segmentation"]["counts"][-1] += 1  # one pixel too many
    path, res = write(tmp_path / "gt.json", gt), write(tmp_path / "res.json", RES)
    proc = run_cli(["coco", path, res, "--iou-type", "segm"])
    assert proc.returncode == 2, proc
    assert f"{path}: annotations[{CROWD}]: RLE runs add up to 307201 pixels" in proc.stderr


@pytest.mark.parametrize("form", ["dict", "pycocotools"])
def test_bad_ground_truth_rle_in_memory(form):
    from pycocotools.coco import COCO

    gt = copy.deepcopy(GT)
    seg = gt["annotations"][CROWD]["segmentation"]
    seg["counts"] = encode(seg["counts"])[:-1].decode() + "a"  # compressed, and corrupt
    src = gt
    if form == "pycocotools":
        src = COCO()
        src.dataset = gt
        src.createIndex()
    with pytest.raises(InputFormatError, match=rf"annotations\[{CROWD}\]: RLE counts string ends inside"):
        evaluate_coco(src, RES, iou_type="segm")


def test_segm_result_masks_are_validated_once(monkeypatch):
    """A results file in pycocotools' segm branch (no bbox) has each RLE decoded and checked once (issue 15):
    at load, where its area and box are computed; the matcher reuses the converted masks."""
    import sys
    from pathlib import Path

    import deteval.detection.coco as coco_mod
    import deteval.detection.coco_rles as coco_rles

    sys.path.insert(0, str(Path(__file__).parent))
    from _coco_cases import random_segm_case, run_pycocotools

    for seed in range(40):
        case = random_segm_case(seed)
        dt = [{k: v for k, v in d.items() if k != "bbox"} for d in case["dt"]]
        if dt:
            break
    seen: list[int] = []

    def counting(real):
        def wrapper(segms, file, records, **kw):
            if file == "<in-memory results>":
                seen.extend(list(records))
            return real(segms, file, records, **kw)

        return wrapper

    for module in (coco_masks, coco_result_masks):
        monkeypatch.setattr(module, "check_rles", counting(module.check_rles))
    monkeypatch.setattr(coco_rles, "check_rles", counting(coco_rles.check_rles))
    ours = coco_mod.evaluate_coco(case["gt"], dt, iou_type="segm")
    assert sorted(seen) == list(range(len(dt)))
    stats, *_ = run_pycocotools(case["gt"], dt, "segm")
    assert np.array_equal(ours.stats, stats)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: None,
        lambda s: s.update(size=[80, 101]),
        lambda s: s.update(size=[80, True]),
        lambda s: s.update(size=[80.0, 100]),
        lambda s: s.update(size=[80, 100, 1]),
        lambda s: s.update(size=(80, 100)),
        lambda s: s.update(counts=list(range(3))),
        lambda s: s.update(counts=b"PP0"),
        lambda s: s.update(counts="PP0"),
        lambda s: s.pop("size"),
        lambda s: s.update(size=[-80, -100]),
        lambda s: s.update(size=[2**40, 2**40]),
    ],
)
def test_segm_results_fast_structure_check_gives_the_record_by_record_outcome(mutate, monkeypatch):
    """The vectorised structure check of result RLEs (issue 15) only skips the record-by-record checks when
    they would all pass: any mutation gives the same areas or the same error as without it."""
    import sys
    from pathlib import Path

    import deteval.io.coco as io_coco

    sys.path.insert(0, str(Path(__file__).parent))
    from _coco_cases import random_segm_case

    case = next(c for c in map(random_segm_case, range(40)) if len(c["dt"]) > 3)
    dt = [{k: v for k, v in d.items() if k != "bbox"} for d in copy.deepcopy(case["dt"])]
    mutate(dt[2]["segmentation"])

    def outcome():
        try:
            r = io_coco.load_coco_results(
                dt, io_coco.load_coco_gt(case["gt"], keep_segmentation=True), iou_type="segm"
            )
        except DetevalError as exc:
            return type(exc), str(exc)
        return r.area.tolist(), r.bbox.tolist()

    fast = outcome()
    monkeypatch.setattr(
        coco_result_masks, "plain_rle_sizes", lambda *a: None
    )  # (the fast check says "not sure")
    assert outcome() == fast


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: None,
        lambda s: s[0].__setitem__(3, float("nan")),
        lambda s: s[0].__setitem__(3, 1e7),
        lambda s: s[0].__setitem__(3, -1e6),
        lambda s: s[0].__setitem__(3, "7"),
        lambda s: s[0].__setitem__(3, None),
        lambda s: s[0].__setitem__(3, True),
        lambda s: s[0].__setitem__(3, 2**70),
        lambda s: s[0].pop(),
        lambda s: s[0].__delitem__(slice(4, None)),
        lambda s: s[0].append([1, 2]),
        lambda s: s.append(list(s[0])),  # two polygons: converted with the others, then merged
        lambda s: s.append([1, 2]),
    ],
)
def test_ground_truth_polygon_fast_check_gives_the_record_by_record_outcome(mutate, monkeypatch):
    """The vectorised check of ground-truth polygons (issue 15) only skips the record-by-record checks
    when they would all pass: any mutation gives the same numbers or the same error as without it."""
    import sys

    import deteval.detection.coco as coco_mod
    from deteval.detection.coco_rles import RleTable

    sys.path.insert(0, str(Path(__file__).parent))
    from _coco_cases import random_segm_case

    case = next(
        c
        for c in map(random_segm_case, range(40))
        if len(c["dt"]) > 3 and all(isinstance(a["segmentation"], list) for a in c["gt"]["annotations"][:3])
    )
    gt = copy.deepcopy(case["gt"])
    mutate(gt["annotations"][2]["segmentation"])

    def outcome():
        try:
            return coco_mod.evaluate_coco(gt, case["dt"], iou_type="segm").stats.tolist()
        except DetevalError as exc:
            return type(exc), str(exc)

    fast = outcome()
    monkeypatch.setattr(RleTable, "_polygon_lists", lambda self, todo, batches: todo)
    assert outcome() == fast


def _wrapping_runs(pixels: int) -> list[int]:
    """Non-negative runs whose stored values all stay below 2**31 and whose sum is 2**64 + ``pixels``: what
    int64 arithmetic would read as exactly ``pixels`` (2**18 + 1 values, 1.8M characters)."""
    n = 1 << 17
    m = np.arange(2 * n + 1, dtype=np.int64)
    runs = (m // 2) << 30  # 0, 0, 2**30, 2**30, 2 * 2**30, ...: each stored value 2**30, the sum n**2 * 2**30
    runs[-1] += pixels  # (its stored value 2**30 + pixels)
    out = runs.tolist()
    assert sum(out) == 2**64 + pixels and min(out) >= 0
    return out


@pytest.mark.parametrize("batch", [3, 1 << 18])
def test_runs_whose_sum_wraps_round_int64_are_refused(batch, monkeypatch):
    """A string whose runs add up to 2**64 + height × width: int64 sums read it as exactly height × width;
    pycocotools would then decode 2**64 pixels. Refused, on the per-entry and on the all-strings path."""
    import deteval.io.rle as rle

    monkeypatch.setattr(rle, "BATCH_CHARS", batch)
    counts = encode(_wrapping_runs(30))
    words = "add up to 2**62 pixels or more, not height * width = 30"
    good = {"size": [5, 6], "counts": encode([3, 2, 25])}
    with pytest.raises(ValidationError, match=f"^f: record 1: .*{re.escape(words)}"):
        check_rles([good, {"size": [5, 6], "counts": counts}], "f", [0, "record 1"])
    with pytest.raises(ValidationError, match=re.escape(words)):
        check_rles([{"size": [5, 6], "counts": counts.decode()}], "f", [0])


def test_long_valid_strings_keep_their_totals_and_areas():
    """More values than the int64 bound covers without a second look (2**16): valid strings still pass, with
    pycocotools' area."""
    runs = [1] * 70_001  # 70,001 runs of one pixel; the odd ones (35,000) are foreground
    h, w = 70_001, 1
    area = check_rles([{"size": [h, w], "counts": encode(runs)}], "f", [0])
    assert area.tolist() == [35_000.0]
    assert mask_utils.area({"size": [h, w], "counts": encode(runs)}) == 35_000
