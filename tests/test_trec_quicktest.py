"""trec_eval's own quicktest (its Makefile's `quicktest` target) rerun through `deteval trec`.

trec_eval's test inputs and expected outputs are in tests/data/trec_eval (see its README for where each
comes from and which quicktest commands cannot be rerun). Every line trec_eval printed must be printed by
deteval with the same text: the same name, topic and value to the printed precision."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deteval.cli import main
from deteval.errors import ConfigError
from deteval.retrieval import evaluate_trec
from deteval.retrieval.versions import recall_cutoff

DATA = Path(__file__).parent / "data" / "trec_eval"


def printed(capsys, args: list[str]) -> list[str]:
    assert main(["trec", *args]) == 0
    return capsys.readouterr().out.splitlines()


def expected(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def inputs() -> list[str]:
    return [str(DATA / "qrels.test"), str(DATA / "results.test")]


def qrels_123(tmp_path: Path, group: str | None = None) -> str:
    """test/qrels.123 (or, with ``group="0"``, test/qrels.rel_level) rebuilt from the stored
    test/qrels.comments.123: its comment lines dropped and 10.0's docno ``CR93E-3103#37`` written
    ``CR93E-3103`` (see the data README: the sizes match trec_eval's files)."""
    lines = (DATA / "qrels.comments.123").read_text().splitlines()
    rows = [line.replace("CR93E-3103#37", "CR93E-3103") for line in lines if not line.startswith("#")]
    if group is not None:
        rows = [row for row in rows if row.split()[1] == group]
    path = tmp_path / ("qrels.rel_level" if group == "0" else "qrels.123")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["9.0.8", "10.0"])
def test_qrels_prefs(capsys, version):
    # ./trec_eval -m all_prefs -q -R qrels_prefs test/qrels.test test/results.test
    out = printed(
        capsys, ["--trec-eval-version", version, "-m", "all_prefs", "-q", "-R", "qrels_prefs", *inputs()]
    )
    want = expected("out.test.qrels_prefs")
    assert len(want) == 57
    assert [line for line in want if line not in out] == []
    # the file predates measures.c's runid in all_prefs; deteval prints it as today's trec_eval does
    assert [line for line in out if line not in want] == ["runid                 \tall\tSTANDARD"]


def test_default_measures_9_0_8(capsys):
    # ./trec_eval test/qrels.test test/results.test | diff - test/out.test
    assert printed(capsys, inputs()) == expected("out.test")


def test_all_trec_10_0(capsys):
    # ./trec_eval -m all_trec test/qrels.test test/results.test | diff - test/out.test.a (a 10.0-era file)
    out = printed(capsys, ["--trec-eval-version", "10.0", "-m", "all_trec", *inputs()])
    want = expected("out.test.a")
    assert len(want) == 99 and [line.split("\t")[0] for line in out] == [line.split("\t")[0] for line in want]
    # Every line but the recall-level ones is identical. Those four were printed by a trec_eval that maps a
    # level p to (long)(float(p) * R + 0.9), p held in a float (R = 77, p = 0.3: 24 relevant documents);
    # 10.0's m_iprec_at_recall.c uses lround(p * R) in doubles (23) and 9.0.8's (long)(p * R + 0.9) in
    # doubles (23). deteval follows the source; docs/trec.md records the difference.
    differ = {
        "iprec_at_recall_0.10  \tall\t0.3884": "iprec_at_recall_0.10  \tall\t0.3885",
        "iprec_at_recall_0.30  \tall\t0.2732": "iprec_at_recall_0.30  \tall\t0.2852",
        "iprec_at_recall_0.60  \tall\t0.0822": "iprec_at_recall_0.60  \tall\t0.0858",
        "11pt_avg              \tall\t0.1947": "11pt_avg              \tall\t0.1962",
    }
    assert [(w, o) for w, o in zip(want, out) if w != o] == list(differ.items())


