"""TREC qrels and run files, and the equivalent in-memory inputs, as columnar arrays.

File formats (whitespace-separated; tabs, repeated spaces and CRLF line ends are accepted):

* qrels: ``qid iter docno rel`` (``iter`` is ignored; ``rel`` an integer, or a plain decimal such as ``1.5``
  cut to its integer part as trec_eval's ``atol`` does; a negative ``rel`` means "in the pool but
  unjudged", as in trec_eval);
* run: ``qid Q0 docno rank score tag [anything]`` (``Q0`` and ``rank`` are ignored: trec_eval re-ranks by
  score; fields after the tag are ignored, as trec_eval does; the tag of the last line is the ``runid``).

Blank lines are skipped and counted. Every other line must have the expected number of fields (four; a run
line at least six); otherwise :class:`~deteval.errors.InputFormatError` names the file and the line.

The columns are :class:`Qrels` and :class:`Run` (:mod:`deteval.io.trec_tables`); the in-memory forms are in
:mod:`deteval.io.trec_memory` (re-exported here). Parsing is vectorised (:mod:`deteval.io.trec_blocks`,
:mod:`deteval.io.trec_tokens`): the file is read in large blocks, fields are located with numpy on the raw bytes
and gathered into fixed-width byte-string arrays (``dtype "S"``, which sort bytewise like C's ``strcmp``);
no Python code runs per line unless a line is bad and has to be named.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from os import PathLike
from typing import Any

import numpy as np

from deteval.errors import DetevalError, InputFormatError, ValidationError, first_true
from deteval.io.skipping import check_on_error, load_skipping
from deteval.io.trec_blocks import (
    QRELS_COMMENT,
    RUN_COMMENT,
    ByteBlocks,
    FileBlocks,
    blank_warning,
    line_fields,
    read_bytes,
    read_table,
    refuse_nul,
    without_comments,
)
from deteval.io.trec_memory import qrels_from_dict, qrels_from_lists, run_from_dict, run_from_lists
from deteval.io.trec_tables import Qrels, Run, column_width
from deteval.io.trec_tokens import parse_floats, parse_numbers, truncate_fractions, with_long

__all__ = [
    "Qrels",
    "Run",
    "column_width",
    "load_qrels",
    "load_run",
    "load_zscores",
    "qrels_from_dict",
    "qrels_from_lists",
    "run_from_dict",
    "run_from_lists",
]


_Blocks = ByteBlocks | FileBlocks
_Reader = Callable[[_Blocks, str | PathLike[str]], Any]


def _read(
    path: str | PathLike[str],
    on_error: str,
    comments: bool,
    pattern: re.Pattern[bytes],
    table: _Reader,
    stream: bool = True,
) -> Any:
    """``table`` of the file's text: read in blocks as they are needed (``stream``) or, to skip bad lines
    (``on_error="skip"``) or to be read twice, whole."""
    check_on_error(on_error)
    if stream and on_error == "raise":
        blocks = FileBlocks(path, pattern if comments else None)
        try:
            out = table(blocks, path)
        except DetevalError:
            refuse_nul(path)  # a NUL byte anywhere is named first, as when the whole file is checked up front
            raise
        n_comments = blocks.n_comments
    else:
        data = read_bytes(path)
        n_comments = 0
        if comments:
            data, n_comments = without_comments(data, pattern)
        out = _skipping(data, path, table) if on_error == "skip" else table(ByteBlocks(data), path)
    if n_comments:  # blanked comment lines are not blank lines of the file
        out.blank_lines -= n_comments
        out.warnings = [w for w in out.warnings if not w.endswith("blank line(s) skipped")]
        out.warnings += blank_warning(out.blank_lines, str(path))
        out.warnings.append(f"{path}: {n_comments} comment line(s) skipped (trec_eval 10.0)")
    return out


def load_qrels(
    path: str | PathLike[str],
    *,
    on_error: str = "raise",
    comments: bool = False,
    judgment_groups: bool = False,
) -> Qrels:
    """Read a TREC qrels file (``qid iter docno rel``); see the module docstring.

    Parameters
    ----------
    path
        The qrels file.
    on_error
        ``"raise"`` (default) stops at the first bad line; ``"skip"`` leaves bad lines (field count,
        relevance) out, listed in ``warnings`` and counted in ``skipped``, the rest read exactly as the file
        without them. Whole-file faults (unreadable, binary) and duplicates (two lines at fault, checked at
        evaluation) still raise.
    comments
        Lines starting with ``#`` are comments, as trec_eval 10.0 reads qrels (9.0.8 has no comments: such
        a line is data, usually with the wrong number of fields).
    judgment_groups
        Keep the ``iter`` field as each row's judgment group (``Qrels.group``, trec_eval's ``-R
        qrels_jg``); the same document may then be judged once per group.

    Returns
    -------
    Qrels
        One row per judgement, in file order.
    """
    if judgment_groups:
        return _read(path, on_error, comments, QRELS_COMMENT, _qrels_jg_table, stream=False)
    return _read(path, on_error, comments, QRELS_COMMENT, _qrels_table)


_LINE = re.compile(r"^line (\d+)$")


def _skipping(data: bytes, path: str | PathLike[str], table: _Reader) -> Any:
    """``table`` of ``data`` without the bad lines (see :mod:`deteval.io.skipping`); line numbers in the
    result and in the warnings are those of the file."""
    try:
        out = table(ByteBlocks(data), path)
        out.skipped = 0
        return out
    except DetevalError as exc:
        if not (isinstance(exc.record, str) and _LINE.match(exc.record)):
            raise
    # error path only: a Python pass over the lines to find the non-blank ones
    pieces = data.split(b"\n")
    if pieces and not pieces[-1]:
        pieces.pop()
    nonblank = np.array([i for i, t in enumerate(pieces) if t.strip()], dtype=np.int64)

    def load(idx: np.ndarray) -> Any:
        return table(ByteBlocks(b"".join(pieces[i] + b"\n" for i in nonblank[idx].tolist())), path)

    def local(exc: DetevalError) -> int | None:
        m = _LINE.match(exc.record) if isinstance(exc.record, str) else None
        return int(m.group(1)) - 1 if m else None

    out, bad, keep = load_skipping(len(nonblank), load, local, lambda i: f"line {int(nonblank[i]) + 1}")
    out.line = nonblank[keep][out.line - 1] + 1
    out.blank_lines = len(pieces) - len(nonblank)
    out.skipped = len(bad)
    out.warnings = [f"skipped bad record: {e}" for e in bad.values()] + blank_warning(
        out.blank_lines, str(path)
    )
    return out


def _qrels_jg_table(blocks: _Blocks, path: str | PathLike[str]) -> Qrels:
    (group,), longs, _, _ = read_table(blocks, path, 4, (1,), "qid iter docno rel", size=blocks.size)
    if longs[0]:
        row = min(longs[0])
        raise InputFormatError(
            f"judgment group id of {len(longs[0][row])} bytes is far longer than the others",
            file=str(path),
            record=f"row {row + 1}",
        )
    out = _qrels_table(blocks, path)
    out.group = group
    return out


def _qrels_table(blocks: _Blocks, path: str | PathLike[str]) -> Qrels:
    (topic, docno, rel_text), longs, lines, n_blank = read_table(
        blocks, path, 4, (0, 2, 3), "qid iter docno rel", size=blocks.size
    )
    rel = with_long(
        rel_text,
        longs[2],
        lines,
        lambda t, ln: parse_numbers(truncate_fractions(t), int, ln, str(path), "relevance"),
    )
    return Qrels(
        topic=topic,
        docno=docno,
        rel=rel.astype(np.int64),
        line=lines,
        source=str(path),
        blank_lines=n_blank,
        warnings=blank_warning(n_blank, str(path)),
        docno_long=longs[1],
    )


def load_run(path: str | PathLike[str], *, on_error: str = "raise", comments: bool = False) -> Run:
    """Read a TREC run file (``qid Q0 docno rank score tag``); scores must be finite numbers.

    Parameters
    ----------
    path
        The run file.
    on_error
        ``"raise"`` (default) or ``"skip"``: bad lines (field count, score) left out, as in
        :func:`load_qrels`.
    comments
        Lines whose first non-blank byte is ``#`` are comments (trec_eval 10.0).

    Returns
    -------
    Run
        One row per retrieved document, in file order; ``tag`` is the last line's run tag.
    """
    return _read(path, on_error, comments, RUN_COMMENT, _run_table)


def _run_table(blocks: _Blocks, path: str | PathLike[str]) -> Run:
    def scores(
        fields: list[np.ndarray], longs: list[dict[int, bytes]], lines: np.ndarray
    ) -> list[np.ndarray]:
        parse = lambda t, ln: parse_floats(t, ln, str(path), "score")  # noqa: E731
        return [fields[0], fields[1], with_long(fields[2], longs[2], lines, parse)]

    (topic, docno, score), longs, lines, n_blank = read_table(
        blocks, path, 6, (0, 2, 4), "qid Q0 docno rank score tag", convert=scores, more=True, size=blocks.size
    )
    score = score.astype(np.float64, copy=False)  # an empty file gives an empty "S1" column
    if (i := first_true(~np.isfinite(score))) >= 0:
        raise ValidationError(
            f"score {float(score[i])!r} is not finite", file=str(path), record=f"line {int(lines[i])}"
        )
    return Run(
        topic=topic,
        docno=docno,
        score=score,
        line=lines,
        tag=blocks.tag,
        source=str(path),
        docno_long=longs[1],
        blank_lines=n_blank,
        warnings=blank_warning(n_blank, str(path)),
    )


def load_zscores(path: str | PathLike[str]) -> dict[tuple[str, str], tuple[float, float]]:
    """Read a trec_eval ``-Z`` file (``qid measure mean stddev`` per line, get_zscores.c).

    trec_eval reads the numbers with ``atof`` (garbage as 0); deteval refuses a line that is not four fields
    with two numbers, and a repeated (qid, measure). ``nan`` and ``inf`` are numbers to ``atof`` and are
    read as such (trec_eval 9.0.8's own test/zscores_file has ``nan`` for set_F: every z-score of that
    measure is then NaN).

    Parameters
    ----------
    path
        The z-score file.

    Returns
    -------
    dict
        ``{(qid, measure): (mean, stddev)}``, for ``evaluate_trec(zscores=...)``.
    """
    data = read_bytes(path)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for record, parts in line_fields(data, "qid measure mean stddev", path, blank_ok=True):
        try:
            if b"_" in parts[2] + parts[3]:  # Python's float() reads 1_0 as 10; atof stops at the "_"
                raise ValueError
            mean, std = float(parts[2]), float(parts[3])
        except ValueError:
            raise InputFormatError("mean and stddev must be numbers", file=str(path), record=record) from None
        if std < 0 or 0 < std < sys.float_info.min:  # (a sign flip; a z-score overflowing to inf)
            raise ValidationError(
                f"stddev {std:g} must be 0 or a positive normal number", file=str(path), record=record
            )
        key = (parts[0].decode("utf-8", "backslashreplace"), parts[1].decode("utf-8", "backslashreplace"))
        if key in out:
            raise ValidationError(f"({key[0]}, {key[1]}) given twice", file=str(path), record=record)
        out[key] = (mean, std)
    return out
