"""What people read: exporters (``tables``: terminal table, Markdown, CSV, JSON), figures (``plots``,
matplotlib imported only when drawing), comparisons of two results (``compare``) and the stderr progress
reporter (``progress``). Nothing is imported up front (the exporters need numpy), so that ``deteval --help``
and ``import deteval.report.progress`` stay light."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deteval.report.tables import FORMATS, render

__all__ = ["FORMATS", "figures", "render", "write_plots"]


def __getattr__(name: str) -> Any:
    if name in ("FORMATS", "render"):
        from deteval.report import tables

        return getattr(tables, name)
    # ``deteval.report.write_plots`` / ``figures`` without importing the plotting module up front
    if name in ("write_plots", "figures"):
        from deteval.report import plots

        return getattr(plots, name)
    raise AttributeError(f"module 'deteval.report' has no attribute {name!r}")
