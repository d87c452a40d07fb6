"""Deprecated path of :mod:`deteval.run.yolo` (the YOLO profiles' driver: it reads a dataset and its
predictions and runs a protocol on them, so it lives with the runner). Every name resolves there on first use."""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    # (a lazy forward, not an import: deteval.run imports the protocols of this package)
    return getattr(importlib.import_module("deteval.run.yolo"), name)
