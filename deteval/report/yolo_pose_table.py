"""Render a YOLO pose result: the table ``yolo val`` prints for a pose model (``Box(P R mAP50 mAP50-95)
Pose(P R mAP50 mAP50-95)``), CSV, Markdown, JSON."""

from __future__ import annotations

from typing import Any

from deteval.report.yolo_table import class_lines
from deteval.run.yolo import YoloResult

__all__ = ["POSE_FORMATS", "render_yolo_pose"]

#: The formats a pose result renders to.
POSE_FORMATS = ("table", "json", "csv", "markdown")

_COLUMNS = ("P", "R", "AP50", "AP50-95")


def _rows(result: YoloResult) -> list[dict[str, Any]]:
    s = result.summary
    total: dict[str, Any] = {
        "class": "all",
        "images": result.n_images,
        "instances": result.instances,
    }
    for prefix in ("", "pose "):
        total.update(
            {
                f"{prefix}P": s.get(f"{prefix}precision"),
                f"{prefix}R": s.get(f"{prefix}recall"),
                f"{prefix}AP50": s[f"{prefix}mAP50"],
                f"{prefix}AP50-95": s[f"{prefix}mAP50-95"],
            }
        )
    return [total, *({"class": name, **row} for name, row in result.per_class.items())]


def _columns(result: YoloResult) -> tuple[str, ...]:
    """P and R only where the profile defines them (the Ultralytics ones)."""
    return _COLUMNS if "precision" in result.summary else ("AP50", "AP50-95")


def render_yolo_pose(result: YoloResult, fmt: str) -> str:
    """``table`` (yolo val's layout, 3 significant digits), ``json``, ``csv`` (full precision) or ``markdown``."""
    if fmt == "json":
        return result.to_json()
    shown = _columns(result)
    cols = [*(f"Box {c}" for c in shown), *(f"Pose {c}" for c in shown)]
    keys = [*shown, *(f"pose {c}" for c in shown)]
    rows = [(str(r["class"]), r["images"], r["instances"], [r[k] for k in keys]) for r in _rows(result)]
    if fmt == "csv":
        return "\n".join(class_lines(fmt, cols, rows)) + "\n"
    if fmt == "markdown":
        return f"profile: {result.profile}\n\n" + "\n".join(class_lines(fmt, cols, rows)) + "\n"
    out = [f"profile: {result.profile}"]
    names = {"P": "P", "R": "R", "AP50": "mAP50", "AP50-95": "mAP50-95"}
    head = [names[c] for c in shown]
    head = [f"Box({head[0]}", *head[1:-1], f"{head[-1]})", f"Pose({head[0]}", *head[1:-1], f"{head[-1]})"]
    out += class_lines("table", head, rows)
    out += [f"warning: {w}" for w in result.warnings]
    return "\n".join(out) + "\n"
