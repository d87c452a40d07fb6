"""TREC (``deteval trec``): the bad-input catalogue of docs/errors.md, through the CLI.

Skipped until the TREC evaluator is present in the tree (it was built on another branch).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_errors import cli_error

pytest.importorskip("deteval.io.trec")

from deteval.cli import main  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "trec"
QRELS = (SAMPLE / "qrels.txt").read_bytes() if (SAMPLE / "qrels.txt").exists() else b""
RUN = (SAMPLE / "run.txt").read_bytes() if (SAMPLE / "run.txt").exists() else b""


def files(tmp_path: Path, qrels: bytes = QRELS, run: bytes = RUN) -> tuple[str, str]:
    (tmp_path / "qrels.txt").write_bytes(qrels)
    (tmp_path / "run.txt").write_bytes(run)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")


def run_json(capsys, q: str, r: str, *extra: str) -> dict:
    code = main(["trec", q, r, "--format", "json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def measures(doc: dict) -> dict:
    """The scores, without the warnings and the file names."""
    return {k: v for k, v in doc.items() if k not in ("warnings", "qrels", "run")}


# (which file, mutation, words of the one-line error; the error names that file)
BAD = {
    "qrels_missing_field": ("qrels", lambda b: b"401 0 X\n" + b, ["line 1", "expected 4 fields"]),
    "run_missing_field": ("run", lambda b: b"401 Q0 X 1 2\n" + b, ["line 1", "expected 6 fields"]),
    "run_score_not_a_number": ("run", lambda b: b"401 Q0 X 1 abc t\n" + b,
                               ["line 1", "'abc' is not a valid number"]),
    "run_score_nan": ("run", lambda b: b"401 Q0 X 1 nan t\n" + b, ["line 1", "score nan is not finite"]),
    "run_score_inf": ("run", lambda b: b"401 Q0 X 1 -inf t\n" + b, ["line 1", "is not finite"]),
    "run_score_overflow": ("run", lambda b: b"401 Q0 X 1 1e400 t\n" + b, ["line 1", "is not finite"]),
    "qrels_relevance_not_an_integer": ("qrels", lambda b: b"401 0 X 1.5\n" + b,
                                       ["line 1", "relevance '1.5'"]),
    "run_duplicate_document": ("run", lambda b: b + b.split(b"\n")[0] + b"\n", ["duplicate document"]),
    "qrels_duplicate_document": ("qrels", lambda b: b + b.split(b"\n")[1] + b"\n", ["duplicate document"]),
    "empty_qrels": ("qrels", lambda b: b"", ["no topic has both results and judgements"]),
    "empty_run": ("run", lambda b: b"", ["no topic has both results and judgements"]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_trec_input(tmp_path, capsys, name):
    which, mutate, words = BAD[name]
    q, r = files(
        tmp_path,
        qrels=mutate(QRELS) if which == "qrels" else QRELS,
        run=mutate(RUN) if which == "run" else RUN,
    )
    cli_error(capsys, ["trec", q, r], q if which == "qrels" else r, *words)


def test_unreadable_files(tmp_path, capsys):
    q, r = files(tmp_path)
    cli_error(capsys, ["trec", str(tmp_path / "missing"), r], "missing", "No such file")
    cli_error(capsys, ["trec", str(tmp_path), r], str(tmp_path), "Is a directory")


@pytest.mark.parametrize(
    "variant",
    [
        lambda b: b.replace(b" ", b"\t"),  # tabs
        lambda b: b.replace(b" ", b"  \t "),  # repeated spaces and tabs
        lambda b: b.replace(b"\n", b"\r\n"),  # Windows line endings
    ],
)
def test_harmless_variants_give_the_same_scores(tmp_path, capsys, variant):
    clean = run_json(capsys, *files(tmp_path))
    doc = run_json(capsys, *files(tmp_path, variant(QRELS), variant(RUN)))
    assert measures(doc) == measures(clean)


def test_tolerated_inputs_are_reported(tmp_path, capsys):
    doc = run_json(capsys, *files(tmp_path, QRELS, RUN + b"999 Q0 X 1 2 t\n"))
    assert any("without judgements in the qrels" in w for w in doc["warnings"])
    doc = run_json(capsys, *files(tmp_path, QRELS + b"998 0 X 1\n", RUN))
    assert any("absent from the run" in w for w in doc["warnings"])
    doc = run_json(capsys, *files(tmp_path, b"\n\n" + QRELS, RUN + b"\n \n"))
    assert any("blank line(s) skipped" in w for w in doc["warnings"])


@pytest.mark.xfail(reason="open: a UTF-8 BOM becomes part of the first topic id (a new, unjudged topic)")
def test_bom_is_ignored(tmp_path, capsys):
    clean = run_json(capsys, *files(tmp_path))
    doc = run_json(capsys, *files(tmp_path, b"\xef\xbb\xbf" + QRELS, b"\xef\xbb\xbf" + RUN))
    assert measures(doc) == measures(clean) and doc["warnings"] == clean["warnings"]


@pytest.mark.xfail(reason="open: old-Mac CR line ends are read as one line (VOC and .lab accept them)")
def test_cr_line_ends(tmp_path, capsys):
    clean = run_json(capsys, *files(tmp_path))
    doc = run_json(capsys, *files(tmp_path, QRELS.replace(b"\n", b"\r"), RUN.replace(b"\n", b"\r")))
    assert measures(doc) == measures(clean)


@pytest.mark.xfail(reason="open: a UTF-16 or binary file is reported as a field-count error, not by encoding")
def test_utf16_is_named_as_such(tmp_path, capsys):
    q, r = files(tmp_path, run=RUN.decode().encode("utf-16"))
    cli_error(capsys, ["trec", q, r], r, "UTF")
