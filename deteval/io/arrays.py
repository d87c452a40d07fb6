"""The checks of in-memory arrays now live in :mod:`deteval.tables.arrays` (the tables' layer); this name
is kept for code that imports them from here."""

from deteval.tables.arrays import EXACT_BOUND, beyond_exact, numeric_array, rows_beyond_exact

__all__ = ["EXACT_BOUND", "beyond_exact", "numeric_array", "rows_beyond_exact"]
