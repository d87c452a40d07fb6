"""``deteval trec -q`` writes its per-topic lines a block of topics at a time from the per-topic arrays
(``iter_trec_lines``), never holding a dict or a line per topic: the output is byte-identical to
``format_trec`` of a ``per_query`` result, with hidden topics (-c under 9.0.8), -Z, relstring and blocks that
cut the topics anywhere."""

from __future__ import annotations

import numpy as np
import pytest
from _trec_files import write_trec
from test_trec_quicktest import prefs_inputs

import deteval.commands.trec as trec_command
import deteval.retrieval.trec_output as trec_mod
from deteval.cli import main
from deteval.io.prefs import load_prefs
from deteval.io.trec import load_qrels, load_run
from deteval.retrieval.prefs import evaluate_prefs
from deteval.retrieval.trec_output import format_trec, iter_trec_lines
from deteval.run.trec import evaluate_trec


def _spy(monkeypatch, name: str) -> list:
    """The results the trec command's ``name`` (evaluate_trec or evaluate_prefs) returns, as it returns them."""
    seen: list = []
    real = getattr(trec_command, name)

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(trec_command, name, spy)
    return seen


def _data(n_topics: int = 7, seed: int = 3) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    qrels = {f"q{t}": {f"d{d}": int(rng.integers(0, 3)) for d in range(6)} for t in range(n_topics)}
    qrels["z_missing"] = {"d1": 1}  # a qrels topic absent from the run: evaluated by -c, hidden under 9.0.8
    run = {f"q{t}": {f"d{d}": float(rng.integers(0, 4)) for d in range(8)} for t in range(n_topics)}
    return qrels, run


@pytest.mark.parametrize("block", [1, 3, 2048])
@pytest.mark.parametrize(
    "extra",
    [[], ["-c"], ["-c", "--trec-eval-version", "10.0"], ["-m", "relstring", "-m", "P.2,5", "-m", "gm_map"]],
)
def test_streamed_lines_equal_format_trec(tmp_path, capsys, monkeypatch, block, extra):
    monkeypatch.setattr(trec_mod, "TOPIC_BLOCK", block)
    qp, rp = write_trec(tmp_path, *_data())
    out = tmp_path / "out.txt"
    assert main(["trec", str(qp), str(rp), "-q", *extra, "-o", str(out)]) == 0
    assert main(["trec", str(qp), str(rp), "-q", *extra]) == 0
    printed = capsys.readouterr().out
    kw: dict = {"complete": "-c" in extra}
    if "10.0" in extra:
        kw["version"] = "10.0"
    measures = [extra[i + 1] for i, a in enumerate(extra) if a == "-m"] or None
    ref = evaluate_trec(load_qrels(qp), load_run(rp), measures, per_query=True, **kw)
    expected = "".join(ln + "\n" for ln in format_trec(ref, per_query=True))
    assert printed == expected and out.read_text() == expected
    assert any("\tq6\t" in ln for ln in expected.splitlines())
    assert ("\tz_missing\t" in expected) == ("10.0" in extra)  # (9.0.8 prints no line for it)


def test_cli_builds_no_per_topic_dicts(tmp_path, capsys, monkeypatch):
    """The cause of -q's memory (a dict and a line per topic) is gone: the CLI keeps arrays, per_class stays
    empty, and the lines come in blocks of TOPIC_BLOCK topics."""
    monkeypatch.setattr(trec_mod, "TOPIC_BLOCK", 2)
    seen = _spy(monkeypatch, "evaluate_trec")
    qp, rp = write_trec(tmp_path, *_data())
    assert main(["trec", str(qp), str(rp), "-q", "-m", "P.5", "-m", "map"]) == 0
    assert seen[0].per_class == {} and seen[0].topic_columns is not None
    blocks = list(iter_trec_lines(seen[0], per_query=True))
    assert [len(b) for b in blocks] == [4, 4, 4, 2, 2]  # 7 topics by 2 (2 measures each), then the all lines
    assert "".join(ln + "\n" for b in blocks for ln in b) == capsys.readouterr().out


@pytest.mark.parametrize("block", [1, 5, 2048])
@pytest.mark.parametrize(
    "extra", [[], ["-c", "-M", "40"], ["-c", "--trec-eval-version", "10.0"], ["-m", "prefs"]]
)
def test_prefs_streamed_without_per_topic_dicts(tmp_path, capsys, monkeypatch, block, extra):
    """-R prefs -q in trec format: the arrays kept, ``per_class`` empty, the lines those of ``format_trec`` of
    a ``per_query`` result, on trec_eval's prefs.test (24 topics) with topic 301's ranking on all but two
    topics (-c: those two are evaluated, and hidden under 9.0.8)."""
    monkeypatch.setattr(trec_mod, "TOPIC_BLOCK", block)
    prefs, run = prefs_inputs(tmp_path)
    lines = open(run).read().splitlines()
    short = tmp_path / "short.run"
    short.write_text("".join(ln + "\n" for ln in lines if ln.split()[0] not in ("2.EC.A", "13.PA=3")))
    seen = _spy(monkeypatch, "evaluate_prefs")
    assert main(["trec", "-R", "prefs", "-q", *extra, prefs, str(short)]) == 0
    printed = capsys.readouterr().out
    assert seen[0].per_class == {} and seen[0].topic_columns is not None
    kw: dict = {"complete": "-c" in extra, "max_docs": 40 if "-M" in extra else None}
    if "10.0" in extra:
        kw["version"] = "10.0"
    measures = [extra[i + 1] for i, a in enumerate(extra) if a == "-m"] or None
    ref = evaluate_prefs(load_prefs(prefs), load_run(short), measures, per_query=True, **kw)
    assert len(ref.per_class) == (24 if "-c" in extra else 22)
    assert printed == "".join(ln + "\n" for ln in format_trec(ref, per_query=True))
    assert ("\t13.PA=3\t" in printed) == ("10.0" in extra)
