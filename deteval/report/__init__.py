"""What people read: exporters (``tables``: terminal table, Markdown, CSV, JSON), figures (``plots``,
matplotlib imported only when drawing), comparisons of two results (``compare``) and the stderr progress
reporter (``progress``). Only the exporters are imported here, so ``import deteval`` stays light."""

from deteval.report.tables import FORMATS, render

__all__ = ["FORMATS", "render"]
