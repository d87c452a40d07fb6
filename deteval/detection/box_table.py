"""The box table now lives in :mod:`deteval.tables.boxes` (the tables' layer, below the loaders that return
it); this name is kept for code that imports it from here."""

from deteval.tables.boxes import BoxTable

__all__ = ["BoxTable"]
