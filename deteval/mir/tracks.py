"""Several tracks in one run: a reference folder and an estimate folder of ``.lab`` files paired by file name.

This is how structure annotations are kept for MIREX and for mir_eval's evaluators: one annotation file per
track, the same file name (``<track>.lab``) in the reference folder and in each system's output folder.
Tracks are paired by file stem (``seg01.lab`` with ``seg01.lab``; ``pattern`` selects the files, ``*.lab``
by default; sub-folders are not read). Every reference needs an estimate and every estimate a reference: a
file without its partner is an :class:`~deteval.errors.InputFormatError` naming the files, never left out.

Each track is evaluated alone (:func:`~deteval.mir.evaluate.evaluate_mir`); the collection's numbers are the
mean over tracks of each track's precision, recall and F, every track weighing 1 (MIREX's and mir_eval's
convention: the F of a collection is the mean of the per-track Fs, not the F of the mean P and R). The
resampling unit of intervals and paired tests is the track: :func:`deteval.stats.mir.evaluate_mir_tracks`
(also ``deteval.mir.evaluate_mir_tracks``) evaluates the collection, with its statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from deteval.errors import ConfigError, InputFormatError
from deteval.io.guards import refuse_special

__all__ = ["Track", "pair_folders"]

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
            refuse_special(f, "track file")  # (a pipe or a device is refused, not skipped in silence)
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
