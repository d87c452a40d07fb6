"""The ``--errors`` options shared by ``deteval coco`` and ``deteval voc``, and how they reach the result."""

from __future__ import annotations

import argparse

from deteval.analysis.calibration import Calibration
from deteval.analysis.confusion import Confusion
from deteval.analysis.images import ImageDiagnostics
from deteval.analysis.operating import OperatingPoints
from deteval.analysis.tide import COMPAT_MODES, ErrorAnalysis, format_errors
from deteval.results import EvalResult

__all__ = [
    "add_analysis_args",
    "attach_calibration",
    "attach_confusion",
    "attach_errors",
    "attach_images",
    "attach_operating",
]


def add_analysis_args(p: argparse.ArgumentParser, *, fg_default: str, add_iou: bool) -> None:
    """Register ``--errors``, ``--errors-compat``, ``--errors-fg-iou``, ``--errors-bg-iou``, ``--confusion``,
    ``--score-threshold`` and, where the command has none, ``--iou`` on ``p``."""
    g = p.add_argument_group("error analysis (TIDE)")
    g.add_argument(
        "--errors",
        action="store_true",
        default=None,
        help="add the TIDE error decomposition (cls, loc, both, dupe, bkg, miss; fp, fn): the AP each error "
        'type costs, as "errors" in JSON (AP units 0-1)',
    )
    g.add_argument(
        "--errors-compat",
        choices=COMPAT_MODES,
        default=None,
        help="protocol (default): the protocol's own matching and AP; tide: tidecv 1.0.1's numbers exactly",
    )
    g.add_argument(
        "--errors-fg-iou",
        type=float,
        default=None,
        metavar="T",
        help=f"foreground IoU (default {fg_default})",
    )
    g.add_argument(
        "--errors-bg-iou", type=float, default=None, metavar="T", help="background IoU (default 0.1)"
    )
    c = p.add_argument_group("confusion matrix")
    c.add_argument(
        "--confusion",
        action="store_true",
        default=None,
        help="add the confusion matrix over the classes plus background (rows ground truth, columns predicted)",
    )
    if add_iou:
        c.add_argument(
            "--iou", type=float, default=None, metavar="T", help="IoU for --confusion (default 0.5)"
        )
    c.add_argument(
        "--score-threshold",
        type=float,
        default=None,
        metavar="S",
        help="detections scored below S are left out of --confusion (default 0.25)",
    )
    o = p.add_argument_group("operating points and calibration (at --iou)")
    o.add_argument(
        "--operating-points",
        action="store_true",
        default=None,
        help="per class, the score threshold of maximum F1 (with P, R); one global threshold of maximum mean F1",
    )
    o.add_argument(
        "--calibration",
        action="store_true",
        default=None,
        help="expected calibration error and reliability bins (confidence vs. fraction of true positives)",
    )
    i = p.add_argument_group("per-image diagnostics (at --iou)")
    i.add_argument(
        "--worst-images",
        type=int,
        default=None,
        metavar="N",
        help="add the N images that cost the most AP (false positives, missed objects, share of the AP loss)",
    )
    i.add_argument(
        "--images", default=None, metavar="DIR", help="draw the worst images (default 10) as PNG files in DIR"
    )
    i.add_argument(
        "--image-root",
        default=None,
        metavar="DIR",
        help="folder of the pictures to draw on (COCO: file_name; VOC: <id>.jpg); default: a grey canvas",
    )
    o.add_argument(
        "--calibration-bins", type=int, default=None, metavar="N", help="confidence bins (default 10)"
    )


def attach_errors(result: EvalResult, analysis: ErrorAnalysis) -> None:
    """Put the decomposition in ``result``: ``summary["errors"]`` and, where the protocol prints its own
    lines (COCO), the text table after them."""
    result.summary["errors"] = analysis.to_dict()
    if result.lines:
        result.lines.extend(["", *format_errors(analysis)])


def attach_confusion(result: EvalResult, confusion: Confusion) -> None:
    """Put the matrix in ``result``: ``summary["confusion"]`` and the text after the protocol's lines."""
    result.summary["confusion"] = confusion.to_dict()
    if result.lines:
        result.lines.extend(["", *confusion.lines()])


def attach_operating(result: EvalResult, ops: OperatingPoints) -> None:
    """``summary["operating_points"]``, and the global threshold after the protocol's lines."""
    result.summary["operating_points"] = ops.to_dict()
    if result.lines and ops.global_threshold is not None:
        result.lines.extend(
            ["", f"Global score threshold {ops.global_threshold:.4g}: mean F1 {ops.global_mean_f1:.4f}"]
        )


def attach_calibration(result: EvalResult, cal: Calibration) -> None:
    """``summary["calibration"]``, and the ECE after the protocol's lines."""
    result.summary["calibration"] = cal.to_dict()
    if result.lines:
        result.lines.extend(["", f"Calibration at IoU {cal.iou:g}: ECE {cal.ece:.4f}, MCE {cal.mce:.4f}"])


def attach_images(result: EvalResult, diag: ImageDiagnostics, top: int) -> None:
    """``summary["images"]`` with the ``top`` worst images, and a short table after the protocol's lines."""
    result.summary["images"] = diag.to_dict(top)
    if result.lines and diag.rows:
        result.lines.extend(["", f"Worst images (IoU {diag.iou:g}): image, fp, missed, AP loss, share"])
        result.lines.extend(
            f"  {r['image']:>14} {r['fp']:5d} {r['missed']:5d} {r['ap_loss']:9.5f} {100 * r['share']:6.1f}%"
            for r in diag.rows[:top]
        )
