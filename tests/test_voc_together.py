"""Annotation XML parsed in one pass (issue 15 item 5: VOC cold start) reads exactly like file by file.

``load_voc_annotations`` parses all files with one XML parser and takes the plain documents' columns in one
pass; anything unusual sends it back to the file-by-file path. Random sets of documents with every quirk
deteval knows (encodings, declarations, comments, entities, flags, nested parts, case variants, malformed
XML, DTDs, missing files) must give the same ground truth, or the same first error, both ways.
"""

from __future__ import annotations

import numpy as np
import pytest

import deteval.io.voc.annotations as voc_io
from deteval.errors import DetevalError
from deteval.io.voc import load_voc_annotations


def _obj(rng, quirk: str | None = None) -> str:
    x1, y1 = int(rng.integers(1, 200)), int(rng.integers(1, 200))
    x2, y2 = x1 + int(rng.integers(0, 100)), y1 + int(rng.integers(0, 100))
    coords = [str(x1), str(y1), str(x2), str(y2)]
    name, diff, extra = str(rng.choice(["dog", "cat", "car", "person"])), str(rng.choice(["0", "1"])), ""
    box_tags = ["xmin", "ymin", "xmax", "ymax"]
    if quirk == "float":
        coords = [f"{x1}.5", f" {y1} ", f"{x2}.75", f"{y2}.0"]
    elif quirk == "odd_number":
        coords[int(rng.integers(0, 4))] = str(rng.choice(["1e2", "+3", ".5", "-0", "1_0", "x", "", "inf"]))
    elif quirk == "inverted":
        coords = [str(x2 + 1), str(y1), str(x1), str(y2)]
    elif quirk == "flag":
        diff = str(rng.choice(["1.0", "", " 1 ", "2", "yes", "0.0"]))
    elif quirk == "entity":
        name = "d&#111;g &amp; co"
    elif quirk == "part":
        extra = "<part><name>head</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></part>"
    elif quirk == "case":
        box_tags[1] = "Ymin"
    elif quirk == "repeat":
        extra = "<name>again</name>"
    elif quirk == "markup":
        name = "d<b/>og"
    elif quirk == "nested":
        extra = "<object><name>x</name></object>"
    elif quirk == "nobox":
        return f"<object><name>{name}</name></object>"
    elif quirk == "noname":
        name = "  "
    box = "".join(f"<{t}>{c}</{t}>" for t, c in zip(box_tags, coords))
    body = f"<name>{name}</name><pose>Left</pose><truncated>0</truncated><difficult>{diff}</difficult>"
    return f"<object>\n\t{body}<bndbox>{box}</bndbox>{extra}</object>"


DOC_QUIRKS = ["bom", "decl", "decl_caps", "latin1", "comment", "crlf", "two_roots", "tail_text", "unclosed",
              "close_wrapper", "late_decl", "doctype", "empty", "nul", "missing", "root", "size", "filename_markup",
              "no_size", "pi", "charref_outside", "charref_inside"]  # fmt: skip
OBJ_QUIRKS = ["float", "odd_number", "inverted", "flag", "entity", "part", "case", "repeat", "markup", "nested",
              "nobox", "noname"]  # fmt: skip


def _doc(rng, quirk: str | None, obj_quirk: str | None) -> bytes | None:
    objs = [_obj(rng, obj_quirk if k == 0 else None) for k in range(int(rng.integers(0, 4)))]
    size = "<size><width>500</width><height>375</height><depth>3</depth></size>"
    if quirk == "size":
        size = f"<size><width>{rng.choice(['5e2', '-1', '', ' 12 '])}</width><height>3</height></size>"
    elif quirk == "no_size":
        size = ""
    fname = "<filename>a<i/>.jpg</filename>" if quirk == "filename_markup" else "<filename> a.jpg </filename>"
    root = "Annotation" if quirk == "root" else "annotation"
    text = f"<{root}><folder>VOC</folder>{fname}{size}{''.join(objs)}</{root}>\n"
    if quirk == "missing":
        return None
    if quirk == "empty":
        return b" \n"
    if quirk == "nul":
        return text.encode() + b"\x00"
    if quirk == "two_roots":
        text += "<annotation/>"
    elif quirk == "tail_text":
        text += "junk"
    elif quirk == "unclosed":
        text = text.replace(f"</{root}>", "")
    elif quirk == "close_wrapper":
        text = text.replace(f"</{root}>", f"</{root}></_dwrapper><_dwrapper>")
    elif quirk == "late_decl":
        text = ' <?xml version="1.0"?>' + text
    elif quirk == "doctype":
        text = "<!DOCTYPE annotation>" + text
    elif quirk == "comment":
        text = "<!-- c -->" + text.replace("<folder>", "<!-- in --><folder>") + "<!-- after -->"
    elif quirk == "pi":
        text = text.replace("<folder>", "<?pi data?><folder>")
    elif quirk == "charref_outside":  # whitespace by a reference, or nothing by a CDATA section: still text
        text += str(rng.choice(["&#32;", "&#x0A;", "<![CDATA[]]>", "<![CDATA[ ]]>"]))
    elif quirk == "charref_inside":
        text = text.replace("<folder>VOC", "<folder>&#86;<![CDATA[OC]]>")
    elif quirk == "crlf":
        text = text.replace(">", ">\r\n")
    if quirk == "decl":
        text = "<?xml version='1.0' encoding='utf-8' standalone='yes'?>\n" + text
    elif quirk == "decl_caps":
        text = '<?xml version="1.0" encoding="UTF-8"?>' + text
    elif quirk == "latin1":
        return ('<?xml version="1.0" encoding="ISO-8859-1"?>' + text.replace("VOC", "VOCé")).encode("latin-1")
    data = text.encode()
    return b"\xef\xbb\xbf" + data if quirk == "bom" else data


