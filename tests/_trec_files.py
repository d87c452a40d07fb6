"""Write pytrec_eval-style dicts as TREC qrels and run files (scores printed with full precision)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "trec_eval"


def write_trec(directory: Path, qrels: dict, run: dict, tag: str = "t") -> tuple[Path, Path]:
    """``directory/qrels`` and ``directory/run``; run ranks follow the dict order."""
    qp, rp = directory / "qrels", directory / "run"
    qp.write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    rp.write_text(
        "".join(
            f"{q} Q0 {d} {i + 1} {s!r} {tag}\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(docs.items())
        )
    )
    return qp, rp


def case_arguments(case: dict[str, Any], directory: Path) -> list[str]:
    """The trec_eval arguments of a case of ``tests/data/trec_eval/live_cases.json`` (options, then qrels
    and run), its input files written into ``directory``, or taken from tests/data/trec_eval when named
    ``@name``; ``{z}`` stands for the z-score file. Used by the tests and by scripts/trec_eval_expected.py."""
    paths = {}
    for key, text in case["files"].items():
        if text.startswith("@"):
            paths[key] = DATA / text[1:]
        else:
            paths[key] = directory / key
            paths[key].write_text(text)
    args = [str(paths["z"]) if a == "{z}" else a for a in case["args"]]
    return [*args, str(paths["qrels"]), str(paths["run"])]
