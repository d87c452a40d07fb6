"""trec_eval -Z: per-topic values as z-scores before averaging (convert_zscores.c, get_zscores.c)."""

from __future__ import annotations

import json
import math

import pytest

from deteval.cli import main
from deteval.errors import InputFormatError, ValidationError
from deteval.io.trec import load_zscores
from deteval.retrieval import evaluate_trec

QRELS = {"a": {"d1": 1, "d2": 0, "d3": 1}, "b": {"d1": 1, "d4": 1}}
RUN = {"a": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "b": {"d4": 2.0, "d5": 1.0}}
# map: a = (1 + 2/3) / 2 = 5/6, b = (1/1) / 2 = 0.5; P_5: a = 2/5, b = 1/5; num_ret: 3, 2


def write(tmp_path, text: str):
    p = tmp_path / "zscores"
    p.write_text(text)
    return p


def test_values_become_zscores_before_averaging(tmp_path) -> None:
    zs = load_zscores(
        write(tmp_path, "a map 0.5 0.25\nb map 0.5 0.1\na P_5 0.4 0\nb P_5 0.1 0\na num_ret 2 0.5\n")
    )
    res = evaluate_trec(QRELS, RUN, ["num_q", "num_ret", "map", "P.5"], zscores=zs, per_query=True)
    plain = evaluate_trec(QRELS, RUN, ["map"], per_query=True).per_class
    za, zb = (plain["a"]["map"] - 0.5) / 0.25, (plain["b"]["map"] - 0.5) / 0.1
    assert za != 0 and plain["b"]["map"] == 0.5
    assert res.per_class["a"]["map"] == za and res.per_class["b"]["map"] == zb
    assert res.summary["map"] == (za + zb) / 2
    # stddev 0: 0 when the value equals the mean (a), else trec_eval's missing value (b)
    assert res.per_class["a"]["P_5"] == 0.0 and res.per_class["b"]["P_5"] == -1000000.0
    # b has no num_ret entry: missing; the sum of the z-scores stays a double (trec_eval prints
    # Znum_ret all -6.3332 in its test/out.test.aqZ, not a truncated long)
    assert res.summary["num_ret"] == (3 - 2) / 0.5 - 1000000.0 and isinstance(res.summary["num_ret"], float)
    assert res.summary["num_q"] == 2
    assert res.lines[:2] == [f"Z{'num_q':<22}\tall\t2.0000", f"Z{'num_ret':<22}\tall\t-999998.0000"]


def test_cli_z_option(tmp_path, capsys) -> None:
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("".join(f"{t} 0 {d} {v}\n" for t, docs in QRELS.items() for d, v in docs.items()))
    r.write_text("".join(f"{t} Q0 {d} 1 {s} x\n" for t, docs in RUN.items() for d, s in docs.items()))
    z = write(tmp_path, "a map 0.5 0.25\nb map 0.5 0.1\n")
    assert main(["trec", str(q), str(r), "-m", "map", "-Z", str(z)]) == 0
    assert capsys.readouterr().out.split()[-1] == f"{((1 + 2 / 3) / 2 - 0.5) / 0.25 / 2:6.4f}" == "0.6667"


@pytest.mark.parametrize(
    "text,exc,words",
    [
        ("a map 0.5\n", InputFormatError, "expected 4 fields"),
        ("a map x 0.1\n", InputFormatError, "must be numbers"),
        ("a map 1_0 0.1\n", InputFormatError, "must be numbers"),
        ("a map 0.5 0.1\na map 0.4 0.1\n", ValidationError, "given twice"),
    ],
)
def test_bad_zscore_files(tmp_path, text: str, exc: type, words: str) -> None:
    with pytest.raises(exc, match=words) as info:
        load_zscores(write(tmp_path, text))
    assert info.value.record.startswith("line ")


def test_non_finite_zscores_read_as_atof_reads_them(tmp_path) -> None:
    # trec_eval 9.0.8's own test/zscores_file has "nan" for set_F (atof reads it): every Zset_F is then NaN,
    # printed "nan" as glibc prints a NaN read from text (tests/test_trec_live_cases.py runs the whole file)
    zs = load_zscores(write(tmp_path, "a map nan nan\nb map 0.5 inf\n"))
    assert math.isnan(zs[("a", "map")][0]) and zs[("b", "map")] == (0.5, math.inf)
    res = evaluate_trec(QRELS, RUN, ["map"], zscores=zs, per_query=True)
    assert math.isnan(res.per_class["a"]["map"]) and res.per_class["b"]["map"] == 0.0
    assert res.lines == ["Zmap                   \tall\t   nan"]


def test_missing_zscores_are_counted_and_warned(tmp_path) -> None:
    """trec_eval's -1000000 (no line for a (topic, measure), a topic missing, stddev 0 with a value other than
    the mean) is kept, counted in ``zscores_missing`` and said in one warning; never a trec_eval line."""
    zs = load_zscores(write(tmp_path, "a map 0.5 0.25\na P_5 0.4 0\nb P_5 0.1 0\n"))
    res = evaluate_trec(QRELS, RUN, ["map", "P.5"], zscores=zs, per_query=True)
    # b has no map line (1), b's P_5 0.2 differs from its mean with stddev 0 (1); a's P_5 equals its mean
    assert res.per_class["b"]["map"] == res.per_class["b"]["P_5"] == -1000000.0
    assert res.summary["zscores_missing"] == 2
    assert [w for w in res.warnings if w.startswith("-Z: 2 per-topic values")] == [res.warnings[-1]]
    assert all("zscores_missing" not in line for line in res.lines)
    assert res.to_dict()["zscores_missing"] == 2
    # every value converted: a count of 0 and no warning
    full = load_zscores(write(tmp_path, "a map 0.5 0.25\nb map 0.5 0.1\n"))
    ok = evaluate_trec(QRELS, RUN, ["map"], zscores=full)
    assert ok.summary["zscores_missing"] == 0 and not any(w.startswith("-Z") for w in ok.warnings)
    # without -Z: no such key
    assert "zscores_missing" not in evaluate_trec(QRELS, RUN, ["map"]).summary


def test_empty_zscore_file_counts_every_value(tmp_path, capsys) -> None:
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("".join(f"{t} 0 {d} {v}\n" for t, docs in QRELS.items() for d, v in docs.items()))
    r.write_text("".join(f"{t} Q0 {d} 1 {s} x\n" for t, docs in RUN.items() for d, s in docs.items()))
    z = write(tmp_path, "")
    assert main(["trec", str(q), str(r), "-m", "map", "-m", "P.5", "-Z", str(z)]) == 0
    out, err = capsys.readouterr()
    assert out.split("\n")[0].split() == ["Zmap", "all", "-1000000.0000"]
    assert "deteval: warning: -Z: 4 per-topic values had no (topic, measure) line" in err
    assert main(["trec", str(q), str(r), "-m", "map", "-Z", str(z), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["zscores_missing"] == 2
