"""Pascal VOC: every class of bad input (docs/errors.md) through the Python API and the CLI.

Each bad file must give a DetevalError naming the file and the record, exit status 2 and no traceback;
record-level faults can be skipped with ``on_error="skip"`` (``--on-error skip``), and the valid records
are then scored exactly as in the file without the bad one. Harmless variants (BOM, CRLF, tabs) score
exactly as the original.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_errors import cli_error, insert_line, subprocess_error

from deteval.cli import main
from deteval.errors import DetevalError, InputFormatError, ValidationError
from deteval.io.voc import load_voc_annotations, load_voc_detections
from deteval.run.voc import evaluate_voc

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "voc"
CAR = "results/comp4_det_test_car.txt"
XML = "Annotations/000004.xml"
IMAGE_SET = "ImageSets/Main/test.txt"
BOM = b"\xef\xbb\xbf"


@pytest.fixture
def voc(tmp_path):
    root = tmp_path / "voc"
    shutil.copytree(SAMPLE, root)
    return root


def argv(root: Path, *extra: str) -> list[str]:
    return [
        "voc",
        "--annotations", str(root / "Annotations"),
        "--image-set", str(root / IMAGE_SET),
        "--detections", str(root / "results" / "comp4_det_test_{cls}.txt"),
        "--format", "json",
        *extra,
    ]  # fmt: skip


def api(root: Path, on_error: str = "raise", unknown_images: str = "error") -> dict:
    """The Python API path of the CLI: load, evaluate, return the JSON document."""
    gt = load_voc_annotations(root / "Annotations", root / IMAGE_SET, on_error=on_error)
    files = {p.name[len("comp4_det_test_") : -4] for p in (root / "results").glob("*.txt")}
    classes = sorted(set(gt.classes) | files)
    dets = load_voc_detections(
        str(root / "results" / "comp4_det_test_{cls}.txt"),
        gt.images,
        classes=classes,
        on_error=on_error,
        unknown_images=unknown_images,
    )
    return evaluate_voc(gt, dets).to_dict()


def cli_json(capsys, args: list[str]) -> dict:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def scores(doc: dict) -> tuple:
    """Everything that is a score or a count of scored items (not the warnings about tolerated input)."""
    return doc["map"], doc["per_class"]


def insert_object(path: Path, obj: bytes) -> None:
    """Insert an <object> as the second object of the file."""
    data = path.read_bytes()
    at = data.index(b"</object>") + len(b"</object>")
    path.write_bytes(data[:at] + b"\n" + obj + data[at:])


def obj(name: bytes = b"car", box: bytes = b"<xmin>1</xmin><ymin>2</ymin><xmax>30</xmax><ymax>40</ymax>"):
    return b"<object><name>" + name + b"</name><difficult>0</difficult><bndbox>" + box + b"</bndbox></object>"


# (bad line inserted as line 2 of the car detections, error class, words the message must hold)
BAD_LINES = {
    "non_numeric_score": (b"000004 high 1 2 3 4", InputFormatError, "score is not a number: 'high'"),
    "non_numeric_coord": (b"000004 0.5 1 2 x 4", InputFormatError, "x2 is not a number: 'x'"),
    "missing_field": (b"000004 0.5 1 2 3", InputFormatError, "expected 6 fields"),
    "extra_field": (b"000004 0.5 1 2 3 4 5", InputFormatError, "expected 6 fields"),
    "nan_score": (b"000004 nan 1 2 3 4", ValidationError, "score is not finite: nan"),
    "inf_coord": (b"000004 0.5 1 2 inf 4", ValidationError, "x2 is not finite: inf"),
    "overflow_score": (b"000004 1e999 1 2 3 4", ValidationError, "score is not finite: inf"),
    "x2_lt_x1": (b"000004 0.5 10 2 3 4", ValidationError, "inverted box: x1=10 y1=2 x2=3 y2=4"),
    "huge_coord": (b"000004 0.5 1 2 1e300 4", ValidationError, "beyond \u00b12**53"),
    # 2**53 + 1 and 2**53 + 0.5 read as 2**53 (the bound) in float64: the written value is beyond it
    "coord_2p53_plus_1": (
        b"000004 0.5 1 2 9007199254740993 4",
        ValidationError,
        "beyond \u00b12**53: 1 2 9007199254740993 4",
    ),
    "coord_minus_2p53_half": (b"000004 0.5 -9007199254740992.5 2 3 4", ValidationError, "beyond \u00b12**53"),
    "y2_lt_y1": (b"000004 0.5 1 20 3 4", ValidationError, "inverted box"),
    "latin1": (b"caf\xe9 0.5 1 2 3 4", InputFormatError, "not valid UTF-8"),
    "underscore_number": (b"000004 0.5 1_0 2 30 4", InputFormatError, "x1 is not a number: '1_0'"),
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_bad_detection_line(voc, capsys, name):
    line, exc, words = BAD_LINES[name]
    clean = api(voc)
    insert_line(voc / CAR, 2, line)
    path = str(voc / CAR)
    with pytest.raises(exc) as info:
        api(voc)
    assert info.value.file == path and info.value.record == "line 2" and words in info.value.reason
    cli_error(capsys, argv(voc), f"{path}: line 2: ", words)
    # Skipping: the valid lines score exactly as in the file without the bad one; the skip is reported.
    for doc in (api(voc, on_error="skip"), cli_json(capsys, argv(voc, "--on-error", "skip"))):
        assert scores(doc) == scores(clean)
        assert doc["skipped_records"] == 1
        assert [w for w in doc["warnings"] if w.startswith("skipped")] == [
            f"skipped bad record: {path}: line 2: {info.value.reason}"
        ]


def test_many_bad_lines_are_each_reported_when_skipped(voc, capsys):
    clean = api(voc)
    for k, (line, _, _) in enumerate(BAD_LINES.values()):
        insert_line(voc / CAR, 1 + 2 * k, line)  # every other line bad, valid lines in between kept
    doc = api(voc, on_error="skip")
    assert scores(doc) == scores(clean)
    assert doc["skipped_records"] == len(BAD_LINES)
    reported = [w for w in doc["warnings"] if w.startswith("skipped")]
    bad = {line for line, _, _ in BAD_LINES.values()}
    expected = [i for i, line in enumerate((voc / CAR).read_bytes().split(b"\n"), 1) if line in bad]
    assert [int(w.split(": line ")[1].split(":")[0]) for w in reported] == expected  # in line order


# (object inserted as the second object of 000004.xml, error class, words)
BAD_OBJECTS = {
    "missing_name": (b"<object><bndbox><xmin>1</xmin></bndbox></object>", InputFormatError, "missing <name>"),
    "missing_bndbox": (b"<object><name>car</name></object>", InputFormatError, "missing <bndbox>"),
    "missing_xmax": (obj(box=b"<xmin>1</xmin><ymin>2</ymin><ymax>4</ymax>"), InputFormatError,
                     "missing <xmax>"),
    "non_numeric": (obj(box=b"<xmin>a</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax>"), InputFormatError,
                    "<xmin> is not a number: 'a'"),
    "nan": (obj(box=b"<xmin>nan</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax>"), ValidationError,
            "<xmin> is not finite"),
    "inf": (obj(box=b"<xmin>1</xmin><ymin>2</ymin><xmax>inf</xmax><ymax>4</ymax>"), ValidationError,
            "<xmax> is not finite"),
    "x2_lt_x1": (obj(box=b"<xmin>30</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax>"), ValidationError,
                 "inverted box"),
    "huge": (obj(box=b"<xmin>1</xmin><ymin>2</ymin><xmax>1e200</xmax><ymax>4</ymax>"), ValidationError,
             "beyond"),
    "2p53_plus_1": (obj(box=b"<xmin>1</xmin><ymin>2</ymin><xmax>9007199254740993</xmax><ymax>4</ymax>"),
                    ValidationError, "<xmax> is beyond \u00b12**53: '9007199254740993'"),
    "two_boxes": (obj().replace(b"</bndbox>", b"</bndbox><bndbox><xmin>1</xmin></bndbox>"), InputFormatError,
                  "<bndbox> appears twice in one object"),
    "two_xmax": (obj(box=b"<xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><xmax>4</xmax><ymax>4</ymax>"),
                 InputFormatError, "<xmax> appears twice in one <bndbox>"),
    "bad_difficult": (obj().replace(b"<difficult>0", b"<difficult>2"), ValidationError,
                      "<difficult> must be 0 or 1"),
}  # fmt: skip


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_OBJECTS))
def test_bad_annotation_object(voc, capsys, name):
    xml, exc, words = BAD_OBJECTS[name]
    clean = api(voc)
    insert_object(voc / XML, xml)
    path = str(voc / XML)
    with pytest.raises(exc) as info:
        api(voc)
    assert info.value.file == path and str(info.value.record).startswith("object 2")
    assert words in info.value.reason
    cli_error(capsys, argv(voc), f"{path}: object 2", words)
    for doc in (api(voc, on_error="skip"), cli_json(capsys, argv(voc, "--on-error", "skip"))):
        assert scores(doc) == scores(clean) and doc["skipped_records"] == 1
        assert f"skipped bad record: {path}: object 2" in "\n".join(doc["warnings"])


def _write(rel: str, data: bytes):
    return lambda root: (root / rel).write_bytes(data)


def _prepend(rel: str, data: bytes):
    return lambda root: (root / rel).write_bytes(data + (root / rel).read_bytes())


def _replace(rel: str, old: bytes, new: bytes):
    return lambda root: (root / rel).write_bytes((root / rel).read_bytes().replace(old, new))


def _to_dir(rel: str):
    def go(root):
        (root / rel).unlink()
        (root / rel).mkdir()

    return go


BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    + b"".join(b' <!ENTITY lol%d "%s">\n' % (i, b"&lol%d;" % (i - 1) * 10 if i > 1 else b"&lol;" * 10)
               for i in range(1, 10))
    + b"]>\n<annotation>&lol9;</annotation>\n"
)  # fmt: skip

# Whole-file faults: always an error (no skip), naming the file (and the line where one exists).
BAD_FILES = {
    "malformed_xml": (_write(XML, b"<annotation><object>"), XML, InputFormatError, "malformed XML"),
    "billion_laughs": (_write(XML, BILLION_LAUGHS), XML, InputFormatError, "<!DOCTYPE>"),
    "external_entity": (_write(XML, b'<!ENTITY x SYSTEM "file:///etc/passwd"><annotation/>'), XML,
                        InputFormatError, "<!ENTITY>"),
    "utf16_xml": (lambda r: (r / XML).write_bytes((r / XML).read_text().encode("utf-16")), XML,
                  InputFormatError, "UTF-16"),
    "empty_xml": (_write(XML, b""), XML, InputFormatError, "empty annotation file"),
    "wrong_root": (_write(XML, b"<html/>"), XML, InputFormatError, "root element is <html>"),
    "size_inf": (_replace(XML, b"<width>500", b"<width>inf"), XML, ValidationError, "out of range"),
    "size_huge": (_replace(XML, b"<width>500", b"<width>1e30"), XML, ValidationError, "out of range"),
    "size_text": (_replace(XML, b"<width>500", b"<width>wide"), XML, InputFormatError, "not a number"),
    "xml_missing": (lambda r: (r / XML).unlink(), XML, InputFormatError, "not found"),
    "xml_is_dir": (_to_dir(XML), XML, InputFormatError, "Is a directory"),
    "image_set_missing": (lambda r: (r / IMAGE_SET).unlink(), IMAGE_SET, InputFormatError, "No such file"),
    "image_set_is_dir": (_to_dir(IMAGE_SET), IMAGE_SET, InputFormatError, "Is a directory"),
    "image_set_empty": (_write(IMAGE_SET, b""), IMAGE_SET, InputFormatError, "lists no image"),
    "image_set_blank": (_write(IMAGE_SET, b"\n \t\n"), IMAGE_SET, InputFormatError, "lists no image"),
    "image_set_latin1": (_prepend(IMAGE_SET, b"000004\ncaf\xe9\n"), IMAGE_SET, InputFormatError,
                         "line 2: not valid UTF-8"),
    "image_set_duplicate": (_prepend(IMAGE_SET, b"000006\n"), IMAGE_SET, ValidationError, "listed twice"),
    "image_set_binary": (_write(IMAGE_SET, "000004\n".encode("utf-16-le")), IMAGE_SET, InputFormatError,
                         "NUL byte"),
    "detections_utf16": (lambda r: (r / CAR).write_bytes((r / CAR).read_text().encode("utf-16")), CAR,
                         InputFormatError, "NUL byte"),
    "detections_is_dir": (_to_dir(CAR), CAR, InputFormatError, "found a directory"),
    "unknown_image": (_prepend(CAR, b"999999 0.5 1 2 3 4\n"), CAR, ValidationError,
                      "line 1: image id '999999' is not in the image set"),
}  # fmt: skip


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file(voc, capsys, name):
    mutate, rel, exc, words = BAD_FILES[name]
    mutate(voc)
    path = str(voc / rel)
    for on_error in ("raise", "skip"):
        with pytest.raises(exc) as info:
            api(voc, on_error=on_error)
        assert info.value.file == path and words in str(info.value)
    cli_error(capsys, argv(voc), path, words)
    cli_error(capsys, argv(voc, "--on-error", "skip"), path, words)


def test_billion_laughs_is_refused_before_parsing(voc, monkeypatch):
    """Refused by a byte scan: the XML parser is never even created for the file."""
    (voc / XML).write_bytes(BILLION_LAUGHS)
    import deteval.io.voc as voc_io
    import deteval.io.voc.xml_safety as voc_xml

    def no_parser(*a, **k):
        raise AssertionError("the parser must not see a DTD")

    monkeypatch.setattr(voc_xml.ET, "XMLParser", no_parser)
    with pytest.raises(InputFormatError, match="line 2"):
        voc_io.parse_voc_xml((voc / XML).read_bytes(), voc / XML)


def test_unreadable_files_are_errors_naming_them(voc, capsys, monkeypatch):
    """Permission denied (simulated: the tests may run as root, which ignores file modes)."""
    real = Path.read_bytes
    denied = ("000004.xml", "test.txt", "comp4_det_test_car.txt")

    def deny(self):
        if self.name in denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    def deny_small(path, what):  # the annotations are read in one pass first
        if Path(path).name in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_small(path, what)

    import deteval.io.voc.xml_safety as voc_xml

    real_small = voc_xml.read_regular
    monkeypatch.setattr(Path, "read_bytes", deny)
    monkeypatch.setattr(voc_xml, "read_regular", deny_small)
    cli_error(capsys, argv(voc), str(voc / IMAGE_SET), "Permission denied")
    err = cli_error(capsys, argv(voc)[:3] + argv(voc)[5:], str(voc / XML), "Permission denied")
    assert "Traceback" not in err


def test_empty_annotation_folder(tmp_path, capsys):
    (tmp_path / "Annotations").mkdir()
    (tmp_path / "d_car.txt").write_bytes(b"")
    args = [
        "voc",
        "--annotations",
        str(tmp_path / "Annotations"),
        "--detections",
        str(tmp_path / "d_{cls}.txt"),
    ]
    cli_error(capsys, args, str(tmp_path / "Annotations"), "ground truth is empty")
    with pytest.raises(InputFormatError, match="no annotation file"):
        load_voc_annotations(tmp_path / "Annotations")


# Harmless variants: accepted, scored exactly as the original files.
HARMLESS = {
    "bom_detections": _prepend(CAR, BOM),
    "bom_image_set": _prepend(IMAGE_SET, BOM),
    "bom_xml": _prepend(XML, BOM),
    "crlf_detections": _replace(CAR, b"\n", b"\r\n"),
    "crlf_image_set": _replace(IMAGE_SET, b"\n", b"\r\n"),
    "crlf_xml": _replace(XML, b"\n", b"\r\n"),
    "cr_detections": _replace(CAR, b"\n", b"\r"),
    "cr_image_set": _replace(IMAGE_SET, b"\n", b"\r"),
    "tabs_and_spaces_detections": _replace(CAR, b" ", b" \t  "),
    "leading_trailing_blank_detections": lambda r: (r / CAR).write_bytes(
        b"\n  \n\t" + (r / CAR).read_bytes().replace(b"\n", b"   \n") + b"\n\n"
    ),
    "tabs_image_set": _replace(IMAGE_SET, b"\n", b" \t\n"),
    "xml_whitespace_in_numbers": _replace(XML, b"<xmin>13</xmin>", b"<xmin>\n\t 13 \t</xmin>"),
    "xml_latin1_declared": lambda r: (r / XML).write_bytes(
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n'
        + (r / XML).read_bytes().replace(b"Frontal", b"Fr\xf6ntal")
    ),
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_harmless_variants_score_as_the_original(voc, capsys, name):
    clean = api(voc)
    HARMLESS[name](voc)
    doc = api(voc)
    assert doc == clean
    assert cli_json(capsys, argv(voc)) == clean


def test_tolerated_inputs_are_counted_and_reported(voc, capsys):
    clean = api(voc)
    (voc / CAR).write_bytes(b"")  # an empty detection file: zero detections for the class, said so
    (voc / "results" / "comp4_det_test_unicorn.txt").write_bytes(b"000004 0.5 1 2 3 4\n000006 0.4 1 2 3 4\n")
    doc = cli_json(capsys, argv(voc))
    assert doc == api(voc)
    assert doc["per_class"]["car"]["ndet"] == 0 and doc["per_class"]["car"]["ap"] == 0.0
    assert any("empty detection file" in w and CAR in w for w in doc["warnings"])
    # A class with detections but no ground truth: kept, reported with its count, not averaged.
    assert doc["per_class"]["unicorn"]["ap"] is None and doc["per_class"]["unicorn"]["ndet"] == 2
    assert any("unicorn (2 detections)" in w for w in doc["warnings"])
    assert doc["n_classes_averaged"] == clean["n_classes_averaged"]
    assert doc["skipped_records"] == 0 and doc["dropped_detections"] == 0


def test_unknown_images_dropped_on_request_are_counted(voc, capsys):
    clean = api(voc)
    insert_line(voc / CAR, 3, b"999999 0.99 1 2 3 4")
    insert_line(voc / CAR, 5, b"888888 0.98 1 2 3 4")
    doc = cli_json(capsys, argv(voc, "--unknown-images", "warn"))
    assert scores(doc) == scores(clean)
    assert doc["dropped_detections"] == 2
    dropped = "2 detection(s) for images not in the image set"
    assert any(dropped in w and "line 3" in w for w in doc["warnings"])


def test_a_missing_detection_file_for_a_ground_truth_class_is_reported(voc, capsys):
    (voc / CAR).unlink()
    doc = cli_json(capsys, argv(voc))
    assert doc["per_class"]["car"]["ndet"] == 0
    assert any("no detection file for 1 class(es)" in w and "car" in w for w in doc["warnings"])


@pytest.mark.slow
def test_through_a_subprocess(voc):
    insert_line(voc / CAR, 4, b"000004 nan 1 2 3 4")
    subprocess_error(argv(voc), f"{voc / CAR}: line 4: score is not finite")
    (voc / XML).write_bytes(BILLION_LAUGHS)
    subprocess_error(argv(voc), str(voc / XML), "DOCTYPE")


def test_every_error_is_a_deteval_error():
    assert issubclass(InputFormatError, DetevalError) and issubclass(ValidationError, DetevalError)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 1e200, -1e17])
def test_in_memory_boxes_that_would_give_nan_ious_are_refused(bad):
    from deteval.detection.voc import VOCDetections, VOCGroundTruth, match_voc

    box = [[0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 10.0, 10.0]]
    box[1][2] = bad if bad > 0 or bad != bad else 10.0
    if bad < 0:
        box[1][0] = bad
    with pytest.raises(ValidationError, match="record 1") as info:
        match_voc([0, 0], box, [0.9, 0.8], [0], [[0.0, 0.0, 10.0, 10.0]])
    assert "non-finite" in str(info.value) or "2**53" in str(info.value)
    with pytest.raises(ValidationError):
        VOCDetections.from_arrays([0, 0], [0, 0], box, [0.9, 0.8])
    with pytest.raises(ValidationError):
        VOCGroundTruth.from_arrays([0, 0], [0, 0], box)
