"""Multiple-comparison corrections of p-values (systems × metrics).

* ``holm`` (Holm 1979, step-down): sort p ascending, p̃_(i) = max_{j <= i} min(1, (n − j + 1) p_(j)).
* ``bh`` (Benjamini & Hochberg 1995, step-up FDR): p̃_(i) = min_{j >= i} min(1, n p_(j) / j).
* ``none``: unchanged.

NaN p-values (a metric undefined for a comparison) are left NaN and not counted in n.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from deteval.errors import ConfigError

__all__ = ["CORRECTIONS", "adjust_pvalues"]

CORRECTIONS = ("holm", "bh", "none")


def adjust_pvalues(p_values: ArrayLike, method: str = "holm") -> np.ndarray:
    """Adjusted p-values in the input's shape (module docstring for the formulas).

    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues([0.01, 0.04, 0.03], "bh").round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    if method not in CORRECTIONS:
        raise ConfigError(f"unknown correction {method!r}: use one of {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=np.float64)
    out = p.copy()
    flat = p.reshape(-1)
    ok = np.flatnonzero(~np.isnan(flat))
    n = ok.shape[0]
    if method == "none" or n == 0:
        return out
    order = ok[np.argsort(flat[ok], kind="stable")]
    ps = flat[order]
    j = np.arange(1, n + 1, dtype=np.float64)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (n - j + 1) * ps))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, n * ps / j)[::-1])[::-1]
    res = out.reshape(-1)
    res[order] = adj
    return res.reshape(p.shape)
