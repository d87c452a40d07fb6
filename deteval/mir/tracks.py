"""Several tracks in one run: a reference folder and an estimate folder of ``.lab`` files paired by file name.

This is how structure annotations are kept for MIREX and for mir_eval's evaluators: one annotation file per
track, the same file name (``<track>.lab``) in the reference folder and in each system's output folder.
Tracks are paired by file stem (``seg01.lab`` with ``seg01.lab``; ``pattern`` selects the files, ``*.lab``
by default; sub-folders are not read). Every reference needs an estimate and every estimate a reference: a
file without its partner is an :class:`~deteval.errors.InputFormatError` naming the files, never left out.

Each track is evaluated alone (:func:`~deteval.mir.evaluate.evaluate_mir`); the collection's numbers are the
mean over tracks of each track's precision, recall and F, every track weighing 1 (MIREX's and mir_eval's
convention: the F of a collection is the mean of the per-track Fs, not the F of the mean P and R). The
resampling unit of intervals and paired tests is the track (:func:`deteval.stats.mir.mir_collection`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from deteval.errors import ConfigError, InputFormatError
from deteval.mir.evaluate import boundary_heading, evaluate_mir
from deteval.results import EvalResult

__all__ = ["Track", "evaluate_mir_tracks", "pair_folders"]

#: how many file names a pairing error lists before "... and N more"
_LISTED = 10


@dataclass(frozen=True)
class Track:
    """One track: its name (the file stem) and its reference and estimate files."""

    name: str
    reference: Path
    estimate: Path


def _files(folder: str | PathLike[str], pattern: str) -> dict[str, Path]:
    """The files of ``folder`` matching ``pattern``, by stem (an error if the folder has none, or if two
    share a stem)."""
    path = Path(folder)
    if not path.is_dir():
        raise InputFormatError("not a folder", file=str(folder))
    found: dict[str, Path] = {}
    for f in sorted(path.glob(pattern)):
        if not f.is_file():
            continue
        if f.stem in found:
            raise InputFormatError(
                f"two files for track {f.stem!r}: {found[f.stem].name} and {f.name} (pattern {pattern!r})",
                file=str(folder),
            )
        found[f.stem] = f
    if not found:
        raise InputFormatError(f"no annotation files (pattern {pattern!r}) in this folder", file=str(folder))
    return found


def _listing(paths: Sequence[Path]) -> str:
    shown = ", ".join(str(p) for p in paths[:_LISTED])
    return shown + (f" and {len(paths) - _LISTED} more" if len(paths) > _LISTED else "")


def pair_folders(
    reference: str | PathLike[str], estimate: str | PathLike[str], *, pattern: str = "*.lab"
) -> list[Track]:
    """The tracks of a reference folder and an estimate folder, paired by file stem, in stem order.

    Raises :class:`~deteval.errors.InputFormatError` naming the folder when it is missing or holds no file
    matching ``pattern``, and naming every file without a partner (module docstring).
    """
    if not pattern or "/" in pattern or "\\" in pattern:
        raise ConfigError(f"the file pattern must be a file-name glob such as '*.lab', got {pattern!r}")
    refs = _files(reference, pattern)
    ests = _files(estimate, pattern)
    no_estimate = [refs[s] for s in sorted(refs.keys() - ests.keys())]
    no_reference = [ests[s] for s in sorted(ests.keys() - refs.keys())]
    if no_estimate or no_reference:
        parts = []
        if no_estimate:
            parts.append(f"no estimate (same file name) for {_listing(no_estimate)}")
        if no_reference:
            parts.append(f"no reference (same file name) for {_listing(no_reference)}")
        raise InputFormatError(
            "the reference and estimate folders do not hold the same tracks: " + "; ".join(parts),
            file=str(estimate),
        )
    return [Track(s, refs[s], ests[s]) for s in sorted(refs)]


def evaluate_mir_tracks(
    reference: str | PathLike[str],
    estimate: str | PathLike[str],
    *,
    compare_to: Sequence[str | PathLike[str]] = (),
    pattern: str = "*.lab",
    statistics: dict[str, Any] | None = None,
    **options: Any,
) -> EvalResult:
    """Pairwise and boundary P/R/F of every track of ``estimate`` (a folder) against ``reference`` (a
    folder), per track and as the mean over tracks (module docstring).

    ``options`` go to :func:`~deteval.mir.evaluate.evaluate_mir` for every track (``taus``, ``rule``,
    ``frame_rate``, ``grid``, ``trim``, ``adjust``, ``case_sensitive``, ``on_error``). ``statistics`` (the keywords of
    :func:`deteval.stats.attach.add_statistics`: ``level``, ``n_resamples``, ``seed``, ``method``, ``test``,
    ``correction``) adds intervals over tracks and the comparisons with each folder of ``compare_to`` (the
    same tracks by another system). The summary holds the means under ``pairwise.precision``, ...,
    ``boundary.<tau>.f`` (the names of ``"ci"`` and ``"comparison"``), one per-class row per track.
    """
    # (here, not at the top: the protocol package stays free of the statistics and their process code until
    # a collection is evaluated)
    from deteval.stats.mir import mir_collection

    tracks = pair_folders(reference, estimate, pattern=pattern)
    if statistics is not None and len(tracks) < 2:
        # one track resampled is always itself: an interval [v, v] and a detectable difference of 0 would
        # look like certainty
        raise ConfigError(
            f"intervals and tests resample the tracks, and {reference} and {estimate} hold one track: give "
            "at least two"
        )
    results = [evaluate_mir(t.reference, t.estimate, **options) for t in tracks]
    others = []
    for other in compare_to:
        pairs = pair_folders(reference, other, pattern=pattern)
        others.append((str(other), [evaluate_mir(t.reference, t.estimate, **options) for t in pairs]))
    names = [t.name for t in tracks]
    if statistics is None:
        if others:
            raise ConfigError("a comparison needs the statistics options (test, correction, ...)")
        result = mir_collection(results, names=names, statistics=False)
    else:
        result = mir_collection(results, others, names=names, **statistics)
    first = results[0].summary
    result.summary = {
        "rule": first["rule"],
        "reference": str(reference),
        "estimate": str(estimate),
        "pattern": pattern,
        "frame_rate": first["frame_rate"],
        "grid": first["grid"],
        "trim": first["trim"],
        "adjust": first["adjust"],
        "average": "mean over tracks",
        "skipped_records": sum(int(r.summary["skipped_records"]) for r in results),
        **result.summary,
    }
    result.warnings = [f"{t.name}: {w}" for t, r in zip(tracks, results) for w in r.warnings]
    result.lines = _lines(result, len(tracks), list(first["boundary"]))
    return result


def _lines(result: EvalResult, n_tracks: int, taus: list[str]) -> list[str]:
    s = result.summary
    rate = "frame indices" if s["frame_rate"] is None else f"{s['frame_rate']:g} frames/s"
    lines = [
        f"{n_tracks} track{'s' if n_tracks != 1 else ''}: reference {s['reference']}, estimate "
        f"{s['estimate']} ({s['pattern']}, paired by file name)",
        "mean over tracks (each track weighs 1, as MIREX and mir_eval average a collection); per track below",
        "",
        f"pairwise frame-label ({rate})",
        f"  precision {s['pairwise.precision']:.4f}  recall {s['pairwise.recall']:.4f}  F {s['pairwise.f']:.4f}",
        "",
        boundary_heading(s["rule"], s["trim"], s["adjust"]),
    ]
    width = max(len("tau"), *(len(k) for k in taus))
    lines.append(f"  {'tau'.rjust(width)}  precision  recall       F")
    for key in taus:
        p, r, f = (s[f"boundary.{key}.{m}"] for m in ("precision", "recall", "f"))
        lines.append(f"  {key.rjust(width)}  {p:9.4f}  {r:6.4f}  {f:6.4f}")
    return lines
