"""TREC: every class of bad qrels/run input (docs/errors.md) through the Python API and the CLI.

Bad lines give a DetevalError naming the file and the line, exit status 2 and no traceback; with
``on_error="skip"`` (``--on-error skip``) they are left out, reported, and the valid lines are scored exactly
as the file without them. Harmless variants (BOM, CRLF, CR, tabs) score exactly as the original.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_errors import cli_error, insert_line, subprocess_error

from deteval.cli import main
from deteval.errors import ConfigError, InputFormatError, ValidationError
from deteval.io.trec import load_qrels, load_run
from deteval.retrieval.trec_output import format_trec
from deteval.run.trec import evaluate_trec

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "trec"
MEASURES = ["map", "P_10", "ndcg", "recip_rank", "num_ret", "num_rel_ret"]


@pytest.fixture
def files(tmp_path):
    shutil.copy(SAMPLE / "qrels.txt", tmp_path / "qrels.txt")
    shutil.copy(SAMPLE / "run.txt", tmp_path / "run.txt")
    return tmp_path / "qrels.txt", tmp_path / "run.txt"


def api(qrels: Path, run: Path, on_error: str = "raise") -> dict:
    q, r = load_qrels(qrels, on_error=on_error), load_run(run, on_error=on_error)
    return evaluate_trec(q, r, MEASURES, per_query=True).to_dict()


def argv(qrels: Path, run: Path, *extra: str) -> list[str]:
    measures = [arg for m in MEASURES for arg in ("-m", m)]
    return ["trec", str(qrels), str(run), *measures, "--format", "json", *extra]


def cli_json(capsys, args: list[str]) -> dict:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def scores(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("warnings", "skipped_records", "lines")}


BAD_RUN_LINES = {
    "five_fields": (b"401 Q0 X 1 2.0", InputFormatError, "expected 6 fields (qid Q0 docno rank score tag), found 5"),
    "score_text": (b"401 Q0 X 1 high t", InputFormatError, "score 'high' is not a valid number"),
    "score_hex": (b"401 Q0 X 1 0x10 t", InputFormatError, "score '0x10' is not a valid number"),
    "score_underscore": (b"401 Q0 X 1 1_0 t", InputFormatError, "score '1_0' is not a valid number"),
    "score_nan": (b"401 Q0 X 1 nan t", ValidationError, "score nan is not finite"),
    "score_inf": (b"401 Q0 X 1 -inf t", ValidationError, "score -inf is not finite"),
    "score_overflow": (b"401 Q0 X 1 1e999 t", ValidationError, "score inf is not finite"),
}  # fmt: skip

BAD_QRELS_LINES = {
    "three_fields": (b"401 0 X", InputFormatError, "expected 4 fields (qid iter docno rel), found 3"),
    "five_fields": (b"401 0 X 1 2", InputFormatError, "found 5"),
    "rel_text": (b"401 0 X high", InputFormatError, "relevance 'high' is not a valid number"),
    "rel_fraction_exponent": (b"401 0 X 1.5e3", InputFormatError, "relevance '1.5e3' is not a valid number"),
    "rel_dot": (b"401 0 X .", InputFormatError, "relevance '.' is not a valid number"),
    "rel_nan": (b"401 0 X nan", InputFormatError, "relevance 'nan' is not a valid number"),
    "rel_underscore": (b"401 0 X 1_0", InputFormatError, "relevance '1_0' is not a valid number"),
    "rel_huge": (b"401 0 X 99999999999999999999999", ValidationError, "is out of range"),
}  # fmt: skip


@pytest.mark.parametrize(
    "which,name",
    [("run", n) for n in sorted(BAD_RUN_LINES)] + [("qrels", n) for n in sorted(BAD_QRELS_LINES)],
)
def test_bad_line(files, capsys, which, name):
    qrels, run = files
    line, exc, words = (BAD_RUN_LINES if which == "run" else BAD_QRELS_LINES)[name]
    clean = api(qrels, run)
    target = run if which == "run" else qrels
    insert_line(target, 3, line)
    with pytest.raises(exc) as info:
        api(qrels, run)
    assert info.value.file == str(target) and info.value.record == "line 3" and words in info.value.reason
    cli_error(capsys, argv(qrels, run), f"{target}: line 3: ", words)
    for doc in (api(qrels, run, on_error="skip"), cli_json(capsys, argv(qrels, run, "--on-error", "skip"))):
        assert scores(doc) == scores(clean)
        assert doc["skipped_records"] == 1
        assert [w for w in doc["warnings"] if w.startswith("skipped")] == [
            f"skipped bad record: {target}: line 3: {info.value.reason}"
        ]


def test_many_bad_lines_each_reported_when_skipped(files):
    qrels, run = files
    clean = api(qrels, run)
    for k, (line, _, _) in enumerate(BAD_RUN_LINES.values()):
        insert_line(run, 1 + 2 * k, line)  # the first line too: the run tag then comes from the first kept
    insert_line(run, 4, b"")  # and a blank line in between
    doc = api(qrels, run, on_error="skip")
    assert scores(doc) == scores(clean) and doc["skipped_records"] == len(BAD_RUN_LINES)
    reported = [int(w.split(": line ")[1].split(":")[0]) for w in doc["warnings"] if w.startswith("skipped")]
    bad = {line for line, _, _ in BAD_RUN_LINES.values()}
    assert reported == [i for i, t in enumerate(run.read_bytes().split(b"\n"), 1) if t in bad]
    assert load_run(run, on_error="skip").tag == load_run(SAMPLE / "run.txt").tag


def test_skip_keeps_the_file_line_numbers_for_later_errors(files, capsys):
    """A duplicate (two lines at fault) is never skipped; its message still names the file's lines."""
    qrels, run = files
    first = run.read_bytes().split(b"\n")[0]
    insert_line(run, 2, b"401 Q0 X 1 nan t")
    insert_line(run, 5, first)
    cli_error(capsys, argv(qrels, run, "--on-error", "skip"), f"{run}: line 5: duplicate document", "line 1")


