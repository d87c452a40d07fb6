"""Write what trec_eval 9.0.8 and 10.0 print on the cases that tests/test_trec_live_cases.py replays.

trec_eval is a C program and not a test dependency. This script runs two binaries built from the public
sources (https://github.com/usnistgov/trec_eval, tags ``v9.0.8`` and ``v10.0``; ``make`` in a checkout of
each tag, outside this repository) on small fixed cases and writes, for each case and version, the lines
printed on stdout, the first line of stderr and the exit status to ``tests/data/trec_eval/live_cases.json``,
together with the inputs and each binary's tag and commit. The tests read that file only.

Regenerate::

    python scripts/trec_eval_expected.py \\
        --binary 9.0.8=/path/to/v9.0.8/trec_eval --commit 9.0.8=d95ca64e14a47d763ae349fb65e6d8cde4141dbd \\
        --binary 10.0=/path/to/v10.0/trec_eval --commit 10.0=f4253652c8efd0d86ddffd0d163cc0a0f813111a

(``trec_eval -v`` of the v9.0.8 tag prints "9.0.7" and that of v10.0 "10.0-rc3": their Makefiles were not
bumped; the tag and commit say which source was built.) Inputs named ``@name`` are files of
tests/data/trec_eval (trec_eval's own test data; see its README).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))  # the tests' helper writes a case's files and arguments, the same for both
from _trec_files import DATA, case_arguments  # noqa: E402

OUT = DATA / "live_cases.json"
VERSIONS = ("9.0.8", "10.0")

_GRADED_QRELS = """\
1 0 a 1
1 0 b 2
1 0 c 0
2 0 d 2
2 0 e 1
2 0 f 1
3 0 g 2
3 0 h 0
"""
_GRADED_RUN = """\
1 Q0 a 1 0.9 r
1 Q0 c 2 0.8 r
1 Q0 b 3 0.7 r
2 Q0 e 1 0.9 r
2 Q0 x 2 0.8 r
2 Q0 d 3 0.5 r
"""
_GRADED_Z = "".join(
    f"{q} {m} {mean} {sd}\n"
    for q in (1, 2, 3)
    for m, mean, sd in (
        ("num_rel", 1.5, 0.5),
        ("num_ret", 2.0, 1.0),
        ("num_rel_ret", 1.0, 0.5),
        ("map", 0.4, 0.2),
        ("gm_map", -2.0, 1.5),
        ("P_5", 0.2, 0.1),
    )
)

#: name -> what it shows, its input files (text, or "@name" for a file of tests/data/trec_eval), the
#: trec_eval arguments before the two file names ({z} is the z-score file) and the versions that run it.
CASES: list[dict[str, Any]] = [
    {
        "name": "num_rel_c_l2",
        "shows": "-c -l2: the num_rel 'all' line counts the qrels rows with rel > 0 (m_num_rel.c)",
        "files": {"qrels": "1 0 a 1\n1 0 b 2\n", "run": "1 Q0 a 1 0.9 r\n1 Q0 b 2 0.8 r\n"},
        "args": ["-q", "-c", "-l2", "-m", "num_rel"],
        "versions": VERSIONS,
    },
    {
        "name": "num_rel_c_l2_graded",
        "shows": "-c -l2 with a qrels topic missing from the run: num_rel 'all' from the qrels, not a sum",
        "files": {"qrels": _GRADED_QRELS, "run": _GRADED_RUN},
        "args": ["-q", "-c", "-l2", "-m", "num_rel", "-m", "num_rel_ret", "-m", "map"],
        "versions": VERSIONS,
    },
    {
        "name": "num_rel_c_Z",
        "shows": "-c -Z: Znum_rel 'all' is the qrels count, not the sum of z-scores; 9.0.8 adds the topic "
        "missing from the run unconverted (0, log(1e-5) for gm_map), 10.0 converts it",
        "files": {"qrels": _GRADED_QRELS, "run": _GRADED_RUN, "z": _GRADED_Z},
        "args": ["-q", "-c", "-Z", "{z}", "-m", "num_rel", "-m", "num_ret", "-m", "map", "-m", "gm_map"],
        "versions": VERSIONS,
    },
    {
        "name": "num_rel_c_l2_Z",
        "shows": "-c -l2 -Z: the same with a relevance level of 2",
        "files": {"qrels": _GRADED_QRELS, "run": _GRADED_RUN, "z": _GRADED_Z},
        "args": ["-q", "-c", "-l2", "-Z", "{z}", "-m", "num_rel", "-m", "num_rel_ret", "-m", "P.5"],
        "versions": VERSIONS,
    },
    {
        "name": "zscore_c_missing_topic",
        "shows": "-c -Z, qrels topic 2 missing from the run: 9.0.8 adds it as 0 (no z-score), 10.0 z-scores "
        "it",
        "files": {
            "qrels": "1 0 a 1\n2 0 b 1\n",
            "run": "1 Q0 a 1 0.9 r\n",
            "z": "1 map 0.5 0.25\n2 map 0.5 0.25\n",
        },
        "args": ["-q", "-c", "-Z", "{z}", "-m", "map"],
        "versions": VERSIONS,
    },
    {
        "name": "zscore_c_missing_topic_no_entry",
        "shows": "9.0.8 -c -Z: the missing topic needs no z entry (10.0 crashes on this input: not run)",
        "files": {"qrels": "1 0 a 1\n2 0 b 1\n", "run": "1 Q0 a 1 0.9 r\n", "z": "1 map 0.5 0.25\n"},
        "args": ["-q", "-c", "-Z", "{z}", "-m", "map"],
        "versions": ("9.0.8",),
    },
    {
        "name": "judged_only_c_iprec",
        "shows": "-c -J: 10.0's empty ranking of a missing topic gives NaN at levels of 0 relevant documents",
        "files": {
            "qrels": "1 0 a 1\n2 0 b 1\n3 0 c 1\n3 0 d 1\n3 0 e 1\n3 0 f 0\n",
            "run": "1 Q0 a 1 0.9 r\n1 Q0 z 2 0.8 r\n",
        },
        "args": ["-q", "-c", "-J", "-m", "iprec_at_recall", "-m", "11pt_avg", "-m", "map", "-m", "P.5"],
        "versions": VERSIONS,
    },
    {
        "name": "complete_iprec_without_J",
        "shows": "-c without -J: the missing topics' levels are 0 in both versions",
        "files": {"qrels": "1 0 a 1\n2 0 b 1\n", "run": "1 Q0 a 1 0.9 r\n"},
        "args": ["-q", "-c", "-m", "iprec_at_recall.0,0.5", "-m", "11pt_avg"],
        "versions": VERSIONS,
    },
    {
        "name": "qrels_topic_missing_from_run",
        "shows": "without -c, 10.0 stops (status 4) when a qrels topic has no results; 9.0.8 evaluates topic 1",
        "files": {"qrels": "1 0 a 1\n2 0 b 1\n3 0 c 1\n", "run": "1 Q0 a 1 0.9 r\n3 Q0 c 1 0.9 r\n"},
        "args": ["-m", "map"],
        "versions": VERSIONS,
    },
    {
        "name": "qrels_prefs_topic_missing_from_run",
        "shows": "the same refusal with -R qrels_prefs (10.0); 9.0.8 evaluates topic 1",
        "files": {"qrels": "1 0 a 1\n1 0 b 0\n2 0 c 1\n2 0 d 0\n", "run": "1 Q0 a 1 0.9 r\n1 Q0 b 2 0.5 r\n"},
        "args": ["-R", "qrels_prefs", "-m", "prefs_simp"],
        "versions": VERSIONS,
    },
    {
        "name": "qrels_jg_topic_missing_from_run",
        "shows": "the same refusal with -R qrels_jg (10.0); 9.0.8 evaluates topic 1",
        "files": {"qrels": "1 0 a 1\n1 1 b 1\n2 0 c 1\n", "run": "1 Q0 a 1 0.9 r\n1 Q0 b 2 0.5 r\n"},
        "args": ["-R", "qrels_jg", "-m", "map_avgjg"],
        "versions": VERSIONS,
    },
    {
        "name": "run_topic_missing_from_qrels",
        "shows": "a run topic the qrels lack is left out by both versions",
        "files": {"qrels": "1 0 a 1\n", "run": "1 Q0 a 1 0.9 r\n2 Q0 b 1 0.9 r\n"},
        "args": ["-q", "-m", "map"],
        "versions": VERSIONS,
    },
    {
        "name": "gain_order_not_transitive",
        "shows": "gain maps with gains closer than 1: trec_eval's int-valued comparator is not transitive, so "
        "the levels' order (the empty levels 0..max listed too) is glibc's merge sort's, pairs in the given "
        "order",
        "files": {
            "qrels": "1 0 d0 0\n1 0 d1 3\n2 0 d0 3\n2 0 d1 1\n2 0 d2 3\n2 0 d3 1\n2 0 d4 0\n2 0 d5 3\n"
            "3 0 d0 0\n3 0 d1 2\n",
            "run": "1 Q0 d3 1 1.0 r\n1 Q0 d2 2 0.95 r\n1 Q0 d0 3 0.9 r\n1 Q0 d1 4 0.85 r\n2 Q0 d4 1 1.0 r\n"
            "2 Q0 d1 2 0.95 r\n2 Q0 d2 3 0.9 r\n3 Q0 d2 1 1.0 r\n3 Q0 d1 2 0.95 r\n3 Q0 d3 3 0.9 r\n",
        },
        "args": ["-q", "-m", "G.3=1,2=0.5", "-m", "ndcg.3=1,2=0.5", "-m", "ndcg_rel.3=1,2=0.5"],
        "versions": VERSIONS,
    },
    {
        "name": "G_gain_outruns_cost",
        "shows": "G with a gain map whose gains outrun the cost: log2 of a number <= 0 (C: nan, printed -nan)",
        "files": {
            "qrels": "1 0 a 2\n1 0 b 2\n1 0 c 2\n1 0 d 1\n1 0 e 1\n1 0 f 1\n2 0 a 2\n2 0 b 2\n2 0 d 1\n"
            "2 0 e 1\n",
            "run": "1 Q0 a 1 0.9 r\n1 Q0 b 2 0.8 r\n1 Q0 c 3 0.7 r\n2 Q0 a 1 0.9 r\n2 Q0 b 2 0.8 r\n",
        },
        "args": ["-q", "-m", "G.2=1.9,1=1"],
        "versions": VERSIONS,
    },
    {
        "name": "gain_order_pairs_reversed",
        "shows": "the same gains given in the other order: another merge-sort order, other numbers",
        "files": "gain_order_not_transitive",
        "args": ["-q", "-m", "G.2=0.5,3=1"],
        "versions": VERSIONS,
    },
    {
        "name": "G_gain_reaches_cost",
        "shows": "G where 2 + cost - gain is exactly 1: log2 gives 0 and the gain over it inf (C), not an error",
        "files": "G_gain_outruns_cost",
        "args": ["-q", "-m", "G.2=1.5,1=1"],
        "versions": VERSIONS,
    },
    {
        "name": "c_missing_topic_named_measures",
        "shows": "-c, qrels topic 2 missing from the run: 10.0 scores it as one unjudged document and resets "
        "utility, relstring and rbp_resid by exact name, so utility_1,-2,0,0, relstring_5 and "
        "rbp_resid_p=0.5 keep that document's value (-2, '-', 1)",
        "files": {"qrels": "1 0 a 1\n1 0 b 0\n2 0 c 1\n", "run": "1 Q0 a 1 0.5 r\n1 Q0 z 2 0.4 r\n"},
        "args": ["-q", "-c", "-m", "utility", "-m", "utility.1,-2,0,0", "-m", "relstring.5", "-m", "num_ret"],
        "versions": VERSIONS,
    },
    {
        "name": "c_missing_topic_rbp_resid",
        "shows": "the same for rbp_resid (10.0 only): rbp_resid.p=0.5 takes rbp's parameters and keeps the "
        "one document's residual, p + (1 - p)",
        "files": "c_missing_topic_named_measures",
        "args": ["-q", "-c", "-m", "rbp_resid.p=0.5,2=3", "-m", "unj.1"],
        "versions": ("10.0",),
    },
    {
        "name": "c_J_missing_topic_named_measures",
        "shows": "-c -J: -J removes the unjudged document again, so utility_1,-2,0,0 is the empty ranking's "
        "(-R), not 0",
        "files": "c_missing_topic_named_measures",
        "args": ["-q", "-c", "-J", "-N", "20", "-m", "utility.1,-2,0.5,0.25", "-m", "relstring.5"],
        "versions": VERSIONS,
    },
    {
        "name": "qrels_prefs_c_missing_topic",
        "shows": "-R qrels_prefs -c, topic 1 missing from the run: 9.0.8 never evaluates it (its possible "
        "preferences add nothing to prefs_num_prefs_poss), 10.0 does and prints it",
        "files": {
            "qrels": "1 0 a 1\n1 0 b 3\n1 0 c 0\n2 0 d 1\n2 0 e 0\n",
            "run": "2 Q0 d 1 0.9 r\n2 Q0 e 2 0.5 r\n",
        },
        "args": ["-q", "-c", "-R", "qrels_prefs", "-m", "all_prefs"],
        "versions": VERSIONS,
    },
    {
        "name": "zscore_line_past_the_topic",
        "shows": "-Z: topic 1 has no recip_rank line, and recip_rank sorts after its lines, so trec_eval's "
        "binary search (end = num_zscores) reads the next line, topic 2's recip_rank, and uses it; topic 2's "
        "missing map sorts before its lines: -1000000",
        "files": {
            "qrels": "1 0 a 1\n1 0 b 0\n2 0 c 1\n2 0 d 1\n",
            "run": "1 Q0 b 1 0.9 r\n1 Q0 a 2 0.8 r\n2 Q0 d 1 0.9 r\n",
            "z": "1 map 0.5 0.25\n2 recip_rank 0.25 0.5\n",
        },
        "args": ["-q", "-Z", "{z}", "-m", "map", "-m", "recip_rank"],
        "versions": VERSIONS,
    },
    {
        "name": "relstring_negative_length",
        "shows": "relstring with a negative length prints '' for every topic (m_relstring.c: MIN(length, "
        "num_ret), then 0 if negative)",
        "files": {
            "qrels": "1 0 a 1\n2 0 b 1\n2 0 c 0\n",
            "run": "1 Q0 a 1 0.5 r\n2 Q0 b 1 0.9 r\n2 Q0 c 2 0.8 r\n2 Q0 d 3 0.7 r\n2 Q0 e 4 0.6 r\n",
        },
        "args": ["-q", "-m", "relstring.-3", "-m", "num_ret"],
        "versions": VERSIONS,
    },
    {
        "name": "mean_of_negative_zeros",
        "shows": "set_F.-1 where precision exceeds recall is -0.0 per topic (printed -0.0000), but the mean "
        "starts from 0.0 and prints 0.0000",
        "files": {"qrels": "1 0 a 1\n1 0 b 1\n", "run": "1 Q0 a 1 0.9 r\n"},
        "args": ["-q", "-m", "set_F.-1"],
        "versions": VERSIONS,
    },
    {
        "name": "set_F_negative_beta_zero_denominator",
        "shows": "set_F.-2 where -2 P + R is 0: the C division gives -inf (m_set_F.c guards only "
        "num_rel_ret)",
        "files": {
            "qrels": "1 0 a 1\n1 0 b 1\n2 0 c 1\n2 0 d 1\n",
            "run": "1 Q0 a 1 0.9 r\n1 Q0 z 2 0.8 r\n1 Q0 y 3 0.7 r\n1 Q0 x 4 0.6 r\n"
            "2 Q0 c 1 0.9 r\n2 Q0 w 2 0.8 r\n",
        },
        "args": ["-q", "-m", "set_F.-2"],
        "versions": VERSIONS,
    },
    {
        "name": "set_F_minus_one_equal_precision_recall",
        "shows": "set_F.-1 where P = R: 0/0, printed -nan, and the mean with it",
        "files": "set_F_negative_beta_zero_denominator",
        "args": ["-q", "-m", "set_F.-1"],
        "versions": VERSIONS,
    },
    {
        "name": "aqZ_9.0.8",
        "shows": "trec_eval 9.0.8's own -Z test: its zscores_file holds nan for set_F, printed as nan",
        "files": {"qrels": "@qrels.test", "run": "@results.test", "z": "@v9.0.8/zscores_file"},
        "args": ["-q", "-m", "all_trec", "-Z", "{z}"],
        "versions": ("9.0.8",),
    },
]


def _files_of(case: dict[str, Any]) -> dict[str, Any]:
    """A case's files, or those of the case it names (the same inputs under other arguments)."""
    files = case["files"]
    return next(c["files"] for c in CASES if c["name"] == files) if isinstance(files, str) else files


