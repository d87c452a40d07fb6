"""Write pytrec_eval-style dicts as TREC qrels and run files (scores printed with full precision)."""

from __future__ import annotations

from pathlib import Path


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
