"""``on_error="skip"`` for loaders that validate whole columns at once.

The vectorised loaders stop at the first bad record. To leave out every bad record, the records are loaded
in subsets: a failing subset is halved until each bad record is alone, so a few bad records among millions
cost a few dozen vectorised loads rather than one Python check per record, and a record is called bad only
by the loader's own checks (the skipped result is, by construction, the load of the input without them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from deteval.errors import ConfigError, DetevalError

__all__ = ["ON_ERROR", "check_on_error", "load_skipping"]

ON_ERROR = ("raise", "skip")


def check_on_error(on_error: str) -> None:
    if on_error not in ON_ERROR:
        raise ConfigError(f"on_error must be 'raise' or 'skip', not {on_error!r}")


def load_skipping(
    n: int,
    load: Callable[[np.ndarray], Any],
    local: Callable[[DetevalError], int | None],
    name: Callable[[int], str | int],
) -> tuple[Any, dict[int, DetevalError], np.ndarray]:
    """Load records ``0..n-1`` leaving out the bad ones; returns ``(loaded, bad, keep)``.

    ``load(idx)`` loads the records ``idx`` (ascending) and raises at a bad one; ``local(exc)`` is that
    record's position in ``idx``, or None for a fault that is not one record's (it is re-raised);
    ``name(i)`` names record ``i`` for the re-made error. ``bad`` maps each bad record to its error (named
    as the record is in the input), ``keep`` are the records loaded. A fault that needs two records (a
    duplicate id) passes every single-record load and is raised by the final load: it is never skipped.
    """
    bad: dict[int, DetevalError] = {}
    stack = [np.arange(n)]
    while stack:
        idx = stack.pop()
        try:
            load(idx)
        except DetevalError as exc:
            if local(exc) is None:
                raise
            if idx.size == 1:
                i = int(idx[0])
                bad[i] = type(exc)(exc.reason, file=exc.file, record=name(i))
            else:
                stack += [idx[idx.size // 2 :], idx[: idx.size // 2]]
    keep = np.setdiff1d(np.arange(n), np.fromiter(bad, dtype=np.int64, count=len(bad)))
    try:
        out = load(keep)
    except DetevalError as exc:
        r = local(exc)
        if r is None:
            raise
        raise type(exc)(exc.reason, file=exc.file, record=name(int(keep[r]))) from None
    return out, dict(sorted(bad.items())), keep
