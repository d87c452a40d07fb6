"""Render a YOLO :class:`~deteval.results.EvalResult` (protocol ``"yolo"``): the table ``yolo val`` prints,
and that layout as CSV and Markdown. JSON and LaTeX are the common exporters'."""

from __future__ import annotations

from typing import Any

from deteval.detection.coco import DET_STAT_NAMES
from deteval.report.latex import render_latex
from deteval.report.tables import FORMATS, csv_row, md_text, render
from deteval.results import EvalResult

YOLO_FORMATS = (*FORMATS, "latex")
_COLUMNS = ("P", "R", "AP50", "AP75", "AP50-95")
_RUN_FIELDS = (
    ("profile", "profile"),
    ("iou_type", "iou_type"),
    ("images", "n_images"),
    ("instances", "instances"),
)
_SUMMARY_OF = {"P": "precision", "R": "recall", "AP50": "mAP50", "AP75": "mAP75", "AP50-95": "mAP50-95"}


def _run(result: EvalResult, key: str, attr: str) -> Any:
    """A run field: the attribute of a :class:`~deteval.run.yolo.YoloResult`, or the summary field of a result
    read back from JSON."""
    return getattr(result, attr, None) if hasattr(result, attr) else result.summary.get(key)


def _rows(result: EvalResult) -> list[tuple[str, dict[str, Any]]]:
    """The ``all`` row (the summary) and one per class."""
    s = result.summary
    total = {
        "images": _run(result, "images", "n_images"),
        "instances": sum(int(r["instances"]) for r in result.per_class.values()),
    }
    total.update({c: s.get(k) for c, k in _SUMMARY_OF.items()})
    return [("all", total), *result.per_class.items()]


def _cols(result: EvalResult) -> list[str]:
    """P and R only where the profile defines them."""
    return [c for c in _COLUMNS if c not in ("P", "R") or "precision" in result.summary]


def yolo_lines(result: EvalResult) -> list[str]:
    """``yolo val``'s table (3 significant digits), after pycocotools' twelve numbers under ``coco``."""
    cols = _cols(result)
    out = [f"profile: {_run(result, 'profile', 'profile')}"]
    if "AP" in result.summary:
        out += [f"{n:>6} = {result.summary[n]:.3f}" for n in DET_STAT_NAMES]
    out.append(("%22s" + "%11s" * (2 + len(cols))) % ("Class", "Images", "Instances", *cols))
    for name, r in _rows(result):
        out.append(
            ("%22s" + "%11i" * 2 + "%11.3g" * len(cols))
            % (name, r["images"], r["instances"], *(r[c] for c in cols))
        )
    return out


def _fields_only(result: EvalResult) -> EvalResult:
    """``result`` without its class rows and text lines: what the common CSV and Markdown exporters add after
    ``yolo val``'s rows (the summary fields, the analyses, the statistics, the warnings)."""
    run = {k: _run(result, k, a) for k, a in _RUN_FIELDS}
    return EvalResult(result.protocol, {**run, **result.summary}, warnings=list(result.warnings))


def render_yolo(result: EvalResult, fmt: str, *, include_curves: bool = False) -> str:
    """``table`` (:func:`yolo_lines`, then whatever the analyses and statistics added), ``csv`` (the same
    rows at full precision, then the common ``field,value`` section) and ``markdown`` (the rows, then the common
    field table); ``json`` and ``latex`` as every other command's."""
    cols = _cols(result)
    if fmt == "csv":  # (the other commands' CSV rules: quoting, formula-like names prefixed with ')
        lines = [csv_row(["class", "images", "instances", *cols])]
        for name, r in _rows(result):
            lines.append(csv_row([name, str(r["images"]), str(r["instances"]), *(repr(r[c]) for c in cols)]))
        return "\n".join(lines) + "\n\n" + render(_fields_only(result), "csv")
    if fmt == "markdown":
        head = ["class", "images", "instances", *cols]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for name, r in _rows(result):
            cells = [md_text(name), str(r["images"]), str(r["instances"]), *(f"{r[c]:.4f}" for c in cols)]
            lines.append("| " + " | ".join(cells) + " |")
        profile = _run(result, "profile", "profile")
        return (
            f"profile: {profile}\n\n" + "\n".join(lines) + "\n\n" + render(_fields_only(result), "markdown")
        )
    if fmt == "latex":
        return render_latex(result)
    return render(result, fmt, include_curves=include_curves)