BAD_FILES = {
    "run_utf16": ("run", lambda b: b.decode().encode("utf-16"), "line 1: binary data (a NUL byte)"),
    "run_nul": ("run", lambda b: b.replace(b"LA010134542", b"LA0101\x0034542"), "line 2: binary data"),
    "qrels_utf16": ("qrels", lambda b: b.decode().encode("utf-16-le"), "binary data (a NUL byte)"),
    "run_duplicate_doc": ("run", lambda b: b + b.split(b"\n")[0] + b"\n",
                          "duplicate document 'WSJ870324-079260' for one topic in the run (first at line 1)"),
    "qrels_duplicate_doc": ("qrels", lambda b: b.split(b"\n")[0] + b"\n" + b,
                            "line 2: duplicate document 'FBIS3-20344' for one topic in the qrels"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file(files, capsys, name):
    which, change, words = BAD_FILES[name]
    qrels, run = files
    target = run if which == "run" else qrels
    target.write_bytes(change(target.read_bytes()))
    for on_error in ("raise", "skip"):
        with pytest.raises((InputFormatError, ValidationError)) as info:
            api(qrels, run, on_error)
        assert info.value.file == str(target) and words in str(info.value)
        cli_error(capsys, argv(qrels, run, "--on-error", on_error), str(target), words)


def test_missing_directory_unreadable(files, capsys, monkeypatch):
    qrels, run = files
    cli_error(capsys, argv(qrels, run.parent / "none.txt"), "none.txt: cannot read file: No such file")
    cli_error(capsys, argv(run.parent, run), f"{run.parent}: cannot read file: Is a directory")
    real, real_open = Path.read_bytes, Path.open

    def deny(self):
        if self.name == "run.txt":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    def deny_open(self, *args, **kwargs):  # the loaders stream the file in blocks
        if self.name == "run.txt":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_bytes", deny)
    monkeypatch.setattr(Path, "open", deny_open)
    cli_error(capsys, argv(qrels, run), str(run), "Permission denied")


def test_empty_files(files, capsys):
    """An empty (or blank) run or qrels file: no topic can be evaluated, a clear error naming both files;
    with -c an empty run is a valid result (every qrels topic scores 0)."""
    qrels, run = files
    run.write_bytes(b"\n \t\n")
    cli_error(
        capsys, argv(qrels, run), f"{run} vs {qrels}: no topic has both results and judgements (0 run rows"
    )
    doc = cli_json(capsys, [*argv(qrels, run), "-c"])
    assert doc["map"] == 0.0 and doc["num_ret"] == 0
    run.write_bytes((SAMPLE / "run.txt").read_bytes())
    qrels.write_bytes(b"")
    cli_error(capsys, argv(qrels, run), "no topic has both results and judgements", "0 qrels rows")


HARMLESS = {
    "bom": lambda b: b"\xef\xbb\xbf" + b,
    "crlf": lambda b: b.replace(b"\n", b"\r\n"),
    "cr": lambda b: b.replace(b"\n", b"\r"),
    "tabs_and_spaces": lambda b: b.replace(b" ", b" \t  "),
    "blank_lines_and_indent": lambda b: b"\n  \n\t" + b.replace(b"\n", b"   \n\n") + b"\n",
}


@pytest.mark.parametrize("name", sorted(HARMLESS))
@pytest.mark.parametrize("which", ["run", "qrels"])
def test_harmless_variants_score_as_the_original(files, capsys, name, which):
    qrels, run = files
    clean = api(qrels, run)
    target = run if which == "run" else qrels
    target.write_bytes(HARMLESS[name](target.read_bytes()))
    assert scores(api(qrels, run)) == scores(clean)
    assert scores(cli_json(capsys, argv(qrels, run))) == scores(clean)


def test_non_utf8_ids_are_opaque_bytes_and_stay_distinct(files):
    """trec_eval compares ids as bytes; so does deteval. Two Latin-1 topic ids that are not UTF-8 stay two
    rows in the per-topic report (no replacement character merges them)."""
    qrels, run = files
    qrels.write_bytes(qrels.read_bytes() + b"caf\xe9 0 d1 1\ncaf\xe8 0 d1 1\n")
    run.write_bytes(run.read_bytes() + b"caf\xe9 Q0 d1 1 1.0 t\ncaf\xe8 Q0 d2 1 1.0 t\n")
    doc = api(qrels, run)
    assert doc["per_class"]["caf\\xe9"]["map"] == 1.0 and doc["per_class"]["caf\\xe8"]["map"] == 0.0


def test_tolerated_topics_are_counted_in_warnings(files, capsys):
    qrels, run = files
    insert_line(run, 1, b"999 Q0 X 1 2.0 t")
    doc = cli_json(capsys, argv(qrels, run))
    assert any("1 run topic(s) without judgements" in w for w in doc["warnings"])
    assert any("qrels topic(s) absent from the run" in w for w in doc["warnings"])


def test_skip_count_is_not_a_trec_eval_line(files, capsys):
    qrels, run = files
    insert_line(run, 2, b"401 Q0 X 1 nan t")
    code = main(["trec", str(qrels), str(run), "--on-error", "skip"])
    out, err = capsys.readouterr()
    assert code == 0 and "skipped_records" not in out and "skipped bad record" in err
    result = evaluate_trec(load_qrels(qrels), load_run(run, on_error="skip"), ["map"])
    assert result.summary["skipped_records"] == 1
    assert all("skipped" not in line for line in format_trec(result))


def test_bad_on_error_value(files):
    with pytest.raises(ConfigError, match="on_error"):
        load_run(files[1], on_error="ignore")


def test_through_a_subprocess(files):
    qrels, run = files
    insert_line(run, 4, b"401 Q0 X 1 nan t")
    subprocess_error(argv(qrels, run), f"{run}: line 4: score nan is not finite")
    qrels.write_bytes("401 0 a 1\n".encode("utf-16"))
    subprocess_error(argv(qrels, run), str(qrels), "NUL byte")


@pytest.mark.parametrize("score", [True, "1", b"1", None, [1.0], float("nan"), float("inf")])
def test_in_memory_run_scores_must_be_finite_numbers(score):
    from deteval.io.trec import run_from_dict

    with pytest.raises(ValidationError, match="topic 'q', document 'd2'"):
        run_from_dict({"q": {"d1": 1.0, "d2": score}})


@pytest.mark.parametrize("rel", [True, "1", 1.5, None, float("nan")])
def test_in_memory_qrels_relevance_must_be_integers(rel):
    from deteval.io.trec import qrels_from_dict

    with pytest.raises(ValidationError, match="topic 'q', document 'd2'"):
        qrels_from_dict({"q": {"d1": 1, "d2": rel}})


def test_a_trailing_space_is_not_a_field(files, capsys):
    """Found by fuzzing: '401 Q0 X 1 2.5 ' (no tag, a trailing space) passed the fast tokeniser as six
    fields when every line of the file had that layout."""
    qrels, run = files
    run.write_bytes(b"401 Q0 X 1 2.5 \n401 Q0 Y 2 1.5 \n")
    cli_error(capsys, argv(qrels, run), f"{run}: line 1: expected 6 fields", "found 5")
    qrels.write_bytes(b"401 0 X \n")
    with pytest.raises(InputFormatError, match="line 1: expected 4 fields"):
        load_qrels(qrels)
