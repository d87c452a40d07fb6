"""deteval: one ranked-retrieval core scoring object detection (VOC, COCO), document retrieval (TREC) and MIR.

Where to start (docs/api.md has one example for each):

* ``MeanAveragePrecision``: the training-loop metric (torchmetrics' keywords and result keys, pycocotools'
  numbers): ``update(preds, targets)`` per batch, ``compute()`` at the end.
* ``evaluate_coco(gt, results)`` and ``evaluate_voc(gt, dets)``: detection files or arrays.
* ``evaluate_trec(qrels, run)``: trec_eval's measures; ``evaluate_mir(...)``: MIR P/R/F.
* ``deteval.report.render(result, "markdown")`` and ``deteval.report.plots.write_plots(result, folder)``:
  tables and figures of any result.

Every evaluator returns an :class:`EvalResult` (``summary``, ``per_class``, ``curves``, ``warnings``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from deteval.errors import (
    ConfigError,
    DetevalError,
    DetevalWarning,
    InputFormatError,
    ValidationError,
)

if TYPE_CHECKING:
    from deteval.api import MeanAveragePrecision
    from deteval.detection.coco import evaluate_coco
    from deteval.mir.evaluate import evaluate_mir
    from deteval.results import EvalResult, PRCurve
    from deteval.run.trec import evaluate_trec
    from deteval.run.voc import evaluate_voc

# The evaluators (and numpy with them) are imported on first use, so ``import deteval`` stays light.
_LAZY = {
    "MeanAveragePrecision": "deteval.api",
    "EvalResult": "deteval.results",
    "PRCurve": "deteval.results",
    "evaluate_coco": "deteval.detection.coco",
    "evaluate_voc": "deteval.run.voc",
    "evaluate_mir": "deteval.mir.evaluate",
    "evaluate_trec": "deteval.run.trec",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'deteval' has no attribute {name!r}")


__all__ = [
    "ConfigError",
    "DetevalError",
    "DetevalWarning",
    "EvalResult",
    "InputFormatError",
    "MeanAveragePrecision",
    "PRCurve",
    "ValidationError",
    "__version__",
    "evaluate_coco",
    "evaluate_mir",
    "evaluate_trec",
    "evaluate_voc",
]