@pytest.mark.parametrize("version", ["9.0.8", "10.0"])
def test_all_trec_float32_levels(capsys, version):
    # --recall-levels float32 (level held in a C float, (long)(levelf * R + 0.9)) reproduces every line of
    # out.test.a, the four recall-level lines included; under 9.0.8 the file without 10.0's measures
    out = printed(
        capsys, ["--trec-eval-version", version, "--recall-levels", "float32", "-m", "all_trec", *inputs()]
    )
    want = expected("out.test.a")
    if version == "9.0.8":
        want = [line for line in want if not line.startswith(("rbp", "unj"))]
    assert out == want


def test_all_trec_9_0_8(capsys):
    # the same file under 9.0.8's rules: 10.0's measures (rbp, rbp_resid, unj) are not in 9.0.8's all_trec
    # and the recall-level lines follow 9.0.8's double rule (out.test at c0b2cc7 shows 0.2852 at 0.30 too)
    out = printed(capsys, ["-m", "all_trec", *inputs()])
    want = [line for line in expected("out.test.a") if not line.startswith(("rbp", "unj"))]
    assert [(w, o) for w, o in zip(want, out) if w != o] == [
        ("iprec_at_recall_0.30  \tall\t0.2732", "iprec_at_recall_0.30  \tall\t0.2852"),
        ("11pt_avg              \tall\t0.1947", "11pt_avg              \tall\t0.1958"),
    ]
    assert len(out) == len(want)


MEAS_PARAMS = [
    "-q",
    "-miprec_at_recall..10,.20,.25,.75,.50",
    "-m",
    "P.5,7,3",
    "-m",
    "recall.20,2000",
    "-m",
    "Rprec_mult.5.0,0.2,0.35",
    "-mutility.2,-1,0,0",
    "-m",
    "11pt_avg..25,.5,.75",
    "-mndcg.1=3,2=9,4=4.5",
    "-mndcg_cut.10,20,23.4",
    "-msuccess.2,5,20",
]


def test_measure_parameters_9_0_8(capsys):
    # the quicktest's measure-parameter command, diffed whole against test/out.test.meas_params
    assert printed(capsys, [*MEAS_PARAMS, *inputs()]) == expected("out.test.meas_params")


def test_measure_parameters_10_0_differ_only_in_recall_levels(capsys):
    # 10.0's lround(p * R) moves some recall levels (R = 474, p = .10: 47 relevant documents instead of 48);
    # every other line is the file's
    out = printed(capsys, ["--trec-eval-version", "10.0", *MEAS_PARAMS, *inputs()])
    want = expected("out.test.meas_params")
    assert len(out) == len(want) == 88
    changed = [(w, o) for w, o in zip(want, out) if w != o]
    assert [w.split("\t")[:2] for w, _ in changed] == [
        ["iprec_at_recall_0.10  ", "301"],
        ["iprec_at_recall_0.25  ", "302"],
        ["11pt_avg_.25,.5,.75   ", "302"],
        ["iprec_at_recall_0.10  ", "all"],
        ["iprec_at_recall_0.25  ", "all"],
        ["11pt_avg_.25,.5,.75   ", "all"],
    ]
    # with the float levels of trec_eval's test binaries, 10.0 prints the whole file
    assert (
        printed(
            capsys, ["--trec-eval-version", "10.0", "--recall-levels", "float32", *MEAS_PARAMS, *inputs()]
        )
        == want
    )


