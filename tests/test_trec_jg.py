"""-R qrels_jg: measures averaged over judgment groups (m_map_avgjg.c, m_P_avgjg.c, m_Rprec_mult_avgjg.c).

Each (topic, group) is one set of judgements; a topic's value is the mean over its groups of the plain
measure against that group's judgements, so the plain evaluation of each group is the reference."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.cli import main
from deteval.errors import ConfigError
from deteval.io.trec import load_qrels, load_run
from deteval.retrieval import evaluate_trec

pytrec_eval = pytest.importorskip("pytrec_eval")


def jg_case(seed: int):
    rng = np.random.default_rng(seed)
    groups: dict[str, dict[str, dict[str, int]]] = {}  # group -> qrels
    run: dict[str, dict[str, float]] = {}
    for t in range(6):
        docs = [f"d{i}" for i in rng.choice(60, 30, replace=False)]
        run[f"q{t}"] = {d: float(s) for d, s in zip(docs, np.round(rng.random(30), 2))}
        for g in ("alice", "bob", "carol")[: 1 + t % 3]:  # 1, 2 or 3 groups per topic
            judged = rng.choice(60, 20, replace=False)
            groups.setdefault(g, {})[f"q{t}"] = {f"d{i}": int(rng.integers(0, 3)) for i in judged}
    return groups, run


def write(tmp_path, groups, run):
    q, r = tmp_path / "qrels_jg", tmp_path / "run"
    q.write_text(
        "".join(
            f"{t} {g} {d} {v}\n"
            for g, qr in groups.items()
            for t, docs in qr.items()
            for d, v in docs.items()
        )
    )
    r.write_text("".join(f"{t} Q0 {d} 1 {s!r} tag\n" for t, docs in run.items() for d, s in docs.items()))
    return q, r


@pytest.mark.parametrize("seed", range(4))
def test_jg_measures_are_the_mean_over_groups(tmp_path, seed: int) -> None:
    groups, run = jg_case(seed)
    q, r = write(tmp_path, groups, run)
    res = evaluate_trec(
        load_qrels(q, judgment_groups=True),
        load_run(r),
        ["map_avgjg", "P_avgjg.5,10", "Rprec_mult_avgjg.0.5,1.0,2.0"],
        per_query=True,
    )
    for t in run:
        per_group = [
            pytrec_eval.RelevanceEvaluator({t: qr[t]}, {"map", "P_5", "P_10", "Rprec_mult"}).evaluate(
                {t: run[t]}
            )[t]
            for qr in groups.values()
            if t in qr
        ]

        def mean(name: str, rows: list = per_group) -> float:
            total = 0.0
            for row in rows:
                total += row[name]
            return total / len(rows) if len(rows) > 1 else total

        got = res.per_class[t]
        assert got["map_avgjg"] == pytest.approx(mean("map"), abs=1e-12)
        assert got["P_avgjg_5"] == pytest.approx(mean("P_5"), abs=1e-12)
        assert got["Rprec_mult_avgjg_1.00"] == pytest.approx(mean("Rprec_mult_1.00"), abs=1e-12)
        assert got["Rprec_mult_avgjg_2.00"] == pytest.approx(mean("Rprec_mult_2.00"), abs=1e-12)
    assert res.summary["map_avgjg"] == pytest.approx(np.mean([res.per_class[t]["map_avgjg"] for t in run]))


def test_cli_qrels_jg(tmp_path, capsys) -> None:
    q, r = write(
        tmp_path, {"u1": {"t": {"a": 1, "b": 0}}, "u2": {"t": {"a": 0, "b": 1}}}, {"t": {"a": 2.0, "b": 1.0}}
    )
    assert main(["trec", str(q), str(r), "-R", "qrels_jg"]) == 0
    out = capsys.readouterr().out.splitlines()
    # u1: a relevant at rank 1 -> AP 1; u2: b relevant at rank 2 -> AP 0.5; mean 0.75
    assert out[:3] == [
        "runid                 \tall\ttag",
        "num_q                 \tall\t1",
        "map_avgjg             \tall\t0.7500",
    ]
    assert "P_avgjg_5             \tall\t0.2000" in out
    assert main(["trec", str(q), str(r), "-R", "qrels_jg", "-m", "map"]) == 2
    assert "cannot be computed from qrels with judgment groups" in capsys.readouterr().err


def test_jg_measures_need_groups() -> None:
    with pytest.raises(ConfigError, match="judgment groups"):
        evaluate_trec({"t": {"a": 1}}, {"t": {"a": 1.0}}, ["map_avgjg"])


def test_qrels_jg_default_set_names_as_trec_eval(tmp_path) -> None:
    # the all lines of trec_eval's test/out.test.qrels_jg: names and order of -m qrels_jg
    groups, run = jg_case(1)
    q, r = write(tmp_path, groups, run)
    res = evaluate_trec(load_qrels(q, judgment_groups=True), load_run(r))
    cuts = ["5", "10", "15", "20", "30", "100", "200", "500", "1000"]
    mults = ["0.20", "0.40", "0.60", "0.80", "1.00", "1.20", "1.40", "1.60", "1.80", "2.00"]
    expected = ["runid", "num_q", "map_avgjg"] + [f"P_avgjg_{k}" for k in cuts]
    expected += [f"Rprec_mult_avgjg_{x}" for x in mults]
    assert [ln.split()[0] for ln in res.lines] == expected
