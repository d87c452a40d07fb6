"""The analysis options of ``deteval coco``, ``deteval voc`` and ``deteval yolo`` (``--errors``, ``--confusion``,
..., ``--html``) and whether any is given; what they compute is :mod:`deteval.analysis.cli`. Nothing of the
analyses is imported here, so that a command's parser and its plain evaluation load none of them."""

from __future__ import annotations

import argparse

__all__ = ["COMPAT_MODES", "add_analysis_args", "analyses_requested"]

#: The TIDE error analysis's modes (:mod:`deteval.analysis.tide`): the protocol's own matching and AP, or
#: tidecv 1.0.1's numbers exactly.
COMPAT_MODES: tuple[str, ...] = ("protocol", "tide")


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
        help="protocol (default): the protocol's own matching and AP; tide: tidecv 1.0.1's numbers exactly",
    )
    g.add_argument(
        "--errors-fg-iou",
        type=float,
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
            "--iou",
            type=float,
            metavar="T",
            help="IoU of --confusion, --operating-points, --calibration and --worst-images (default 0.5; "
            "deteval yolo's confusion matrix under an Ultralytics profile: yolo val's 0.45)",
        )
    c.add_argument(
        "--score-threshold",
        type=float,
        metavar="S",
        help="detections scored below S are left out of --confusion (default 0.25; deteval yolo under an "
        "Ultralytics profile: those not above S, by default what yolo val takes from --conf)",
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
        metavar="N",
        help="add the N images that cost the most AP (false positives, missed objects, share of the AP loss)",
    )
    i.add_argument(
        "--images",
        metavar="DIR",
        help="draw the worst images (--worst-images, default 10) as PNG files in DIR",
    )
    i.add_argument(
        "--image-root",
        metavar="DIR",
        help="folder of the pictures to draw on (COCO: file_name; VOC: <id>.jpg); default: a grey canvas",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="write one self-contained HTML report (summary, sortable per-class table, errors, confusion, "
        "curves, worst images); computes every analysis above",
    )
    o.add_argument(
        "--calibration-bins", type=int, default=None, metavar="N", help="confidence bins (default 10)"
    )


def analyses_requested(args: argparse.Namespace, *, html: bool = True) -> bool:
    """Whether any analysis option (``--errors``, ``--confusion``, ..., ``--html``; without ``--html`` if not
    ``html``) is given."""
    dests = ["errors", "confusion", "operating_points", "calibration", "worst_images", "images"]
    if html:
        dests.append("html")
    asked = (getattr(args, d, None) for d in dests)
    return any(v is not None and v is not False for v in asked)