def _load(folder, ids, on_error, one_by_one: bool, monkeypatch):
    with monkeypatch.context() as m:
        if one_by_one:
            m.setattr(voc_io, "parse_together", lambda paths: None)
        try:
            return load_voc_annotations(folder, ids, on_error=on_error)
        except DetevalError as exc:
            return str(exc)


def _same(a, b) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.images == b.images and a.classes == b.classes and a.skipped == b.skipped
    for x, y in ((a.image, b.image), (a.label, b.label), (a.boxes, b.boxes), (a.difficult, b.difficult)):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    for key in ("truncated", "occluded", "pose"):
        assert a.meta[key].dtype == b.meta[key].dtype and np.array_equal(a.meta[key], b.meta[key])
    for key in a.image_meta:
        assert np.array_equal(a.image_meta[key], b.image_meta[key])


@pytest.mark.parametrize("seed", range(60))
def test_one_parse_reads_like_file_by_file(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    folder = tmp_path / "Annotations"
    folder.mkdir()
    ids = [f"{i:06d}" for i in range(int(rng.integers(1, 8)))]
    quirky = seed % 3 != 0  # a third of the sets are plain: they must take the one-parse path
    for iid in ids:
        quirk = str(rng.choice(DOC_QUIRKS)) if quirky and rng.random() < 0.3 else None
        oq = str(rng.choice(OBJ_QUIRKS)) if quirky and rng.random() < 0.3 else None
        data = _doc(rng, quirk, oq)
        if data is not None:
            (folder / f"{iid}.xml").write_bytes(data)
    calls = []
    real = voc_io._plain_columns
    monkeypatch.setattr(voc_io, "_plain_columns", lambda roots: calls.append(r := real(roots)) or r)
    for on_error in ("raise", "skip"):
        together = _load(folder, ids, on_error, False, monkeypatch)
        one_by_one = _load(folder, ids, on_error, True, monkeypatch)
        _same(together, one_by_one)
    if not quirky:
        assert calls and calls[0] is not None and not isinstance(together, str)


def test_wrapper_name_cannot_be_closed_by_a_document(tmp_path):
    """A document holding the closing tag of a wrapper it cannot know is malformed, and named."""
    folder = tmp_path / "Annotations"
    folder.mkdir()
    (folder / "a.xml").write_bytes(b"<annotation><filename>a</filename></annotation>")
    (folder / "b.xml").write_bytes(b"<annotation></annotation></_d0><_d0><annotation></annotation>")
    with pytest.raises(DetevalError, match=r"b\.xml: line 1: malformed XML"):
        load_voc_annotations(folder, ["a", "b"])


@pytest.mark.parametrize("outside", [b"&#32;", b"&#x0A;", b"<![CDATA[]]>", b"<![CDATA[ ]]>"])
def test_references_outside_the_root_are_malformed_both_ways(tmp_path, monkeypatch, outside):
    """Parsed together, a character reference or CDATA section after a document's root would be only
    whitespace in the wrapper; alone it is not well-formed. Both ways must refuse it."""
    folder = tmp_path / "Annotations"
    folder.mkdir()
    good = b"<annotation><filename>a</filename></annotation>"
    (folder / "a.xml").write_bytes(good)
    (folder / "b.xml").write_bytes(good + outside)
    together = _load(folder, ["a", "b"], "raise", False, monkeypatch)
    assert isinstance(together, str) and "b.xml: line 1: malformed XML" in together
    _same(together, _load(folder, ["a", "b"], "raise", True, monkeypatch))


@pytest.mark.parametrize("longest", [8, 11])
def test_detection_image_ids_looked_up_exactly(tmp_path, longest):
    """Image ids of at most 8 bytes are looked up as integers, longer ones as strings: same rows either way,
    and an unknown id (a prefix of a known one, or one with a NUL-free extension) is still refused."""
    from deteval.io.voc import load_voc_detections

    rng = np.random.default_rng(longest)
    alphabet = list("ab0_9")
    images = sorted({"".join(rng.choice(alphabet, int(rng.integers(1, longest + 1)))) for _ in range(300)})
    picks = rng.integers(0, len(images), 500)
    (tmp_path / "d_car.txt").write_text("".join(f"{images[i]} 0.5 1 1 2 2\n" for i in picks))
    dets = load_voc_detections(str(tmp_path / "d_{cls}.txt"), images, classes=["car"])
    assert dets.image.tolist() == picks.tolist()
    unknown = next(i + "a" for i in images if i + "a" not in images and len(i) < longest)
    (tmp_path / "d_car.txt").write_text(f"{images[0]} 0.5 1 1 2 2\n{unknown} 0.5 1 1 2 2\n")
    with pytest.raises(DetevalError, match=f"line 2: image id '{unknown}' is not in the image set"):
        load_voc_detections(str(tmp_path / "d_{cls}.txt"), images, classes=["car"])


def test_ids_with_folders_are_read_too(tmp_path, monkeypatch):
    folder = tmp_path / "Annotations"
    (folder / "sub").mkdir(parents=True)
    doc = b"<annotation><object><name>dog</name><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>3</xmax><ymax>4</ymax></bndbox></object></annotation>"
    (folder / "a.xml").write_bytes(doc)
    (folder / "sub" / "b.xml").write_bytes(doc.replace(b"dog", b"cat"))
    together = _load(folder, ["a", "sub/b"], "raise", False, monkeypatch)
    _same(together, _load(folder, ["a", "sub/b"], "raise", True, monkeypatch))
    assert together.boxes.tolist() == [[1, 2, 3, 4]] * 2 and list(together.classes) == ["cat", "dog"]
