"""The bulk reader of numeric text rows (YOLO label and prediction files): the same rows, lines and values as
reading each file line by line with ``str.splitlines``, ``str.split`` and ``float``; the first fault as a
file-by-file reader meets it."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from _yolo_cases import write_image

import deteval.io.text_rows as text_rows
from deteval.errors import DetevalError, DetevalWarning
from deteval.io.text_rows import read_rows
from deteval.io.yolo import load_yolo_dataset
from deteval.io.yolo_labels import parse_label_files


def _reference(paths: list[Path]) -> tuple[list[int], list[int], list[int], list[float], list[bool]]:
    """Each file read alone, line by line (the rule the bulk reader reproduces)."""
    files, lines, widths, values, unparsed = [], [], [], [], []
    for f, p in enumerate(paths):
        if not p.exists():
            continue
        for n, line in enumerate(p.read_bytes().decode("utf-8-sig").splitlines(), 1):
            fields = line.split()
            if not fields:
                continue
            ok = []
            for x in fields:
                try:
                    good = x.isascii() and "_" not in x and float(x) is not None
                except ValueError:
                    good = False
                ok.append(good)
            files.append(f)
            lines.append(n)
            widths.append(len(fields))
            values += [float(x) if g else np.nan for x, g in zip(fields, ok)]
            unparsed.append(not all(ok))
    return files, lines, widths, values, unparsed


def _same_as_reference(paths: list[Path]) -> None:
    """The bulk reading of ``paths`` is the line-by-line reading, row for row and bit for bit."""
    rows = read_rows(paths, "label file", missing_ok=True)
    files, lines, widths, values, unparsed = _reference(paths)
    assert rows.file.tolist() == files and rows.line.tolist() == lines and rows.width.tolist() == widths
    assert rows.unparsed.tolist() == unparsed
    assert np.array_equal(rows.values, np.array(values), equal_nan=True)
    assert np.signbit(rows.values).tolist() == np.signbit(np.array(values)).tolist()  # (−0 stays −0)
    assert rows.start.tolist() == (np.cumsum(widths) - widths).tolist()


TOKENS = ["0", "1", "-0", "0.5", "0.25", ".5", "5.", "+1", "1e-05", "2.5E+3", "0.1234567", "-0.004",
          "0.30000000000000004", "123456789012345678901234567890", "1e400", "4.9e-325"]  # fmt: skip
ODD = ["nan", "inf", "-Infinity", "1_0", "x", "0.\u0665", "1.2.3", "1e", "-", "."]
BREAKS = ["\n", "\r\n", "\r", "\n\n", "\n \t\n"]
FOREIGN_BREAKS = ["\x0b", "\x0c", "\x1c", "\x85", "\u2028"]


def _random_text(rng: random.Random) -> str:
    out = "\ufeff" if rng.random() < 0.1 else ""
    for _ in range(rng.randint(0, 6)):
        fields = [rng.choice(TOKENS) for _ in range(rng.randint(1, 9))]
        if rng.random() < 0.08:
            fields[rng.randrange(len(fields))] = rng.choice(ODD)
        sep = rng.choice([" ", " ", "\t", "  "])
        if rng.random() < 0.05:
            sep = rng.choice(["\u00a0", "\u3000", " \x1f"])
        out += rng.choice(["", " "]) + sep.join(fields)
        out += rng.choice(FOREIGN_BREAKS) if rng.random() < 0.05 else rng.choice(BREAKS)
    return out if rng.random() < 0.9 else out.rstrip("\r\n")


@pytest.mark.parametrize("piece", [64, 1 << 24])
def test_bulk_rows_equal_the_line_by_line_reading(tmp_path: Path, monkeypatch, piece: int) -> None:
    monkeypatch.setattr(text_rows, "PIECE_BYTES", piece)
    rng = random.Random(piece)
    paths = []
    for k in range(300):
        p = tmp_path / f"{k}.txt"
        if rng.random() > 0.05:  # (a few files missing: empty)
            p.write_text(_random_text(rng), encoding="utf-8", newline="")
        paths.append(p)
    _same_as_reference(paths)


def test_fields_the_number_parser_stops_at_leave_the_other_files_exact(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    a.write_text("0 0.5 0.25 1e-3\n")
    b.write_text("1 2\n\n1-2 3\n")
    c.write_text("7 0.1\r\n")
    rows = read_rows([a, b, c])
    assert rows.line.tolist() == [1, 1, 3, 1] and rows.unparsed.tolist() == [False, False, True, False]
    assert rows.values[[0, 1, 2, 3, 4, 5, 7, 8, 9]].tolist() == [0, 0.5, 0.25, 1e-3, 1, 2, 3, 7, 0.1]
    assert rows.unparsed_field(2) == "1-2"


def test_rows_of_one_width_as_a_matrix(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("0 1 2 3 4 5 6 7 8\n")
    b.write_text("0 1 2 3 4 5 6 7 8\n0 1 2\n")
    rows = read_rows([a, b])
    assert not rows.file_errors
    assert rows.width.tolist() == [9, 9, 3]
    assert rows.matrix(9, np.array([0, 1])).tolist() == [list(range(9))] * 2


def _labels(root: Path, texts: dict[str, str | None]) -> Path:
    for stem, text in texts.items():
        write_image(root / "images" / "val" / f"{stem}.jpg", 20, 10)
        lp = root / "labels" / "val" / f"{stem}.txt"
        lp.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            lp.mkdir()
        else:
            lp.write_text(text)
    y = root / "data.yaml"
    y.write_text("val: images/val\nnames: [a, b, c]\n")
    return y


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        # a fault of a later file never hides one of an earlier file, whatever its kind
        ({"a": "0 0.5 0.5 0.2 0.2\n", "b": "4 0.5 0.5 0.2 0.2\n", "c": None}, "b.txt: line 1: class 4"),
        ({"a": None, "b": "0 0.5 x 0.2 0.2\n"}, "a.txt: the label file is a folder"),
        (
            {"a": "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2\n", "b": "0 0.5\n"},
            "a.txt: line 2: exact duplicate of line 1",
        ),
        # in a file: column counts first, then mixed rows, then row by row
        ({"a": "0 0.5 x 0.2 0.2\n0 0.5\n"}, "a.txt: line 2: 2 columns"),
        ({"a": "0 2 0.5 0.2 0.2\n1 0.1 0.1 0.2 0.1 0.3 0.3\n"}, "a.txt: line 2: the file mixes"),
        (
            {"a": "0 0.5 0.5 0.2 0.2\n9 0.5 x 0.2 0.2\n0 0.5 y 0.2 0.2\n"},
            "a.txt: line 2: 'x' is not a number",
        ),
        ({"a": "0.5 0.5 0.5 0.2 0.2\n0 0.5 nan 0.2 0.2\n"}, "a.txt: line 1: class 0.5 is not a non-negative"),
        # −0 equals 0 as np.unique compares rows: a duplicate (it was a crash)
        ({"a": "0 0.5 0.5 0.2 0.2\n-0 0.5 0.5 0.2 0.2\n"}, "a.txt: line 2: exact duplicate of line 1"),
    ],
)
def test_first_fault_as_a_file_by_file_reader(tmp_path: Path, texts, message: str) -> None:
    y = _labels(tmp_path, texts)
    with pytest.raises(DetevalError) as err:
        load_yolo_dataset(y)
    assert message in str(err.value)


def test_duplicates_warned_for_the_files_before_a_fault(tmp_path: Path) -> None:
    y = _labels(tmp_path, {"a": "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2\n", "b": "5 0.5 0.5 0.2 0.2\n",
                           "c": "1 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2 0.2\n"})  # fmt: skip
    with warnings.catch_warnings(record=True) as seen, pytest.raises(DetevalError, match=r"b\.txt: line 1"):
        warnings.simplefilter("always")
        load_yolo_dataset(y, duplicates="drop")
    assert [str(w.message).rsplit("/", 1)[-1] for w in seen if w.category is DetevalWarning] == [
        "a.txt: 1 duplicate labels removed (as Ultralytics does)"
    ]


def test_many_files_read_together_equal_each_read_alone(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    paths = []
    for k in range(40):
        p = tmp_path / f"{k}.txt"
        n = int(rng.integers(0, 6))
        rows = [
            f"{rng.integers(0, 3)} " + " ".join(f"{v:g}" for v in rng.random(4) * 0.5 + 0.2) for _ in range(n)
        ]
        if k % 7 == 3:
            rows.append("2 0.1 0.1 0.3 0.1 0.3 0.4 0.2 0.5")  # a polygon file
            rows = rows[-1:]
        p.write_text("\n".join(rows) + "\n")
        paths.append(p)
    together = parse_label_files(paths, 3)
    alone = [parse_label_files([p], 3) for p in paths]
    assert together.file.tolist() == [k for k, a in enumerate(alone) for _ in range(len(a.file))]
    assert together.cls.tolist() == [c for a in alone for c in a.cls.tolist()]
    assert together.xywh.tolist() == [r for a in alone for r in a.xywh.tolist()]
    assert together.polygons is not None
    polys = [None if q is None else q.tolist() for q in together.polygons]
    assert polys == [
        None if q is None else q.tolist() for a in alone for q in (a.polygons or [None] * len(a.file))
    ]


@pytest.mark.parametrize("piece", [64, 1 << 24])
def test_rows_of_one_width_read_by_the_table_reader_equal_the_line_by_line_reading(
    tmp_path: Path, monkeypatch, piece: int
) -> None:
    """Files whose lines all have one width (the usual label and prediction files) are parsed by numpy's table
    reader: the same values, −0 and the overflows included; a piece where it refuses a field falls back."""
    monkeypatch.setattr(text_rows, "PIECE_BYTES", piece)
    calls = []
    loadtxt = np.loadtxt

    def counted(*args, **kwargs):
        calls.append(1)
        return loadtxt(*args, **kwargs)

    monkeypatch.setattr(text_rows.np, "loadtxt", counted)
    rng = random.Random(7 + piece)
    paths = []
    for k in range(200):
        lines = []
        for _ in range(rng.randint(0, 5)):
            fields = [rng.choice(TOKENS) for _ in range(6)]
            if rng.random() < 0.02:
                fields[rng.randrange(6)] = rng.choice(["1e", "-", ".", "1.2.3", "+-1", "e5"])
            lines.append(rng.choice(["", " "]) + rng.choice([" ", "\t", "  "]).join(fields))
        p = tmp_path / f"{k}.txt"
        p.write_text("".join(x + rng.choice(["\n", "\n\n", "\n \n"]) for x in lines), newline="")
        paths.append(p)
    _same_as_reference(paths)
    assert calls  # (the table reader was used)
