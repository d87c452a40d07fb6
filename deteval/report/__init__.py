"""Exporters: terminal table, Markdown, CSV and JSON renderings of an :class:`~deteval.results.EvalResult`."""

from deteval.report.tables import FORMATS, render

__all__ = ["FORMATS", "render"]
