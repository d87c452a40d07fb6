"""Values handed back in the caller's own array type: a training loop that passed torch tensors to
:class:`~deteval.api.MeanAveragePrecision` gets tensors back (``result["map"].item()`` works, as with
torchmetrics), on the device it chose with ``.to(device)``. deteval never imports torch: the module of the
tensor the caller passed is already loaded, and it is found in ``sys.modules``."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["as_tensors", "is_torch_tensor"]


def is_torch_tensor(value: Any) -> bool:
    """Whether ``value`` is a torch tensor (judged by its type's module; torch is not imported)."""
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach")


def _convert(value: Any, torch: Any, device: Any) -> Any:
    if isinstance(value, dict):
        return {k: _convert(v, torch, device) for k, v in value.items()}
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return torch.tensor(int(value), dtype=torch.int64, device=device)
    if isinstance(value, (float, np.floating)):
        # float64: deteval's numbers are pycocotools' doubles; a float32 tensor would round them
        return torch.tensor(float(value), dtype=torch.float64, device=device)
    if isinstance(value, np.ndarray):
        kind = torch.int64 if value.dtype.kind in "iu" else torch.float64
        return torch.as_tensor(np.ascontiguousarray(value), dtype=kind, device=device)
    return value


def as_tensors(values: dict[str, Any], device: Any = None) -> dict[str, Any]:
    """``values`` with every number and numpy array as a torch tensor (float64 for floats, int64 for
    integers) on ``device`` (None: the CPU); nested dicts (``ious``) converted alike. torch must already be
    imported by the caller."""
    torch = sys.modules.get("torch")
    if torch is None:  # no tensor was ever passed: nothing to convert to
        return values
    return {k: _convert(v, torch, device) for k, v in values.items()}
