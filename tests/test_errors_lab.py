"""``.lab`` files and ``deteval mir``: every class of bad input (docs/errors.md) through the API and the CLI.

A bad line is an error naming the file and the line (exit 2, no traceback); with ``on_error="skip"``
(``--on-error skip``) it is left out, listed and counted, and the result equals that of the file without
it. Harmless variants (BOM, CRLF, CR, tabs, repeated spaces) give exactly the original result.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_errors import cli_error, insert_line, subprocess_error

from deteval.cli import main
from deteval.errors import InputFormatError, ValidationError
from deteval.io.lab import load_lab
from deteval.mir import evaluate_mir

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "mir"


@pytest.fixture
def labs(tmp_path):
    for name in ("ref.lab", "est.lab"):
        shutil.copy(SAMPLE / name, tmp_path / name)
    return tmp_path / "ref.lab", tmp_path / "est.lab"


def api(ref: Path, est: Path, on_error: str = "raise") -> dict:
    return evaluate_mir(str(ref), str(est), on_error=on_error).to_dict()


def cli_json(capsys, *args: str) -> dict:
    code = main(["mir", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def without_skips(doc: dict) -> dict:
    out = {k: v for k, v in doc.items() if k != "skipped_records"}
    out["warnings"] = [w for w in doc["warnings"] if not w.startswith("skipped bad record")]
    return out


# (bad line, inserted as line 5, error class, words of the message)
BAD_LINES = {
    "non_numeric_start": (b"abc 13.0 A", InputFormatError, "start time 'abc' is not a number"),
    "non_numeric_end": (b"13.0 1,5 A", InputFormatError, "end time '1,5' is not a number"),
    "missing_label": (b"13.0 14.0", InputFormatError, "missing label"),
    "one_field": (b"13.0", InputFormatError, "found 1 field(s)"),
    "nan": (b"nan 14.0 A", ValidationError, "start time is nan; times must be finite"),
    "inf": (b"13.0 inf A", ValidationError, "end time is inf"),
    "negative": (b"-1 14.0 A", ValidationError, "start time -1.0 is negative"),
    "end_before_start": (b"14.0 13.0 A", ValidationError, "end 13.0 is before start 14.0"),
    "huge": (b"0 1e300 A", ValidationError, "implausibly large"),
    "latin1": (b"13.0 14.0 caf\xe9", InputFormatError, "not UTF-8"),
}


@pytest.mark.fast_cases(name=1)
@pytest.mark.parametrize("name", sorted(BAD_LINES))
@pytest.mark.parametrize("side", ["reference", "estimate"])
def test_bad_lab_line(labs, capsys, name, side):
    line, exc, words = BAD_LINES[name]
    ref, est = labs
    clean = api(ref, est)
    target = ref if side == "reference" else est
    insert_line(target, 5, line)
    with pytest.raises(exc) as info:
        api(ref, est)
    assert info.value.file == str(target) and info.value.record == "line 5" and words in info.value.reason
    cli_error(capsys, ["mir", str(ref), str(est)], f"{target}: line 5: ", words)
    for doc in (api(ref, est, on_error="skip"), cli_json(capsys, str(ref), str(est), "--on-error", "skip")):
        assert without_skips(doc) == without_skips(clean)
        assert doc["skipped_records"] == 1
        assert [w for w in doc["warnings"] if w.startswith("skipped")] == [
            f"skipped bad record: {target}: line 5: {info.value.reason}"
        ]


def test_all_bad_lines_skipped_at_once(labs):
    ref, est = labs
    clean = api(ref, est)
    for k, (line, _, _) in enumerate(BAD_LINES.values()):
        insert_line(est, 3 + 2 * k, line)
    doc = api(ref, est, on_error="skip")
    assert without_skips(doc) == without_skips(clean)
    assert doc["skipped_records"] == len(BAD_LINES)
    segs = load_lab(est, on_error="skip")
    assert len(segs.skipped) == len(BAD_LINES) and len(segs) == 9


def _write(data: bytes):
    return lambda p: p.write_bytes(data)


# Whole-file faults: always an error, with or without skipping.
BAD_FILES = {
    "empty": (_write(b""), InputFormatError, "no segments"),
    "blank": (_write(b"\n \t \n\n"), InputFormatError, "no segments"),
    "only_comments": (_write(b"# nothing here\n"), InputFormatError, "no segments"),
    "overlap": (_write(b"0 5 A\n4 6 B\n"), ValidationError, "line 2: segment [4.0, 6.0] overlaps"),
    "utf16": (lambda p: p.write_bytes(p.read_text().encode("utf-16")), InputFormatError, "not UTF-8"),
    "directory": (lambda p: (p.unlink(), p.mkdir()), InputFormatError, "Is a directory"),
    "missing": (lambda p: p.unlink(), InputFormatError, "No such file"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_lab_file(labs, capsys, name):
    mutate, exc, words = BAD_FILES[name]
    ref, est = labs
    mutate(est)
    for on_error in ("raise", "skip"):
        if name == "utf16" and on_error == "skip":
            continue  # every line undecodable: see test_utf16_skipped_entirely_is_still_an_error
        with pytest.raises(exc) as info:
            api(ref, est, on_error=on_error)
        assert info.value.file == str(est) and words in str(info.value)
    # on the command line a folder stands for several tracks: a folder next to a file is refused as such
    cli_words = f"{est} is a folder but {ref} is not" if name == "directory" else words
    cli_error(capsys, ["mir", str(ref), str(est)], str(est), cli_words)


def test_utf16_skipped_entirely_is_still_an_error(labs):
    ref, est = labs
    est.write_bytes(b"0 1 A\n".decode().encode("utf-16-le") + b"\n\xff\n")
    with pytest.raises(InputFormatError, match="no valid segment"):
        api(ref, est, on_error="skip")


def test_unreadable_file(labs, capsys, monkeypatch):
    ref, est = labs

    def deny(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", deny)
    cli_error(capsys, ["mir", str(ref), str(est)], str(ref), "Permission denied")


def test_too_long_a_reference_is_refused_before_sampling(labs, capsys):
    ref, est = labs
    ref.write_bytes(b"0 1e9 A\n")  # 1e10 frames at 10 frames/s: refused, not allocated
    cli_error(capsys, ["mir", str(ref), str(est)], f"{ref}: line 1:", "frames to sample")
    # ... while a long estimate only costs a warning (it is compared, never sampled beyond the reference)
    est.write_bytes(b"0 1e9 A\n")
    doc = api(SAMPLE / "ref.lab", est)
    assert any("after the reference" in w for w in doc["warnings"])


def _variants():
    return {
        "bom": lambda d: b"\xef\xbb\xbf" + d,
        "crlf": lambda d: d.replace(b"\n", b"\r\n"),
        "cr": lambda d: d.replace(b"\n", b"\r"),
        "spaces_for_tabs": lambda d: d.replace(b"\t", b"   "),
        "mixed_whitespace": lambda d: d.replace(b"\t", b" \t "),
        "blank_lines_and_trailing_space": lambda d: b"\n\n" + d.replace(b"\n", b"  \n\n"),
        "unsorted": lambda d: b"\n".join(reversed(d.split(b"\n"))),
    }


@pytest.mark.parametrize("name", sorted(_variants()))
def test_harmless_variants_give_the_original_result(labs, capsys, name):
    ref, est = labs
    clean = api(ref, est)
    est.write_bytes(_variants()[name](est.read_bytes()))
    assert api(ref, est) == clean
    assert cli_json(capsys, str(ref), str(est)) == clean


@pytest.mark.slow
def test_through_a_subprocess(labs):
    ref, est = labs
    insert_line(est, 4, b"12.8 nan B")
    subprocess_error(["mir", str(ref), str(est)], f"{est}: line 4: end time is nan")