def test_comment_files_10_0(tmp_path, capsys):
    # 10.0's quicktest also runs qrels.comment.test / results.comment.test (the same files with '#'
    # comment lines, one inside a docno, which is data) and diffs against out.test: rebuilt here with the
    # comment lines where the stored files have them
    qrels = (DATA / "qrels.test").read_text().splitlines(keepends=True)
    run = (DATA / "results.test").read_text().splitlines(keepends=True)
    assert qrels[4].split()[2] == "CR93E-18#60"
    q = tmp_path / "qrels.comment.test"
    q.write_text(
        "# This is a test comment\n"
        + "".join(qrels[:2])
        + "# And another one\n"
        + "".join(qrels[2:4])
        + "# Next is a comment in a docno\n"
        + "".join(qrels[4:])
    )
    r = tmp_path / "results.comment.test"
    r.write_text(
        "# This is my favorite run\n# It starts with comments for documntation yay.\n"
        + "".join(run[:5])
        + "# And has another comment here.\n"
        + "".join(run[5:])
    )
    with_comments = printed(capsys, ["--trec-eval-version", "10.0", str(q), str(r)])
    assert with_comments == printed(capsys, ["--trec-eval-version", "10.0", *inputs()])
    # against out.test (9.0.x's file) only 10.0's lround recall levels differ
    changed = [w.split("\t")[0].strip() for w, o in zip(expected("out.test"), with_comments) if w != o]
    assert changed == ["iprec_at_recall_0.10", "iprec_at_recall_0.60"]
    # 9.0.8 has no comment lines: the same files are refused
    assert main(["trec", str(q), str(r)]) == 2


def without_10_0_measures(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith(("rbp", "unj"))]


def missing_topic_lines(out: list[str]) -> list[str]:
    return [line for line in out if line.split("\t")[1:2] == ["302"]]


@pytest.mark.parametrize(("name", "flags"), [("out.test.aqc", []), ("out.test.aqcM", ["-M100"])])
def test_complete_9_0_8(capsys, name, flags):
    # ./trec_eval -m all_trec -q -c [-M100] test/qrels.test test/results.trunc | diff - test/out.test.aqc[M]
    # The 9.0.x-era files (commit 54a70fb) are the stored 10.0-era ones without rbp/unj lines (same length:
    # 9358 and 9355 characters); results.trunc is rebuilt from results.test (see the data README).
    out = printed(
        capsys, ["-m", "all_trec", "-q", "-c", *flags, str(DATA / "qrels.test"), str(DATA / "results.trunc")]
    )
    assert out == without_10_0_measures(expected(name))


@pytest.mark.parametrize(("name", "flags"), [("out.test.aqc", []), ("out.test.aqcM", ["-M100"])])
def test_complete_10_0_float32(capsys, name, flags):
    # The 10.0-era files (commits 2a246ab, 284b694) were printed by a binary with rbp and unj, float recall
    # levels (301, level 0.10: 48 relevant documents, where 10.0's lround gives 47) and without the per-topic
    # lines of topic 302, missing from the run, which 10.0 prints under -c. Every line of the file is
    # printed, in order, with --recall-levels float32; deteval adds 302's lines.
    args = ["--trec-eval-version", "10.0", "--recall-levels", "float32", "-m", "all_trec", "-q", "-c", *flags]
    out = printed(capsys, [*args, str(DATA / "qrels.test"), str(DATA / "results.trunc")])
    extra = missing_topic_lines(out)
    assert len(extra) == 96 and extra[0] == "num_ret               \t302\t0"
    assert [line for line in out if line not in extra] == expected(name)
    # without the option only topic 301's level-0.10 line moves (in out.test.aqc; 0 at -M100)
    plain = printed(capsys, [*args[:2], *args[4:], str(DATA / "qrels.test"), str(DATA / "results.trunc")])
    changed = [(w, o) for w, o in zip(expected(name), [x for x in plain if x not in extra]) if w != o]
    assert [w.split("\t")[:2] for w, _ in changed] == [["iprec_at_recall_0.10  ", "301"]] * (
        name == "out.test.aqc"
    )


