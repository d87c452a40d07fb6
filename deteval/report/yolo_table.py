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


def class_lines(fmt: str, cols: list[str], rows: list[tuple[str, Any, Any, list[Any]]]) -> list[str]:
    """The rows (class, images, instances, the values of ``cols``) as ``yolo val`` prints them (``table``:
    3 significant digits, ``cols`` its headings), as CSV (full precision, the common quoting) or as a
    Markdown table (4 decimals)."""
    head = ["class", "images", "instances", *cols]
    if fmt == "csv":
        return [csv_row(head), *(csv_row([c, str(i), str(n), *(repr(x) for x in v)]) for c, i, n, v in rows)]
    if fmt == "markdown":
        cells = ([md_text(c), str(i), str(n), *(f"{x:.4f}" for x in v)] for c, i, n, v in rows)
        lines = ["| " + " | ".join(r) + " |" for r in [head, *cells]]
        return [lines[0], "|---" * len(head) + "|", *lines[1:]]
    out = [("%22s" + "%11s" * (2 + len(cols))) % ("Class", "Images", "Instances", *cols)]
    return out + [("%22s" + "%11i" * 2 + "%11.3g" * len(v)) % (c, i, n, *v) for c, i, n, v in rows]


def _table(result: EvalResult, fmt: str) -> list[str]:
    """:func:`class_lines` of the ``all`` row and the class rows."""
    cols = _cols(result)
    return class_lines(
        fmt, cols, [(c, r["images"], r["instances"], [r[k] for k in cols]) for c, r in _rows(result)]
    )


def yolo_lines(result: EvalResult) -> list[str]:
    """``yolo val``'s table (3 significant digits), after pycocotools' twelve numbers under ``coco``."""
    out = [f"profile: {_run(result, 'profile', 'profile')}"]
    if "AP" in result.summary:
        out += [f"{n:>6} = {result.summary[n]:.3f}" for n in DET_STAT_NAMES]
    return out + _table(result, "table")


def _fields_only(result: EvalResult) -> EvalResult:
    """``result`` without its class rows and text lines: what the common CSV and Markdown exporters add after
    ``yolo val``'s rows (the summary fields, the analyses, the statistics, the warnings)."""
    run = {k: _run(result, k, a) for k, a in _RUN_FIELDS}
    return EvalResult(result.protocol, {**run, **result.summary}, warnings=list(result.warnings))


def render_yolo(result: EvalResult, fmt: str, *, include_curves: bool = False) -> str:
    """``table`` (:func:`yolo_lines`, then whatever the analyses and statistics added), ``csv`` (the same
    rows at full precision, then the common ``field,value`` section) and ``markdown`` (the rows, then the common
    field table); ``json`` and ``latex`` as every other command's."""
    if fmt == "csv":  # (the other commands' CSV rules: quoting, formula-like names prefixed with ')
        return "\n".join(_table(result, fmt)) + "\n\n" + render(_fields_only(result), "csv")
    if fmt == "markdown":
        lines = [f"profile: {_run(result, 'profile', 'profile')}", "", *_table(result, fmt)]
        return "\n".join(lines) + "\n\n" + render(_fields_only(result), "markdown")
    if fmt == "latex":
        return render_latex(result)
    return render(result, fmt, include_curves=include_curves)
