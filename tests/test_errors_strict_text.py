"""Silent coercions in VOC XML and ``.lab`` files (issue 12, item 13), refused with the file and the record.

The VOC devkit reads fields by tag name with a simple parser and converts them with ``str2double``: ``5_0``,
other scripts' digits and a field holding markup become NaN there (a box that never matches), and an
``<object>`` that is not a direct child of ``<annotation>`` or is spelled ``<Object>`` is silently ignored.
Python's ``float()`` would instead read ``5_0`` as 50 and ``٥٠`` as 50. deteval refuses each case, naming
the file and the object; each is a bad *record* that ``--on-error skip`` leaves out, listed and counted.
"""

from __future__ import annotations

import shutil

import pytest
from cli_errors import cli_error, insert_line, subprocess_error
from test_errors_lab import SAMPLE as LAB_SAMPLE
from test_errors_voc import SAMPLE, XML, api, argv, cli_json, insert_object, obj, scores

from deteval.errors import InputFormatError
from deteval.io.lab import load_lab
from deteval.io.voc import parse_voc_xml
from deteval.mir import evaluate_mir


@pytest.fixture
def voc(tmp_path):
    root = tmp_path / "voc"
    shutil.copytree(SAMPLE, root)
    return root


def _box(xmax: str) -> bytes:
    return obj(box=f"<xmin>1</xmin><ymin>2</ymin><xmax>{xmax}</xmax><ymax>40</ymax>".encode())


# (object inserted as the second object of 000004.xml, record, words of the message)
BAD_OBJECTS = {
    "underscore": (_box("5_0"), "object 2 (car)", "<xmax> is not a number: '5_0'"),
    "arabic_indic": (_box("\u0665\u0660"), "object 2 (car)", "<xmax> is not a number"),
    "full_width": (_box("\uff15\uff10"), "object 2 (car)", "<xmax> is not a number"),
    "hex": (_box("0x10"), "object 2 (car)", "<xmax> is not a number"),
    "markup_in_number": (_box("5<b/>0"), "object 2 (car)", "<xmax> holds markup (<b>); expected plain text"),
    "markup_in_name": (obj(name=b"c<i>a</i>r"), "object 2", "<name> holds markup (<i>)"),
    "full_width_flag": (obj().replace(b"<difficult>0", b"<difficult>\xef\xbc\x91"), "object 2 (car)",
                        "<difficult> must be 0 or 1"),
    "capital_object": (obj().replace(b"<object>", b"<Object>").replace(b"</object>", b"</Object>"), "object 2",
                       "<Object> is not a VOC tag: tags are case-sensitive, write <object>"),
    "capital_field": (obj().replace(b"difficult>", b"Difficult>"), "object 2 (car)",
                      "<Difficult> is not a VOC tag"),
    "capital_box": (obj().replace(b"bndbox>", b"BndBox>"), "object 2 (car)", "<BndBox> is not a VOC tag"),
    "capital_coord": (_box("30").replace(b"xmax>", b"XMax>"), "object 2 (car)", "<XMax> is not a VOC tag"),
}  # fmt: skip


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_OBJECTS))
def test_coerced_or_ignored_objects_are_refused(voc, capsys, name):
    xml, record, words = BAD_OBJECTS[name]
    clean = api(voc)
    insert_object(voc / XML, xml)
    path = str(voc / XML)
    with pytest.raises(InputFormatError) as info:
        api(voc)
    assert info.value.file == path and info.value.record == record and words in info.value.reason
    cli_error(capsys, argv(voc), f"{path}: {record}: ", words)
    for doc in (api(voc, on_error="skip"), cli_json(capsys, argv(voc, "--on-error", "skip"))):
        assert scores(doc) == scores(clean) and doc["skipped_records"] == 1
        assert f"skipped bad record: {path}: {record}: " in "\n".join(doc["warnings"])


