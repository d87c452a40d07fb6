"""What people read: exporters (``tables``: terminal table, Markdown, CSV, JSON), figures (``plots``,
matplotlib imported only when drawing), comparisons of two results (``compare``) and the stderr progress
reporter (``progress``). Nothing is imported up front (the exporters need numpy), so that ``deteval --help``
and ``import deteval.report.progress`` stay light."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deteval.report.tables import FORMATS, render

__all__ = ["FORMATS", "figures", "render", "write_plots"]


def __getattr__(name: str) -> Any:
    # ``deteval.report.render`` / ``write_plots`` without importing the exporters or the plotting module up
    # front (as the package facade ``deteval`` does)
    if name in ("FORMATS", "render"):
        return getattr(importlib.import_module("deteval.report.tables"), name)
    if name in ("write_plots", "figures"):
        return getattr(importlib.import_module("deteval.report.plots"), name)
    raise AttributeError(f"module 'deteval.report' has no attribute {name!r}")
