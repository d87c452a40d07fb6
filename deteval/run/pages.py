"""Large arrays in ordinary (4 KiB) pages while an evaluation runs.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every new array of 4 MiB or
more. An evaluation at LVIS scale makes hundreds of such arrays (columns of millions of detections, their
sort orders and masks), each written once or twice. Where a huge page is slow to fault in (the whole 2 MiB
zeroed at the first touch; much slower than 512 small pages in some virtual machines, see
docs/performance.md), that costs more than the fewer TLB misses repay. :func:`small_pages` turns the request
off for a block and then restores numpy's setting; a process started with ``NUMPY_MADVISE_HUGEPAGE`` set keeps
its own choice.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["small_pages"]


def _switch() -> Callable[[bool], bool] | None:
    """numpy's setter of the huge-page request (returns the previous value); None where it has none."""
    for name in ("_core", "core"):  # (numpy 2, numpy 1)
        module: Any = getattr(np, name, None)
        setter = getattr(getattr(module, "multiarray", None), "_set_madvise_hugepage", None)
        if callable(setter):
            return setter
    return None


@contextmanager
def small_pages() -> Iterator[None]:
    """numpy's huge-page request off for the block (unless ``NUMPY_MADVISE_HUGEPAGE`` is set), then as it
    was."""
    switch = None if "NUMPY_MADVISE_HUGEPAGE" in os.environ else _switch()
    if switch is None:
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)
