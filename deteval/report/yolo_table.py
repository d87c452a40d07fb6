"""Render a :class:`~deteval.detection.yolo_eval.YoloResult`: the table ``yolo val`` prints, CSV, Markdown, JSON."""

from __future__ import annotations

from typing import Any

from deteval.detection.coco import DET_STAT_NAMES
from deteval.detection.yolo_eval import YoloResult
from deteval.report.tables import csv_row, md_text

YOLO_FORMATS = ("table", "json", "csv", "markdown")
_COLUMNS = ("P", "R", "AP50", "AP75", "AP50-95")


def _rows(result: YoloResult) -> list[dict[str, Any]]:
    total = {
        "class": "all",
        "images": result.n_images,
        "instances": sum(r["instances"] for r in result.per_class),
        "P": result.summary.get("precision"),
        "R": result.summary.get("recall"),
        "AP50": result.summary["mAP50"],
        "AP75": result.summary["mAP75"],
        "AP50-95": result.summary["mAP50-95"],
    }
    return [total, *result.per_class]


def _cols(result: YoloResult) -> list[str]:
    """P and R only where the profile defines them (the Ultralytics ones)."""
    return [c for c in _COLUMNS if c not in ("P", "R") or "precision" in result.summary]


def render_yolo(result: YoloResult, fmt: str) -> str:
    """``table`` (yolo val's layout, 3 significant digits), ``json``, ``csv`` (full precision) or ``markdown``."""
    if fmt == "json":
        return result.to_json()
    cols = _cols(result)
    rows = _rows(result)
    if fmt == "csv":  # (the other commands' CSV rules: quoting, formula-like names prefixed with ')
        lines = [csv_row(["class", "images", "instances", *cols])]
        for r in rows:
            lines.append(
                csv_row([str(r["class"]), str(r["images"]), str(r["instances"]), *(repr(r[c]) for c in cols)])
            )
        return "\n".join(lines) + "\n"
    if fmt == "markdown":
        head = ["class", "images", "instances", *cols]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for r in rows:
            lines.append(
                "| "
                + " | ".join(
                    [md_text(str(r["class"])), str(r["images"]), str(r["instances"])]
                    + [f"{r[c]:.4f}" for c in cols]
                )
                + " |"
            )
        return f"profile: {result.profile}\n\n" + "\n".join(lines) + "\n"
    out = [f"profile: {result.profile}"]
    if result.stats is not None:
        out += [f"{n:>6} = {v:.3f}" for n, v in zip(DET_STAT_NAMES, result.stats)]
    out.append(("%22s" + "%11s" * (2 + len(cols))) % ("Class", "Images", "Instances", *cols))
    for r in rows:
        out.append(
            ("%22s" + "%11i" * 2 + "%11.3g" * len(cols))
            % (r["class"], r["images"], r["instances"], *(r[c] for c in cols))
        )
    out += [f"warning: {w}" for w in result.warnings]
    return "\n".join(out) + "\n"