NESTED = {
    "in_part": (
        obj().replace(b"</object>", b"<part>" + obj(name=b"dog") + b"</part></object>"),
        "part",
        "dog",
    ),
    "in_source": (None, "source", "cat"),
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(NESTED))
def test_an_object_that_is_not_a_direct_child_is_refused(voc, capsys, name):
    xml, parent, nested_name = NESTED[name]
    path = voc / XML
    data = path.read_bytes()
    with_outer = xml is not None
    if with_outer:
        insert_object(path, xml)
    else:
        path.write_bytes(data.replace(b"</source>", obj(name=b"cat") + b"</source>"))
    words = f"<object> inside <{parent}> is not a direct child of <annotation>"
    record = f"nested object ({nested_name})"
    with pytest.raises(InputFormatError) as info:
        api(voc)
    assert info.value.record == record and words in info.value.reason
    cli_error(capsys, argv(voc), f"{path}: {record}: ", words)
    doc = api(voc, on_error="skip")
    assert doc["skipped_records"] == 1 and f"{path}: {record}: {words}" in "\n".join(doc["warnings"])
    # Skipped, it is scored as the devkit scores the file: the outer object counts, the nested one does not.
    if with_outer:
        path.write_bytes(data)
        insert_object(path, obj())
    else:
        path.write_bytes(data)
    assert scores(doc) == scores(api(voc))


@pytest.mark.parametrize(
    ("old", "new", "record", "words"),
    [
        (b"<width>500</width>", "<width>\uff15\uff10\uff10</width>".encode(), "size", "<size><width> is not"),
        (b"<width>500</width>", b"<width>5_00</width>", "size", "<size><width> is not a number"),
        (b"<width>500</width>", b"<width>5<b/>00</width>", "size", "<width> holds markup"),
        (b"<size>", b"<Size>", None, "<Size> is not a VOC tag"),
        (
            b"<filename>000004.jpg</filename>",
            b"<FileName>000004.jpg</FileName>",
            None,
            "<FileName> is not a VOC",
        ),
        (b"<height>", b"<Height>", "size", "<Height> is not a VOC tag"),
    ],
)
def test_file_level_fields_are_strict_too(voc, capsys, old, new, record, words):
    path = voc / XML
    path.write_bytes(
        path.read_bytes().replace(old, new).replace(old.replace(b"<", b"</"), new.replace(b"<", b"</"))
    )
    with pytest.raises(InputFormatError) as info:
        parse_voc_xml(path.read_bytes(), path)
    assert info.value.record == record and words in info.value.reason
    cli_error(capsys, argv(voc, "--on-error", "skip"), str(path), words)  # a fault of the file: never skipped


def test_plain_ascii_numbers_still_read_as_before(voc):
    path = voc / XML
    insert_object(path, _box(" +3.0e1 "))
    gt_doc = api(voc)
    path.write_bytes(path.read_bytes().replace(b" +3.0e1 ", b"30"))
    assert scores(api(voc)) == scores(gt_doc)


# .lab times: the same strict notation (1_0 would read as 10 through float()).
@pytest.mark.parametrize("token", ["1_0", "\u0661\u0660", "\uff11\uff10", "0x10"])
def test_lab_times_in_other_notations_are_refused(tmp_path, capsys, token):
    ref = tmp_path / "ref.lab"
    shutil.copy(LAB_SAMPLE / "ref.lab", ref)
    clean = evaluate_mir(str(ref), str(LAB_SAMPLE / "est.lab")).to_dict()
    insert_line(ref, 3, f"400.0 {token} Z".encode())
    words = f"end time {token!r} is not a number"
    with pytest.raises(InputFormatError) as info:
        load_lab(ref)
    assert info.value.record == "line 3" and words in info.value.reason
    cli_error(capsys, ["mir", str(ref), str(LAB_SAMPLE / "est.lab")], f"{ref}: line 3: ", words)
    skipped = evaluate_mir(str(ref), str(LAB_SAMPLE / "est.lab"), on_error="skip").to_dict()
    assert skipped["skipped_records"] == 1
    assert {k: v for k, v in skipped.items() if k not in ("warnings", "skipped_records")} == {
        k: v for k, v in clean.items() if k not in ("warnings", "skipped_records")
    }


@pytest.mark.slow
def test_through_a_subprocess(voc):
    insert_object(voc / XML, _box("5_0"))
    subprocess_error(argv(voc), f"{voc / XML}: object 2 (car): ", "'5_0'")
