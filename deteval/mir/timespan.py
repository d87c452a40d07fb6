"""mir_eval's time-span adjustment of a reference/estimate pair (``mir_eval.segment.evaluate``).

``mir_eval.segment.evaluate`` does not score the annotations as written: it first calls
``mir_eval.util.adjust_intervals`` so that the reference starts at 0 and the estimate spans exactly the
reference's [0, T_ref]. Real annotations rarely do (a reference starting at 0.383 s after a silence, an
estimate running 5 s past the reference's end), so the boundary and pairwise numbers of a mir_eval user
differ from those of the raw files. :func:`adjust_to_reference` applies the same rule:

* the reference: when its first start s is above 0, a segment [0, s] labelled ``__T_MIN`` is put first;
* the estimate: segments starting after T_ref are removed and ends above T_ref are cut to T_ref (a segment
  starting exactly at T_ref stays, of zero length); when it starts above 0 a ``__T_MIN`` segment [0, s] is
  put first, when it ends before T_ref a ``__T_MAX`` segment [end, T_ref] is put last.

The padding segments are ordinary labels: they add boundaries (0, and T_ref for the estimate) and give the
padded frames a label of their own, as in mir_eval.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from deteval.tables.segments import Segments, build_segments

__all__ = ["END_LABEL", "START_LABEL", "adjust_to_reference"]

#: mir_eval's labels of the padding segments
START_LABEL = "__T_MIN"
END_LABEL = "__T_MAX"

#: the record number of a padding segment (it comes from no line of the file)
_PADDING = -1


def _rebuild(
    segs: Segments, starts: np.ndarray, ends: np.ndarray, labels: list[object], records: np.ndarray
) -> Segments:
    out = build_segments(
        starts, ends, labels, records=records, source=segs.source, record_kind=segs.record_kind
    )
    return replace(out, skipped=segs.skipped)


def _pad_start(segs: Segments) -> Segments:
    if not len(segs) or segs.starts.min() <= 0.0:
        return segs
    first = float(segs.starts.min())
    return _rebuild(
        segs,
        np.r_[0.0, segs.starts],
        np.r_[first, segs.ends],
        [START_LABEL, *segs.labels.tolist()],
        np.r_[_PADDING, segs.records],
    )


def adjust_to_reference(reference: Segments, estimate: Segments) -> tuple[Segments, Segments]:
    """The reference padded to start at 0 and the estimate cut or padded to [0, T_ref] (module docstring),
    as ``mir_eval.segment.evaluate`` adjusts them before scoring."""
    ref = _pad_start(reference)
    est = _pad_start(estimate)
    t_max = ref.duration
    keep = est.starts <= t_max  # est is sorted by start: the segments after t_max form a tail
    starts = est.starts[keep]
    ends = np.minimum(est.ends[keep], t_max)
    labels = est.labels[keep].tolist()
    records = est.records[keep]
    last = float(ends.max()) if ends.size else 0.0
    if last < t_max:
        starts, ends = np.r_[starts, last], np.r_[ends, t_max]
        labels.append(END_LABEL)
        records = np.r_[records, _PADDING]
    return ref, _rebuild(est, starts, ends, labels, records)
