"""-R prefs / -R qrels_prefs: trec_eval's preference measures (form_prefs_counts.c, m_prefs_*.c).

pytrec_eval has none of them (``pytrec_eval.supported_measures``), and trec_eval's own prefs.test is not
available, so every value below is derived by hand from the C definitions (the derivation is in each
case's comment), plus properties that must hold whatever the input."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.cli import main
from deteval.errors import ConfigError, DetevalError, InputFormatError, ValidationError
from deteval.io.prefs import load_prefs
from deteval.io.trec import load_run
from deteval.retrieval.prefs import PREFS_MEASURES, evaluate_prefs


def run_file(tmp_path, rows: list[tuple[str, str, float]], name: str = "run"):
    p = tmp_path / name
    p.write_text("".join(f"{t} Q0 {d} {i} {s!r} tag\n" for i, (t, d, s) in enumerate(rows)))
    return p


def prefs_file(tmp_path, lines: list[str], name: str = "prefs"):
    p = tmp_path / name
    p.write_text("".join(line + "\n" for line in lines))
    return p


def values(tmp_path, prefs_lines, run_rows, qrels_format=False, **kw):
    prefs = load_prefs(prefs_file(tmp_path, prefs_lines), qrels_format=qrels_format)
    res = evaluate_prefs(prefs, load_run(run_file(tmp_path, run_rows)), **kw)
    return res.summary


def test_equivalence_classes_retrieved_implied_and_missing(tmp_path):
    # ranking d3 d1 d5(unjudged): ids d3=0 d1=1 (NJR=2), unretrieved d2=2 d4=3 (docno order)
    # classes 3:{1} 2:{2} 0:{0,3}; prefs 1>2 ful_imp, 1>0 poss_ret, 1>3 ful_imp, 2>0 poss_imp, 2>3 notoccur
    s = values(
        tmp_path,
        ["q1 g s d1 3", "q1 g s d2 2", "q1 g s d3 0", "q1 g s d4 0"],
        [("q1", "d3", 0.9), ("q1", "d1", 0.8), ("q1", "d5", 0.7)],
    )
    assert s["num_q"] == 1
    assert (s["prefs_num_prefs_poss"], s["prefs_num_prefs_ful"], s["prefs_num_prefs_ful_ret"]) == (5, 2, 0)
    assert s["prefs_simp"] == 2 / 5 and s["prefs_simp_ret"] == 0.0 and s["prefs_simp_imp"] == 2 / 4
    # pairs: (0,1) 0; (0,2) 0, (1,2) 1, (1,3) 1; (2,3) counted only
    assert s["prefs_pair"] == 2 / 5 and s["prefs_pair_ret"] == 0.0 and s["prefs_pair_imp"] == 2 / 4
    assert s["prefs_avgjg"] == 2 / 5 and s["prefs_avgjg_ret"] == 0.0 and s["prefs_avgjg_imp"] == 2 / 4
    # R = N = 2: unchanged counts; retrieved: R = N = 1, ful_ret 0 / poss_ret 1
    assert s["prefs_avgjg_Rnonrel"] == 2 / 5 and s["prefs_avgjg_Rnonrel_ret"] == 0.0


def test_rnonrel_recalculation_keeps_trec_evals_loops(tmp_path):
    # ranking d1 d2 d3: ids d1=0 d2=1 d3=2 (NJR=3), d4=3; classes 1:{0} 0:{1,2,3}
    # R=1 < N=3: the new non-relevant class is {1}; class {0} vs it: 0<1 fulfilled; the last class is
    # compared with it too (trec_eval's loop runs over every class): (1,1) (2,1) (3,1) possible -> 1/4
    # retrieved: R=1 < N=2: classes cut to retrieved {0} {1,2}, new {1}: 1 fulfilled, (1,1) (2,1) -> 1/3
    s = values(
        tmp_path,
        ["q2 g s d1 1", "q2 g s d2 0", "q2 g s d3 0", "q2 g s d4 0"],
        [("q2", "d1", 0.95), ("q2", "d2", 0.9), ("q2", "d3", 0.7)],
    )
    assert s["prefs_simp"] == 1.0 and s["prefs_avgjg"] == 1.0
    assert s["prefs_avgjg_Rnonrel"] == 1 / 4
    assert s["prefs_avgjg_Rnonrel_ret"] == 1 / 3


def test_sub_groups_are_transitive(tmp_path):
    # get_prefs.c's example: s1 d1>d2>d3, s2 d2>d4: 1>2 1>3 2>3 2>4 and the transitive 1>4
    # ranking d4 d1 d3: ids d4=0 d1=1 d3=2 (NJR=3), d2=3
    # (1,3) ful_imp, (1,2) ful_ret, (3,2) poss_imp, (3,0) poss_imp, (1,0) poss_ret
    s = values(
        tmp_path,
        ["q3 u s1 d1 3", "q3 u s1 d2 2", "q3 u s1 d3 1", "q3 u s2 d2 5", "q3 u s2 d4 4"],
        [("q3", "d4", 0.9), ("q3", "d1", 0.8), ("q3", "d3", 0.7)],
    )
    assert (s["prefs_num_prefs_poss"], s["prefs_num_prefs_ful"], s["prefs_num_prefs_ful_ret"]) == (5, 2, 1)
    assert s["prefs_simp"] == 0.4 and s["prefs_simp_ret"] == 0.5 and s["prefs_simp_imp"] == 0.4
    assert s["prefs_pair"] == 0.4 and s["prefs_pair_ret"] == 0.5 and s["prefs_pair_imp"] == 0.4
    # every level > 0: R = 4, N = 0: ful 2 + 3*4, poss 5 + 4*4; retrieved: ful 1 + 3*3, poss 2 + 4*3
    assert s["prefs_avgjg_Rnonrel"] == 14 / 21
    assert s["prefs_avgjg_Rnonrel_ret"] == 10 / 14


def test_conflicting_groups_qrels_prefs(tmp_path):
    # qrels read as prefs: iter = judgment group. A: d1>d2; B: d2>d1>d3. ranking d1 d2 d3 = ids 0 1 2
    # A: (0,1) ful_ret. B: (1,0) poss, (1,2) ful, (0,2) ful. simp 3/4; avgjg (1 + 2/3)/2
    # pairs: (0,1) 1 of 2 = 0.5, (0,2) 1, (1,2) 1 -> 2.5/3
    # Rnonrel: A R=2 N=0 -> (1+4)/(1+4) = 1; B R=2 N=1 -> (2+2)/(3+2) = 0.8; mean 0.9
    s = values(
        tmp_path,
        ["q4 A d1 2", "q4 A d2 1", "q4 B d1 1", "q4 B d2 2", "q4 B d3 0"],
        [("q4", "d1", 0.9), ("q4", "d2", 0.8), ("q4", "d3", 0.7)],
        qrels_format=True,
    )
    assert s["prefs_simp"] == 3 / 4
    assert s["prefs_avgjg"] == (1 + 2 / 3) / 2
    assert s["prefs_pair"] == 2.5 / 3
    assert s["prefs_avgjg_Rnonrel"] == (1.0 + 0.8) / 2


def test_ties_break_by_docno_ascending_and_scores_follow_the_version(tmp_path):
    # form_prefs_counts.c sorts by score, then docno ascending (unlike form_res_rels.c's descending)
    lines = ["q b s da 1", "q b s db 2"]  # db > da
    tie = values(tmp_path, lines, [("q", "db", 0.5), ("q", "da", 0.5)])
    assert tie["prefs_simp_ret"] == 0.0  # da ranked first: preference not fulfilled
    # 0.1 and 0.1 + 1e-12 are one float32 (9.0.8 ties them) but two doubles (10.0 ranks db first)
    close = [("q", "db", 0.1 + 1e-12), ("q", "da", 0.1)]
    assert values(tmp_path, lines, close)["prefs_simp_ret"] == 0.0
    assert values(tmp_path, lines, close, version="10.0")["prefs_simp_ret"] == 1.0


def test_complete_max_docs_and_averages(tmp_path):
    lines = ["q1 g s d1 1", "q1 g s d2 0", "q2 g s d1 1", "q2 g s d2 0"]
    rows = [("q1", "d2", 0.9), ("q1", "d1", 0.8)]
    s = values(tmp_path, lines, rows)
    assert s["num_q"] == 1 and s["prefs_simp"] == 0.0 and s["prefs_num_prefs_poss"] == 1
    # -c: q2 is an empty ranking in 10.0: its preference does not occur (possible, not fulfilled); 9.0.8
    # never evaluates q2, so its preference is not counted as possible (both binaries print so)
    for version, possible in (("9.0.8", 1), ("10.0", 2)):
        s = values(tmp_path, lines, rows, complete=True, version=version)
        assert s["num_q"] == 2 and s["prefs_num_prefs_poss"] == possible and s["prefs_num_prefs_ful"] == 0
    # -M 1: only d2 retrieved: d1 > d2 is possible implied, not fulfilled
    s = values(tmp_path, lines, [("q1", "d1", 0.5), ("q1", "d2", 0.9)], max_docs=1)
    assert s["prefs_simp_imp"] == 0.0 and s["prefs_num_prefs_ful"] == 0
    s = values(tmp_path, lines, [("q1", "d1", 0.9), ("q1", "d2", 0.5), ("q2", "d2", 0.9)])
    assert s["prefs_simp"] == (1.0 + 0.0) / 2 and s["prefs_num_prefs_ful_ret"] == 1


def _random_prefs(rng, n_docs: int, n_levels: int) -> list[tuple[str, int]]:
    docs = rng.choice(n_docs, rng.integers(2, n_docs), replace=False)
    return [(f"d{d}", int(rng.integers(0, n_levels))) for d in docs]


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(25))
def test_one_sub_group_gives_the_same_counts_as_a_matrix(tmp_path, seed):
    # a sub-group written twice makes the group a preference matrix (two sub-groups) with exactly the
    # same preferences: every count-based measure must agree between the two representations
    rng = np.random.default_rng(seed)
    lines, rows = [], []
    for t in range(4):
        for g in range(1 + t % 3):
            lines += [f"q{t} g{g} s {d} {v}" for d, v in _random_prefs(rng, 12, 4)]
        docs = rng.choice(16, 8, replace=False)
        rows += [(f"q{t}", f"d{d}", float(s)) for d, s in zip(docs, np.round(rng.random(8), 1))]
    twice = lines + [line.replace(" s ", " t ") for line in lines]
    a = values(tmp_path, lines, rows, complete=True)
    b = values(tmp_path, twice, rows, complete=True)
    for name in PREFS_MEASURES:
        if "Rnonrel" not in name:  # recalculate differs by representation in trec_eval itself
            assert a[name] == b[name], name
    for name in ("prefs_simp", "prefs_simp_ret", "prefs_simp_imp"):
        assert 0.0 <= a[name] <= 1.0


def test_errors(tmp_path):
    run = run_file(tmp_path, [("q", "d1", 1.0)])
    with pytest.raises(InputFormatError, match="line 2"):
        load_prefs(prefs_file(tmp_path, ["q g s d1 1", "q g d1 1"]))
    with pytest.raises(InputFormatError, match="finite"):
        load_prefs(prefs_file(tmp_path, ["q g s d1 high"]))
    with pytest.raises(ValidationError, match="cycle"):
        evaluate_prefs(
            load_prefs(prefs_file(tmp_path, ["q g s d1 2", "q g s d2 1", "q g t d2 2", "q g t d1 1"])),
            load_run(run),
        )
    with pytest.raises(ValidationError, match="two rel_levels"):
        evaluate_prefs(load_prefs(prefs_file(tmp_path, ["q g s d1 2", "q g s d1 1"])), load_run(run))
    with pytest.raises(ValidationError, match="both 0 and non-0"):
        evaluate_prefs(
            load_prefs(prefs_file(tmp_path, ["q g s d1 0", "q g s d2 1", "q g t d1 2"])), load_run(run)
        )
    with pytest.raises(ConfigError, match="cannot be computed from preferences"):
        evaluate_prefs(load_prefs(prefs_file(tmp_path, ["q g s d1 2"])), load_run(run), ["map"])


def test_cli(tmp_path, capsys):
    p = prefs_file(tmp_path, ["q1 g s d1 3", "q1 g s d2 2", "q1 g s d3 0", "q1 g s d4 0"])
    r = run_file(tmp_path, [("q1", "d3", 0.9), ("q1", "d1", 0.8), ("q1", "d5", 0.7)])
    assert main(["trec", "-q", "-R", "prefs", str(p), str(r)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "prefs_num_prefs_poss  \tq1\t5"
    assert "prefs_simp            \tall\t0.4000" in out
    assert out[-16:-14] == ["runid                 \tall\ttag", "num_q                 \tall\t1"]
    assert [line.split("\t")[0].strip() for line in out[-14:]] == list(PREFS_MEASURES)
    # measures.c's "prefs" nickname: runid, num_q and the first six
    assert main(["trec", "-R", "prefs", "-m", "prefs", str(p), str(r)]) == 0
    names = [line.split("\t")[0].strip() for line in capsys.readouterr().out.splitlines()]
    assert names == ["runid", "num_q", *PREFS_MEASURES[:6]]
    q = prefs_file(tmp_path, ["q1 g d1 1", "q1 g d3 0"], name="qp")
    assert main(["trec", "-R", "qrels_prefs", "-m", "prefs_simp", str(q), str(r)]) == 0
    assert capsys.readouterr().out == "prefs_simp            \tall\t0.0000\n"
    assert main(["trec", "-R", "prefs", "-m", "map", str(p), str(r)]) == 2
    with pytest.raises(DetevalError):
        evaluate_prefs(load_prefs(p), load_run(r), max_docs=0)


def test_zscores_printed_as_trec_eval_prints_them(tmp_path, capsys):
    """-Z with preferences: every per-topic value becomes (value - mean) / stddev (convert_zscores.c) and is
    printed as ``Z<name>`` with ``%6.4f``, the summed counts included; a summed measure's ``all`` value is the
    sum of its z-scores as a double (as trec_eval's test/out.test.aqZ prints num_ret), the others their mean.
    (Before, the z-scores of the counts were truncated to integers and no line had the Z.)"""
    p = prefs_file(
        tmp_path, ["q1 g s d1 3", "q1 g s d2 2", "q1 g s d3 0", "q1 g s d4 0", "q2 g s d1 1", "q2 g s d2 0"]
    )
    r = run_file(tmp_path, [("q1", "d3", 0.9), ("q1", "d1", 0.8), ("q1", "d5", 0.7), ("q2", "d1", 0.5)])
    plain = evaluate_prefs(load_prefs(p), load_run(r), per_query=True).per_class
    z = tmp_path / "z"
    moments = {m: (0.3 + 0.1 * i, 0.7 + 0.05 * i) for i, m in enumerate(PREFS_MEASURES)}
    z.write_text("".join(f"{t} {m} {a!r} {b!r}\n" for t in ("q1", "q2") for m, (a, b) in moments.items()))
    assert main(["trec", "-q", "-R", "prefs", "-Z", str(z), str(p), str(r)]) == 0
    out = capsys.readouterr().out.splitlines()
    want = {t: {m: (plain[t][m] - a) / b for m, (a, b) in moments.items()} for t in ("q1", "q2")}
    for t in ("q1", "q2"):
        for m in PREFS_MEASURES:
            assert f"Z{m:<22s}\t{t}\t{want[t][m]:6.4f}" in out
    assert plain["q1"]["prefs_num_prefs_poss"] == 5  # (z = 6.7143: truncated, it printed 6)
    for m in PREFS_MEASURES:
        zs = [want[t][m] for t in ("q1", "q2")]
        total = zs[0] + zs[1] if m.startswith("prefs_num") else (zs[0] + zs[1]) / 2
        assert f"Z{m:<22s}\tall\t{total:6.4f}" in out
    assert "Znum_q                 \tall\t2.0000" in out
    assert "runid                 \tall\ttag" in out