def test_float32_recall_levels_rule():
    # p = 0.3, R = 77: 0.3f * 77 = 23.1000004 in float, + 0.9 -> 24; in doubles 0.3 * 77 = 23.099999999999998
    # -> 23 ((long)(x + 0.9), 9.0.8) and lround -> 23 (10.0). p = 0.1, R = 474: 48 (float, 9.0.8), 47 (10.0).
    r = np.array([77, 474])
    assert recall_cutoff(0.3, r, "9.0.8", "float32").tolist() == [24, 143]
    assert recall_cutoff(0.3, r, "10.0", "float32").tolist() == [24, 143]
    assert recall_cutoff(0.3, r, "9.0.8").tolist() == [23, 143]
    assert recall_cutoff(0.1, r, "10.0").tolist() == [8, 47]
    assert recall_cutoff(0.1, r, "10.0", "float32").tolist() == [8, 48]
    # through the API: R = 77 relevant, relevant at ranks 1..23 and 30: level 0.3 needs the 24th
    qrels = {"q": {f"d{i}": 1 for i in range(77)}}
    run = {
        "q": {f"d{i}": 100.0 - i for i in range(23)} | {f"x{i}": 50.0 - i for i in range(6)} | {"d23": 1.0}
    }
    kw = {"measures": ["iprec_at_recall..30"]}
    assert evaluate_trec(qrels, run, **kw).summary["iprec_at_recall_0.30"] == 1.0
    assert evaluate_trec(qrels, run, recall_levels="float32", **kw).summary["iprec_at_recall_0.30"] == 24 / 30
    with pytest.raises(ConfigError, match="recall_levels"):
        evaluate_trec(qrels, run, recall_levels="float", **kw)


def aql(tmp_path: Path) -> list[str]:
    # ./trec_eval -m all_trec -mrelstring.20 -q -l2 test/qrels.rel_level test/results.test
    return [
        "-m",
        "all_trec",
        "-mrelstring.20",
        "-q",
        "-l2",
        qrels_123(tmp_path, "0"),
        str(DATA / "results.test"),
    ]


# trec_eval's 9.0.x-era out.test.aql (commit 54a70fb) printed these four lines with double recall levels; the
# 10.0-era file (07010b1) with float levels. The rest of the two files is the same (but rbp/unj).
AQL_9 = {
    "iprec_at_recall_0.30  \t302\t0.7059": "iprec_at_recall_0.30  \t302\t0.7419",
    "11pt_avg              \t302\t0.4327": "11pt_avg              \t302\t0.4360",
    "iprec_at_recall_0.30  \tall\t0.2732": "iprec_at_recall_0.30  \tall\t0.2852",
    "11pt_avg              \tall\t0.1793": "11pt_avg              \tall\t0.1804",
}


def test_rebuilt_qrels_sizes(tmp_path):
    # the rebuilt files have the sizes of trec_eval's own test/qrels.123 and test/qrels.rel_level
    assert (DATA / "qrels.comments.123").stat().st_size == 212215
    assert Path(qrels_123(tmp_path)).stat().st_size == 212159
    assert Path(qrels_123(tmp_path, "0")).stat().st_size == 75346


def test_relevance_level_9_0_8(capsys, tmp_path):
    # ./trec_eval -m all_trec -mrelstring.20 -q -l2 test/qrels.rel_level test/results.test | diff - test/out.test.aql
    args = aql(tmp_path)
    nine = [AQL_9.get(line, line) for line in without_10_0_measures(expected("out.test.aql"))]
    assert printed(capsys, args) == nine
    assert printed(capsys, ["--recall-levels", "float32", *args]) == without_10_0_measures(
        expected("out.test.aql")
    )


def test_relevance_level_10_0(capsys, tmp_path):
    args = aql(tmp_path)
    out = printed(capsys, ["--trec-eval-version", "10.0", "--recall-levels", "float32", *args])
    assert out == expected("out.test.aql")
    assert out[27] == "relstring_20          \t301\t'0000011000000--10101'"
    # 10.0's own lround levels move 12 lines of the float-level file
    plain = printed(capsys, ["--trec-eval-version", "10.0", *args])
    assert len([w for w, o in zip(expected("out.test.aql"), plain) if w != o]) == 12


