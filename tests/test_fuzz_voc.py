"""Fuzzing the VOC loaders and matcher: damaged files give a DetevalError or a valid result, nothing else.

No other exception, no hang (every example is one small file set) and no NaN in a reported metric, in
both error modes (``on_error="raise"`` and ``"skip"``).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
from fuzz_mutations import assert_valid_result, fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st

from deteval.detection.voc import VOCDetections, VOCGroundTruth, match_voc
from deteval.errors import DetevalError
from deteval.io.voc import load_voc_annotations, load_voc_detections, parse_voc_xml, read_image_set
from deteval.run.voc import evaluate_voc

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "voc"
XML = (SAMPLE / "Annotations" / "000004.xml").read_bytes()
COMP4 = (SAMPLE / "results" / "comp4_det_test_car.txt").read_bytes()
IMAGE_SET = (SAMPLE / "ImageSets" / "Main" / "test.txt").read_bytes()
SINGLE = b"".join(
    b" ".join([line.split()[0], cls.encode(), *line.split()[1:]]) + b"\n"
    for cls in ("car", "dog")
    for line in (SAMPLE / "results" / f"comp4_det_test_{cls}.txt").read_bytes().splitlines()
)
FUZZ = fuzz_settings(150)
MODES = st.sampled_from(("raise", "skip"))


def _evaluate(root: Path, on_error: str, layout: str = "comp4") -> None:
    try:
        gt = load_voc_annotations(root / "Annotations", root / "test.txt", on_error=on_error)
        if layout == "comp4":
            dets = load_voc_detections(
                str(root / "comp4_{cls}.txt"), gt.images, classes=["car", "dog"], on_error=on_error
            )
        else:
            dets = load_voc_detections(
                root / "single.txt", gt.images, layout="single", on_error=on_error, unknown_images="warn"
            )
        for metric in ("voc07", "voc2010"):
            result = evaluate_voc(gt, dets, metric=metric)
            assert_valid_result(result)
            assert result.summary["skipped_records"] == len(gt.skipped) + len(dets.skipped)
            if on_error == "raise":
                assert result.summary["skipped_records"] == 0
    except DetevalError as exc:
        assert exc.file is not None or "ground truth" in exc.reason or "detection" in exc.reason, exc


def _tree(tmp: str, xml: bytes = XML, comp4: bytes = COMP4, image_set: bytes = IMAGE_SET) -> Path:
    root = Path(tmp)
    (root / "Annotations").mkdir()
    for p in (SAMPLE / "Annotations").glob("*.xml"):
        (root / "Annotations" / p.name).write_bytes(p.read_bytes())
    (root / "Annotations" / "000004.xml").write_bytes(xml)
    (root / "comp4_car.txt").write_bytes(comp4)
    (root / "comp4_dog.txt").write_bytes((SAMPLE / "results" / "comp4_det_test_dog.txt").read_bytes())
    (root / "test.txt").write_bytes(image_set)
    return root


@FUZZ
@given(xml=mutated(XML), on_error=MODES)
def test_fuzz_annotation_xml(xml, on_error):
    with tempfile.TemporaryDirectory() as tmp:
        _evaluate(_tree(tmp, xml=xml), on_error)


@FUZZ
@given(comp4=mutated(COMP4, max_ops=6), on_error=MODES)
def test_fuzz_comp4_detections(comp4, on_error):
    with tempfile.TemporaryDirectory() as tmp:
        _evaluate(_tree(tmp, comp4=comp4), on_error)


@FUZZ
@given(single=mutated(SINGLE, max_ops=6), on_error=MODES)
def test_fuzz_single_file_detections(single, on_error):
    with tempfile.TemporaryDirectory() as tmp:
        root = _tree(tmp)
        (root / "single.txt").write_bytes(single)
        _evaluate(root, on_error, layout="single")


@FUZZ
@given(image_set=mutated(IMAGE_SET))
def test_fuzz_image_set(image_set):
    with tempfile.TemporaryDirectory() as tmp:
        root = _tree(tmp, image_set=image_set)
        try:
            ids = read_image_set(root / "test.txt")
        except DetevalError as exc:
            assert exc.file == str(root / "test.txt")
            return
        assert ids and len(set(ids)) == len(ids)
        _evaluate(root, "raise")


@FUZZ
@given(xml=mutated(XML, max_ops=8))
def test_fuzz_xml_parser_alone(xml):
    skipped: list[str] = []
    try:
        _info, objects = parse_voc_xml(xml, "x.xml", skipped=skipped)
    except DetevalError as exc:
        assert exc.file == "x.xml"
        return
    for name, box, difficult, *_ in objects:
        assert name and len(box) == 4 and all(np.isfinite(box)) and box[2] >= box[0] and box[3] >= box[1]
        assert difficult in (0, 1)
    assert all(s.startswith("x.xml: object ") for s in skipped)


def test_skip_mode_keeps_exactly_the_valid_lines():
    """A fixed damaged file: skip mode equals the evaluation of the valid lines alone."""
    good = COMP4.splitlines()
    bad = [b"000004 nan 1 2 3 4", b"000004 0.5 1 2", b"000004 0.5 9 2 3 4", b"\xff 0.5 1 2 3 4"]
    mixed = b"\n".join(x for pair in zip(good, bad + [b""] * len(good)) for x in pair) + b"\n"
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        ra, rb = _tree(a, comp4=mixed), _tree(b)
        gt = load_voc_annotations(ra / "Annotations", ra / "test.txt")
        classes = ["car", "dog"]
        da = load_voc_detections(str(ra / "comp4_{cls}.txt"), gt.images, classes=classes, on_error="skip")
        db = load_voc_detections(str(rb / "comp4_{cls}.txt"), gt.images, classes=["car", "dog"])
        assert len(da.skipped) == len(bad)
        assert evaluate_voc(gt, da).per_class == evaluate_voc(gt, db).per_class


# ------------------------------------------------------------------------------------------------------
# The matcher on random arrays, degenerate boxes included


coord = st.one_of(
    st.floats(-50, 150, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, 5e-324, 1e15, -1e15, 2.0**53, -(2.0**53)]),
)


@st.composite
def box_table(draw, max_n: int = 12):
    n = draw(st.integers(0, max_n))
    x1 = np.array(draw(st.lists(coord, min_size=n, max_size=n)), dtype=np.float64)
    y1 = np.array(draw(st.lists(coord, min_size=n, max_size=n)), dtype=np.float64)
    # widths/heights from 0 (degenerate: one pixel under +1, zero area without) to large
    w = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 10.0, 1e3]), min_size=n, max_size=n)))
    h = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 10.0, 1e3]), min_size=n, max_size=n)))
    boxes = np.stack([x1, y1, np.minimum(x1 + w, 2.0**53), np.minimum(y1 + h, 2.0**53)], axis=1)
    return boxes.reshape(n, 4)


@fuzz_settings(200)
@given(
    gt_boxes=box_table(),
    det_boxes=box_table(),
    data=st.data(),
    metric=st.sampled_from(("voc07", "voc2010")),
    profile=st.sampled_from(("voc_devkit", "py_faster_rcnn")),
    plus_one=st.booleans(),
    iou=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_fuzz_matcher_random_arrays(gt_boxes, det_boxes, data, metric, profile, plus_one, iou):
    n, m = gt_boxes.shape[0], det_boxes.shape[0]

    def ints(k, hi):
        return np.array(data.draw(st.lists(st.integers(0, hi), min_size=k, max_size=k)), dtype=int)

    scores = np.array(
        data.draw(st.lists(st.sampled_from([0.0, 0.5, 0.5, 1.0, -1e300, 1e300]), min_size=m, max_size=m))
    )
    gt = VOCGroundTruth.from_arrays(
        ints(n, 2), ints(n, 1), gt_boxes, ints(n, 1).astype(bool), images=3, classes=["a", "b"]
    )
    dets = VOCDetections.from_arrays(ints(m, 2), ints(m, 1), det_boxes, scores, images=3, classes=["a", "b"])
    result = evaluate_voc(gt, dets, metric=metric, profile=profile, plus_one=plus_one, iou_threshold=iou)
    assert_valid_result(result)
    for row in result.per_class.values():
        assert row["tp"] + row["fp"] + row["ignored"] == row["ndet"]
        assert row["tp"] <= row["npos"]
        # VOC07 adds p/11 eleven times, as the devkit does: a perfect class can sum to 1 + 2**-52.
        assert row["ap"] is None or 0.0 <= row["ap"] <= 1.0 + 4 * np.finfo(float).eps
    outcome = match_voc(
        dets.image,
        dets.boxes,
        dets.scores,
        gt.image,
        gt.boxes,
        gt.difficult,
        det_label=dets.label,
        gt_label=gt.label,
        iou_threshold=iou,
        plus_one=plus_one,
    )
    assert set(np.unique(outcome).tolist()) <= {-1, 0, 1}


@fuzz_settings(100)
@given(
    boxes=st.lists(st.lists(st.floats(), min_size=4, max_size=4), max_size=5),
    scores=st.lists(st.floats(), max_size=5),  # NaN and inf included (hypothesis' default)
)
def test_fuzz_matcher_any_floats_give_a_deteval_error_or_outcomes(boxes, scores):
    arr = np.array(boxes, dtype=float).reshape(-1, 4)
    try:
        out = match_voc(np.zeros(len(scores), int), arr, scores, np.zeros(len(arr), int), arr)
    except DetevalError:
        return
    assert out.shape == (len(scores),)


@FUZZ
@given(comp4=mutated(COMP4, max_ops=6))
def test_fuzz_skip_equals_the_file_without_the_skipped_lines(comp4):
    """Whatever the damage: deleting the lines skip mode reported gives a file that loads cleanly (raise
    mode) into exactly the same detections."""
    with tempfile.TemporaryDirectory() as tmp:
        root = _tree(tmp, comp4=comp4)
        gt = load_voc_annotations(root / "Annotations", root / "test.txt")
        pattern = str(root / "comp4_{cls}.txt")
        try:
            skipped = load_voc_detections(pattern, gt.images, classes=["car"], on_error="skip")
        except DetevalError:
            return  # a file-level fault (NUL byte, unknown image): not a matter of skipping lines
        bad = {int(s.split(": line ")[1].split(":")[0]) for s in skipped.skipped}
        # Line numbers count \n after old-Mac \r line ends are made \n, as the loader does.
        lines = re.sub(rb"\r(?!\n)", b"\n", comp4).split(b"\n")
        kept = b"\n".join(line for i, line in enumerate(lines, 1) if i not in bad)
        (root / "comp4_car.txt").write_bytes(kept)
        clean = load_voc_detections(pattern, gt.images, classes=["car"])
        for field in ("image", "label", "boxes", "scores"):
            np.testing.assert_array_equal(getattr(clean, field), getattr(skipped, field))
