"""VOC loaders: XML annotations (safely), image sets, comp4 and single-file detections, and their errors."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from deteval.errors import ConfigError, DetevalError, InputFormatError, ValidationError
from deteval.io.voc import load_voc_annotations, load_voc_detections, parse_xml_safely, read_image_set

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "voc"

OBJ = """<object><name>{name}</name><difficult>{diff}</difficult>
<bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object>"""


def _xml(*objects: str, size: bool = True) -> str:
    head = "<size><width>100</width><height>80</height><depth>3</depth></size>" if size else ""
    return f"<annotation><filename>x.jpg</filename>{head}{''.join(objects)}</annotation>"


def _obj(name="cat", diff=0, x1=1, y1=2, x2=30, y2=40):
    return OBJ.format(name=name, diff=diff, x1=x1, y1=y1, x2=x2, y2=y2)


def _write_set(tmp_path: Path, docs: dict[str, str]) -> tuple[Path, Path]:
    ann = tmp_path / "Annotations"
    ann.mkdir()
    for iid, text in docs.items():
        (ann / f"{iid}.xml").write_text(text)
    iset = tmp_path / "test.txt"
    iset.write_text("\n".join(docs) + "\n")
    return ann, iset


def test_sample_set_is_parsed_with_metadata():
    gt = load_voc_annotations(SAMPLE / "Annotations", SAMPLE / "ImageSets" / "Main" / "test.txt")
    assert len(gt.images) == 10 and gt.images[0] == "000004"
    assert gt.classes == ("bicycle", "car", "cat", "dog", "person")
    assert len(gt) == 25 and int(gt.difficult.sum()) == 5
    assert 6 not in set(gt.image.tolist())  # 000014 has no objects
    k = int(np.flatnonzero(gt.image == gt.images.index("000011"))[0])
    assert gt.boxes[k].tolist() == [123.5, 115.0, 379.25, 275.5]  # float coordinates kept as written
    # 000010's second object has no <difficult>: 0
    k10 = np.flatnonzero(gt.image == gt.images.index("000010"))
    assert gt.difficult[k10].tolist() == [False, False]
    assert gt.meta["pose"][k10].tolist() == ["Left", "Frontal"] and gt.meta["truncated"][k10].tolist() == [
        0,
        1,
    ]
    assert gt.image_meta["width"][0] == 500 and gt.image_meta["filename"][0] == "000004.jpg"


def test_explicit_files_and_whole_folder(tmp_path):
    ann, _ = _write_set(tmp_path, {"b": _xml(_obj()), "a": _xml(_obj("dog"), _obj("cat", 1))})
    gt = load_voc_annotations(ann)
    assert gt.images == ("a", "b") and gt.classes == ("cat", "dog")
    assert gt.label.tolist() == [1, 0, 0] and gt.difficult.tolist() == [False, True, False]
    gt2 = load_voc_annotations(files=[ann / "b.xml"])
    assert gt2.images == ("b",) and len(gt2) == 1
    gt3 = load_voc_annotations(ann, ["b"])
    assert gt3.images == ("b",)


@pytest.mark.parametrize(
    "doc, exc, pieces",
    [
        (_xml(_obj()).replace("</annotation>", ""), InputFormatError, ["malformed XML", "line 2"]),
        (
            _xml(_obj(), _obj("dog").replace("<xmax>30</xmax>", "")),
            InputFormatError,
            ["object 2 (dog)", "missing <xmax>"],
        ),
        (
            _xml(_obj(), _obj("dog").replace("<bndbox>", "<bbox>").replace("</bndbox>", "</bbox>")),
            InputFormatError,
            ["object 2 (dog)", "missing <bndbox>"],
        ),
        (_xml(_obj(y1="12a")), InputFormatError, ["object 1 (cat)", "<ymin> is not a number: '12a'"]),
        (_xml(_obj(x1="nan")), ValidationError, ["object 1 (cat)", "not finite"]),
        (_xml(_obj(), _obj(x1=50, x2=40)), ValidationError, ["object 2 (cat)", "inverted box"]),
        (_xml(_obj(diff=2)), ValidationError, ["object 1 (cat)", "<difficult> must be 0 or 1"]),
        (_xml(_obj(name="")), InputFormatError, ["object 1", "missing <name>"]),
        ("<foo/>", InputFormatError, ["expected <annotation>"]),
    ],
)
def test_annotation_errors_name_file_and_object(tmp_path, doc, exc, pieces):
    ann, iset = _write_set(tmp_path, {"img1": _xml(_obj()), "img2": doc})
    with pytest.raises(exc) as info:
        load_voc_annotations(ann, iset)
    msg = str(info.value)
    assert str(ann / "img2.xml") in msg
    for piece in pieces:
        assert piece in msg


def test_zero_size_box_is_valid(tmp_path):
    ann, iset = _write_set(tmp_path, {"a": _xml(_obj(x1=5, x2=5, y1=7, y2=7))})
    assert load_voc_annotations(ann, iset).boxes.tolist() == [[5.0, 7.0, 5.0, 7.0]]


BILLION_LAUGHS = (
    b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
"""
    + b"".join(
        b' <!ENTITY lol%d "%s">\n'
        % (i, b"".join(b"&lol%s;" % (str(i - 1).encode() if i > 1 else b"") for _ in range(10)))
        for i in range(1, 10)
    )
    + b"""]>
<annotation><object><name>&lol9;</name></object></annotation>
"""
)