def run_case(binary: str, case: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [binary, *case_arguments(case, Path(tmp))], capture_output=True, text=True, check=False
        )
    stderr = proc.stderr.strip().splitlines()
    return {
        "status": proc.returncode,
        "stdout": proc.stdout.splitlines(),
        "stderr": stderr[0] if stderr else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--binary", action="append", required=True, metavar="VERSION=PATH")
    parser.add_argument("--commit", action="append", required=True, metavar="VERSION=SHA")
    opts = parser.parse_args()
    binaries = dict(b.split("=", 1) for b in opts.binary)
    commits = dict(c.split("=", 1) for c in opts.commit)
    if sorted(binaries) != sorted(VERSIONS) or sorted(commits) != sorted(VERSIONS):
        parser.error(f"give --binary and --commit for each of {', '.join(VERSIONS)}")
    tools = {}
    for version in VERSIONS:
        printed = subprocess.run([binaries[version], "-v"], capture_output=True, text=True, check=False)
        tools[version] = {
            "tag": f"v{version}",
            "commit": commits[version],
            "prints_version": (printed.stdout + printed.stderr).strip(),
        }
    cases = []
    for case in CASES:
        case = {**case, "files": _files_of(case)}
        expected = {v: run_case(binaries[v], case) for v in case["versions"]}
        cases.append({**case, "versions": list(case["versions"]), "expected": expected})
    OUT.write_text(json.dumps({"trec_eval": tools, "cases": cases}, indent=1) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