@pytest.mark.parametrize("version", ["9.0.8", "10.0"])
def test_judgment_groups(capsys, tmp_path, version):
    # ./trec_eval -m qrels_jg -q -R qrels_jg test/qrels.123 test/results.test | diff - test/out.test.qrels_jg
    args = ["--trec-eval-version", version, "-m", "qrels_jg", "-q", "-R", "qrels_jg"]
    want = expected("out.test.qrels_jg")
    assert len(want) == 82
    assert printed(capsys, [*args, qrels_123(tmp_path), str(DATA / "results.test")]) == want
    if version == "10.0":
        # 10.0 reads the stored file with its comment lines (and the docno with a '#') the same way
        assert printed(capsys, [*args, str(DATA / "qrels.comments.123"), str(DATA / "results.test")]) == want


@pytest.mark.parametrize("version", ["9.0.8", "10.0"])
def test_zscores(capsys, version):
    # ./trec_eval -q -m all_trec -Z test/zscores_file test/qrels.test test/results.test | diff - test/out.test.aqZ
    # (the 10.0-era pair, commit e49ee97: the zscores file and the output were regenerated together; the
    # output's recall levels are float levels). Every measure is printed as Z<name> with %6.4f values.
    args = ["--trec-eval-version", version, "--recall-levels", "float32", "-q", "-m", "all_trec"]
    out = printed(capsys, [*args, "-Z", str(DATA / "zscores_file"), *inputs()])
    want = expected("out.test.aqZ")
    assert len(want) == 387
    assert out == (
        want if version == "10.0" else [line for line in want if not line.startswith(("Zrbp", "Zunj"))]
    )
    assert "Znum_ret               \tall\t-6.3332" in out and "Znum_q                 \tall\t3.0000" in out


def test_per_topic_all_trec_9_0_8(capsys):
    # ./trec_eval -m all_trec -q test/qrels.test test/results.test | diff - test/out.test.aq (9.0.x-era file,
    # commit 54a70fb, double recall levels): the whole file
    assert printed(capsys, ["-m", "all_trec", "-q", *inputs()]) == expected("out.test.aq")


def prefs_inputs(tmp_path: Path) -> tuple[str, str]:
    """test/prefs.test (test/prefs.comment.test without its comment lines, ``CR93E-10505#37`` written
    ``CR93E-10505``) and a prefs.results.test rebuilt as test.scr1 builds it, one standard ranking copied to
    every query: here results.test's topic-301 ranking (prefs.rank20 is not stored; see the data README)."""
    lines = (DATA / "prefs.comment.test").read_text().splitlines()
    rows = [line.replace("CR93E-10505#37", "CR93E-10505") for line in lines if not line.startswith("#")]
    prefs = tmp_path / "prefs.test"
    prefs.write_text("\n".join(rows) + "\n")
    qids = dict.fromkeys(row.split()[0] for row in rows)
    ranking = [
        line.split()[1:]
        for line in (DATA / "results.test").read_text().splitlines()
        if line.startswith("301 ")
    ]
    run = tmp_path / "prefs.results.test"
    run.write_text("".join(" ".join([q, *fields]) + "\n" for q in qids for fields in ranking))
    return str(prefs), str(run)


@pytest.mark.parametrize("version", ["9.0.8", "10.0"])
def test_preferences(capsys, tmp_path, version):
    # ./trec_eval -m all_prefs -q -R prefs test/prefs.test test/prefs.results.test | diff - test/out.test.prefs
    prefs, run = prefs_inputs(tmp_path)
    args = ["--trec-eval-version", version, "-m", "all_prefs", "-q", "-R", "prefs"]
    want = expected("out.test.prefs")
    assert len(want) == 352
    assert printed(capsys, [*args, prefs, run]) == want
    if version == "10.0":
        # 10.0 reads the stored file with its comment lines the same way; 9.0.8 refuses them
        assert printed(capsys, [*args, str(DATA / "prefs.comment.test"), run]) == want
    else:
        assert main(["trec", *args, str(DATA / "prefs.comment.test"), run]) == 2