@pytest.mark.parametrize(
    "data, where",
    [
        (BILLION_LAUGHS, "line 2"),
        (
            b'<?xml version="1.0"?>\n<!DOCTYPE annotation SYSTEM "http://example.com/x.dtd">\n<annotation/>',
            "line 2",
        ),
        (b'<annotation>\n<!ENTITY x "y">\n</annotation>', "line 2"),
        (
            b'<!doctype annotation [<!entity x SYSTEM "file:///etc/passwd">]><annotation>&x;</annotation>',
            "line 1",
        ),
    ],
)
def test_doctype_and_entities_refused_before_parsing(tmp_path, data, where):
    path = tmp_path / "evil.xml"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(InputFormatError) as info:
            load_voc_annotations(files=[path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # bounded: nothing was expanded
    assert str(path) in str(info.value) and where in str(info.value)
    assert "DOCTYPE" in str(info.value) or "ENTITY" in str(info.value)


def test_encodings_that_hide_markers_are_refused(tmp_path):
    with pytest.raises(InputFormatError, match="UTF-16"):
        parse_xml_safely('<?xml version="1.0" encoding="UTF-16"?><annotation/>'.encode("utf-16"), "x.xml")
    with pytest.raises(InputFormatError, match="encoding 'cp037'"):
        parse_xml_safely(b'<?xml version="1.0" encoding="cp037"?>\x4c\x61', "x.xml")
    # latin-1 is fine
    root = parse_xml_safely('<?xml version="1.0" encoding="ISO-8859-1"?><a>é</a>'.encode("latin-1"), "x.xml")
    assert root.text == "é"


def test_image_set_errors(tmp_path):
    ann, iset = _write_set(tmp_path, {"a": _xml(_obj())})
    iset.write_text("a\nb\n")
    with pytest.raises(InputFormatError) as info:
        load_voc_annotations(ann, iset)
    assert "b.xml" in str(info.value) and "'b' not found" in str(info.value)
    iset.write_text("a  1\n\na -1\n")
    with pytest.raises(ValidationError) as info:
        read_image_set(iset)
    assert (
        str(iset) in str(info.value) and "line 3" in str(info.value) and "first on line 1" in str(info.value)
    )


# ---------------------------------------------------------------------------------------------- detections


def _dets(tmp_path: Path, texts: dict[str, str]) -> str:
    for cls, text in texts.items():
        (tmp_path / f"comp4_det_test_{cls}.txt").write_text(text)
    return str(tmp_path / "comp4_det_test_{cls}.txt")


def test_comp4_detections_parsed_in_file_order(tmp_path):
    pat = _dets(tmp_path, {"cat": "b 0.5 1 2 3 4\n\na 0.9 1.5 2 3.25 4\r\n", "dog": "a 0.7 1 1 2 2"})
    dt = load_voc_detections(pat, ["a", "b"])
    assert dt.classes == ("cat", "dog")
    assert dt.image.tolist() == [1, 0, 0] and dt.label.tolist() == [0, 0, 1]
    assert dt.scores.tolist() == [0.5, 0.9, 0.7]
    assert dt.boxes[1].tolist() == [1.5, 2.0, 3.25, 4.0]
    dt2 = load_voc_detections(pat, ["a", "b"], classes=["dog", "cat", "cow"])
    assert dt2.classes == ("dog", "cat", "cow") and dt2.label.tolist() == [0, 1, 1]
    assert any("cow" in w for w in dt2.warnings)


def test_single_file_layout(tmp_path):
    path = tmp_path / "all.txt"
    path.write_text("a cat 0.9 1 2 3 4\nb dog 0.8 1 2 3 4\na cat 0.7 1 2 3 4\n")
    dt = load_voc_detections(path, ["a", "b"], layout="single")
    assert dt.classes == ("cat", "dog") and dt.label.tolist() == [0, 1, 0] and dt.image.tolist() == [0, 1, 0]


@pytest.mark.parametrize(
    "text, exc, pieces",
    [
        ("a 0.9 1 2 3 4\na 0.8 1 2 3\n", InputFormatError, ["line 2", "expected 6 fields", "found 5"]),
        ("a 0.9 1 2 3 4\n\na nan 1 2 3 4\n", ValidationError, ["line 3", "score is not finite"]),
        ("a 0.9 1 2 3 4\na 0.8 1 two 3 4\n", InputFormatError, ["line 2", "y1 is not a number: 'two'"]),
        ("a 0.9 1 2 3 4\na 0.8 10 2 3 4\n", ValidationError, ["line 2", "inverted box"]),
        (
            "a 0.9 1 2 3 4\nzz 0.8 1 2 3 4\nzz 0.1 1 2 3 4\n",
            ValidationError,
            ["line 2", "image id 'zz' is not in the image set", "2 such line(s)"],
        ),
    ],
)
def test_detection_errors_name_file_and_line(tmp_path, text, exc, pieces):
    pat = _dets(tmp_path, {"cat": text})
    with pytest.raises(exc) as info:
        load_voc_detections(pat, ["a"])
    msg = str(info.value)
    assert str(tmp_path / "comp4_det_test_cat.txt") in msg
    for piece in pieces:
        assert piece in msg


def test_unknown_images_can_be_dropped_with_a_counted_warning(tmp_path):
    pat = _dets(tmp_path, {"cat": "a 0.9 1 2 3 4\nzz 0.8 1 2 3 4\nzz 0.1 1 2 3 4\n"})
    dt = load_voc_detections(pat, ["a"], unknown_images="warn")
    assert len(dt) == 1
    assert len(dt.warnings) == 1 and dt.warnings[0].startswith(
        "2 detection(s) for images not in the image set"
    )


def test_missing_files_and_bad_patterns(tmp_path):
    with pytest.raises(InputFormatError, match="no detection file matches"):
        load_voc_detections(str(tmp_path / "x_{cls}.txt"), ["a"], classes=["cat"])
    with pytest.raises(ConfigError, match="must contain"):
        load_voc_detections(str(tmp_path / "x.txt"), ["a"])
    with pytest.raises(DetevalError):
        load_voc_detections(tmp_path / "nope.txt", ["a"], layout="single")


def test_numbers_parse_exactly_as_python_float(tmp_path):
    rng = np.random.default_rng(7)
    vals = rng.random((300, 5)) * 1000
    lines, expected = [], []
    for r, v in enumerate(vals):
        fmt = ("{:.17g}", "{:.3f}", "{:.1f}", "{:.6e}")[r % 4]
        toks = [fmt.format(x) for x in np.sort(v)]
        toks[0] = fmt.format(v[0])
        lines.append(f"img{r % 7}\t{toks[0]}  {toks[1]} {toks[2]} {toks[3]} {toks[4]}")
        expected.append([float(t) for t in toks])
    pat = _dets(tmp_path, {"cat": "\r\n".join(lines)})
    dt = load_voc_detections(pat, [f"img{i}" for i in range(7)])
    exp = np.array(expected)
    assert np.array_equal(dt.scores, exp[:, 0]) and np.array_equal(dt.boxes, exp[:, 1:])
    assert dt.image.tolist() == [r % 7 for r in range(300)]


def test_long_image_ids_and_unicode(tmp_path):
    long_id = "x" * 300
    pat = _dets(tmp_path, {"cat": f"{long_id} 0.9 1 2 3 4\nchat_é 0.5 1 2 3 4\n"})
    dt = load_voc_detections(pat, ["chat_é", long_id])
    assert dt.image.tolist() == [1, 0]


def test_single_file_errors_name_the_line(tmp_path):
    path = tmp_path / "all.txt"
    path.write_text("a cat 0.9 1 2 3 4\nb 0.8 1 2 3 4\n")
    with pytest.raises(InputFormatError) as info:
        load_voc_detections(path, ["a", "b"], layout="single")
    assert (
        str(path) in str(info.value)
        and "line 2" in str(info.value)
        and "expected 7 fields" in str(info.value)
    )


def test_bom_does_not_hide_the_encoding_declaration():
    with pytest.raises(InputFormatError, match="encoding 'cp500'"):
        parse_xml_safely(b'\xef\xbb\xbf<?xml version="1.0" encoding="cp500"?><a/>', "x.xml")
    assert (
        parse_xml_safely(b'\xef\xbb\xbf<?xml version="1.0" encoding="utf-8"?><a>1</a>', "x.xml").text == "1"
    )
