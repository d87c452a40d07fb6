"""trec_eval's preference files: ``-R prefs`` (get_prefs.c) and ``-R qrels_prefs`` (get_qrels_prefs.c).

A prefs line is ``qid jg jsg docno rel_level``: within one judgment sub-group (jsg) of a judgment group
(jg), a document with a higher rel_level is preferred to one with a lower level; 0.0 means non-relevant.
A qrels_prefs file is a qrels file read the same way, the ``iter`` field being the judgment group and
every line in sub-group ``"0"``. Ids are kept as bytes (trec_eval compares them with ``strcmp``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from os import PathLike

from deteval.errors import InputFormatError
from deteval.io.trec_blocks import line_fields, read_bytes
from deteval.syntax import parse_decimal


@dataclass(frozen=True)
class PrefLine:
    """One judged document of a sub-group: ``jg``, ``jsg``, ``docno`` (bytes) and its ``rel_level``."""

    jg: bytes
    jsg: bytes
    docno: bytes
    rel_level: float


@dataclass
class Prefs:
    """Preference judgements by topic id (bytes), in file order; ``source`` names the file."""

    topics: dict[bytes, list[PrefLine]] = field(default_factory=dict)
    source: str = "<in-memory prefs>"

    def __len__(self) -> int:
        return sum(len(v) for v in self.topics.values())


def load_prefs(path: str | PathLike[str], *, qrels_format: bool = False, comments: bool = False) -> Prefs:
    """Read a prefs file (``qid jg jsg docno rel_level``) or, with ``qrels_format=True``, a qrels file
    read as preferences (``qid jg docno rel_level``, sub-group ``"0"``), as trec_eval's ``-R prefs`` and
    ``-R qrels_prefs`` do. rel_level is read as a double (``atof``); a line with the wrong number of fields
    (trec_eval: "Malformed line", blank lines included) or a rel_level that is not a finite number is
    refused (``atof`` would read it as its leading digits or 0). ``comments=True`` (trec_eval 10.0, whose
    ``test/prefs.comment.test`` has them): a line starting with ``#`` is a comment, as in 10.0's qrels; a
    ``#`` inside a docno is data."""
    data = read_bytes(path)
    out = Prefs(source=str(path))
    what = "qid jg docno rel" if qrels_format else "qid jg jsg docno rel"
    for record, parts in line_fields(data, what, path, blank_ok=False, comments=comments):
        try:  # ASCII decimal notation only: float() would read b"1_0" as 10 (atof: 1)
            rel = parse_decimal(parts[-1].decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            rel = math.nan
        if not math.isfinite(rel):
            raise InputFormatError(
                f"rel_level {parts[-1].decode('utf-8', 'backslashreplace')!r} is not a finite number",
                file=str(path),
                record=record,
            )
        jsg = b"0" if qrels_format else parts[2]  # (docno and rel_level are the last two fields of both)
        out.topics.setdefault(parts[0], []).append(PrefLine(parts[1], jsg, parts[-2], rel))
    if not out.topics:
        raise InputFormatError("no preference lines (trec_eval: cannot read prefs file)", file=str(path))
    return out
