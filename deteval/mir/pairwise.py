"""Pairwise frame-label precision, recall and F-measure (FMP, Section 4.5.3; mir_eval.segment.pairwise).

The items are the unordered pairs of frames (m < n). A pair is positive in an annotation when both frames
carry the same label (labels compared by value). With φ_ref and φ_est the frame labels::

    TP = #{m < n : φ_ref(m) = φ_ref(n) and φ_est(m) = φ_est(n)}
    FP = #{m < n : φ_est(m) = φ_est(n)} − TP,   FN = #{m < n : φ_ref(m) = φ_ref(n)} − TP

The N×N pair matrix is never built: a group of c frames sharing a label contributes c(c−1)/2 pairs, so the
counts come from the label histograms of φ_ref and φ_est and from their contingency table (the histogram
of label pairs). An hour of audio at 100 frames per second (360 000 frames) costs a few milliseconds.

Sampling segments into frames (mir_eval's ``intervals_to_samples``): frame k sits at time t_k; it takes
the label of the segment with start ≤ t_k ≤ end, and of the later segment on a shared boundary (so the end
time of a segment followed by a gap, or by nothing, is inside it, as in mir_eval). The number
of frames is the number of whole frames in the reference, N = ⌊T_ref · frame_rate⌋ (T_ref = the end of the
last reference segment); the estimate is sampled on the same grid. Frames that no segment covers (gaps,
an estimate that stops early) share one 'unlabelled' label, as they do in mir_eval (its ``None`` label);
they are counted and reported in ``warnings``.

Two sampling grids:

* ``grid="exact"`` (default): t_k = k / frame_rate in float64, N = ⌊T · frame_rate⌋ after rounding
  T · frame_rate to 9 decimals (so ``2.3`` s at 10 frames/s has 23 frames, as written, although the double
  2.3 × 10 is 22.999999999999996). Annotations in frames use ``frame_rate=None`` (t_k = k): a segment
  ``[s, e, label]`` then labels frames s … e−1, exactly FMP's ``convert_ann_to_seq_label``.
* ``grid="mir_eval"``: mir_eval 0.8's grid, bit for bit: t_k = float32(k) · frame_size evaluated in float32
  (NumPy 2 keeps ``np.arange(N, dtype=float32) * 0.1`` in float32), N = ⌊T / frame_size⌋, frame_size =
  1 / frame_rate. Its times differ from k / frame_rate by up to ~1e-7 relative, which changes a frame's
  label only when a segment boundary falls between the two.

Differences from the references, on purpose:

* FMP's ``compare_pairwise`` compares labels with ``is`` (object identity); here labels are compared by
  value. mir_eval lower-cases labels (``index_labels(case_sensitive=False)``): pass
  ``case_sensitive=False`` for that.
* When no pair is positive in the estimate (every frame has its own label) or in the reference, FMP divides
  by zero and mir_eval returns NaN; here P (resp. R) is 0 (the core's ``zero_division``) and F is 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from deteval.errors import ConfigError, ValidationError
from deteval.io.lab import as_segments
from deteval.mir.counts import PRFCounts, prf_counts
from deteval.tables.segments import Segments

Grid = Literal["exact", "mir_eval"]
GRIDS: tuple[str, ...] = ("exact", "mir_eval")


@dataclass(frozen=True)
class PairwiseResult(PRFCounts):
    """:class:`PRFCounts` over frame pairs, plus the number of frames compared."""

    n_frames: int = 0


def _label_text(x: Any) -> str:
    if type(x) is str:
        return x
    hash(x)  # (an unhashable label, a list, stays refused: a TypeError)
    return str(x)


def _factorize(labels: Any, case_sensitive: bool) -> np.ndarray:
    """Integer codes 0..k−1 for labels compared by their text, ``str(label)`` (``.lower()``d unless
    ``case_sensitive``), as ``mir_eval.util.index_labels`` compares them in every segment measure: the numbers
    1 and 1.0 are the labels "1" and "1.0", two labels (a dict would take them for one: 1 == 1.0)."""
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "biuUS" and case_sensitive:
        # (one value per text in these dtypes; floats are not: -0.0 == 0.0, so they take the text path)
        return np.unique(labels.reshape(-1), return_inverse=True)[1].reshape(-1).astype(np.int64)
    seq = labels.tolist() if isinstance(labels, np.ndarray) else list(labels)
    index: dict[str, int] = {}
    try:
        if case_sensitive:
            codes = [index.setdefault(_label_text(x), len(index)) for x in seq]
        else:
            codes = [index.setdefault(str(x).lower(), len(index)) for x in seq]
    except TypeError as exc:
        raise ValidationError(f"labels must be hashable ({exc})") from None
    return np.asarray(codes, dtype=np.int64)


def _same_label_pairs(counts: np.ndarray) -> int:
    c = counts.astype(np.int64)
    return int((c * (c - 1) // 2).sum())


def pair_counts(ref_codes: np.ndarray, est_codes: np.ndarray) -> tuple[int, int, int]:
    """(TP, FP, FN) over frame pairs from two integer label-code arrays of equal length.

    Counts come from histograms: a label (or label pair) shared by c frames gives c(c−1)/2 pairs.
    """
    ref = np.asarray(ref_codes, dtype=np.int64)
    est = np.asarray(est_codes, dtype=np.int64)
    if ref.shape != est.shape or ref.ndim != 1:
        raise ValidationError(f"frame label sequences differ in length ({ref.shape[0]} vs {est.shape[0]})")
    if ref.size == 0:
        return 0, 0, 0
    n_est = int(est.max()) + 1
    n_ref = int(ref.max()) + 1
    joint = ref * n_est + est
    if n_ref * n_est <= 4 * ref.size + 65536:
        joint_counts = np.bincount(joint)
    else:  # many labels: sort instead of allocating the whole contingency table
        joint_counts = np.unique(joint, return_counts=True)[1]
    tp = _same_label_pairs(joint_counts)
    ref_pos = _same_label_pairs(np.bincount(ref))
    est_pos = _same_label_pairs(np.bincount(est))
    return tp, est_pos - tp, ref_pos - tp


def pairwise_prf_labels(
    reference: Sequence[Any] | np.ndarray,
    estimate: Sequence[Any] | np.ndarray,
    *,
    beta: float = 1.0,
    case_sensitive: bool = True,
) -> PairwiseResult:
    """Pairwise P/R/F from two frame-label sequences of equal length (FMP's φ_ref, φ_est).

    >>> r = pairwise_prf_labels(list("AAAABBBAAA"), list("XYYZZZZYYX"))
    >>> r.tp, r.fn, r.fp, round(r.precision, 3), round(r.recall, 3), round(r.f, 3)
    (10, 14, 3, 0.769, 0.417, 0.541)
    """
    ref = _factorize(reference, case_sensitive)
    est = _factorize(estimate, case_sensitive)
    if ref.shape != est.shape:
        raise ValidationError(
            f"reference and estimate label sequences differ in length ({ref.shape[0]} vs {est.shape[0]})"
        )
    tp, fp, fn = pair_counts(ref, est)
    base = prf_counts(tp, fp, fn, beta=beta)
    return PairwiseResult(**base.__dict__, n_frames=int(ref.shape[0]))


#: The most frames a pairwise evaluation samples (46 hours at 100 frames/s): beyond it the frame arrays would
#: take gigabytes, and an end time that large is a broken file rather than a recording.
MAX_FRAMES: int = 2**24


def _frames_float(duration: float, rate: float | None, size: float | None, grid: str) -> float:
    if size is not None:
        x = duration / size
    elif rate is not None:
        x = duration / (1.0 / rate) if grid == "mir_eval" else duration * rate
    else:
        raise ConfigError("give exactly one of frame_rate and frame_size")
    return float(np.floor(x)) if grid == "mir_eval" else float(np.floor(np.round(x, 9)))


def frame_times(
    n_frames: int, frame_rate: float | None = None, grid: Grid = "exact", *, frame_size: float | None = None
) -> np.ndarray:
    """Times (float64) of frames 0..n_frames−1 on the chosen grid (see the module docstring).

    Give ``frame_rate`` (t_k = k / frame_rate) or ``frame_size`` (t_k = k · frame_size); on the
    ``"mir_eval"`` grid a rate becomes the size 1 / frame_rate.
    """
    if frame_size is not None and frame_rate is None:
        size = frame_size
    elif frame_rate is not None and frame_size is None:
        if grid != "mir_eval":
            return np.arange(n_frames, dtype=np.float64) / frame_rate
        size = 1.0 / frame_rate
    else:
        raise ConfigError("give exactly one of frame_rate and frame_size")
    if grid == "mir_eval":
        # Same expression as mir_eval.util.intervals_to_samples, so the same float32 rounding.
        return (np.arange(n_frames, dtype=np.float32) * size).astype(np.float64)
    return np.arange(n_frames, dtype=np.float64) * size


def sample_segments(
    segments: Segments, times: np.ndarray, *, case_sensitive: bool = True
) -> tuple[np.ndarray, int]:
    """Label codes of the frames at ``times`` and the number of frames no segment covers.

    Covered frames get codes 0..k−1 (one per distinct label); uncovered frames share code k.
    """
    keep = segments.ends > segments.starts  # zero-length segments hold no frame
    starts, ends = segments.starts[keep], segments.ends[keep]
    codes = _factorize(segments.labels[keep], case_sensitive)
    fill = int(codes.max()) + 1 if codes.size else 0
    idx = np.searchsorted(starts, times, side="right") - 1  # the last segment starting at or before t
    safe = np.clip(idx, 0, None)
    covered = (idx >= 0) & (times <= ends[safe]) if starts.size else np.zeros(times.shape, dtype=bool)
    out = np.full(times.shape, fill, dtype=np.int64)
    out[covered] = codes[safe[covered]]
    return out, int(times.size - np.count_nonzero(covered))


def _check_grid(
    frame_rate: float | None, frame_size: float | None, grid: str
) -> tuple[float | None, float | None]:
    if grid not in GRIDS:
        raise ConfigError(f"unknown grid {grid!r}; choose one of {', '.join(GRIDS)}")
    if frame_rate is not None and frame_size is not None:
        raise ConfigError("give frame_rate or frame_size, not both")
    name, value = ("frame rate", frame_rate) if frame_rate is not None else ("frame size", frame_size)
    if value is None:
        return 1.0, None  # times are frame indices
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not np.isfinite(v) or v <= 0:
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    return (v, None) if frame_rate is not None else (None, v)


def pairwise_prf(
    reference: Any,
    estimate: Any,
    *,
    frame_rate: float | None = None,
    frame_size: float | None = None,
    grid: Grid = "exact",
    beta: float = 1.0,
    case_sensitive: bool = True,
) -> PairwiseResult:
    """Pairwise frame-label P/R/F of two segment annotations.

    ``reference``/``estimate``: :class:`~deteval.tables.segments.Segments`, a ``.lab`` path or ``[[start, end,
    label], ...]``. Neither ``frame_rate`` nor ``frame_size``: times are frame indices; otherwise seconds
    sampled at ``frame_rate`` frames per second or every ``frame_size`` seconds (mir_eval's parameter; with
    ``grid="mir_eval"`` give the same ``frame_size`` as to mir_eval, since 1 / (1 / x) need not be x).
    Frames and the unlabelled-frame rule are described in the module docstring.

    >>> r = pairwise_prf([[0, 4, "A"], [4, 7, "B"], [7, 10, "A"]],
    ...                  [[0, 1, "X"], [1, 3, "Y"], [3, 7, "Z"], [7, 9, "Y"], [9, 10, "X"]])
    >>> r.tp, r.fp, r.fn, r.n_frames
    (10, 3, 14, 10)
    """
    rate, size = _check_grid(frame_rate, frame_size, grid)
    ref = as_segments(reference, source="<reference>")
    est = as_segments(estimate, source="<estimate>")
    unit = "frames" if frame_rate is None and frame_size is None else "s"
    n_float = _frames_float(ref.duration, rate, size, grid)
    if not n_float <= MAX_FRAMES:
        last = int(np.argmax(ref.ends))
        raise ValidationError(
            f"the reference ends at {ref.duration:g} {unit}: {n_float:g} frames to sample, more than the "
            f"limit of {MAX_FRAMES}; check the end time or lower the frame rate",
            file=ref.source,
            record=ref.record_name(last),
        )
    n = int(n_float)
    times = frame_times(n, rate, grid, frame_size=size)
    ref_codes, ref_gaps = sample_segments(ref, times, case_sensitive=case_sensitive)
    est_codes, est_gaps = sample_segments(est, times, case_sensitive=case_sensitive)
    warnings: list[str] = []
    if n < 2:  # no pair m < n: the counts are all 0, and so P, R and F by the zero-division convention
        sampling = f"{rate:g} frames/s" if rate is not None else f"one frame every {size:g} s"
        warnings.append(
            f"pairwise: the reference ends at {ref.duration:g} {unit}, which gives {n} frame(s) at {sampling}: "
            "no pair of frames to compare, so pairwise precision, recall and F are 0 by convention, not "
            "measured (a higher frame rate samples more frames)"
        )
    if ref_gaps:
        warnings.append(
            f"pairwise: {ref_gaps} of {n} reference frames lie in no reference segment; "
            "they share one 'unlabelled' label"
        )
    if est_gaps:
        warnings.append(
            f"pairwise: {est_gaps} of {n} frames lie in no estimated segment; "
            "they share one 'unlabelled' label"
        )
    n_est_own = _frames_float(est.duration, rate, size, grid)  # may be huge: only compared, never sampled
    if n_est_own > n:
        warnings.append(
            f"pairwise: the estimate ends at {est.duration:g} {unit}, after the reference "
            f"({ref.duration:g} {unit}); its last {n_est_own - n:.0f} frame(s) are not evaluated"
        )
    tp, fp, fn = pair_counts(ref_codes, est_codes)
    base = prf_counts(tp, fp, fn, beta=beta, warnings=tuple(warnings))
    return PairwiseResult(**base.__dict__, n_frames=n)
